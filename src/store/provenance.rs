//! Provenance: the evidence an entry was written from (Pi session id and
//! entry id, as this package's recall/expand address them), kept in a
//! sidecar beside each memory file (`MEMORY.provenance.json`,
//! `USER.provenance.json`) keyed by the entry's exact text, so the memory
//! files stay plain `§` lists. A sidecar is written only under its memory
//! file's lock, after that file (a crash in between leaves an entry without
//! provenance, never provenance for text that is not there), atomically.
//! Every write prunes records whose entry is gone.

use super::batch::{at, Op, Step};
use super::result::{Failure, FailureCode};
use super::{file, Target};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Most citations one entry keeps: enough for a merge of a few facts.
pub const MAX_CITATIONS: usize = 16;
/// Longest session or entry id accepted (Pi's are 8–36 characters).
const MAX_ID_CHARS: usize = 256;
/// Bound of a sidecar read: a few records per entry of a bounded file.
const MAX_SIDECAR_BYTES: u64 = 16 << 20;

/// One cited Pi session entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Citation {
  /// The session id (its header id), as `memory_expand`'s `session` takes it.
  pub session: String,
  /// The Pi entry id, as `memory_expand`'s `entryIds` takes it.
  pub entry_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Provenance {
  pub citations: Vec<Citation>,
  /// Ms since the epoch of the write that recorded it.
  pub recorded_at: u64,
  /// Set when the entry landed by applying this proposal.
  #[serde(skip_serializing_if = "Option::is_none", default)]
  pub proposal: Option<u64>,
}

/// Records by exact entry text.
pub type Records = BTreeMap<String, Provenance>;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sidecar {
  pub version: u32,
  pub entries: Records,
}

pub fn file_name(target: Target) -> &'static str {
  match target {
    Target::Memory | Target::Project => "MEMORY.provenance.json",
    Target::User => "USER.provenance.json",
  }
}

/// The sidecar beside `memory_file` (a canonical path).
pub fn path(memory_file: &Path, target: Target) -> PathBuf {
  memory_file.with_file_name(file_name(target))
}

/// The sidecar's records; a missing file has none. `Err` is the reason a
/// file that exists could not be used (unreadable or not a sidecar).
pub fn read(path: &Path) -> Result<Option<Records>, String> {
  match file::read(path, MAX_SIDECAR_BYTES) {
    Ok(None) => Ok(None),
    Ok(Some(on_disk)) => serde_json::from_str::<Sidecar>(&on_disk.text)
      .map(|sidecar| Some(sidecar.entries))
      .map_err(|error| format!("{} is not a provenance sidecar ({error})", path.display())),
    Err(error) => Err(format!("could not read {} ({error})", path.display())),
  }
}

/// The records for a write: a sidecar that cannot be used is saved as a
/// `.bak` and replaced, with the reason (memory entries never wait on it).
pub fn read_for_write(path: &Path) -> (Option<Records>, Option<String>) {
  match read(path) {
    Ok(records) => (records, None),
    Err(reason) => {
      // Bounded and non-blocking, as every read of a file we keep: a FIFO,
      // a device or a huge file here is not backed up (it hung the write,
      // holding the memory lock, or grew memory without bound).
      let bytes = crate::fsread::read_regular(path, MAX_SIDECAR_BYTES, crate::fsread::Links::Refuse);
      let saved = match bytes
        .map_err(|e| e.to_string())
        .and_then(|(bytes, _)| file::backup(path, &bytes).map_err(|(_, e)| e.to_string()))
      {
        Ok(backup) => format!("saved as {}", backup.display()),
        Err(error) => format!("not backed up: {error}"),
      };
      (Some(Records::new()), Some(format!("Provenance reset: {reason}; the old sidecar was {saved}.")))
    }
  }
}

pub fn serialize(records: &Records) -> String {
  let sidecar = Sidecar { version: 1, entries: records.clone() };
  format!("{}\n", serde_json::to_string_pretty(&sidecar).expect("records serialize"))
}

fn invalid(message: impl Into<String>) -> Failure {
  Failure::new(FailureCode::InvalidOperation, message)
}

fn id(object: &serde_json::Map<String, Value>, name: &str) -> Result<String, Failure> {
  match object.get(name).and_then(Value::as_str).map(str::trim) {
    Some(text) if !text.is_empty() && text.chars().count() <= MAX_ID_CHARS => Ok(text.to_string()),
    _ => Err(invalid(format!("evidence: '{name}' must be a non-empty string of at most {MAX_ID_CHARS} characters."))),
  }
}

fn parse_citations(value: Option<&Value>) -> Result<Vec<Citation>, Failure> {
  let Some(value) = value else { return Ok(Vec::new()) };
  let Some(list) = value.as_array() else { return Err(invalid("evidence must be an array of {session, entryId}.")) };
  if list.len() > MAX_CITATIONS {
    return Err(invalid(format!("evidence holds at most {MAX_CITATIONS} citations, got {}.", list.len())));
  }
  let citations = list
    .iter()
    .map(|item| {
      let object = item.as_object().ok_or_else(|| invalid("evidence must be an array of {session, entryId}."))?;
      Ok(Citation { session: id(object, "session")?, entry_id: id(object, "entryId")? })
    })
    .collect::<Result<Vec<_>, Failure>>()?;
  Ok(merge(&citations, &[]))
}

/// Each operation's `evidence` (empty when it has none), named by index
/// when malformed. The store records it as given: dreaming verifies it.
pub fn parse_evidence(operations: &Value) -> Result<Vec<Vec<Citation>>, Failure> {
  let list = operations.as_array().map(Vec::as_slice).unwrap_or_default();
  list
    .iter()
    .enumerate()
    .map(|(index, op)| {
      let evidence = op.as_object().and_then(|o| o.get("evidence")).filter(|v| !v.is_null());
      parse_citations(evidence).map_err(|failure| at(index, None, failure))
    })
    .collect()
}

/// `first` then the citations of `second` not in it, at most [`MAX_CITATIONS`].
fn merge(first: &[Citation], second: &[Citation]) -> Vec<Citation> {
  let mut out: Vec<Citation> = Vec::new();
  for citation in first.iter().chain(second) {
    if !out.contains(citation) && out.len() < MAX_CITATIONS {
      out.push(citation.clone());
    }
  }
  out
}

/// What a batch did to provenance.
#[derive(Debug, Default)]
pub struct Carried {
  /// Records of the entries after the batch (every one the batch touched).
  pub records: Records,
  /// Citations given for removals, by removed text (for proposals).
  pub removals: BTreeMap<String, Vec<Citation>>,
}

/// Who recorded what: the write's time and, when applying a proposal, its id.
#[derive(Debug, Clone, Copy)]
pub struct Stamp {
  pub now: u64,
  pub proposal: Option<u64>,
}

/// Follows `steps` from the `before` records: an add with evidence records
/// it (merged into an existing entry's); a replace moves the old entry's
/// record to the new text only when the replace cites evidence (else the
/// new text has none); a removal drops it.
pub fn carry(before: &Records, ops: &[Op], steps: &[Step], evidence: &[Vec<Citation>], stamp: Stamp) -> Carried {
  let mut carried = Carried { records: before.clone(), removals: BTreeMap::new() };
  let records = &mut carried.records;
  let record = |citations: Vec<Citation>| Provenance { citations, recorded_at: stamp.now, proposal: stamp.proposal };
  for (index, (op, step)) in ops.iter().zip(steps).enumerate() {
    let cited = evidence.get(index).map(Vec::as_slice).unwrap_or_default();
    match (op, step) {
      (Op::Add(content), Step::Added | Step::Unchanged) if !cited.is_empty() => {
        let earlier = records.get(content).map(|p| p.citations.clone()).unwrap_or_default();
        records.insert(content.clone(), record(merge(cited, &earlier)));
      }
      (Op::Replace { new, .. }, Step::Replaced(old)) => {
        let moved = records.remove(old);
        if !cited.is_empty() {
          let earlier = moved.map(|p| p.citations).unwrap_or_default();
          records.insert(new.clone(), record(merge(cited, &earlier)));
        }
      }
      (Op::Remove { .. }, Step::Removed(old)) => {
        records.remove(old);
        if !cited.is_empty() {
          carried.removals.insert(old.clone(), cited.to_vec());
        }
      }
      _ => {}
    }
  }
  carried
}

/// The records to keep for `written` entries: the batch's own, else the
/// ones already on disk (review mode writes originals the batch replaced);
/// every other record is pruned.
pub fn prune(written: &[String], carried: &Records, before: &Records) -> Records {
  written
    .iter()
    .filter_map(|entry| carried.get(entry).or_else(|| before.get(entry)).map(|p| (entry.clone(), p.clone())))
    .collect()
}

/// `entries`' provenance, aligned with them (`None`: none recorded).
pub fn lookup(entries: &[String], records: &Records) -> Vec<Option<Provenance>> {
  entries.iter().map(|entry| records.get(entry).cloned()).collect()
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_json::json;

  fn cite(session: &str, entry: &str) -> Citation {
    Citation { session: session.into(), entry_id: entry.into() }
  }

  const STAMP: Stamp = Stamp { now: 7, proposal: None };

  #[test]
  fn evidence_is_parsed_per_operation_and_bad_evidence_is_named() {
    let ops = json!([
      {"action": "add", "content": "a", "evidence": [{"session": "s1", "entryId": "e1"}, {"session": "s1", "entryId": "e1"}]},
      {"action": "remove", "oldText": "b"},
    ]);
    assert_eq!(parse_evidence(&ops).unwrap(), vec![vec![cite("s1", "e1")], vec![]]);
    let bad =
      json!([{"action": "add", "content": "a"}, {"action": "add", "content": "b", "evidence": [{"session": "s1"}]}]);
    let failure = parse_evidence(&bad).unwrap_err();
    assert_eq!(failure.code, FailureCode::InvalidOperation);
    assert_eq!(failure.details.failed_operation.unwrap().index, 1);
    let many =
      json!([{"action": "add", "content": "a", "evidence": vec![json!({"session": "s", "entryId": "e"}); 17]}]);
    assert!(parse_evidence(&many).unwrap_err().error.contains("at most 16"));
  }

  #[test]
  fn a_replace_moves_provenance_only_with_evidence() {
    let mut before = Records::new();
    before.insert("old".into(), Provenance { citations: vec![cite("s0", "e0")], recorded_at: 1, proposal: None });
    let replace = Op::Replace { old: "old".into(), new: "new".into(), exact: false };
    let steps = [Step::Replaced("old".into())];
    let cited = carry(&before, std::slice::from_ref(&replace), &steps, &[vec![cite("s1", "e1")]], STAMP);
    assert_eq!(cited.records["new"].citations, vec![cite("s1", "e1"), cite("s0", "e0")]);
    assert!(!cited.records.contains_key("old"));
    let by_hand = carry(&before, std::slice::from_ref(&replace), &steps, &[], STAMP);
    assert!(by_hand.records.is_empty(), "a replacement without evidence has none");
  }

  #[test]
  fn prune_keeps_records_of_written_entries_only() {
    let p = |n| Provenance { citations: vec![cite("s", n)], recorded_at: 1, proposal: None };
    let before: Records = [("kept".to_string(), p("a")), ("gone".to_string(), p("b"))].into();
    let carried: Records = [("added".to_string(), p("c"))].into();
    let kept = prune(&["kept".into(), "added".into(), "plain".into()], &carried, &before);
    assert_eq!(kept.keys().collect::<Vec<_>>(), ["added", "kept"]);
  }

  #[test]
  fn sidecar_round_trips_and_a_corrupt_one_is_backed_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file_name(Target::Memory));
    assert_eq!(read(&path).unwrap(), None);
    let records: Records =
      [("x".to_string(), Provenance { citations: vec![cite("s", "e")], recorded_at: 3, proposal: Some(2) })].into();
    std::fs::write(&path, serialize(&records)).unwrap();
    assert_eq!(read(&path).unwrap(), Some(records));
    std::fs::write(&path, "{broken").unwrap();
    assert!(read(&path).unwrap_err().contains("not a provenance sidecar"));
    let (fresh, reason) = read_for_write(&path);
    assert_eq!(fresh, Some(Records::new()));
    assert!(reason.unwrap().contains("MEMORY.provenance.json.bak."));
    let backups: Vec<_> = std::fs::read_dir(dir.path())
      .unwrap()
      .filter_map(|e| e.ok())
      .filter(|e| e.file_name().to_string_lossy().starts_with("MEMORY.provenance.json.bak."))
      .collect();
    assert_eq!(std::fs::read_to_string(backups[0].path()).unwrap(), "{broken");
  }

  #[cfg(unix)]
  #[test]
  fn a_special_file_as_the_sidecar_is_replaced_without_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file_name(Target::Memory));
    crate::testing::mkfifo(&path);
    // Reading a FIFO whole blocked forever here, inside the memory lock.
    let (fresh, reason) = read_for_write(&path);
    assert_eq!(fresh, Some(Records::new()));
    assert!(reason.unwrap().contains("not backed up: not a regular file"));
    std::fs::remove_file(&path).unwrap();
    let huge = std::fs::File::create(&path).unwrap();
    huge.set_len(MAX_SIDECAR_BYTES + 1).unwrap();
    let (_, reason) = read_for_write(&path);
    assert!(reason.unwrap().contains("not backed up"), "a sparse file over the bound is not copied");
  }
}

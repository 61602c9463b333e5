//! A small process-wide cache of normalized session views.
//!
//! Paging (`next`) and `memory.walk` call expansion many times over one
//! session; without this each page would re-read, re-hash and re-normalize the
//! whole file. A cached view is reused only while the file's stat stamp is
//! unchanged and old enough to prove it (a stamp inside the racy window is
//! confirmed by re-hashing the file), and only for the same branch mode,
//! live branch and policy, while its session's forgotten entries are the
//! ones it left out.

use super::entry::{ForgottenEntries, Policy};
use super::lineage::{Branches, LiveBranch};
use super::source::{now_ns, same_content, StatStamp};
use super::SessionView;
use parking_lot::Mutex;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// How many views stay resident, and the largest one worth keeping.
const CAPACITY: usize = 8;
const MAX_VIEW_TEXT_BYTES: usize = 64 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
  path: PathBuf,
  branches: Branches,
  live: Option<LiveBranch>,
  policy: Policy,
}

struct Slot {
  key: Key,
  view: Arc<SessionView>,
  /// When the view's content was last verified (read or re-hashed).
  verified_ns: i128,
}

fn slots() -> &'static Mutex<Vec<Slot>> {
  static SLOTS: OnceLock<Mutex<Vec<Slot>>> = OnceLock::new();
  SLOTS.get_or_init(|| Mutex::new(Vec::with_capacity(CAPACITY)))
}

fn current_stamp(path: &Path) -> Option<StatStamp> {
  fs::metadata(path).ok().map(|m| StatStamp::of(&m))
}

/// The cached view of `path`, if the file provably still holds its content
/// and `forgotten` leaves out what the view left out.
pub fn get(
  path: &Path,
  branches: Branches,
  live: Option<&LiveBranch>,
  policy: &Policy,
  forgotten: &ForgottenEntries,
) -> Option<Arc<SessionView>> {
  let key = Key { path: path.to_path_buf(), branches, live: live.cloned(), policy: *policy };
  let stamp = current_stamp(path)?;
  let (view, verified_ns) = {
    let slots = slots().lock();
    let slot = slots.iter().find(|slot| slot.key == key)?;
    (slot.view.clone(), slot.verified_ns)
  };
  let same_forgotten = forgotten.get(&view.header.id).map_or(view.forgotten.is_empty(), |ids| *ids == view.forgotten);
  let fresh =
    same_forgotten && view.stamp == stamp && (stamp.proves_unchanged_since(verified_ns) || rehash_matches(path, &view));
  let mut slots = slots().lock();
  let position = slots.iter().position(|slot| slot.key == key)?;
  if !fresh {
    slots.remove(position);
    return None;
  }
  // Most recently used last.
  let mut slot = slots.remove(position);
  slot.verified_ns = slot.verified_ns.max(now_ns());
  slots.push(slot);
  Some(view)
}

/// Re-hashes a file whose stamp is too recent to trust.
fn rehash_matches(path: &Path, view: &SessionView) -> bool {
  let same = same_content(path, view.stamp.size, &view.source_hash);
  same && current_stamp(path).is_some_and(|s| s == view.stamp)
}

pub fn put(branches: Branches, live: Option<&LiveBranch>, policy: &Policy, view: Arc<SessionView>, read_ns: i128) {
  let text_bytes: usize = view.normalized.entries.iter().map(|e| e.text.len()).sum();
  if text_bytes > MAX_VIEW_TEXT_BYTES {
    return;
  }
  let key = Key { path: view.path.clone(), branches, live: live.cloned(), policy: *policy };
  let mut slots = slots().lock();
  slots.retain(|slot| slot.key != key);
  if slots.len() >= CAPACITY {
    slots.remove(0);
  }
  slots.push(Slot { key, view, verified_ns: read_ns });
}

#[cfg(test)]
mod tests {
  use super::super::load;
  use super::*;

  const POLICY: Policy =
    Policy { index_thinking: false, index_tool_output: true, max_entry_chars: None, index_own_results: true };

  fn reading(forgotten: &ForgottenEntries) -> super::super::Reading<'_> {
    super::super::Reading { policy: &POLICY, forgotten, max_bytes: 1 << 20 }
  }

  #[test]
  fn reuses_a_view_until_the_file_changes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let header = "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"cwd\":\"/p\"}\n";
    let line =
      "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n";
    fs::write(&path, format!("{header}{line}")).unwrap();
    let none = ForgottenEntries::new();
    let first = load(&path, Branches::Active, None, reading(&none)).unwrap();
    let again = load(&path, Branches::Active, None, reading(&none)).unwrap();
    assert!(Arc::ptr_eq(&first, &again));
    let other_mode = load(&path, Branches::All, None, reading(&none)).unwrap();
    assert!(!Arc::ptr_eq(&first, &other_mode));
    // A same-size rewrite that restores mtime, within the same clock tick as
    // far as the stamp can tell: the racy-window re-hash still catches it.
    let mtime = fs::metadata(&path).unwrap().modified().unwrap();
    fs::write(&path, format!("{header}{}", line.replace("hi", "yo"))).unwrap();
    fs::File::options().write(true).open(&path).unwrap().set_modified(mtime).unwrap();
    let rewritten = load(&path, Branches::Active, None, reading(&none)).unwrap();
    assert!(!Arc::ptr_eq(&first, &rewritten));
    assert_eq!(rewritten.normalized.entries[0].text, "yo");
    assert_ne!(rewritten.source_hash, first.source_hash);
  }

  #[test]
  fn a_view_leaves_out_the_forgotten_entries_and_is_not_reused_once_they_change() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let header = "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"cwd\":\"/p\"}\n";
    let a =
      "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n";
    let b =
      "{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\",\"message\":{\"role\":\"user\",\"content\":\"yo\"}}\n";
    fs::write(&path, format!("{header}{a}{b}")).unwrap();
    let texts =
      |view: &SessionView| view.normalized.entries.iter().map(|e| (e.index, e.text.clone())).collect::<Vec<_>>();
    let none = ForgottenEntries::new();
    let whole = load(&path, Branches::Active, None, reading(&none)).unwrap();
    assert_eq!(texts(&whole), [(0, "hi".to_string()), (1, "yo".to_string())]);
    let forgotten = ForgottenEntries::from([("s".to_string(), ["a".to_string()].into())]);
    let without = load(&path, Branches::Active, None, reading(&forgotten)).unwrap();
    assert_eq!(texts(&without), [(0, "yo".to_string())]);
    assert_eq!(without.forgotten, ["a".to_string()].into());
    // Another session's forgotten entries do not touch this one's view.
    let elsewhere = ForgottenEntries::from([("t".to_string(), ["a".to_string()].into())]);
    assert_eq!(texts(&load(&path, Branches::Active, None, reading(&elsewhere)).unwrap()), texts(&whole));
    assert_eq!(texts(&load(&path, Branches::Active, None, reading(&none)).unwrap()), texts(&whole));
  }
}

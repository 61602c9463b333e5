//! Staged changes awaiting the user's review: what dreaming wanted to
//! replace or remove (and additions that only fit after those) in one file,
//! `proposals.json` beside the memory files, changed only under its own lock
//! and written atomically. A proposal names the exact entry it was made for;
//! applying it after that entry changed is refused as stale.

use super::batch::{NetChange, Op};
use super::lock::LockOptions;
use super::provenance::Citation;
use super::result::{Failure, FailureCode, StoreResult};
use super::write::{take_lock, write_held};
use super::{file, Target};
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "proposals.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Proposal {
  /// Stable across processes and listings: `/memory review apply <id>`.
  pub id: u64,
  pub target: TargetName,
  pub action: ProposalAction,
  /// Replace and remove: the exact entry the change was made for.
  #[serde(skip_serializing_if = "Option::is_none", default)]
  pub old_text: Option<String>,
  /// Replace: the new entry.
  #[serde(skip_serializing_if = "Option::is_none", default)]
  pub new_content: Option<String>,
  /// Add: the entry.
  #[serde(skip_serializing_if = "Option::is_none", default)]
  pub content: Option<String>,
  /// Ms since the epoch.
  pub created_at: u64,
  /// The evidence dreaming cited for it; applying it records this as the entry's provenance.
  #[serde(skip_serializing_if = "Option::is_none", default)]
  pub evidence: Option<Vec<Citation>>,
  /// Target `project`: the project it was made for; applied only from a
  /// store opened for that project (the ledger is the memory dir's, shared).
  #[serde(skip_serializing_if = "Option::is_none", default)]
  pub project: Option<ProposalProject>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProposalProject {
  pub key: String,
  pub name: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetName {
  Memory,
  User,
  Project,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProposalAction {
  Add,
  Replace,
  Remove,
}

impl From<Target> for TargetName {
  fn from(target: Target) -> TargetName {
    match target {
      Target::Memory => TargetName::Memory,
      Target::User => TargetName::User,
      Target::Project => TargetName::Project,
    }
  }
}

impl Proposal {
  pub fn target(&self) -> Target {
    match self.target {
      TargetName::Memory => Target::Memory,
      TargetName::User => Target::User,
      TargetName::Project => Target::Project,
    }
  }

  /// The operation that applies it: replace and remove match the recorded
  /// entry exactly (never a substring), so a changed entry is stale.
  pub fn op(&self) -> Result<Op, Failure> {
    let text = |field: &Option<String>| field.clone().unwrap_or_default();
    match self.action {
      ProposalAction::Add => Op::add(&text(&self.content)),
      ProposalAction::Replace => match Op::replace(&text(&self.old_text), &text(&self.new_content))? {
        Op::Replace { old, new, .. } => Ok(Op::Replace { old, new, exact: true }),
        other => Ok(other),
      },
      ProposalAction::Remove => match Op::remove(&text(&self.old_text))? {
        Op::Remove { old, .. } => Ok(Op::Remove { old, exact: true }),
        other => Ok(other),
      },
    }
  }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ledger {
  pub version: u32,
  pub next_id: u64,
  pub proposals: Vec<Proposal>,
}

pub fn path(dir: &Path) -> PathBuf {
  let plain = dir.join(FILE_NAME);
  fs::canonicalize(dir).map(|d| d.join(FILE_NAME)).unwrap_or(plain)
}

fn unreadable(path: &Path, error: impl std::fmt::Display) -> Failure {
  Failure::new(
    FailureCode::Unreadable,
    format!("Could not read {} ({error}). Nothing was changed; fix or move the file, then retry.", path.display()),
  )
}

/// Bound of a read of the ledger: proposals are a few memory entries each,
/// so anything this large is not ours to parse.
const MAX_LEDGER_BYTES: u64 = 16 << 20;

/// The ledger; a missing file is empty, a malformed one an error (never
/// treated as empty, which would overwrite it).
pub fn read(path: &Path) -> Result<Ledger, Failure> {
  match file::read(path, MAX_LEDGER_BYTES) {
    Ok(None) => Ok(Ledger { version: 1, next_id: 1, proposals: Vec::new() }),
    Ok(Some(on_disk)) => serde_json::from_str(&on_disk.text).map_err(|e| unreadable(path, e)),
    Err(error) => Err(unreadable(path, error)),
  }
}

/// Runs `change` on the ledger under its lock and writes it back when it
/// returns `true`.
pub fn update<T>(
  dir: &Path,
  options: &LockOptions,
  change: impl FnOnce(&mut Ledger) -> Result<(T, bool), Failure>,
) -> Result<T, Failure> {
  fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
  let path = path(dir);
  let held = take_lock(&path, FILE_NAME, options)?;
  let mut ledger = read(&path)?;
  let (value, write) = change(&mut ledger)?;
  if write {
    let json = serde_json::to_string_pretty(&ledger).map_err(|e| io(&path, std::io::Error::other(e)))?;
    write_held(&held, &path, format!("{json}\n").as_bytes())?;
  }
  Ok(value)
}

fn io(path: &Path, error: std::io::Error) -> Failure {
  Failure::new(FailureCode::IoError, format!("Could not write {} ({error}). Nothing was changed.", path.display()))
}

pub(super) fn now_ms() -> u64 {
  std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Appends one proposal per change, numbered from the ledger's counter;
/// `project` is the project of a target `project` change.
pub fn append(
  ledger: &mut Ledger,
  target: Target,
  project: Option<ProposalProject>,
  changes: &[(NetChange, Vec<Citation>)],
) -> Vec<Proposal> {
  let created_at = now_ms();
  let added: Vec<Proposal> = changes
    .iter()
    .map(|(change, evidence)| {
      let id = ledger.next_id.max(1);
      ledger.next_id = id + 1;
      let mut proposal = Proposal {
        id,
        target: target.into(),
        action: ProposalAction::Add,
        old_text: None,
        new_content: None,
        content: None,
        created_at,
        evidence: (!evidence.is_empty()).then(|| evidence.clone()),
        project: project.clone().filter(|_| target == Target::Project),
      };
      match change {
        NetChange::Add(content) => proposal.content = Some(content.clone()),
        NetChange::Replace { old, new } => {
          proposal.action = ProposalAction::Replace;
          proposal.old_text = Some(old.clone());
          proposal.new_content = Some(new.clone());
        }
        NetChange::Remove(old) => {
          proposal.action = ProposalAction::Remove;
          proposal.old_text = Some(old.clone());
        }
      }
      proposal
    })
    .collect();
  ledger.version = 1;
  ledger.proposals.extend(added.iter().cloned());
  added
}

/// What `/memory review apply|reject` did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewReport {
  pub success: bool,
  /// Applied (or rejected) proposals, which left the ledger.
  pub settled: Vec<Settled>,
  /// Proposals refused (stale, over the limit, locked, …), still listed.
  pub refused: Vec<Settled>,
  /// Requested ids that are not in the ledger.
  pub missing: Vec<u64>,
  /// Proposals left awaiting review.
  pub remaining: usize,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub error: Option<String>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub code: Option<FailureCode>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Settled {
  pub id: u64,
  pub target: TargetName,
  pub action: ProposalAction,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub code: Option<FailureCode>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub error: Option<String>,
}

impl ReviewReport {
  pub fn record(&mut self, proposal: &Proposal, result: &StoreResult) {
    let mut settled =
      Settled { id: proposal.id, target: proposal.target, action: proposal.action, code: None, error: None };
    match result {
      StoreResult::Success(_) => self.settled.push(settled),
      StoreResult::Failure(failure) => {
        settled.code = Some(failure.code);
        settled.error = Some(failure.error.clone());
        self.refused.push(settled);
      }
    }
  }

  /// The ledger itself could not be read or locked: nothing was done.
  pub fn failed(failure: Failure) -> ReviewReport {
    ReviewReport { success: false, error: Some(failure.error), code: Some(failure.code), ..Default::default() }
  }
}

/// Which proposals a review command selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
  All,
  Ids(Vec<u64>),
}

impl Selection {
  /// The selected proposals in id order and the requested ids that do not exist.
  pub fn pick(&self, ledger: &Ledger) -> (Vec<Proposal>, Vec<u64>) {
    match self {
      Selection::All => (ledger.proposals.clone(), Vec::new()),
      Selection::Ids(ids) => {
        let picked: Vec<Proposal> = ledger.proposals.iter().filter(|p| ids.contains(&p.id)).cloned().collect();
        let missing = ids.iter().copied().filter(|id| !picked.iter().any(|p| p.id == *id)).collect();
        (picked, missing)
      }
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn plain(changes: &[NetChange]) -> Vec<(NetChange, Vec<Citation>)> {
    changes.iter().map(|c| (c.clone(), Vec::new())).collect()
  }

  #[test]
  fn ids_are_stable_and_never_reused() {
    let mut ledger = Ledger::default();
    let first =
      append(&mut ledger, Target::Memory, None, &plain(&[NetChange::Remove("a".into()), NetChange::Add("b".into())]));
    assert_eq!(first.iter().map(|p| p.id).collect::<Vec<_>>(), [1, 2]);
    ledger.proposals.clear();
    let next =
      append(&mut ledger, Target::User, None, &plain(&[NetChange::Replace { old: "x".into(), new: "y".into() }]));
    assert_eq!(next[0].id, 3);
    assert_eq!(next[0].target(), Target::User);
    assert_eq!(next[0].op().unwrap(), Op::Replace { old: "x".into(), new: "y".into(), exact: true });
  }

  #[test]
  fn a_malformed_ledger_is_an_error_never_empty() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(FILE_NAME), "{not json").unwrap();
    let result = update(dir.path(), &LockOptions::default(), |_| Ok(((), true)));
    assert_eq!(result.unwrap_err().code, FailureCode::Unreadable);
    assert_eq!(fs::read_to_string(dir.path().join(FILE_NAME)).unwrap(), "{not json");
  }

  #[test]
  fn selection_reports_missing_ids() {
    let mut ledger = Ledger::default();
    append(&mut ledger, Target::Memory, None, &plain(&[NetChange::Remove("a".into()), NetChange::Remove("b".into())]));
    let (picked, missing) = Selection::Ids(vec![2, 9]).pick(&ledger);
    assert_eq!((picked.len(), picked[0].id, missing), (1, 2, vec![9]));
  }
}

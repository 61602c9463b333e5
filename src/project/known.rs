//! Identities as they were last seen, by cwd: `<agentDir>/fabric/projects.json`.
//!
//! A session's header names the cwd it ran in; its project is that cwd's
//! identity ([`super::resolve`]). Two things the filesystem alone cannot
//! answer: a folder that was moved or deleted has no evidence left (its
//! sessions would fall to the cwd rule and leave their project), and an
//! explicit key (`memory.projectKey`, `PI_FABRIC_MEMORY_PROJECT_KEY`) is a
//! setting of the checkout it was in effect in, which another checkout's
//! call cannot read. So every identity resolved from evidence (a git remote,
//! a git common dir, an explicit key) is written here, and read back when the
//! cwd no longer exists, or when it was keyed explicitly.
//!
//! Why a file of its own and not a field of the index's session records: the
//! index is a disposable cache (deleted, rebuilt on a version bump, cleaned
//! per budget), and a moved folder's identity cannot be rebuilt once the
//! folder is gone; this map survives a cache wipe. It is small (one line per
//! cwd, at most [`MAX_ENTRIES`], the least recently seen dropped first),
//! changed under the proper-lockfile lock the other files of this package
//! use and written atomically. It is a memory of evidence, never a source of
//! failure: a map that cannot be read is ignored (and left as it is; the
//! project scope says so in coverage), a write that cannot take the lock is
//! skipped and tried again by the next call that sees the same cwd.

use super::{resolve, Fallback, Identity, Source, VERSION};
use crate::fsread::{read_regular, Links};
use crate::session::source::StatStamp;
use crate::store::file::write_atomic;
use crate::store::lock::{self, LockOptions};
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub const FILE_NAME: &str = "projects.json";
/// Far above [`MAX_ENTRIES`] lines: a larger file is not ours to parse.
const MAX_BYTES: u64 = 4 << 20;
/// A user has a few hundred checkouts; ephemeral worktrees make thousands.
pub const MAX_ENTRIES: usize = 4096;
const FILE_VERSION: u32 = 1;
/// A write is an optimization of a later call: never wait long for it.
const LOCK_TIMEOUT: Duration = Duration::from_millis(500);

/// One cwd's identity as it was last resolved from evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Seen {
  cwd: String,
  key: String,
  name: String,
  source: Source,
  evidence: String,
  /// Unix milliseconds of the write that recorded it (the bound drops the oldest).
  seen_at: u64,
}

impl Seen {
  fn identity(&self) -> Identity {
    let (key, name, evidence) = (self.key.clone(), self.name.clone(), self.evidence.clone());
    Identity { key, name, source: self.source, evidence, fallback: None }
  }

  /// The same identity (when it was seen aside)?
  fn names(&self, identity: &Identity) -> bool {
    self.key == identity.key && self.name == identity.name && self.source == identity.source
  }
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Ledger {
  version: u32,
  projects: Vec<Seen>,
}

/// The map as one process holds it.
#[derive(Debug, Default)]
struct Map {
  by_cwd: FxHashMap<String, Seen>,
  /// The file exists but could not be read: ignored, never overwritten.
  unreadable: bool,
}

pub fn path(agent_dir: &Path) -> PathBuf {
  agent_dir.join("fabric").join(FILE_NAME)
}

/// The file's entries; `Err` when it exists and is not a map this version
/// reads. Entries keyed by another identity version are left out.
fn read(path: &Path) -> Result<Vec<Seen>, ()> {
  match read_regular(path, MAX_BYTES, Links::Refuse) {
    Ok((bytes, _)) => {
      let ledger: Ledger = serde_json::from_slice(&bytes).map_err(|_| ())?;
      if ledger.version != FILE_VERSION {
        return Err(());
      }
      let current = |s: &Seen| s.key.strip_prefix(VERSION).is_some_and(|k| k.starts_with(':'));
      Ok(ledger.projects.into_iter().filter(current).collect())
    }
    Err(error) if error.is_not_found() => Ok(Vec::new()),
    Err(_) => Err(()),
  }
}

fn load_map(path: &Path) -> Map {
  match read(path) {
    Ok(seen) => Map { by_cwd: seen.into_iter().map(|s| (s.cwd.clone(), s)).collect(), unreadable: false },
    Err(()) => Map { by_cwd: FxHashMap::default(), unreadable: true },
  }
}

type Cache = Vec<(PathBuf, Option<StatStamp>, Arc<Map>)>;

/// Each agent dir's map, re-read when the file's stat stamp changes.
fn maps() -> &'static Mutex<Cache> {
  static MAPS: OnceLock<Mutex<Cache>> = OnceLock::new();
  MAPS.get_or_init(Default::default)
}

/// The identity of each cwd without an explicit key, resolved once per
/// process: what the filesystem said the first time this process asked.
fn resolved() -> &'static Mutex<FxHashMap<String, Arc<Identity>>> {
  static RESOLVED: OnceLock<Mutex<FxHashMap<String, Arc<Identity>>>> = OnceLock::new();
  RESOLVED.get_or_init(Default::default)
}

fn resolved_once(cwd: &str) -> Arc<Identity> {
  if let Some(known) = resolved().lock().get(cwd) {
    return known.clone();
  }
  let identity = Arc::new(resolve(Path::new(cwd), None));
  resolved().lock().insert(cwd.to_string(), identity.clone());
  identity
}

/// Tests that move a folder within one process: forget what it resolved.
#[cfg(test)]
pub(crate) fn forget_resolved() {
  resolved().lock().clear();
}

fn stamp_of(path: &Path) -> Option<StatStamp> {
  fs::symlink_metadata(path).ok().map(|m| StatStamp::of(&m))
}

fn now_ms() -> u64 {
  std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// One call's view of the map: lookups, and the changes it found to record
/// ([`Known::save`]).
#[derive(Debug)]
pub struct Known {
  path: PathBuf,
  /// The file's stat when `map` was read.
  stamp: Option<StatStamp>,
  map: Arc<Map>,
  /// cwd → its new entry (`None`: drop it).
  changes: Mutex<FxHashMap<String, Option<Seen>>>,
}

impl Known {
  /// The agent dir's map as it is now (the process's copy while the file's stat is unchanged).
  pub fn open(agent_dir: &Path) -> Known {
    let path = path(agent_dir);
    let stamp = stamp_of(&path);
    let cached = maps().lock().iter().find(|(p, s, _)| *p == path && *s == stamp).map(|(_, _, m)| m.clone());
    let map = cached.unwrap_or_else(|| {
      let map = Arc::new(load_map(&path));
      let mut maps = maps().lock();
      maps.retain(|(p, _, _)| *p != path);
      maps.push((path.clone(), stamp, map.clone()));
      map
    });
    Known { path, stamp, map, changes: Mutex::default() }
  }

  /// Is the file still the one this view read?
  pub fn is_current(&self) -> bool {
    stamp_of(&self.path) == self.stamp
  }

  /// The map exists but could not be read (moved folders and explicit keys
  /// of other checkouts are not known this call).
  pub fn unreadable(&self) -> bool {
    self.map.unreadable
  }

  /// The identity of the current cwd under the explicit key in effect (if
  /// any): what this call's settings say, recorded over any earlier entry.
  pub fn current(&self, cwd: &Path, explicit: Option<&str>) -> Identity {
    let text = cwd.to_string_lossy();
    let identity = match explicit {
      Some(_) => resolve(cwd, explicit),
      None => (*resolved_once(&text)).clone(),
    };
    if identity.fallback == Some(Fallback::CwdMissing) {
      return self.map.by_cwd.get(text.as_ref()).map(Seen::identity).unwrap_or(identity);
    }
    self.note(&text, &identity);
    identity
  }

  /// The identity of another session's cwd: an explicit key recorded for
  /// it wins (its settings are not this call's to read); else what its
  /// folder says now; else, when the folder is gone, what it said when it
  /// was last seen.
  pub fn of(&self, cwd: &str) -> Arc<Identity> {
    let recorded = self.map.by_cwd.get(cwd);
    if let Some(seen) = recorded.filter(|s| s.source == Source::Explicit) {
      return Arc::new(seen.identity());
    }
    let identity = resolved_once(cwd);
    if identity.fallback == Some(Fallback::CwdMissing) {
      return recorded.map(|s| Arc::new(s.identity())).unwrap_or(identity);
    }
    self.note(cwd, &identity);
    identity
  }

  /// Queues what `identity` changes in the map: an identity from evidence
  /// is recorded; a folder that is plainly not a project (the cwd rule
  /// without a fallback) loses its entry; an ambiguous one keeps it.
  fn note(&self, cwd: &str, identity: &Identity) {
    let recorded = self.map.by_cwd.get(cwd);
    let change = match identity.source {
      Source::Cwd if identity.fallback.is_none() => recorded.map(|_| None),
      Source::Cwd => None,
      _ if recorded.is_some_and(|s| s.names(identity) && s.evidence == identity.evidence) => None,
      _ => Some(Some(Seen {
        cwd: cwd.to_string(),
        key: identity.key.clone(),
        name: identity.name.clone(),
        source: identity.source,
        evidence: identity.evidence.clone(),
        seen_at: now_ms(),
      })),
    };
    if let Some(change) = change {
      self.changes.lock().insert(cwd.to_string(), change);
    }
  }

  /// Writes the queued changes, best effort: nothing when there are none,
  /// the map is unreadable or the agent dir does not exist; skipped when the lock or the write fails (the
  /// next call that sees those cwds queues them again).
  pub fn save(&self) {
    let changes = std::mem::take(&mut *self.changes.lock());
    if changes.is_empty() || self.map.unreadable {
      return;
    }
    let _ = self.write(changes);
  }

  fn write(&self, changes: FxHashMap<String, Option<Seen>>) -> Option<()> {
    let fabric = self.path.parent()?;
    // Never the one to create an agent dir (a mistyped --agent-dir stays absent).
    fabric.parent()?.is_dir().then_some(())?;
    fs::create_dir_all(fabric).ok()?;
    let options = LockOptions { timeout: LOCK_TIMEOUT, ..LockOptions::default() };
    let held = lock::acquire(&self.path, &options).ok()?;
    // Re-read under the lock: another process may have recorded other cwds.
    let mut by_cwd: FxHashMap<String, Seen> = read(&self.path).ok()?.into_iter().map(|s| (s.cwd.clone(), s)).collect();
    for (cwd, change) in changes {
      match change {
        Some(seen) => by_cwd.insert(cwd, seen),
        None => by_cwd.remove(&cwd),
      };
    }
    let mut projects: Vec<Seen> = by_cwd.into_values().collect();
    projects.sort_by(|a, b| b.seen_at.cmp(&a.seen_at).then_with(|| a.cwd.cmp(&b.cwd)));
    projects.truncate(MAX_ENTRIES);
    projects.sort_by(|a, b| a.cwd.cmp(&b.cwd));
    let json = serde_json::to_string_pretty(&Ledger { version: FILE_VERSION, projects }).ok()?;
    held.still_held().then_some(())?;
    write_atomic(&self.path, format!("{json}\n").as_bytes()).ok()
  }
}

#[cfg(test)]
mod tests;

//! Forgotten sessions: the sessions a user asked recall never to surface
//! again, without touching Pi's history.
//!
//! One durable list per agent dir (`<agentDir>/fabric/forgotten.json`),
//! changed only under the proper-lockfile lock the memory files use, written
//! atomically and durably (`store::file::write_atomic`), read bounded. Every
//! process re-reads it when its stat stamp changes, so a forget in one Pi is
//! seen by the next call of every other. A session is forgotten by its header
//! id and by its file: one that changes afterwards (an append, a rewrite)
//! stays forgotten, and so does a copy under the same id. A list that cannot
//! be read fails closed: calls answer `forgotten_unreadable` rather than risk
//! surfacing what was forgotten; a missing list forgets nothing.

use crate::error::{ContractError, ErrorCode};
use crate::fsread::{read_regular, Links, ReadError};
use crate::session::discover::SessionFile;
use crate::session::source::StatStamp;
use crate::store::file::write_atomic;
use crate::store::lock::{self, LockError, LockOptions};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub const FILE_NAME: &str = "forgotten.json";
/// Far above any real list (a line per forgotten session): a larger file is not ours to parse.
const MAX_BYTES: u64 = 4 << 20;
const VERSION: u32 = 1;

/// One forgotten session, as the list records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Forgotten {
  pub session_id: String,
  pub file: String,
  /// Unix milliseconds.
  pub forgotten_at: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Ledger {
  version: u32,
  sessions: Vec<Forgotten>,
}

/// (dev, inode) of a file.
type FileId = (u64, u64);

/// The list as one process holds it: lookups by id, by path and by the
/// file a path names now (a session dir reached by another spelling of its
/// path, a symlink, is the same file).
#[derive(Debug, Default)]
pub struct List {
  pub sessions: Vec<Forgotten>,
  ids: HashSet<String>,
  files: HashSet<PathBuf>,
  inodes: HashSet<FileId>,
}

fn file_id(path: &Path) -> Option<FileId> {
  fs::metadata(path).ok().map(|m| {
    let stamp = StatStamp::of(&m);
    (stamp.dev, stamp.ino)
  })
}

impl List {
  fn of(sessions: Vec<Forgotten>) -> List {
    let ids = sessions.iter().map(|s| s.session_id.clone()).collect();
    let files = sessions.iter().map(|s| PathBuf::from(&s.file)).collect();
    let inodes = sessions.iter().filter_map(|s| file_id(Path::new(&s.file))).collect();
    List { sessions, ids, files, inodes }
  }

  /// Do the forgotten files still name the files this list saw?
  fn same_files(&self) -> bool {
    let now: HashSet<FileId> = self.sessions.iter().filter_map(|s| file_id(Path::new(&s.file))).collect();
    now == self.inodes
  }

  pub fn is_empty(&self) -> bool {
    self.sessions.is_empty()
  }

  /// Is the session with header id `id` (when known) at `path` forgotten?
  pub fn covers(&self, id: Option<&str>, path: &Path) -> bool {
    !self.is_empty() && (self.files.contains(path) || id.is_some_and(|id| self.ids.contains(id)))
  }

  /// Is the listed file at `path`, whose stat is `stamp`, forgotten?
  pub fn covers_file(&self, path: &Path, stamp: &StatStamp) -> bool {
    !self.is_empty() && (self.files.contains(path) || self.inodes.contains(&(stamp.dev, stamp.ino)))
  }
}

/// Where an agent dir's list lives.
pub fn path(agent_dir: &Path) -> PathBuf {
  agent_dir.join("fabric").join(FILE_NAME)
}

fn unreadable(path: &Path, why: impl std::fmt::Display) -> ContractError {
  ContractError::new(
    ErrorCode::ForgottenUnreadable,
    format!(
      "The list of forgotten sessions ({}) cannot be read: {why}. Nothing is answered until it is fixed or moved, \
       so nothing forgotten is surfaced.",
      path.display()
    ),
  )
  .with("file", path.to_string_lossy().into_owned())
}

fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<Forgotten>, ContractError> {
  let ledger: Ledger = serde_json::from_slice(bytes).map_err(|e| unreadable(path, e))?;
  if ledger.version != VERSION {
    return Err(unreadable(path, format!("version {} is not {VERSION}", ledger.version)));
  }
  Ok(ledger.sessions)
}

/// The list on disk, read bounded; a missing file is the empty list.
fn read(path: &Path) -> Result<(Vec<Forgotten>, Option<StatStamp>), ContractError> {
  match read_regular(path, MAX_BYTES, Links::Refuse) {
    Ok((bytes, metadata)) => Ok((parse(path, &bytes)?, Some(StatStamp::of(&metadata)))),
    Err(error) if error.is_not_found() => Ok((Vec::new(), None)),
    Err(error) => Err(unreadable(path, describe(&error))),
  }
}

fn describe(error: &ReadError) -> String {
  format!("{error} ({})", error.reason())
}

struct Cached {
  path: PathBuf,
  stamp: Option<StatStamp>,
  list: Arc<List>,
}

fn cache() -> &'static Mutex<Vec<Cached>> {
  static CACHE: std::sync::OnceLock<Mutex<Vec<Cached>>> = std::sync::OnceLock::new();
  CACHE.get_or_init(|| Mutex::new(Vec::new()))
}

fn current_stamp(path: &Path) -> Option<StatStamp> {
  fs::metadata(path).ok().map(|m| StatStamp::of(&m))
}

/// The agent dir's list as it is now: the process's copy while the file's
/// stat stamp is unchanged, else read again.
pub fn load(agent_dir: &Path) -> Result<Arc<List>, ContractError> {
  let path = path(agent_dir);
  let stamp = current_stamp(&path);
  let cached = cache().lock().iter().find(|c| c.path == path && c.stamp == stamp).map(|c| c.list.clone());
  // The same list while its files are the same files: a warm call keeps its last synchronization.
  if let Some(list) = cached.filter(|list| list.same_files()) {
    return Ok(list);
  }
  let (sessions, stamp) = read(&path)?;
  let list = Arc::new(List::of(sessions));
  let mut cache = cache().lock();
  cache.retain(|c| c.path != path);
  cache.push(Cached { path, stamp, list: list.clone() });
  Ok(list)
}

/// `session_forgotten` when the session with header id `id` at `path` is
/// forgotten (or the list's own error when it cannot be read): what a call
/// that names one session answers instead of reading it.
pub fn refuse(agent_dir: &Path, id: &str, path: &Path) -> Result<(), ContractError> {
  if !load(agent_dir)?.covers(Some(id), path) {
    return Ok(());
  }
  Err(
    ContractError::new(
      ErrorCode::SessionForgotten,
      format!("Session {id} was forgotten: recall does not surface it (memory.unforget takes that back)."),
    )
    .with("sessionId", id)
    .with("sessionFile", path.to_string_lossy().into_owned()),
  )
}

/// What a forget or unforget did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
  /// The entries added or removed (empty: nothing changed).
  pub changed: Vec<Forgotten>,
  /// Every forgotten session after the change.
  pub forgotten: Vec<Forgotten>,
}

fn now_ms() -> u64 {
  std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

fn write_failed(path: &Path, why: impl std::fmt::Display) -> ContractError {
  ContractError::new(
    ErrorCode::WriteFailed,
    format!("Could not write {} ({why}). Nothing was changed.", path.display()),
  )
  .with("file", path.to_string_lossy().into_owned())
}

/// Runs `change` on the list under its lock and writes the result back when
/// `change` changed anything.
fn update(
  agent_dir: &Path,
  change: impl FnOnce(&mut Vec<Forgotten>) -> Vec<Forgotten>,
) -> Result<Change, ContractError> {
  update_with(agent_dir, &LockOptions::default(), change)
}

fn update_with(
  agent_dir: &Path,
  options: &LockOptions,
  change: impl FnOnce(&mut Vec<Forgotten>) -> Vec<Forgotten>,
) -> Result<Change, ContractError> {
  let path = path(agent_dir);
  let dir = path.parent().unwrap_or(agent_dir);
  fs::create_dir_all(dir).map_err(|e| write_failed(&path, e))?;
  let held = lock::acquire(&path, options).map_err(|error| match error {
    LockError::Locked(lock) => ContractError::new(
      ErrorCode::Locked,
      format!("{} is locked by another writer ({}); nothing was changed. Try again.", FILE_NAME, lock.display()),
    ),
    LockError::Io(lock, error) => write_failed(&lock, error),
  })?;
  let (mut sessions, _) = read(&path)?;
  let changed = change(&mut sessions);
  if !changed.is_empty() {
    if !held.still_held() {
      return Err(write_failed(&path, "the lock was taken over by another writer"));
    }
    let ledger = Ledger { version: VERSION, sessions: sessions.clone() };
    let json = serde_json::to_string_pretty(&ledger).map_err(|e| write_failed(&path, e))?;
    write_atomic(&path, format!("{json}\n").as_bytes()).map_err(|e| write_failed(&path, e))?;
  }
  Ok(Change { changed, forgotten: sessions })
}

/// Forgets `session` (by its header id and its file); forgetting it again changes nothing.
pub fn forget(agent_dir: &Path, session: &SessionFile) -> Result<Change, ContractError> {
  let entry = Forgotten {
    session_id: session.header.id.clone(),
    file: session.path.to_string_lossy().into_owned(),
    forgotten_at: now_ms(),
  };
  update(agent_dir, |sessions| {
    if sessions.iter().any(|s| s.session_id == entry.session_id && s.file == entry.file) {
      return Vec::new();
    }
    sessions.push(entry.clone());
    vec![entry]
  })
}

/// Takes back every forget of the session `target` names: its header id, a
/// prefix of one, or its file, as the list records them. Naming nothing
/// forgotten is `session_not_found`; a prefix of several ids is ambiguous.
pub fn unforget(agent_dir: &Path, target: &str) -> Result<Change, ContractError> {
  let mut refused = None;
  let change = update(agent_dir, |sessions| {
    let named = |s: &Forgotten| s.session_id == target || s.file == target;
    let mut ids: Vec<&str> = sessions.iter().filter(|s| named(s)).map(|s| s.session_id.as_str()).collect();
    if ids.is_empty() && target.chars().count() >= crate::session::discover::MIN_ID_PREFIX {
      ids = sessions.iter().filter(|s| s.session_id.starts_with(target)).map(|s| s.session_id.as_str()).collect();
    }
    ids.sort_unstable();
    ids.dedup();
    match ids.as_slice() {
      [] => {
        refused =
          Some(ContractError::new(ErrorCode::SessionNotFound, format!("No forgotten session is \"{target}\".")));
        Vec::new()
      }
      [id] => {
        let id = id.to_string();
        let (taken, kept): (Vec<Forgotten>, Vec<Forgotten>) = sessions.drain(..).partition(|s| s.session_id == id);
        *sessions = kept;
        taken
      }
      several => {
        refused = Some(
          ContractError::new(
            ErrorCode::AmbiguousSession,
            format!("\"{target}\" names {} forgotten sessions.", several.len()),
          )
          .with("candidates", several.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
        );
        Vec::new()
      }
    }
  })?;
  match refused {
    Some(error) => Err(error),
    None => Ok(change),
  }
}

#[cfg(test)]
mod tests;

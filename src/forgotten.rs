//! Forgotten sessions: the sessions a user asked recall never to surface
//! again, without touching Pi's history.
//!
//! One durable list per agent dir (`<agentDir>/fabric/forgotten.json`),
//! changed only under the proper-lockfile lock the memory files use, written
//! atomically and durably (`store::file::write_atomic`), read bounded. Every
//! process re-reads it when its stat stamp changes, so a forget in one Pi is
//! seen by the next call of every other. A session is forgotten by its header
//! id and by its file: one that changes afterwards (an append, a rewrite)
//! stays forgotten, and so does a copy under the same id. One entry of a
//! session can be forgotten alone, by (session id, entry id): the normalizer
//! leaves its record out of every view and index record of that session
//! ([`List::entries`]), so its text and words are nowhere but in Pi's file.
//! A list that cannot be read fails closed: calls answer
//! `forgotten_unreadable` rather than risk surfacing what was forgotten; a
//! missing list forgets nothing.

use crate::error::{ContractError, ErrorCode};
use crate::fsread::{read_regular, Links, ReadError};
use crate::session::discover::SessionFile;
use crate::session::entry::ForgottenEntries;
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
/// Version 1 lists sessions only; version 2 adds `entryId`. A list is
/// written as version 1 while it forgets no entry, so a process of an
/// earlier release sharing the agent dir keeps reading it (one that meets
/// version 2 fails closed, as it should: it cannot leave the entry out).
const VERSION: u32 = 1;
const VERSION_ENTRIES: u32 = 2;

/// One forgotten session, or one entry of it, as the list records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Forgotten {
  pub session_id: String,
  pub file: String,
  /// The one entry forgotten (its record's id); absent: the whole session.
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub entry_id: Option<String>,
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
  /// The forgotten entries, by session id.
  pub entries: ForgottenEntries,
}

fn file_id(path: &Path) -> Option<FileId> {
  fs::metadata(path).ok().map(|m| {
    let stamp = StatStamp::of(&m);
    (stamp.dev, stamp.ino)
  })
}

impl List {
  fn of(sessions: Vec<Forgotten>) -> List {
    let whole = || sessions.iter().filter(|s| s.entry_id.is_none());
    let ids = whole().map(|s| s.session_id.clone()).collect();
    let files = whole().map(|s| PathBuf::from(&s.file)).collect();
    let inodes = whole().filter_map(|s| file_id(Path::new(&s.file))).collect();
    let mut entries = ForgottenEntries::new();
    for s in &sessions {
      if let Some(entry) = &s.entry_id {
        entries.entry(s.session_id.clone()).or_default().insert(entry.clone());
      }
    }
    List { sessions, ids, files, inodes, entries }
  }

  /// Do the forgotten files still name the files this list saw?
  fn same_files(&self) -> bool {
    let now: HashSet<FileId> =
      self.sessions.iter().filter(|s| s.entry_id.is_none()).filter_map(|s| file_id(Path::new(&s.file))).collect();
    now == self.inodes
  }

  /// Nothing forgotten: no session and no entry.
  pub fn is_empty(&self) -> bool {
    self.sessions.is_empty()
  }

  /// No whole session forgotten (entries may be).
  fn no_sessions(&self) -> bool {
    self.ids.is_empty() && self.files.is_empty()
  }

  /// Is entry `entry_id` of the session with header id `session_id` forgotten?
  pub fn covers_entry(&self, session_id: &str, entry_id: &str) -> bool {
    self.entries.get(session_id).is_some_and(|ids| ids.contains(entry_id))
  }

  /// Is the session with header id `id` (when known) at `path` forgotten?
  pub fn covers(&self, id: Option<&str>, path: &Path) -> bool {
    !self.no_sessions() && (self.files.contains(path) || id.is_some_and(|id| self.ids.contains(id)))
  }

  /// Is the listed file at `path`, whose stat is `stamp`, forgotten?
  pub fn covers_file(&self, path: &Path, stamp: &StatStamp) -> bool {
    !self.no_sessions() && (self.files.contains(path) || self.inodes.contains(&(stamp.dev, stamp.ino)))
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
  if ledger.version != VERSION && ledger.version != VERSION_ENTRIES {
    return Err(unreadable(path, format!("version {} is neither {VERSION} nor {VERSION_ENTRIES}", ledger.version)));
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
    let version = if sessions.iter().any(|s| s.entry_id.is_some()) { VERSION_ENTRIES } else { VERSION };
    let ledger = Ledger { version, sessions: sessions.clone() };
    let json = serde_json::to_string_pretty(&ledger).map_err(|e| write_failed(&path, e))?;
    write_atomic(&path, format!("{json}\n").as_bytes()).map_err(|e| write_failed(&path, e))?;
  }
  Ok(Change { changed, forgotten: sessions })
}

/// Forgets `session` (by its header id and its file), or only its entry
/// `entry` (by the session's id and the entry's); forgetting it again
/// changes nothing.
pub fn forget(agent_dir: &Path, session: &SessionFile, entry: Option<&str>) -> Result<Change, ContractError> {
  let forgotten = Forgotten {
    session_id: session.header.id.clone(),
    file: session.path.to_string_lossy().into_owned(),
    entry_id: entry.map(str::to_string),
    forgotten_at: now_ms(),
  };
  update(agent_dir, |sessions| {
    let same = |s: &Forgotten| s.session_id == forgotten.session_id && s.entry_id == forgotten.entry_id;
    // An entry is one wherever its session's file is; a session is one per file.
    if sessions.iter().any(|s| same(s) && (s.entry_id.is_some() || s.file == forgotten.file)) {
      return Vec::new();
    }
    sessions.push(forgotten.clone());
    vec![forgotten]
  })
}

/// Takes back every forget of the session `target` names (its header id, a
/// prefix of one, or its file, as the list records them), or, with `entry`,
/// the forget of that one entry of it. Naming nothing forgotten is
/// `session_not_found` (`address_not_found` for an entry); a prefix of
/// several ids is ambiguous.
pub fn unforget(agent_dir: &Path, target: &str, entry: Option<&str>) -> Result<Change, ContractError> {
  let mut refused = None;
  let change = update(agent_dir, |sessions| {
    let this = |s: &Forgotten| s.entry_id.as_deref() == entry;
    let named = |s: &Forgotten| this(s) && (s.session_id == target || s.file == target);
    let mut ids: Vec<&str> = sessions.iter().filter(|s| named(s)).map(|s| s.session_id.as_str()).collect();
    if ids.is_empty() && target.chars().count() >= crate::session::named::MIN_ID_PREFIX {
      let prefixed = |s: &&Forgotten| this(s) && s.session_id.starts_with(target);
      ids = sessions.iter().filter(prefixed).map(|s| s.session_id.as_str()).collect();
    }
    ids.sort_unstable();
    ids.dedup();
    match ids.as_slice() {
      [] => {
        refused = Some(not_forgotten(target, entry));
        Vec::new()
      }
      [id] => {
        let id = id.to_string();
        let (taken, kept): (Vec<Forgotten>, Vec<Forgotten>) =
          sessions.drain(..).partition(|s| s.session_id == id && this(s));
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

fn not_forgotten(target: &str, entry: Option<&str>) -> ContractError {
  match entry {
    None => ContractError::new(ErrorCode::SessionNotFound, format!("No forgotten session is \"{target}\".")),
    Some(entry) => {
      ContractError::new(ErrorCode::AddressNotFound, format!("No forgotten entry is \"{entry}\" of \"{target}\"."))
        .with("addressType", "entryId")
        .with("address", entry)
    }
  }
}

/// `entry_forgotten` for entry `entry_id` of the session with header id `session_id`.
pub fn entry_refused(session_id: &str, entry_id: &str) -> ContractError {
  ContractError::new(
    ErrorCode::EntryForgotten,
    format!(
      "Entry {entry_id} of session {session_id} was forgotten: recall does not surface it (memory.unforget takes \
       that back)."
    ),
  )
  .with("sessionId", session_id)
  .with("entryId", entry_id)
}

#[cfg(test)]
mod tests;

//! Curated memory: `MEMORY.md` (the agent's notes) and `USER.md` (what the
//! agent knows about the user), compatible with `@amaster.ai/pi-memory`.
//!
//! A mutation runs as: validate and threat-scan the input (no lock) → take
//! the in-process gate and the cross-process file lock → read the file
//! strictly → refuse on drift (saving a `.bak`) → apply → atomic write. Reads
//! take no file lock: writes replace the file atomically. The prompt snapshot
//! is rebuilt only by [`MemoryStore::load_from_disk`]; writes never touch it.

pub mod entries;
pub mod file;
pub mod lock;
pub mod result;
pub mod snapshot;
pub mod threat;

#[cfg(test)]
mod tests;

use crate::text::utf16_len;
use entries::{group_thousands, joined_len, js_trim};
use lock::{LockError, LockOptions};
use parking_lot::Mutex;
use result::{Failure, FailureCode, FileStatus, StoreResult, StoreStatus, Success};
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

pub const DEFAULT_MEMORY_CHAR_LIMIT: usize = 2_200;
pub const DEFAULT_USER_CHAR_LIMIT: usize = 1_375;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
  Memory,
  User,
}

impl Target {
  pub const ALL: [Target; 2] = [Target::Memory, Target::User];

  pub fn parse(text: &str) -> Option<Target> {
    match text {
      "memory" => Some(Target::Memory),
      "user" => Some(Target::User),
      _ => None,
    }
  }

  pub fn name(self) -> &'static str {
    match self {
      Target::Memory => "memory",
      Target::User => "user",
    }
  }

  pub fn file_name(self) -> &'static str {
    match self {
      Target::Memory => "MEMORY.md",
      Target::User => "USER.md",
    }
  }

  fn index(self) -> usize {
    self as usize
  }
}

#[derive(Debug, Clone)]
pub struct StoreOptions {
  pub dir: PathBuf,
  pub memory_char_limit: usize,
  pub user_char_limit: usize,
  pub lock: LockOptions,
}

impl StoreOptions {
  pub fn new(dir: impl Into<PathBuf>) -> StoreOptions {
    StoreOptions {
      dir: dir.into(),
      memory_char_limit: DEFAULT_MEMORY_CHAR_LIMIT,
      user_char_limit: DEFAULT_USER_CHAR_LIMIT,
      lock: LockOptions::default(),
    }
  }
}

#[derive(Default)]
struct State {
  /// Entries as last read from or written to disk, raw.
  live: [Vec<String>; 2],
  /// Entries as of the last `load_from_disk`, sanitized: the prompt snapshot.
  frozen: [Vec<String>; 2],
  loaded: bool,
}

/// What a mutation decided after seeing the current entries.
enum Change {
  Write(&'static str),
  Unchanged(&'static str),
  Refuse(Failure),
}

const DRIFT_REMEDIATION: &str = "Open the .bak file, integrate the missing entries into the memory tool one at a time via memory_add, then remove or rewrite the original file to a clean state.";

pub struct MemoryStore {
  options: StoreOptions,
  state: Mutex<State>,
}

/// One gate per file per process: writers in this process queue here instead
/// of polling the file lock, and a read never interleaves with a write's
/// update of the live entries.
fn gate(path: &Path) -> Arc<Mutex<()>> {
  static GATES: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
  GATES.get_or_init(Default::default).lock().entry(path.to_path_buf()).or_default().clone()
}

fn success(target: Target, entries: Vec<String>, limit: usize, message: Option<&'static str>) -> StoreResult {
  StoreResult::Success(Success {
    success: true,
    target: target.name(),
    usage: entries::usage(joined_len(&entries), limit),
    entry_count: entries.len(),
    entries,
    message,
  })
}

/// Normalizes and checks new entry text: CRLF as LF, trimmed, non-empty,
/// free of threats, and storable as exactly one entry.
fn prepare(content: &str, empty_error: &str) -> Result<String, Failure> {
  let normalized = entries::normalize_newlines(content);
  let trimmed = js_trim(&normalized);
  if trimmed.is_empty() {
    return Err(Failure::new(FailureCode::EmptyContent, empty_error));
  }
  if let Some(message) = threat::first_threat_message(trimmed) {
    return Err(Failure::new(FailureCode::Blocked, message));
  }
  if !entries::is_storable(trimmed) {
    return Err(Failure::new(
      FailureCode::Unstorable,
      "Content cannot contain a line holding only '§' (the entry delimiter). Rephrase it or add separate entries.",
    ));
  }
  Ok(trimmed.to_string())
}

fn needle(old_text: &str) -> Result<String, Failure> {
  let normalized = entries::normalize_newlines(old_text);
  let trimmed = js_trim(&normalized);
  if trimmed.is_empty() {
    return Err(Failure::new(FailureCode::EmptyContent, "oldText cannot be empty."));
  }
  Ok(trimmed.to_string())
}

/// The index of the one entry containing `needle`.
fn find_unique(entries: &[String], needle: &str) -> Result<usize, Failure> {
  let found: Vec<usize> = (0..entries.len()).filter(|&i| entries[i].contains(needle)).collect();
  match found.as_slice() {
    [one] => Ok(*one),
    [] => Err(Failure::new(FailureCode::NoMatch, format!("No entry matched '{needle}'."))),
    many => {
      let mut failure =
        Failure::new(FailureCode::AmbiguousMatch, format!("Multiple entries matched '{needle}'. Be more specific."));
      failure.details.matches = Some(many.iter().map(|&i| entries::preview(&entries[i])).collect());
      Err(failure)
    }
  }
}

impl MemoryStore {
  pub fn new(options: StoreOptions) -> MemoryStore {
    MemoryStore { options, state: Mutex::new(State::default()) }
  }

  pub fn dir(&self) -> &Path {
    &self.options.dir
  }

  pub fn limit(&self, target: Target) -> usize {
    match target {
      Target::Memory => self.options.memory_char_limit,
      Target::User => self.options.user_char_limit,
    }
  }

  /// The file's canonical path, as proper-lockfile resolves it (symlinks
  /// followed), so both implementations lock the same `<path>.lock`.
  fn path(&self, target: Target) -> PathBuf {
    let plain = self.options.dir.join(target.file_name());
    fs::canonicalize(&plain)
      .or_else(|_| fs::canonicalize(&self.options.dir).map(|dir| dir.join(target.file_name())))
      .unwrap_or(plain)
  }

  /// The file's entries (deduplicated). With `refuse_drift`, a file that
  /// would not survive a rewrite is refused and backed up instead.
  fn read_entries(&self, target: Target, path: &Path, refuse_drift: bool) -> Result<Vec<String>, Failure> {
    let on_disk = match file::read(path, file::read_bound(self.limit(target))) {
      Ok(None) => return Ok(Vec::new()),
      Ok(Some(on_disk)) => on_disk,
      Err(error) => {
        return Err(Failure::new(
          FailureCode::Unreadable,
          format!(
            "Could not read {} ({}): {error}. Nothing was changed; fix or move the file, then retry.",
            target.file_name(),
            path.display()
          ),
        ))
      }
    };
    if refuse_drift && file::is_drift(&on_disk.text, self.limit(target)) {
      return Err(drift_failure(target, path, &on_disk.bytes));
    }
    Ok(entries::dedupe(entries::parse(&on_disk.text)))
  }

  fn set_live(&self, target: Target, entries: &[String]) {
    self.state.lock().live[target.index()] = entries.to_vec();
  }

  /// Re-reads one file into the live entries.
  fn refresh(&self, target: Target) -> Result<Vec<String>, Failure> {
    let path = self.path(target);
    let gate = gate(&path);
    let _in_process = gate.lock();
    let entries = self.read_entries(target, &path, false)?;
    self.set_live(target, &entries);
    Ok(entries)
  }

  fn file_status(&self, target: Target, read: Result<Vec<String>, Failure>) -> FileStatus {
    let (entries, error) = match read {
      Ok(entries) => (entries, None),
      Err(failure) => (Vec::new(), Some(failure.error)),
    };
    FileStatus {
      target: target.name(),
      file: self.options.dir.join(target.file_name()).to_string_lossy().into_owned(),
      entry_count: entries.len(),
      usage: entries::usage(joined_len(&entries), self.limit(target)),
      error,
    }
  }

  /// Re-reads both files into live state and rebuilds the sanitized prompt
  /// snapshot. An unreadable file is reported in its status, never loaded
  /// as empty for writing (every write reads the file again).
  pub fn load_from_disk(&self) -> StoreStatus {
    let [memory, user] = Target::ALL.map(|target| {
      let read = self.refresh(target);
      let frozen: Vec<String> =
        read.as_ref().map(|e| e.iter().map(|entry| snapshot::sanitize(entry, target)).collect()).unwrap_or_default();
      self.state.lock().frozen[target.index()] = frozen;
      self.file_status(target, read)
    });
    self.state.lock().loaded = true;
    StoreStatus { memory, user }
  }

  /// Entry counts and usage per file, read fresh from disk.
  pub fn status(&self) -> StoreStatus {
    let [memory, user] = Target::ALL.map(|target| self.file_status(target, self.refresh(target)));
    StoreStatus { memory, user }
  }

  /// The live (raw, unsanitized) entries of one file, re-read from disk. The
  /// first call on a never-loaded store loads both files.
  pub fn read(&self, target: Target) -> StoreResult {
    if !self.state.lock().loaded {
      self.load_from_disk();
    }
    match self.refresh(target) {
      Ok(entries) => success(target, entries, self.limit(target), None),
      Err(failure) => failure.into(),
    }
  }

  /// The live entries as last seen, without touching the disk.
  pub fn entries(&self, target: Target) -> Vec<String> {
    self.state.lock().live[target.index()].clone()
  }

  pub fn add(&self, target: Target, content: &str) -> StoreResult {
    let content = match prepare(content, "Content cannot be empty.") {
      Ok(content) => content,
      Err(failure) => return failure.into(),
    };
    self.mutate(target, |entries, limit| {
      if entries.contains(&content) {
        return Change::Unchanged("Entry already exists (no duplicate added).");
      }
      let current = joined_len(entries);
      entries.push(content.clone());
      if joined_len(entries) > limit {
        entries.pop();
        let mut failure = Failure::new(
          FailureCode::OverLimit,
          format!(
            "Memory at {}/{} chars. Adding this entry ({} chars) would exceed the limit. Replace or remove existing entries first.",
            group_thousands(current),
            group_thousands(limit),
            utf16_len(&content)
          ),
        );
        failure.details.current_entries = Some(entries.clone());
        failure.details.usage = Some(format!("{}/{}", group_thousands(current), group_thousands(limit)));
        return Change::Refuse(failure);
      }
      Change::Write("Entry added.")
    })
  }

  pub fn replace(&self, target: Target, old_text: &str, new_content: &str) -> StoreResult {
    let prepared = needle(old_text).and_then(|old| {
      prepare(new_content, "newContent cannot be empty. Use 'remove' to delete entries.").map(|new| (old, new))
    });
    let (old, new) = match prepared {
      Ok(pair) => pair,
      Err(failure) => return failure.into(),
    };
    self.mutate(target, |entries, limit| {
      let index = match find_unique(entries, &old) {
        Ok(index) => index,
        Err(failure) => return Change::Refuse(failure),
      };
      let previous = std::mem::replace(&mut entries[index], new.clone());
      let total = joined_len(entries);
      if total > limit {
        entries[index] = previous;
        return Change::Refuse(Failure::new(
          FailureCode::OverLimit,
          format!(
            "Replacement would put memory at {}/{} chars. Shorten the new content or remove other entries first.",
            group_thousands(total),
            group_thousands(limit)
          ),
        ));
      }
      Change::Write("Entry replaced.")
    })
  }

  pub fn remove(&self, target: Target, old_text: &str) -> StoreResult {
    let old = match needle(old_text) {
      Ok(old) => old,
      Err(failure) => return failure.into(),
    };
    self.mutate(target, |entries, _| match find_unique(entries, &old) {
      Ok(index) => {
        entries.remove(index);
        Change::Write("Entry removed.")
      }
      Err(failure) => Change::Refuse(failure),
    })
  }

  /// Read-modify-write of one file under the in-process gate and the file lock.
  fn mutate(&self, target: Target, change: impl FnOnce(&mut Vec<String>, usize) -> Change) -> StoreResult {
    if let Err(error) = fs::create_dir_all(&self.options.dir) {
      return io_failure(&self.options.dir, &error).into();
    }
    let path = self.path(target);
    let gate = gate(&path);
    let _in_process = gate.lock();
    let held = match lock::acquire(&path, &self.options.lock) {
      Ok(held) => held,
      Err(LockError::Locked(lock_path)) => {
        return Failure::new(
          FailureCode::Locked,
          format!(
            "{} is locked by another writer ({}); nothing was written. Try again in a moment.",
            target.file_name(),
            lock_path.display()
          ),
        )
        .into()
      }
      Err(LockError::Io(lock_path, error)) => return io_failure(&lock_path, &error).into(),
    };
    let mut entries = match self.read_entries(target, &path, true) {
      Ok(entries) => entries,
      Err(failure) => return failure.into(),
    };
    self.set_live(target, &entries);
    let limit = self.limit(target);
    match change(&mut entries, limit) {
      Change::Refuse(failure) => failure.into(),
      Change::Unchanged(message) => success(target, entries, limit, Some(message)),
      Change::Write(message) => {
        let entries = entries::dedupe(entries);
        // A lock taken over as stale (we held it past `stale`) is no longer
        // ours: writing now could overwrite the new holder's write.
        if !held.still_held() {
          let error = std::io::Error::other("the file lock was taken over by another writer");
          return io_failure(held.path(), &error).into();
        }
        file::remove_orphan_temps(&path);
        if let Err(error) = file::write_atomic(&path, entries::serialize(&entries).as_bytes()) {
          return io_failure(&path, &error).into();
        }
        self.set_live(target, &entries);
        success(target, entries, limit, Some(message))
      }
    }
  }

  /// One file's prompt block from the frozen snapshot, bounded on its own.
  pub fn format_for_system_prompt(&self, target: Target) -> String {
    let state = self.state.lock();
    snapshot::render(target, &state.frozen[target.index()], self.limit(target), snapshot::MAX_SNAPSHOT_UNITS)
  }

  /// Both blocks (memory first), bounded together with room for each.
  pub fn format_all_for_system_prompt(&self) -> String {
    let state = self.state.lock();
    let full =
      Target::ALL.map(|t| utf16_len(&snapshot::render(t, &state.frozen[t.index()], self.limit(t), usize::MAX)));
    let (memory_budget, user_budget) = snapshot::allot(full[0], full[1], snapshot::MAX_SNAPSHOT_UNITS);
    let blocks = [(Target::Memory, memory_budget), (Target::User, user_budget)]
      .map(|(t, budget)| snapshot::render(t, &state.frozen[t.index()], self.limit(t), budget));
    snapshot::join_blocks(&blocks)
  }
}

fn io_failure(path: &Path, error: &std::io::Error) -> Failure {
  Failure::new(
    FailureCode::IoError,
    format!("Could not write memory ({}): {error}. Nothing was changed.", path.display()),
  )
}

fn drift_failure(target: Target, path: &Path, bytes: &[u8]) -> Failure {
  let backup = match file::backup(path, bytes) {
    Ok(backup) => backup.display().to_string(),
    Err((backup, _)) => format!("{} (BACKUP FAILED — file unchanged on disk)", backup.display()),
  };
  let mut failure = Failure::new(
    FailureCode::Drift,
    format!(
      "Refusing to write {}: file on disk has content that wouldn't round-trip through the memory tool (likely added by a patch tool, a shell append, a manual edit, or a concurrent session). A snapshot was saved to {backup}. Resolve the drift first — either rewrite the file as a clean §-delimited list of entries, or move the extra content out — then retry. This guard exists to prevent silent data loss.",
      target.file_name()
    ),
  );
  failure.details.drift_backup = Some(backup);
  failure.details.remediation = Some(DRIFT_REMEDIATION);
  failure
}

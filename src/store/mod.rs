//! Curated memory: `MEMORY.md` (the agent's notes) and `USER.md` (what the
//! agent knows about the user), compatible with `@amaster.ai/pi-memory`.
//!
//! A mutation runs as: validate and threat-scan the input (no lock) → take
//! the in-process gate and the cross-process file lock → read the file
//! strictly → refuse on drift (saving a `.bak`) → apply → atomic write. Reads
//! take no file lock: writes replace the file atomically. The prompt snapshot
//! is rebuilt only by [`MemoryStore::load_from_disk`]; writes never touch it.
//!
//! `MemoryStore` is one type with its methods by concern: reads and the
//! snapshot here, operations in `run` (their input checks in `input`),
//! review and proposals in `review`, the gate / lock / atomic write in `write`.

pub(crate) mod batch;
pub mod entries;
pub mod file;
mod input;
pub(crate) mod lock;
pub(crate) mod proposals;
pub(crate) mod provenance;
pub(crate) mod result;
mod review;
mod run;
pub(crate) mod snapshot;
mod target;
mod write;

#[cfg(test)]
mod tests;

pub(crate) use target::Target;

use crate::text::utf16_len;
use entries::joined_len;
use lock::LockOptions;
use parking_lot::Mutex;
use provenance::Records;
use result::{Failure, FailureCode, FileStatus, StoreResult, StoreStatus};
use run::success;
use std::fs;
use std::path::{Path, PathBuf};
use write::{drift_failure, gate};

pub(crate) const DEFAULT_MEMORY_CHAR_LIMIT: usize = 2_200;
pub(crate) const DEFAULT_USER_CHAR_LIMIT: usize = 1_375;

#[derive(Debug, Clone)]
pub(crate) struct StoreOptions {
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

pub(crate) struct MemoryStore {
  options: StoreOptions,
  state: Mutex<State>,
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

  /// `read` with each entry's provenance (`provenance[i]` for `entries[i]`,
  /// `null` when none was recorded: written by hand or by the model directly).
  pub fn read_with_provenance(&self, target: Target) -> StoreResult {
    let mut result = self.read(target);
    if let StoreResult::Success(success) = &mut result {
      let records = match provenance::read(&provenance::path(&self.path(target), target)) {
        Ok(records) => records.unwrap_or_default(),
        Err(reason) => {
          success.provenance_error = Some(format!("Provenance unavailable: {reason}."));
          Records::new()
        }
      };
      success.provenance = Some(provenance::lookup(&success.entries, &records));
    }
    result
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

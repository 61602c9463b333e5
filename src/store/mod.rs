//! Curated memory: `MEMORY.md` (the agent's notes) and `USER.md` (what the
//! agent knows about the user), compatible with `@amaster.ai/pi-memory`.
//!
//! A mutation runs as: validate and threat-scan the input (no lock) → take
//! the in-process gate and the cross-process file lock → read the file
//! strictly → refuse on drift (saving a `.bak`) → apply → atomic write. Reads
//! take no file lock: writes replace the file atomically. The prompt snapshot
//! is rebuilt only by [`MemoryStore::load_from_disk`]; writes never touch it.
//!
//! A store opened for a project (`StoreOptions::project`) has a third file,
//! target `project`: the project's `MEMORY.md` in
//! `<dir>/projects/<identity dir name>/`, with the same guarantees (its own
//! lock, drift guard, provenance sidecar) and `MEMORY.md`'s limit. `USER.md`
//! is global only: who the user is does not change with the repository.
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
mod project_tests;
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
  /// The project whose `MEMORY.md` is target `project`; none: global only.
  pub project: Option<Project>,
}

/// The project a store is opened for: its identity's key and short name
/// (`crate::project::Identity`), and the directory name derived from them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Project {
  pub key: String,
  pub name: String,
  pub dir_name: String,
}

impl Project {
  /// `None` when `key` is not a key this version resolves.
  pub fn new(key: &str, name: &str) -> Option<Project> {
    let dir_name = crate::project::dir_name(key, name)?;
    Some(Project { key: key.to_string(), name: crate::project::short_name(name), dir_name })
  }
}

/// Where project stores live under the memory dir.
pub(crate) const PROJECTS_DIR: &str = "projects";

impl StoreOptions {
  pub fn new(dir: impl Into<PathBuf>) -> StoreOptions {
    StoreOptions {
      dir: dir.into(),
      memory_char_limit: DEFAULT_MEMORY_CHAR_LIMIT,
      user_char_limit: DEFAULT_USER_CHAR_LIMIT,
      lock: LockOptions::default(),
      project: None,
    }
  }
}

#[derive(Default)]
struct State {
  /// Entries as last read from or written to disk, raw.
  live: [Vec<String>; 3],
  /// Entries as of the last `load_from_disk`, sanitized: the prompt snapshot.
  frozen: [Vec<String>; 3],
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
      Target::Memory | Target::Project => self.options.memory_char_limit,
      Target::User => self.options.user_char_limit,
    }
  }

  pub fn project(&self) -> Option<&Project> {
    self.options.project.as_ref()
  }

  /// The directory of a target's file; `None` for `project` in a store
  /// opened for no project.
  pub fn dir_of(&self, target: Target) -> Option<PathBuf> {
    match (target, &self.options.project) {
      (Target::Project, Some(project)) => Some(self.options.dir.join(PROJECTS_DIR).join(&project.dir_name)),
      (Target::Project, None) => None,
      _ => Some(self.options.dir.clone()),
    }
  }

  /// The file's canonical path, as proper-lockfile resolves it (symlinks
  /// followed), so both implementations lock the same `<path>.lock`.
  fn path(&self, target: Target) -> Result<PathBuf, Failure> {
    let dir = self.dir_of(target).ok_or_else(no_project)?;
    let plain = dir.join(target.file_name());
    Ok(
      fs::canonicalize(&plain).or_else(|_| fs::canonicalize(&dir).map(|d| d.join(target.file_name()))).unwrap_or(plain),
    )
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
    let path = self.path(target)?;
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
      file: self.dir_of(target).unwrap_or_default().join(target.file_name()).to_string_lossy().into_owned(),
      entry_count: entries.len(),
      usage: entries::usage(joined_len(&entries), self.limit(target)),
      error,
    }
  }

  /// Re-reads both files into live state and rebuilds the sanitized prompt
  /// snapshot. An unreadable file is reported in its status, never loaded
  /// as empty for writing (every write reads the file again).
  pub fn load_from_disk(&self) -> StoreStatus {
    let status = self.statuses(|target| {
      let read = self.refresh(target);
      let frozen: Vec<String> =
        read.as_ref().map(|e| e.iter().map(|entry| snapshot::sanitize(entry, target)).collect()).unwrap_or_default();
      self.state.lock().frozen[target.index()] = frozen;
      read
    });
    self.state.lock().loaded = true;
    status
  }

  /// Entry counts and usage per file, read fresh from disk.
  pub fn status(&self) -> StoreStatus {
    self.statuses(|target| self.refresh(target))
  }

  fn statuses(&self, mut read: impl FnMut(Target) -> Result<Vec<String>, Failure>) -> StoreStatus {
    let mut status = |target| self.file_status(target, read(target));
    let (memory, user) = (status(Target::Memory), status(Target::User));
    let project = self.options.project.is_some().then(|| status(Target::Project));
    StoreStatus { memory, user, project }
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
      let Ok(path) = self.path(target) else { return result };
      let records = match provenance::read(&provenance::path(&path, target)) {
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

  fn label(&self, target: Target) -> String {
    snapshot::label(target, self.options.project.as_ref().map(|p| p.name.as_str()))
  }

  /// One file's prompt block from the frozen snapshot, bounded on its own.
  pub fn format_for_system_prompt(&self, target: Target) -> String {
    let state = self.state.lock();
    let frozen = &state.frozen[target.index()];
    snapshot::render(&self.label(target), frozen, self.limit(target), snapshot::MAX_SNAPSHOT_UNITS)
  }

  /// The global blocks (memory first), bounded together with room for
  /// each, then the project's block under its own bound: a full global
  /// memory never crowds the project's facts out, nor the reverse.
  pub fn format_all_for_system_prompt(&self) -> String {
    let state = self.state.lock();
    let render = |t: Target, budget| snapshot::render(&self.label(t), &state.frozen[t.index()], self.limit(t), budget);
    let full = [Target::Memory, Target::User].map(|t| utf16_len(&render(t, usize::MAX)));
    let (memory_budget, user_budget) = snapshot::allot(full[0], full[1], snapshot::MAX_SNAPSHOT_UNITS);
    let global = snapshot::join_blocks(&[render(Target::Memory, memory_budget), render(Target::User, user_budget)]);
    snapshot::join_blocks(&[global, render(Target::Project, snapshot::MAX_SNAPSHOT_UNITS)])
  }
}

fn no_project() -> Failure {
  Failure::new(
    FailureCode::NoProject,
    "No project memory here: this session's directory is not in a project (a git repository, or one named by memory.projectKey). Use the global scope.",
  )
}

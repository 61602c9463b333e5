//! The write path: one in-process gate and one cross-process lock per file,
//! a strict re-read that refuses drift, and atomic writes while the lock is
//! still ours.

use super::lock::{self, LockError, LockOptions};
use super::provenance::{self, Records};
use super::result::{Failure, FailureCode};
use super::{entries, file, MemoryStore, Target};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

pub(super) const DRIFT_REMEDIATION: &str = "Open the .bak file, integrate the missing entries into the memory tool one at a time via memory_add, then remove or rewrite the original file to a clean state.";

/// One gate per file per process: writers in this process queue here instead
/// of polling the file lock, and a read never interleaves with a write's
/// update of the live entries.
pub(super) fn gate(path: &Path) -> Arc<Mutex<()>> {
  static GATES: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
  GATES.get_or_init(Default::default).lock().entry(path.to_path_buf()).or_default().clone()
}

impl MemoryStore {
  /// Read-modify-write of one file under the in-process gate and the file
  /// lock: `change` gets the current entries and provenance records and
  /// returns the entries and records to write (`None`: nothing changes).
  /// The sidecar is written after the file, under the same lock. Returns
  /// the file's entries after, and why provenance was not kept, if so.
  pub(super) fn locked_update(
    &self,
    target: Target,
    change: impl FnOnce(Vec<String>, &Records) -> Result<Option<(Vec<String>, Records)>, Failure>,
  ) -> Result<(Vec<String>, Option<String>), Failure> {
    let dir = self.dir_of(target).ok_or_else(super::no_project)?;
    if let Err(error) = fs::create_dir_all(&dir) {
      return Err(io_failure(&dir, &error));
    }
    let path = self.path(target)?;
    let gate = gate(&path);
    let _in_process = gate.lock();
    let held = take_lock(&path, target.file_name(), &self.options.lock)?;
    let entries = self.read_entries(target, &path, true)?;
    self.set_live(target, &entries);
    let sidecar = provenance::path(&path, target);
    let (on_disk, mut note) = provenance::read_for_write(&sidecar);
    let Some((entries, records)) = change(entries.clone(), on_disk.as_ref().unwrap_or(&Records::new()))? else {
      return Ok((entries, None));
    };
    write_held(&held, &path, entries::serialize(&entries).as_bytes())?;
    self.set_live(target, &entries);
    let stale = match &on_disk {
      Some(old) => note.is_some() || *old != records,
      None => !records.is_empty(),
    };
    if stale {
      if let Err(failure) = write_held(&held, &sidecar, provenance::serialize(&records).as_bytes()) {
        note = Some(format!("The entries were written, their provenance was not: {}", failure.error));
      }
    }
    Ok((entries, note))
  }
}

/// Takes the cross-process lock of `path`, or the failure to report.
pub(super) fn take_lock(path: &Path, name: &str, options: &LockOptions) -> Result<lock::FileLock, Failure> {
  lock::acquire(path, options).map_err(|error| match error {
    LockError::Locked(lock_path) => Failure::new(
      FailureCode::Locked,
      format!(
        "{name} is locked by another writer ({}); nothing was written. Try again in a moment.",
        lock_path.display()
      ),
    ),
    LockError::Io(lock_path, error) => io_failure(&lock_path, &error),
  })
}

/// Writes `path` atomically while `held` is still ours: a lock taken over
/// as stale (held past `stale`) is not, and writing then could overwrite
/// the new holder's write.
pub(super) fn write_held(held: &lock::FileLock, path: &Path, bytes: &[u8]) -> Result<(), Failure> {
  if !held.still_held() {
    let error = std::io::Error::other("the file lock was taken over by another writer");
    return Err(io_failure(held.path(), &error));
  }
  file::remove_orphan_temps(path);
  file::write_atomic(path, bytes).map_err(|error| io_failure(path, &error))
}

pub(super) fn io_failure(path: &Path, error: &std::io::Error) -> Failure {
  Failure::new(
    FailureCode::IoError,
    format!("Could not write memory ({}): {error}. Nothing was changed.", path.display()),
  )
}

pub(super) fn drift_failure(target: Target, path: &Path, bytes: &[u8]) -> Failure {
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

//! The one record writer: a built record reaches the index dir now, before
//! the call returns, or behind it, from the index's writer thread.
//!
//! Either way a record is encoded, written atomically under its name, and
//! then the other tier's record of its source and mode is removed (a
//! session changes tier only once its replacement exists). A record that
//! replaces one and cannot be written removes the stale one instead, so the
//! next synchronization finds it missing and writes it (or reports
//! `index_write_failed`) itself.
//!
//! Behind: an append to a watched session is synchronized by the patch (a
//! warm process); encoding the whole hot record and writing it atomically
//! was a quarter of that call's time, for a file only a later process
//! reads. So the patch hands its hot records to the index's writer thread,
//! which writes each one after the synchronization that built it, under the
//! same sync lock (never beside a synchronization: the index dir's watched
//! listing sees our temp file and its rename together, and is unchanged).
//!
//! Correctness does not depend on when, or whether, that write happens:
//! memory is the source of truth in this process, and a record on disk is
//! only ever used after it is checked against its source (stamp, size,
//! SHA-256 of the prefix it claims). Until the writer runs, the disk holds
//! the previous record, old and intact: a fresh process resumes from it and
//! parses the appended bytes again. A queued record that no longer answers
//! (a newer build, a tier move, its source gone) is not written.

use super::record::{self, CacheRecord, Tier};
use super::{ownership, Index};
use crate::session::lineage::Branches;
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// When a built record reaches the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
  /// Before the call returns.
  Now,
  /// A hot record: by the index's writer after the call ([`queue`]); a
  /// cold one now.
  Behind,
}

/// Writes `record` of `source` now; on success its content is served from
/// the file just written (see [`record::defer_content`]).
pub(crate) fn write(index: &Index, source: &Path, branches: Branches, record: &mut CacheRecord) -> io::Result<()> {
  write_plain(index, source, branches, record, None)
}

/// As [`write`], with the body's plain bytes when they are at hand
/// (`build::Built::plain`).
fn write_plain(
  index: &Index,
  source: &Path,
  branches: Branches,
  record: &mut CacheRecord,
  plain: Option<Vec<u8>>,
) -> io::Result<()> {
  let bytes = match plain {
    Some(plain) => record.encode_plain(plain, &**index.bodies()),
    None => record.encode(&**index.bodies()).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?,
  };
  let path = write_bytes(index, source, branches, record.tier(), &bytes)?;
  record::defer_content(record, &path, &bytes, index.bodies());
  Ok(())
}

/// Writes `record`, which replaces the record on disk, now when `fits` (a
/// record that must not be written does not; `plain`: its body's plain
/// bytes, when at hand); `false` when it was not written, and then the
/// stale record is gone.
pub(crate) fn replace(
  index: &Index,
  source: &Path,
  branches: Branches,
  record: &mut CacheRecord,
  (fits, plain): (bool, Option<Vec<u8>>),
) -> bool {
  let written = fits && write_plain(index, source, branches, record, plain).is_ok();
  if !written {
    forget(index, source, branches, record.tier());
  }
  written
}

/// Removes the record of `source` in `tier`, which no longer answers.
fn forget(index: &Index, source: &Path, branches: Branches, tier: Tier) {
  index.dir().remove_ours(&index.record_name(source, branches, tier));
}

/// Writes the encoded record of `source` atomically, then drops the other
/// tier's record of this mode; the record's path.
fn write_bytes(index: &Index, source: &Path, branches: Branches, tier: Tier, bytes: &[u8]) -> io::Result<PathBuf> {
  ownership::ensure_dir(index.dir().path())?;
  let name = index.record_name(source, branches, tier);
  index.dir().write(&name, bytes)?;
  let other = if tier == Tier::Hot { Tier::Cold } else { Tier::Hot };
  index.dir().remove_ours(&index.record_name(source, branches, other));
  Ok(index.dir().join(name))
}

/// Records waiting for the writer, by source and mode: a later build of
/// the same record replaces one not written yet (writes coalesce).
#[derive(Default)]
pub struct Queue {
  state: Mutex<State>,
  idle: Condvar,
  /// Tests: held, the writer waits before its next record.
  #[cfg(test)]
  pub(crate) paused: Mutex<()>,
}

#[derive(Default)]
struct State {
  pending: HashMap<(PathBuf, Branches), Arc<CacheRecord>>,
  /// Records the queued ones replaced: freeing a hot shard (its entries,
  /// lineage nodes, postings) is the writer's work too, not the call's.
  retired: Vec<Arc<CacheRecord>>,
  /// A writer thread is draining `pending`.
  writing: bool,
}

/// Queues `record` (resident for `source` in `branches` mode, in place of
/// `replaced`) to be written; starts the writer unless it runs. Called
/// under the sync lock.
pub fn queue(
  index: &Index,
  source: &Path,
  branches: Branches,
  record: Arc<CacheRecord>,
  replaced: Option<Arc<CacheRecord>>,
) {
  let mut state = index.writes().state.lock();
  let coalesced = state.pending.insert((source.to_path_buf(), branches), record);
  state.retired.extend(coalesced.into_iter().chain(replaced));
  if state.writing {
    return;
  }
  let dir = index.dir().path().to_path_buf();
  let spawned = std::thread::Builder::new().name("pfm-index-writer".into()).spawn(move || drain(&Index::shared(dir)));
  match spawned {
    Ok(_) => state.writing = true,
    // No thread: written now, as without the writer (the caller holds the sync lock).
    Err(_) => {
      let pending = std::mem::take(&mut state.pending);
      state.retired.clear();
      drop(state);
      pending.into_iter().for_each(|(key, record)| write_behind(index, key, &record));
    }
  }
}

/// Writes queued records one by one, each under the sync lock, until none is left.
fn drain(index: &Index) {
  loop {
    drop(std::mem::take(&mut index.writes().state.lock().retired));
    #[cfg(test)]
    drop(index.writes().paused.lock());
    let _sync = index.sync_state().lock();
    let mut state = index.writes().state.lock();
    let Some((key, record)) = state.pending.keys().next().cloned().and_then(|key| state.pending.remove_entry(&key))
    else {
      let retired = std::mem::take(&mut state.retired);
      state.writing = false;
      index.writes().idle.notify_all();
      drop((state, _sync));
      drop(retired);
      return;
    };
    drop(state);
    write_behind(index, key, &record);
  }
}

/// Writes `record` if it is still the resident record of its source.
fn write_behind(index: &Index, (source, branches): (PathBuf, Branches), record: &Arc<CacheRecord>) {
  let resident = index.resident().get(&source, branches);
  if !resident.is_some_and(|slot| Arc::ptr_eq(&slot.record, record)) {
    return;
  }
  let written = record
    .encode_shared(&**index.bodies())
    .ok()
    .is_some_and(|bytes| write_bytes(index, &source, branches, Tier::Hot, &bytes).is_ok());
  if !written {
    forget(index, &source, branches, Tier::Hot);
  }
}

#[cfg(test)]
impl Queue {
  /// Waits until every queued record is written (or skipped). Never called
  /// under the sync lock: the writer needs it.
  pub fn flush(&self) {
    let mut state = self.state.lock();
    while state.writing || !state.pending.is_empty() {
      self.idle.wait(&mut state);
    }
  }
}

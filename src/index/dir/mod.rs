//! The index dir as one value ([`IndexDir`], tantivy's `ManagedDirectory`):
//! the names of its files ([`name`]: one grammar, [`IndexFile`]), how they
//! are written and which are ours ([`files`]: the atomic writer,
//! `remove_ours`), its listing ([`listing`]: kept current by a watch; its
//! names one buffer, [`Names`]) and
//! garbage collection ([`gc`]: orphaned records and temp files). Whether
//! the dir itself is ours is `ownership`'s.

mod files;
mod gc;
pub(crate) mod listing;
mod name;
mod names;

pub use files::{is_ours, remove_ours, write_atomic, write_in_place};
pub(crate) use name::MARKER_TEXT;
pub use name::{IndexFile, MARKER};
pub use names::Names;

use listing::{DirCache, WatchedNames};
use parking_lot::Mutex;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One index dir, as one process knows it.
pub struct IndexDir {
  path: PathBuf,
  /// The dir's listing, and its names kept current by its watch.
  listings: DirCache,
  watched: WatchedNames,
  /// Records found to belong to live sessions outside this index's roots
  /// (checked once per process: the owning index removes them when their
  /// source goes).
  elsewhere: Mutex<HashSet<String>>,
}

impl IndexDir {
  pub fn new(path: PathBuf) -> IndexDir {
    // Its own listing persists in it, so a fresh process reads one file
    // instead of the dir while nothing changed there (100,000 names at scale).
    let listings = DirCache::persisted(path.join(IndexFile::INDEX_DIR_LISTING));
    IndexDir { path, listings, watched: WatchedNames::default(), elsewhere: Mutex::default() }
  }

  pub fn path(&self) -> &Path {
    &self.path
  }

  /// The path of the file `name` in this dir.
  pub fn join(&self, name: impl AsRef<Path>) -> PathBuf {
    self.path.join(name)
  }

  /// The dir's names now, sorted: kept current by an entries watch when
  /// `watching` (our own atomic rewrites leave the listing, and its `Arc`,
  /// as they were), else listed again whenever the dir's mtime changed.
  pub fn names(&self, watching: bool) -> Arc<Names> {
    self.watched.names(&self.listings, &self.path, watching)
  }

  /// Persists the dir's listing when this process read it from disk and
  /// nothing changed the dir since (see [`DirCache::save_own`]). Call only
  /// once the dir is known to be the index's.
  pub fn save_names(&self) {
    self.listings.save_own(&self.path);
  }

  /// Empties the persisted listing (a forgotten session's records are in
  /// it), in place, so the dir's own listing is not changed by it.
  pub fn drop_persisted_names(&self) {
    self.listings.empty_own();
  }

  /// Tests: how many times the dir was read from disk.
  #[cfg(test)]
  pub(crate) fn disk_reads(&self) -> usize {
    self.listings.disk_reads()
  }

  /// Tests: what a fresh process knows of the dir's names (nothing).
  #[cfg(test)]
  pub(crate) fn forget_names(&self) {
    self.listings.forget();
    self.watched.forget();
  }

  /// Writes `name` atomically (see [`write_atomic`]).
  pub fn write(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic(&self.join(name), bytes)
  }

  /// Removes `name` only if the index wrote it; `true` when removed.
  pub fn remove_ours(&self, name: &str) -> bool {
    remove_ours(&self.path, name)
  }

  /// Tests: the names watch loses its next events (the listing is read again).
  #[cfg(test)]
  pub(crate) fn overflow_next(&self) {
    self.watched.overflow_next();
  }

  /// Forgets which records belong to sessions elsewhere (tests: a fresh process).
  #[cfg(test)]
  pub(crate) fn forget_elsewhere(&self) {
    self.elsewhere.lock().clear();
  }
}

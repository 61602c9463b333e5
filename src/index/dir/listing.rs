//! Directory listings reused while a directory provably did not change
//! ([`DirCache`]: the index dir's, and the session dirs' through
//! `sources`), and the index dir's own listing kept current by a watch
//! ([`WatchedNames`]).
//!
//! Creating, removing or renaming a file changes its directory's mtime, so
//! a listing stays valid while the mtime is unchanged and older than the
//! racy window at the time of listing (see `StatStamp::proves_unchanged_since`).
//! Files inside still get a `stat` on every call: appends do not touch the
//! directory.
//!
//! The index dir changes with every record the index writes, so its mtime
//! would keep its listing unproven for the racy window after each write
//! (and the unchanged-sync shortcut, which needs the same listing, would
//! fail). [`WatchedNames`] keeps that listing current from an entries watch
//! instead: each name the watch reports is looked up again, so our own
//! atomic writes (a temp file renamed over the record) leave the listing,
//! and its `Arc`, as they were.

use crate::index::watch;
use crate::session::source::{now_ns, StatStamp};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

struct Listing {
  stamp: StatStamp,
  listed_ns: i128,
  names: Arc<Vec<String>>,
}

#[derive(Default)]
pub struct DirCache {
  listings: Mutex<HashMap<PathBuf, Listing>>,
}

impl DirCache {
  /// The names in `dir` (empty when it does not exist), sorted.
  pub fn names(&self, dir: &Path) -> Arc<Vec<String>> {
    let Ok(metadata) = fs::metadata(dir) else {
      self.listings.lock().remove(dir);
      return Arc::default();
    };
    let stamp = StatStamp::of(&metadata);
    if let Some(listing) = self.listings.lock().get(dir) {
      if listing.stamp == stamp && stamp.proves_unchanged_since(listing.listed_ns) {
        return listing.names.clone();
      }
    }
    let listed_ns = now_ns();
    // A UTF-8 name keeps the buffer it was read into (a lossy copy of every
    // name was a second allocation per file, 100,000 at scale).
    let name = |name: std::ffi::OsString| name.into_string().unwrap_or_else(|name| name.to_string_lossy().into_owned());
    let mut names: Vec<String> = fs::read_dir(dir)
      .map(|read| read.filter_map(Result::ok).map(|e| name(e.file_name())).collect())
      .unwrap_or_default();
    names.sort_unstable();
    let names = Arc::new(names);
    self.listings.lock().insert(dir.to_path_buf(), Listing { stamp, listed_ns, names: names.clone() });
    names
  }
}

/// A dir's names kept current by an entries watch, where one can be armed.
#[derive(Default)]
pub struct WatchedNames {
  watcher: watch::Watcher,
  names: Mutex<Option<Arc<Vec<String>>>>,
}

impl WatchedNames {
  /// The names in `dir`, sorted: the watched listing patched with the names
  /// its watch reported, else a listing from `dirs` that (re-)arms the
  /// watch first (so no change after it goes unseen). `watching: false`
  /// lists from `dirs` only.
  pub fn names(&self, dirs: &DirCache, dir: &Path, watching: bool) -> Arc<Vec<String>> {
    let roots = watch::Roots { sessions_dir: dir.to_path_buf(), session_dir: None };
    if !watching {
      self.watcher.disarm();
      *self.names.lock() = None;
      return dirs.names(dir);
    }
    let listed = self.names.lock().clone();
    if let Some(listed) = listed {
      if let watch::Drained::Files { changed, .. } = self.watcher.drain(&roots) {
        if let Some(names) = patched(&listed, &changed) {
          *self.names.lock() = Some(names.clone());
          return names;
        }
      }
    }
    let mut arming = self.watcher.arm(&roots);
    arming.watch(dir, watch::Watched::Entries);
    let names = dirs.names(dir);
    // A dir not there yet cannot be watched: listed again next call.
    *self.names.lock() = arming.finish().map(|_| names.clone());
    names
  }

  #[cfg(test)]
  pub(crate) fn overflow_next(&self) {
    self.watcher.overflow_next.store(true, std::sync::atomic::Ordering::Relaxed);
  }
}

/// `listed` with each `changed` path's name present or absent as it is now
/// (the same `Arc` when that changes nothing); `None` for a name a listing
/// would not spell the same (not UTF-8).
fn patched(listed: &Arc<Vec<String>>, changed: &[PathBuf]) -> Option<Arc<Vec<String>>> {
  let mut names: Option<Vec<String>> = None;
  for path in changed {
    let name = path.file_name()?.to_str()?;
    let present = fs::symlink_metadata(path).is_ok();
    let current = names.as_ref().unwrap_or(listed);
    match (current.binary_search_by(|n| n.as_str().cmp(name)), present) {
      (Ok(at), false) => {
        names.get_or_insert_with(|| (**listed).clone()).remove(at);
      }
      (Err(at), true) => names.get_or_insert_with(|| (**listed).clone()).insert(at, name.to_string()),
      _ => {}
    }
  }
  Some(names.map_or_else(|| listed.clone(), Arc::new))
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a_changed_directory_is_listed_again() {
    let dir = tempfile::tempdir().unwrap();
    let cache = DirCache::default();
    assert!(cache.names(dir.path()).is_empty());
    fs::write(dir.path().join("a"), "").unwrap();
    assert_eq!(*cache.names(dir.path()), ["a"]);
    fs::write(dir.path().join("b"), "").unwrap();
    assert_eq!(*cache.names(dir.path()), ["a", "b"]);
    assert!(cache.names(&dir.path().join("missing")).is_empty());
  }

  /// A temp file renamed over an existing name (how every record is
  /// written) leaves the watched listing as it was, the same `Arc`; names
  /// that come or go are seen by the next call, as after an overflow.
  #[cfg(target_os = "linux")]
  #[test]
  fn the_watched_listing_survives_atomic_rewrites_and_sees_every_other_change() {
    let dir = tempfile::tempdir().unwrap();
    let watched = WatchedNames { watcher: watch::Watcher::private(), names: Default::default() };
    let cache = DirCache::default();
    fs::write(dir.path().join("a"), "1").unwrap();
    let first = watched.names(&cache, dir.path(), true);
    assert_eq!(*first, ["a"]);
    fs::write(dir.path().join("a.tmp"), "2").unwrap();
    fs::rename(dir.path().join("a.tmp"), dir.path().join("a")).unwrap();
    let again = watched.names(&cache, dir.path(), true);
    assert!(Arc::ptr_eq(&first, &again), "the same names");
    assert_eq!(*again, ["a"]);
    fs::write(dir.path().join("b"), "").unwrap();
    assert_eq!(*watched.names(&cache, dir.path(), true), ["a", "b"]);
    fs::remove_file(dir.path().join("a")).unwrap();
    assert_eq!(*watched.names(&cache, dir.path(), true), ["b"]);
    // Lost events: listed again (a fresh listing, not the patched one).
    watched.overflow_next();
    fs::write(dir.path().join("c"), "").unwrap();
    assert_eq!(*watched.names(&cache, dir.path(), true), ["b", "c"]);
    fs::write(dir.path().join("d"), "").unwrap();
    assert_eq!(*watched.names(&cache, dir.path(), false), ["b", "c", "d"], "unwatched: listed by mtime");
  }
}

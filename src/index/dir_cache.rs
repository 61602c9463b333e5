//! Directory listings reused while a directory provably did not change.
//!
//! Creating, removing or renaming a file changes its directory's mtime, so
//! a listing stays valid while the mtime is unchanged and older than the
//! racy window at the time of listing (see `StatStamp::proves_unchanged_since`).
//! Files inside still get a `stat` on every call: appends do not touch the
//! directory.

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
    let mut names: Vec<String> = fs::read_dir(dir)
      .map(|read| read.filter_map(Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
      .unwrap_or_default();
    names.sort();
    let names = Arc::new(names);
    self.listings.lock().insert(dir.to_path_buf(), Listing { stamp, listed_ns, names: names.clone() });
    names
  }
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
}

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
//!
//! The session dirs' listings outlive the process ([`DirCache::persisted`]):
//! a fresh process trusts a listing another one wrote under the same rule
//! (the dir's stamp unchanged and proving the dir unchanged since that
//! listing), so it reads one file instead of every session dir (100,000
//! names at scale, ~64 ms of one core here). Session dirs change only when
//! a session file is created, renamed or removed.

use super::names::Names;
use crate::index::watch;
use crate::session::source::{now_ns, StatStamp};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Clone)]
struct Listing {
  stamp: StatStamp,
  listed_ns: i128,
  names: Arc<Names>,
}

impl Listing {
  /// Does this listing still say what `dir`, now stamped `stamp`, holds?
  fn holds_for(&self, stamp: &StatStamp) -> bool {
    self.stamp == *stamp && stamp.proves_unchanged_since(self.listed_ns)
  }
}

#[derive(Default)]
pub struct DirCache {
  listings: Mutex<HashMap<PathBuf, Listing>>,
  persisted: Option<Persisted>,
}

/// The listings file of a [`DirCache::persisted`] cache.
struct Persisted {
  file: PathBuf,
  /// Read on the first listing not held in memory.
  loaded: Mutex<Option<Arc<HashMap<PathBuf, Listing>>>>,
  /// Some dir was read from disk since (the file is behind).
  behind: AtomicBool,
  /// Tests: how many dirs were read from disk.
  #[cfg(test)]
  reads: std::sync::atomic::AtomicUsize,
}

impl DirCache {
  /// The names in `dir` (empty when it does not exist), sorted.
  pub fn names(&self, dir: &Path) -> Arc<Names> {
    let Ok(metadata) = fs::metadata(dir) else {
      self.listings.lock().remove(dir);
      return Arc::default();
    };
    let stamp = StatStamp::of(&metadata);
    if let Some(listing) = self.listings.lock().get(dir).filter(|listing| listing.holds_for(&stamp)) {
      return listing.names.clone();
    }
    if let Some(listing) = self.persisted_listing(dir, &stamp) {
      let names = listing.names.clone();
      self.listings.lock().insert(dir.to_path_buf(), listing);
      return names;
    }
    if let Some(persisted) = &self.persisted {
      persisted.behind.store(true, Ordering::Relaxed);
      #[cfg(test)]
      persisted.reads.fetch_add(1, Ordering::Relaxed);
    }
    let listed_ns = now_ns();
    // A UTF-8 name keeps the buffer it was read into (a lossy copy of every
    // name was a second allocation per file, 100,000 at scale).
    let name = |name: std::ffi::OsString| name.into_string().unwrap_or_else(|name| name.to_string_lossy().into_owned());
    let names: Vec<String> = fs::read_dir(dir)
      .map(|read| read.filter_map(Result::ok).map(|e| name(e.file_name())).collect())
      .unwrap_or_default();
    let names = Arc::new(Names::sorted(names));
    self.listings.lock().insert(dir.to_path_buf(), Listing { stamp, listed_ns, names: names.clone() });
    names
  }

  /// A cache whose listings outlive the process in `file` (see the module
  /// doc): read from it when this process has none, written by [`DirCache::save`].
  pub fn persisted(file: PathBuf) -> DirCache {
    let persisted = Persisted {
      file,
      loaded: Mutex::default(),
      behind: AtomicBool::new(false),
      #[cfg(test)]
      reads: Default::default(),
    };
    DirCache { listings: Mutex::default(), persisted: Some(persisted) }
  }

  /// The persisted listing of `dir` when it still holds.
  fn persisted_listing(&self, dir: &Path, stamp: &StatStamp) -> Option<Listing> {
    let persisted = self.persisted.as_ref()?;
    let loaded = persisted.loaded.lock().get_or_insert_with(|| Arc::new(persist::read(&persisted.file))).clone();
    let listing = loaded.get(dir).filter(|listing| listing.holds_for(stamp))?;
    Some(listing.clone())
  }

  /// Writes this process's listings of the dirs `keep` takes (by their
  /// names) to the persisted file when some dir was read from disk since it
  /// was last read or written (best effort: a file that cannot be written is
  /// only a slower next process). Call only once the file's dir is known to
  /// be the index's.
  pub fn save(&self, keep: impl Fn(&Names) -> bool) {
    let Some(persisted) = &self.persisted else { return };
    if !persisted.behind.swap(false, Ordering::Relaxed) {
      return;
    }
    let bytes = persist::encode(&self.listings.lock(), keep);
    if super::write_atomic(&persisted.file, &bytes).is_err() {
      persisted.behind.store(true, Ordering::Relaxed);
    }
  }

  /// [`DirCache::save`] for a cache whose file lies in `dir`, the dir it
  /// lists: renaming a file into `dir` changes the stamp its listing is
  /// proven by, so the file is created once (empty; the listing of that
  /// moment no longer holds) and from then on written in place, and only
  /// with a listing that `dir`'s stamp still matches (a process that wrote
  /// into `dir` after listing it leaves the file to the next one).
  pub fn save_own(&self, dir: &Path) {
    let Some(persisted) = &self.persisted else { return };
    if !persisted.behind.load(Ordering::Relaxed) {
      return;
    }
    if fs::symlink_metadata(&persisted.file).is_err() {
      // An index dir made before this file existed (a new one has it from its marker's time).
      let _ = write_empty(&persisted.file);
      return;
    }
    let Ok(metadata) = fs::metadata(dir) else { return };
    let stamp = StatStamp::of(&metadata);
    let bytes = {
      let listings = self.listings.lock();
      let Some(listing) = listings.get(dir).filter(|listing| listing.stamp == stamp) else { return };
      persist::encode(&HashMap::from([(dir.to_path_buf(), listing.clone())]), |_| true)
    };
    if super::write_in_place(&persisted.file, &bytes).is_ok() {
      persisted.behind.store(false, Ordering::Relaxed);
    }
  }

  /// Empties the persisted file of a [`DirCache::save_own`] cache in place
  /// (its dir unchanged, so a listing of it still holds), else removes it.
  pub fn empty_own(&self) {
    let Some(persisted) = &self.persisted else { return };
    persisted.behind.store(true, Ordering::Relaxed);
    *persisted.loaded.lock() = None;
    if super::write_in_place(&persisted.file, &persist::empty()).is_err() {
      self.drop_persisted();
    }
  }

  /// Removes the persisted file (the next [`DirCache::save`] writes it again).
  pub fn drop_persisted(&self) {
    let Some(persisted) = &self.persisted else { return };
    persisted.behind.store(true, Ordering::Relaxed);
    if let (Some(dir), Some(name)) = (persisted.file.parent(), persisted.file.file_name().and_then(|n| n.to_str())) {
      super::remove_ours(dir, name);
    }
  }

  /// Tests: how many dirs this cache read from disk.
  #[cfg(test)]
  pub fn disk_reads(&self) -> usize {
    self.persisted.as_ref().map_or(0, |p| p.reads.load(Ordering::Relaxed))
  }

  /// Tests: what a fresh process knows (nothing in memory, the file unread).
  #[cfg(test)]
  pub fn forget(&self) {
    self.listings.lock().clear();
    if let Some(persisted) = &self.persisted {
      *persisted.loaded.lock() = None;
      persisted.reads.store(0, Ordering::Relaxed);
    }
  }
}

/// The persisted listings file: `PFMIDXSD` | xxh3-64 (LE) of the rest | the
/// rest, postcard of (dir, stamp, listed at, names) per dir. A file that is
/// torn, edited or of another version fails the checksum or the decode and
/// is not used (the dirs are read, and the file written again).
mod persist {
  use super::{Listing, Names};
  use crate::session::source::StatStamp;
  use std::collections::HashMap;
  use std::path::{Path, PathBuf};
  use std::sync::Arc;

  const MAGIC: &[u8; 8] = b"PFMIDXSD";
  /// Far above any real listing (100,000 sessions: ~8 MB).
  const MAX_BYTES: u64 = 256 << 20;

  /// A dir's listing as read: its names still in the file's bytes.
  type Entry<'a> = (&'a str, StatStamp, i128, Vec<&'a str>);

  pub(super) fn encode(listings: &HashMap<PathBuf, Listing>, keep: impl Fn(&Names) -> bool) -> Vec<u8> {
    // A dir whose path is not UTF-8 is left out: it is read each time.
    let entries: Vec<(&str, &StatStamp, i128, &Names)> = listings
      .iter()
      .filter(|(_, l)| keep(&l.names))
      .filter_map(|(dir, l)| Some((dir.to_str()?, &l.stamp, l.listed_ns, &*l.names)))
      .collect();
    crate::index::record::sealed(MAGIC, &postcard::to_allocvec(&entries).unwrap_or_default())
  }

  /// A file of no listing.
  pub(super) fn empty() -> Vec<u8> {
    encode(&HashMap::new(), |_| true)
  }

  /// The listings in `file`; none when it is missing, damaged, or names a
  /// file that no dir listing could hold.
  pub(super) fn read(file: &Path) -> HashMap<PathBuf, Listing> {
    let read = crate::fsread::read_regular(file, MAX_BYTES, crate::fsread::Links::Refuse);
    read.ok().and_then(|(bytes, _)| decode(&bytes)).unwrap_or_default()
  }

  pub(super) fn decode(bytes: &[u8]) -> Option<HashMap<PathBuf, Listing>> {
    let entries: Vec<Entry> = postcard::from_bytes(crate::index::record::unsealed(MAGIC, bytes)?).ok()?;
    entries
      .into_iter()
      .map(|(dir, stamp, listed_ns, names)| {
        let names = Names::of_ascending(names.into_iter()).filter(Names::all_plain)?;
        Some((PathBuf::from(dir), Listing { stamp, listed_ns, names: Arc::new(names) }))
      })
      .collect()
  }
}

/// Writes `file` as a persisted listing of no dir (atomically: it may not
/// exist yet).
pub fn write_empty(file: &Path) -> std::io::Result<()> {
  super::write_atomic(file, &persist::empty())
}

/// A dir's names kept current by an entries watch, where one can be armed.
#[derive(Default)]
pub struct WatchedNames {
  watcher: watch::Watcher,
  names: Mutex<Option<Arc<Names>>>,
}

impl WatchedNames {
  /// The names in `dir`, sorted: the watched listing patched with the names
  /// its watch reported, else a listing from `dirs` that (re-)arms the
  /// watch first (so no change after it goes unseen). `watching: false`
  /// lists from `dirs` only.
  pub fn names(&self, dirs: &DirCache, dir: &Path, watching: bool) -> Arc<Names> {
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

  /// Tests: a fresh process's state (no listing, the watch disarmed).
  #[cfg(test)]
  pub(crate) fn forget(&self) {
    self.watcher.disarm();
    *self.names.lock() = None;
  }

  #[cfg(test)]
  pub(crate) fn overflow_next(&self) {
    self.watcher.overflow_next.store(true, std::sync::atomic::Ordering::Relaxed);
  }
}

/// `listed` with each `changed` path's name present or absent as it is now
/// (the same `Arc` when that changes nothing); `None` for a name a listing
/// would not spell the same (not UTF-8).
fn patched(listed: &Arc<Names>, changed: &[PathBuf]) -> Option<Arc<Names>> {
  let mut edits = std::collections::BTreeMap::new();
  for path in changed {
    let name = path.file_name()?.to_str()?;
    let present = fs::symlink_metadata(path).is_ok();
    if listed.contains(name) != present {
      edits.insert(name, present);
    }
  }
  Some(if edits.is_empty() { listed.clone() } else { Arc::new(listed.edited(&edits)) })
}

#[cfg(test)]
pub(crate) mod tests {
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

  /// The persisted file as a listing made `later` after the one saved
  /// (a fresh temp dir's change is always within the racy window of its
  /// listing; a real session dir's mostly is not).
  pub(crate) fn listed_later(file: &Path, later: i128) {
    let mut listings = persist::decode(&fs::read(file).unwrap()).expect("intact");
    listings.values_mut().for_each(|listing| listing.listed_ns += later);
    fs::write(file, persist::encode(&listings, |_| true)).unwrap();
  }

  const LATER: i128 = 2 * crate::session::source::RACY_WINDOW_NS;

  #[test]
  fn a_persisted_listing_stands_for_its_dir_only_while_the_dir_is_unchanged() {
    let (dir, index) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let file = index.path().join("session-dirs.listing");
    for name in ["b.jsonl", "a.jsonl"] {
      fs::write(dir.path().join(name), "").unwrap();
    }
    let first = DirCache::persisted(file.clone());
    assert_eq!(*first.names(dir.path()), ["a.jsonl", "b.jsonl"]);
    assert_eq!(first.disk_reads(), 1);
    first.save(|_| true);
    // As listed just now, its dir changed within the racy window: not trusted.
    let fresh = DirCache::persisted(file.clone());
    assert_eq!(*fresh.names(dir.path()), ["a.jsonl", "b.jsonl"]);
    assert_eq!(fresh.disk_reads(), 1, "a racy listing is not trusted");
    listed_later(&file, LATER);
    let fresh = DirCache::persisted(file.clone());
    assert_eq!(*fresh.names(dir.path()), ["a.jsonl", "b.jsonl"]);
    assert_eq!(fresh.disk_reads(), 0, "read from the persisted listing");
    // A new file changes the dir's stamp: the persisted listing stops standing for it.
    fs::write(dir.path().join("c.jsonl"), "").unwrap();
    let fresh = DirCache::persisted(file.clone());
    assert_eq!(*fresh.names(dir.path()), ["a.jsonl", "b.jsonl", "c.jsonl"]);
    assert_eq!(fresh.disk_reads(), 1);
  }

  #[test]
  fn a_damaged_or_unfit_persisted_listing_is_never_used() {
    let (dir, index) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let file = index.path().join("session-dirs.listing");
    fs::write(dir.path().join("a.jsonl"), "").unwrap();
    let first = DirCache::persisted(file.clone());
    first.names(dir.path());
    first.save(|_| true);
    listed_later(&file, LATER);
    let intact = fs::read(&file).unwrap();
    assert!(persist::decode(&intact).is_some());
    for at in 0..intact.len() {
      let mut flipped = intact.clone();
      flipped[at] ^= 0x20;
      assert!(persist::decode(&flipped).is_none(), "byte {at}");
    }
    assert!(persist::decode(&intact[..intact.len() - 1]).is_none());
    // Names a dir cannot hold, or out of order, fail the whole file.
    let stamp = StatStamp::of(&fs::metadata(dir.path()).unwrap());
    let twice = ["a.jsonl", "a.jsonl"];
    for names in [&["../x.jsonl"][..], &["a/b.jsonl"], &[".."], &["b.jsonl", "a.jsonl"], &twice, &["a\u{0}"]] {
      let listing = Listing { stamp, listed_ns: now_ns() + LATER, names: Arc::new(Names::in_given_order(names)) };
      let bytes = persist::encode(&HashMap::from([(dir.path().to_path_buf(), listing)]), |_| true);
      assert!(persist::decode(&bytes).is_none(), "{names:?}");
    }
    // A dir `save` leaves out is read from disk; a dropped file is gone.
    let cache = DirCache::persisted(file.clone());
    cache.names(dir.path());
    cache.drop_persisted();
    assert!(!file.exists());
    cache.save(|names| !names.iter().any(|n| n == "a.jsonl"));
    listed_later(&file, LATER);
    let fresh = DirCache::persisted(file.clone());
    assert_eq!(*fresh.names(dir.path()), ["a.jsonl"]);
    assert_eq!(fresh.disk_reads(), 1, "left out of the file");
  }
}

//! Records kept in memory between calls, and the checks a warm call makes
//! without allocating: a warm call must stay far below a millisecond of
//! overhead per thousand sessions.

use super::interned::known_path;
use super::record::CacheRecord;
use super::Address;
use crate::session::lineage::Branches;
use parking_lot::RwLock;
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// One resident record with its cache file name and when it was last verified.
pub struct Slot {
  pub record: Arc<CacheRecord>,
  verified_ns: AtomicI64,
}

impl Slot {
  pub fn new(record: Arc<CacheRecord>, verified_ns: i128) -> Arc<Slot> {
    Arc::new(Slot { record, verified_ns: AtomicI64::new(verified_ns as i64) })
  }

  pub fn verified_ns(&self) -> i128 {
    self.verified_ns.load(Ordering::Relaxed) as i128
  }

  pub fn verified_at(&self, ns: i128) {
    self.verified_ns.fetch_max(ns as i64, Ordering::Relaxed);
  }
}

pub(super) fn mode(branches: Branches) -> usize {
  match branches {
    Branches::Active => 0,
    Branches::All => 1,
  }
}

/// Resident slots by source path and branch mode. Keyed by the address of
/// the interned path ([`Address`]): a lookup hashes and compares two words,
/// not the path's ~120 bytes, under a read lock, so the threads loading a
/// fresh process's 100,000 records look up side by side (hashing each path
/// under one lock was 4 % of its first call). A path that is not the
/// interned copy is found through it.
#[derive(Default)]
pub struct Residents {
  map: RwLock<rustc_hash::FxHashMap<Address, Resident>>,
}

/// Is `path` the interned copy (the key's address is that copy's)?
fn is_interned(path: &Path) -> bool {
  known_path(path).is_some_and(|known| std::ptr::eq(known, path))
}

/// A source's interned path and its slot per branch mode.
type Resident = (&'static Path, [Option<Arc<Slot>>; 2]);

impl Residents {
  pub fn get(&self, path: &Path, branches: Branches) -> Option<Arc<Slot>> {
    Residents::found(&self.map.read(), path, branches)
  }

  /// [`Residents::get`] of each of `paths`, in order, under one hold of the
  /// lock: a hold per path had the two threads loading records bounce the
  /// lock's word between the cores.
  pub fn get_each<'p>(&self, paths: impl Iterator<Item = &'p Path>, branches: Branches) -> Vec<Option<Arc<Slot>>> {
    let map = self.map.read();
    paths.map(|path| Residents::found(&map, path, branches)).collect()
  }

  /// Shows `each` each of `items` with its path's slot in `branches`
  /// mode, in order, under one hold of the lock and without a count per
  /// slot (a lookup by id passes every listed file: 100,000 at scale).
  pub fn visit_each<T>(
    &self,
    items: impl Iterator<Item = T>,
    path_of: impl Fn(&T) -> &Path,
    branches: Branches,
    mut each: impl FnMut(T, Option<&Slot>),
  ) {
    let map = self.map.read();
    for item in items {
      let slot = Residents::entry(&map, path_of(&item)).and_then(|(_, modes)| modes[mode(branches)].as_deref());
      each(item, slot);
    }
  }

  fn found(map: &rustc_hash::FxHashMap<Address, Resident>, path: &Path, branches: Branches) -> Option<Arc<Slot>> {
    Residents::entry(map, path).and_then(|(_, modes)| modes[mode(branches)].clone())
  }

  fn entry<'m>(map: &'m rustc_hash::FxHashMap<Address, Resident>, path: &Path) -> Option<&'m Resident> {
    match map.get(&Address::of(path)) {
      Some(found) => Some(found),
      None => {
        known_path(path).filter(|known| !std::ptr::eq(*known, path)).and_then(|known| map.get(&Address::of(known)))
      }
    }
  }

  /// `path`: a listed source's, already interned.
  pub fn put(&self, path: &'static Path, branches: Branches, slot: Arc<Slot>) {
    debug_assert!(is_interned(path), "a resident slot keyed by a path that is not the interned copy");
    self.map.write().entry(Address::of(path)).or_insert((path, Default::default())).1[mode(branches)] = Some(slot);
  }

  /// Puts each slot whose path (interned) has none in `branches` mode; the
  /// slots put.
  pub fn put_absent(
    &self,
    branches: Branches,
    slots: impl ExactSizeIterator<Item = (&'static Path, Arc<Slot>)>,
  ) -> Vec<Arc<Slot>> {
    let mut map = self.map.write();
    map.reserve(slots.len());
    let mut put = Vec::with_capacity(slots.len());
    for (path, slot) in slots {
      debug_assert!(is_interned(path), "a resident slot keyed by a path that is not the interned copy");
      let (_, modes) = map.entry(Address::of(path)).or_insert((path, Default::default()));
      if modes[mode(branches)].is_none() {
        modes[mode(branches)] = Some(slot.clone());
        put.push(slot);
      }
    }
    put
  }

  pub fn retain(&self, mut keep: impl FnMut(&Path) -> bool) {
    self.map.write().retain(|_, (path, _)| keep(path));
  }

  /// Keeps the slots whose record `keep` accepts.
  pub fn retain_records(&self, mut keep: impl FnMut(&CacheRecord) -> bool) {
    self.map.write().retain(|_, (_, modes)| {
      for slot in modes.iter_mut() {
        if slot.as_ref().is_some_and(|slot| !keep(&slot.record)) {
          *slot = None;
        }
      }
      modes.iter().any(Option::is_some)
    });
  }

  /// Tests: the key `path`'s slots are stored under.
  #[cfg(test)]
  pub fn key(&self, path: &Path) -> Option<&'static std::ffi::OsStr> {
    let map = self.map.read();
    let known = known_path(path)?;
    map.get(&Address::of(known)).map(|(path, _)| path.as_os_str())
  }

  /// Tests: how many sources have a resident record.
  #[cfg(test)]
  pub fn len(&self) -> usize {
    self.map.read().len()
  }

  /// Tests: what a fresh process holds.
  #[cfg(test)]
  pub fn clear(&self) {
    self.map.write().clear();
  }
}

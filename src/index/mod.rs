//! The index: hot shards and cold digests, persisted as cache records and
//! kept resident per process. By concern:
//!
//! - [`sync`]: what every indexing call runs (reuse, patch or full pass),
//!   with the `Context` its caller builds (settings, session roots, live
//!   branch, progress: never the operations' `Engine`);
//! - [`snapshot`]: what a synchronization hands an operation, the
//!   [`Snapshot`]: its sessions as typed hot and cold views, and what is
//!   worked out once per result (the partition, the dictionary serving the
//!   cold slots, the interned kinds, the ranking lengths);
//! - `sources` (with [`watch`]): the session files, their header probes
//!   and scope membership;
//! - `freshness`: the one place that proves a record current;
//! - [`build`]: the builder, one session's record from its source bytes
//!   and its prior record (pure: no file, no index);
//! - [`record`]: the "segment", the record format and its parts (the hot
//!   shard, the cold digest, the vocabulary, the typed kinds);
//!   [`resident`]: the records a process keeps;
//! - [`dictionary`], [`heads`]: what spans every cold record;
//!   `body_dictionary`: the zstd dictionary cold bodies share;
//! - [`dir`]: the index dir ([`dir::IndexDir`]): every file name in one
//!   grammar ([`dir::IndexFile`]), atomic writes, which files are ours, its
//!   listing and garbage collection; [`writer`] (now or behind the call)
//!   writes records into it, [`ownership`] says whether the dir is ours;
//! - `trace`: the test seam, what this index did (empty outside tests).

mod body_dictionary;
pub(crate) mod build;
mod context;
pub(crate) mod dictionary;
pub(crate) mod dir;
mod forgotten;
mod freshness;
pub(crate) mod heads;
pub(crate) mod interned;
mod listed_stat;
pub(crate) mod ownership;
pub mod progress;
pub mod record;
pub(crate) mod resident;
mod session_ids;
pub mod snapshot;
mod sources;
mod sync;
mod trace;
mod varint;
pub(crate) mod watch;
pub(crate) mod writer;

pub use crate::coverage::{Coverage, IndexCoverage};
pub use context::{index_dir, Context};
pub use forgotten::drop_session;
pub use freshness::policy;
pub use session_ids::{find_session, find_sessions};
pub use snapshot::Snapshot;
pub use sources::{list_sources, Source};
pub(crate) use sync::{rebuild_cold, resync};
pub use sync::{sync, Synced};

/// The record file `bytes` read from `path` (diagnostics), its cold body
/// read with the dictionaries of the index dir it is in, a hot body
/// decompressed to at most `limit` bytes.
pub fn decode_record(path: &std::path::Path, bytes: &[u8], limit: u64) -> Option<record::CacheRecord> {
  let dictionaries = body_dictionary::BodyDictionaries::new(path.parent()?.to_path_buf());
  record::CacheRecord::decode(bytes, &dictionaries, limit)
}

/// Tests: the record file at `path` with its cold body decompressed (with
/// its index dir's dictionaries), any other file as it is.
#[cfg(test)]
pub fn readable_file(path: &std::path::Path) -> Vec<u8> {
  let bytes = std::fs::read(path).unwrap_or_default();
  let dictionaries = body_dictionary::BodyDictionaries::new(path.parent().unwrap().to_path_buf());
  record::readable_bytes(&bytes, &dictionaries)
}

/// A map keyed by path, hashed by the path's bytes: `Path`'s own `Hash`
/// walks its components, which was 9 % of loading 100,000 record heads.
/// Paths here come from one listing, so equal files are equal bytes. Keys
/// are the process's interned copies ([`sources::interned`]): the maps
/// keyed by a source (resident records, base names, headers) owned a copy
/// each, ~30 MB at 100,000 sessions. Looked up by any `&OsStr`.
pub(crate) type PathMap<V> = rustc_hash::FxHashMap<&'static std::ffi::OsStr, V>;

/// `path` as a [`PathMap`] key.
pub(crate) fn path_key(path: &std::path::Path) -> &'static std::ffi::OsStr {
  sources::interned(path).as_os_str()
}

/// Where a path's bytes lie, as a map key for [`interned`](sources::interned)
/// paths: hashing and comparing two words instead of the path's ~120 bytes
/// (hashing each source's path to find its base name was 5 % of a fresh
/// process's first call at 100,000 sessions). Sound because only interned
/// paths are stored, whose bytes never move or change: another path can lie
/// at the same address with the same length only as a view of those very
/// bytes. A path that is not interned lies elsewhere and is simply not found.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Address(usize, usize);

impl Address {
  pub(crate) fn of(path: &std::path::Path) -> Address {
    let bytes = path.as_os_str().as_encoded_bytes();
    Address(bytes.as_ptr() as usize, bytes.len())
  }
}

/// `Index` in a module of its own, so its fields are reachable from this
/// file only: the index's other files go through its accessors.
mod shared {
  use super::record::{self, Tier};
  use super::{
    body_dictionary, dictionary, dir, heads, resident, sources, sync, trace, writer, Address, Context, Source,
  };
  use crate::session::lineage::Branches;
  use parking_lot::{Mutex, RwLock};
  use std::collections::HashMap;
  use std::path::{Path, PathBuf};
  use std::sync::{Arc, OnceLock};

  /// One process-resident index per index dir, shared by concurrent calls.
  pub struct Index {
    dir: dir::IndexDir,
    resident: resident::Residents,
    /// The session files, the watch that keeps their listing current, and
    /// which of them are sessions.
    listing: sources::Listing,
    /// The synchronization lock and the last synchronization.
    sync: sync::State,
    /// The hash prefix of the [`record::base_name`] of every source seen: a
    /// fresh process names each record when it opens it, when it keeps it
    /// resident and when cleanup lists the owners, and hashes each path
    /// once for all three. The rest of the name is the path's file name, so
    /// only the number is kept (the whole names were 12 MB at 100,000
    /// sessions). Keyed by [`Interned`](interned) path, by address; read
    /// under a shared lock (a fresh process's threads look up every record's
    /// side by side).
    base_names: RwLock<rustc_hash::FxHashMap<Address, u64>>,
    /// Hot records built by patched synchronizations, not written yet.
    writes: writer::Queue,
    /// The packed cold heads, as this process knows them.
    packs: heads::Packs,
    /// The cold term dictionary's shards this process holds.
    dictionaries: dictionary::Resident,
    /// The zstd dictionaries of cold bodies.
    bodies: Arc<body_dictionary::BodyDictionaries>,
    /// What this index did, for its tests (empty outside them).
    trace: trace::Trace,
  }

  impl Index {
    pub fn shared(dir: PathBuf) -> Arc<Index> {
      static INDEXES: OnceLock<Mutex<HashMap<PathBuf, Arc<Index>>>> = OnceLock::new();
      let mut indexes = INDEXES.get_or_init(Default::default).lock();
      indexes
        .entry(dir.clone())
        .or_insert_with(|| {
          Arc::new(Index {
            dir: dir::IndexDir::new(dir.clone()),
            resident: Default::default(),
            listing: sources::Listing::new(&dir),
            sync: Default::default(),
            base_names: RwLock::default(),
            writes: Default::default(),
            packs: Default::default(),
            dictionaries: Default::default(),
            bodies: Arc::new(body_dictionary::BodyDictionaries::new(dir.clone())),
            trace: Default::default(),
          })
        })
        .clone()
    }

    /// The hash prefix of `path`'s [`record::base_name`], hashed once per
    /// process.
    pub(super) fn base_hash(&self, path: &Path) -> u64 {
      let known = self.base_names.read().get(&Address::of(path)).copied();
      known.unwrap_or_else(|| self.hashed_base(path))
    }

    /// [`Index::base_hash`] of a path not yet remembered: hashed, outside
    /// the lock (parallel loads name their records at once), and remembered.
    fn hashed_base(&self, path: &Path) -> u64 {
      self.trace.note(|| trace::Event::Hashed(path.to_path_buf()));
      let hash = record::base_hash(path);
      *self.base_names.write().entry(Address::of(sources::interned(path))).or_insert(hash)
    }

    /// [`Index::base_hash`] of each of `sources`, in order. Looked up in
    /// runs, each under one hold of the lock: a hold per source had the two
    /// threads' lookups bounce the lock's word between the cores (~5 % of a
    /// fresh process's first call at 100,000 sessions).
    pub(super) fn base_hashes(&self, sources: &[Source]) -> Vec<u64> {
      use rayon::prelude::*;
      sources
        .par_chunks(4096)
        .flat_map_iter(|run| {
          let known: Vec<Option<u64>> = {
            let bases = self.base_names.read();
            run.iter().map(|source| bases.get(&Address::of(source.path)).copied()).collect()
          };
          let base = |(source, known): (&Source, Option<u64>)| known.unwrap_or_else(|| self.hashed_base(source.path));
          run.iter().zip(known).map(base).collect::<Vec<_>>()
        })
        .collect()
    }

    /// Remembers the [`record::base_name`] of sources whose record names
    /// this index wrote itself (the packed heads), so they are not hashed.
    /// (`known`: each source's interned path and its base name's hash prefix.)
    pub(super) fn remember_base_names(&self, known: impl Iterator<Item = (&'static Path, u64)>) {
      let mut bases = self.base_names.write();
      for (path, hash) in known {
        bases.entry(Address::of(path)).or_insert(hash);
      }
    }

    /// The file name of `path`'s record in `branches` mode and `tier`.
    pub(super) fn record_name(&self, path: &Path, branches: Branches, tier: Tier) -> String {
      let base = record::base_of(self.base_hash(path), path);
      dir::IndexFile::Record { base: &base, branches, tier }.to_string()
    }

    /// The index dir.
    pub(super) fn dir(&self) -> &dir::IndexDir {
      &self.dir
    }

    /// Forgets the base names hashed so far (tests: a fresh process).
    #[cfg(test)]
    pub(super) fn forget_base_names(&self) {
      self.base_names.write().clear();
    }

    pub(super) fn listing(&self) -> &sources::Listing {
      &self.listing
    }

    pub(super) fn sync_state(&self) -> &sync::State {
      &self.sync
    }

    pub(super) fn resident(&self) -> &resident::Residents {
      &self.resident
    }

    pub(super) fn writes(&self) -> &writer::Queue {
      &self.writes
    }

    pub(super) fn packs(&self) -> &heads::Packs {
      &self.packs
    }

    pub(super) fn dictionaries(&self) -> &dictionary::Resident {
      &self.dictionaries
    }

    /// The zstd dictionaries of cold bodies: what records encode and read
    /// with, told what the dir holds, retired.
    pub(super) fn bodies(&self) -> &Arc<body_dictionary::BodyDictionaries> {
      &self.bodies
    }

    pub(super) fn trace(&self) -> &trace::Trace {
      &self.trace
    }

    /// The index dir's names now.
    pub(super) fn names(&self, cx: &Context<'_>) -> Arc<dir::Names> {
      self.dir.names(cx.config.watch_sessions)
    }
  }
}
pub use shared::Index;

/// Hands the heap's free pages back to the system. glibc keeps freed memory
/// for reuse, but what a build frees (source bytes, parsed JSON, normalized
/// entries) sits between the records it keeps, so a building process grew
/// with every budgeted call. Linux with glibc only; elsewhere a no-op.
pub(crate) fn trim_heap() {
  #[cfg(all(target_os = "linux", target_env = "gnu"))]
  // SAFETY: malloc_trim only returns free memory; it touches no live allocation.
  unsafe {
    libc::malloc_trim(0);
  }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod watch_tests;

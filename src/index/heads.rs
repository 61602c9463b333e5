//! Packed cold heads: a copy of every cold record's head of one branch mode,
//! in [`SHARDS`] files beside the records, so a fresh process reads 32 files
//! instead of opening every cold record. At 100,000 sessions those opens
//! (open, fstat, fstatfs, fadvise, read and close each) were 1.0 of the
//! 1.8 s of a first recall.
//!
//! A global synchronization decodes every packed head; a project's decodes
//! only those of its candidate sessions (its dir's and the flat custom
//! dir's, by file name) and names the other heads' sources from the
//! head's first field, without decoding the rest.
//!
//! A packed head is a copy, never the authority. It stands for its record
//! (made resident as if read from it, unless a resident record already
//! stands for its source) and goes through the same freshness proof
//! (stamp, watch or source hash). Every field of a head is a function of
//! the source's bytes and the policy, so a head that passes describes the
//! source as it is, even when the pack is older than the record. Its body is
//! read from the record file only if that file still has this very head
//! (length and head checksum, as for any cold record); otherwise the query
//! rebuilds the session from source. A head whose record file is gone is
//! rebuilt as a missing record is.
//!
//! A global synchronization that leaves nothing to the next call writes
//! every shard whose heads are not exactly its records (tracked by record
//! identity: a record built, re-verified or loaded from its own file is a
//! new one), so after the first build of an index, or a new cold session,
//! only the shards that changed are written. Below [`MIN_RECORDS`] cold
//! records there is no pack: opening a few hundred records costs less than
//! keeping it current.
//!
//! Shard file: `PFMIDXH1` | xxh3-64 of the rest | entries: (name length
//! u32 LE, record file name, head length u32 LE, head)*. A torn or edited
//! file fails its checksum and is not used, then written again. Where the
//! dictionary's shards are mapped (`dictionary::bytes`), so are these: a
//! head's details (`record::Deferred`) stay ranges of the file's pages,
//! which leave the process once the shard is decoded and come back from
//! the page cache when a hit or a session list reads them (at 100,000
//! sessions, ~40 MB less resident than copying them).

use super::dictionary::SHARDS;
use super::dir::{IndexFile, Names};
use super::record::{self, Body, CacheRecord, Tier};
use super::resident::{mode, Slot};
use super::sources::interned;
use super::{Index, Source, Synced};
use crate::session::lineage::Branches;
use parking_lot::Mutex;
use rayon::prelude::*;
use rustc_hash::FxHashSet;
use std::sync::{Arc, Weak};

const MAGIC: &[u8; 8] = b"PFMIDXH1";

/// Fewer cold records than this are not packed (the dictionary's threshold).
pub const MIN_RECORDS: usize = super::dictionary::MIN_COLD;

/// The file of one shard of one branch mode.
pub fn file_name(branches: Branches, shard: usize) -> String {
  IndexFile::HeadsPack { branches, shard }.to_string()
}

/// What one shard file holds, as the records it was written from (or
/// preloaded into): identity, not content, so telling whether it is
/// current costs a set lookup per record.
#[derive(Default)]
struct Written {
  records: FxHashSet<usize>,
  /// Keeps each address taken while it is in `records` (a freed record's
  /// address could be reused by a new one).
  _pinned: Vec<Weak<CacheRecord>>,
  /// The file holds heads no resident record came from (deleted sessions,
  /// records replaced since): it is written again.
  extra: bool,
}

impl Written {
  fn of<'a>(records: impl Iterator<Item = &'a Arc<CacheRecord>>, extra: bool) -> Written {
    let pins: Vec<Weak<CacheRecord>> = records.map(Arc::downgrade).collect();
    Written { records: pins.iter().map(|r| r.as_ptr() as usize).collect(), _pinned: pins, extra }
  }

  /// Also holds what `other` holds.
  fn merge(&mut self, other: Written) {
    self.records.extend(other.records);
    self._pinned.extend(other._pinned);
    self.extra |= other.extra;
  }

  fn holds_exactly(&self, records: &[&Arc<CacheRecord>]) -> bool {
    !self.extra
      && self.records.len() == records.len()
      && records.iter().all(|r| self.records.contains(&(Arc::as_ptr(r) as usize)))
  }
}

/// Per branch mode: which heads this process has preloaded, and what each
/// shard file holds (`None`: not known, it may hold anything).
#[derive(Default)]
struct Mode {
  /// Every head was decoded (a global synchronization's preload).
  all: bool,
  /// Until then: the project dirs whose heads were preloaded, and the
  /// record names already decoded, which a later preload skips.
  projects: FxHashSet<std::path::PathBuf>,
  decoded: FxHashSet<Box<str>>,
  shards: Vec<Option<Written>>,
}

/// The packs of one index dir, as this process knows them.
#[derive(Default)]
pub struct Packs {
  modes: Mutex<[Mode; 2]>,
}

impl Packs {
  /// Tests: what a fresh process knows.
  #[cfg(test)]
  pub fn forget(&self) {
    *self.modes.lock() = Default::default();
  }
}

/// A shard file of `entries` (record file name, head).
fn encode(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
  let len = entries.iter().map(|(name, head)| 8 + name.len() + head.len()).sum::<usize>();
  let mut rest = Vec::with_capacity(len);
  for (name, head) in entries {
    for part in [name.as_bytes(), head] {
      rest.extend_from_slice(&(part.len() as u32).to_le_bytes());
      rest.extend_from_slice(part);
    }
  }
  record::sealed(MAGIC, &rest)
}

/// The entries of an intact shard file; `None` for anything else.
fn decode(bytes: &[u8]) -> Option<Vec<(&str, &[u8])>> {
  let mut rest = record::unsealed(MAGIC, bytes)?;
  fn take<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    let (len, tail) = rest.split_at_checked(4)?;
    let (part, tail) = tail.split_at_checked(u32::from_le_bytes(len.try_into().ok()?) as usize)?;
    *rest = tail;
    Some(part)
  }
  let mut entries = Vec::new();
  while !rest.is_empty() {
    let name = std::str::from_utf8(take(&mut rest)?).ok()?;
    entries.push((name, take(&mut rest)?));
  }
  Some(entries)
}

/// How many heads an intact shard file holds (tests).
#[cfg(test)]
pub fn entry_count(bytes: &[u8]) -> Option<usize> {
  decode(bytes).map(|entries| entries.len())
}

/// Which packed heads a preload makes resident.
pub(super) enum Wanted<'a> {
  /// Every head: a global synchronization.
  All,
  /// The heads of a project's candidate sessions (its own dir's and the
  /// flat custom dir's), named by their file name. Only with at least
  /// [`MIN_RECORDS`] of them: for fewer, reading every shard costs more
  /// than opening their records.
  Project { dir: &'a std::path::Path, candidates: &'a [Source] },
}

/// Did this process make every packed head of `branches` resident
/// ([`preload`] of [`Wanted::All`])?
pub(super) fn preloaded(index: &Index, branches: Branches) -> bool {
  index.packs().modes.lock()[mode(branches)].all
}

/// Makes the packed heads of `branches` that `wanted` names resident, once
/// per process and project dir, before a synchronization loads its
/// records: each head stands for its record as if read from it (see the
/// module doc for which are used). A head decoded once is not decoded again.
/// `names`: the index dir's names, sorted; `limit`: the most a cold record may take.
pub(super) fn preload(
  index: &Index,
  branches: Branches,
  wanted: Wanted,
  sources: &[Source],
  names: &Names,
  limit: u64,
) {
  let stems: Option<FxHashSet<String>> = match wanted {
    Wanted::All => None,
    Wanted::Project { candidates, .. } if candidates.len() < index.trace().min_packed() => return,
    Wanted::Project { candidates, .. } => Some(candidates.iter().map(|s| record::stem(s.path)).collect()),
  };
  let decoded = {
    let mut modes = index.packs().modes.lock();
    let known = &mut modes[mode(branches)];
    let first = match wanted {
      Wanted::All => !std::mem::replace(&mut known.all, true),
      Wanted::Project { dir, .. } => !known.all && known.projects.insert(dir.to_path_buf()),
    };
    if !first {
      return;
    }
    std::mem::take(&mut known.decoded)
  };
  let wants = |name: &str| {
    !decoded.contains(name)
      && stems.as_ref().is_none_or(|stems| {
        let base = IndexFile::record_base(name, branches, Tier::Cold).unwrap_or_default();
        base.split_once('-').is_some_and(|(_, stem)| stems.contains(stem))
      })
  };
  // Decoded in parallel, a shard at a time (only two shards' bytes held at
  // once), and each made resident as soon as it is decoded: the maps'
  // inserts (~100 ms at 100,000 heads, each under its map's lock) then
  // overlap the other thread's decoding instead of following all of it.
  let read: Vec<(usize, Option<Preloaded>)> = (0..SHARDS)
    .into_par_iter()
    .map(|shard| {
      let file = file_name(branches, shard);
      if !names.contains(&file) {
        return (shard, None);
      }
      let path = index.dir().join(&file);
      let shard_limit = limit.saturating_mul(sources.len() as u64);
      // Mapped where the dictionary's shards are: the heads' details then
      // stay ranges of the file's pages, which leave the process's memory
      // once the shard is decoded and come back when a detail is read.
      let bytes = super::dictionary::bytes::ShardBytes::open(&path, shard_limit).ok().map(Arc::new);
      let backing: Option<record::Backing> = bytes.clone().filter(|b| b.mapped()).map(|b| b as record::Backing);
      let entries = bytes.as_deref().and_then(|b| decode(b)).map(|entries| {
        let (wanted, others): (Vec<(&str, &[u8])>, Vec<_>) = entries.into_iter().partition(|(name, _)| wants(name));
        // The sources of the others are named without decoding their heads,
        // so that no later step hashes their paths (cleanup names every
        // source's records).
        index.remember_base_names(others.into_iter().filter_map(|(name, head)| {
          Some((
            interned(std::path::Path::new(record::file_of_head(head)?)),
            record::hash_of_base(IndexFile::record_base(name, branches, Tier::Cold)?)?,
          ))
        }));
        // A project's preload remembers what it decoded; a global one decodes the rest.
        let names: Vec<Box<str>> = match stems {
          Some(_) => wanted.iter().map(|(name, _)| Box::from(*name)).collect(),
          None => Vec::new(),
        };
        let considered = wanted.len();
        // One per shard: its heads' loaders share it, each thread its own count.
        let dir: Arc<std::path::Path> = Arc::from(index.dir().path());
        let hints =
          super::interned::known_files(wanted.iter().map(|(_, head)| record::file_of_head(head).unwrap_or("")));
        let decode_heads = || -> Vec<Packed> {
          wanted
            .into_iter()
            .zip(hints)
            .filter_map(|(entry, hint)| {
              super::interned::with_file_hint(hint, || packed(index, branches, entry, &dir, limit))
            })
            .collect()
        };
        let packed = match &backing {
          Some(backing) => record::backed_by(backing, decode_heads),
          None => decode_heads(),
        };
        if let Some(backing) = &bytes {
          backing.release();
        }
        (resident(index, branches, packed, considered), names)
      });
      (shard, entries)
    })
    .collect();
  let mut decoded = if stems.is_some() { decoded } else { FxHashSet::default() };
  let mut modes = index.packs().modes.lock();
  let known = &mut modes[mode(branches)];
  known.shards.resize_with(SHARDS, || None);
  for (shard, read) in read {
    let held = &mut known.shards[shard];
    match (read, held.as_mut()) {
      // A shard read earlier for another project: it also holds these.
      (Some((written, names)), Some(held)) => {
        held.merge(written);
        decoded.extend(names);
      }
      (Some((written, names)), None) => {
        *held = Some(written);
        decoded.extend(names);
      }
      // Gone or damaged since: not known.
      (None, _) => *held = None,
    }
  }
  known.decoded = decoded;
}

/// One shard file's preload: what it holds, and the record names a
/// project's preload decoded from it.
type Preloaded = (Written, Vec<Box<str>>);

/// Makes one shard's decoded heads resident (a head whose source already
/// has a resident record is not), and says what the shard file holds: the
/// records put, and whether it holds heads besides them (some of the
/// `considered` could not be decoded or were not put).
fn resident(index: &Index, branches: Branches, packed: Vec<Packed>, considered: usize) -> Written {
  // Names this index wrote: a record name's base is its source's, unhashed.
  index.remember_base_names(packed.iter().map(|p| (p.path, p.base_hash)));
  let count = packed.len();
  let slots = index.resident().put_absent(branches, packed.into_iter().map(|p| (p.path, p.slot)));
  Written::of(slots.iter().map(|slot| &slot.record), slots.len() < count || count < considered)
}

/// One packed head, decoded, with its source's path (interned here, on the
/// decoding threads).
struct Packed {
  path: &'static std::path::Path,
  slot: Arc<Slot>,
  /// The hash prefix of the record name's base (its source's).
  base_hash: u64,
}

/// The record one packed head stands for; `None` when the head is not one
/// of `branches` mode's cold heads. Whether its source is still listed and
/// its record still in the index dir is not asked per head (two lookups of
/// long keys were a fifth of this): a head that stands for neither is
/// never fresh for a listed source, and a shard holding one is written again.
fn packed(
  index: &Index,
  branches: Branches,
  (name, head): (&str, &[u8]),
  dir: &Arc<std::path::Path>,
  limit: u64,
) -> Option<Packed> {
  let base_hash = record::hash_of_base(IndexFile::record_base(name, branches, Tier::Cold)?)?;
  let record = record::from_head(head, dir, limit, index.bodies())?;
  if record.branches != branches {
    return None;
  }
  // Interned as it was decoded, the listing's own path.
  let (path, verified_ns) = (record.file.as_path(), record.verified_ns);
  Some(Packed { path, slot: Slot::new(Arc::new(record), verified_ns), base_hash })
}

/// After a global synchronization that left nothing to the next call:
/// writes each shard whose file does not hold exactly its cold records'
/// heads, and removes the files of shards left without records (all of
/// them below [`MIN_RECORDS`]). Best effort: a shard that cannot be
/// written is tried again by the next synchronization.
pub(super) fn refresh(index: &Index, branches: Branches, synced: &[Synced]) {
  let placement = index.listing().placement();
  let cold: Vec<(&Synced, &Arc<CacheRecord>, usize)> = synced
    .iter()
    .filter(|s| s.tier == Tier::Cold)
    .filter_map(|s| {
      let record = s.record.as_ref().filter(|r| !r.content_unreadable())?;
      let Body::Cold(digest) = &record.body else { return None };
      // The dictionary's shard, which the digest remembers.
      Some((s, record, placement.shard_of(&record.file, &digest.matched)))
    })
    .collect();
  let mut groups: Vec<Vec<(&Synced, &Arc<CacheRecord>)>> = vec![Vec::new(); SHARDS];
  if cold.len() >= index.trace().min_packed() {
    for (synced, record, shard) in cold {
      groups[shard].push((synced, record));
    }
  }
  let mut modes = index.packs().modes.lock();
  let shards = &mut modes[mode(branches)].shards;
  shards.resize_with(SHARDS, || None);
  let current = |shard: usize| {
    let records: Vec<&Arc<CacheRecord>> = groups[shard].iter().map(|(_, r)| *r).collect();
    shards[shard].as_ref().is_some_and(|w| w.holds_exactly(&records))
  };
  let stale: Vec<usize> = (0..SHARDS).filter(|&shard| !current(shard)).collect();
  let written: Vec<(usize, Option<Written>)> =
    stale.into_par_iter().map(|shard| (shard, write(index, branches, shard, &groups[shard]))).collect();
  for (shard, written) in written {
    shards[shard] = written;
  }
}

/// Writes (or, without records, removes) one shard file; what it then
/// holds, `None` when that is not known.
fn write(index: &Index, branches: Branches, shard: usize, group: &[(&Synced, &Arc<CacheRecord>)]) -> Option<Written> {
  let name = file_name(branches, shard);
  if group.is_empty() {
    let gone = index.dir().remove_ours(&name) || !index.dir().join(&name).exists();
    return gone.then(Written::default);
  }
  let entries: Vec<(String, Vec<u8>)> = group
    .iter()
    .map(|(synced, record)| (index.record_name(synced.path, branches, Tier::Cold), record.head_bytes()))
    .collect();
  index.dir().write(&name, &encode(&entries)).ok()?;
  Some(Written::of(group.iter().map(|(_, r)| *r), false))
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn shard_files_round_trip_and_reject_any_change() {
    let entries = vec![("a.active.cold".to_string(), vec![1, 2, 3]), ("b.active.cold".to_string(), vec![])];
    let bytes = encode(&entries);
    let decoded = decode(&bytes).unwrap();
    assert_eq!(decoded, [("a.active.cold", &[1u8, 2, 3][..]), ("b.active.cold", &[][..])]);
    assert_eq!(decode(&encode(&[])).unwrap(), []);
    for cut in 0..bytes.len() {
      assert_eq!(decode(&bytes[..cut]), None, "cut at {cut}");
    }
    for position in 0..bytes.len() {
      let mut flipped = bytes.clone();
      flipped[position] ^= 0x10;
      assert_eq!(decode(&flipped), None, "byte {position}");
    }
  }

  #[test]
  fn names_are_the_shards_of_both_modes() {
    let is_file_name = |name: &str| matches!(IndexFile::parse(name), Some(IndexFile::HeadsPack { .. }));
    assert!(is_file_name("cold-heads.active.00.pack"));
    assert!(is_file_name("cold-heads.all.31.pack"));
    assert!(!is_file_name("cold-heads.all.32.pack"));
    assert!(!is_file_name("cold-heads.active.pack"));
    assert!(record::MAGIC_PREFIX.iter().zip(MAGIC).all(|(a, b)| a == b), "ownership knows it by the index magic");
  }
}

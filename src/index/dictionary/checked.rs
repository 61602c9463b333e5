//! A shard's bytes, checked where they are read. A shard file's head (its
//! members, the term index's start table, and a checksum of each
//! [`CHUNK`] of the rest) is checked whole when the file is read; the rest
//! (term blocks and posting lists: almost all of it) a chunk at a time,
//! when a lookup first reads into that chunk.
//!
//! Checking every shard whole read every byte of them: 361 MB for the 32
//! shards of `huge`, ~5 % of a fresh process's first recall, when its few
//! lookups need a few kilobytes of each.
//!
//! A chunk that does not match its checksum marks the shard damaged: reads
//! into it (and lookups after it, in any chunk) answer nothing, the
//! dictionary's users answer those terms from the digests instead, and the
//! shard is rebuilt at its next refresh.

use super::bytes::ShardBytes;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes per checked chunk: a lookup's term block and posting list most
/// often fall in one, and hashing one costs under a microsecond.
pub(super) const CHUNK: usize = 16 << 10;

pub(super) fn chunk_sums(lazy: &[u8]) -> impl Iterator<Item = u64> + '_ {
  lazy.chunks(CHUNK).map(xxhash_rust::xxh3::xxh3_64)
}

/// A shard's bytes: before `lazy_at` checked already, from it on by chunk.
pub(super) struct Checked {
  bytes: ShardBytes,
  lazy_at: usize,
  sums: Vec<u64>,
  /// A bit per chunk found intact.
  intact: Vec<AtomicU64>,
  damaged: AtomicBool,
}

impl Checked {
  /// Bytes built in this process: nothing to check.
  pub(super) fn trusted(bytes: Vec<u8>) -> Checked {
    let lazy_at = bytes.len();
    Checked { bytes: ShardBytes::Owned(bytes), lazy_at, sums: Vec::new(), intact: Vec::new(), damaged: false.into() }
  }

  /// Bytes read from a file whose head (before `lazy_at`) was checked, the
  /// rest to be checked against `sums`; `None` when they do not cover it.
  pub(super) fn read(bytes: ShardBytes, lazy_at: usize, sums: Vec<u64>) -> Option<Checked> {
    let lazy = bytes.len().checked_sub(lazy_at)?;
    if lazy.div_ceil(CHUNK) != sums.len() {
      return None;
    }
    let intact = (0..sums.len().div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
    Some(Checked { bytes, lazy_at, sums, intact, damaged: false.into() })
  }

  pub(super) fn len(&self) -> usize {
    self.bytes.len()
  }

  pub(super) fn damaged(&self) -> bool {
    self.damaged.load(Ordering::Relaxed)
  }

  /// `range` of the bytes once every chunk it touches is found intact;
  /// `None` if it falls outside them or the shard is damaged.
  pub(super) fn get(&self, range: Range<usize>) -> Option<&[u8]> {
    let bytes = self.bytes.get(range.clone())?;
    if range.end <= self.lazy_at || range.is_empty() {
      return Some(bytes);
    }
    let first = range.start.saturating_sub(self.lazy_at) / CHUNK;
    let last = (range.end - 1 - self.lazy_at) / CHUNK;
    let intact = (first..=last).all(|chunk| self.chunk_intact(chunk));
    (intact && !self.damaged()).then_some(bytes)
  }

  fn chunk_intact(&self, chunk: usize) -> bool {
    let (word, bit) = (&self.intact[chunk / 64], 1u64 << (chunk % 64));
    if word.load(Ordering::Acquire) & bit != 0 {
      return true;
    }
    let start = self.lazy_at + chunk * CHUNK;
    let bytes = &self.bytes[start..(start + CHUNK).min(self.bytes.len())];
    if xxhash_rust::xxh3::xxh3_64(bytes) != self.sums[chunk] {
      self.damaged.store(true, Ordering::Relaxed);
      return false;
    }
    word.fetch_or(bit, Ordering::Release);
    true
  }

  /// Drops mapped pages from resident memory (see [`ShardBytes::release`]).
  pub(super) fn release(&self) {
    self.bytes.release();
  }
}

/// A range of one shard's bytes: a shard read from disk keeps its term
/// index and its postings in the file's bytes instead of copying them out.
#[derive(Clone)]
pub(super) struct Shared {
  bytes: Arc<Checked>,
  range: Range<usize>,
}

impl Shared {
  pub(super) fn whole(bytes: Vec<u8>) -> Shared {
    let range = 0..bytes.len();
    Shared { bytes: Arc::new(Checked::trusted(bytes)), range }
  }

  pub(super) fn new(bytes: Arc<Checked>, range: Range<usize>) -> Option<Shared> {
    (range.start <= range.end && range.end <= bytes.len()).then_some(Shared { bytes, range })
  }

  pub(super) fn len(&self) -> usize {
    self.range.len()
  }

  /// `within` (relative to this range), checked.
  #[inline]
  pub(super) fn get(&self, within: Range<usize>) -> Option<&[u8]> {
    let start = self.range.start.checked_add(within.start)?;
    let end = self.range.start.checked_add(within.end).filter(|&end| end <= self.range.end)?;
    self.bytes.get(start..end)
  }

  pub(super) fn damaged(&self) -> bool {
    self.bytes.damaged()
  }

  /// Where this range starts in its buffer (tests: a decoded shard's ranges follow its head).
  #[cfg(test)]
  pub(super) fn start(&self) -> usize {
    self.range.start
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  /// `lazy` read against the checksums of `written`.
  fn read(head: &[u8], written: &[u8], lazy: &[u8]) -> Checked {
    let bytes = [head, lazy].concat();
    Checked::read(ShardBytes::Owned(bytes), head.len(), chunk_sums(written).collect()).unwrap()
  }

  #[test]
  fn chunks_are_checked_when_first_read_and_a_damaged_one_damages_the_shard() {
    let lazy: Vec<u8> = (0..3 * CHUNK + 10).map(|i| (i % 251) as u8).collect();
    let checked = read(b"head", &lazy, &lazy);
    assert_eq!(checked.get(0..4), Some(&b"head"[..]));
    assert_eq!(checked.get(4 + CHUNK - 2..4 + CHUNK + 2), Some(&lazy[CHUNK - 2..CHUNK + 2]));
    assert_eq!(checked.get(4 + lazy.len() - 1..4 + lazy.len() + 1), None, "past the end");
    let mut bad = lazy.clone();
    bad[2 * CHUNK + 5] ^= 1;
    let checked = read(b"head", &lazy, &bad);
    assert!(checked.get(4..4 + 2 * CHUNK).is_some(), "the intact chunks read");
    assert!(!checked.damaged());
    assert_eq!(checked.get(4 + 2 * CHUNK..4 + 2 * CHUNK + 1), None);
    assert!(checked.damaged());
    assert_eq!(checked.get(4..5), None, "nothing of a damaged shard's lazy part reads");
    assert_eq!(checked.get(0..4), Some(&b"head"[..]));
  }

  #[test]
  fn sums_must_cover_the_rest_exactly() {
    let lazy = vec![7u8; CHUNK + 1];
    let sums: Vec<u64> = chunk_sums(&lazy).collect();
    assert!(Checked::read(ShardBytes::Owned(lazy.clone()), 0, sums[..1].to_vec()).is_none());
    assert!(Checked::read(ShardBytes::Owned(lazy.clone()), lazy.len() + 1, Vec::new()).is_none());
    assert!(Checked::read(ShardBytes::Owned(lazy), 0, sums).is_some());
  }
}

//! A shard's term index: its terms, ascending, each with the offset of its
//! posting list, front-coded in blocks of [`BLOCK`] terms whose first term is
//! written whole. A lookup binary-searches the blocks by their first terms
//! and reads one block; a build writes each term once, in order.
//!
//! It replaced an FST (`fst`) whose build was half of a cold build's
//! dictionary work on `medium` (~700 ns a term: its node registry finds few
//! shared suffixes among session vocabularies) and 16 % of the whole build's
//! CPU, for 8 % fewer bytes (26.0 against 28.1 MB of shards on `medium`);
//! lookups cost the same.
//!
//! Layout, integers little-endian: a table (in the shard file's head, read
//! when the shard is): the term count (u32), the block count (u32), each
//! block's start in the block data and the data's end (u32 each), each
//! block's first term's first 8 bytes as [`order_key`] (u64 each: most
//! steps of a lookup's binary search compare these alone); and the block
//! data (checked a chunk at a time as lookups read it). A block: its first
//! term (varint length, bytes) and its offset (varint); each further term:
//! the length of the prefix it shares with the term before (varint), the
//! length of the rest (varint), the rest, and its offset less the term
//! before's (varint). A list ends where the next term's starts (the last
//! one at the postings' end), so lists carry no length of their own.

use super::checked::Shared;
use crate::index::record::vocabulary::{against, order_key, Against};
use crate::index::varint;

/// Terms per block: a lookup reads at most this many past its binary
/// search, and each block's first term is written whole.
const BLOCK: usize = 32;

/// Writes a term index from terms pushed in strictly ascending order with
/// ascending offsets (a merge's output).
#[derive(Default)]
pub(super) struct Writer<'a> {
  data: Vec<u8>,
  starts: Vec<u32>,
  keys: Vec<u64>,
  count: u32,
  previous: (&'a str, u64),
}

impl<'a> Writer<'a> {
  pub(super) fn push(&mut self, term: &'a str, offset: u64) {
    debug_assert!(self.count == 0 || (self.previous.0 < term && self.previous.1 <= offset), "ascending");
    if (self.count as usize).is_multiple_of(BLOCK) {
      self.starts.push(self.data.len() as u32);
      self.keys.push(order_key(term));
      varint::put(&mut self.data, term.len() as u64);
      self.data.extend_from_slice(term.as_bytes());
      varint::put(&mut self.data, offset);
    } else {
      let (previous, previous_offset) = self.previous;
      let shared = common_prefix(previous.as_bytes(), term.as_bytes());
      varint::put(&mut self.data, shared as u64);
      varint::put(&mut self.data, (term.len() - shared) as u64);
      self.data.extend_from_slice(&term.as_bytes()[shared..]);
      varint::put(&mut self.data, offset - previous_offset);
    }
    self.previous = (term, offset);
    self.count += 1;
  }

  /// The table and the block data.
  pub(super) fn finish(mut self) -> (Vec<u8>, Vec<u8>) {
    self.starts.push(self.data.len() as u32);
    let mut table = Vec::with_capacity(8 + 4 * self.starts.len() + 8 * self.keys.len());
    table.extend_from_slice(&self.count.to_le_bytes());
    table.extend_from_slice(&(self.keys.len() as u32).to_le_bytes());
    self.starts.iter().for_each(|start| table.extend_from_slice(&start.to_le_bytes()));
    self.keys.iter().for_each(|key| table.extend_from_slice(&key.to_le_bytes()));
    (table, self.data)
  }

  /// The term index written.
  pub(super) fn blocks(self) -> Option<TermBlocks> {
    let (table, data) = self.finish();
    TermBlocks::new(Shared::whole(table), Shared::whole(data))
  }
}

/// A written term index, read in place.
pub(super) struct TermBlocks {
  /// Checked with the shard's head: read without a check.
  table: Shared,
  data: Shared,
  blocks: usize,
}

#[inline]
fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
  match bytes.get(at..at.checked_add(4)?)? {
    &[a, b, c, d] => Some(u32::from_le_bytes([a, b, c, d])),
    _ => None,
  }
}

impl TermBlocks {
  /// `None` unless `table` holds a header, a start table that ascends
  /// through `data`, and no more terms than the blocks can hold.
  pub(super) fn new(table: Shared, data: Shared) -> Option<TermBlocks> {
    let raw = table.get(0..table.len())?;
    let (count, blocks) = (u32_at(raw, 0)?, u32_at(raw, 4)? as usize);
    if blocks.checked_mul(12)?.checked_add(12)? != raw.len() {
      return None;
    }
    let starts: Vec<u32> = (0..=blocks).map(|b| u32_at(raw, 8 + 4 * b)).collect::<Option<_>>()?;
    let ascending = starts.windows(2).all(|pair| pair[0] < pair[1]);
    let spans_data = starts[0] == 0 && starts[blocks] as usize == data.len();
    let fits = (count as usize).div_ceil(BLOCK) == blocks;
    (ascending && spans_data && fits).then_some(TermBlocks { table, data, blocks })
  }

  #[cfg(test)]
  pub(super) fn len(&self) -> usize {
    u32_at(self.table.get(0..4).expect("checked in new"), 0).expect("checked in new") as usize
  }

  /// The table and the block data, as written (`None`: a damaged shard).
  pub(super) fn parts(&self) -> Option<(&[u8], &[u8])> {
    Some((self.table.get(0..self.table.len())?, self.data.get(0..self.data.len())?))
  }

  /// Block `block`'s bytes (`None`: damaged).
  #[inline]
  fn block(&self, block: usize) -> Option<&[u8]> {
    let start = |b: usize| Some(u32_at(self.table.get(8 + 4 * b..12 + 4 * b)?, 0)? as usize);
    self.data.get(start(block)?..start(block + 1)?)
  }

  /// The [`order_key`] of block `block`'s first term.
  #[inline]
  fn key(&self, block: usize) -> Option<u64> {
    let at = 8 + 4 * (self.blocks + 1) + 8 * block;
    Some(u64::from_le_bytes(self.table.get(at..at + 8)?.try_into().ok()?))
  }

  /// A block's first term and where the rest of the block starts.
  #[inline]
  fn first_term(block: &[u8]) -> Option<(&[u8], usize)> {
    let mut at = 0;
    let len = varint::take(block, &mut at)? as usize;
    let term = block.get(at..at.checked_add(len)?)?;
    Some((term, at + len))
  }

  /// Where the posting list of `term` starts and, unless it is the last
  /// term's (which runs to the postings' end), where the next term's starts;
  /// `None` if the index does not hold `term`.
  pub(super) fn get(&self, term: &str) -> Option<(u64, Option<u64>)> {
    let key = order_key(term);
    let term = term.as_bytes();
    // The last block whose first term is at most `term`: keys decide but
    // for terms that share their first 8 bytes.
    let (mut low, mut high) = (0, self.blocks);
    while low < high {
      let middle = (low + high) / 2;
      let first = self.key(middle)?;
      let at_most = first < key || (first == key && Self::first_term(self.block(middle)?)?.0 <= term);
      match at_most {
        true => low = middle + 1,
        false => high = middle,
      }
    }
    let block = low.checked_sub(1)?;
    let (offset, next) = Self::find_in(self.block(block)?, term)?;
    let next = match next {
      Some(next) => Some(next),
      None if block + 1 < self.blocks => Some(Self::first_offset(self.block(block + 1)?)?),
      None => None,
    };
    Some((offset, next))
  }

  /// A block's first term's list offset.
  fn first_offset(block: &[u8]) -> Option<u64> {
    let (_, mut at) = Self::first_term(block)?;
    varint::take(block, &mut at)
  }

  /// Reads a block's terms in order, none rebuilt ([`against`]): `term`'s
  /// list offset, and the next term's when the block holds one.
  fn find_in(block: &[u8], term: &[u8]) -> Option<(u64, Option<u64>)> {
    let (first, mut at) = Self::first_term(block)?;
    let mut offset = varint::take(block, &mut at)?;
    // One term: its prefix and rest lengths, its rest and its offset's delta.
    let next = |at: &mut usize| -> Option<(usize, &[u8], u64)> {
      let shared = varint::take(block, at)? as usize;
      let rest_len = varint::take(block, at)? as usize;
      let rest = block.get(*at..at.checked_add(rest_len)?)?;
      *at += rest_len;
      Some((shared, rest, varint::take(block, at)?))
    };
    let (mut shared, mut rest, mut matched) = (0, first, 0);
    loop {
      match against(shared, rest, matched, term) {
        Against::Past => return None,
        Against::Equal => {
          let following = match at == block.len() {
            true => None,
            false => Some(offset.checked_add(next(&mut at)?.2)?),
          };
          return Some((offset, following));
        }
        Against::Below(now) => matched = now,
      }
      if at == block.len() {
        return None;
      }
      let delta;
      (shared, rest, delta) = next(&mut at)?;
      offset = offset.checked_add(delta)?;
    }
  }
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
  a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
  use super::*;
  use proptest::collection::btree_set;
  use proptest::prelude::*;

  fn written(terms: &[String]) -> TermBlocks {
    let mut writer = Writer::default();
    terms.iter().enumerate().for_each(|(at, term)| writer.push(term, at as u64 * 3));
    writer.blocks().expect("a written index reads back")
  }

  proptest! {
    #![proptest_config(crate::testing::proptest_config(256))]

    /// Every term written is found at its offset, and every other probe is
    /// absent, wherever it falls among the blocks.
    #[test]
    fn a_lookup_finds_exactly_the_terms_written(
      terms in btree_set("[ab\u{e9}]{0,6}", 0..80),
      probes in proptest::collection::vec("[ab\u{e9}c]{0,7}", 0..40),
    ) {
      let terms: Vec<String> = terms.into_iter().collect();
      let index = written(&terms);
      prop_assert_eq!(index.len(), terms.len());
      // The term at `at`'s list: from its offset to the next term's (none after the last).
      let range = |at: usize| (at as u64 * 3, (at + 1 < terms.len()).then_some((at as u64 + 1) * 3));
      for (at, term) in terms.iter().enumerate() {
        prop_assert_eq!(index.get(term), Some(range(at)), "{:?}", term);
      }
      for probe in &probes {
        let expected = terms.binary_search(probe).ok().map(range);
        prop_assert_eq!(index.get(probe), expected, "{:?}", probe);
      }
    }

    /// Bytes that are not a written index are refused or answer nothing;
    /// no lookup panics.
    #[test]
    fn damaged_bytes_never_panic(
      terms in btree_set("[ab]{1,5}", 1..60),
      flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
      probe in "[ab]{0,6}",
    ) {
      let terms: Vec<String> = terms.into_iter().collect();
      let index = written(&terms);
      let (table, data) = index.parts().unwrap();
      let mut bytes = [table, data].concat();
      for (at, value) in flips {
        let at = at.index(bytes.len());
        bytes[at] = value;
      }
      let data = bytes.split_off(table.len());
      if let Some(index) = TermBlocks::new(Shared::whole(bytes), Shared::whole(data)) {
        let _ = index.get(&probe);
      }
    }
  }

  #[test]
  fn an_empty_index_holds_nothing() {
    let index = written(&[]);
    assert_eq!((index.len(), index.get(""), index.get("a")), (0, None, None));
    assert!(
      TermBlocks::new(Shared::whole(vec![1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), Shared::whole(Vec::new())).is_none(),
      "a count without blocks"
    );
  }
}

//! One shard of the cold term dictionary: a term index ([`TermBlocks`])
//! mapping each term to the offset of its posting list (member ordinals as
//! gap varints or a bitmap, each with its frequency class: [`posting`]; it
//! ends where the next term's starts), and the members (record file, vocabulary
//! fingerprint) the ordinals name. A shard file is [`MAGIC`], the xxh3-64
//! of its head and the head's length, the head (chunk checksums, members,
//! the term index's table), then the postings and the term blocks, checked
//! a chunk at a time as lookups read them ([`checked`]).

use super::blocks::{TermBlocks, Writer};
use super::bytes::ShardBytes;
use super::checked::{self, Checked, Shared};
use super::posting;
use crate::index::record::cold::{ColdContent, ColdDigest};
use crate::index::record::vocabulary::{split_joined, term_hash, terms_in, TermLookup, Vocabulary};
use crate::index::varint;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::borrow::Cow;

/// `D7`: a list most members hold is a bitmap ([`posting`]), and a sparse
/// list's first gap counts from -1. `D6`: a list ends where the next
/// term's starts (`D5` led each list by
/// its byte length, which the term index's offsets already gave: ~1 byte a
/// term, 1.6 MB of `medium`'s shards); `D5` was checked by chunk (`D4`
/// checked whole, its lists led by their count; `D3` had a byte for each
/// frequency class; `D2` an FST for a term index; `D1` no frequency classes).
const MAGIC: &[u8; 8] = b"PFMIDXD7";
/// The magic, the head's checksum and its length.
pub(super) const HEADER_BYTES: usize = MAGIC.len() + 8 + 4;

/// A lookup read into a chunk of a shard file that does not match its
/// checksum: the shard answers nothing until rebuilt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Damaged;

/// One digest the dictionary was built from: its record file (a range of
/// [`Members::files`]) and its vocabulary's fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Member {
  at: u32,
  len: u32,
  fingerprint: u128,
}

/// The members, their files in one buffer: a shard of a fresh process's
/// first call held a string per member (100,000 allocations at `huge`).
#[derive(Debug, Default)]
pub(super) struct Members {
  files: String,
  list: Vec<Member>,
}

impl Members {
  fn push(&mut self, file: &str, fingerprint: u128) -> Option<()> {
    let (at, len) = (u32::try_from(self.files.len()).ok()?, u32::try_from(file.len()).ok()?);
    self.files.push_str(file);
    self.list.push(Member { at, len, fingerprint });
    Some(())
  }

  fn file(&self, member: &Member) -> &str {
    &self.files[member.at as usize..][..member.len as usize]
  }

  fn len(&self) -> usize {
    self.list.len()
  }

  /// Each member's file and fingerprint, in order.
  fn iter(&self) -> impl Iterator<Item = (&str, u128)> {
    self.list.iter().map(|member| (self.file(member), member.fingerprint))
  }
}

fn file_key(file: &str) -> u64 {
  xxhash_rust::xxh3::xxh3_64(file.as_bytes())
}

pub struct Dictionary {
  /// Unique per dictionary in this process (from 1): what digests cache
  /// their membership against.
  pub generation: u32,
  members: Members,
  /// Members by the xxh3-64 of their file (the first of any that collide):
  /// a lookup checks the member's file, so a collision only makes a
  /// digest a straggler. Keyed by a copy of every file, this map held
  /// ~13 MB at 100,000 cold sessions.
  by_file: FxHashMap<u64, u32>,
  terms: TermBlocks,
  postings: Shared,
}

fn strictly_sorted(vocabulary: &Vocabulary) -> bool {
  let mut terms = vocabulary.iter();
  let Some(mut last) = terms.next() else { return true };
  terms.all(|term| std::mem::replace(&mut last, term) < term)
}

/// A digest's vocabulary and its frequency classes, as a merge reads them.
type MergeTerms<'a> = (Cow<'a, Vocabulary>, Cow<'a, [u8]>);

/// A digest's vocabulary and frequency classes for the merge: borrowed when
/// its content is resident, else taken out of the content just read, whose
/// addresses (about half of it decoded) are dropped at once instead of held
/// for the merge.
fn vocabulary_of(content: Cow<'_, ColdContent>) -> MergeTerms<'_> {
  match content {
    Cow::Borrowed(content) => (Cow::Borrowed(&content.vocabulary), Cow::Borrowed(&content.frequencies[..])),
    Cow::Owned(content) => (Cow::Owned(content.vocabulary), Cow::Owned(content.frequencies)),
  }
}

/// Terms (ascending) with the offsets of their posting lists, and the postings.
type Merged<'a> = (Vec<(&'a str, u64)>, Vec<u8>);

/// One distinct term of a merge, with its order key ([`TermLookup`]: most
/// comparisons of a lookup and of the sort then never read the term's
/// bytes, which lie in another digest's text) and how many members hold it.
struct Distinct<'a> {
  key: u64,
  term: &'a str,
  holders: u32,
}

/// Vocabulary bytes one part of a merge takes, about (parts are cut at
/// terms): what bounds a merge's memory, ~9 bytes for each term of each
/// member's run and ~40 for each distinct term. A shard of `huge` (45 MB of
/// vocabularies) merges in ~45 parts, two at a time: its build's peak RSS
/// 438 → 446 MB (2 MB parts: 463; one table per half: 490).
const PART_BYTES: usize = 1 << 20;

/// One member's run of a merge: newline-joined ascending terms, and their
/// frequency classes (1 past the end, as [`ColdContent::frequency`] says).
type Run<'a> = (&'a str, &'a [u8]);

/// The merge of one part (each member's run, in member order): each term
/// once, with the members holding it (a [`posting`] list). Each term of
/// each run is numbered by one hash-table lookup (its [`TermLookup`]: key and
/// length decide most comparisons without reading the term, which lies in
/// another member's text); the distinct terms are then sorted, and each
/// run's terms placed by their term's rank (a counting sort, which keeps
/// member order). A k-way merge compared each term ~log₂(members) times:
/// 12 at `huge`, 5 at `medium`, where this merge costs half as much.
fn merge<'a>(runs: &[Run<'a>], members: u32) -> Merged<'a> {
  let (mut distinct, mut table) = (Vec::<Distinct<'a>>::new(), hashbrown::HashTable::<u32>::new());
  let (mut numbers, mut ends): (Vec<u32>, Vec<usize>) = (Vec::new(), Vec::with_capacity(runs.len()));
  for &(run, _) in runs {
    for term in terms_in(run) {
      let lookup = TermLookup::new(term);
      let same = |&at: &u32| {
        let known = &distinct[at as usize];
        lookup.is(known.key, known.term.len(), || known.term.as_bytes())
      };
      let number = match table.find(lookup.hash, same) {
        Some(&at) => at,
        None => {
          distinct.push(Distinct { key: lookup.key, term, holders: 0 });
          let at = distinct.len() as u32 - 1;
          table.insert_unique(lookup.hash, at, |&at| term_hash(distinct[at as usize].term));
          at
        }
      };
      distinct[number as usize].holders += 1;
      numbers.push(number);
    }
    ends.push(numbers.len());
  }
  drop(table);
  let mut order: Vec<u32> = (0..distinct.len() as u32).collect();
  order.sort_unstable_by(|&a, &b| {
    let (a, b) = (&distinct[a as usize], &distinct[b as usize]);
    a.key.cmp(&b.key).then_with(|| a.term.cmp(b.term))
  });
  // Where each term's members go, by its number: after the lists of the terms before it.
  let mut next = vec![0u32; distinct.len()];
  let mut at = 0;
  for &number in &order {
    next[number as usize] = at;
    at += distinct[number as usize].holders;
  }
  let (mut holders, mut classes) = (vec![0u32; numbers.len()], vec![0u8; numbers.len()]);
  let mut start = 0;
  for (member, (&(_, frequencies), end)) in runs.iter().zip(ends).enumerate() {
    let run_classes = frequencies.iter().copied().chain(std::iter::repeat(1));
    for (&number, class) in numbers[start..end].iter().zip(run_classes) {
      let slot = &mut next[number as usize];
      (holders[*slot as usize], classes[*slot as usize]) = (member as u32, class);
      *slot += 1;
    }
    start = end;
  }
  let (mut terms, mut postings, mut list, mut at) = (Vec::with_capacity(order.len()), Vec::new(), Vec::new(), 0);
  for number in order {
    let Distinct { term, holders: count, .. } = distinct[number as usize];
    let range = at..at + count as usize;
    list.clear();
    list.extend(holders[range.clone()].iter().copied().zip(classes[range].iter().copied()));
    terms.push((term, postings.len() as u64));
    posting::put_list(&mut postings, &list, members);
    at += count as usize;
  }
  (terms, postings)
}

/// Where a merge of `vocabularies` is cut into `parts`: at the median of
/// the vocabularies' terms at each fraction of their bytes, ascending and
/// distinct (fewer when they coincide).
pub(super) fn pivots<'a>(vocabularies: &[(&'a Vocabulary, &[u8])], parts: usize) -> Vec<&'a str> {
  let mut pivots: Vec<&str> = (1..parts)
    .filter_map(|part| {
      let mut terms: Vec<&str> = vocabularies.iter().filter_map(|(v, _)| v.term_at_fraction(part, parts)).collect();
      let at = terms.len() / 2;
      (!terms.is_empty()).then(|| *terms.select_nth_unstable(at).1)
    })
    .collect();
  pivots.sort_unstable();
  pivots.dedup();
  pivots
}

/// The merge of `vocabularies` cut at `pivots` (ascending) into parts, each
/// merged on its own (in parallel) and joined: the same term index and
/// postings as one merge.
pub(super) fn merge_parts<'a>(vocabularies: &[(&'a Vocabulary, &'a [u8])], pivots: &[&str]) -> (TermBlocks, Vec<u8>) {
  let mut parts: Vec<Vec<Run<'a>>> = vec![Vec::with_capacity(vocabularies.len()); pivots.len() + 1];
  for &(vocabulary, frequencies) in vocabularies {
    let (mut rest, mut classes) = (vocabulary.text(), frequencies);
    for (part, pivot) in pivots.iter().enumerate() {
      let (below, from, count) = split_joined(rest, pivot);
      parts[part].push((below, classes.get(..count).unwrap_or(classes)));
      (rest, classes) = (from, classes.get(count..).unwrap_or_default());
    }
    parts[pivots.len()].push((rest, classes));
  }
  let members = vocabularies.len() as u32;
  let merged: Vec<Merged<'a>> = parts.par_iter().map(|runs| merge(runs, members)).collect();
  let (mut writer, mut postings) = (Writer::default(), Vec::new());
  for (terms, part) in merged {
    let shift = postings.len() as u64;
    for (term, offset) in terms {
      writer.push(term, offset + shift);
    }
    postings.extend_from_slice(&part);
  }
  (writer.blocks().expect("a written term index"), postings)
}

impl Dictionary {
  /// Merges the (sorted, unique) vocabularies of `digests` into one term
  /// index, in parts cut at terms ([`merge_parts`]: at least two, run in
  /// parallel; each of about [`PART_BYTES`] of vocabulary, so a merge holds
  /// the output and two parts' tables). Digests whose vocabulary is not
  /// strictly sorted are left out (they stay stragglers, searched
  /// directly), as are digests whose content cannot be read. Contents not
  /// yet resident are read for the build (in parallel), and only their
  /// vocabularies are kept until it ends: large shards are built one at a
  /// time, so a build holds one shard's vocabularies (~45 MB a shard at
  /// 100,000 sessions), not two.
  pub fn build(digests: &[(&str, &ColdDigest)]) -> Dictionary {
    let read: Vec<(&str, u128, MergeTerms<'_>)> = digests
      .par_iter()
      .filter_map(|(file, d)| Some((*file, d.vocabulary_fingerprint(), vocabulary_of(d.content.read().ok()?))))
      .filter(|(_, _, (vocabulary, _))| strictly_sorted(vocabulary))
      .collect();
    let vocabularies: Vec<(&Vocabulary, &[u8])> = read.iter().map(|(_, _, (v, f))| (&**v, &**f)).collect();
    // At least two parts: a shard rebuilt alone takes both threads.
    let bytes: usize = vocabularies.iter().map(|(v, _)| v.text().len()).sum();
    let (terms, postings) = merge_parts(&vocabularies, &pivots(&vocabularies, bytes.div_ceil(PART_BYTES).max(2)));
    let mut members = Members::default();
    let bytes = read.iter().map(|(file, ..)| file.len()).sum();
    members.files.reserve_exact(bytes);
    members.list.reserve_exact(read.len());
    for (file, fingerprint, _) in &read {
      // A shard's files are its records' names, far below 4 GB.
      members.push(file, *fingerprint).expect("member files fit u32 offsets");
    }
    Dictionary::assemble(members, terms, Shared::whole(postings))
  }

  fn assemble(members: Members, terms: TermBlocks, postings: Shared) -> Dictionary {
    let mut by_file = FxHashMap::with_capacity_and_hasher(members.len(), Default::default());
    for (at, (file, _)) in members.iter().enumerate() {
      by_file.entry(file_key(file)).or_insert(at as u32);
    }
    static GENERATIONS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
    let generation = GENERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Dictionary { generation, members, by_file, terms, postings }
  }

  /// The member built from `file` with this vocabulary fingerprint, if any.
  pub fn member(&self, file: &str, fingerprint: u128) -> Option<u32> {
    let member = self.by_file.get(&file_key(file)).copied()?;
    let found = &self.members.list[member as usize];
    (self.members.file(found) == file && found.fingerprint == fingerprint).then_some(member)
  }

  pub fn members(&self) -> usize {
    self.members.len()
  }

  /// The record file of each member (tests).
  #[cfg(test)]
  pub fn member_files(&self) -> impl Iterator<Item = &str> {
    self.members.iter().map(|(file, _)| file)
  }

  /// Decoded from a file rather than built here (tests): a built shard's
  /// postings start its buffer, a decoded one's follow the head.
  #[cfg(test)]
  pub fn is_decoded(&self) -> bool {
    self.postings.start() > 0
  }

  /// Whether a lookup found a chunk of its file damaged.
  pub fn damaged(&self) -> bool {
    self.postings.damaged()
  }

  #[cfg(test)]
  pub fn len(&self) -> usize {
    self.terms.len()
  }

  /// The posting list from `start` to `end` (the postings' end when
  /// `None`); `None`: damaged, or not a range of the postings.
  fn list(&self, (start, end): (u64, Option<u64>)) -> Option<&[u8]> {
    let start = usize::try_from(start).ok()?;
    let end = match end {
      Some(end) => usize::try_from(end).ok()?,
      None => self.postings.len(),
    };
    self.postings.get(start..end)
  }

  /// Members (in build order) whose vocabulary holds `term`.
  #[cfg(test)]
  pub fn holding(&self, term: &str) -> impl Iterator<Item = u32> + '_ {
    self.frequencies(term).expect("intact").map(|(member, _)| member)
  }

  /// Members (in build order) whose vocabulary holds `term`, with the
  /// session's frequency class of it; [`Damaged`] when a chunk it read
  /// (or any before it) was.
  pub fn frequencies(&self, term: &str) -> Result<impl Iterator<Item = (u32, u8)> + '_, Damaged> {
    let list = self.terms.get(term).and_then(|range| self.list(range));
    if self.damaged() {
      return Err(Damaged);
    }
    Ok(posting::read(list.unwrap_or_default(), self.members.len() as u32))
  }

  /// `MAGIC`, xxh3-64 of the head, the head's length (u32 LE), the head:
  /// the chunk count and each chunk's xxh3-64 (u64 LE), the member count,
  /// each member's file (length, bytes) and fingerprint (16 bytes LE), the
  /// postings' length, the term index's table; then the postings and the
  /// term blocks, in chunks of [`checked::CHUNK`]. `None` for a shard read
  /// from a file found damaged.
  pub fn encode(&self) -> Option<Vec<u8>> {
    let (table, blocks) = self.terms.parts()?;
    let postings = self.postings.get(0..self.postings.len())?;
    let lazy = [postings, blocks].concat();
    let sums: Vec<u64> = checked::chunk_sums(&lazy).collect();
    let mut head = Vec::with_capacity(8 * sums.len() + table.len() + 64 * self.members.len());
    varint::put(&mut head, sums.len() as u64);
    sums.iter().for_each(|sum| head.extend_from_slice(&sum.to_le_bytes()));
    varint::put(&mut head, self.members.len() as u64);
    for (file, fingerprint) in self.members.iter() {
      varint::put(&mut head, file.len() as u64);
      head.extend_from_slice(file.as_bytes());
      head.extend_from_slice(&fingerprint.to_le_bytes());
    }
    varint::put(&mut head, postings.len() as u64);
    head.extend_from_slice(table);
    let mut bytes = Vec::with_capacity(HEADER_BYTES + head.len() + lazy.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(&head).to_le_bytes());
    bytes.extend_from_slice(&u32::try_from(head.len()).ok()?.to_le_bytes());
    bytes.extend_from_slice(&head);
    bytes.extend_from_slice(&lazy);
    Some(bytes)
  }

  /// `None` for anything but a shard file with an intact head. The term
  /// index and the postings stay in `bytes`, checked as lookups read them.
  pub fn decode(bytes: impl Into<ShardBytes>) -> Option<Dictionary> {
    let bytes = bytes.into();
    let header = bytes.strip_prefix(MAGIC)?.get(..12)?;
    let (sum, head_len) = header.split_at(8);
    let lazy_at = HEADER_BYTES.checked_add(u32::from_le_bytes(head_len.try_into().ok()?) as usize)?;
    let head = bytes.get(HEADER_BYTES..lazy_at)?;
    if sum != xxhash_rust::xxh3::xxh3_64(head).to_le_bytes() {
      return None;
    }
    let mut at = 0;
    let chunks = usize::try_from(varint::take(head, &mut at)?).ok().filter(|&n| n <= head.len() / 8)?;
    let sums: Vec<u64> = head
      .get(at..at + 8 * chunks)?
      .chunks_exact(8)
      .map(|sum| u64::from_le_bytes(sum.try_into().unwrap_or_default()))
      .collect();
    at += 8 * chunks;
    let members = Self::read_members(head, &mut at)?;
    let postings_len = usize::try_from(varint::take(head, &mut at)?).ok()?;
    // Copied out: every lookup reads the table, and a mapped page touched
    // after the release below maps its whole folio back (~2 MB a shard:
    // +64 MB resident after a first recall at `huge`).
    let table = Shared::whole(head[at..].to_vec());
    let postings_end = lazy_at.checked_add(postings_len)?;
    let bytes = std::sync::Arc::new(Checked::read(bytes, lazy_at, sums)?);
    let postings = Shared::new(bytes.clone(), lazy_at..postings_end)?;
    let blocks = Shared::new(bytes.clone(), postings_end..bytes.len())?;
    let terms = TermBlocks::new(table, blocks)?;
    // Every page of the head was read: lookups need few of the rest.
    // Released last, since a page cache of large folios maps a whole folio
    // (up to 2 MB) back at the next touch: reading the FST's footer after
    // the release (before `D3`) kept ~2 MB of each shard resident (64 MB
    // over the 32 shards of a build at 100,000 sessions).
    bytes.release();
    Some(Dictionary::assemble(members, terms, postings))
  }

  /// The members as the head lists them, from `*at`.
  fn read_members(head: &[u8], at: &mut usize) -> Option<Members> {
    let count = varint::take(head, at)? as usize;
    let mut members = Members::default();
    members.list.reserve_exact(count.min(head.len() / 17));
    for _ in 0..count {
      let len = varint::take(head, at)? as usize;
      let file = std::str::from_utf8(head.get(*at..at.checked_add(len)?)?).ok()?;
      *at += len;
      let fingerprint = u128::from_le_bytes(head.get(*at..at.checked_add(16)?)?.try_into().ok()?);
      *at += 16;
      members.push(file, fingerprint)?;
    }
    Some(members)
  }
}

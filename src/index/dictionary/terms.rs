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
use crate::index::record::vocabulary::{order_key, terms_in, Vocabulary};
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

/// One digest the dictionary was built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Member {
  file: String,
  fingerprint: u128,
}

fn file_key(file: &str) -> u64 {
  xxhash_rust::xxh3::xxh3_64(file.as_bytes())
}

pub struct Dictionary {
  /// Unique per dictionary in this process (from 1): what digests cache
  /// their membership against.
  pub generation: u32,
  pub(super) members: Vec<Member>,
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

/// A vocabulary's terms with their frequency classes (1 where a digest has
/// none, as `ColdContent::frequency` says).
fn with_frequencies<'a>(vocabulary: &'a Vocabulary, frequencies: &'a [u8]) -> impl Iterator<Item = (&'a str, u8)> + 'a {
  joined_with_frequencies(vocabulary.text(), frequencies)
}

/// As [`with_frequencies`], for terms joined by newlines (part of a
/// vocabulary's text, `frequencies` from its first term on).
fn joined_with_frequencies<'a>(joined: &'a str, frequencies: &'a [u8]) -> impl Iterator<Item = (&'a str, u8)> + 'a {
  terms_in(joined).zip(frequencies.iter().copied().chain(std::iter::repeat(1)))
}

/// A merge cursor's current term, ordered by term then member. It carries
/// the term's [`order_key`] so that most comparisons never read the term
/// itself from another digest's text: two terms of at most 8 bytes with
/// equal keys differ only by trailing zeros, so the shorter is the lesser.
#[derive(Clone, Copy)]
struct Head<'a> {
  key: u64,
  term: &'a str,
  member: u32,
  frequency: u8,
}

impl<'a> Head<'a> {
  fn new((term, frequency): (&'a str, u8), member: u32) -> Head<'a> {
    Head { key: order_key(term), term, member, frequency }
  }

  fn term_order(&self, other: &Head<'_>) -> std::cmp::Ordering {
    self.key.cmp(&other.key).then_with(|| match self.term.len().max(other.term.len()) {
      ..=8 => self.term.len().cmp(&other.term.len()),
      _ => self.term.cmp(other.term),
    })
  }
}

/// A tournament of the merge's cursors: each internal node keeps the loser
/// of the match played there, so replacing the winner's term replays one
/// path to the root, one comparison a level (a binary heap's sift-down
/// makes two: `medium`'s cold build spent 5.5 % of its samples there, 4.5 %
/// here). Ties go to the lower member, so equal terms surface in member
/// order.
struct LoserTree<'a> {
  heads: Vec<Option<Head<'a>>>,
  /// `[0]`: the winner; `[1..]`: the loser at each internal node (the
  /// leaves, cursor `i` at node `len + i`, are implicit).
  nodes: Vec<usize>,
}

impl<'a> LoserTree<'a> {
  fn new(heads: Vec<Option<Head<'a>>>) -> LoserTree<'a> {
    let mut tree = LoserTree { nodes: vec![0; heads.len()], heads };
    if !tree.heads.is_empty() {
      tree.nodes[0] = tree.play(1);
    }
    tree
  }

  /// Does `a`'s head come before `b`'s? An exhausted cursor comes last.
  fn before(&self, a: usize, b: usize) -> bool {
    match (&self.heads[a], &self.heads[b]) {
      (Some(x), Some(y)) => x.term_order(y).then(x.member.cmp(&y.member)).is_lt(),
      (Some(_), None) => true,
      (None, _) => false,
    }
  }

  /// The winner below `node`, keeping each match's loser on the way.
  fn play(&mut self, node: usize) -> usize {
    let len = self.heads.len();
    if node >= len {
      return node - len;
    }
    let (left, right) = (self.play(2 * node), self.play(2 * node + 1));
    let (winner, loser) = if self.before(right, left) { (right, left) } else { (left, right) };
    self.nodes[node] = loser;
    winner
  }

  fn top(&self) -> Option<Head<'a>> {
    self.heads[*self.nodes.first()?]
  }

  /// The winner's cursor moved on to `next`: its path to the root is replayed.
  fn replace_top(&mut self, next: Option<Head<'a>>) {
    let mut winner = self.nodes[0];
    self.heads[winner] = next;
    let mut node = (winner + self.heads.len()) / 2;
    while node >= 1 {
      if self.before(self.nodes[node], winner) {
        std::mem::swap(&mut self.nodes[node], &mut winner);
      }
      node /= 2;
    }
    self.nodes[0] = winner;
  }
}

/// Terms (ascending) with the offsets of their posting lists, and the postings.
type Merged<'a> = (Vec<(&'a str, u64)>, Vec<u8>);

/// The k-way merge of `cursors` (each ascending): each term once, with the
/// members holding it (the list's length in bytes, then per member a
/// [`posting`]).
fn merge<'a>(mut cursors: Vec<impl Iterator<Item = (&'a str, u8)>>) -> Merged<'a> {
  let members = cursors.len() as u32;
  let heads = cursors.iter_mut().enumerate().map(|(member, cursor)| Some(Head::new(cursor.next()?, member as u32)));
  let mut tree = LoserTree::new(heads.collect());
  let (mut terms, mut postings, mut list) = (Vec::new(), Vec::new(), Vec::new());
  while let Some(head) = tree.top() {
    list.clear();
    while let Some(top) = tree.top().filter(|top| top.term_order(&head).is_eq()) {
      list.push((top.member, top.frequency));
      tree.replace_top(cursors[top.member as usize].next().map(|next| Head::new(next, top.member)));
    }
    terms.push((head.term, postings.len() as u64));
    posting::put_list(&mut postings, &list, members);
  }
  (terms, postings)
}

/// The merge of `vocabularies` as two halves, below `pivot` and from it on,
/// run in parallel and joined: the same term index and postings as one merge.
pub(super) fn merge_split<'a>(
  vocabularies: &[(&'a Vocabulary, &'a [u8])],
  pivot: Option<&str>,
) -> (TermBlocks, Vec<u8>) {
  let terms = |&(vocabulary, frequencies): &(&'a Vocabulary, &'a [u8])| with_frequencies(vocabulary, frequencies);
  let (low, high) = match pivot {
    Some(pivot) => {
      let (lows, highs): (Vec<_>, Vec<_>) = vocabularies
        .iter()
        .map(|&(vocabulary, frequencies)| {
          let (low, high, below) = vocabulary.split_at_term(pivot);
          let high_frequencies = frequencies.get(below..).unwrap_or_default();
          (joined_with_frequencies(low, frequencies), joined_with_frequencies(high, high_frequencies))
        })
        .unzip();
      rayon::join(|| merge(lows), || merge(highs))
    }
    None => (merge(vocabularies.iter().map(terms).collect()), Default::default()),
  };
  let (mut writer, shift) = (Writer::default(), low.1.len() as u64);
  for (term, offset) in low.0.into_iter().chain(high.0.into_iter().map(|(term, offset)| (term, offset + shift))) {
    writer.push(term, offset);
  }
  let mut postings = low.1;
  postings.extend_from_slice(&high.1);
  (writer.blocks().expect("a written term index"), postings)
}

/// The median of the vocabularies' middle terms: where the merge splits.
fn median_term<'a>(vocabularies: &[(&'a Vocabulary, &[u8])]) -> Option<&'a str> {
  let mut middles: Vec<&str> = vocabularies.iter().filter_map(|(v, _)| v.middle()).collect();
  if middles.is_empty() {
    return None;
  }
  let at = middles.len() / 2;
  Some(*middles.select_nth_unstable(at).1)
}

impl Dictionary {
  /// Merges the (sorted, unique) vocabularies of `digests` into one term index: a
  /// k-way merge, so memory stays at the output plus one cursor per digest.
  /// Most comparisons never read a term from another digest's text
  /// ([`Head`]): those cache misses made a merge of 100,000 digests take
  /// minutes. Digests whose vocabulary is not strictly sorted are left out
  /// (they stay stragglers, searched directly), as are digests whose
  /// content cannot be read. Contents not yet resident are read for the
  /// build (in parallel), and only their vocabularies are kept until it
  /// ends. The merge runs as two halves split at a median term, in
  /// parallel over the same vocabularies: large shards are built one at a
  /// time, so a build holds one shard's vocabularies (~45 MB a shard at
  /// 100,000 sessions), not two.
  pub fn build(digests: &[(&str, &ColdDigest)]) -> Dictionary {
    let read: Vec<(&str, u128, MergeTerms<'_>)> = digests
      .par_iter()
      .filter_map(|(file, d)| Some((*file, d.vocabulary_fingerprint(), vocabulary_of(d.content.read().ok()?))))
      .filter(|(_, _, (vocabulary, _))| strictly_sorted(vocabulary))
      .collect();
    let vocabularies: Vec<(&Vocabulary, &[u8])> = read.iter().map(|(_, _, (v, f))| (&**v, &**f)).collect();
    let (terms, postings) = merge_split(&vocabularies, median_term(&vocabularies));
    let members =
      read.iter().map(|(file, fingerprint, _)| Member { file: file.to_string(), fingerprint: *fingerprint });
    Dictionary::assemble(members.collect(), terms, Shared::whole(postings))
  }

  fn assemble(members: Vec<Member>, terms: TermBlocks, postings: Shared) -> Dictionary {
    let mut by_file = FxHashMap::with_capacity_and_hasher(members.len(), Default::default());
    for (at, member) in members.iter().enumerate() {
      by_file.entry(file_key(&member.file)).or_insert(at as u32);
    }
    static GENERATIONS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
    let generation = GENERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Dictionary { generation, members, by_file, terms, postings }
  }

  /// The member built from `file` with this vocabulary fingerprint, if any.
  pub fn member(&self, file: &str, fingerprint: u128) -> Option<u32> {
    let member = self.by_file.get(&file_key(file)).copied()?;
    let found = &self.members[member as usize];
    (found.file == file && found.fingerprint == fingerprint).then_some(member)
  }

  pub fn members(&self) -> usize {
    self.members.len()
  }

  /// The record file of each member (tests).
  #[cfg(test)]
  pub fn member_files(&self) -> impl Iterator<Item = &str> {
    self.members.iter().map(|member| member.file.as_str())
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
    for member in &self.members {
      varint::put(&mut head, member.file.len() as u64);
      head.extend_from_slice(member.file.as_bytes());
      head.extend_from_slice(&member.fingerprint.to_le_bytes());
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
  fn read_members(head: &[u8], at: &mut usize) -> Option<Vec<Member>> {
    let count = varint::take(head, at)? as usize;
    let mut members = Vec::with_capacity(count.min(head.len()));
    for _ in 0..count {
      let len = varint::take(head, at)? as usize;
      let file = std::str::from_utf8(head.get(*at..at.checked_add(len)?)?).ok()?.to_string();
      *at += len;
      let fingerprint = u128::from_le_bytes(head.get(*at..at.checked_add(16)?)?.try_into().ok()?);
      *at += 16;
      members.push(Member { file, fingerprint });
    }
    Some(members)
  }
}

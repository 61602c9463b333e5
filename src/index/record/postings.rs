//! A hot shard's posting index: each term's (entry, term frequency) list,
//! and the entries' lengths.
//!
//! On disk the terms are a front-coded [`TermList`] (searched where it was
//! read, see its module) and everything else one
//! byte string of varints: entry ids as gaps within a list (most take one
//! byte, where a plain id takes two from entry 128 on), each list as its
//! length. Per-element postcard decoding was a third of reading a hot shard.
//! A record read from disk keeps its lists packed until a query first reads
//! one: a fresh process's first query for a rare word finds it in one shard
//! or none, and decoding every shard's lists (`medium`: 714,000 pairs, 5.7
//! MB) was a tenth of its first recall. Packed, they are one zstd frame
//! (`medium`'s hot shards: 1.71 → 0.77 MB), decompressed when first decoded
//! (the term list stays plain: a first recall searches every shard's).
//! They are checked as they are decoded
//! (walking them to check them when read was another 3 %): lists that fail
//! the check leave every term without a list and the shard damaged
//! (`HotShard::damaged`), so it is rebuilt.

use super::compression;
use super::first_use::FirstUse;
use super::term_list::TermList;
use super::vocabulary::Vocabulary;
use crate::index::varint;
use crate::tokenize::for_each_stored_term;
use rustc_hash::FxHashMap;
use serde::{de::Error as _, Deserialize, Deserializer, Serialize, Serializer};
use std::sync::Arc;

/// Term → (entry, term frequency) lists, sorted by term; document lengths
/// in tokens (at least 1, so BM25 never divides by zero). Held flat (the
/// terms as one string, the lists one after another) so a shard's postings
/// take a few allocations, not two per term.
#[derive(Debug, Clone, Default)]
pub struct Postings {
  terms: TermList,
  pub doc_lengths: Vec<u32>,
  lists: Lists,
}

/// Every term's list, one after another.
#[derive(Debug, Clone, Default, PartialEq)]
struct Decoded {
  /// Where each term's list starts in `pairs`, and one past the last.
  starts: Vec<u32>,
  pairs: Vec<(u32, u32)>,
}

impl Decoded {
  fn terms(&self) -> usize {
    self.starts.len().saturating_sub(1)
  }

  /// The list of the term at `at`.
  fn list(&self, at: usize) -> &[(u32, u32)] {
    &self.pairs[self.starts[at] as usize..self.starts[at + 1] as usize]
  }
}

/// The lists: decoded, or packed as read and decoded on first use.
#[derive(Debug, Clone)]
struct Lists {
  /// What [`pack_lists`] wrote, compressed, checked by [`walk_lists`] when
  /// decoded (empty when the lists were built in this process).
  packed: Arc<[u8]>,
  decoded: FirstUse<Decoded>,
}

impl Default for Lists {
  fn default() -> Lists {
    Lists::of(Decoded { starts: vec![0], pairs: Vec::new() })
  }
}

impl Lists {
  fn of(decoded: Decoded) -> Lists {
    Lists { packed: Arc::from([]), decoded: FirstUse::of(decoded) }
  }

  /// The lists of `terms` terms over `docs` documents, decoded once.
  fn get(&self, docs: usize, terms: usize) -> &Decoded {
    let decode = || {
      // The declared size was checked against the record's limit when read (`HotShard::fits`).
      let plain = compression::decompress(&self.packed, &compression::Alone, u64::MAX).ok()?;
      let (mut at, packed) = (0, &plain[..]);
      // The term count, which `terms` is, then the pair count. Counts are
      // checked by the walk, so the bytes bound what they reserve: a pair
      // takes two bytes at least.
      varint::take(packed, &mut at);
      let total = varint::take(packed, &mut at).unwrap_or(0).min(packed.len() as u64 / 2);
      let mut decoded = Decoded { starts: Vec::with_capacity(terms + 1), pairs: Vec::with_capacity(total as usize) };
      let walked = walk_lists(packed, docs, |at| decoded.starts.push(at), |pair| decoded.pairs.push(pair));
      decoded.starts.push(decoded.pairs.len() as u32);
      (walked == Some(terms)).then_some(decoded)
    };
    // Lists that fail their check: no term has a list (never a list cut short).
    self.decoded.get(decode, || Decoded { starts: vec![0; terms + 1], pairs: Vec::new() })
  }
}

impl PartialEq for Postings {
  fn eq(&self, other: &Self) -> bool {
    self.terms == other.terms && self.doc_lengths == other.doc_lengths && self.decoded() == other.decoded()
  }
}

impl Postings {
  /// The size the packed lists read from disk declare decompressed (`None`:
  /// not a frame that declares one, or lists built in this process).
  pub fn declared_lists_len(&self) -> Option<u64> {
    compression::declared_size(&self.lists.packed)
  }

  /// From sorted unique terms and their lists.
  fn from_lists(terms: &[String], lists: impl Iterator<Item = Vec<(u32, u32)>>, doc_lengths: Vec<u32>) -> Postings {
    let mut decoded = Decoded { starts: Vec::with_capacity(terms.len() + 1), pairs: Vec::new() };
    for list in lists {
      decoded.starts.push(decoded.pairs.len() as u32);
      decoded.pairs.extend(list);
    }
    decoded.starts.push(decoded.pairs.len() as u32);
    Postings { terms: TermList::Built(Vocabulary::from_sorted(terms)), doc_lengths, lists: Lists::of(decoded) }
  }

  fn decoded(&self) -> &Decoded {
    self.lists.get(self.doc_lengths.len(), self.terms.len())
  }

  /// How many terms have lists: every term, so counting them decodes no
  /// list.
  pub fn term_count(&self) -> usize {
    self.terms.len()
  }

  /// The list of the term at `at`.
  pub fn list(&self, at: usize) -> &[(u32, u32)] {
    self.decoded().list(at)
  }

  pub fn build<'a>(texts: impl Iterator<Item = &'a str>) -> Postings {
    // Terms are interned once per shard; a document only counts term ids.
    let mut ids: FxHashMap<String, u32> = FxHashMap::default();
    let mut lists: Vec<Vec<(u32, u32)>> = Vec::new();
    let mut doc_lengths = Vec::new();
    let mut seen: Vec<u32> = Vec::new();
    for (doc, text) in texts.enumerate() {
      seen.clear();
      let mut length = 0u32;
      for_each_stored_term(text, |term, kind| {
        let id = match ids.get(term) {
          Some(id) => *id,
          None => {
            let id = lists.len() as u32;
            ids.insert(term.to_string(), id);
            lists.push(Vec::new());
            id
          }
        };
        seen.push(id);
        length += u32::from(kind.counts_length());
      });
      doc_lengths.push(length.max(1));
      seen.sort_unstable();
      for run in seen.chunk_by(|a, b| a == b) {
        lists[run[0] as usize].push((doc as u32, run.len() as u32));
      }
    }
    let mut terms: Vec<(String, u32)> = ids.into_iter().collect();
    terms.sort_unstable();
    let ordered = terms.iter().map(|(_, id)| std::mem::take(&mut lists[*id as usize]));
    let ordered: Vec<Vec<(u32, u32)>> = ordered.collect();
    let terms: Vec<String> = terms.into_iter().map(|(term, _)| term).collect();
    Postings::from_lists(&terms, ordered.into_iter(), doc_lengths)
  }

  /// These postings with documents added after the existing ones: only the
  /// new documents are tokenized, and the lists are merged in one pass over
  /// both sorted term lists (an appended document's id is above every
  /// existing one, so each merged list is the old list, then the new).
  pub fn extended<'a>(&self, texts: impl Iterator<Item = &'a str>) -> Postings {
    let base = self.doc_lengths.len() as u32;
    let added = Postings::build(texts);
    // Only an intact shard is extended (`HotShard::intact`): its terms decode.
    let empty = Vocabulary::default();
    let (terms, added_terms) = (self.terms.vocabulary().unwrap_or(&empty), added.terms.vocabulary().unwrap_or(&empty));
    let mut text = String::with_capacity(terms.text().len() + added_terms.text().len() + 1);
    let (mine, theirs) = (self.decoded(), added.decoded());
    let mut list_starts = Vec::with_capacity(mine.starts.len() + theirs.starts.len());
    let mut pairs = Vec::with_capacity(mine.pairs.len() + theirs.pairs.len());
    let (mut old, mut new) = (terms.iter().enumerate().peekable(), added_terms.iter().enumerate().peekable());
    loop {
      let (term, from_old, from_new) = match (old.peek(), new.peek()) {
        (None, None) => break,
        (Some(&(at, term)), None) => (term, Some(at), None),
        (None, Some(&(at, term))) => (term, None, Some(at)),
        (Some(&(o, a)), Some(&(n, b))) => match a.cmp(b) {
          std::cmp::Ordering::Less => (a, Some(o), None),
          std::cmp::Ordering::Greater => (b, None, Some(n)),
          std::cmp::Ordering::Equal => (a, Some(o), Some(n)),
        },
      };
      if !list_starts.is_empty() {
        text.push('\n');
      }
      text.push_str(term);
      list_starts.push(pairs.len() as u32);
      if let Some(at) = from_old {
        pairs.extend_from_slice(self.list(at));
        old.next();
      }
      if let Some(at) = from_new {
        pairs.extend(added.list(at).iter().map(|&(doc, tf)| (doc + base, tf)));
        new.next();
      }
    }
    list_starts.push(pairs.len() as u32);
    let mut doc_lengths = Vec::with_capacity(self.doc_lengths.len() + added.doc_lengths.len());
    doc_lengths.extend_from_slice(&self.doc_lengths);
    doc_lengths.extend_from_slice(&added.doc_lengths);
    let lists = Lists::of(Decoded { starts: list_starts, pairs });
    Postings { terms: TermList::Built(Vocabulary::from_joined(text)), doc_lengths, lists }
  }

  /// The posting list of a canonical term.
  pub fn get(&self, term: &str) -> &[(u32, u32)] {
    self.list_at(self.position(term))
  }

  /// Where a canonical term is in the vocabulary: a query word's position
  /// is looked up once for its session frequency and its postings.
  pub fn position(&self, term: &str) -> Option<usize> {
    self.terms.position(term).ok()
  }

  /// The terms and lists decoded, and neither found malformed.
  pub fn intact(&self) -> bool {
    self.terms.vocabulary().is_some() && {
      self.decoded();
      !self.damaged()
    }
  }

  /// Were the terms or lists read from disk found malformed when first decoded?
  pub fn damaged(&self) -> bool {
    self.terms.damaged() || self.lists.decoded.damaged()
  }

  /// The posting list of the term at `at` ([`Postings::position`]).
  pub fn list_at(&self, at: Option<usize>) -> &[(u32, u32)] {
    at.map_or(&[], |at| self.list(at))
  }
}

/// A shard's lists as stored: term count, pair count, then per term its
/// list's length and per pair its entry id (the first of a list as is, each
/// later one as its distance from the one before, minus one) and its term
/// frequency, all varints.
fn pack_lists(decoded: &Decoded) -> Vec<u8> {
  let mut out = Vec::with_capacity(decoded.pairs.len() * 2 + decoded.starts.len() + 16);
  varint::put(&mut out, decoded.terms() as u64);
  varint::put(&mut out, decoded.pairs.len() as u64);
  for at in 0..decoded.terms() {
    let list = decoded.list(at);
    varint::put(&mut out, list.len() as u64);
    let mut next = 0u32;
    for &(doc, tf) in list {
      varint::put(&mut out, u64::from(doc - next));
      varint::put(&mut out, u64::from(tf));
      next = doc + 1;
    }
  }
  out
}

/// Walks what [`pack_lists`] wrote, handing each list's start (in pairs)
/// and each pair on; the term count when every entry id names one of `docs`
/// documents and rises within its list, the counts add up and nothing is
/// left over, else `None`. Validation and decoding are this one walk, so
/// lists that pass it decode.
fn walk_lists(bytes: &[u8], docs: usize, mut list: impl FnMut(u32), mut pair: impl FnMut((u32, u32))) -> Option<usize> {
  let mut at = 0;
  let terms = varint::take_u32(bytes, &mut at)?;
  let total = varint::take_u32(bytes, &mut at)?;
  let mut seen = 0u32;
  for _ in 0..terms {
    list(seen);
    let len = varint::take_u32(bytes, &mut at)?;
    seen = seen.checked_add(len).filter(|&seen| seen <= total)?;
    let mut next = 0u32;
    for _ in 0..len {
      let doc = next.checked_add(varint::take_u32(bytes, &mut at)?).filter(|&doc| (doc as usize) < docs)?;
      pair((doc, varint::take_u32(bytes, &mut at)?));
      next = doc + 1;
    }
  }
  (seen == total && at == bytes.len()).then_some(terms as usize)
}

/// The document lengths as stored: their count, then each.
fn pack_lengths(doc_lengths: &[u32], out: &mut Vec<u8>) {
  varint::put(out, doc_lengths.len() as u64);
  doc_lengths.iter().for_each(|&length| varint::put(out, u64::from(length)));
}

/// What [`pack_lengths`] wrote, and the bytes after it.
fn unpack_lengths(bytes: &[u8]) -> Option<(Vec<u32>, &[u8])> {
  let mut at = 0;
  let count = varint::take_u32(bytes, &mut at)? as usize;
  // Each length takes a byte at least: a damaged count asks for no more.
  let mut lengths = Vec::with_capacity(count.min(bytes.len()));
  for _ in 0..count {
    lengths.push(varint::take_u32(bytes, &mut at)?);
  }
  Some((lengths, &bytes[at..]))
}

/// JSON (diagnostics) shows the lists as they are held.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Plain {
  terms: Vocabulary,
  list_starts: Vec<u32>,
  pairs: Vec<(u32, u32)>,
  doc_lengths: Vec<u32>,
}

/// A byte string, borrowed from the record where the format allows it.
pub(super) struct Packed<'a>(pub(super) std::borrow::Cow<'a, [u8]>);

impl<'de> Deserialize<'de> for Packed<'de> {
  fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
    struct Bytes;
    impl<'de> serde::de::Visitor<'de> for Bytes {
      type Value = Packed<'de>;
      fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a byte string")
      }
      fn visit_borrowed_bytes<E: serde::de::Error>(self, bytes: &'de [u8]) -> Result<Packed<'de>, E> {
        Ok(Packed(std::borrow::Cow::Borrowed(bytes)))
      }
      fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<Packed<'de>, E> {
        Ok(Packed(std::borrow::Cow::Owned(bytes.to_vec())))
      }
    }
    deserializer.deserialize_bytes(Bytes)
  }
}

/// `bytes` serialized as a byte string (one length and the bytes), not as
/// a sequence of numbers.
pub(super) struct AsBytes<'a>(pub(super) &'a [u8]);

impl Serialize for AsBytes<'_> {
  fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_bytes(self.0)
  }
}

impl Serialize for Postings {
  fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    if serializer.is_human_readable() {
      let Decoded { starts, pairs } = self.decoded().clone();
      let terms = self.terms.vocabulary().cloned().unwrap_or_default();
      let doc_lengths = self.doc_lengths.clone();
      return Plain { terms, list_starts: starts, pairs, doc_lengths }.serialize(serializer);
    }
    let mut bytes = Vec::new();
    pack_lengths(&self.doc_lengths, &mut bytes);
    // Lists still packed as read are written as they are.
    match self.lists.decoded.decoded() {
      Some(decoded) if self.lists.packed.is_empty() => bytes.extend(compression::compress(&pack_lists(decoded), None)),
      _ => bytes.extend_from_slice(&self.lists.packed),
    }
    (&self.terms, AsBytes(&bytes)).serialize(serializer)
  }
}

impl<'de> Deserialize<'de> for Postings {
  fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
    if deserializer.is_human_readable() {
      let Plain { terms, list_starts, pairs, doc_lengths } = Plain::deserialize(deserializer)?;
      let terms = TermList::Built(terms);
      return Ok(Postings { terms, doc_lengths, lists: Lists::of(Decoded { starts: list_starts, pairs }) });
    }
    let (terms, packed): (Packed<'de>, Packed<'de>) = Deserialize::deserialize(deserializer)?;
    let terms = TermList::read(&terms.0).ok_or_else(|| D::Error::custom("malformed term list"))?;
    let malformed = || D::Error::custom("malformed posting lists");
    let (doc_lengths, lists) = unpack_lengths(&packed.0).ok_or_else(malformed)?;
    // Their count is checked against the terms' when they are decompressed and walked.
    Ok(Postings { terms, doc_lengths, lists: Lists { packed: Arc::from(lists), decoded: FirstUse::pending() } })
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn postings_count_terms_per_entry() {
    let postings = Postings::build(["Timeout in CI", "ci ci timeout", ""].into_iter());
    assert_eq!(postings.get("ci"), &[(0, 1), (1, 2)]);
    assert_eq!(postings.get("timeout"), &[(0, 1), (1, 1)]);
    assert_eq!(postings.get("missing"), &[] as &[(u32, u32)]);
    assert_eq!(postings.doc_lengths, [3, 3, 1]);
    assert!(postings.terms.vocabulary().unwrap().to_vec().windows(2).all(|w| w[0] < w[1]));
  }

  #[test]
  fn extending_equals_building_at_once() {
    let texts = ["alpha beta", "beta gamma", "gamma gamma delta", "alpha"];
    let extended = Postings::build(texts[..2].iter().copied()).extended(texts[2..].iter().copied());
    assert_eq!(extended, Postings::build(texts.iter().copied()));
  }

  proptest::proptest! {
    #![proptest_config(crate::testing::proptest_config(256))]

    /// Terms drawn from a small alphabet, so appended documents both repeat
    /// existing terms and bring new ones on either side of them.
    #[test]
    fn extending_at_any_cut_equals_building_at_once(
      texts in proptest::collection::vec("([a-e]{1,2}|[xyz]) ?([a-e]{1,2} ?){0,4}", 0..12),
      cut in 0..12usize,
    ) {
      let cut = cut.min(texts.len());
      let built = Postings::build(texts.iter().map(String::as_str));
      let head = Postings::build(texts[..cut].iter().map(String::as_str));
      let extended = head.extended(texts[cut..].iter().map(String::as_str));
      proptest::prop_assert_eq!(extended.terms.vocabulary().unwrap().to_vec(), built.terms.vocabulary().unwrap().to_vec());
      proptest::prop_assert_eq!(extended, built);
    }
  }

  #[test]
  fn postings_round_trip_packed_and_as_json() {
    let postings = Postings::build(["alpha beta beta", "", "beta gamma", "alpha"].into_iter());
    let bytes = postcard::to_allocvec(&postings).unwrap();
    assert_eq!(postcard::from_bytes::<Postings>(&bytes).unwrap(), postings);
    let json = serde_json::to_value(&postings).unwrap();
    assert_eq!(json["pairs"], serde_json::json!([[0, 1], [3, 1], [0, 2], [2, 1], [2, 1]]));
    assert_eq!(serde_json::from_value::<Postings>(json).unwrap(), postings);
  }

  /// The packed bytes of `postings` (what a record holds after the terms)
  /// with `lists` (plain) for its lists.
  fn packed_with(postings: &Postings, lists: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::new();
    pack_lengths(&postings.doc_lengths, &mut bytes);
    bytes.extend(compression::compress(lists, None));
    bytes
  }

  fn read(terms: &[&str], bytes: &[u8]) -> Result<Postings, postcard::Error> {
    let terms = TermList::Built(Vocabulary::from_sorted(&terms.iter().map(|t| t.to_string()).collect::<Vec<_>>()));
    postcard::from_bytes::<Postings>(&postcard::to_allocvec(&(terms, AsBytes(bytes))).unwrap())
  }

  /// Refused when read, or found damaged when decoded, with no list for any term.
  fn refused(terms: &[&str], bytes: &[u8]) -> bool {
    let Ok(postings) = read(terms, bytes) else { return true };
    assert!(!postings.damaged(), "not known before the lists are decoded");
    let lists: Vec<&[(u32, u32)]> = (0..terms.len()).map(|at| postings.list(at)).collect();
    postings.damaged() && lists.iter().all(|list| list.is_empty())
  }

  #[test]
  fn damaged_packed_lists_are_refused_not_trusted() {
    let postings = Postings::build(["alpha beta", "beta"].into_iter());
    let lists = pack_lists(postings.decoded());
    let bytes = packed_with(&postings, &lists);
    assert_eq!(read(&["alpha", "beta"], &bytes).unwrap(), postings);
    assert!(!refused(&["alpha", "beta"], &bytes));
    // Cut short, one byte too many, an entry id past the last document.
    assert!(refused(&["alpha", "beta"], &packed_with(&postings, &lists[..lists.len() - 1])));
    assert!(refused(&["alpha", "beta"], &packed_with(&postings, &[lists.as_slice(), &[0]].concat())));
    let mut past = lists.clone();
    let last_gap = past.len() - 2;
    past[last_gap] = 5;
    assert!(refused(&["alpha", "beta"], &packed_with(&postings, &past)));
    // Counts far beyond the bytes ask for no allocation.
    assert!(refused(&[], &[0xff, 0xff, 0xff, 0xff, 0x0f]));
    assert!(refused(&["alpha"], &packed_with(&postings, &[0x01, 0xff, 0xff, 0xff, 0xff, 0x0f])));
    // Terms and lists that differ in number; lists that are not a frame, or a cut one.
    assert!(refused(&["alpha"], &bytes));
    let mut plain = Vec::new();
    pack_lengths(&postings.doc_lengths, &mut plain);
    plain.extend_from_slice(&lists);
    assert!(refused(&["alpha", "beta"], &plain));
    assert!(refused(&["alpha", "beta"], &bytes[..bytes.len() - 1]));
  }

  #[test]
  fn lists_read_stay_packed_until_used_and_write_back_the_same() {
    let postings = Postings::build(["alpha beta beta", "gamma", "beta"].into_iter());
    let bytes = postcard::to_allocvec(&postings).unwrap();
    let read: Postings = postcard::from_bytes(&bytes).unwrap();
    assert!(read.lists.decoded.decoded().is_none());
    assert_eq!(postcard::to_allocvec(&read).unwrap(), bytes);
    assert_eq!(read.get("beta"), &[(0, 2), (2, 1)]);
    assert!(read.lists.decoded.decoded().is_some());
    assert_eq!(postcard::to_allocvec(&read).unwrap(), bytes);
  }

  proptest::proptest! {
    #![proptest_config(crate::testing::proptest_config(256))]

    #[test]
    fn any_postings_round_trip_packed(texts in proptest::collection::vec("([a-e]{1,2}|[xyz]) ?([a-e]{1,2} ?){0,4}", 0..40)) {
      let postings = Postings::build(texts.iter().map(String::as_str));
      let back: Postings = postcard::from_bytes(&postcard::to_allocvec(&postings).unwrap()).unwrap();
      proptest::prop_assert_eq!(back, postings);
    }
  }
}

//! A hot shard's posting index: each term's (entry, term frequency) list,
//! and the entries' lengths.
//!
//! On disk the terms are a front-coded [`Vocabulary`] and everything else one
//! byte string of varints ([`pack`]): entry ids as gaps within a list (most
//! take one byte, where a plain id takes two from entry 128 on), each list
//! as its length. A fresh process decodes it in one pass with no per-element
//! serde call; per-element postcard decoding was a third of reading a hot
//! shard.

use super::vocabulary::Vocabulary;
use crate::index::varint;
use crate::tokenize::for_each_stored_term;
use rustc_hash::FxHashMap;
use serde::{de::Error as _, Deserialize, Deserializer, Serialize, Serializer};

/// Term → (entry, term frequency) lists, sorted by term; document lengths
/// in tokens (at least 1, so BM25 never divides by zero). Held flat (the
/// terms as one string, the lists one after another) so a fresh process
/// decodes a shard's postings in a few allocations, not two per term.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Postings {
  terms: Vocabulary,
  /// Where each term's list starts in `pairs`, and one past the last.
  list_starts: Vec<u32>,
  pairs: Vec<(u32, u32)>,
  pub doc_lengths: Vec<u32>,
}

impl Postings {
  /// From sorted unique terms and their lists.
  fn from_lists(terms: &[String], lists: impl Iterator<Item = Vec<(u32, u32)>>, doc_lengths: Vec<u32>) -> Postings {
    let mut list_starts = Vec::with_capacity(terms.len() + 1);
    let mut pairs = Vec::new();
    for list in lists {
      list_starts.push(pairs.len() as u32);
      pairs.extend(list);
    }
    list_starts.push(pairs.len() as u32);
    Postings { terms: Vocabulary::from_sorted(terms), list_starts, pairs, doc_lengths }
  }

  /// How many terms have lists.
  pub fn term_count(&self) -> usize {
    self.list_starts.len().saturating_sub(1)
  }

  /// The list of the term at `at`.
  pub fn list(&self, at: usize) -> &[(u32, u32)] {
    &self.pairs[self.list_starts[at] as usize..self.list_starts[at + 1] as usize]
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
    let mut text = String::with_capacity(self.terms.text().len() + added.terms.text().len() + 1);
    let mut list_starts = Vec::with_capacity(self.list_starts.len() + added.list_starts.len());
    let mut pairs = Vec::with_capacity(self.pairs.len() + added.pairs.len());
    let (mut old, mut new) = (self.terms.iter().enumerate().peekable(), added.terms.iter().enumerate().peekable());
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
    Postings { terms: Vocabulary::from_joined(text), list_starts, pairs, doc_lengths }
  }

  /// The posting list of a canonical term.
  pub fn get(&self, term: &str) -> &[(u32, u32)] {
    self.list_at(self.position(term))
  }

  /// Where a canonical term is in the vocabulary: a query word's position
  /// is looked up once for its session frequency and its postings.
  pub fn position(&self, term: &str) -> Option<usize> {
    self.terms.binary_search(term).ok()
  }

  /// The posting list of the term at `at` ([`Postings::position`]).
  pub fn list_at(&self, at: Option<usize>) -> &[(u32, u32)] {
    at.map_or(&[], |at| self.list(at))
  }
}

/// The lists and lengths as stored: document count, each document's length,
/// term count, pair count, then per term its list's length and per pair
/// the gap from the previous entry id (the first: the id plus one) and the
/// term frequency, all varints.
fn pack(postings: &Postings) -> Vec<u8> {
  let mut out = Vec::with_capacity(postings.pairs.len() * 2 + postings.doc_lengths.len() * 2 + 16);
  varint::put(&mut out, postings.doc_lengths.len() as u64);
  postings.doc_lengths.iter().for_each(|&length| varint::put(&mut out, u64::from(length)));
  varint::put(&mut out, postings.term_count() as u64);
  varint::put(&mut out, postings.pairs.len() as u64);
  for at in 0..postings.term_count() {
    let list = postings.list(at);
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

/// List starts, pairs and document lengths.
type Unpacked = (Vec<u32>, Vec<(u32, u32)>, Vec<u32>);

/// What [`pack`] wrote, checked: every entry id names a document and rises
/// within its list, the counts add up, nothing is left over. `None`
/// otherwise (the record is then rebuilt).
fn unpack(bytes: &[u8]) -> Option<Unpacked> {
  let mut at = 0;
  let docs = varint::take_u32(bytes, &mut at)?;
  // Every count below is bounded by the bytes left (a value takes at least
  // one), so a damaged count cannot ask for a huge allocation.
  let bounded = |count: u32, at: usize, per: usize| {
    (count as usize).checked_mul(per).filter(|&n| n <= bytes.len() - at).map(|_| count as usize)
  };
  let mut doc_lengths = Vec::with_capacity(bounded(docs, at, 1)?);
  for _ in 0..docs {
    doc_lengths.push(varint::take_u32(bytes, &mut at)?);
  }
  let terms = varint::take_u32(bytes, &mut at)?;
  let total = varint::take_u32(bytes, &mut at)?;
  let mut list_starts = Vec::with_capacity(bounded(terms, at, 1)? + 1);
  let mut pairs = Vec::with_capacity(bounded(total, at, 2)?);
  for _ in 0..terms {
    list_starts.push(pairs.len() as u32);
    let len = varint::take_u32(bytes, &mut at)?;
    let mut next = 0u32;
    for _ in 0..len {
      let doc = next.checked_add(varint::take_u32(bytes, &mut at)?).filter(|&doc| doc < docs)?;
      pairs.push((doc, varint::take_u32(bytes, &mut at)?));
      next = doc + 1;
    }
  }
  list_starts.push(pairs.len() as u32);
  (pairs.len() == total as usize && at == bytes.len()).then_some((list_starts, pairs, doc_lengths))
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

/// The packed lists' bytes, borrowed from the record where the format
/// allows it.
struct Packed<'a>(std::borrow::Cow<'a, [u8]>);

impl<'de> Deserialize<'de> for Packed<'de> {
  fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
    struct Bytes;
    impl<'de> serde::de::Visitor<'de> for Bytes {
      type Value = Packed<'de>;
      fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("packed posting lists")
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

impl Serialize for Postings {
  fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    if serializer.is_human_readable() {
      let (terms, list_starts) = (self.terms.clone(), self.list_starts.clone());
      return Plain { terms, list_starts, pairs: self.pairs.clone(), doc_lengths: self.doc_lengths.clone() }
        .serialize(serializer);
    }
    (&self.terms, serde_bytes_of(&pack(self))).serialize(serializer)
  }
}

/// `bytes` serialized as a byte string (one length and the bytes), not as
/// a sequence of numbers.
fn serde_bytes_of(bytes: &[u8]) -> impl Serialize + '_ {
  struct AsBytes<'a>(&'a [u8]);
  impl Serialize for AsBytes<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
      serializer.serialize_bytes(self.0)
    }
  }
  AsBytes(bytes)
}

impl<'de> Deserialize<'de> for Postings {
  fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
    if deserializer.is_human_readable() {
      let Plain { terms, list_starts, pairs, doc_lengths } = Plain::deserialize(deserializer)?;
      return Ok(Postings { terms, list_starts, pairs, doc_lengths });
    }
    let (terms, packed): (Vocabulary, Packed<'de>) = Deserialize::deserialize(deserializer)?;
    let (list_starts, pairs, doc_lengths) =
      unpack(&packed.0).ok_or_else(|| D::Error::custom("malformed posting lists"))?;
    if list_starts.len() != terms.len() + 1 {
      return Err(D::Error::custom("posting lists and terms differ in number"));
    }
    Ok(Postings { terms, list_starts, pairs, doc_lengths })
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
    assert!(postings.terms.to_vec().windows(2).all(|w| w[0] < w[1]));
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
      proptest::prop_assert_eq!(extended.terms.to_vec(), built.terms.to_vec());
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

  #[test]
  fn damaged_packed_lists_are_refused_not_trusted() {
    let postings = Postings::build(["alpha beta", "beta"].into_iter());
    let packed = pack(&postings);
    assert!(unpack(&packed).is_some());
    // Cut short, one byte too many, an entry id past the last document.
    assert!(unpack(&packed[..packed.len() - 1]).is_none());
    assert!(unpack(&[packed.as_slice(), &[0]].concat()).is_none());
    let mut past = packed.clone();
    let last_gap = past.len() - 2;
    past[last_gap] = 5;
    assert!(unpack(&past).is_none());
    // A count far beyond the bytes asks for no allocation.
    assert!(unpack(&[0x01, 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f]).is_none());
    // Terms and lists that differ in number.
    let fewer_terms = (Vocabulary::from_sorted(&["alpha".to_string()]), serde_bytes_of(&packed));
    assert!(postcard::from_bytes::<Postings>(&postcard::to_allocvec(&fewer_terms).unwrap()).is_err());
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

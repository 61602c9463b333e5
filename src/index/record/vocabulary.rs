//! A sorted set of terms as one newline-joined string: the vocabulary of a
//! cold digest and the term list of a hot shard's postings. On disk it is
//! front-coded ([`front_code`]): sorted terms share long prefixes, and the
//! vocabulary is most of a cold record.

use super::cold::Lazy;
use serde::{Deserialize, Serialize};

/// Sorted unique terms stored as one newline-joined string: a fresh process
/// decodes a digest's vocabulary as one allocation instead of one per term
/// (canonical terms never contain a newline). Term boundaries are found on
/// first use. JSON (diagnostics) shows it as an array.
#[derive(Debug, Default)]
pub struct Vocabulary {
  text: String,
  starts: Lazy<Vec<u32>>,
}

impl Vocabulary {
  pub fn from_sorted(terms: &[String]) -> Vocabulary {
    Vocabulary { text: terms.join("\n"), starts: Lazy::default() }
  }

  /// From sorted unique terms already joined by newlines.
  pub fn from_joined(text: String) -> Vocabulary {
    Vocabulary { text, starts: Lazy::default() }
  }

  fn starts(&self) -> &[u32] {
    self.starts.get_or_init(|| {
      if self.text.is_empty() {
        return Vec::new();
      }
      std::iter::once(0).chain(memchr::memchr_iter(b'\n', self.text.as_bytes()).map(|at| at as u32 + 1)).collect()
    })
  }

  /// The terms joined by newlines (what the fingerprint hashes).
  pub fn text(&self) -> &str {
    &self.text
  }

  pub fn len(&self) -> usize {
    self.starts().len()
  }

  pub fn is_empty(&self) -> bool {
    self.text.is_empty()
  }

  pub fn get(&self, index: usize) -> &str {
    &self.text[self.span(index)]
  }

  fn span(&self, index: usize) -> std::ops::Range<usize> {
    let starts = self.starts();
    let end = starts.get(index + 1).map_or(self.text.len(), |next| *next as usize - 1);
    starts[index] as usize..end
  }

  /// The term holding the byte `numerator / denominator` of the way into
  /// the text (its midpoint for 1/2), found without the term offsets (which
  /// a merge of thousands of vocabularies would build for each).
  pub fn term_at_fraction(&self, numerator: usize, denominator: usize) -> Option<&str> {
    let at = self.text.len() * numerator / denominator.max(1);
    let start = memchr::memrchr(b'\n', &self.text.as_bytes()[..at]).map_or(0, |at| at + 1);
    self.text[start..].split('\n').next().filter(|term| !term.is_empty())
  }

  pub fn iter(&self) -> impl Iterator<Item = &str> + Clone {
    terms_in(&self.text)
  }

  pub fn binary_search(&self, term: &str) -> Result<usize, usize> {
    let (mut low, mut high) = (0, self.len());
    while low < high {
      let middle = (low + high) / 2;
      // Bytes: UTF-8 orders as its code points do, without the char
      // boundary checks a `str` slice makes.
      match self.text.as_bytes()[self.span(middle)].cmp(term.as_bytes()) {
        std::cmp::Ordering::Less => low = middle + 1,
        std::cmp::Ordering::Greater => high = middle,
        std::cmp::Ordering::Equal => return Ok(middle),
      }
    }
    Err(low)
  }

  /// The first `count` terms.
  pub fn prefix(&self, count: usize) -> Vocabulary {
    if count == 0 {
      return Vocabulary::default();
    }
    let end = self.starts().get(count).map_or(self.text.len(), |next| *next as usize - 1);
    Vocabulary { text: self.text[..end].to_string(), starts: Lazy::default() }
  }

  pub fn to_vec(&self) -> Vec<String> {
    self.iter().map(str::to_string).collect()
  }
}

/// The terms of newline-joined `text` (a vocabulary's, or a run of it such
/// as [`split_joined`] gives): none when it is empty.
pub fn terms_in(text: &str) -> impl Iterator<Item = &str> + Clone {
  text.split('\n').filter(move |_| !text.is_empty())
}

/// The terms of newline-joined sorted `text` (a vocabulary's, or a run of
/// it) below `pivot` and those from it on, as two newline-joined texts, and
/// how many terms the first holds. Found by bisecting the bytes, reading
/// about log₂ of the text's length terms and building no term offsets: a
/// merge cut at a term compared every term below it with the pivot, twice
/// (~3 % of a cold build).
pub fn split_joined<'a>(text: &'a str, pivot: &str) -> (&'a str, &'a str, usize) {
  let bytes = text.as_bytes();
  let line_end = |start: usize| memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |at| start + at);
  // Every term starting before `low` is below the pivot; the term at `high`
  // (a term start, or the end) is not.
  let (mut low, mut high) = (0, bytes.len());
  while low < high {
    let middle = low + (high - low) / 2;
    let start = match middle {
      0 => 0,
      _ if bytes[middle - 1] == b'\n' => middle,
      _ => (line_end(middle) + 1).min(bytes.len()),
    };
    // No term starts in `middle..high`: the one holding `middle` decides.
    let start = match start < high {
      true => start,
      false => memchr::memrchr(b'\n', &bytes[low..middle]).map_or(low, |at| low + at + 1),
    };
    let end = line_end(start);
    if &bytes[start..end] < pivot.as_bytes() {
      low = (end + 1).min(bytes.len());
    } else {
      high = start;
    }
  }
  let split = low.min(high);
  let below = match split {
    0 => 0,
    _ if split == bytes.len() => memchr::memchr_iter(b'\n', bytes).count() + 1,
    _ => memchr::memchr_iter(b'\n', &bytes[..split]).count(),
  };
  let low_text = &text[..split.saturating_sub(usize::from(split < bytes.len()))];
  (low_text, &text[split..], below)
}

/// A term's first 8 bytes, big-endian, zero-padded: a lesser key is a
/// lesser term, and two terms of one length up to 8 bytes with equal keys
/// are equal. Merges and term sets compare these before reading a term's
/// bytes, which are often a cache miss away.
pub(crate) fn order_key(term: impl AsRef<[u8]>) -> u64 {
  let term = term.as_ref();
  let bytes = &term[..term.len().min(8)];
  let mut padded = [0u8; 8];
  padded[..bytes.len()].copy_from_slice(bytes);
  u64::from_be_bytes(padded)
}

/// A term as the tables that number terms (a session's sums, a dictionary
/// merge) look it up: its [`order_key`] and hash, taken once per
/// occurrence.
#[derive(Clone, Copy)]
pub(crate) struct TermLookup<'a> {
  pub(crate) key: u64,
  pub(crate) hash: u64,
  term: &'a str,
}

impl<'a> TermLookup<'a> {
  #[inline]
  pub(crate) fn new(term: &'a str) -> TermLookup<'a> {
    TermLookup { key: order_key(term), hash: term_hash(term), term }
  }

  /// Is the known term with `key` and `len` this one? Equal keys and
  /// lengths decide a term of at most 8 bytes (the key holds it whole);
  /// only a longer one reads the known term's bytes (`bytes`), which often
  /// lie a cache miss away.
  #[inline]
  pub(crate) fn is<'b>(&self, key: u64, len: usize, bytes: impl FnOnce() -> &'b [u8]) -> bool {
    key == self.key && len == self.term.len() && (len <= 8 || bytes() == self.term.as_bytes())
  }
}

/// The hash [`TermLookup`] files a term under.
#[inline]
pub(crate) fn term_hash(term: &str) -> u64 {
  use std::hash::BuildHasher;
  rustc_hash::FxBuildHasher.hash_one(term)
}

impl Clone for Vocabulary {
  fn clone(&self) -> Self {
    Vocabulary { text: self.text.clone(), starts: Lazy::default() }
  }
}

impl PartialEq for Vocabulary {
  fn eq(&self, other: &Self) -> bool {
    self.text == other.text
  }
}

impl Serialize for Vocabulary {
  fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    if serializer.is_human_readable() {
      serializer.collect_seq(self.iter())
    } else {
      serializer.serialize_bytes(&front_code(&self.text))
    }
  }
}

impl<'de> Deserialize<'de> for Vocabulary {
  fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
    if deserializer.is_human_readable() {
      Ok(Vocabulary::from_sorted(&Vec::<String>::deserialize(deserializer)?))
    } else {
      deserializer.deserialize_bytes(FrontCoded)
    }
  }
}

/// The longest prefix a term takes from the term before it: one byte says
/// how much (a longer shared prefix is written out again).
const MAX_SHARED: usize = u8::MAX as usize;

/// How much of `term` front coding takes from the `previous` term: their
/// common prefix, up to [`MAX_SHARED`] bytes.
pub(super) fn shared_prefix(previous: &[u8], term: &[u8]) -> usize {
  previous.iter().zip(term).take(MAX_SHARED).take_while(|(a, b)| a == b).count()
}

/// Where one front-coded term (`shared` bytes from the term before it, then
/// `rest`) stands against `term`, when every term before it is below `term`
/// and the last one shares `matched` bytes with it.
pub(crate) enum Against {
  Equal,
  Past,
  /// Below `term`, sharing this many bytes with it.
  Below(usize),
}

/// Searching front-coded terms in order without rebuilding any: a term
/// sharing more with the one before than that one matched of `term` is
/// below `term` too; otherwise its rest decides from `shared` on (not
/// `matched`: a shared length may be capped, see [`MAX_SHARED`]).
pub(crate) fn against(shared: usize, rest: &[u8], matched: usize, term: &[u8]) -> Against {
  if shared > matched {
    return Against::Below(matched);
  }
  let more = rest.iter().zip(&term[shared..]).take_while(|(a, b)| a == b).count();
  match (more == rest.len(), shared + more == term.len()) {
    (true, true) => Against::Equal,
    (false, true) => Against::Past,
    (false, false) if rest[more] > term[shared + more] => Against::Past,
    _ => Against::Below(shared + more),
  }
}

/// `text`'s terms front-coded: each term as the length of the prefix it
/// shares with the term before it (one byte), the rest of its bytes, and a
/// newline (terms never hold one). Sorted terms share most of their bytes
/// with their neighbour; any text (sorted or not) decodes back exactly.
fn front_code(text: &str) -> Vec<u8> {
  let mut out = Vec::with_capacity(text.len() / 2);
  if text.is_empty() {
    return out;
  }
  let mut previous: &[u8] = &[];
  for term in text.as_bytes().split(|&b| b == b'\n') {
    let shared = shared_prefix(previous, term);
    out.push(shared as u8);
    out.extend_from_slice(&term[shared..]);
    out.push(b'\n');
    previous = term;
  }
  out
}

/// The newline-joined text of front-coded terms; `None` when the bytes are
/// not what [`front_code`] writes (a prefix longer than the term before it,
/// a term without its newline, text that is not UTF-8).
pub(super) fn front_decode(bytes: &[u8]) -> Option<String> {
  let mut text: Vec<u8> = Vec::with_capacity(bytes.len() * 2);
  let (mut at, mut previous) = (0, 0..0);
  while at < bytes.len() {
    let shared = usize::from(bytes[at]);
    let end = at + 1 + memchr::memchr(b'\n', &bytes[at + 1..])?;
    if shared > previous.len() {
      return None;
    }
    if at > 0 {
      text.push(b'\n');
    }
    let start = text.len();
    text.extend_from_within(previous.start..previous.start + shared);
    text.extend_from_slice(&bytes[at + 1..end]);
    previous = start..text.len();
    at = end + 1;
  }
  String::from_utf8(text).ok()
}

/// Reads a front-coded vocabulary, borrowed or owned bytes alike.
struct FrontCoded;

impl serde::de::Visitor<'_> for FrontCoded {
  type Value = Vocabulary;

  fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
    f.write_str("front-coded vocabulary bytes")
  }

  fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<Vocabulary, E> {
    let text = front_decode(bytes).ok_or_else(|| E::custom("malformed front-coded vocabulary"))?;
    Ok(Vocabulary::from_joined(text))
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn vocabularies_find_terms_and_keep_prefixes() {
    let terms: Vec<String> = ["a", "bb", "c", "dd"].iter().map(|t| t.to_string()).collect();
    let vocabulary = Vocabulary::from_sorted(&terms);
    assert_eq!((vocabulary.len(), vocabulary.get(1), vocabulary.binary_search("c")), (4, "bb", Ok(2)));
    assert_eq!(vocabulary.binary_search("b"), Err(1));
    assert_eq!(vocabulary.prefix(2).to_vec(), ["a", "bb"]);
    assert!(vocabulary.prefix(0).is_empty());
    assert_eq!(vocabulary.prefix(0).len(), 0);
    assert_eq!(vocabulary.prefix(9), vocabulary);
    assert!(Vocabulary::default().iter().next().is_none());
    let middle = |v: &Vocabulary| v.term_at_fraction(1, 2).map(str::to_string);
    assert_eq!(
      (middle(&vocabulary), middle(&Vocabulary::from_joined("abc".into()))),
      (Some("bb".into()), Some("abc".into()))
    );
    assert_eq!(middle(&Vocabulary::default()), None);
    let at = |numerator| vocabulary.term_at_fraction(numerator, 4);
    assert_eq!([at(0), at(1), at(3), at(4)], [Some("a"), Some("bb"), Some("c"), Some("dd")], "of a\\nbb\\nc\\ndd");
    let bytes = postcard::to_allocvec(&vocabulary).unwrap();
    assert_eq!(postcard::from_bytes::<Vocabulary>(&bytes).unwrap(), vocabulary);
    assert_eq!(serde_json::to_string(&vocabulary).unwrap(), r#"["a","bb","c","dd"]"#);
  }

  #[test]
  fn vocabularies_are_front_coded_on_disk() {
    let terms: Vec<String> =
      ["parse", "parsed", "parser", "session", "sessions"].iter().map(|t| t.to_string()).collect();
    assert_eq!(front_code(&terms.join("\n")), b"\0parse\n\x05d\n\x05r\n\0session\n\x07s\n");
    let vocabulary = Vocabulary::from_sorted(&terms);
    let bytes = postcard::to_allocvec(&vocabulary).unwrap();
    assert_eq!(bytes.len(), 1 + 25, "a length byte, then 25 bytes for 36 of text");
    assert_eq!(postcard::from_bytes::<Vocabulary>(&bytes).unwrap().to_vec(), terms);
    // A shared prefix past the one byte's reach is written out again.
    let long = ["x".repeat(300), format!("{}y", "x".repeat(300))];
    assert_eq!(front_decode(&front_code(&long.join("\n"))).unwrap(), long.join("\n"));
    assert_eq!(front_code(""), b"");
    assert_eq!(front_decode(b""), Some(String::new()));
  }

  #[test]
  fn malformed_front_coding_is_an_error() {
    assert_eq!(front_decode(b"\0ab\n\x03c\n"), None, "a prefix longer than the term before it");
    assert_eq!(front_decode(b"\0ab"), None, "a term without its newline");
    assert_eq!(front_decode(b"\0\xC3\n"), None, "not UTF-8");
    assert!(postcard::from_bytes::<Vocabulary>(&[3, 9, b'a', b'\n']).is_err());
  }

  use proptest::prelude::*;

  proptest! {
    #[test]
    fn a_split_at_a_term_is_the_terms_below_it_and_the_rest(
      mut terms in proptest::collection::vec("[a-c\u{e9}]{1,5}", 0..40),
      pivot in "[a-c\u{e9}]{0,5}",
    ) {
      terms.sort();
      terms.dedup();
      let vocabulary = Vocabulary::from_sorted(&terms);
      let (low, high, below) = split_joined(vocabulary.text(), &pivot);
      let expected = terms.iter().filter(|t| t.as_str() < pivot.as_str()).count();
      prop_assert_eq!(below, expected);
      prop_assert_eq!(low, terms[..expected].join("\n"));
      prop_assert_eq!(high, terms[expected..].join("\n"));
    }

    #[test]
    fn any_text_decodes_to_itself(mut terms in proptest::collection::vec("[a-c\u{e9}\u{4e2d}_]{0,6}", 0..40), sorted in any::<bool>()) {
      if sorted {
        terms.sort();
        terms.dedup();
      }
      let text = terms.join("\n");
      prop_assert_eq!(front_decode(&front_code(&text)), Some(text.clone()));
      let vocabulary = Vocabulary::from_joined(text);
      prop_assert_eq!(postcard::from_bytes::<Vocabulary>(&postcard::to_allocvec(&vocabulary).unwrap()).unwrap(), vocabulary);
    }
  }
}

//! A hot shard's term list: front-coded on disk as a vocabulary is, with a
//! whole term every [`RESTART`] terms and where each of those starts. A
//! shard read from its record finds a word by binary search over the whole
//! terms and a walk of at most [`RESTART`] terms after one, without decoding
//! the list: a fresh process's first recall asks every hot shard for a word
//! or two, and decoding their term lists was a tenth of its work. The list
//! is decoded only when something needs all of it (an append, JSON).
//!
//! Bytes: the term count, the restart count and each restart's offset in
//! the terms as its distance from the one before (varints), then the
//! front-coded terms (a restart shares nothing with the term before it).

use super::vocabulary::{against, front_decode, order_key, shared_prefix, Against, Vocabulary};
use crate::index::varint;
use serde::{Serialize, Serializer};
use std::cmp::Ordering;
use std::sync::OnceLock;

/// How many terms a restart's whole term leads: a lookup walks at most these.
const RESTART: usize = 16;

#[derive(Debug)]
pub enum TermList {
  /// Built in this process: searched and written from the vocabulary.
  Built(Vocabulary),
  Read(Read),
}

/// A term list as read from a record.
#[derive(Debug)]
pub struct Read {
  count: usize,
  /// Where each restart's term starts in the front-coded terms.
  restarts: Vec<u32>,
  /// Each restart term's first 8 bytes (as [`order_key`]): the binary
  /// search compares these and reads a term only on a tie. Reading each
  /// restart's term was a cache miss or two per step, and lookups (one per
  /// hot shard and query word) a seventh of a warm common-word call.
  keys: Vec<u64>,
  /// The bytes as read (written back as they are), the terms from `front`.
  bytes: Box<[u8]>,
  front: usize,
  /// `None`: the terms do not decode to `count` UTF-8 terms (found only when
  /// decoded); lookups then go on in place.
  decoded: OnceLock<Option<Vocabulary>>,
}

impl Default for TermList {
  fn default() -> TermList {
    TermList::Built(Vocabulary::default())
  }
}

impl Clone for TermList {
  fn clone(&self) -> TermList {
    match self {
      TermList::Built(vocabulary) => TermList::Built(vocabulary.clone()),
      TermList::Read(read) => TermList::Read(Read {
        count: read.count,
        restarts: read.restarts.clone(),
        keys: read.keys.clone(),
        bytes: read.bytes.clone(),
        front: read.front,
        decoded: OnceLock::new(),
      }),
    }
  }
}

impl PartialEq for TermList {
  fn eq(&self, other: &TermList) -> bool {
    self.vocabulary() == other.vocabulary()
  }
}

impl TermList {
  /// A term list as [`encode`] wrote it; `None` unless its counts agree and
  /// every restart is a whole term inside the bytes.
  pub fn read(bytes: &[u8]) -> Option<TermList> {
    let mut at = 0;
    let count = usize::try_from(varint::take(bytes, &mut at)?).ok()?;
    let blocks = usize::try_from(varint::take(bytes, &mut at)?).ok()?;
    if blocks != count.div_ceil(RESTART) {
      return None;
    }
    let mut restarts = Vec::with_capacity(blocks.min(bytes.len()));
    let mut offset = 0u64;
    for block in 0..blocks {
      let gap = varint::take(bytes, &mut at)?;
      if block > 0 && gap == 0 {
        return None;
      }
      offset = offset.checked_add(gap)?;
      restarts.push(u32::try_from(offset).ok()?);
    }
    let front = &bytes[at..];
    let whole = |&offset: &u32| front.get(offset as usize) == Some(&0);
    if restarts.first().is_some_and(|&first| first != 0) || !restarts.iter().all(whole) {
      return None;
    }
    let keys = restarts.iter().map(|&offset| order_key(restart_term(front, offset))).collect();
    let (bytes, front, decoded) = (Box::from(bytes), at, OnceLock::new());
    Some(TermList::Read(Read { count, restarts, keys, bytes, front, decoded }))
  }

  pub fn len(&self) -> usize {
    match self {
      TermList::Built(vocabulary) => vocabulary.len(),
      TermList::Read(read) => read.count,
    }
  }

  /// The terms decoded; `None` when read terms do not decode.
  pub fn vocabulary(&self) -> Option<&Vocabulary> {
    match self {
      TermList::Built(vocabulary) => Some(vocabulary),
      TermList::Read(read) => read.decoded.get_or_init(|| read.decode()).as_ref(),
    }
  }

  /// Were read terms found not to decode?
  pub fn damaged(&self) -> bool {
    matches!(self, TermList::Read(read) if matches!(read.decoded.get(), Some(None)))
  }

  /// Where `term` is, as [`Vocabulary::binary_search`] says (positions are
  /// below [`TermList::len`] whatever the bytes).
  pub fn position(&self, term: &str) -> Result<usize, usize> {
    match self {
      TermList::Built(vocabulary) => vocabulary.binary_search(term),
      TermList::Read(read) => match read.decoded.get() {
        Some(Some(vocabulary)) => vocabulary.binary_search(term),
        _ => read.find(term.as_bytes()),
      },
    }
  }
}

impl Read {
  fn terms(&self) -> &[u8] {
    &self.bytes[self.front..]
  }

  fn decode(&self) -> Option<Vocabulary> {
    let vocabulary = Vocabulary::from_joined(front_decode(self.terms())?);
    (vocabulary.len() == self.count).then_some(vocabulary)
  }

  /// The last restart whose term is not above `term`, then its block's terms
  /// in order until one is not less than `term`, none rebuilt ([`against`]).
  fn find(&self, term: &[u8]) -> Result<usize, usize> {
    let key = order_key(term);
    let (mut low, mut high) = (0, self.restarts.len());
    while low < high {
      let middle = (low + high) / 2;
      let at_most = match self.keys[middle].cmp(&key) {
        Ordering::Equal => restart_term(self.terms(), self.restarts[middle]) <= term,
        order => order.is_lt(),
      };
      if at_most {
        low = middle + 1;
      } else {
        high = middle;
      }
    }
    let Some(block) = low.checked_sub(1) else { return Err(0) };
    let terms = self.terms();
    let end = self.restarts.get(block + 1).map_or(terms.len(), |&next| next as usize);
    let (mut at, mut index) = (self.restarts[block] as usize, block * RESTART);
    // No term is rebuilt: see `against`. A restart shares nothing.
    let mut matched = 0;
    while at < end && index < self.count {
      let stop = memchr::memchr(b'\n', &terms[at + 1..end]).map_or(end, |stop| at + 1 + stop);
      match against(usize::from(terms[at]), &terms[at + 1..stop], matched, term) {
        Against::Equal => return Ok(index),
        Against::Past => return Err(index),
        Against::Below(now) => matched = now,
      }
      (at, index) = (stop + 1, index + 1);
    }
    Err(index.min(self.count))
  }
}

/// The whole term a restart at `offset` of the front-coded `terms` starts
/// with (after its shared length, which is 0).
fn restart_term(terms: &[u8], offset: u32) -> &[u8] {
  let start = offset as usize + 1;
  let end = memchr::memchr(b'\n', &terms[start..]).map_or(terms.len(), |end| start + end);
  &terms[start..end]
}

/// `vocabulary` as a term list's bytes.
fn encode(vocabulary: &Vocabulary) -> Vec<u8> {
  let mut terms = Vec::with_capacity(vocabulary.text().len() / 2 + 16);
  let mut restarts = Vec::with_capacity(vocabulary.len().div_ceil(RESTART));
  let mut previous: &[u8] = &[];
  for (at, term) in vocabulary.iter().map(str::as_bytes).enumerate() {
    let shared = if at % RESTART == 0 {
      restarts.push(terms.len() as u64);
      0
    } else {
      shared_prefix(previous, term)
    };
    terms.push(shared as u8);
    terms.extend_from_slice(&term[shared..]);
    terms.push(b'\n');
    previous = term;
  }
  let mut bytes = Vec::with_capacity(terms.len() + restarts.len() * 2 + 10);
  varint::put(&mut bytes, vocabulary.len() as u64);
  varint::put(&mut bytes, restarts.len() as u64);
  let mut last = 0;
  for restart in restarts {
    varint::put(&mut bytes, restart - last);
    last = restart;
  }
  bytes.extend_from_slice(&terms);
  bytes
}

impl Serialize for TermList {
  fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    if serializer.is_human_readable() {
      return self.vocabulary().cloned().unwrap_or_default().serialize(serializer);
    }
    match self {
      TermList::Built(vocabulary) => serializer.serialize_bytes(&encode(vocabulary)),
      TermList::Read(read) => serializer.serialize_bytes(&read.bytes),
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn vocabulary(terms: &[&str]) -> Vocabulary {
    Vocabulary::from_sorted(&terms.iter().map(|t| t.to_string()).collect::<Vec<_>>())
  }

  fn read(vocabulary: &Vocabulary) -> TermList {
    TermList::read(&encode(vocabulary)).expect("encoded terms read back")
  }

  #[test]
  fn read_terms_are_found_without_decoding() {
    let words: Vec<String> = (0..40).map(|n| format!("term{n:02}")).collect();
    let built = Vocabulary::from_sorted(&words);
    let list = read(&built);
    assert_eq!(list.len(), 40);
    for asked in ["term00", "term15", "term16", "term17", "term39", "term", "term40", "a", "z", "term155"] {
      assert_eq!(list.position(asked), built.binary_search(asked), "{asked}");
    }
    let TermList::Read(inner) = &list else { unreachable!() };
    assert!(inner.decoded.get().is_none(), "no lookup decoded the list");
    assert_eq!(inner.restarts.len(), 3);
    assert_eq!(list.vocabulary(), Some(&built));
    assert_eq!(list.position("term16"), Ok(16), "decoded: searched as decoded");
    assert_eq!(list, TermList::Built(built.clone()));
    let bytes = postcard::to_allocvec(&list).unwrap();
    assert_eq!(bytes, postcard::to_allocvec(&TermList::Built(built)).unwrap(), "written back as read");
    assert_eq!(serde_json::to_value(&list).unwrap()[0], "term00");
    assert_eq!(read(&Vocabulary::default()).len(), 0);
    assert_eq!(read(&Vocabulary::default()).position("a"), Err(0));
  }

  /// A list of one term (so one restart, at 0) whose terms are `terms`.
  fn one_restart_of(terms: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for number in [1, 1, 0] {
      varint::put(&mut bytes, number);
    }
    bytes.extend_from_slice(terms);
    bytes
  }

  #[test]
  fn term_lists_that_encode_never_writes_are_refused_or_damaged() {
    let list = encode(&vocabulary(&["alpha", "beta"]));
    assert!(TermList::read(&list).is_some());
    assert!(TermList::read(&list[..1]).is_none(), "cut before the restarts");
    let mut count = list.clone();
    count[0] = 17;
    assert!(TermList::read(&count).is_none(), "two blocks' count, one restart");
    let mut first = list.clone();
    first[2] = 1;
    assert!(TermList::read(&first).is_none(), "the first term is not a restart");
    // A restart that shares a prefix: refused.
    let mut shared = encode(&vocabulary(
      &(0..17).map(|n| format!("w{n:02}")).collect::<Vec<_>>().iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    let TermList::Read(inner) = TermList::read(&shared).unwrap() else { unreachable!() };
    shared[inner.front + inner.restarts[1] as usize] = 1;
    assert!(TermList::read(&shared).is_none());
    // Terms that are not UTF-8 are found in place, as bytes, and damaged once decoded.
    let not_utf8 = TermList::read(&one_restart_of(b"\0\xC3\n")).unwrap();
    assert_eq!((not_utf8.position("a"), not_utf8.position("\u{e9}")), (Err(0), Err(1)));
    assert!(!not_utf8.damaged());
    assert!(not_utf8.vocabulary().is_none() && not_utf8.damaged());
    assert_eq!(not_utf8.position("a"), Err(0), "still answered in place");
    // More terms in the bytes than the count says: positions stay below it.
    let more = TermList::read(&one_restart_of(b"\0a\n\0b\n")).unwrap();
    assert_eq!((more.position("a"), more.position("b")), (Ok(0), Err(1)));
    assert!(more.vocabulary().is_none(), "decodes to another count");
  }

  use proptest::prelude::*;

  proptest! {
    #![proptest_config(crate::testing::proptest_config(256))]

    #[test]
    fn read_terms_find_what_binary_search_finds(
      mut terms in proptest::collection::vec("(x{250,260})?[a-c\u{e9}_]{0,4}", 0..60),
      asked in proptest::collection::vec("(x{250,260})?[a-c\u{e9}_]{0,4}", 1..10),
    ) {
      terms.sort();
      terms.dedup();
      let vocabulary = Vocabulary::from_sorted(&terms);
      let list = read(&vocabulary);
      prop_assert_eq!(list.len(), vocabulary.len());
      for term in asked.iter().chain(terms.iter()) {
        prop_assert_eq!(list.position(term), vocabulary.binary_search(term), "{}", term);
      }
      prop_assert_eq!(list.vocabulary(), Some(&vocabulary));
    }
  }
}

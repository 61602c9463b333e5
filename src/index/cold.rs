//! Cold digests: per-session evidence without entry text.
//!
//! The vocabulary is the sorted set of canonical terms (no postings), so a
//! cold hit can only name the session; the structural addresses keep exact
//! entry identity and typed fields. Both are bounded: vocabulary bytes by
//! `maxColdVocabularyBytes` while it is built, the whole persisted record by
//! `maxColdCacheBytes` (then only exact prefixes persist, never "complete").

use super::kind::Kind;
use super::vocabulary::Vocabulary;
use super::IndexCoverage;
use crate::coverage::Reason;
use crate::query::score::frequency_class;
use crate::session::binding::BoundTip;
use crate::session::entry::Provenance;
use crate::session::entry::{Entry, Normalized, Typed};
use crate::tokenize::for_each_stored_term;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// At most this many touched files are kept per session.
pub const FILES_TOUCHED_LIMIT: usize = 50;

/// `[index, entryId, operationAddress, typed fields]` of one entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Address {
  pub index: u32,
  pub entry_id: Option<String>,
  pub operation_address: Option<String>,
  pub typed: Typed,
}

impl From<&Entry> for Address {
  fn from(e: &Entry) -> Self {
    Address {
      index: e.index as u32,
      entry_id: e.entry_id.clone(),
      operation_address: e.operation_address.clone(),
      typed: e.typed.clone(),
    }
  }
}

/// A cold session's digest. The fields here are the record's head: a
/// fresh process decodes only them, which is enough to plan a query and to
/// match the session against the cold term dictionary. The vocabulary and
/// the addresses ([`ColdContent`], most of the bytes) are read from the
/// record file when a query first needs them (see [`LazyContent`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ColdDigest {
  pub first_ts: Option<i64>,
  pub last_ts: Option<i64>,
  pub entry_count: u64,
  pub error_count: u64,
  /// xxh3-128 of the vocabulary's text (low, high halves: JSON numbers stop
  /// at 64 bits): what the cold term dictionary checks a digest against.
  pub fingerprint: [u64; 2],
  /// Distinct typed-field combinations of the addresses (timestamps
  /// cleared) with their counts: structural filters without a time bound
  /// test these instead of every address.
  pub kinds: Vec<(Kind, u64)>,
  pub index_coverage: IndexCoverage,
  /// The session's length for ranking: its evidence entries' token counts
  /// times their field units (`score::Provenance::field_units`), in tenths.
  pub length: u64,
  /// Where the active path ends on disk (active mode): follow calls bind to
  /// it, so an append keeps them valid.
  pub tip: Option<BoundTip>,
  #[serde(skip)]
  pub content: LazyContent,
  /// Where the cold term dictionary last placed this digest (derived, never
  /// persisted).
  #[serde(skip)]
  pub matched: DictionaryMatch,
}

/// Whether a digest's vocabulary holds the words of echoes
/// (`session::echo`): `indexOwnToolResults` keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Echoes {
  Kept,
  Skipped,
}

impl Echoes {
  /// What `config` does with echoes.
  pub fn of(config: &crate::config::Config) -> Echoes {
    match config.index_own_tool_results {
      true => Echoes::Kept,
      false => Echoes::Skipped,
    }
  }
}

/// A digest's shard and its member in one dictionary shard, kept between
/// queries so a warm query does not hash every cold candidate's file again.
/// A digest belongs to one record file and its vocabulary never changes, so
/// both are functions of the shard's identity alone. Clones start empty.
#[derive(Debug)]
pub struct DictionaryMatch {
  shard: std::sync::atomic::AtomicU32,
  /// `generation << 32 | member` of the last shard it was matched in (0: none).
  member: std::sync::atomic::AtomicU64,
}

impl Default for DictionaryMatch {
  fn default() -> Self {
    DictionaryMatch { shard: std::sync::atomic::AtomicU32::new(u32::MAX), member: Default::default() }
  }
}

impl Clone for DictionaryMatch {
  fn clone(&self) -> Self {
    DictionaryMatch::default()
  }
}

impl PartialEq for DictionaryMatch {
  fn eq(&self, _: &Self) -> bool {
    true
  }
}

impl DictionaryMatch {
  pub fn shard(&self, compute: impl FnOnce() -> usize) -> usize {
    use std::sync::atomic::Ordering::Relaxed;
    match self.shard.load(Relaxed) {
      u32::MAX => {
        let shard = compute();
        self.shard.store(shard as u32, Relaxed);
        shard
      }
      known => known as usize,
    }
  }

  /// The member in the shard of `generation` (never 0), `None` when it is not one.
  pub fn member(&self, generation: u32, compute: impl FnOnce() -> Option<u32>) -> Option<u32> {
    use std::sync::atomic::Ordering::Relaxed;
    let cached = self.member.load(Relaxed);
    let member = if cached >> 32 == u64::from(generation) {
      cached as u32
    } else {
      let member = compute().unwrap_or(u32::MAX);
      self.member.store(u64::from(generation) << 32 | u64::from(member), Relaxed);
      member
    };
    (member != u32::MAX).then_some(member)
  }
}

/// The bulk of a digest: sorted unique canonical terms and the structural
/// addresses, and the per-session lists no query reads (files touched, the
/// tool histogram), which in the head stayed resident for every cold
/// session (~850 bytes each; 85 MB at 100,000).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ColdContent {
  pub vocabulary: Vocabulary,
  /// Per vocabulary term, the session's frequency class of it
  /// (`score::frequency_class`).
  pub frequencies: Vec<u8>,
  pub addresses: Vec<Address>,
  pub files_touched: Vec<String>,
  pub tool_histogram: BTreeMap<String, u64>,
  /// Built on first use in memory, never persisted: lets a query skip the
  /// vocabulary search of most digests that lack a term.
  #[serde(skip)]
  filter: LazyFilter,
}

impl ColdContent {
  pub fn new(vocabulary: Vocabulary, frequencies: Vec<u8>, addresses: Vec<Address>) -> ColdContent {
    let (files_touched, tool_histogram) = Default::default();
    ColdContent { vocabulary, frequencies, addresses, files_touched, tool_histogram, filter: Lazy::default() }
  }

  /// Exact vocabulary membership, checking the Bloom filter first.
  pub fn contains(&self, term: &str) -> bool {
    self.frequency(term).is_some()
  }

  /// The session's frequency class of `term`, when its vocabulary holds it
  /// (the Bloom filter first). A digest without classes (a test's) says 1.
  pub fn frequency(&self, term: &str) -> Option<u8> {
    if !self.filter.0.get_or_init(|| TermFilter::build(self.vocabulary.iter())).may_contain(term) {
      return None;
    }
    let at = self.vocabulary.binary_search(term).ok()?;
    Some(self.frequencies.get(at).copied().unwrap_or(1))
  }
}

/// The record holding a digest's content could not be read back intact
/// (removed, replaced by a newer record, or damaged since its head was read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unreadable;

type Loader = dyn Fn() -> Result<ColdContent, Unreadable> + Send + Sync;

/// A digest's content: in memory (built here, or read once), or read on
/// first use by a loader that checks it belongs to the head it came with.
/// Clones share what was read.
#[derive(Clone, Default)]
pub struct LazyContent {
  cell: std::sync::Arc<std::sync::OnceLock<Result<std::sync::Arc<ColdContent>, Unreadable>>>,
  loader: Option<std::sync::Arc<Loader>>,
}

impl LazyContent {
  pub fn loaded(content: ColdContent) -> LazyContent {
    let cell = std::sync::OnceLock::from(Ok(std::sync::Arc::new(content)));
    LazyContent { cell: std::sync::Arc::new(cell), loader: None }
  }

  pub fn deferred(loader: impl Fn() -> Result<ColdContent, Unreadable> + Send + Sync + 'static) -> LazyContent {
    LazyContent { cell: Default::default(), loader: Some(std::sync::Arc::new(loader)) }
  }

  pub fn get(&self) -> Result<&ColdContent, Unreadable> {
    let loaded = self.cell.get_or_init(|| match &self.loader {
      Some(load) => load().map(std::sync::Arc::new),
      None => Err(Unreadable),
    });
    loaded.as_deref().map_err(|e| *e)
  }

  /// The content without keeping it: what is resident, or a read that is
  /// dropped with the result (the dictionary build reads every digest once).
  pub fn read(&self) -> Result<std::borrow::Cow<'_, ColdContent>, Unreadable> {
    match (self.cell.get(), &self.loader) {
      (Some(loaded), _) => loaded.as_deref().map(std::borrow::Cow::Borrowed).map_err(|e| *e),
      (None, Some(load)) => load().map(std::borrow::Cow::Owned),
      (None, None) => Err(Unreadable),
    }
  }

  /// Has the content been read (or found unreadable)?
  pub fn is_resident(&self) -> bool {
    self.cell.get().is_some()
  }
}

impl std::fmt::Debug for LazyContent {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    match self.cell.get() {
      Some(content) => content.fmt(f),
      None => f.write_str("LazyContent(not read)"),
    }
  }
}

/// Equal when the contents are (reading both).
impl PartialEq for LazyContent {
  fn eq(&self, other: &Self) -> bool {
    self.get() == other.get()
  }
}

/// JSON bytes a term adds to a vocabulary array: the quoted string and a
/// comma. Canonical terms are word characters, never escaped, but for a
/// part's leading mark (`\u0001`, 5 bytes more than its one).
fn term_json_bytes(term: &str) -> usize {
  term.len() + 3 + if crate::tokenize::as_part(term).is_some() { 5 } else { 0 }
}

/// A digest's terms: the sorted vocabulary with each term's frequency class,
/// the session's length (tenths), the vocabulary's JSON bytes, and whether
/// the byte cap cut it.
struct Terms {
  vocabulary: Vec<String>,
  frequencies: Vec<u8>,
  length: u64,
  bytes: usize,
  capped: bool,
}

/// Terms in entry order until the next new term would pass `max_bytes`,
/// each occurrence adding its entry's field units; echoes
/// (`session::echo`) are not evidence unless `echoes` keeps them.
fn terms(entries: &[Entry], max_bytes: usize, echoes: Echoes) -> Terms {
  let mut units: FxHashMap<String, u64> = FxHashMap::default();
  let (mut bytes, mut capped, mut length) = (2, false, 0u64); // "[]"
  let skipped = match echoes {
    Echoes::Kept => vec![false; entries.len()],
    Echoes::Skipped => crate::session::echo::echoes(entries),
  };
  for (entry, _) in entries.iter().zip(skipped).filter(|(_, echo)| !echo) {
    let weight = Provenance::of(entry).field_units();
    let mut tokens = 0u64;
    for_each_stored_term(&entry.text, |term, kind| {
      tokens += u64::from(kind.counts_length());
      if let Some(sum) = units.get_mut(term) {
        *sum += weight;
        return;
      }
      let cost = term_json_bytes(term);
      if capped || bytes + cost > max_bytes {
        capped = true;
        return;
      }
      bytes += cost;
      units.insert(term.to_string(), weight);
    });
    // As a hot shard counts a document's length: at least 1.
    length += tokens.max(1) * weight;
  }
  let mut sorted: Vec<(String, u64)> = units.into_iter().collect();
  sorted.sort_unstable();
  let frequencies = sorted.iter().map(|(_, tenths)| frequency_class(*tenths)).collect();
  let vocabulary = sorted.into_iter().map(|(term, _)| term).collect();
  Terms { vocabulary, frequencies, length, bytes, capped }
}

/// A Bloom filter over a vocabulary: no false negatives, about 1% false
/// positives at 10 bits per term, one cache line touched per probe set.
#[derive(Debug, Default)]
pub struct TermFilter {
  bits: Vec<u64>,
}

fn term_hash(term: &str) -> u64 {
  use std::hash::Hasher;
  let mut hasher = rustc_hash::FxHasher::default();
  hasher.write(term.as_bytes());
  // FxHash mixes weakly in its low bits; a final avalanche spreads them.
  let mut h = hasher.finish();
  h ^= h >> 33;
  h = h.wrapping_mul(0xff51afd7ed558ccd);
  h ^ (h >> 33)
}

/// A derived cache, not part of the digest's value: equal and cloned as empty.
#[derive(Debug, Default)]
pub struct Lazy<T>(std::sync::OnceLock<T>);

impl<T> Lazy<T> {
  pub fn get_or_init(&self, init: impl FnOnce() -> T) -> &T {
    self.0.get_or_init(init)
  }
}

impl<T> Clone for Lazy<T> {
  fn clone(&self) -> Self {
    Lazy(std::sync::OnceLock::new())
  }
}

impl<T> PartialEq for Lazy<T> {
  fn eq(&self, _: &Self) -> bool {
    true
  }
}

pub type LazyFilter = Lazy<TermFilter>;

impl TermFilter {
  const PROBES: u32 = 4;

  pub fn build<'t>(terms: impl Iterator<Item = &'t str> + Clone) -> TermFilter {
    let words = (terms.clone().count() * 10 / 64 + 1).next_power_of_two();
    let mut filter = TermFilter { bits: vec![0; words] };
    for term in terms {
      let hash = term_hash(term);
      let (word, bits) = filter.locate(hash);
      filter.bits[word] |= bits;
    }
    filter
  }

  /// The word a term lives in (blocked: all probes in one u64) and its bits.
  fn locate(&self, hash: u64) -> (usize, u64) {
    let word = (hash as usize) & (self.bits.len() - 1);
    let mut bits = 0u64;
    for probe in 0..Self::PROBES {
      bits |= 1 << ((hash >> (20 + probe * 6)) & 63);
    }
    (word, bits)
  }

  pub fn may_contain(&self, term: &str) -> bool {
    let (word, bits) = self.locate(term_hash(term));
    self.bits[word] & bits == bits
  }
}

/// Typed-field combinations of `addresses` (timestamps cleared) with
/// their counts, in a stable order.
fn kinds(addresses: &[Address]) -> Vec<(Kind, u64)> {
  let mut counts: BTreeMap<Typed, u64> = BTreeMap::new();
  for address in addresses {
    *counts.entry(Typed { timestamp: None, ..address.typed.clone() }).or_default() += 1;
  }
  counts.into_iter().map(|(typed, count)| (Kind::intern(typed), count)).collect()
}

impl ColdDigest {
  /// The vocabulary's fingerprint (see [`ColdDigest::fingerprint`]).
  pub fn vocabulary_fingerprint(&self) -> u128 {
    u128::from(self.fingerprint[0]) | u128::from(self.fingerprint[1]) << 64
  }

  /// The vocabulary and addresses, read now if they were not yet.
  pub fn content(&self) -> Result<&ColdContent, Unreadable> {
    self.content.get()
  }

  /// Exact vocabulary membership (tests; queries go through [`ColdDigest::content`]).
  #[cfg(test)]
  pub fn contains(&self, term: &str) -> bool {
    self.content().is_ok_and(|content| content.contains(term))
  }

  /// Sets `content` with the head fields derived from it.
  pub(crate) fn with_content(mut self, content: ColdContent) -> ColdDigest {
    let fingerprint = xxhash_rust::xxh3::xxh3_128(content.vocabulary.text().as_bytes());
    self.fingerprint = [fingerprint as u64, (fingerprint >> 64) as u64];
    self.kinds = kinds(&content.addresses);
    self.content = LazyContent::loaded(content);
    self
  }

  /// Folds untruncated normalized entries into a digest.
  pub fn build(normalized: &Normalized, max_vocabulary_bytes: usize, echoes: Echoes) -> ColdDigest {
    let entries = &normalized.entries;
    let Terms { vocabulary, frequencies, length, bytes: vocabulary_bytes, capped } =
      terms(entries, max_vocabulary_bytes, echoes);
    let mut files_touched = Vec::new();
    let mut files_capped = false;
    let mut tool_histogram = BTreeMap::new();
    for entry in entries {
      for file in &entry.files_touched {
        if files_touched.contains(file) {
          continue;
        }
        if files_touched.len() == FILES_TOUCHED_LIMIT {
          files_capped = true;
        } else {
          files_touched.push(file.clone());
        }
      }
      if let Some(tool) = &entry.typed.tool {
        *tool_histogram.entry(tool.clone()).or_insert(0) += 1;
      }
    }
    let timestamps = entries.iter().filter_map(|e| e.typed.timestamp);
    let mut reasons: Vec<Reason> = normalized.reasons.iter().copied().filter(|r| *r != Reason::MaxEntryChars).collect();
    if capped {
      reasons.push(Reason::MaxColdVocabularyBytes);
    }
    if files_capped {
      reasons.push(Reason::MaxFilesTouched);
    }
    let digest = ColdDigest {
      first_ts: timestamps.clone().min(),
      last_ts: timestamps.max(),
      entry_count: entries.len() as u64,
      error_count: entries.iter().filter(|e| e.is_error).count() as u64,
      fingerprint: [0, 0],
      kinds: Vec::new(),
      index_coverage: IndexCoverage::from_reasons(&reasons.into_iter().collect(), Some(vocabulary_bytes as u64)),
      length,
      tip: None,
      content: LazyContent::default(),
      matched: DictionaryMatch::default(),
    };
    let addresses = entries.iter().map(Address::from).collect();
    let content = ColdContent::new(Vocabulary::from_sorted(&vocabulary), frequencies, addresses);
    digest.with_content(ColdContent { files_touched, tool_histogram, ..content })
  }

  /// Keeps the longest prefix of addresses, then of vocabulary, for which
  /// `fits` holds; marks the digest `max_cold_cache_bytes`. `false` when not
  /// even the empty prefixes fit (or the content cannot be read).
  pub fn fit(&mut self, fits: impl Fn(&ColdDigest) -> bool) -> bool {
    if fits(self) {
      return true;
    }
    let Ok(content) = self.content().cloned() else { return false };
    self.index_coverage.add_reason(Reason::MaxColdCacheBytes);
    let (vocabulary, addresses, frequencies) = (content.vocabulary, content.addresses, content.frequencies);
    let (files_touched, tool_histogram) = (content.files_touched, content.tool_histogram);
    let trial = |vocabulary: Vocabulary, addresses: &[Address]| {
      let (files_touched, tool_histogram) = (files_touched.clone(), tool_histogram.clone());
      let frequencies = frequencies[..vocabulary.len().min(frequencies.len())].to_vec();
      let kept = ColdContent::new(vocabulary, frequencies, addresses.to_vec());
      self.clone().with_content(ColdContent { files_touched, tool_histogram, ..kept })
    };
    if let Some(keep) = longest_prefix(addresses.len(), |n| fits(&trial(vocabulary.clone(), &addresses[..n]))) {
      *self = trial(vocabulary, &addresses[..keep]);
      return true;
    }
    let keep = longest_prefix(vocabulary.len(), |n| fits(&trial(vocabulary.prefix(n), &[])));
    *self = trial(vocabulary.prefix(keep.unwrap_or(0)), &[]);
    keep.is_some()
  }
}

/// The largest `n` in `0..=len` with `ok(n)`, assuming `ok` is monotone
/// (true up to some point); `None` when `ok(0)` fails.
fn longest_prefix(len: usize, mut ok: impl FnMut(usize) -> bool) -> Option<usize> {
  if !ok(0) {
    return None;
  }
  let (mut low, mut high) = (0, len);
  while low < high {
    let middle = (low + high).div_ceil(2);
    if ok(middle) {
      low = middle;
    } else {
      high = middle - 1;
    }
  }
  Some(low)
}

#[cfg(test)]
mod tests {
  use super::*;

  fn entry(index: usize, text: &str, tool: Option<&str>, is_error: bool) -> Entry {
    Entry {
      index,
      text: text.into(),
      typed: Typed { tool: tool.map(str::to_string), ..Typed::default() },
      is_error,
      entry_id: Some(format!("e{index}")),
      ..Entry::default()
    }
  }

  fn normalized(entries: Vec<Entry>) -> Normalized {
    Normalized { entries, ..Default::default() }
  }

  #[test]
  fn folds_counts_terms_and_addresses() {
    let mut read = entry(1, "Tool: read(src/auth.ts)", Some("read"), false);
    read.files_touched = vec!["src/auth.ts".into()];
    read.typed.timestamp = Some(20);
    let mut user = entry(0, "Fix the Auth bug", None, false);
    user.typed.timestamp = Some(10);
    let digest = ColdDigest::build(
      &normalized(vec![user, read, entry(2, "boom", Some("bash"), true), entry(3, "x", Some("read"), false)]),
      1 << 20,
      Echoes::Kept,
    );
    assert_eq!(
      digest.content().unwrap().vocabulary.to_vec(),
      ["auth", "boom", "bug", "fix", "read", "src", "the", "tool", "ts", "x"]
    );
    assert!(digest.contains("boom") && !digest.contains("bo") && !digest.contains("zzz"));
    let content = digest.content().unwrap();
    assert_eq!(content.files_touched, ["src/auth.ts"]);
    assert_eq!(content.tool_histogram, BTreeMap::from([("bash".into(), 1), ("read".into(), 2)]));
    assert_eq!((digest.error_count, digest.entry_count, digest.first_ts, digest.last_ts), (1, 4, Some(10), Some(20)));
    assert_eq!(digest.content().unwrap().addresses[1].entry_id.as_deref(), Some("e1"));
    assert!(digest.index_coverage.complete);
  }

  #[test]
  fn vocabulary_stops_at_its_byte_cap() {
    let digest =
      ColdDigest::build(&normalized(vec![entry(0, "alpha beta gamma", None, false)]), 2 + 8 + 7, Echoes::Kept);
    assert_eq!(digest.content().unwrap().vocabulary.to_vec(), ["alpha", "beta"]);
    assert!(!digest.index_coverage.complete);
    assert_eq!(digest.index_coverage.reasons, ["max_cold_vocabulary_bytes"]);
  }

  #[test]
  fn the_filter_never_misses_a_term() {
    let terms: Vec<String> = (0..5000).map(|i| format!("term{i}")).collect();
    let filter = TermFilter::build(terms.iter().map(String::as_str));
    assert!(terms.iter().all(|t| filter.may_contain(t)));
    let false_positives = (0..10_000).filter(|i| filter.may_contain(&format!("absent{i}"))).count();
    assert!(false_positives < 1000, "{false_positives} false positives in 10,000");
  }

  #[test]
  fn fitting_keeps_exact_prefixes() {
    // Letters only: `term7` would add the parts `term` and `7`.
    let word = |i: usize| format!("term{}{}", (b'a' + (i / 26) as u8) as char, (b'a' + (i % 26) as u8) as char);
    let entries = (0..100).map(|i| entry(i, &word(i), None, false)).collect();
    let mut digest = ColdDigest::build(&normalized(entries), 1 << 20, Echoes::Kept);
    assert!(digest.fit(|d| d.content().unwrap().addresses.len() <= 40));
    assert_eq!(digest.content().unwrap().addresses.len(), 40);
    assert_eq!(digest.content().unwrap().vocabulary.len(), 100);
    assert_eq!(digest.kinds, [(Kind::intern(Typed::default()), 40)], "kinds count the kept addresses");
    assert_eq!(digest.index_coverage.reasons, ["max_cold_cache_bytes"]);
    assert!(digest.fit(|d| d.content().unwrap().addresses.is_empty() && d.content().unwrap().vocabulary.len() <= 7));
    assert_eq!(digest.content().unwrap().vocabulary.len(), 7);
    let seven = Vocabulary::from_sorted(&digest.content().unwrap().vocabulary.to_vec());
    assert_eq!(digest.vocabulary_fingerprint(), xxhash_rust::xxh3::xxh3_128(seven.text().as_bytes()));
    assert!(!digest.fit(|_| false));
  }
}

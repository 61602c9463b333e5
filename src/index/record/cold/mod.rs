//! Cold digests: per-session evidence without entry text.
//!
//! The vocabulary is the sorted set of canonical terms (no postings), so a
//! cold hit can only name the session; the structural addresses keep exact
//! entry identity and typed fields. Both are bounded: vocabulary bytes by
//! `maxColdVocabularyBytes` while it is built, the whole persisted record by
//! `maxColdCacheBytes` (then only exact prefixes persist, never "complete").

use super::deferred::Deferred;
use super::kind::{HeadKinds, Kind};
use super::vocabulary::Vocabulary;
use crate::coverage::IndexCoverage;
use crate::coverage::Reason;
use crate::session::binding::BoundTip;
use crate::session::entry::{Entry, Normalized, Typed};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod content;
mod derived;
mod kinds;
mod packed;
mod term_sums;
mod terms;

pub use content::{ColdContent, LazyContent, Unreadable};
pub use derived::{DictionaryMatch, Lazy};
pub use kinds::ColdKinds;
use terms::{terms, Terms};

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
  /// xxh3-128 of the vocabulary: its terms and their frequency classes
  /// ([`ColdContent::fingerprint`]; low, high halves: JSON numbers stop at
  /// 64 bits): what the cold term dictionary checks a digest against.
  pub fingerprint: [u64; 2],
  pub index_coverage: IndexCoverage,
  /// The session's length for ranking: its evidence entries' token counts
  /// times their field units (`score::Provenance::field_units`), in tenths.
  pub length: u64,
  /// Read when a filter or a hit first needs them.
  pub details: Deferred<ColdDetails>,
  #[serde(skip)]
  pub content: LazyContent,
  /// Where the cold term dictionary last placed this digest (derived, never
  /// persisted).
  #[serde(skip)]
  pub matched: DictionaryMatch,
}

/// The parts of a cold head that only some queries read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ColdDetails {
  /// Distinct typed-field combinations of the addresses (timestamps
  /// cleared) with their counts: structural filters without a time bound
  /// test these instead of every address.
  pub kinds: HeadKinds,
  /// Where the active path ends on disk (active mode): follow calls bind to
  /// it, so an append keeps them valid.
  pub tip: Option<BoundTip>,
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
  /// The vocabulary's fingerprint, terms and frequency classes (see
  /// [`ColdDigest::fingerprint`]).
  pub fn vocabulary_fingerprint(&self) -> u128 {
    u128::from(self.fingerprint[0]) | u128::from(self.fingerprint[1]) << 64
  }

  /// The typed-field combinations of the addresses (see [`ColdDetails::kinds`]).
  pub fn kinds(&self) -> &HeadKinds {
    &self.details.get().kinds
  }

  /// Where the active path ends on disk (see [`ColdDetails::tip`]).
  pub fn tip(&self) -> Option<&BoundTip> {
    self.details.get().tip.as_ref()
  }

  pub fn with_tip(mut self, tip: Option<BoundTip>) -> ColdDigest {
    self.details = Deferred::new(ColdDetails { kinds: self.kinds().clone(), tip });
    self
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
    let fingerprint = content.fingerprint();
    self.fingerprint = [fingerprint as u64, (fingerprint >> 64) as u64];
    self.details =
      Deferred::new(ColdDetails { kinds: HeadKinds::of(&kinds(&content.addresses)), tip: self.tip().cloned() });
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
      index_coverage: IndexCoverage::from_reasons(&reasons.into_iter().collect(), Some(vocabulary_bytes as u64)),
      length,
      details: Deferred::new(ColdDetails::default()),
      content: LazyContent::default(),
      matched: DictionaryMatch::default(),
    };
    let addresses = entries.iter().map(Address::from).collect();
    let content = ColdContent::new(vocabulary, frequencies, addresses);
    digest.with_content(ColdContent { files_touched, tool_histogram, ..content })
  }

  /// Keeps the longest prefix of addresses, then of vocabulary, for which
  /// `fits` holds; marks the digest `max_cold_cache_bytes`. `false` when not
  /// even the empty prefixes fit (or the content cannot be read).
  pub fn fit(&mut self, fits: impl Fn(&ColdDigest) -> bool) -> bool {
    fits(self) || self.shrink_to_fit(fits)
  }

  /// [`ColdDigest::fit`] for a digest already found not to fit whole (its
  /// check is a whole serialization).
  pub fn shrink_to_fit(&mut self, fits: impl Fn(&ColdDigest) -> bool) -> bool {
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
mod tests;

//! A digest's vocabulary, built from its entries: canonical terms in entry
//! order under the byte cap, each with its frequency class, and the
//! session's ranking length.

use super::Echoes;
use crate::query::score::frequency_class;
use crate::session::entry::{Entry, Provenance};
use crate::tokenize::for_each_stored_term;
use rustc_hash::FxHashMap;

/// JSON bytes a term adds to a vocabulary array: the quoted string and a
/// comma. Canonical terms are word characters, never escaped, but for a
/// part's leading mark (`\u0001`, 5 bytes more than its one).
fn term_json_bytes(term: &str) -> usize {
  term.len() + 3 + if crate::tokenize::as_part(term).is_some() { 5 } else { 0 }
}

/// A digest's terms: the sorted vocabulary with each term's frequency class,
/// the session's length (tenths), the vocabulary's JSON bytes, and whether
/// the byte cap cut it.
pub(super) struct Terms {
  pub(super) vocabulary: Vec<String>,
  pub(super) frequencies: Vec<u8>,
  pub(super) length: u64,
  pub(super) bytes: usize,
  pub(super) capped: bool,
}

/// Terms in entry order until the next new term would pass `max_bytes`,
/// each occurrence adding its entry's field units; echoes
/// (`session::echo`) are not evidence unless `echoes` keeps them.
pub(super) fn terms(entries: &[Entry], max_bytes: usize, echoes: Echoes) -> Terms {
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

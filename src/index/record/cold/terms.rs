//! A digest's vocabulary, built from its entries: canonical terms in entry
//! order under the byte cap, each with its frequency class, and the
//! session's ranking length.

use super::term_sums::TermSums;
use super::Echoes;
use crate::index::record::vocabulary::Vocabulary;
use crate::query::score::frequency_class;
use crate::session::entry::{Entry, Provenance};
use crate::tokenize::for_each_stored_term;

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
  pub(super) vocabulary: Vocabulary,
  pub(super) frequencies: Vec<u8>,
  pub(super) length: u64,
  pub(super) bytes: usize,
  pub(super) capped: bool,
}

/// Terms in entry order until the next new term would pass `max_bytes`,
/// each occurrence adding its entry's field units; echoes
/// (`session::echo`) are not evidence unless `echoes` keeps them.
pub(super) fn terms(entries: &[Entry], max_bytes: usize, echoes: Echoes) -> Terms {
  let mut units = TermSums::default();
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
      units.add(term, weight, |term| {
        let cost = term_json_bytes(term);
        if capped || bytes + cost > max_bytes {
          capped = true;
          return false;
        }
        bytes += cost;
        true
      });
    });
    // As a hot shard counts a document's length: at least 1.
    length += tokens.max(1) * weight;
  }
  // The vocabulary's newline-joined text straight from the arena: no
  // string per term.
  let (mut joined, mut frequencies) = (String::new(), Vec::new());
  for (term, tenths) in units.sorted() {
    if !joined.is_empty() {
      joined.push('\n');
    }
    joined.push_str(term);
    frequencies.push(frequency_class(tenths));
  }
  Terms { vocabulary: Vocabulary::from_joined(joined), frequencies, length, bytes, capped }
}

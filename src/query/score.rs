//! Scores: BM25 for hot entries, the same IDF scale for cold sessions, and
//! provenance weights.
//!
//! Hot and cold scores share one scale: every hot candidate entry and every
//! cold candidate session counts as one document of the call's universe, so
//! a term's IDF is the same for both. A cold session scores as a document
//! holding each matched term once at average length (its BM25 term factor is
//! then exactly 1), i.e. the sum of the matched terms' IDF. A rare term in a
//! cold session therefore outranks common words in hot entries, and a hot
//! entry that repeats rare terms outranks a cold session that merely holds
//! them.

use super::plan::Filters;
use crate::session::entry::Provenance;

pub const K1: f64 = 1.2;
pub const B: f64 = 0.75;

/// `ln((N − df + 0.5) / (df + 0.5) + 1)`: never negative.
pub fn idf(documents: usize, df: usize) -> f64 {
  ((documents as f64 - df as f64 + 0.5) / (df as f64 + 0.5) + 1.0).ln()
}

/// How much one occurrence of a query word as an identifier's part counts
/// against one occurrence as a whole word: a whole-word match ranks first.
pub const PART_WEIGHT: f64 = 0.5;

/// One term's BM25 contribution for a document; `tf` is fractional when
/// part matches count in it ([`PART_WEIGHT`]).
pub fn bm25(idf: f64, tf: f64, doc_len: u32, avg_len: f64) -> f64 {
  idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * doc_len as f64 / avg_len.max(1.0)))
}

/// A session's frequency of a term in one byte: quarter occurrences of its
/// field-weighted count ([`Provenance::field_units`], tenths), at least 1 for
/// any occurrence, at most 255 (63.75 occurrences: BM25 has saturated long
/// before). Hot sessions work it out from their postings, cold digests keep
/// it per vocabulary term and the cold term dictionary per posting, from the
/// same integer sums, so both tiers give a session the same frequency.
pub fn frequency_class(tenths: u64) -> u8 {
  ((tenths * 4 + 5) / 10).clamp(1, 255) as u8
}

/// The occurrences a [`frequency_class`] stands for.
pub fn class_frequency(class: u8) -> f64 {
  f64::from(class) / 4.0
}

/// The frequency a session holds a query word with: whole occurrences, and
/// part occurrences at [`PART_WEIGHT`] (classes, 0 when absent).
pub fn session_frequency(whole: u8, part: u8) -> f64 {
  class_frequency(whole) + PART_WEIGHT * class_frequency(part)
}

/// How ranking weighs an entry's [`Provenance`] (its classification is
/// `session::entry`'s).
impl Provenance {
  /// What an occurrence counts in a session's frequencies and length, in
  /// tenths (BM25F's field weights): the provenance weights scaled so
  /// assistant prose is 10. Integers, so every tier sums them exactly alike.
  pub fn field_units(self) -> u64 {
    match self {
      Provenance::AssistantProse => 10,
      Provenance::UserProse => 9,
      Provenance::Summary => 6,
      Provenance::ToolOutput => 3,
      Provenance::ToolCall => 3,
      Provenance::Other => 4,
    }
  }

  /// Assistant and user prose rank ahead of tool plumbing, unless the
  /// caller filtered for operations.
  pub fn weight(self, filters: &Filters) -> f64 {
    if filters.asks_for_operations() {
      return 1.0;
    }
    match self {
      Provenance::AssistantProse => 2.5,
      Provenance::UserProse => 2.25,
      Provenance::Summary => 1.5,
      Provenance::ToolOutput => 0.75,
      Provenance::ToolCall => 0.7,
      Provenance::Other => 1.0,
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::session::entry::{Entry, Typed};

  #[test]
  fn bm25_saturates_and_normalizes_length() {
    let idf = idf(100, 3);
    assert!(bm25(idf, 2.0, 10, 10.0) > bm25(idf, 1.0, 10, 10.0));
    assert!(bm25(idf, 1.0, 5, 10.0) > bm25(idf, 1.0, 20, 10.0));
    assert!((bm25(idf, 1.0, 10, 10.0) - idf).abs() < 1e-12, "tf 1 at average length is exactly the idf");
    assert!(bm25(idf, PART_WEIGHT, 10, 10.0) < bm25(idf, 1.0, 10, 10.0), "a part match ranks below a whole one");
    assert!(idf > super::idf(100, 50));
  }

  #[test]
  fn human_decisions_outweigh_plumbing() {
    let none = Filters::default();
    let typed = |role: &str, tool: Option<&str>| Typed {
      role: Some(role.into()),
      tool: tool.map(Into::into),
      ..Typed::default()
    };
    let prose = Entry { typed: typed("assistant", None), ..Entry::default() };
    let call = Entry { typed: typed("assistant", Some("bash")), ..Entry::default() };
    let result = Entry { typed: typed("toolResult", Some("bash")), ..Entry::default() };
    let weight = |entry: &Entry, filters: &Filters| Provenance::of(entry).weight(filters);
    assert!(weight(&prose, &none) > weight(&result, &none));
    assert!(weight(&result, &none) > weight(&call, &none));
    let ops = Filters { typed: Typed { tool: Some("bash".into()), ..Typed::default() }, ..Filters::default() };
    assert_eq!(weight(&call, &ops), 1.0);
  }
}

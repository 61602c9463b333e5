//! The cold candidates: the sessions passing the filters, their content
//! (read on first use), the cold term dictionary serving a lexical query,
//! and the hits of every term ordered by session.

use super::{Search, MAX_DIGEST_CANDIDATES};
use crate::coverage::Reason;
use crate::engine::Engine;
use crate::index::snapshot::ColdContent;
use crate::ops::recall::searched::Searched;
use crate::query::plan::Query;
use std::sync::Arc;

/// `session`'s cold content (see [`Searched::cold_content`]); `None` and
/// `unreadable` set when it cannot be read.
pub(super) fn cold_content<'s>(
  session: Searched<'s>,
  engine: &Engine,
  branches: crate::session::lineage::Branches,
  unreadable: &std::cell::Cell<bool>,
) -> Option<&'s ColdContent> {
  let content = session.cold_content(engine, branches)?;
  unreadable.set(unreadable.get() || content.is_err());
  content.ok()
}

/// The cold candidates: the sessions passing the filters, in slot order.
#[derive(Default)]
pub(super) struct Cold {
  pub(super) slots: Arc<Vec<usize>>,
  /// Each candidate's matching address count; `None` without filters (none
  /// asked for: every count is 0).
  pub(super) structural: Option<Vec<usize>>,
  /// How many of them (from the first) the digest budget admits; all of
  /// them when the cold term dictionary serves the query.
  pub(super) within: usize,
}

impl Cold {
  /// Every cold session of the synchronization, no filter asked.
  pub(super) fn every(slots: Arc<Vec<usize>>) -> Cold {
    Cold { within: slots.len().min(MAX_DIGEST_CANDIDATES), slots, structural: None }
  }

  pub(super) fn is_every(&self) -> bool {
    self.structural.is_none()
  }

  fn structural(&self, at: usize) -> usize {
    self.structural.as_ref().map_or(0, |counts| counts[at])
  }

  /// The admitted candidates and their matching address counts.
  pub(super) fn admitted(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
    (0..self.within).map(|at| (self.slots[at], self.structural(at)))
  }

  pub(super) fn structural_of(&self, slot: usize) -> usize {
    match &self.structural {
      None => 0,
      Some(counts) => counts[self.slots.binary_search(&slot).expect("a cold candidate")],
    }
  }
}

/// Every slot of `holding` (per term, unordered) as `slot << 32 | term
/// position`, ascending: by session, the candidates' own order, then in
/// query order. A bitset of the `slots` per term, walked word by word,
/// orders them without sorting.
pub(super) fn by_session(holding: &[Vec<usize>], slots: usize) -> Vec<u64> {
  let words = slots.div_ceil(64);
  let sets: Vec<Vec<u64>> = holding
    .iter()
    .map(|hits| {
      let mut set = vec![0u64; words];
      hits.iter().for_each(|&slot| set[slot / 64] |= 1 << (slot % 64));
      set
    })
    .collect();
  let mut hits = Vec::with_capacity(holding.iter().map(Vec::len).sum());
  for word in 0..words {
    let mut any = sets.iter().fold(0, |any, set| any | set[word]);
    while any != 0 {
      let bit = any.trailing_zeros();
      any &= any - 1;
      let slot = (word as u64) << 6 | u64::from(bit);
      let holds = sets.iter().enumerate().filter(|(_, set)| set[word] >> bit & 1 == 1);
      hits.extend(holds.map(|(at, _)| slot << 32 | at as u64));
    }
  }
  hits
}

impl Search<'_> {
  /// A cold candidate's vocabulary and addresses; one that cannot be read
  /// (nor rebuilt) matches nothing, and the call's coverage says so.
  pub(super) fn cold_content(&self, slot: usize) -> Option<&ColdContent> {
    cold_content(self.sessions.at(slot), self.engine, self.request.branches, &self.unreadable)
  }

  /// Lexical queries over many cold digests are served by the cold term
  /// dictionary: then every cold candidate is searched, past the digest
  /// budget too (the budget bounds matched sessions instead).
  /// Without filters the candidates are every cold session of the
  /// synchronization, served once per synchronization result.
  pub(super) fn serve_cold_terms(&mut self) {
    if matches!(self.request.query, Query::Literal { .. } | Query::Phrase { .. }) {
      let max_record = self.config.max_cold_cache_bytes;
      self.cold_terms = self.sessions.serve_cold(self.cold.is_every(), &self.cold.slots, max_record);
    }
    if self.cold_terms.is_some() {
      self.cold.within = self.cold.slots.len();
    } else if self.cold.within < self.cold.slots.len() {
      self.reasons.insert(Reason::CandidateDigestBudget);
    }
  }
}

#[cfg(test)]
mod tests {
  use super::by_session;
  use crate::testing::proptest_config;
  use proptest::prelude::*;

  proptest! {
    #![proptest_config(proptest_config(256))]

    /// The bitset walk gives what sorting the packed hits gives.
    #[test]
    fn hits_by_session_are_the_sorted_hits(
      slots in 0..300usize,
      holding in proptest::collection::vec(proptest::collection::btree_set(0..300usize, 0..80), 0..5),
    ) {
      let holding: Vec<Vec<usize>> =
        holding.into_iter().map(|set| set.into_iter().filter(|&s| s < slots).rev().collect()).collect();
      let mut sorted: Vec<u64> = (holding.iter().enumerate())
        .flat_map(|(at, hits)| hits.iter().map(move |&slot| (slot as u64) << 32 | at as u64))
        .collect();
      sorted.sort_unstable();
      prop_assert_eq!(by_session(&holding, slots), sorted);
    }
  }
}

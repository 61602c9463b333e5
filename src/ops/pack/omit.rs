//! What a pack left out and why: a closed set, counted per reason.

use serde::Serialize;
use std::collections::BTreeMap;

/// Why a candidate excerpt is not in the pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Omission {
  /// It did not fit the token budget.
  Budget,
  /// Its session ranked below the `maxSessions` cited.
  MaxSessions,
  /// An excerpt already cited says the same (or nearly).
  Duplicate,
  /// Its entry is no longer on the session's active branch.
  OffBranch,
  /// A later context edit took it out of the model's context.
  ContextEdited,
  /// This package's own traffic (a recall request, a memory tool's call or
  /// result): it quotes evidence without being it.
  NotAuthoritative,
  /// The session's bytes changed since the index saw them (rewritten, not appended).
  SourceChanged,
}

#[derive(Debug, Clone, Serialize)]
pub struct Omitted {
  pub reason: Omission,
  pub count: usize,
}

/// Counts per reason, in the enum's order.
#[derive(Debug, Default)]
pub(super) struct Tally(BTreeMap<Omission, usize>);

impl Tally {
  pub fn add(&mut self, reason: Omission, count: usize) {
    if count > 0 {
      *self.0.entry(reason).or_default() += count;
    }
  }

  pub fn list(&self) -> Vec<Omitted> {
    self.0.iter().map(|(&reason, &count)| Omitted { reason, count }).collect()
  }
}

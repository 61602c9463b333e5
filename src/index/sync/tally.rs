//! What a synchronization counts: the records' part of its coverage (kept
//! with the last synchronization, so a patch adjusts it per session) and the
//! work budgets of one call.

use super::Synced;
use crate::config::Config;
use crate::coverage::{Coverage, Reason};
use crate::index::record::CacheRecord;
use std::collections::{BTreeMap, BTreeSet};

/// Budgets of one call: sessions built and source bytes parsed.
pub(super) struct Budget {
  pub(super) sessions: u64,
  pub(super) bytes: u64,
}

impl Budget {
  /// Charges one build of `bytes`; `Err(reason)` once a budget is spent.
  pub(super) fn charge(&mut self, config: &Config, bytes: u64) -> Result<(), Reason> {
    if self.sessions + 1 > config.max_sync_sessions {
      return Err(Reason::MaxSyncSessions);
    }
    if self.bytes + bytes > config.max_sync_source_bytes {
      return Err(Reason::MaxSyncSourceBytes);
    }
    self.sessions += 1;
    self.bytes += bytes;
    Ok(())
  }
}

/// The records' part of a synchronization's coverage, kept with the last
/// synchronization so a patch adjusts it per session instead of adding up
/// every record again.
#[derive(Debug, Clone, Default)]
pub(super) struct Tally {
  indexed: usize,
  incomplete: usize,
  /// Answer-affecting reasons of incomplete records, each with how many have it.
  reasons: BTreeMap<Reason, usize>,
}

impl Tally {
  pub(super) fn of(synced: &[Synced]) -> Tally {
    let mut tally = Tally::default();
    synced.iter().filter_map(|s| s.record.as_deref()).for_each(|r| tally.add(r));
    tally
  }

  pub(super) fn add(&mut self, record: &CacheRecord) {
    self.indexed += 1;
    let coverage = record.coverage();
    if !coverage.complete {
      self.incomplete += 1;
      for reason in coverage.reasons.iter().copied().filter(|r| r.affects_answers()) {
        *self.reasons.entry(reason).or_default() += 1;
      }
    }
  }

  pub(super) fn remove(&mut self, record: &CacheRecord) {
    self.indexed -= 1;
    let coverage = record.coverage();
    if !coverage.complete {
      self.incomplete -= 1;
      for reason in coverage.reasons.iter().filter(|r| r.affects_answers()) {
        let count = self.reasons.get_mut(reason).expect("a removed record was added");
        *count -= 1;
        if *count == 0 {
          self.reasons.remove(reason);
        }
      }
    }
  }

  /// The coverage of `eligible` sessions with the synchronization's own `reasons`.
  pub(super) fn coverage(&self, eligible: usize, reasons: &BTreeSet<Reason>, unavailable: usize) -> Coverage {
    let mut reasons = reasons.clone();
    reasons.extend(self.reasons.keys().copied());
    let stale = eligible - self.indexed;
    Coverage {
      complete: reasons.iter().all(|r| !r.affects_answers()) && stale == 0,
      indexed_sessions: self.indexed,
      eligible_sessions: eligible,
      stale_sessions: stale,
      incomplete_sessions: self.incomplete,
      unavailable_sessions: unavailable,
      reasons: reasons.into_iter().collect(),
      ..Coverage::default()
    }
  }
}

//! Orphan removal at the end of a sync: records no existing session owns
//! and temp files of crashed writers, within the cleanup budget.

use super::name::{IndexFile, Name};
use super::IndexDir;
use crate::coverage::Reason;
use crate::index::record;
use crate::session::source::{now_ns, StatStamp};
use rayon::prelude::*;
use rustc_hash::FxHashSet;
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

impl IndexDir {
  /// Removes index files no existing session can own: records of deleted
  /// sources, temp files left by crashed writers and cold-body
  /// dictionaries of another cache version (no record this version reads
  /// names them), at most `budget` of
  /// them (past it, `cache_cleanup_budget`). `names` are the dir's names
  /// that may be garbage (all of them, or those a caller could not vouch
  /// for), `owners` the record base names' hash prefixes of every existing
  /// session. Names decide
  /// what is an orphan; [`IndexDir::remove_ours`] decides what may be removed
  /// (regular file, index name, record magic), so a foreign file is never
  /// touched.
  pub(crate) fn collect_garbage(
    &self,
    names: &[&str],
    owners: &FxHashSet<u64>,
    budget: u64,
    reasons: &mut BTreeSet<Reason>,
  ) {
    // Parsed in parallel (up to 100,000 names at scale); what takes a file
    // system call to decide is asked in order, so the budget bounds it as well.
    let unowned: Vec<(&str, Name<'_>)> = names
      .par_iter()
      .with_min_len(1024)
      .filter_map(|&name| {
        let parsed = Name::parse(name)?;
        let stale =
          matches!(parsed.file, IndexFile::BodyDictionary { version, .. } if version != record::CACHE_VERSION);
        let unowned = parsed.temp
          || stale
          || parsed
            .file
            .record_hash()
            .is_some_and(|hash| !record::hash_of_base(hash).is_some_and(|h| owners.contains(&h)));
        unowned.then_some((name, parsed))
      })
      .collect();
    let mut removed = 0u64;
    for (name, parsed) in unowned {
      let orphan = match parsed {
        Name { temp: true, .. } => is_old(&self.join(name)),
        Name { file: IndexFile::BodyDictionary { .. }, temp: false } => true,
        Name { file, temp: false } => file.record_hash().is_some_and(|hash| !self.owned_elsewhere(name, hash)),
      };
      if !orphan {
        continue;
      }
      if removed >= budget {
        reasons.insert(Reason::CacheCleanupBudget);
        return;
      }
      if self.remove_ours(name) {
        removed += 1;
      }
    }
  }

  /// Is `name` a record of a live session outside this index's roots?
  /// Remembered once found: the owning index removes it when its source goes.
  fn owned_elsewhere(&self, name: &str, hash: &str) -> bool {
    if self.elsewhere.lock().contains(name) {
      return true;
    }
    let exists = record::source_exists(&self.join(name), hash);
    if exists {
      self.elsewhere.lock().insert(name.to_string());
    }
    exists
  }
}

/// Temp files younger than this may belong to a writer still at work.
const TEMP_GRACE_NS: i128 = 10 * 60 * 1_000_000_000;

fn is_old(path: &Path) -> bool {
  fs::symlink_metadata(path).map(|m| StatStamp::of(&m).mtime_ns < now_ns() - TEMP_GRACE_NS).unwrap_or(false)
}

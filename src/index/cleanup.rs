//! Orphan removal at the end of a sync: records no existing session owns
//! and temp files of crashed writers, within the cleanup budget.

use super::dir::Name;
use super::{dir, record, Index, Source};
use crate::config::Config;
use crate::coverage::Reason;
use crate::session::source::{now_ns, StatStamp};
use rustc_hash::FxHashSet;
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// Removes index files no existing session can own: records of deleted
/// sources and temp files left by crashed writers. Names decide what is an
/// orphan; [`dir::remove_ours`] decides what may be removed (regular
/// file, index name, record magic), so a foreign file is never touched.
pub(super) fn cleanup(
  index: &Index,
  names: &[String],
  all: &[Source],
  config: &Config,
  reasons: &mut BTreeSet<Reason>,
) {
  // Hash prefixes as numbers: at 100,000 sessions a set of strings (and a
  // path per name) made this a tenth of a fresh process's first call.
  let owners: FxHashSet<u64> = all.iter().filter_map(|source| hash_value(&index.base_name(&source.path))).collect();
  let mut removed = 0u64;
  for name in names {
    let orphan = match Name::parse(name) {
      Some(Name { temp: true, .. }) => is_old(&index.dir.join(name)),
      Some(Name { file, temp: false }) => file.record_hash().is_some_and(|hash| {
        !hash_value(hash).is_some_and(|h| owners.contains(&h)) && !owned_elsewhere(index, name, hash)
      }),
      None => false,
    };
    if !orphan {
      continue;
    }
    if removed >= config.max_cache_cleanup_files {
      reasons.insert(Reason::CacheCleanupBudget);
      return;
    }
    if dir::remove_ours(&index.dir, name) {
      removed += 1;
    }
  }
}

/// The 16 hex digits that start a record name, as a number.
fn hash_value(name: &str) -> Option<u64> {
  u64::from_str_radix(name.get(..16)?, 16).ok()
}

fn owned_elsewhere(index: &Index, name: &str, hash: &str) -> bool {
  if index.elsewhere().lock().contains(name) {
    return true;
  }
  let exists = record::source_exists(&index.dir.join(name), hash);
  if exists {
    index.elsewhere().lock().insert(name.to_string());
  }
  exists
}

/// Temp files younger than this may belong to a writer still at work.
const TEMP_GRACE_NS: i128 = 10 * 60 * 1_000_000_000;

fn is_old(path: &Path) -> bool {
  fs::symlink_metadata(path).map(|m| StatStamp::of(&m).mtime_ns < now_ns() - TEMP_GRACE_NS).unwrap_or(false)
}

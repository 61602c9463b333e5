//! Orphan removal at the end of a sync: records no existing session owns
//! and temp files of crashed writers, within the cleanup budget.

use super::{ownership, record, Index, Source};
use crate::config::Config;
use crate::coverage::Reason;
use crate::session::source::{now_ns, StatStamp};
use std::collections::{BTreeSet, HashSet};
use std::fs;
use std::path::Path;

/// Removes index files no existing session can own: records of deleted
/// sources and temp files left by crashed writers. Names decide what is an
/// orphan; [`ownership::remove_ours`] decides what may be removed (regular
/// file, index name, record magic), so a foreign file is never touched.
pub(super) fn cleanup(
  index: &Index,
  names: &[String],
  all: &[Source],
  config: &Config,
  reasons: &mut BTreeSet<Reason>,
) {
  let bases: Vec<std::sync::Arc<str>> = all.iter().map(|source| index.base_name(&source.path)).collect();
  let owners: HashSet<&str> = bases.iter().map(|base| &base[..16]).collect();
  let mut removed = 0u64;
  for name in names {
    let path = index.dir.join(name);
    let orphan = match record::name_hash(name) {
      _ if record::is_temp(name) => is_old(&path),
      Some(hash) => !owners.contains(hash) && !owned_elsewhere(index, name, hash),
      None => false,
    };
    if !orphan {
      continue;
    }
    if removed >= config.max_cache_cleanup_files {
      reasons.insert(Reason::CacheCleanupBudget);
      return;
    }
    if ownership::remove_ours(&index.dir, name) {
      removed += 1;
    }
  }
}

fn owned_elsewhere(index: &Index, name: &str, hash: &str) -> bool {
  if index.elsewhere.lock().contains(name) {
    return true;
  }
  let exists = record::source_exists(&index.dir.join(name), hash);
  if exists {
    index.elsewhere.lock().insert(name.to_string());
  }
  exists
}

/// Temp files younger than this may belong to a writer still at work.
const TEMP_GRACE_NS: i128 = 10 * 60 * 1_000_000_000;

fn is_old(path: &Path) -> bool {
  fs::symlink_metadata(path).map(|m| StatStamp::of(&m).mtime_ns < now_ns() - TEMP_GRACE_NS).unwrap_or(false)
}

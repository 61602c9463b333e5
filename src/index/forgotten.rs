//! A forget, applied to the index: the forgotten file's records are removed
//! from the index dir (its vocabulary and text are then nowhere on disk),
//! it leaves the resident state, and a global synchronization, which no
//! longer lists it (`sources::without_forgotten`), rewrites the packed heads
//! of active mode without it; the shards of active mode's cold dictionary
//! that may name it (every one its placement ever gave it) are removed (the
//! next query builds them without it; left as they were, a shard still
//! vouched for its other sessions and kept the forgotten one's terms and
//! file name on disk). All mode's heads and
//! dictionary, which may still name it, are removed: that mode's next call
//! rebuilds them from its records. A cold-body dictionary trained on a body
//! of the session is retired: the records compressed with it are
//! compressed again without it, and its file is removed.

use super::dir::IndexFile;
use super::{dictionary, heads, sync, Context, Index};
use crate::index::record::{self, CacheRecord, Tier};
use crate::session::discover::Scope;
use crate::session::lineage::Branches;
use rayon::prelude::*;
use std::path::Path;

/// Drops what the index holds of the session at `path`; how many of its
/// records were removed.
pub fn drop_session(cx: &Context<'_>, path: &Path) -> usize {
  let index = Index::shared(cx.dir());
  let removed = {
    let state = index.sync_state();
    let _guard = state.lock();
    state.forget_last();
    // A queued write-behind of its record is skipped once it is not resident.
    index.resident().retain(|resident| resident != path);
    let removed = remove_records(&index, path);
    // Active mode's shards that may name it: every one it could have been placed in.
    for shard in dictionary::placement::every_shard(&path.to_string_lossy()) {
      index.dictionaries().remove(index.dir(), Branches::Active, shard);
    }
    retire_dictionaries(cx, &index, path);
    // The session dirs' listings name its file; the sync below writes them
    // again without its dir.
    index.listing().drop_persisted_dirs();
    index.dir().drop_persisted_names();
    removed
  };
  for shard in 0..dictionary::SHARDS {
    index.dir().remove_ours(&heads::file_name(Branches::All, shard));
    index.dir().remove_ours(&dictionary::file_name(Branches::All, shard));
  }
  // The answer does not matter here: the sync rewrites what names the session.
  let _ = sync::sync(cx, &Scope::Global, Branches::Active);
  // A write that was under way while the lock was taken has landed by now.
  removed + remove_records(&index, path)
}

/// Retires the cold-body dictionaries trained on a body of `path`: every
/// cold record compressed with one is compressed again (a record that
/// cannot be is removed, and rebuilt), then the dictionaries' files go.
/// Cold records and packed heads held before are dropped: their files
/// changed. Under the sync lock.
fn retire_dictionaries(cx: &Context<'_>, index: &Index, path: &Path) {
  let names = index.names(cx);
  let retired = index.bodies().retire(&names, path);
  if retired.is_empty() {
    return;
  }
  let dictionaries = &**index.bodies();
  let limit = cx.config.max_cold_cache_bytes;
  let cold = |name: &&str| matches!(IndexFile::parse(name), Some(IndexFile::Record { tier: Tier::Cold, .. }));
  names.par_iter().filter(cold).for_each(|name| {
    let Ok(bytes) = record::read(&index.dir().join(name), limit) else { return };
    if !record::body_dictionary(&bytes).is_some_and(|id| retired.contains(&id)) {
      return;
    }
    let recompressed = CacheRecord::recompress(&bytes, dictionaries);
    if recompressed.is_none_or(|bytes| index.dir().write(name, &bytes).is_err()) {
      index.dir().remove_ours(name);
    }
  });
  index.bodies().remove(&retired);
  index.resident().retain_records(|record| record.tier() != Tier::Cold);
  for branches in [Branches::Active, Branches::All] {
    for shard in 0..dictionary::SHARDS {
      index.dir().remove_ours(&heads::file_name(branches, shard));
    }
  }
}

fn remove_records(index: &Index, path: &Path) -> usize {
  let mut removed = 0;
  for branches in [Branches::Active, Branches::All] {
    for tier in [Tier::Hot, Tier::Cold] {
      removed += usize::from(index.dir().remove_ours(&index.record_name(path, branches, tier)));
    }
  }
  removed
}

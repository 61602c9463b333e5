//! A forget, applied to the index: the forgotten file's records are removed
//! from the index dir (its vocabulary and text are then nowhere on disk),
//! it leaves the resident state, and a global synchronization, which no
//! longer lists it (`sources::without_forgotten`), rewrites the packed heads
//! and the cold dictionary of active mode without it. All mode's heads and
//! dictionary, which may still name it, are removed: that mode's next call
//! rebuilds them from its records.

use super::{dictionary, heads, sync, Context, Index};
use crate::index::record::Tier;
use crate::session::discover::Scope;
use crate::session::lineage::Branches;
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
    remove_records(&index, path)
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

fn remove_records(index: &Index, path: &Path) -> usize {
  let mut removed = 0;
  for branches in [Branches::Active, Branches::All] {
    for tier in [Tier::Hot, Tier::Cold] {
      removed += usize::from(index.dir().remove_ours(&index.record_name(path, branches, tier)));
    }
  }
  removed
}

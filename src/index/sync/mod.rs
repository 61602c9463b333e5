//! Synchronization, part of every indexing call and bounded by its work
//! budgets: it classifies tiers over all sessions of the agent dir (newest
//! `hotSessions` are hot), reuses records whose source provably did not
//! change, builds the rest in parallel (appends incrementally), writes them
//! atomically, drops the other tier's record after its replacement exists,
//! removes orphaned records, and reports coverage. When it returns, every
//! record it built is on disk, except the hot records of a patched
//! synchronization (an append in a warm process): those the index's writer
//! writes right after it (`writer`).
//!
//! The last synchronization of each sync key (scope, settings, live branch)
//! is reused while nothing it depended on changed; it is patched when the
//! watch names a few changed files (`patch`);
//! otherwise the full pass runs (`full`). `tally` keeps the coverage counts
//! and the call's budgets.

mod full;
mod patch;
mod session;
mod tally;

use crate::coverage::{Coverage, Reason};
use crate::error::ContractError;
use crate::index::dir::Names;
use crate::index::record::{CacheRecord, Tier};
use crate::index::snapshot::Worked;
use crate::index::writer::Write;
use crate::index::Context;
use crate::index::{Index, Snapshot, Source};
use crate::session::discover::Scope;
use crate::session::lineage::Branches;
use crate::session::source::now_ns;
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::sync::Arc;
use tally::Tally;

/// One eligible session after synchronization.
#[derive(Debug, Clone)]
pub struct Synced {
  /// The listing's own path, interned (`sources::interned`).
  pub path: &'static Path,
  pub tier: Tier,
  /// `None` when the session could not be indexed (budget, unavailable).
  pub record: Option<Arc<CacheRecord>>,
}

/// An index's synchronization state: one synchronization at a time (queries
/// read resident records freely), and the last one of each sync key
/// (scope, settings, live branch), reused while nothing it depended on
/// changed. One per key, not one in all: a follow call's one-session scope,
/// or Pi's project scope beside a global call, no longer throws away the
/// global synchronization, which then cost the next global call a full pass
/// (~100 ms at 100,000 sessions).
#[derive(Default)]
pub(crate) struct State {
  lock: parking_lot::Mutex<()>,
  /// Most recently used last.
  last: parking_lot::Mutex<Vec<LastSync>>,
}

/// How many sync keys keep their last synchronization: global, project, and
/// a few explicit scopes or settings. Each holds a session list (~15 MB at
/// 100,000 sessions, its records shared with the others).
const LAST_SYNCS: usize = 4;

impl State {
  /// Held by whatever must not run beside a synchronization (the writer).
  pub(crate) fn lock(&self) -> parking_lot::MutexGuard<'_, ()> {
    self.lock.lock()
  }

  /// The lock, unless a synchronization holds it.
  pub(crate) fn try_lock(&self) -> Option<parking_lot::MutexGuard<'_, ()>> {
    self.lock.try_lock()
  }

  /// Whether a synchronization of this index was kept in this process.
  fn kept(&self) -> bool {
    !self.last.lock().is_empty()
  }

  /// The next call runs a synchronization of its own.
  pub(crate) fn forget_last(&self) {
    self.last.lock().clear();
  }

  /// The last synchronization of `key`, taken out.
  fn take(&self, key: &str) -> Option<LastSync> {
    let mut last = self.last.lock();
    let at = last.iter().position(|l| l.key == key)?;
    Some(last.remove(at))
  }

  /// Keeps `sync` as its key's last synchronization, the least recently
  /// used one of another key dropped when there are too many.
  fn keep(&self, sync: LastSync) {
    let mut last = self.last.lock();
    last.retain(|l| l.key != sync.key);
    last.push(sync);
    if last.len() > LAST_SYNCS {
      last.remove(0);
    }
  }
}

/// What a synchronization depended on, and its result.
struct LastSync {
  key: String,
  sources: Arc<Vec<Source>>,
  names: Arc<Names>,
  at_ns: i128,
  /// Taken after the sources were known: a source quiet since then is unchanged.
  listed_ns: i128,
  result: Snapshot,
  /// Every one of `sources` was found unchanged since: the same listing
  /// needs no second look (the proof depends on nothing else).
  proven: bool,
  /// The synchronization's own reasons and its records' tally: what a
  /// patch recomputes the coverage from.
  reasons: BTreeSet<Reason>,
  tally: Tally,
}

/// Everything besides the files that shapes a synchronization's result,
/// the entries forgotten one by one included: a forget in another process
/// changes no session file, yet every record holding the entry is stale.
fn sync_key(cx: &Context<'_>, scope: &Scope, branches: Branches) -> String {
  let d = &cx.discovery;
  let live = cx.live.map(|l| (&d.live_file, &l.leaf_id, l.ids.len(), l.ids.last()));
  let (cwd, agent_dir, session_dir) = (&d.cwd, &d.agent_dir, &d.session_dir);
  let list = crate::forgotten::load(agent_dir).unwrap_or_default();
  let forgotten: Vec<_> = list.sessions.iter().filter_map(|s| Some((&s.session_id, s.entry_id.as_ref()?))).collect();
  format!("{scope:?}|{branches:?}|{:?}|{cwd:?}|{agent_dir:?}|{session_dir:?}|{live:?}|{forgotten:?}", cx.config)
}

/// Rebuilds the cold record of `path` from source, for a query that found
/// the record's content gone, replaced or damaged since its head was read
/// (the content is read only when first needed): the query then answers as
/// an intact record would. The next call does not reuse the last
/// synchronization, which holds the unreadable record. `None` when the
/// source cannot be indexed either.
pub(crate) fn rebuild_cold(cx: &Context<'_>, path: &Path, branches: Branches) -> Option<Arc<CacheRecord>> {
  let index = Index::shared(cx.dir());
  // One builder per index at a time, as in `sync`: a concurrent sync never
  // builds the same session beside it. A query asks this from rayon jobs,
  // and a synchronization holds the lock across rayon work: waiting without
  // end, two such jobs could leave it no thread to finish on. Past the
  // bound the record stays unreadable for this call (the next one rebuilds
  // it, as the synchronization forgotten here makes sure).
  let state = index.sync_state();
  state.forget_last();
  let _guard = state.lock.try_lock_for(REBUILD_WAIT)?;
  // A synchronization that finished meanwhile kept its result, this record and all.
  state.forget_last();
  let source = Source::of(path, &fs::metadata(path).ok()?);
  session::rebuild(cx, &index, &source, Tier::Cold, branches, Write::Now).ok().map(|(record, _)| record)
}

/// How long a query's rebuild of a damaged cold record waits for a
/// synchronization to finish (see [`rebuild_cold`]).
const REBUILD_WAIT: std::time::Duration = std::time::Duration::from_millis(if cfg!(test) { 100 } else { 2_000 });

/// The next call runs a synchronization of its own: a query found a
/// resident hot shard damaged (`HotShard::damaged`), which that
/// synchronization's freshness check then rebuilds.
pub(crate) fn resync(cx: &Context<'_>) {
  Index::shared(cx.dir()).sync_state().forget_last();
}

/// Synchronizes the records of `scope` in `branches` mode.
pub fn sync(cx: &Context<'_>, scope: &Scope, branches: Branches) -> Result<Snapshot, ContractError> {
  let index = Index::shared(cx.dir());
  let state = index.sync_state();
  let _guard = state.lock.lock();
  let started_ns = now_ns();
  // Side by side until watched: at 100,000 sessions listing the session
  // dirs and listing the index dir are each ~100 ms of one core (mostly the
  // kernel's readdir). Watched and remembered, each costs microseconds, and
  // handing one to a worker thread was a sixth of a warm common-word recall
  // on `medium` (p50 0.57-0.59 -> 0.47-0.49 ms in turn).
  let list = || (index.listing().remembered(cx), now_ns());
  let ((all, listed_ns), names) = match state.kept() && index.listing().watched() {
    true => (list(), index.names(cx)),
    false => rayon::join(list, || index.names(cx)),
  };
  let all = all?;
  index.bodies().adopt(&names, &cx.discovery.agent_dir);
  let key = sync_key(cx, scope, branches);
  // Taken, not cloned: a patch then updates the only copy of the session
  // list in place (no 1,000-entry clone and drop per append). Only a
  // builder under the sync lock (`rebuild_cold`) drops it meanwhile.
  // The same names, though not always the same `Arc`: a listing read again
  // (the index dir's watch re-armed, or its report came late) holds equal
  // names when nothing but our own atomic writes happened there.
  let last = state.take(&key).filter(|last| Arc::ptr_eq(&last.names, &names) || last.names == names);
  let last = match last {
    Some(mut last) => {
      if unchanged(&index, &mut last, &all) {
        let result = last.result.clone();
        state.keep(last);
        return Ok(result);
      }
      Some(last)
    }
    None => None,
  };
  let outcome = match last.and_then(|last| patch::patch(cx, &index, scope, branches, last, &all, &names)) {
    Some(patched) => patched?,
    None => full::sync_changed(cx, &index, scope, branches, &all, &names)?,
  };
  let Outcome { sessions, coverage, reasons, tally, patched } = outcome;
  let result = match patched {
    Some((before, changed)) => Snapshot::patched(before, sessions, coverage, &changed),
    None => Snapshot::new(index.clone(), branches, sessions, coverage),
  };
  // Explicit and current-session scopes may name files outside the listing.
  let reusable = matches!(scope, Scope::Global | Scope::Project)
    && result.sessions.iter().all(|s| s.record.is_some())
    // A record that could not be written is tried again by the next call,
    // and so is a cleanup that ran out of budget.
    && !result.coverage.reasons.iter().any(|r| matches!(r, Reason::IndexWriteFailed | Reason::CacheCleanupBudget))
    && !result.coverage.reasons.iter().any(|r| r.is_sync_budget());
  if reusable {
    let names = index.names(cx);
    let result = result.clone();
    let at_ns = started_ns;
    state.keep(LastSync { key, sources: all, names, at_ns, listed_ns, result, proven: false, reasons, tally });
  }
  Ok(result)
}

/// Same inputs (the caller checked the key and the index dir's names),
/// every source unchanged (the watch vouches for it, or its stamp is
/// unchanged and old enough to prove it): the previous answer still holds.
fn unchanged(index: &Index, last: &mut LastSync, all: &Arc<Vec<Source>>) -> bool {
  if last.proven && Arc::ptr_eq(&last.sources, all) {
    return true;
  }
  let proven = |b: &Source| b.quiet_since(last.listed_ns) || b.stamp.proves_unchanged_since(last.at_ns);
  let unchanged = if Arc::ptr_eq(&last.sources, all) {
    all.iter().all(proven)
  } else if let Some(delta) = index.listing().delta(&last.sources, all) {
    // Restated from the last listing (an append): only these can differ.
    delta.iter().all(|&at| last.sources[at].stamp == all[at].stamp && proven(&all[at]))
  } else {
    last.sources.len() == all.len()
      && last.sources.iter().zip(all.iter()).all(|(a, b)| Source::same_path(a, b) && a.stamp == b.stamp && proven(b))
  };
  if unchanged {
    (last.sources, last.proven) = (all.clone(), true);
  }
  unchanged
}

/// A synchronization's result and what a later patch of it needs.
struct Outcome {
  sessions: Arc<Vec<Synced>>,
  coverage: Coverage,
  /// The synchronization's own reasons (budgets, writes, cleanup).
  reasons: BTreeSet<Reason>,
  tally: Tally,
  /// A patch's: what the last snapshot worked out, and the slots it changed.
  patched: Option<(Worked, Vec<usize>)>,
}

/// A session to build: its slot in the session list, tier and planned cost.
type Planned = (usize, Source, Tier, u64);

#[cfg(test)]
mod patch_tests;
#[cfg(test)]
mod tests;

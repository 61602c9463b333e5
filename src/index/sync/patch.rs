//! The incremental synchronization: when the session watch names only a few
//! changed or new files and everything else the last synchronization
//! depended on still holds, only those sessions are checked and rebuilt,
//! and the last result is patched (their entries in the session list, the
//! coverage tally) instead of a full pass over every session.
//!
//! It answers as the full pass would: the caller has already checked the
//! same inputs (scope, settings, live branch: the sync key) and the same
//! index dir listing; here every other session must be vouched for by the
//! watch (an old stamp is not enough: after an overflow, or without a watch,
//! every file is in doubt), no listed file may be gone, the unchanged ones
//! must keep their order (new files may come anywhere, and a changed one
//! may move: an append makes its session the newest), and each changed file
//! must be in the last result and still in scope. A new file joins the
//! result in its place when in scope; a session those moves carry across
//! the newest `hotSessions` changes tier. The changed, new and retiered
//! sessions then go through the full pass's own steps (load and verify,
//! budget, build). Not done here: the cold term dictionary's
//! refresh (a cold record built here is a straggler its shard does not
//! vouch for, searched directly), the packed heads, orphan cleanup
//! (no source is gone when no path went; temp files of crashed writers wait
//! for the next full pass, as with the unchanged shortcut).

use super::full::build_planned;
use super::session as one;
use super::tally::Budget;
use super::{LastSync, Outcome, Synced};
use crate::error::ContractError;
use crate::index::dir::Names;
use crate::index::freshness::PolicyCheck;
use crate::index::record::Tier;
use crate::index::sources::{in_scope, same_file};
use crate::index::trace::{Event, Pass};
use crate::index::writer::Write;
use crate::index::Context;
use crate::index::{ownership, Address, Index, Source};
use crate::session::discover::Scope;
use crate::session::lineage::Branches;
use std::sync::Arc;

/// More changed files than this: a full pass (it checks them in parallel).
pub(super) const MAX_PATCHED: usize = 8;

/// The patched result, `None` when a full pass is needed.
pub(super) fn patch(
  cx: &Context<'_>,
  index: &Index,
  scope: &Scope,
  branches: Branches,
  last: LastSync,
  all: &Arc<Vec<Source>>,
  names: &Names,
) -> Option<Result<Outcome, ContractError>> {
  let delta = index.listing().delta(&last.sources, all);
  let hot = cx.config.hot_sessions as usize;
  let changes = compare(&last, all, delta.as_deref(), hot)?;
  let discovery = &cx.discovery;
  let project = (*scope == Scope::Project).then(|| discovery.project_dir());
  let in_scope = |source: &Source| in_scope(index.listing(), discovery, project.as_deref(), source);
  // A changed session must be in the last result and still in scope; a
  // retiered one out of it is none of this scope's; a new one joins it when
  // in scope.
  for &at in &changes.changed {
    last.result.sessions.iter().position(|s| same_file(s.path, all[at].path))?;
    if !in_scope(&all[at]) {
      return None;
    }
  }
  let joining: Vec<usize> = changes.added.iter().copied().filter(|&at| in_scope(&all[at])).collect();
  if let Err(e) = ownership::check(&cx.discovery, index.dir().path(), names) {
    return Some(Err(e));
  }
  index.trace().note(|| Event::Pass(Pass::Patched));
  let policies = PolicyCheck::new(cx, branches);
  let LastSync { result, mut tally, mut reasons, .. } = last;
  // In place when no caller still holds the last result.
  let (mut sessions, worked) = result.into_parts();
  let synced = Arc::make_mut(&mut sessions);
  let touched: Vec<usize> = changes.touched(&joining);
  let slots = match joining.is_empty() && !changes.reordered {
    true => existing_slots(synced, all, &touched),
    false => join(synced, all, &changes.changed, &joining, &touched)?,
  };
  let mut budget = Budget { sessions: 0, bytes: 0 };
  let mut planned = Vec::new();
  for &(slot, at) in &slots {
    let source = &all[at];
    let tier = if at < hot { Tier::Hot } else { Tier::Cold };
    synced[slot].tier = tier;
    if let Some(old) = synced[slot].record.take() {
      tally.remove(&old);
    }
    let resident = index.resident().get(source.path, branches);
    match one::load_fresh(cx, index, &policies, (source, resident), tier, branches, &|path, tier| {
      let name = index.record_name(path, branches, tier);
      names.contains(&name)
    }) {
      Some(record) => synced[slot].record = Some(record),
      None => {
        let cost = one::planned_cost(index, source, tier, branches);
        // Over a budget: the full pass reports it.
        budget.charge(cx.config, cost).ok()?;
        planned.push((slot, source.clone(), tier, cost));
      }
    }
  }
  // On the path of every append: the hot records are written behind the
  // call. A new session's record, or one whose session changed tier, is a
  // new name in the index dir, which the next call would take for someone
  // else's change (and run the full pass) unless it is there before this
  // call keeps its listing.
  let renamed = !joining.is_empty() || !changes.retiered.is_empty() || changes.reordered;
  let write = if renamed { Write::Now } else { Write::Behind };
  // No dictionary refresh for a cold record built here (a session that went
  // cold, or an append with every session cold): its shard does not vouch
  // for it, so queries search it directly until enough such stragglers make
  // a query rebuild that shard, or the next full pass refreshes them all.
  // Matching every cold session against the shards for one straggler was
  // most of a new session's cost at 100,000 sessions.
  let unavailable = build_planned(cx, index, branches, (planned, write), synced, &mut reasons).unavailable;
  for &(slot, _) in &slots {
    if let Some(record) = &synced[slot].record {
      tally.add(record);
    }
  }
  let coverage = tally.coverage(synced.len(), &reasons, unavailable);
  let changed = slots.iter().map(|&(slot, _)| slot).collect();
  // What the last snapshot worked out is by slot: after a move, every slot
  // between the old and new places holds another session.
  let patched = (!changes.reordered).then_some((worked, changed));
  Some(Ok(Outcome { sessions, coverage, reasons, tally, patched }))
}

/// How the listing differs from the last synchronization's, as positions in
/// the listing now.
#[derive(Default)]
struct Changes {
  /// Listed before, and the watch does not vouch for them since.
  changed: Vec<usize>,
  /// Not listed before: new session files.
  added: Vec<usize>,
  /// Listed before and not changed, now on the other side of the newest
  /// `hotSessions` (new or changed files came before them, or a changed
  /// one left from before them): their records change tier.
  retiered: Vec<usize>,
  /// Some changed file moved in the order (an append to a session other
  /// than the newest).
  reordered: bool,
}

impl Changes {
  fn len(&self) -> usize {
    self.changed.len() + self.added.len() + self.retiered.len()
  }

  /// The positions whose records this patch checks or builds: the changed,
  /// the retiered and the `joining` new ones, ascending, each once.
  fn touched(&self, joining: &[usize]) -> Vec<usize> {
    let mut touched: Vec<usize> = [&self.changed, &self.retiered, joining].concat();
    touched.sort_unstable();
    touched.dedup();
    touched
  }
}

/// How `all` differs from the last synchronization's listing; `None` when
/// only a full pass can say (a file went, an unchanged one moved in the
/// order, or too many changed). New files may come anywhere, and a changed
/// file may move (an append makes its session the newest); the others keep
/// their order, so a session changes tier only when those moves carry it
/// across the newest `hot`.
/// `delta`: the only positions where `all` can differ (see `Listing::delta`).
fn compare(last: &LastSync, all: &[Source], delta: Option<&[usize]>, hot: usize) -> Option<Changes> {
  let was = &last.sources;
  let differs = |was: &Source, now: &Source| was.stamp != now.stamp || !now.quiet_since(last.listed_ns);
  if was.len() == all.len() {
    let mut changes = Changes::default();
    let mut check = |at: usize| -> Option<()> {
      if !Source::same_path(&was[at], &all[at]) {
        return None;
      }
      if differs(&was[at], &all[at]) {
        changes.changed.push(at);
      }
      (changes.len() <= MAX_PATCHED).then_some(())
    };
    let same_order = match delta {
      Some(delta) => delta.iter().try_for_each(|&at| check(at)),
      None => (0..all.len()).try_for_each(check),
    };
    if same_order.is_some() {
      return Some(changes);
    }
  }
  if all.len() < was.len() || all.len() - was.len() > MAX_PATCHED {
    return None;
  }
  // Where each file was: by the interned path's address (every listed path is one).
  let old: rustc_hash::FxHashMap<Address, usize> =
    was.iter().enumerate().map(|(at, s)| (Address::of(s.path), at)).collect();
  let mut changes = Changes { reordered: true, ..Changes::default() };
  let (mut matched, mut last_unchanged) = (0, None);
  for (at, now) in all.iter().enumerate() {
    let Some(&before) = old.get(&Address::of(now.path)) else {
      changes.added.push(at);
      continue;
    };
    matched += 1;
    if differs(&was[before], now) {
      changes.changed.push(at);
    } else {
      // The unchanged keep their order.
      if last_unchanged.is_some_and(|last| last > before) {
        return None;
      }
      last_unchanged = Some(before);
      if (before < hot) != (at < hot) {
        changes.retiered.push(at);
      }
    }
    if changes.len() > MAX_PATCHED {
      return None;
    }
  }
  (matched == was.len()).then_some(changes)
}

/// The slots of the `touched` positions of `all` in the last result (the
/// same sessions in the same order); a touched source not in it (out of
/// scope) has none.
fn existing_slots(synced: &[Synced], all: &[Source], touched: &[usize]) -> Vec<(usize, usize)> {
  let slot_of = |at: usize| synced.iter().position(|s| same_file(s.path, all[at].path));
  touched.iter().filter_map(|&at| Some((slot_of(at)?, at))).collect()
}

/// `synced` in the order of `all`: the `changed` sources' entries where
/// they are now, the `joining` new sources in their places (their records
/// to come); and the slots of the `touched` positions. The last result's
/// other sessions are a subsequence of `all` in its order.
fn join(
  synced: &mut Vec<Synced>,
  all: &[Source],
  changed: &[usize],
  joining: &[usize],
  touched: &[usize],
) -> Option<Vec<(usize, usize)>> {
  let same = |entry: &Synced, source: &Source| same_file(entry.path, source.path);
  let mut moving: Vec<(usize, Synced)> = Vec::with_capacity(changed.len());
  let mut rest = Vec::with_capacity(synced.len());
  for entry in std::mem::take(synced) {
    match changed.iter().find(|&&at| same(&entry, &all[at])) {
      Some(&at) => moving.push((at, entry)),
      None => rest.push(entry),
    }
  }
  let mut before = rest.into_iter().peekable();
  let mut slots = Vec::with_capacity(touched.len());
  for (at, source) in all.iter().enumerate() {
    let entry = if let Some(found) = moving.iter().position(|(moved, _)| *moved == at) {
      moving.swap_remove(found).1
    } else if let Some(entry) = before.next_if(|entry| same(entry, source)) {
      entry
    } else if joining.binary_search(&at).is_ok() {
      Synced { path: source.path, tier: Tier::Hot, record: None }
    } else {
      continue;
    };
    if touched.binary_search(&at).is_ok() {
      slots.push((synced.len(), at));
    }
    synced.push(entry);
  }
  (before.peek().is_none() && moving.is_empty()).then_some(slots)
}

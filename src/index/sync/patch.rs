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
//! every file is in doubt), the paths listed before must keep their order
//! (which decides tiers) with new files anywhere among them, and each
//! changed file must be in the last result and still in scope. A new file
//! joins the result in its place when in scope; one listed among the newest
//! `hotSessions` that new files pushed past them goes cold. The changed,
//! new and demoted sessions then go through the full pass's own steps (load
//! and verify, budget, build). Not done here: the cold term dictionary's
//! refresh (a cold record built here is a straggler its shard does not
//! vouch for, searched directly), the packed heads, orphan cleanup
//! (no source is gone when no path went; temp files of crashed writers wait
//! for the next full pass, as with the unchanged shortcut).

use super::full::build_planned;
use super::session as one;
use super::tally::Budget;
use super::{LastSync, Outcome, Synced};
use crate::error::ContractError;
use crate::index::freshness::PolicyCheck;
use crate::index::record::Tier;
use crate::index::sources::in_scope;
use crate::index::trace::{Event, Pass};
use crate::index::writer::Write;
use crate::index::Context;
use crate::index::{ownership, Index, Source};
use crate::session::discover::Scope;
use crate::session::lineage::Branches;
use std::sync::Arc;

/// More changed files than this: a full pass (it checks them in parallel).
const MAX_PATCHED: usize = 8;

/// The patched result, `None` when a full pass is needed.
pub(super) fn patch(
  cx: &Context<'_>,
  index: &Index,
  scope: &Scope,
  branches: Branches,
  last: LastSync,
  all: &Arc<Vec<Source>>,
  names: &[String],
) -> Option<Result<Outcome, ContractError>> {
  let delta = index.listing().delta(&last.sources, all);
  let hot = cx.config.hot_sessions as usize;
  let changes = compare(&last, all, delta.as_deref(), hot)?;
  let discovery = &cx.discovery;
  let project = (*scope == Scope::Project).then(|| discovery.project_dir());
  let in_scope = |source: &Source| in_scope(index.listing(), discovery, project.as_deref(), source);
  // A changed session must be in the last result and still in scope; a
  // demoted one out of it is none of this scope's; a new one joins it when
  // in scope.
  for &at in &changes.changed {
    last.result.sessions.iter().position(|s| s.path.as_os_str() == all[at].path.as_os_str())?;
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
  let slots = match joining.is_empty() {
    true => existing_slots(synced, all, &touched)?,
    false => join(synced, all, &joining, &touched)?,
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
    match one::load_fresh(cx, index, &policies, source, tier, branches, &|path, tier| {
      let name = index.record_name(path, branches, tier);
      names.binary_search_by(|n| n.as_str().cmp(&name)).is_ok()
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
  // call. A new session's record (or a demoted one's) is a new name in the
  // index dir, which the next call would take for someone else's change
  // (and run the full pass) unless it is there before this call keeps its
  // listing; a new session is small.
  let write = if joining.is_empty() && changes.demoted.is_empty() { Write::Behind } else { Write::Now };
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
  Some(Ok(Outcome { sessions, coverage, reasons, tally, patched: Some((worked, changed)) }))
}

/// How the listing differs from the last synchronization's, as positions in
/// the listing now.
#[derive(Default)]
struct Changes {
  /// Listed before, and the watch does not vouch for them since.
  changed: Vec<usize>,
  /// Not listed before: new session files.
  added: Vec<usize>,
  /// Listed before among the newest `hotSessions`, now past them (new
  /// files came before them): their records change tier.
  demoted: Vec<usize>,
}

impl Changes {
  fn len(&self) -> usize {
    self.changed.len() + self.added.len() + self.demoted.len()
  }

  /// The positions whose records this patch checks or builds: the changed,
  /// the demoted and the `joining` new ones, ascending, each once.
  fn touched(&self, joining: &[usize]) -> Vec<usize> {
    let mut touched: Vec<usize> = [&self.changed, &self.demoted, joining].concat();
    touched.sort_unstable();
    touched.dedup();
    touched
  }
}

/// How `all` differs from the last synchronization's listing; `None` when
/// only a full pass can say (a file went or moved in the order, or too many
/// changed). New files may come anywhere in the order; every file listed
/// before must keep its place relative to the others, so only new files
/// before them move them past the newest `hot` (never forward).
/// `delta`: the only positions where `all` can differ (see `Listing::delta`).
fn compare(last: &LastSync, all: &[Source], delta: Option<&[usize]>, hot: usize) -> Option<Changes> {
  let was = &last.sources;
  let differs = |was: &Source, now: &Source| was.stamp != now.stamp || !now.quiet_since(last.listed_ns);
  let mut changes = Changes::default();
  if was.len() == all.len() {
    let mut check = |at: usize| -> Option<()> {
      if !Source::same_path(&was[at], &all[at]) {
        return None;
      }
      if differs(&was[at], &all[at]) {
        changes.changed.push(at);
      }
      (changes.len() <= MAX_PATCHED).then_some(())
    };
    match delta {
      Some(delta) => delta.iter().try_for_each(|&at| check(at))?,
      None => (0..all.len()).try_for_each(check)?,
    }
    return Some(changes);
  }
  if all.len() < was.len() || all.len() - was.len() > MAX_PATCHED {
    return None;
  }
  let mut before = was.iter().enumerate().peekable();
  for (at, now) in all.iter().enumerate() {
    match before.next_if(|(_, before)| Source::same_path(before, now)) {
      Some((old, before)) => {
        if differs(before, now) {
          changes.changed.push(at);
        }
        if old < hot && at >= hot {
          changes.demoted.push(at);
        }
      }
      None => changes.added.push(at),
    }
    if changes.len() > MAX_PATCHED {
      return None;
    }
  }
  before.peek().is_none().then_some(changes)
}

/// The slots of the `touched` positions of `all` in the last result (the
/// same sessions in the same order); a touched source not in it (out of
/// scope) has none.
fn existing_slots(synced: &[Synced], all: &[Source], touched: &[usize]) -> Option<Vec<(usize, usize)>> {
  let slot_of = |at: usize| synced.iter().position(|s| s.path.as_os_str() == all[at].path.as_os_str());
  Some(touched.iter().filter_map(|&at| Some((slot_of(at)?, at))).collect())
}

/// `synced` with the `joining` new sources of `all` in their places (their
/// records to come), and the slots of the `touched` positions. The last
/// result's sessions are a subsequence of `all` in its order.
fn join(synced: &mut Vec<Synced>, all: &[Source], joining: &[usize], touched: &[usize]) -> Option<Vec<(usize, usize)>> {
  let mut before = std::mem::take(synced).into_iter().peekable();
  let mut slots = Vec::with_capacity(touched.len());
  for (at, source) in all.iter().enumerate() {
    let kept = before.next_if(|s| std::ptr::eq(s.path, source.path) || s.path.as_os_str() == source.path.as_os_str());
    let entry = match kept {
      Some(entry) => entry,
      None if joining.binary_search(&at).is_ok() => Synced { path: source.path, tier: Tier::Hot, record: None },
      None => continue,
    };
    if touched.binary_search(&at).is_ok() {
      slots.push((synced.len(), at));
    }
    synced.push(entry);
  }
  before.peek().is_none().then_some(slots)
}

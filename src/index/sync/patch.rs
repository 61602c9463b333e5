//! The incremental synchronization: when the session watch names only a few
//! changed files and everything else the last synchronization depended on
//! still holds, only those sessions are checked and rebuilt, and the last
//! result is patched (their entries in the session list, the coverage
//! tally) instead of a full pass over every session.
//!
//! It answers as the full pass would: the caller has already checked the
//! same inputs (scope, settings, live branch: the sync key) and the same
//! index dir listing; here every other session must be vouched for by the
//! watch (an old stamp is not enough: after an overflow, or without a watch,
//! every file is in doubt), the paths and their order (which decides tiers)
//! must be the same, and each changed file must be in the last result and
//! still in scope. The changed sessions then go through the full pass's own
//! steps (load and verify, budget, build, dictionary). Not done here:
//! orphan cleanup (no source is gone when the paths are the same; temp files
//! of crashed writers wait for the next full pass, as with the unchanged
//! shortcut).

use super::full::build_planned;
use super::session as one;
use super::tally::Budget;
use super::{LastSync, Outcome};
use crate::error::ContractError;
use crate::index::freshness::PolicyCheck;
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
  let changed = changed(&last, all, delta.as_deref())?;
  let discovery = &cx.discovery;
  let project = (*scope == Scope::Project).then(|| discovery.project_dir());
  let mut slots = Vec::with_capacity(changed.len());
  for &at in &changed {
    let source = &all[at];
    let slot = last.result.sessions.iter().position(|s| s.path.as_os_str() == source.path.as_os_str())?;
    if !in_scope(index.listing(), discovery, project.as_deref(), source) {
      return None;
    }
    slots.push((slot, source));
  }
  if let Err(e) = ownership::check(&cx.discovery, index.dir().path(), names) {
    return Some(Err(e));
  }
  index.trace().note(|| Event::Pass(Pass::Patched));
  let policies = PolicyCheck::new(cx, branches);
  let LastSync { result, mut tally, mut reasons, .. } = last;
  // In place when no caller still holds the last result.
  let (mut sessions, worked) = result.into_parts();
  let synced = Arc::make_mut(&mut sessions);
  let mut budget = Budget { sessions: 0, bytes: 0 };
  let mut planned = Vec::new();
  for &(slot, source) in &slots {
    let tier = synced[slot].tier;
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
  // On the path of every append: the hot records are written behind the call.
  let unavailable = build_planned(cx, index, scope, branches, (planned, Write::Behind), synced, &mut reasons);
  for &(slot, _) in &slots {
    if let Some(record) = &synced[slot].record {
      tally.add(record);
    }
  }
  let coverage = tally.coverage(synced.len(), &reasons, unavailable);
  let changed = slots.iter().map(|&(slot, _)| slot).collect();
  Some(Ok(Outcome { sessions, coverage, reasons, tally, patched: Some((worked, changed)) }))
}

/// The positions in `all` of the sources the watch does not vouch for since
/// the last synchronization listed them; `None` when the paths differ from
/// the last listing's (a file came, went or moved in the order) or too many
/// changed.
/// `delta`: the only positions where `all` can differ (see `Listing::delta`).
fn changed(last: &LastSync, all: &[Source], delta: Option<&[usize]>) -> Option<Vec<usize>> {
  if last.sources.len() != all.len() {
    return None;
  }
  let mut changed = Vec::new();
  let mut check = |at: usize| -> Option<()> {
    let (was, now) = (&last.sources[at], &all[at]);
    if !Source::same_path(was, now) {
      return None;
    }
    if was.stamp != now.stamp || !now.quiet_since(last.listed_ns) {
      changed.push(at);
      if changed.len() > MAX_PATCHED {
        return None;
      }
    }
    Some(())
  };
  match delta {
    Some(delta) => delta.iter().try_for_each(|&at| check(at))?,
    None => (0..all.len()).try_for_each(check)?,
  }
  Some(changed)
}

//! The full pass: every eligible session is checked, and stale ones built
//! in parallel; then the cold term dictionary, the packed heads and orphan
//! cleanup.

use super::session::{self as one, Persisted};
use super::tally::{Budget, Tally};
use super::{Outcome, Planned, Synced};
use crate::coverage::Reason;
use crate::error::ContractError;
use crate::index::dir::{IndexFile, Names};
use crate::index::record::{self, CacheRecord, Tier};
use crate::index::sources::{in_scope_each, named};
use crate::index::trace::{Event, Pass};
use crate::index::writer::Write;
use crate::index::Context;
use crate::index::{dictionary, freshness, heads, ownership, progress, trim_heap, Index, Source};
use crate::session::discover::Scope;
use crate::session::lineage::Branches;
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::sync::Arc;

/// How many cold records a task of the full pass checks.
const COLD_RUN: usize = 64;

/// The full pass: every eligible session is checked, and stale ones built.
pub(super) fn sync_changed(
  cx: &Context<'_>,
  index: &Index,
  scope: &Scope,
  branches: Branches,
  all: &[Source],
  names: &Names,
) -> Result<Outcome, ContractError> {
  index.trace().note(|| Event::Pass(Pass::Full));
  ownership::check(&cx.discovery, index.dir().path(), names)?;
  // What concerns every session (resident records of deleted sessions,
  // orphaned files) is the business of the passes over many: a one-session
  // pass (a follow call) paid ~60 ms for it at 100,000 sessions.
  let wide = matches!(scope, Scope::Global | Scope::Project);
  if wide {
    // Made for the first resident record: a fresh process has none, and
    // this set of 100,000 paths was 1 % of its first call.
    let mut existing: Option<rustc_hash::FxHashSet<&std::ffi::OsStr>> = None;
    index.resident().retain(|path| {
      let existing = existing.get_or_insert_with(|| all.iter().map(|s| s.path.as_os_str()).collect());
      existing.contains(path.as_os_str()) || path.exists()
    });
  }
  let policies = freshness::PolicyCheck::new(cx, branches);
  let hot: rustc_hash::FxHashSet<&std::ffi::OsStr> =
    all.iter().take(cx.config.hot_sessions as usize).map(|s| s.path.as_os_str()).collect();
  let mut reasons: BTreeSet<Reason> = BTreeSet::new();
  let mut budget = Budget { sessions: 0, bytes: 0 };
  let mut to_build = Vec::new();
  let tier_of = |source: &Source| if hot.contains(source.path.as_os_str()) { Tier::Hot } else { Tier::Cold };
  // Loading and validating records is independent per session (a fresh
  // process opens every record): in parallel. Budgets are charged in order.
  // Every record is checked against the listing (sorted): when there are
  // many, by its name's hash prefix in a set of this mode's numbers per tier
  // (a binary search of 100,000 names was a tenth of loading them, and a
  // resident record no longer keeps its name); for a few, by name.
  let in_dir = if wide { RecordHashes::of(names, branches) } else { RecordHashes::default() };
  // `base`: the source's record name's hash prefix, known for the passes over many.
  let load_one = |source: &Source, resident, base: Option<u64>| {
    let listed = |path: &std::path::Path, tier: Tier| match base {
      Some(base) => in_dir.holds(base, tier),
      None => names.contains(&index.record_name(path, branches, tier)),
    };
    one::load_fresh(cx, index, &policies, (source, resident), tier_of(source), branches, &listed)
  };
  // A hot record is read and decoded whole, a cold one only checked against
  // its resident head: hot ones go one per task, cold ones in runs of 64,
  // each run's resident slots found under one hold of their lock.
  // Hot sessions are the newest, so they lead the list; in runs they
  // all fell to one thread (`medium`: 50 hot records, 30 ms on one core
  // while the other idled).
  let load = |sources: &[Source], bases: Option<&[u64]>| -> Vec<Option<Arc<CacheRecord>>> {
    let split = sources.partition_point(|s| tier_of(s) == Tier::Hot);
    let (hot, cold) = sources.split_at(split);
    let base = |at: usize| bases.map(|bases| bases[at]);
    let resident = |source: &Source| index.resident().get(source.path, branches);
    let run = |(number, run): (usize, &[Source])| {
      let slots = index.resident().get_each(run.iter().map(|s| s.path), branches);
      let at = split + number * COLD_RUN;
      run.iter().zip(slots).enumerate().map(move |(i, (s, slot))| load_one(s, slot, base(at + i))).collect::<Vec<_>>()
    };
    let (mut loaded, cold) = rayon::join(
      || {
        hot.par_iter().enumerate().with_max_len(1).map(|(at, s)| load_one(s, resident(s), base(at))).collect::<Vec<_>>()
      },
      || cold.par_chunks(COLD_RUN).enumerate().flat_map_iter(run).collect::<Vec<_>>(),
    );
    loaded.extend(cold);
    loaded
  };
  let limit = cx.config.max_cold_cache_bytes;
  // Each listed source's base hash, for the passes over many.
  let mut all_bases: Vec<u64> = Vec::new();
  let (eligible, loaded): (Vec<Source>, Vec<_>) = match scope {
    Scope::Global | Scope::Project => {
      let discovery = &cx.discovery;
      let project = (*scope == Scope::Project).then(|| discovery.project_dir());
      // Every listed file is a candidate; for a project, those of its own
      // dir and the flat custom dir.
      let candidates: Vec<Source> = match &project {
        None => all.to_vec(),
        Some(dir) => all.iter().filter(|s| discovery.may_hold(dir, s.path)).cloned().collect(),
      };
      // A fresh process reads the cold heads packed, not record by record.
      let wanted = match &project {
        None => heads::Wanted::All,
        Some(dir) => heads::Wanted::Project { dir, candidates: &candidates },
      };
      heads::preload(index, branches, wanted, all, names, limit);
      // After the preload, which names most sources' records.
      all_bases = index.base_hashes(all);
      // A project's candidates are some of the sources; a global call's, all.
      let project_bases: Option<Vec<u64>> = project.as_ref().map(|dir| {
        all.iter().zip(&all_bases).filter(|(s, _)| discovery.may_hold(dir, s.path)).map(|(_, b)| *b).collect()
      });
      let loaded = load(&candidates, Some(project_bases.as_deref().unwrap_or(&all_bases)));
      let kept = in_scope_each(index.listing(), discovery, project.as_deref(), &candidates, &loaded);
      candidates.into_iter().zip(loaded).zip(kept).filter(|(_, kept)| *kept).map(|(pair, _)| pair).unzip()
    }
    Scope::Session | Scope::Explicit(_) => {
      let target = if let Scope::Explicit(target) = scope { Some(target.as_str()) } else { None };
      let eligible = named(index, &cx.discovery, all, target)?;
      let loaded = load(&eligible, None);
      (eligible, loaded)
    }
  };
  let mut synced = Vec::with_capacity(eligible.len());
  for (source, fresh) in eligible.iter().zip(loaded) {
    let tier = tier_of(source);
    if fresh.is_none() {
      let cost = one::planned_cost(index, source, tier, branches);
      match budget.charge(cx.config, cost) {
        Ok(()) => to_build.push((synced.len(), source.clone(), tier, cost)),
        Err(reason) => {
          reasons.insert(reason);
        }
      }
    }
    synced.push(Synced { path: source.path, tier, record: fresh });
  }
  let built = build_planned(cx, index, branches, (to_build, Write::Now), &mut synced, &mut reasons);
  // Only a sync that leaves nothing to the next call: a build cut by its
  // budget is continued by the next call, which would find every shard
  // changed again (at 100,000 sessions ten calls rebuilt all shards ten times).
  let complete = !reasons.iter().any(|r| r.is_sync_budget());
  if built.cold && complete && *scope == Scope::Global {
    prepare_dictionary(cx, index, branches, &synced);
  }
  let unavailable = built.unavailable;
  // Only from every cold record, each on disk: a budgeted call leaves some
  // unbuilt, and a record that could not be written is not one to copy.
  let settled = !reasons.iter().any(|r| r.is_sync_budget() || *r == Reason::IndexWriteFailed);
  // Side by side: they touch different files (packs; orphans of the listing taken before).
  rayon::join(
    || {
      if *scope == Scope::Global && settled {
        heads::refresh(index, branches, &synced);
      }
    },
    || {
      if wide {
        // Hash prefixes as numbers: at 100,000 sessions a set of strings (and
        // a path per name) made cleanup a tenth of a fresh process's first call.
        let owners: rustc_hash::FxHashSet<u64> = all_bases.iter().copied().collect();
        let names = in_dir.maybe_garbage(names, &owners);
        index.dir().collect_garbage(&names, &owners, cx.config.max_cache_cleanup_files, &mut reasons);
      }
    },
  );
  // The index dir is ours (checked above): the next fresh process may read
  // the session dirs' listings from it.
  index.listing().save_dirs(cx);
  // Last: a file written into the index dir after its listing leaves that
  // listing unsaved.
  index.dir().save_names();
  let tally = Tally::of(&synced);
  let coverage = tally.coverage(synced.len(), &reasons, unavailable);
  Ok(Outcome { sessions: Arc::new(synced), coverage, reasons, tally, patched: None })
}

/// The hash prefixes of one branch mode's record names in the index dir, per
/// tier, and where each of those names lies in the listing.
#[derive(Default)]
struct RecordHashes {
  sets: [rustc_hash::FxHashSet<u64>; 2],
  /// Each record name of this mode: its hash prefix and its place among the
  /// names (ascending).
  records: Vec<(u64, u32)>,
}

impl RecordHashes {
  /// Parsed on both threads (at 100,000 names one thread took ~32 ms, the
  /// first touch of each name, while the other idled), then put in sets
  /// sized for them.
  fn of(names: &Names, branches: Branches) -> RecordHashes {
    let parsed: Vec<(Tier, u64, u32)> = names
      .par_iter()
      .enumerate()
      .with_min_len(4096)
      .filter_map(|(at, name)| match IndexFile::parse(name)? {
        IndexFile::Record { base, branches: mode, tier } if mode == branches => {
          Some((tier, record::hash_of_base(base)?, at as u32))
        }
        _ => None,
      })
      .collect();
    let mut hashes = RecordHashes { records: Vec::with_capacity(parsed.len()), ..Default::default() };
    hashes.sets[Tier::Cold as usize].reserve(parsed.len());
    for (tier, hash, at) in parsed {
      hashes.sets[tier as usize].insert(hash);
      hashes.records.push((hash, at));
    }
    hashes
  }

  fn holds(&self, hash: u64, tier: Tier) -> bool {
    self.sets[tier as usize].contains(&hash)
  }

  /// The names cleanup must look at: each that is no record of this mode,
  /// and each record of this mode no listed source owns. The rest, records
  /// of live sources, are vouched for without parsing them again (cleanup
  /// parsed all 100,000 names at scale).
  fn maybe_garbage<'n>(&self, names: &'n Names, owners: &rustc_hash::FxHashSet<u64>) -> Vec<&'n str> {
    let mut records = self.records.iter().peekable();
    let mut owned =
      |at: usize| records.next_if(|(_, record)| *record as usize == at).map(|(hash, _)| owners.contains(hash));
    names.iter().enumerate().filter(|&(at, _)| owned(at) != Some(true)).map(|(_, name)| name).collect()
  }
}

/// What [`build_planned`] built.
pub(super) struct Built {
  /// How many sources were unavailable.
  pub unavailable: usize,
  /// Some cold record was built.
  pub cold: bool,
}

/// Builds the `planned` sessions in parallel into their slots of `synced`
/// (reporting progress), writing their records as `write` says.
pub(super) fn build_planned(
  cx: &Context<'_>,
  index: &Index,
  branches: Branches,
  (planned, write): (Vec<Planned>, Write),
  synced: &mut [Synced],
  reasons: &mut BTreeSet<Reason>,
) -> Built {
  let plan = progress::SyncProgress {
    eligible_sessions: synced.len() as u64,
    fresh_sessions: synced.iter().filter(|s| s.record.is_some()).count() as u64,
    sessions_to_index: planned.len() as u64,
    bytes_to_index: planned.iter().map(|p| p.3).sum(),
    ..Default::default()
  };
  let tracker = progress::Tracker::start(cx.progress, plan);
  let built: Vec<(usize, Result<Persisted, Reason>)> = planned
    .into_par_iter()
    .map(|(slot, source, tier, cost)| {
      let record = one::rebuild(cx, index, &source, tier, branches, write);
      tracker.built(cost);
      (slot, record)
    })
    .collect();
  if built.len() > 1 {
    trim_heap();
  }
  let mut unavailable = 0;
  let cold_built = built.iter().any(|(slot, result)| result.is_ok() && synced[*slot].tier == Tier::Cold);
  for (slot, result) in built {
    match result {
      Ok((record, persisted)) => {
        if !persisted {
          reasons.insert(Reason::IndexWriteFailed);
        }
        synced[slot].record = Some(record)
      }
      Err(reason) => {
        unavailable += usize::from(reason == Reason::SourceUnavailable);
        reasons.insert(reason);
      }
    }
  }
  Built { unavailable, cold: cold_built }
}

/// Brings the cold term dictionary up to date with every cold record of a
/// global synchronization that built some: its shards are built while
/// indexing, from all cold sessions, instead of inside the next query (at
/// 100,000 cold sessions a full build takes tens of seconds) or from a
/// filtered query's subset.
fn prepare_dictionary(cx: &Context<'_>, index: &Index, branches: Branches, synced: &[Synced]) {
  let candidates: Vec<dictionary::Candidate<'_>> = synced
    .iter()
    .filter_map(|s| s.record.as_deref())
    .filter_map(|record| match &record.body {
      record::Body::Cold(digest) => Some((0, record.file.as_str(), digest)),
      record::Body::Hot(_) => None,
    })
    .collect();
  dictionary::refresh(index, branches, &candidates, cx.config.max_cold_cache_bytes);
}

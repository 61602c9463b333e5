//! The index: hot shards and cold digests, persisted as cache records and
//! kept resident per process.
//!
//! [`sync`] is part of every indexing call and bounded by its work budgets:
//! it classifies tiers over all sessions of the agent dir (newest
//! `hotSessions` are hot), reuses records whose source provably did not
//! change, builds the rest in parallel (appends incrementally), writes them
//! atomically, drops the other tier's record after its replacement exists,
//! removes orphaned records, and reports coverage. When it returns, every
//! record it built is on disk, except the hot records of a patched
//! synchronization (an append in a warm process): those the index's writer
//! writes right after it ([`write_behind`]).

pub(crate) mod build;
mod cleanup;
pub(crate) mod cold;
pub(crate) mod dictionary;
pub(crate) mod dir_cache;
pub(crate) mod heads;
pub(crate) mod hot;
pub(crate) mod kind;
pub(crate) mod ownership;
mod patch;
pub mod progress;
pub mod record;
pub(crate) mod resident;
mod sources;
pub(crate) mod vocabulary;
pub(crate) mod watch;
pub(crate) mod write_behind;

use crate::config::Config;
use crate::coverage::Reason;
pub use crate::coverage::{Coverage, IndexCoverage};
use crate::engine::Engine;
use crate::error::ContractError;
use crate::session::discover::{resolve_path, try_read_header, Discovery, Scope};
use crate::session::lineage::Branches;
use crate::session::parse::Header;
use crate::session::source::{now_ns, same_content, StatStamp};
use parking_lot::Mutex;
use rayon::prelude::*;
use record::{CacheRecord, Tier};
pub use sources::{list_sources, Source};

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Where the index lives: `memory.indexDir` or `<agentDir>/fabric/memory-index`.
pub fn index_dir(engine: &Engine) -> PathBuf {
  match &engine.config.index_dir {
    Some(dir) => resolve_path(dir, &engine.cwd),
    None => engine.agent_dir.join("fabric").join("memory-index"),
  }
}

/// The policy string of a record: any difference means a rebuild.
pub fn policy(config: &Config, tier: Tier, branches: Branches, fingerprint: &str) -> String {
  let privacy = format!(
    "thinking:{};tool-output:{};own-results:{}",
    config.index_thinking, config.index_tool_output, config.index_own_tool_results
  );
  match tier {
    Tier::Hot => {
      format!("entry:{};branches:{};lineage:{fingerprint};{privacy}", config.max_entry_chars, branches.as_str())
    }
    Tier::Cold => format!(
      "vocab:{};cache:{};branches:{};lineage:{fingerprint};{privacy}",
      config.max_cold_vocabulary_bytes,
      config.max_cold_cache_bytes,
      branches.as_str()
    ),
  }
}

/// (dev, inode): which file a cached header was read from.
type FileId = (u64, u64);

/// A map keyed by path, hashed by the path's bytes: `Path`'s own `Hash`
/// walks its components, which was 9 % of loading 100,000 record heads.
/// Paths here come from one listing, so equal files are equal bytes.
pub(crate) type PathMap<V> = rustc_hash::FxHashMap<std::ffi::OsString, V>;

/// A probed header with the file it was read from and the stat it was
/// proven against.
type ProbedHeader = (FileId, StatStamp, Option<Header>);

/// One process-resident index per index dir, shared by concurrent calls.
pub struct Index {
  pub dir: PathBuf,
  resident: resident::Residents,
  /// Headers by path, with the (dev, inode) and size they were read at (see `probe`).
  headers: Mutex<PathMap<ProbedHeader>>,
  /// One synchronization at a time; queries read resident records freely.
  sync_lock: Mutex<()>,
  dirs: dir_cache::DirCache,
  /// The index dir's own names, kept current by its watch.
  own_names: dir_cache::WatchedNames,
  /// [`record::base_name`] of every source seen: a fresh process names
  /// each record when it opens it, when it keeps it resident and when
  /// cleanup lists the owners, and hashes each path once for all three.
  base_names: Mutex<PathMap<Arc<str>>>,
  /// Records found to belong to live sessions outside this engine's roots
  /// (checked once per process: the owning engine removes them when their
  /// source goes).
  elsewhere: Mutex<HashSet<String>>,
  /// The previous synchronization, reused while nothing it depended on changed.
  last: Mutex<Option<LastSync>>,
  /// Change notification for the session dirs, and the listing it keeps current.
  watcher: watch::Watcher,
  listed: Mutex<Option<Listed>>,
  /// Hot records built by patched synchronizations, not written yet.
  pub(crate) writes: write_behind::Queue,
  /// The packed cold heads, as this process knows them.
  packs: heads::Packs,
}

/// The last full listing of `roots`, updated from the watcher's changes.
struct Listed {
  roots: watch::Roots,
  sources: Arc<Vec<Source>>,
  /// Some source has no watch covering it: each drain stats it again.
  unwatched: bool,
}

impl Listed {
  fn new(roots: watch::Roots, sources: Arc<Vec<Source>>) -> Listed {
    let unwatched = sources.iter().any(|s| s.quiet_since == watch::NEVER_QUIET);
    Listed { roots, sources, unwatched }
  }
}

/// What a synchronization depended on, and its result.
struct LastSync {
  key: String,
  sources: Arc<Vec<Source>>,
  names: Arc<Vec<String>>,
  at_ns: i128,
  /// Taken after the sources were known: a source quiet since then is unchanged.
  listed_ns: i128,
  result: SyncResult,
  /// Every one of `sources` was found unchanged since: the same listing
  /// needs no second look (the proof depends on nothing else).
  proven: bool,
  /// The synchronization's own reasons and its records' tally: what a
  /// patch recomputes the coverage from.
  reasons: BTreeSet<Reason>,
  tally: Tally,
}

/// Everything besides the files that shapes a synchronization's result.
fn sync_key(engine: &Engine, scope: &Scope, branches: Branches) -> String {
  let live = engine
    .live
    .as_ref()
    .map(|l| (l.file.clone(), l.branch.leaf_id.clone(), l.branch.ids.len(), l.branch.ids.last().cloned()));
  let (cwd, agent_dir, session_dir) = (&engine.cwd, &engine.agent_dir, &engine.session_dir);
  format!("{scope:?}|{branches:?}|{:?}|{cwd:?}|{agent_dir:?}|{session_dir:?}|{live:?}", engine.config)
}

impl Index {
  pub fn shared(dir: PathBuf) -> Arc<Index> {
    static INDEXES: OnceLock<Mutex<HashMap<PathBuf, Arc<Index>>>> = OnceLock::new();
    let mut indexes = INDEXES.get_or_init(Default::default).lock();
    indexes
      .entry(dir.clone())
      .or_insert_with(|| {
        Arc::new(Index {
          dir,
          resident: Default::default(),
          headers: Mutex::default(),
          sync_lock: Mutex::default(),
          dirs: Default::default(),
          own_names: Default::default(),
          base_names: Mutex::default(),
          elsewhere: Mutex::default(),
          last: Mutex::default(),
          watcher: Default::default(),
          listed: Mutex::default(),
          writes: Default::default(),
          packs: Default::default(),
        })
      })
      .clone()
  }

  /// The header of `path` (cached while the file is the same: appends never
  /// change a header; "not a session" only while its whole stat is the same
  /// too, since a file seen mid-write may become one); `Err` when it cannot
  /// be read at all, which is never cached. A probe is remembered only when
  /// the file's stat after the read is still `stamp`: one that raced a
  /// rewrite (truncate, then write back to the same size) read a torn file,
  /// and remembering its "not a session" hid the session until its size
  /// changed.
  fn probe(&self, path: &Path, stamp: &StatStamp) -> Result<Option<Header>, ()> {
    let file = (stamp.dev, stamp.ino);
    if let Some((seen, proven, header)) = self.headers.lock().get(path.as_os_str()) {
      if *seen == file && (header.is_some() || proven == stamp) {
        return Ok(header.clone());
      }
    }
    let header = try_read_header(path).map_err(|_| ())?;
    let unchanged = fs::metadata(path).is_ok_and(|after| StatStamp::of(&after) == *stamp);
    if unchanged {
      self.headers.lock().insert(path.as_os_str().to_owned(), (file, *stamp, header.clone()));
    }
    Ok(header)
  }

  /// Forgets `path`'s header once its record is resident: the record, built
  /// from that content, answers what the header did (it is a session, and
  /// its cwd), and 100,000 cached headers held ~50 MB through a cold build.
  fn forget_header(&self, path: &Path) {
    self.headers.lock().remove(path.as_os_str());
  }

  /// [`record::base_name`] of `path`, hashed once per process.
  fn base_name(&self, path: &Path) -> Arc<str> {
    if let Some(base) = self.base_names.lock().get(path.as_os_str()) {
      return base.clone();
    }
    // Hashed outside the lock: parallel loads name their records at once.
    let base: Arc<str> = record::base_name(path).into();
    self.base_names.lock().entry(path.as_os_str().to_owned()).or_insert(base).clone()
  }

  /// Remembers the [`record::base_name`] of sources whose record names
  /// this index wrote itself (the packed heads), so they are not hashed.
  fn remember_base_names<'a>(&self, known: impl Iterator<Item = (&'a Path, &'a str)>) {
    let mut bases = self.base_names.lock();
    for (path, base) in known {
      bases.entry(path.as_os_str().to_owned()).or_insert_with(|| base.into());
    }
  }

  /// The file name of `path`'s record in `branches` mode and `tier`.
  fn record_name(&self, path: &Path, branches: Branches, tier: Tier) -> String {
    record::name_of(&self.base_name(path), branches, tier)
  }

  /// The index dir's names now.
  fn names(&self, engine: &Engine) -> Arc<Vec<String>> {
    self.own_names.names(&self.dirs, &self.dir, engine.config.watch_sessions)
  }

  /// A Pi session, or a file that cannot be read: it is eligible and
  /// reported `source_unavailable`, never silently left out.
  fn may_be_session(&self, path: &Path, stamp: &StatStamp) -> bool {
    self.probe(path, stamp).map_or(true, |h| h.is_some())
  }
}

/// One eligible session after synchronization.
#[derive(Debug, Clone)]
pub struct Synced {
  pub path: PathBuf,
  pub tier: Tier,
  /// `None` when the session could not be indexed (budget, unavailable).
  pub record: Option<Arc<CacheRecord>>,
}

/// Cheap to clone: a reused synchronization hands every call the same
/// session list.
#[derive(Debug, Clone)]
pub struct SyncResult {
  pub sessions: Arc<Vec<Synced>>,
  pub coverage: Coverage,
}

/// How a record was proven current for its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Proof {
  /// The stamp is unchanged and older than the last verification.
  Stamp,
  /// The dir watch saw no change since the last verification.
  Watch,
  /// The source's bytes hash to the record's: the stamp could not tell.
  Content,
}

/// How `slot` is provably the current record for `source`, if it is.
/// Cheapest checks first.
fn is_fresh(
  engine: &Engine,
  policies: &resident::PolicyCheck,
  slot: &resident::Slot,
  source: &Source,
  tier: Tier,
) -> Option<Proof> {
  let record = &slot.record;
  if record.stamp != source.stamp
    || record.tier() != tier
    || Path::new(&record.file) != source.path
    || !policies.matches(record)
  {
    return None;
  }
  if let Some(live) = engine.live.as_ref().filter(|l| l.file == source.path && record.branches == Branches::Active) {
    let expected =
      crate::session::lineage::fingerprint(record.branches, live.branch.leaf_id.as_deref(), &live.branch.ids);
    if record.lineage_fingerprint != expected {
      return None;
    }
  }
  if record.stamp.proves_unchanged_since(slot.verified_ns()) {
    Some(Proof::Stamp)
  } else if source.quiet_since(slot.verified_ns()) {
    Some(Proof::Watch)
  } else {
    same_content(&source.path, record.size, &record.source_hash).then_some(Proof::Content)
  }
}

/// The session an explicit scope's `target` names, or the current one
/// (`None`): from `all` when listed.
fn named(engine: &Engine, all: &[Source], target: Option<&str>) -> Result<Vec<Source>, ContractError> {
  let discovery = engine.discovery();
  let pick = |path: &Path| {
    all
      .iter()
      .find(|s| s.path == path)
      .cloned()
      .or_else(|| fs::metadata(path).ok().map(|m| Source::of(path.to_path_buf(), &m)))
  };
  Ok(match target {
    None => discovery.current().and_then(|s| pick(&s.path)).into_iter().collect(),
    Some(target) => discovery.find(target).map(|s| pick(&s.path).into_iter().collect())?,
  })
}

/// Does the global scope (`project: None`) or the project scope of
/// `project` (the project's own dir) hold `source`?
fn in_scope(index: &Index, discovery: &Discovery, project: Option<&Path>, source: &Source) -> bool {
  match project {
    None => index.may_be_session(&source.path, &source.stamp),
    // Another project's session: its header is not read (at 100,000
    // sessions a project call read every session's first line).
    Some(dir) if !discovery.may_hold(dir, &source.path) => false,
    Some(dir) => match index.probe(&source.path, &source.stamp) {
      Ok(header) => header.is_some_and(|h| discovery.in_project(dir, &source.path, &h.cwd)),
      // Unreadable in this project's own dir: counted as unavailable.
      Err(()) => source.path.parent() == Some(dir),
    },
  }
}

/// [`in_scope`], told by the source's fresh record when it has one: built
/// from that very content, it proves the source a session and names its
/// header's cwd, so only the files without one have their header read.
fn in_scope_proven(
  index: &Index,
  discovery: &Discovery,
  project: Option<&Path>,
  source: &Source,
  fresh: Option<&CacheRecord>,
) -> bool {
  match (fresh, project) {
    (Some(_), None) => true,
    (Some(record), Some(dir)) => discovery.in_project(dir, &source.path, &record.cwd),
    (None, _) => in_scope(index, discovery, project, source),
  }
}

/// Budgets of one call: sessions built and source bytes parsed.
struct Budget {
  sessions: u64,
  bytes: u64,
}

impl Budget {
  /// Charges one build of `bytes`; `Err(reason)` once a budget is spent.
  fn charge(&mut self, config: &Config, bytes: u64) -> Result<(), Reason> {
    if self.sessions + 1 > config.max_sync_sessions {
      return Err(Reason::MaxSyncSessions);
    }
    if self.bytes + bytes > config.max_sync_source_bytes {
      return Err(Reason::MaxSyncSourceBytes);
    }
    self.sessions += 1;
    self.bytes += bytes;
    Ok(())
  }
}

/// Rebuilds the cold record of `path` from source, for a query that found
/// the record's content gone, replaced or damaged since its head was read
/// (the content is read only when first needed): the query then answers as
/// an intact record would. The next call does not reuse the last
/// synchronization, which holds the unreadable record. `None` when the
/// source cannot be indexed either.
pub(crate) fn rebuild_cold(engine: &Engine, path: &Path, branches: Branches) -> Option<Arc<CacheRecord>> {
  let index = Index::shared(index_dir(engine));
  // One builder per index at a time, as in `sync`: a concurrent sync never
  // builds the same session beside it.
  let _guard = index.sync_lock.lock();
  index.last.lock().take();
  let source = Source::of(path.to_path_buf(), &fs::metadata(path).ok()?);
  build::build(engine, &index, &source, Tier::Cold, branches, build::Write::Now).ok().map(|(record, _)| record)
}

/// Synchronizes the records of `scope` in `branches` mode.
pub fn sync(engine: &Engine, scope: &Scope, branches: Branches) -> Result<SyncResult, ContractError> {
  let index = Index::shared(index_dir(engine));
  let _guard = index.sync_lock.lock();
  let started_ns = now_ns();
  let all = index.sources(engine);
  let listed_ns = now_ns();
  let names = index.names(engine);
  let key = sync_key(engine, scope, branches);
  // Taken, not cloned: a patch then updates the only copy of the session
  // list in place (no 1,000-entry clone and drop per append). Only a
  // builder under the sync lock (`rebuild_cold`) drops it meanwhile.
  let last = index.last.lock().take().filter(|last| last.key == key && Arc::ptr_eq(&last.names, &names));
  let last = match last {
    Some(mut last) => {
      if unchanged(&mut last, &all) {
        let result = last.result.clone();
        *index.last.lock() = Some(last);
        return Ok(result);
      }
      Some(last)
    }
    None => None,
  };
  let outcome = match last.and_then(|last| patch::patch(engine, &index, scope, branches, last, &all, &names)) {
    Some(patched) => patched?,
    None => sync_changed(engine, &index, scope, branches, &all, &names)?,
  };
  let result = outcome.result.clone();
  // Explicit and current-session scopes may name files outside the listing.
  let reusable = matches!(scope, Scope::Global | Scope::Project)
    && result.sessions.iter().all(|s| s.record.is_some())
    // A record that could not be written is tried again by the next call,
    // and so is a cleanup that ran out of budget.
    && !result.coverage.reasons.iter().any(|r| matches!(r, Reason::IndexWriteFailed | Reason::CacheCleanupBudget))
    && !result.coverage.reasons.iter().any(|r| r.is_sync_budget());
  if reusable {
    let names = index.names(engine);
    let (result, reasons, tally) = (outcome.result, outcome.reasons, outcome.tally);
    let at_ns = started_ns;
    let last = LastSync { key, sources: all, names, at_ns, listed_ns, result, proven: false, reasons, tally };
    *index.last.lock() = Some(last);
  }
  Ok(result)
}

/// Same inputs (the caller checked the key and the index dir's names),
/// every source unchanged (the watch vouches for it, or its stamp is
/// unchanged and old enough to prove it): the previous answer still holds.
fn unchanged(last: &mut LastSync, all: &Arc<Vec<Source>>) -> bool {
  if last.proven && Arc::ptr_eq(&last.sources, all) {
    return true;
  }
  let proven = |b: &Source| b.quiet_since(last.listed_ns) || b.stamp.proves_unchanged_since(last.at_ns);
  let unchanged = if Arc::ptr_eq(&last.sources, all) {
    all.iter().all(proven)
  } else {
    last.sources.len() == all.len()
      && last.sources.iter().zip(all.iter()).all(|(a, b)| a.path == b.path && a.stamp == b.stamp && proven(b))
  };
  if unchanged {
    (last.sources, last.proven) = (all.clone(), true);
  }
  unchanged
}

/// A synchronization's result and what a later patch of it needs.
struct Outcome {
  result: SyncResult,
  /// The synchronization's own reasons (budgets, writes, cleanup).
  reasons: BTreeSet<Reason>,
  tally: Tally,
}

/// A session to build: its slot in the session list, tier and planned cost.
type Planned = (usize, Source, Tier, u64);

/// The full pass: every eligible session is checked, and stale ones built.
fn sync_changed(
  engine: &Engine,
  index: &Index,
  scope: &Scope,
  branches: Branches,
  all: &[Source],
  names: &[String],
) -> Result<Outcome, ContractError> {
  #[cfg(test)]
  PASSES.lock().push((index.dir.clone(), Pass::Full));
  ownership::check(engine, &index.dir, names)?;
  let existing: rustc_hash::FxHashSet<&std::ffi::OsStr> = all.iter().map(|s| s.path.as_os_str()).collect();
  index.resident.retain(|path| existing.contains(path.as_os_str()) || path.exists());
  let policies = resident::PolicyCheck::new(&engine.config, branches);
  let hot: rustc_hash::FxHashSet<&std::ffi::OsStr> =
    all.iter().take(engine.config.hot_sessions as usize).map(|s| s.path.as_os_str()).collect();
  let mut reasons: BTreeSet<Reason> = BTreeSet::new();
  let mut budget = Budget { sessions: 0, bytes: 0 };
  let mut to_build = Vec::new();
  let tier_of = |source: &Source| if hot.contains(source.path.as_os_str()) { Tier::Hot } else { Tier::Cold };
  // Loading and validating records is independent per session (a fresh
  // process opens every record): in parallel. Budgets are charged in order.
  // Every record is checked against the listing: a set, since a binary
  // search of 100,000 names was a tenth of loading them (cache misses).
  let in_dir: rustc_hash::FxHashSet<&str> = names.iter().map(String::as_str).collect();
  let listed = |name: &str| in_dir.contains(name);
  let load = |sources: &[Source]| -> Vec<Option<Arc<CacheRecord>>> {
    let load =
      |source: &Source| build::load_fresh(engine, index, &policies, source, tier_of(source), branches, &listed);
    sources.par_iter().with_min_len(16).map(load).collect()
  };
  let limit = engine.config.max_cold_cache_bytes;
  let (eligible, loaded): (Vec<Source>, Vec<_>) = match scope {
    Scope::Global | Scope::Project => {
      let discovery = engine.discovery();
      let project = (*scope == Scope::Project).then(|| discovery.project_dir());
      // Every listed file is a candidate; for a project, those of its own
      // dir and the flat custom dir.
      let candidates: Vec<Source> = match &project {
        None => all.to_vec(),
        Some(dir) => all.iter().filter(|s| discovery.may_hold(dir, &s.path)).cloned().collect(),
      };
      // A fresh process reads the cold heads packed, not record by record.
      let wanted = match &project {
        None => heads::Wanted::All,
        Some(dir) => heads::Wanted::Project { dir, candidates: &candidates },
      };
      heads::preload(index, branches, wanted, all, &in_dir, limit);
      let loaded = load(&candidates);
      let project = project.as_deref();
      candidates
        .into_iter()
        .zip(loaded)
        .filter(|(s, fresh)| in_scope_proven(index, &discovery, project, s, fresh.as_deref()))
        .unzip()
    }
    Scope::Session | Scope::Explicit(_) => {
      let target = if let Scope::Explicit(target) = scope { Some(target.as_str()) } else { None };
      let eligible = named(engine, all, target)?;
      let loaded = load(&eligible);
      (eligible, loaded)
    }
  };
  let mut synced = Vec::with_capacity(eligible.len());
  for (source, fresh) in eligible.iter().zip(loaded) {
    let tier = tier_of(source);
    if fresh.is_none() {
      let cost = build::planned_cost(index, source, tier, branches);
      match budget.charge(&engine.config, cost) {
        Ok(()) => to_build.push((synced.len(), source.clone(), tier, cost)),
        Err(reason) => {
          reasons.insert(reason);
        }
      }
    }
    synced.push(Synced { path: source.path.clone(), tier, record: fresh });
  }
  let unavailable =
    build_planned(engine, index, scope, branches, (to_build, build::Write::Now), &mut synced, &mut reasons);
  // Only from every cold record, each on disk: a budgeted call leaves some
  // unbuilt, and a record that could not be written is not one to copy.
  let settled = !reasons.iter().any(|r| r.is_sync_budget() || *r == Reason::IndexWriteFailed);
  if *scope == Scope::Global && settled {
    heads::refresh(index, branches, &synced);
  }
  cleanup::cleanup(index, names, all, &engine.config, &mut reasons);
  let tally = Tally::of(&synced);
  let coverage = tally.coverage(synced.len(), &reasons, unavailable);
  Ok(Outcome { result: SyncResult { coverage, sessions: Arc::new(synced) }, reasons, tally })
}

/// Builds the `planned` sessions in parallel into their slots of `synced`
/// (reporting progress), writing their records as `write` says, and brings
/// the cold term dictionary up to date when a global synchronization built
/// a cold record; returns how many sources were unavailable.
fn build_planned(
  engine: &Engine,
  index: &Index,
  scope: &Scope,
  branches: Branches,
  (planned, write): (Vec<Planned>, build::Write),
  synced: &mut [Synced],
  reasons: &mut BTreeSet<Reason>,
) -> usize {
  let plan = progress::SyncProgress {
    eligible_sessions: synced.len() as u64,
    fresh_sessions: synced.iter().filter(|s| s.record.is_some()).count() as u64,
    sessions_to_index: planned.len() as u64,
    bytes_to_index: planned.iter().map(|p| p.3).sum(),
    ..Default::default()
  };
  let tracker = progress::Tracker::start(engine.progress.as_ref(), plan);
  let built: Vec<(usize, Result<build::Persisted, Reason>)> = planned
    .into_par_iter()
    .map(|(slot, source, tier, cost)| {
      let record = build::build(engine, index, &source, tier, branches, write);
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
  // Only a sync that leaves nothing to the next call: a build cut by its
  // budget is continued by the next call, which would find every shard
  // changed again (at 100,000 sessions ten calls rebuilt all shards ten times).
  let complete = !reasons.iter().any(|r| r.is_sync_budget());
  if cold_built && complete && *scope == Scope::Global {
    prepare_dictionary(engine, index, branches, synced);
  }
  unavailable
}

/// Hands the heap's free pages back to the system. glibc keeps freed memory
/// for reuse, but what a build frees (source bytes, parsed JSON, normalized
/// entries) sits between the records it keeps, so a building process grew
/// with every budgeted call. Linux with glibc only; elsewhere a no-op.
pub(crate) fn trim_heap() {
  #[cfg(all(target_os = "linux", target_env = "gnu"))]
  // SAFETY: malloc_trim only returns free memory; it touches no live allocation.
  unsafe {
    libc::malloc_trim(0);
  }
}

/// Brings the cold term dictionary up to date with every cold record of a
/// global synchronization that built some: its shards are built while
/// indexing, from all cold sessions, instead of inside the next query (at
/// 100,000 cold sessions a full build takes tens of seconds) or from a
/// filtered query's subset.
fn prepare_dictionary(engine: &Engine, index: &Index, branches: Branches, synced: &[Synced]) {
  let candidates: Vec<dictionary::Candidate<'_>> = synced
    .iter()
    .filter_map(|s| s.record.as_deref())
    .filter_map(|record| match &record.body {
      record::Body::Cold(digest) => Some((0, record.file.as_str(), digest)),
      record::Body::Hot(_) => None,
    })
    .collect();
  dictionary::refresh(&index.dir, branches, &candidates, engine.config.max_cold_cache_bytes);
}

/// The records' part of a synchronization's coverage, kept with the last
/// synchronization so a patch adjusts it per session instead of adding up
/// every record again.
#[derive(Debug, Clone, Default)]
struct Tally {
  indexed: usize,
  incomplete: usize,
  /// Answer-affecting reasons of incomplete records, each with how many have it.
  reasons: BTreeMap<Reason, usize>,
}

impl Tally {
  fn of(synced: &[Synced]) -> Tally {
    let mut tally = Tally::default();
    synced.iter().filter_map(|s| s.record.as_deref()).for_each(|r| tally.add(r));
    tally
  }

  fn add(&mut self, record: &CacheRecord) {
    self.indexed += 1;
    let coverage = record.coverage();
    if !coverage.complete {
      self.incomplete += 1;
      for reason in coverage.reasons.iter().copied().filter(|r| r.affects_answers()) {
        *self.reasons.entry(reason).or_default() += 1;
      }
    }
  }

  fn remove(&mut self, record: &CacheRecord) {
    self.indexed -= 1;
    let coverage = record.coverage();
    if !coverage.complete {
      self.incomplete -= 1;
      for reason in coverage.reasons.iter().filter(|r| r.affects_answers()) {
        let count = self.reasons.get_mut(reason).expect("a removed record was added");
        *count -= 1;
        if *count == 0 {
          self.reasons.remove(reason);
        }
      }
    }
  }

  /// The coverage of `eligible` sessions with the synchronization's own `reasons`.
  fn coverage(&self, eligible: usize, reasons: &BTreeSet<Reason>, unavailable: usize) -> Coverage {
    let mut reasons = reasons.clone();
    reasons.extend(self.reasons.keys().copied());
    let stale = eligible - self.indexed;
    Coverage {
      complete: reasons.iter().all(|r| !r.affects_answers()) && stale == 0,
      indexed_sessions: self.indexed,
      eligible_sessions: eligible,
      stale_sessions: stale,
      incomplete_sessions: self.incomplete,
      unavailable_sessions: unavailable,
      reasons: reasons.into_iter().collect(),
      error: None,
    }
  }
}

/// Which synchronization a call ran (tests: proves the patch path ran, or did not).
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
  Full,
  Patched,
}

#[cfg(test)]
pub(crate) static PASSES: Mutex<Vec<(PathBuf, Pass)>> = parking_lot::const_mutex(Vec::new());

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod watch_tests;

#[cfg(test)]
mod patch_tests;

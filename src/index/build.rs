//! Loading, validating and building one session's record.

use super::cold::ColdDigest;
use super::freshness::{is_fresh, policy, PolicyCheck, Proof};
use super::hot::{HotShard, ResumeState};
use super::ownership;
use super::record::{self, Body, CacheRecord, Tier, CACHE_VERSION};
use super::resident::Slot;
use super::trace::Event;
use super::{Index, Source};
use crate::coverage::Reason;
use crate::engine::Engine;
use crate::fsread::ReadError;
use crate::index::cold::Echoes;
use crate::session::binding::BoundTip;
use crate::session::decode::decode;
use crate::session::entry::{Normalized, Policy};
use crate::session::lineage::{self, Branches, Lineage, LiveBranch, Node};
use crate::session::normalize::{normalize_selected, Normalizer};
use crate::session::parse::{self, ParsedSession, Resume};
use crate::session::source::{now_ns, read_source_resuming, SourceFile, StatStamp};
use crate::session::titles::Titles;
use std::borrow::Cow;
use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The current record of `source` from memory or disk, if provably fresh.
/// A record read from disk stays resident even when stale: an append can
/// resume from it. `listed`: is this name in the index dir now?
pub fn load_fresh(
  engine: &Engine,
  index: &Index,
  policies: &PolicyCheck,
  source: &Source,
  tier: Tier,
  branches: Branches,
  listed: &(dyn Fn(&str) -> bool + Sync),
) -> Option<Arc<CacheRecord>> {
  let slot = match index.resident().get(&source.path, branches).filter(|s| s.record.tier() == tier) {
    Some(slot) => slot,
    None => {
      let name = index.record_name(&source.path, branches, tier);
      let limit = record::read_limit(&engine.config, tier, source.stamp.size);
      let path = index.dir.join(&name);
      index.trace().note(|| Event::Opened(path.clone()));
      let Some(record) = record::open(&path, tier, limit).ok()? else {
        // Torn or an older version: rebuilt from source, never migrated.
        ownership::remove_ours(&index.dir, &name);
        return None;
      };
      let slot = Slot::new(Arc::new(record), name, 0);
      slot.verified_at(slot.record.verified_ns);
      index.resident().put(&source.path, branches, slot.clone());
      slot
    }
  };
  let proof = is_fresh(engine, policies, &slot, source, tier)?;
  let now = now_ns();
  // Proven by hashing the source because its stamp was too recent to prove
  // anything: once the stamp can vouch from now on, the record is written
  // back with this verification, so no later process hashes the source
  // again (the newest sessions, which Pi just wrote, are the largest).
  if proof == Proof::Content && slot.record.stamp.proves_unchanged_since(now) {
    if let Some(record) = write_verified(index, source, branches, tier, &slot, now) {
      return Some(record);
    }
  }
  // Someone deleted the record (or the whole index dir): write it back
  // (a cold digest whose content was never read is rebuilt instead).
  if !listed(&slot.name) {
    let mut record = (*slot.record).clone();
    persist(index, source, branches, tier, &mut record).ok()?;
  }
  if slot.record.content_unreadable() {
    return None;
  }
  // Verified now (by stamp or by hash): later calls need not re-hash.
  slot.verified_at(now);
  Some(slot.record.clone())
}

/// `slot`'s record as verified at `verified_ns`, written and made resident;
/// `None` when it cannot be written (the caller goes on with the old one).
fn write_verified(
  index: &Index,
  source: &Source,
  branches: Branches,
  tier: Tier,
  slot: &Slot,
  verified_ns: i128,
) -> Option<Arc<CacheRecord>> {
  // Read into the cell the old record shares: whoever still holds it reads
  // its content from memory, not from the file this replaces.
  if let Body::Cold(digest) = &slot.record.body {
    digest.content.get().ok()?;
  }
  let mut record = CacheRecord { verified_ns, ..(*slot.record).clone() };
  persist(index, source, branches, tier, &mut record).ok()?;
  let slot = Slot::new(Arc::new(record), slot.name.clone(), verified_ns);
  index.resident().put(&source.path, branches, slot.clone());
  Some(slot.record.clone())
}

/// Source bytes a rebuild will parse: only the appended bytes when the
/// resident record can resume.
pub fn planned_cost(index: &Index, source: &Source, tier: Tier, branches: Branches) -> u64 {
  let resident = index.resident().get(&source.path, branches);
  let resume = resident.as_ref().filter(|_| tier == Tier::Hot).and_then(|r| match &r.record.body {
    Body::Hot(shard) => shard.resume.as_ref().map(|resume| (r.record.stamp, resume.complete_len)),
    Body::Cold(_) => None,
  });
  match resume {
    Some((stamp, len)) if stamp.dev == source.stamp.dev && stamp.ino == source.stamp.ino && source.stamp.size > len => {
      source.stamp.size - len
    }
    _ => source.stamp.size,
  }
}

fn live_branch<'e>(engine: &'e Engine, source: &Source, branches: Branches) -> Option<&'e LiveBranch> {
  engine.live.as_ref().filter(|l| l.file == source.path && branches == Branches::Active).map(|l| &l.branch)
}

/// Normalized entries plus what a later append needs.
struct Built {
  normalized: Normalized,
  resume: ResumeState,
  fingerprint: String,
  branches: Branches,
  titles: Titles,
}

impl Built {
  /// The active path's tip as a pointer binds to it; `None` in all mode.
  fn tip(&self) -> Option<BoundTip> {
    let resume = &self.resume;
    let path = (self.branches == Branches::Active).then(|| lineage::chain(&resume.nodes, &resume.selected))??;
    let tip = resume.selected.last().and_then(|&o| resume.nodes.get(o as usize)).and_then(|n| n.id.as_deref());
    BoundTip::of(&path, tip)
  }
}

/// `source` holds the file's own bytes. A file whose decoded text has other
/// offsets (invalid UTF-8 became U+FFFD) gets `complete_len` 0: it cannot
/// resume, every change is a full parse.
fn resume_state(
  parsed: &ParsedSession<'_>,
  nodes: Vec<Node>,
  lineage: &Lineage,
  source: &SourceFile,
  same_offsets: bool,
) -> ResumeState {
  let complete_len = if same_offsets { parsed.complete_len } else { 0 };
  ResumeState {
    complete_len: complete_len as u64,
    // Usually the whole file (it ends with a newline): its hash is known.
    prefix_hash: if complete_len == source.bytes.len() {
      source.sha256.clone()
    } else {
      source.prefix_sha256(complete_len)
    },
    last_line_no: parsed.last_line_no as u64,
    header: parsed.header.clone(),
    nodes,
    selected: (0..lineage.selected.len()).filter(|&o| lineage.selected[o]).map(|o| o as u32).collect(),
  }
}

fn full(source: &SourceFile, branches: Branches, live: Option<&LiveBranch>, policy: &Policy) -> Result<Built, Reason> {
  let decoded = decode(&source.bytes);
  let parsed = parse::parse(&decoded.bytes).map_err(|_| Reason::SourceUnavailable)?;
  let nodes = lineage::nodes(&parsed.records);
  let lineage = lineage::select_nodes(&nodes, branches, live);
  let mut normalized = normalize_selected(Normalizer::new(policy), parsed.records.iter(), &lineage);
  normalized.reasons.extend(decoded.reasons());
  let resume = resume_state(&parsed, nodes, &lineage, source, decoded.same_offsets());
  let titles = Titles::of(&parsed.records, &normalized);
  Ok(Built { normalized, resume, fingerprint: lineage.fingerprint, branches, titles })
}

/// Parses only the bytes appended since `stale` was built, when the prefix
/// is byte-identical and the old selection is unchanged by the append.
fn incremental(stale: &CacheRecord, source: &SourceFile, live: Option<&LiveBranch>, policy: &Policy) -> Option<Built> {
  let Body::Hot(shard) = &stale.body else { return None };
  let old = shard.resume.as_ref()?;
  let prefix = old.complete_len as usize;
  let same_file = stale.stamp.dev == source.stamp.dev && stale.stamp.ino == source.stamp.ino;
  if !same_file || stale.size != old.complete_len || source.bytes.len() <= prefix {
    return None;
  }
  if source.prefix_sha256(prefix) != old.prefix_hash {
    return None;
  }
  // Only the appended bytes are decoded; a tail that would shift offsets
  // (invalid UTF-8) is parsed in full instead.
  let tail_decoded = decode(&source.bytes[prefix..]);
  if !tail_decoded.same_offsets() {
    return None;
  }
  let fixed: Cow<'_, [u8]> = match &tail_decoded.bytes {
    Cow::Borrowed(_) => Cow::Borrowed(&source.bytes),
    Cow::Owned(tail) => Cow::Owned([&source.bytes[..prefix], tail.as_slice()].concat()),
  };
  let resume = Resume {
    offset: prefix,
    line_no: old.last_line_no as usize,
    ordinal: old.nodes.len(),
    header: old.header.clone(),
    previous_id: old.nodes.last().and_then(|n| n.id.clone()),
  };
  let tail = parse::parse_from(&fixed, Some(&resume)).ok()?;
  let mut nodes = old.nodes.clone();
  nodes.extend(lineage::nodes(&tail.records));
  let lineage = lineage::select_nodes(&nodes, stale.branches, live);
  // Duplicate ids or a broken parent graph: an append can change which
  // record an id names, so only a full parse answers as a rebuild would.
  if lineage.invalid_parent_graph || has_duplicate_ids(&nodes) {
    return None;
  }
  let still_selected: Vec<u32> = old.selected.iter().copied().filter(|&o| lineage.contains(o as usize)).collect();
  let newly_selected_old = (0..old.nodes.len()).filter(|&o| lineage.contains(o)).count();
  // The old entries must stay first in view order (an appended record can
  // become an ancestor of an old one: a full parse then).
  let old_first = lineage.order.iter().take(old.selected.len()).all(|&o| o < old.nodes.len());
  if still_selected.len() != old.selected.len() || newly_selected_old != old.selected.len() || !old_first {
    return None;
  }
  let mut normalized =
    normalize_selected(Normalizer::resume(policy, shard.normalized()), tail.records.iter(), &lineage);
  normalized.reasons.extend(tail_decoded.reasons());
  let mut state = resume_state(&tail, nodes, &lineage, source, true);
  state.header = old.header.clone();
  let titles = stale.titles.appended(&tail.records, &normalized);
  Some(Built { normalized, resume: state, fingerprint: lineage.fingerprint, branches: stale.branches, titles })
}

fn has_duplicate_ids(nodes: &[Node]) -> bool {
  let mut seen = HashSet::with_capacity(nodes.len());
  nodes.iter().filter_map(|n| n.id.as_deref()).any(|id| !seen.insert(id))
}

fn body(engine: &Engine, tier: Tier, built: Built, previous: Option<&HotShard>) -> Body {
  match tier {
    Tier::Hot => Body::Hot(Box::new(match previous {
      Some(previous) => previous.extended(built.normalized, built.resume),
      None => HotShard::build(built.normalized, Some(built.resume)),
    })),
    Tier::Cold => Body::Cold(ColdDigest {
      tip: built.tip(),
      ..ColdDigest::build(
        &built.normalized,
        engine.config.max_cold_vocabulary_bytes as usize,
        Echoes::of(&engine.config),
      )
    }),
  }
}

/// Fits a cold digest under `maxColdCacheBytes` (exact prefixes only);
/// `false` when not even the empty prefixes fit, so it must not be written.
fn fit_cold(engine: &Engine, record: &mut CacheRecord) -> bool {
  let Body::Cold(digest) = &record.body else { return true };
  let cap = engine.config.max_cold_cache_bytes;
  let mut digest = digest.clone();
  let fits = digest.fit(|candidate| {
    let mut trial = CacheRecord { body: Body::Cold(candidate.clone()), ..record.clone() };
    trial.encode().is_ok_and(|bytes| bytes.len() as u64 <= cap)
  });
  record.body = Body::Cold(digest);
  fits
}

/// A built record and whether it was written (or queued to be).
pub type Persisted = (Arc<CacheRecord>, bool);

/// When a built record reaches the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
  /// Before the call returns.
  Now,
  /// A hot record: by the index's writer after the call (see
  /// [`super::write_behind`]); a cold one now.
  Behind,
}

/// Builds (or re-stamps) the record of `source` and persists it; `false`
/// when it could not be written (it still answers this process).
pub fn build(
  engine: &Engine,
  index: &Index,
  source: &Source,
  tier: Tier,
  branches: Branches,
  write: Write,
) -> Result<Persisted, Reason> {
  let stale = index.resident().get(&source.path, branches).map(|r| r.record.clone());
  let resume_at = stale.as_deref().and_then(|r| match &r.body {
    Body::Hot(shard) if tier == Tier::Hot => shard.resume.as_ref().map(|resume| resume.complete_len as usize),
    _ => None,
  });
  let read =
    read_source_resuming(&source.path, engine.config.max_sync_source_bytes, resume_at).map_err(|e| match e {
      ReadError::Io(e) if e.kind() == std::io::ErrorKind::Interrupted => Reason::SourceChangedDuringIndex,
      // Grown past the budget since it was charged (or it lied about its size).
      ReadError::TooLarge { .. } => Reason::MaxSyncSourceBytes,
      _ => Reason::SourceUnavailable,
    })?;
  let live = live_branch(engine, source, branches);
  let stale =
    stale.filter(|r| r.tier() == tier && r.policy == policy(&engine.config, tier, branches, &r.lineage_fingerprint));
  let reusable = |r: &&CacheRecord| r.source_hash == read.sha256 && live.is_none() && !r.content_unreadable();
  let mut record = match stale.as_deref().filter(reusable) {
    // Same bytes under a new stamp (a touch, a copy-back): no re-parse.
    Some(same) => {
      CacheRecord { stamp: read.stamp, mtime: read.stamp.mtime_ms(), verified_ns: read.read_ns, ..same.clone() }
    }
    None => {
      let (record, resumed) = fresh_record(engine, &read, tier, branches, live, stale.as_deref())?;
      if resumed {
        index.trace().note(|| Event::Resumed(source.path.clone()));
      }
      record
    }
  };
  if fs::metadata(&source.path).ok().map(|m| StatStamp::of(&m)) != Some(read.stamp) {
    return Err(Reason::SourceChangedDuringIndex);
  }
  let behind = write == Write::Behind && tier == Tier::Hot;
  // A record that cannot be written (full or read-only disk, I/O error)
  // still answers this process; the next call tries again. One over the
  // cold cap is not written by design.
  let persisted =
    behind || !fit_cold(engine, &mut record) || persist(index, source, branches, tier, &mut record).is_ok();
  if !persisted {
    // The stale record on disk goes, so the next call sees this one missing
    // and writes it once it can.
    ownership::remove_ours(&index.dir, &index.record_name(&source.path, branches, tier));
  }
  let record = Arc::new(record);
  let name = index.record_name(&source.path, branches, tier);
  index.resident().put(&source.path, branches, Slot::new(record.clone(), name, read.read_ns));
  index.listing().forget_header(&source.path);
  if behind {
    super::write_behind::queue(index, &source.path, branches, record.clone(), stale);
  }
  Ok((record, persisted))
}

/// A record built from `read`, and whether it resumed from `stale`.
fn fresh_record(
  engine: &Engine,
  read: &SourceFile,
  tier: Tier,
  branches: Branches,
  live: Option<&LiveBranch>,
  stale: Option<&CacheRecord>,
) -> Result<(CacheRecord, bool), Reason> {
  let policy_of = match tier {
    Tier::Hot => engine.config.index_policy(),
    // The digest folds untruncated text.
    Tier::Cold => Policy { max_entry_chars: None, ..engine.config.index_policy() },
  };
  let resumed = stale.filter(|_| tier == Tier::Hot).and_then(|s| incremental(s, read, live, &policy_of));
  let previous = resumed.as_ref().and(stale).and_then(|s| match &s.body {
    Body::Hot(shard) => Some(shard),
    Body::Cold(_) => None,
  });
  let was_resumed = resumed.is_some();
  let built = match resumed {
    Some(built) => built,
    None => full(read, branches, live, &policy_of)?,
  };
  let header = built.resume.header.clone();
  let fingerprint = built.fingerprint.clone();
  let titles = built.titles.clone();
  let record = CacheRecord {
    cache_version: CACHE_VERSION,
    file: read.path.to_string_lossy().into_owned(),
    session_id: header.id,
    cwd: header.cwd,
    branches,
    policy: policy(&engine.config, tier, branches, &fingerprint),
    lineage_fingerprint: fingerprint,
    source_hash: read.sha256.clone(),
    mtime: read.stamp.mtime_ms(),
    size: read.stamp.size,
    stamp: read.stamp,
    verified_ns: read.read_ns,
    cache_bytes: 0,
    cache_source_ratio: 0.0,
    titles,
    body: body(engine, tier, built, previous.map(|p| &**p)),
  };
  Ok((record, was_resumed))
}

/// Writes the record, then drops the other tier's record of this mode.
fn persist(
  index: &Index,
  source: &Source,
  branches: Branches,
  tier: Tier,
  record: &mut CacheRecord,
) -> std::io::Result<()> {
  let bytes = record.encode().map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidData))?;
  let path = write_record(index, &source.path, branches, tier, &bytes)?;
  record::defer_content(record, &path, &bytes);
  Ok(())
}

/// Writes the encoded record of `source` atomically, then drops the other
/// tier's record of this mode; the record's path.
pub(super) fn write_record(
  index: &Index,
  source: &Path,
  branches: Branches,
  tier: Tier,
  bytes: &[u8],
) -> std::io::Result<PathBuf> {
  ownership::ensure_dir(&index.dir)?;
  let path = index.dir.join(index.record_name(source, branches, tier));
  record::write_atomic(&path, bytes)?;
  let other = if tier == Tier::Hot { Tier::Cold } else { Tier::Hot };
  ownership::remove_ours(&index.dir, &index.record_name(source, branches, other));
  Ok(path)
}

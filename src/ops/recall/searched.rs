//! The sessions one recall reads: index records, or for an explicit
//! `session:` scope the source itself, with the binding each hit issues.

use crate::engine::Engine;
use crate::error::{ContractError, ErrorCode};
use crate::index::cold::{ColdContent, ColdDigest, Unreadable};
use crate::index::hot::HotShard;
use crate::index::record::{Body, CacheRecord, Tier};
use crate::index::{self, Coverage};
pub use crate::query::plan::RecallRequest;
use crate::session::binding::Issuer;
use crate::session::discover::Scope;
use crate::session::lineage::{self, Branches, LiveBranch};
use crate::session::SessionView;
use std::path::Path;
use std::sync::Arc;

/// What the query reads of one session.
enum Content {
  Hot(Arc<CacheRecord>),
  /// An explicitly scoped session, re-read from source (never persisted).
  Hydrated(Box<Hydrated>),
  Cold(Arc<CacheRecord>),
}

/// A session read from source: what a record would otherwise hold.
struct Hydrated {
  file: String,
  session_id: String,
  cwd: String,
  source_len: u64,
  source_hash: String,
  lineage_fingerprint: String,
  shard: HotShard,
}

/// One session of the search. Record-backed sessions borrow everything from
/// the shared record: wrapping one costs a reference count, not copies.
pub(super) struct Searched {
  pub(super) tier: Tier,
  /// Copied: ranking reads it for every item.
  pub(super) mtime: f64,
  /// The active lineage's root-to-leaf ids and last on-disk record, worked
  /// out only for sessions with a hit on the page.
  pub(super) lineage: std::cell::OnceCell<(Option<Vec<String>>, Option<String>)>,
  content: Content,
  /// A cold record rebuilt from source because its content could not be
  /// read back (see [`Searched::cold_content`]).
  rebuilt: std::cell::OnceCell<Option<Arc<CacheRecord>>>,
}

/// The fields a record and a hydrated session both have.
macro_rules! shared_field {
  ($name:ident: $ty:ty, $read:expr) => {
    pub(super) fn $name(&self) -> $ty {
      match &self.content {
        Content::Hot(record) | Content::Cold(record) => $read(&record.$name),
        Content::Hydrated(hydrated) => $read(&hydrated.$name),
      }
    }
  };
}

impl Searched {
  shared_field!(file: &str, String::as_str);
  shared_field!(session_id: &str, String::as_str);
  shared_field!(cwd: &str, String::as_str);
  shared_field!(source_hash: &str, String::as_str);
  shared_field!(lineage_fingerprint: &str, String::as_str);

  fn source_len(&self) -> u64 {
    match &self.content {
      Content::Hot(record) | Content::Cold(record) => record.size,
      Content::Hydrated(hydrated) => hydrated.source_len,
    }
  }

  pub(super) fn shard(&self) -> Option<&HotShard> {
    match &self.content {
      Content::Hot(record) => match &record.body {
        Body::Hot(shard) => Some(shard),
        Body::Cold(_) => None,
      },
      Content::Hydrated(hydrated) => Some(&hydrated.shard),
      Content::Cold(_) => None,
    }
  }

  pub(super) fn digest(&self) -> Option<&ColdDigest> {
    match &self.content {
      Content::Cold(record) => match &record.body {
        Body::Cold(digest) => Some(digest),
        Body::Hot(_) => None,
      },
      _ => None,
    }
  }

  fn from_record(tier: Tier, record: &Arc<CacheRecord>) -> Searched {
    let content = if tier == Tier::Hot { Content::Hot(record.clone()) } else { Content::Cold(record.clone()) };
    let (lineage, rebuilt) = (std::cell::OnceCell::new(), std::cell::OnceCell::new());
    Searched { tier, mtime: record.mtime, lineage, content, rebuilt }
  }

  fn hydrated(tier: Tier, view: &SessionView) -> Searched {
    let hydrated = Hydrated {
      file: view.file(),
      session_id: view.header.id.clone(),
      cwd: view.header.cwd.clone(),
      source_len: view.source_len,
      source_hash: view.source_hash.clone(),
      lineage_fingerprint: view.lineage_fingerprint.clone(),
      shard: HotShard::build(view.normalized.clone(), None),
    };
    Searched {
      tier,
      mtime: view.stamp.mtime_ms(),
      lineage: std::cell::OnceCell::from((Some(view.lineage_path.clone()), view.lineage_tip.clone())),
      content: Content::Hydrated(Box::new(hydrated)),
      rebuilt: std::cell::OnceCell::new(),
    }
  }
}

impl Searched {
  /// A cold session's vocabulary and addresses, read on first use. A record
  /// that can no longer be read back is rebuilt from source, once; `Err`
  /// when that fails too.
  pub(super) fn cold_content(&self, engine: &Engine, branches: Branches) -> Option<Result<&ColdContent, Unreadable>> {
    let digest = self.digest()?;
    Some(digest.content().or_else(|_| {
      let rebuilt = self.rebuilt.get_or_init(|| index::rebuild_cold(engine, Path::new(self.file()), branches));
      match rebuilt.as_deref().map(|record| &record.body) {
        Some(Body::Cold(digest)) => digest.content(),
        _ => Err(Unreadable),
      }
    }))
  }

  /// The active lineage (root-to-leaf ids, last on-disk record) of a hot
  /// session: Pi's live branch, or the record's selection when it is one
  /// parent chain.
  pub(super) fn lineage(&self, live: Option<&LiveBranch>) -> &(Option<Vec<String>>, Option<String>) {
    self.lineage.get_or_init(|| {
      let Some(resume) = self.shard().and_then(|shard| shard.resume.as_ref()) else {
        return (None, self.digest().and_then(|d| d.tip.as_ref()).map(|tip| tip.id.clone()));
      };
      let tip = resume.selected.last().and_then(|&o| resume.nodes.get(o as usize)).and_then(|n| n.id.clone());
      let path = match live {
        Some(live) => Some(live.ids.clone()),
        None => lineage::chain(&resume.nodes, &resume.selected),
      };
      (path, tip)
    })
  }

  pub(super) fn issuer(&self, branches: Branches, live: Option<&LiveBranch>) -> Issuer<'_, String> {
    Issuer {
      source_len: self.source_len(),
      source_hash: self.source_hash(),
      branches,
      fingerprint: self.lineage_fingerprint(),
      path: match branches {
        Branches::Active => self.lineage(live).0.as_deref(),
        Branches::All => None,
      },
      tip: self.digest().and_then(|d| d.tip.as_ref()),
    }
  }
}

fn out_of_bounds(first: i64, last: i64, count: usize) -> ContractError {
  ContractError::new(
    ErrorCode::IndexOutOfBounds,
    format!("Range {first}..{last} is outside the session's {count} entries."),
  )
  .with("entryCount", count)
}

/// Loads the sessions to search: index records, or for an explicit
/// `session:` scope the source itself (hydration, never promoted).
pub(super) fn searched(engine: &Engine, request: &RecallRequest) -> Result<(Vec<Searched>, Coverage), ContractError> {
  let synced = index::sync(engine, &request.scope, request.branches)?;
  let mut coverage = synced.coverage;
  if let Scope::Explicit(_) = request.scope {
    let Some(session) = synced.sessions.first() else { return Ok((Vec::new(), coverage)) };
    let view = engine.load_bound(&session.path, request.branches, &engine.config.index_policy(), &request.binding)?;
    if let Some((first, last)) = request.entry_range {
      let count = view.normalized.entries.len();
      if first < 0 || last < first || last as usize >= count {
        return Err(out_of_bounds(first, last, count));
      }
    }
    if session.record.is_none() {
      // Hydration read the source even though the index could not keep it.
      coverage.indexed_sessions += 1;
      coverage.stale_sessions -= 1;
      coverage.complete = coverage.reasons.is_empty() && coverage.stale_sessions == 0;
    }
    return Ok((vec![Searched::hydrated(session.tier, &view)], coverage));
  }
  let sessions = synced
    .sessions
    .iter()
    .filter_map(|s| s.record.as_ref().map(|record| Searched::from_record(s.tier, record)))
    .collect();
  Ok((sessions, coverage))
}

//! The sessions one recall reads: index records, or for an explicit
//! `session:` scope the source itself, with the binding each hit issues.

pub use super::RecallRequest;
use crate::engine::Engine;
use crate::error::{ContractError, ErrorCode};
use crate::index::cold::Echoes;
use crate::index::cold::{ColdContent, ColdDigest, ColdKinds, Unreadable};
use crate::index::dictionary::Served;
use crate::index::hot::HotShard;
use crate::index::record::{Body, CacheRecord, Tier};
use crate::index::{self, Coverage, Memo, Synced};
use crate::session::binding::Issuer;
use crate::session::discover::Scope;
use crate::session::lineage::{Branches, LiveBranch};
use crate::session::SessionView;
use std::any::Any;
use std::cell::OnceCell;
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// A session read from source: what a record would otherwise hold.
struct Hydrated {
  tier: Tier,
  file: String,
  session_id: String,
  cwd: String,
  source_len: u64,
  source_hash: String,
  lineage_fingerprint: String,
  lineage_path: Vec<String>,
  lineage_tip: Option<String>,
  mtime: f64,
  shard: HotShard,
}

/// The sessions one call searches, by slot. Record-backed scopes borrow the
/// synchronization's own list: a call over 100,000 sessions builds nothing
/// per session, and works things out only for the sessions it touches.
pub(super) struct Sessions {
  list: List,
  /// Per slot, made on first use (see [`Extras`]).
  extras: Vec<OnceCell<Box<Extras>>>,
  pub(super) plan: Arc<Plan>,
}

enum List {
  Synced(Arc<Vec<Synced>>),
  /// An explicitly scoped session, re-read from source (never persisted).
  Hydrated(Box<Hydrated>),
}

/// What a call works out about one session only when it needs it.
#[derive(Default)]
struct Extras {
  /// A cold record rebuilt from source because its content could not be
  /// read back (see [`Searched::cold_content`]).
  rebuilt: OnceCell<Option<Arc<CacheRecord>>>,
}

#[derive(Clone, Copy)]
enum Content<'a> {
  Record(&'a CacheRecord),
  Hydrated(&'a Hydrated),
}

/// One session of the search, borrowed from [`Sessions`].
#[derive(Clone, Copy)]
pub(super) struct Searched<'a> {
  pub(super) tier: Tier,
  content: Content<'a>,
  extras: &'a OnceCell<Box<Extras>>,
}

/// The fields a record and a hydrated session both have.
macro_rules! shared_field {
  ($name:ident: $ty:ty, $read:expr) => {
    pub(super) fn $name(self) -> $ty {
      match self.content {
        Content::Record(record) => $read(&record.$name),
        Content::Hydrated(hydrated) => $read(&hydrated.$name),
      }
    }
  };
}

impl<'a> Searched<'a> {
  shared_field!(file: &'a str, String::as_str);
  shared_field!(session_id: &'a str, String::as_str);
  shared_field!(cwd: &'a str, String::as_str);
  shared_field!(source_hash: &'a str, String::as_str);
  shared_field!(lineage_fingerprint: &'a str, String::as_str);
  shared_field!(mtime: f64, |m: &f64| *m);

  fn source_len(self) -> u64 {
    match self.content {
      Content::Record(record) => record.size,
      Content::Hydrated(hydrated) => hydrated.source_len,
    }
  }

  pub(super) fn shard(self) -> Option<&'a HotShard> {
    match self.content {
      Content::Record(CacheRecord { body: Body::Hot(shard), .. }) if self.tier == Tier::Hot => Some(shard),
      Content::Hydrated(hydrated) => Some(&hydrated.shard),
      Content::Record(_) => None,
    }
  }

  pub(super) fn digest(self) -> Option<&'a ColdDigest> {
    match self.content {
      Content::Record(CacheRecord { body: Body::Cold(digest), .. }) if self.tier == Tier::Cold => Some(digest),
      _ => None,
    }
  }

  fn extras(self) -> &'a Extras {
    self.extras.get_or_init(Default::default)
  }
}

/// Which slots are hot and which cold, worked out once per synchronization
/// result (kept in its [`Memo`]).
pub(super) struct Plan {
  /// Slots with a hot shard, ascending.
  pub(super) hot: Vec<usize>,
  /// Slots with a cold digest, ascending.
  pub(super) cold: Arc<Vec<usize>>,
  /// The cold term dictionary serving every cold slot (unfiltered queries).
  pub(super) served: OnceLock<Option<Arc<Served>>>,
  /// The cold digests' kinds, interned on the first filtered query.
  kinds: OnceLock<ColdKinds>,
  /// How many sessions there are and their mean length, worked out on the
  /// first lexical query (ranking's BM25 over sessions).
  lengths: OnceLock<(usize, f64)>,
}

impl Plan {
  fn of(sessions: &Sessions, slots: usize) -> Plan {
    let (mut hot, mut cold) = (Vec::new(), Vec::new());
    for slot in 0..slots {
      let Some(session) = sessions.get(slot) else { continue };
      if session.shard().is_some() {
        hot.push(slot);
      } else if session.digest().is_some() {
        cold.push(slot);
      }
    }
    Plan { hot, cold: Arc::new(cold), served: OnceLock::new(), kinds: OnceLock::new(), lengths: OnceLock::new() }
  }

  pub(super) fn cold_kinds(&self, sessions: &Sessions) -> &ColdKinds {
    self
      .kinds
      .get_or_init(|| ColdKinds::of(self.cold.iter().map(|&slot| sessions.at(slot).digest().expect("cold session"))))
  }

  /// The number of sessions and their mean ranking length: every session
  /// of the synchronization, whatever a call filters, so a filter that
  /// passes everything ranks as no filter does. A synchronization has one
  /// config, so one way of counting echoes.
  pub(super) fn lengths(&self, sessions: &Sessions, echoes: Echoes) -> (usize, f64) {
    *self.lengths.get_or_init(|| {
      let count = self.hot.len() + self.cold.len();
      let hot = self.hot.iter().map(|&slot| sessions.at(slot).shard().expect("hot").length(echoes));
      let cold = self.cold.iter().map(|&slot| sessions.at(slot).digest().expect("cold").length);
      (count, hot.chain(cold).sum::<u64>() as f64 / count.max(1) as f64)
    })
  }
}

/// The plan of a synchronization result, memoized in the result: every call
/// a reused synchronization answers shares it. Recall is the memo's only
/// user; were it ever to hold something else, the plan is worked out anew.
fn plan(sessions: &Sessions, memo: &Memo) -> Arc<Plan> {
  let make = || Arc::new(Plan::of(sessions, sessions.len()));
  memo.get_or_init(|| make() as Arc<dyn Any + Send + Sync>).downcast::<Plan>().unwrap_or_else(|_| make())
}

impl Sessions {
  fn synced(list: Arc<Vec<Synced>>, memo: &Memo) -> Sessions {
    let extras = std::iter::repeat_with(OnceCell::new).take(list.len()).collect();
    let mut sessions = Sessions { list: List::Synced(list), extras, plan: Arc::new(Plan::empty()) };
    sessions.plan = plan(&sessions, memo);
    sessions
  }

  fn hydrated(tier: Tier, view: &SessionView) -> Sessions {
    let hydrated = Hydrated {
      tier,
      file: view.file(),
      session_id: view.header.id.clone(),
      cwd: view.header.cwd.clone(),
      source_len: view.source_len,
      source_hash: view.source_hash.clone(),
      lineage_fingerprint: view.lineage_fingerprint.clone(),
      lineage_path: view.lineage_path.clone(),
      lineage_tip: view.lineage_tip.clone(),
      mtime: view.stamp.mtime_ms(),
      shard: HotShard::build(view.normalized.clone(), None),
    };
    let extras = Extras { rebuilt: OnceCell::new() };
    let mut sessions = Sessions {
      list: List::Hydrated(Box::new(hydrated)),
      extras: vec![OnceCell::from(Box::new(extras))],
      plan: Arc::new(Plan::empty()),
    };
    sessions.plan = Arc::new(Plan::of(&sessions, 1));
    sessions
  }

  fn empty() -> Sessions {
    Sessions { list: List::Synced(Arc::default()), extras: Vec::new(), plan: Arc::new(Plan::empty()) }
  }

  /// How many slots there are.
  pub(super) fn len(&self) -> usize {
    self.extras.len()
  }

  /// The session at `slot`; `None` for one the index could not keep.
  pub(super) fn get(&self, slot: usize) -> Option<Searched<'_>> {
    let (tier, content) = match &self.list {
      List::Synced(list) => {
        let synced = list.get(slot)?;
        (synced.tier, Content::Record(synced.record.as_deref()?))
      }
      List::Hydrated(hydrated) => (slot == 0).then_some((hydrated.tier, Content::Hydrated(hydrated)))?,
    };
    Some(Searched { tier, content, extras: &self.extras[slot] })
  }

  /// The session at a candidate's slot.
  pub(super) fn at(&self, slot: usize) -> Searched<'_> {
    self.get(slot).expect("a candidate slot holds a session")
  }

  /// The one session searched, when there is exactly one.
  pub(super) fn only(&self) -> Option<Searched<'_>> {
    let plan = &self.plan;
    match (plan.hot.as_slice(), plan.cold.as_slice()) {
      ([slot], []) | ([], [slot]) => self.get(*slot),
      _ => None,
    }
  }
}

impl Plan {
  fn empty() -> Plan {
    Plan {
      hot: Vec::new(),
      cold: Arc::default(),
      served: OnceLock::new(),
      kinds: OnceLock::new(),
      lengths: OnceLock::new(),
    }
  }
}

impl<'a> Searched<'a> {
  /// A cold session's vocabulary and addresses, read on first use. A record
  /// that can no longer be read back is rebuilt from source, once; `Err`
  /// when that fails too.
  pub(super) fn cold_content(self, engine: &Engine, branches: Branches) -> Option<Result<&'a ColdContent, Unreadable>> {
    let digest = self.digest()?;
    Some(digest.content().or_else(|_| {
      let rebuilt = self
        .extras()
        .rebuilt
        .get_or_init(|| index::rebuild_cold(&engine.index_context(), Path::new(self.file()), branches));
      match rebuilt.as_deref().map(|record| &record.body) {
        Some(Body::Cold(digest)) => digest.content(),
        _ => Err(Unreadable),
      }
    }))
  }

  /// The active lineage (root-to-leaf ids, last on-disk record) of a hot
  /// session: Pi's live branch, or the record's selection when it is one
  /// parent chain.
  pub(super) fn lineage<'l>(self, live: Option<&'l LiveBranch>) -> (Option<&'l [String]>, Option<&'l str>)
  where
    'a: 'l,
  {
    if let Content::Hydrated(hydrated) = self.content {
      return (Some(&hydrated.lineage_path), hydrated.lineage_tip.as_deref());
    }
    let Some(shard) = self.shard().filter(|shard| shard.resume.is_some()) else {
      return (None, self.digest().and_then(|d| d.tip.as_ref()).map(|tip| tip.id.as_str()));
    };
    let resume = shard.resume.as_ref().expect("a resume state");
    let tip = resume.selected.last().and_then(|&o| resume.nodes.get(o as usize)).and_then(|n| n.id.as_deref());
    let path = match live {
      Some(live) => Some(live.ids.as_slice()),
      None => shard.chain(),
    };
    (path, tip)
  }

  pub(super) fn issuer<'l>(self, branches: Branches, live: Option<&'l LiveBranch>) -> Issuer<'l, String>
  where
    'a: 'l,
  {
    Issuer {
      source_len: self.source_len(),
      source_hash: self.source_hash(),
      branches,
      fingerprint: self.lineage_fingerprint(),
      path: match branches {
        Branches::Active => self.lineage(live).0,
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
pub(super) fn searched(engine: &Engine, request: &RecallRequest) -> Result<(Sessions, Coverage), ContractError> {
  let synced = index::sync(&engine.index_context(), &request.scope, request.branches)?;
  let mut coverage = synced.coverage;
  if let Scope::Explicit(_) = request.scope {
    let Some(session) = synced.sessions.first() else { return Ok((Sessions::empty(), coverage)) };
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
    return Ok((Sessions::hydrated(session.tier, &view), coverage));
  }
  Ok((Sessions::synced(synced.sessions, &synced.memo), coverage))
}

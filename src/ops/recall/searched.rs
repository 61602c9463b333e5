//! The sessions one recall reads: index records, or for an explicit
//! `session:` scope the source itself, with the binding each hit issues.

pub use super::RecallRequest;
use crate::engine::Engine;
use crate::error::{ContractError, ErrorCode};
use crate::index::record::Tier;
use crate::index::snapshot::{CacheRecord, ColdContent, ColdDigest, ColdView, Echoes, HotShard, Partition};
use crate::index::snapshot::{Lengths, Served, Snapshot, Unreadable, View};
use crate::index::{self, Coverage};
use crate::session::binding::Issuer;
use crate::session::discover::Scope;
use crate::session::lineage::{Branches, LiveBranch};
use crate::session::source::Hash256;
use crate::session::SessionView;
use std::borrow::Cow;
use std::cell::OnceCell;
use std::path::Path;
use std::sync::Arc;

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
/// synchronization's own snapshot: a call over 100,000 sessions builds
/// nothing per session, and works things out only for the sessions it
/// touches.
pub(super) struct Sessions {
  list: List,
  /// Per slot, made on first use (see [`Extras`]).
  extras: Vec<OnceCell<Box<Extras>>>,
}

/// Why two kinds of list and not a [`Snapshot`] of the hydrated session: a
/// snapshot is a synchronization's result, its sessions index records. A
/// hydrated session is no record: it is the source re-read at the bound
/// prefix and lineage (its lineage path is its own, not a record's), never
/// persisted; a snapshot of it would need a made-up record head (stamp,
/// policy, cache size) that nothing reads. It is one hot session, so the
/// enum costs a match in the few accessors below and nothing in the search.
enum List {
  Indexed(Snapshot),
  /// An explicitly scoped session, re-read from source (never persisted),
  /// with its partition: one hot slot.
  Hydrated(Box<Hydrated>, Partition),
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
  Indexed(View<'a>),
  Hydrated(&'a Hydrated),
}

/// One session of the search, borrowed from [`Sessions`].
#[derive(Clone, Copy)]
pub(super) struct Searched<'a> {
  content: Content<'a>,
  extras: &'a OnceCell<Box<Extras>>,
}

/// A hash as a record holds it (bytes) or a hydrated session does (hex).
trait Hashed {
  fn hex(&self) -> Cow<'_, str>;
}

impl Hashed for Hash256 {
  fn hex(&self) -> Cow<'_, str> {
    Cow::Owned(Hash256::hex(self))
  }
}

impl Hashed for String {
  fn hex(&self) -> Cow<'_, str> {
    Cow::Borrowed(self)
  }
}

/// The fields a record and a hydrated session both have.
macro_rules! shared_field {
  ($name:ident: $ty:ty, $read:expr) => {
    pub(super) fn $name(self) -> $ty {
      match self.content {
        Content::Indexed(view) => $read(&view.head().$name),
        Content::Hydrated(hydrated) => $read(&hydrated.$name),
      }
    }
  };
}

impl<'a> Searched<'a> {
  shared_field!(file: &'a str, AsRef::<str>::as_ref);
  shared_field!(source_hash: Cow<'a, str>, Hashed::hex);
  shared_field!(lineage_fingerprint: Cow<'a, str>, Hashed::hex);
  shared_field!(mtime: f64, |m: &f64| *m);

  pub(super) fn session_id(self) -> &'a str {
    match self.content {
      Content::Indexed(view) => view.head().session_id(),
      Content::Hydrated(hydrated) => &hydrated.session_id,
    }
  }

  pub(super) fn cwd(self) -> &'a str {
    match self.content {
      Content::Indexed(view) => view.head().cwd(),
      Content::Hydrated(hydrated) => &hydrated.cwd,
    }
  }

  /// The tier the synchronization gave the session (a hydrated session
  /// keeps its record's tier, though it is searched as a hot one).
  pub(super) fn tier(self) -> Tier {
    match self.content {
      Content::Indexed(view) => view.tier(),
      Content::Hydrated(hydrated) => hydrated.tier,
    }
  }

  fn source_len(self) -> u64 {
    match self.content {
      Content::Indexed(view) => view.head().size,
      Content::Hydrated(hydrated) => hydrated.source_len,
    }
  }

  /// The session's ranking length (see [`View::length`]).
  pub(super) fn length(self, echoes: Echoes) -> u64 {
    match self.content {
      Content::Indexed(view) => view.length(echoes),
      Content::Hydrated(hydrated) => hydrated.shard.length(echoes),
    }
  }

  fn hot_shard(self) -> Option<&'a HotShard> {
    match self.content {
      Content::Indexed(View::Hot(hot)) => Some(hot.shard),
      Content::Hydrated(hydrated) => Some(&hydrated.shard),
      Content::Indexed(View::Cold(_)) => None,
    }
  }

  fn cold_digest(self) -> Option<&'a ColdDigest> {
    match self.content {
      Content::Indexed(View::Cold(cold)) => Some(cold.digest),
      _ => None,
    }
  }

  fn extras(self) -> &'a Extras {
    self.extras.get_or_init(Default::default)
  }
}

impl Sessions {
  fn indexed(snapshot: Snapshot) -> Sessions {
    let extras = std::iter::repeat_with(OnceCell::new).take(snapshot.len()).collect();
    Sessions { list: List::Indexed(snapshot), extras }
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
    let partition = Partition { hot: vec![0], cold: Arc::default() };
    Sessions { list: List::Hydrated(Box::new(hydrated), partition), extras: vec![OnceCell::from(Box::new(extras))] }
  }

  /// How many slots there are.
  pub(super) fn len(&self) -> usize {
    self.extras.len()
  }

  /// Which slots are hot and which cold.
  pub(super) fn partition(&self) -> &Partition {
    match &self.list {
      List::Indexed(snapshot) => snapshot.partition(),
      List::Hydrated(_, partition) => partition,
    }
  }

  /// The session at `slot`; `None` for one the index could not keep.
  pub(super) fn get(&self, slot: usize) -> Option<Searched<'_>> {
    let content = match &self.list {
      List::Indexed(snapshot) => Content::Indexed(snapshot.view(slot)?),
      List::Hydrated(hydrated, _) => (slot == 0).then_some(Content::Hydrated(hydrated))?,
    };
    Some(Searched { content, extras: &self.extras[slot] })
  }

  /// The session at a candidate's slot.
  pub(super) fn at(&self, slot: usize) -> Searched<'_> {
    self.get(slot).expect("a candidate slot holds a session")
  }

  /// The hot shard at `slot`, one of [`Partition::hot`]'s.
  pub(super) fn hot(&self, slot: usize) -> &HotShard {
    match &self.list {
      List::Indexed(snapshot) => snapshot.hot(slot).shard,
      List::Hydrated(hydrated, _) => &hydrated.shard,
    }
  }

  /// The cold session at `slot`, one of [`Partition::cold`]'s.
  pub(super) fn cold(&self, slot: usize) -> ColdView<'_> {
    match &self.list {
      List::Indexed(snapshot) => snapshot.cold(slot),
      List::Hydrated(..) => unreachable!("a hydrated session is hot: it has no cold slot"),
    }
  }

  /// Per cold slot, how many of its addresses have a kind `matches` accepts.
  pub(super) fn cold_matching(&self, matches: impl Fn(&crate::session::entry::Typed) -> bool) -> Vec<usize> {
    match &self.list {
      List::Indexed(snapshot) => snapshot.cold_kinds().matching(matches).collect(),
      List::Hydrated(..) => Vec::new(),
    }
  }

  /// The sessions' ranking lengths (see [`Snapshot::lengths`]).
  pub(super) fn lengths(&self, echoes: Echoes) -> Cow<'_, Lengths> {
    match &self.list {
      List::Indexed(snapshot) => Cow::Borrowed(snapshot.lengths(echoes)),
      List::Hydrated(..) => Cow::Owned(Lengths::of_slots(echoes, std::iter::once(Some(self.at(0).length(echoes))))),
    }
  }

  /// The cold term dictionary serving the cold slots `slots`: every cold
  /// slot (served once per snapshot) or a filter's subset.
  pub(super) fn serve_cold(&self, every: bool, slots: &[usize], max_record_bytes: u64) -> Option<Arc<Served>> {
    match &self.list {
      List::Indexed(snapshot) if every => snapshot.serve_every_cold(max_record_bytes),
      List::Indexed(snapshot) => snapshot.serve_cold(slots, max_record_bytes).map(Arc::new),
      // No cold slot: no dictionary serves any.
      List::Hydrated(..) => None,
    }
  }

  /// The one session searched, when there is exactly one.
  pub(super) fn only(&self) -> Option<Searched<'_>> {
    let partition = self.partition();
    match (partition.hot.as_slice(), partition.cold.as_slice()) {
      ([slot], []) | ([], [slot]) => self.get(*slot),
      _ => None,
    }
  }
}

impl<'a> Searched<'a> {
  /// A cold session's vocabulary and addresses, read on first use. A record
  /// that can no longer be read back is rebuilt from source, once; `Err`
  /// when that fails too.
  pub(super) fn cold_content(self, engine: &Engine, branches: Branches) -> Option<Result<&'a ColdContent, Unreadable>> {
    let digest = self.cold_digest()?;
    Some(digest.content().or_else(|_| {
      let rebuilt = self
        .extras()
        .rebuilt
        .get_or_init(|| index::rebuild_cold(&engine.index_context(), Path::new(self.file()), branches));
      rebuilt.as_deref().and_then(ColdView::of).map_or(Err(Unreadable), |cold| cold.digest.content())
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
    let Some(shard) = self.hot_shard().filter(|shard| shard.resume.is_some()) else {
      return (None, self.cold_digest().and_then(|d| d.tip()).map(|tip| tip.id.as_str()));
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
      tip: self.cold_digest().and_then(|d| d.tip()),
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
  let mut synced = index::sync(&engine.index_context(), &request.scope, request.branches)?;
  // Taken, not cloned: the call answers with it; the sessions keep the rest.
  let mut coverage = std::mem::take(&mut synced.coverage);
  if let Scope::Explicit(_) = request.scope {
    let Some(session) = synced.sessions.first() else { return Ok((Sessions::indexed(synced), coverage)) };
    let view = engine.load_bound(session.path, request.branches, &engine.config.index_policy(), &request.binding)?;
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
  Ok((Sessions::indexed(synced), coverage))
}

//! What a synchronization hands an operation: the session list, its
//! coverage, and what is worked out once per result and shared by every
//! call a reused synchronization answers (which slots are hot and which
//! cold, the cold term dictionary serving every cold slot, the cold digests'
//! kinds interned, the ranking lengths). Sessions are read through typed
//! views: a hot view holds its shard, a cold view its digest, so no reader
//! matches a record's body or unwraps an `Option` it already knows is `Some`.

use super::dictionary::{self, Candidate, Candidates};
use super::record::{Body, Tier};
use super::sync::Synced;
use super::Index;
use crate::coverage::Coverage;
use crate::session::lineage::Branches;
use std::sync::{Arc, OnceLock};

// The segment types the views hand out, re-exported so that an operation
// names one module of the index: where the record's parts live (hot, cold,
// dictionary) stays the index's own business.
pub use super::dictionary::Served;
pub use super::record::cold::{ColdContent, ColdDigest, ColdKinds, Echoes, Unreadable};
pub use super::record::hot::{EntryKinds, HotShard};
pub use super::record::CacheRecord;

/// Cheap to clone: a reused synchronization hands every call the same
/// session list and the same [`Derived`] state.
#[derive(Clone)]
pub struct Snapshot {
  pub sessions: Arc<Vec<Synced>>,
  pub coverage: Coverage,
  derived: Arc<Derived>,
}

/// What a snapshot works out about its sessions, each on first use. Every
/// clone of a snapshot shares it and every synchronization makes a new one,
/// so it never outlives the session list it was worked out from.
struct Derived {
  /// The index the snapshot came from: its dictionary shards serve the
  /// cold slots. Indexes live as long as the process (`Index::shared`
  /// never drops one), so the index holding its last snapshot is no leak.
  index: Arc<Index>,
  branches: Branches,
  partition: OnceLock<Arc<Partition>>,
  /// The cold term dictionary serving every cold slot (unfiltered queries).
  served: OnceLock<Option<Arc<Served>>>,
  /// The cold digests' kinds, in cold slot order (filtered queries).
  kinds: OnceLock<Arc<ColdKinds>>,
  /// Each session's ranking length, and their sum.
  lengths: OnceLock<Arc<Lengths>>,
}

/// The ranking lengths of a snapshot's sessions, by slot: worked out once
/// (a hot session's is a pass over its entries), so a query reads a slot's
/// length from a table, not through its record.
#[derive(Debug, Clone, PartialEq)]
pub struct Lengths {
  echoes: Echoes,
  /// Per slot (0: a slot the index could not keep).
  per_slot: Vec<u64>,
  /// Their sum: exact, so an adjusted sum equals a fresh one.
  total: u64,
  /// How many slots hold a session.
  count: usize,
}

impl Lengths {
  /// The session at `slot`'s ranking length, as BM25 reads it (at least 1).
  pub fn of(&self, slot: usize) -> u32 {
    self.per_slot[slot].clamp(1, u64::from(u32::MAX)) as u32
  }

  /// How many sessions there are and their mean ranking length: every
  /// session of the synchronization, whatever a call filters, so a filter
  /// that passes everything ranks as no filter does.
  pub fn universe(&self) -> (usize, f64) {
    (self.count, self.total as f64 / self.count.max(1) as f64)
  }

  /// The table of each slot's length (`None`: a slot not kept), counted
  /// with `echoes`.
  pub fn of_slots(echoes: Echoes, slots: impl Iterator<Item = Option<u64>>) -> Lengths {
    let mut lengths = Lengths { echoes, per_slot: Vec::new(), total: 0, count: 0 };
    for length in slots {
      lengths.per_slot.push(length.unwrap_or(0));
      lengths.total += length.unwrap_or(0);
      lengths.count += usize::from(length.is_some());
    }
    lengths
  }

  /// Slot `slot`'s session is now `view` (kept in both).
  fn set(&mut self, slot: usize, view: View<'_>) {
    let length = view.length(self.echoes);
    self.total = self.total - self.per_slot[slot] + length;
    self.per_slot[slot] = length;
  }
}

/// What a snapshot worked out, kept for the snapshot that patches it.
pub(super) struct Worked {
  derived: Arc<Derived>,
  len: usize,
}

/// Which slots hold a hot shard and which a cold digest, each ascending.
/// A slot the index could not keep is in neither.
pub struct Partition {
  pub hot: Vec<usize>,
  pub cold: Arc<Vec<usize>>,
}

impl Partition {
  /// The tier `slot` is in (`None`: neither).
  pub fn tier_of(&self, slot: usize) -> Option<Tier> {
    if self.hot.binary_search(&slot).is_ok() {
      Some(Tier::Hot)
    } else {
      self.cold.binary_search(&slot).is_ok().then_some(Tier::Cold)
    }
  }
}

/// A hot session: its record's head and its shard.
#[derive(Clone, Copy)]
pub struct HotView<'a> {
  pub head: &'a CacheRecord,
  pub shard: &'a HotShard,
}

/// A cold session: its record's head and its digest.
#[derive(Clone, Copy)]
pub struct ColdView<'a> {
  pub head: &'a CacheRecord,
  pub digest: &'a ColdDigest,
}

/// One session of a snapshot, by tier.
#[derive(Clone, Copy)]
pub enum View<'a> {
  Hot(HotView<'a>),
  Cold(ColdView<'a>),
}

impl<'a> ColdView<'a> {
  /// The cold view of a record held outside any snapshot (one rebuilt
  /// from source: `index::rebuild_cold`); `None` for a hot record.
  pub fn of(head: &'a CacheRecord) -> Option<ColdView<'a>> {
    match View::of(head, Tier::Cold)? {
      View::Cold(cold) => Some(cold),
      View::Hot(_) => None,
    }
  }
}

impl<'a> View<'a> {
  /// `head`'s view, when its body is of `tier`.
  fn of(head: &'a CacheRecord, tier: Tier) -> Option<View<'a>> {
    match (&head.body, tier) {
      (Body::Hot(shard), Tier::Hot) => Some(View::Hot(HotView { head, shard })),
      (Body::Cold(digest), Tier::Cold) => Some(View::Cold(ColdView { head, digest })),
      _ => None,
    }
  }

  pub fn head(self) -> &'a CacheRecord {
    match self {
      View::Hot(hot) => hot.head,
      View::Cold(cold) => cold.head,
    }
  }

  pub fn tier(self) -> Tier {
    match self {
      View::Hot(_) => Tier::Hot,
      View::Cold(_) => Tier::Cold,
    }
  }

  /// The session's ranking length: the same number in a hot shard and in a
  /// cold digest of the same entries.
  pub fn length(self, echoes: Echoes) -> u64 {
    match self {
      View::Hot(hot) => hot.shard.length(echoes),
      View::Cold(cold) => cold.digest.length,
    }
  }
}

impl Snapshot {
  pub(super) fn new(index: Arc<Index>, branches: Branches, sessions: Arc<Vec<Synced>>, coverage: Coverage) -> Snapshot {
    let derived = Derived {
      index,
      branches,
      partition: OnceLock::new(),
      served: OnceLock::new(),
      kinds: OnceLock::new(),
      lengths: OnceLock::new(),
    };
    Snapshot { sessions, coverage, derived: Arc::new(derived) }
  }

  /// The session list, and what was worked out about it for
  /// [`Snapshot::patched`]: taken apart so that a patch updates the only
  /// copy of the list in place.
  pub(super) fn into_parts(self) -> (Arc<Vec<Synced>>, Worked) {
    let len = self.len();
    (self.sessions, Worked { derived: self.derived, len })
  }

  /// The snapshot of `sessions`, which are `before`'s but for the records at
  /// `changed` (an incremental synchronization). What `before` worked out is
  /// carried over while the change leaves it as it was: the partition while
  /// every changed slot keeps its tier, the cold kinds and the dictionary's
  /// service while no changed slot is cold, the lengths adjusted for the
  /// changed slots. At 100,000 sessions working these out again cost an
  /// append tens of milliseconds; an append to a hot session changes none.
  pub(super) fn patched(before: Worked, sessions: Arc<Vec<Synced>>, coverage: Coverage, changed: &[usize]) -> Snapshot {
    let old = &before.derived;
    let patched = Snapshot::new(old.index.clone(), old.branches, sessions, coverage);
    let (Some(partition), true) = (old.partition.get(), before.len == patched.len()) else { return patched };
    let tier = |slot: usize| patched.view(slot).map(View::tier);
    if !changed.iter().all(|&slot| tier(slot) == partition.tier_of(slot)) {
      return patched;
    }
    let new = &patched.derived;
    let _ = new.partition.set(partition.clone());
    if !changed.iter().any(|&slot| tier(slot) == Some(Tier::Cold)) {
      if let Some(served) = old.served.get().filter(|served| !served.as_ref().is_some_and(|s| s.damaged())) {
        let _ = new.served.set(served.clone());
      }
      if let Some(kinds) = old.kinds.get() {
        let _ = new.kinds.set(kinds.clone());
      }
    }
    if let Some(lengths) = old.lengths.get() {
      let mut lengths = (**lengths).clone();
      for &slot in changed {
        lengths.set(slot, patched.view(slot).expect("a partitioned slot"));
      }
      let _ = new.lengths.set(Arc::new(lengths));
    }
    patched
  }

  /// Is `other` this very snapshot (a clone of it, sharing what it worked out)?
  #[cfg(test)]
  pub(crate) fn is(&self, other: &Snapshot) -> bool {
    Arc::ptr_eq(&self.derived, &other.derived)
  }

  /// Does `other` share this snapshot's partition (carried over by a patch)?
  #[cfg(test)]
  pub(crate) fn shares_partition(&self, other: &Snapshot) -> bool {
    std::ptr::eq(self.partition(), other.partition())
  }

  /// Does `other` share this snapshot's cold dictionary service and kinds?
  #[cfg(test)]
  pub(crate) fn shares_cold_terms(&self, other: &Snapshot) -> bool {
    let same = |a: Option<&Option<Arc<Served>>>, b: Option<&Option<Arc<Served>>>| match (a, b) {
      (Some(Some(a)), Some(Some(b))) => Arc::ptr_eq(a, b),
      _ => false,
    };
    same(self.derived.served.get(), other.derived.served.get()) && std::ptr::eq(self.cold_kinds(), other.cold_kinds())
  }

  /// A snapshot of the same sessions that carried nothing over.
  #[cfg(test)]
  pub(crate) fn worked_out_afresh(&self) -> Snapshot {
    let derived = &self.derived;
    Snapshot::new(derived.index.clone(), derived.branches, self.sessions.clone(), self.coverage.clone())
  }

  /// How many slots there are (sessions kept or not).
  pub fn len(&self) -> usize {
    self.sessions.len()
  }

  pub fn is_empty(&self) -> bool {
    self.sessions.is_empty()
  }

  /// The tier and record of every session the index could keep, in order.
  pub fn records(&self) -> impl Iterator<Item = (Tier, &CacheRecord)> {
    self.sessions.iter().filter_map(|s| Some((s.tier, s.record.as_deref()?)))
  }

  /// The session at `slot`, when it holds the body of its tier.
  pub fn view(&self, slot: usize) -> Option<View<'_>> {
    let synced = self.sessions.get(slot)?;
    View::of(synced.record.as_deref()?, synced.tier)
  }

  /// The hot session at `slot`, one of [`Partition::hot`]'s: like indexing
  /// a slice, any other slot is the caller's bug and panics.
  pub fn hot(&self, slot: usize) -> HotView<'_> {
    match self.view(slot) {
      Some(View::Hot(hot)) => hot,
      _ => panic!("slot {slot} is not a hot session"),
    }
  }

  /// The cold session at `slot`, one of [`Partition::cold`]'s (see [`Snapshot::hot`]).
  pub fn cold(&self, slot: usize) -> ColdView<'_> {
    match self.view(slot) {
      Some(View::Cold(cold)) => cold,
      _ => panic!("slot {slot} is not a cold session"),
    }
  }

  pub fn partition(&self) -> &Partition {
    self.derived.partition.get_or_init(|| {
      let (mut hot, mut cold) = (Vec::new(), Vec::new());
      for (slot, view) in self.views().enumerate() {
        match view {
          Some(View::Hot(_)) => hot.push(slot),
          Some(View::Cold(_)) => cold.push(slot),
          None => {}
        }
      }
      Arc::new(Partition { hot, cold: Arc::new(cold) })
    })
  }

  /// The cold digests' kinds, interned, in [`Partition::cold`]'s order.
  pub fn cold_kinds(&self) -> &ColdKinds {
    let cold = &self.partition().cold;
    self.derived.kinds.get_or_init(|| Arc::new(ColdKinds::of(cold.iter().map(|&slot| self.cold(slot).digest))))
  }

  /// The sessions' ranking lengths. A synchronization has one config, so
  /// one way of counting echoes.
  pub fn lengths(&self, echoes: Echoes) -> &Lengths {
    let lengths = self
      .derived
      .lengths
      .get_or_init(|| Arc::new(Lengths::of_slots(echoes, self.views().map(|view| Some(view?.length(echoes))))));
    debug_assert!(lengths.echoes == echoes, "one snapshot, one config");
    lengths
  }

  /// Every slot's session, by tier.
  fn views(&self) -> impl Iterator<Item = Option<View<'_>>> {
    (0..self.len()).map(|slot| self.view(slot))
  }

  /// The cold term dictionary serving every cold slot (see
  /// [`dictionary::serve`]), worked out once per snapshot; again while a
  /// lookup has found a shard of it damaged (serving again rebuilds that).
  pub fn serve_every_cold(&self, max_record_bytes: u64) -> Option<Arc<Served>> {
    let cold = &self.partition().cold;
    let served = || self.serve(cold, Candidates::Every, max_record_bytes).map(Arc::new);
    match self.derived.served.get_or_init(served) {
      Some(once) if once.damaged() => served(),
      once => once.clone(),
    }
  }

  /// The cold term dictionary serving the cold slots `slots` (a filter's).
  pub fn serve_cold(&self, slots: &[usize], max_record_bytes: u64) -> Option<Served> {
    self.serve(slots, Candidates::Subset, max_record_bytes)
  }

  fn serve(&self, slots: &[usize], which: Candidates, max_record_bytes: u64) -> Option<Served> {
    let candidate = |slot: usize| {
      let cold = self.cold(slot);
      (slot, cold.head.file.as_str(), cold.digest)
    };
    let candidates: Vec<Candidate<'_>> = slots.iter().map(|&slot| candidate(slot)).collect();
    let derived = &self.derived;
    dictionary::serve(&derived.index, derived.branches, (&candidates, which), max_record_bytes)
  }
}

impl std::fmt::Debug for Snapshot {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    let partitioned = self.derived.partition.get().is_some();
    f.debug_struct("Snapshot")
      .field("sessions", &self.sessions)
      .field("coverage", &self.coverage)
      .field("partitioned", &partitioned)
      .finish()
  }
}

//! One session's record in a synchronization: the record the index holds
//! (resident, or read from its file) proven current, or one built from the
//! source by the builder, written by the writer and kept resident.

use crate::coverage::Reason;
use crate::fsread::ReadError;
use crate::index::build::{self, Recipe};
use crate::index::freshness::{is_fresh, PolicyCheck, Proof};
use crate::index::record::{self, Body, CacheRecord, Tier};
use crate::index::resident::Slot;
use crate::index::trace::Event;
use crate::index::writer::{self, Write};
use crate::index::Context;
use crate::index::{Index, Source};
use crate::session::lineage::Branches;
use crate::session::source::{now_ns, read_source_resuming, StatStamp};
use std::fs;
use std::sync::Arc;

/// The current record of `source` from memory or disk, if provably fresh.
/// A record read from disk stays resident even when stale: an append can
/// resume from it. `resident`: the source's resident slot in `branches`
/// mode, if any; `listed`: is the record of this path and tier in the
/// index dir now?
pub(super) fn load_fresh(
  cx: &Context<'_>,
  index: &Index,
  policies: &PolicyCheck,
  (source, resident): (&Source, Option<Arc<Slot>>),
  tier: Tier,
  branches: Branches,
  listed: &(dyn Fn(&std::path::Path, Tier) -> bool + Sync),
) -> Option<Arc<CacheRecord>> {
  let slot = match resident.filter(|s| s.record.tier() == tier) {
    Some(slot) => slot,
    None => {
      let name = index.record_name(source.path, branches, tier);
      let limit = record::read_limit(cx.config, tier, source.stamp.size);
      let path = index.dir().join(&name);
      index.trace().note(|| Event::Opened(path.clone()));
      let Some(record) = record::open(&path, tier, limit, index.bodies()).ok()? else {
        // Torn or an older version: rebuilt from source, never migrated.
        index.dir().remove_ours(&name);
        return None;
      };
      let slot = Slot::new(Arc::new(record), 0);
      slot.verified_at(slot.record.verified_ns);
      index.resident().put(source.path, branches, slot.clone());
      slot
    }
  };
  let proof = is_fresh(cx, policies, &slot, source, tier)?;
  let now = now_ns();
  // Proven by hashing the source because its stamp was too recent to prove
  // anything: once the stamp can vouch from now on, the record is written
  // back with this verification, so no later process hashes the source
  // again (the newest sessions, which Pi just wrote, are the largest).
  if proof == Proof::Content && slot.record.stamp.proves_unchanged_since(now) {
    if let Some(record) = write_verified(index, source, branches, &slot, now) {
      return Some(record);
    }
  }
  // Someone deleted the record (or the whole index dir): write it back
  // (a cold digest whose content was never read is rebuilt instead).
  if !listed(source.path, tier) {
    let mut record = (*slot.record).clone();
    writer::write(index, source.path, branches, &mut record).ok()?;
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
  slot: &Slot,
  verified_ns: i128,
) -> Option<Arc<CacheRecord>> {
  // Read into the cell the old record shares: whoever still holds it reads
  // its content from memory, not from the file this replaces.
  if let Body::Cold(digest) = &slot.record.body {
    digest.content.get().ok()?;
  }
  let mut record = CacheRecord { verified_ns, ..(*slot.record).clone() };
  writer::write(index, source.path, branches, &mut record).ok()?;
  let slot = Slot::new(Arc::new(record), verified_ns);
  index.resident().put(source.path, branches, slot.clone());
  Some(slot.record.clone())
}

/// Source bytes a rebuild will parse: only the appended bytes when the
/// resident record can resume.
pub(super) fn planned_cost(index: &Index, source: &Source, tier: Tier, branches: Branches) -> u64 {
  let resident = index.resident().get(source.path, branches);
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

/// A built record and whether it was written (or queued to be).
pub(super) type Persisted = (Arc<CacheRecord>, bool);

/// Builds (or re-stamps) the record of `source` from its bytes now, keeps
/// it resident and writes it as `write` says; `false` when it could not be
/// written (it still answers this process).
pub(super) fn rebuild(
  cx: &Context<'_>,
  index: &Index,
  source: &Source,
  tier: Tier,
  branches: Branches,
  write: Write,
) -> Result<Persisted, Reason> {
  let prior = index.resident().get(source.path, branches).map(|r| r.record.clone());
  let resume_at = build::resume_offset(prior.as_deref(), tier);
  let read = read_source_resuming(source.path, cx.config.max_sync_source_bytes, resume_at).map_err(|e| match e {
    ReadError::Io(e) if e.kind() == std::io::ErrorKind::Interrupted => Reason::SourceChangedDuringIndex,
    // Grown past the budget since it was charged (or it lied about its size).
    ReadError::TooLarge { .. } => Reason::MaxSyncSourceBytes,
    _ => Reason::SourceUnavailable,
  })?;
  // The entries forgotten one by one never reach a record (a list that became unreadable: not built).
  let forgotten = crate::forgotten::load(&cx.discovery.agent_dir).map_err(|_| Reason::SourceUnavailable)?;
  let live = cx.live_branch(source.path, branches);
  let recipe = Recipe { config: cx.config, tier, branches, live, forgotten: &forgotten.entries };
  let built = build::build(&recipe, &read, prior.as_deref())?;
  index.trace().note(|| Event::Built(source.path.to_path_buf(), built.made));
  if fs::metadata(source.path).ok().map(|m| StatStamp::of(&m)) != Some(read.stamp) {
    return Err(Reason::SourceChangedDuringIndex);
  }
  let (mut record, fit) = (built.record, (built.fits, built.plain));
  let behind = write == Write::Behind && tier == Tier::Hot;
  // A record that cannot be written (full or read-only disk, I/O error)
  // still answers this process; the next call tries again. One over the
  // cold cap is not written by design.
  let persisted = behind || writer::replace(index, source.path, branches, &mut record, fit);
  let record = Arc::new(record);
  index.resident().put(source.path, branches, Slot::new(record.clone(), read.read_ns));
  index.listing().forget_header(source.path);
  if behind {
    writer::queue(index, source.path, branches, record.clone(), prior);
  }
  Ok((record, persisted))
}

//! `session:<id>` answered from what the index holds: the listing its watch
//! keeps current names every session file, and a file's resident record
//! names its session's id, so only files without one have their header read.
//! Listing every session dir and reading every header cost ~0.9 s a call at
//! 100,000 sessions, and every pinned follow call, expansion by id, forget
//! and pack names its sessions by id.

use super::record::CacheRecord;
use super::sources::{self, Source};
use super::{heads, ownership, Context, Index};
use crate::error::ContractError;
use crate::session::discover::{Discovery, SessionFile};
use crate::session::lineage::Branches;
use crate::session::named::{self, Hit, Targets};
use rayon::prelude::*;
use std::sync::Arc;

/// The session `target` names: the file at its path, else by id
/// ([`named`]) among every listed session file and the live one.
pub fn find_session(cx: &Context<'_>, target: &str) -> Result<SessionFile, ContractError> {
  if let Some(at_path) = cx.discovery.open_path(target) {
    return at_path;
  }
  let (index, listed) = looked_up(cx);
  find_in(&index, &cx.discovery, &listed, target)
}

/// The session `target` names by id among `listed` and the live file
/// ([`by_id`] of one target).
pub(super) fn find_in(
  index: &Index,
  discovery: &Discovery,
  listed: &[Source],
  target: &str,
) -> Result<SessionFile, ContractError> {
  let mut found = by_id(index, discovery, listed, &[target]);
  found.pop().unwrap_or_else(|| Err(named::not_found(target)))
}

/// The session each of `targets` names by id, in one pass over the listing.
pub fn find_sessions(cx: &Context<'_>, targets: &[&str]) -> Vec<Result<SessionFile, ContractError>> {
  let (index, listed) = looked_up(cx);
  by_id(&index, &cx.discovery, &listed, targets)
}

/// The index and its listing now, with the packed heads resident in a fresh
/// process: what a lookup outside a synchronization looks in.
fn looked_up(cx: &Context<'_>) -> (Arc<Index>, Arc<Vec<Source>>) {
  let index = Index::shared(cx.dir());
  let listed = index.listing().sources(cx);
  preload_heads(cx, &index, &listed);
  (index, listed)
}

/// A fresh process has no record resident: with many sessions their packed
/// heads name them (read as a first synchronization reads them, and kept
/// for it) in a fraction of the time every header takes (`huge`: ~0.9 s).
/// Not beside a synchronization, which preloads them itself, and only from
/// an index dir marked as ours (a lookup claims no dir).
fn preload_heads(cx: &Context<'_>, index: &Index, listed: &[Source]) {
  if listed.len() < index.trace().min_packed() || heads::preloaded(index, Branches::Active) {
    return;
  }
  let Some(_sync) = index.sync_state().try_lock() else { return };
  let names = index.names(cx);
  if ownership::is_marked(&cx.discovery, index.dir().path(), &names) {
    let limit = cx.config.max_cold_cache_bytes;
    heads::preload(index, Branches::Active, heads::Wanted::All, listed, &names, limit);
  }
}

/// What each of `targets` names by id among `listed` (every listed file,
/// forgotten or not: naming a forgotten one is its caller's refusal) and
/// the live file.
pub(super) fn by_id(
  index: &Index,
  discovery: &Discovery,
  listed: &[Source],
  targets: &[&str],
) -> Vec<Result<SessionFile, ContractError>> {
  let asked = Targets::new(targets);
  let mut hits = offered(index, listed, &asked);
  // Offered again when listed too: one file, however often it is hit.
  let live = discovery.live_file.as_deref().and_then(SessionFile::open);
  if let Some(live) = &live {
    asked.offer(&live.path, &live.header.id, &mut hits);
  }
  let opened = |(found, target): (Result<std::path::PathBuf, ContractError>, &&str)| {
    found.and_then(|path| SessionFile::open(&path).ok_or_else(|| named::not_found(target)))
  };
  asked.answer(&hits).into_iter().zip(targets).map(opened).collect()
}

/// How many listed files a task looks up at once.
const RUN: usize = 1024;

/// What `asked` names among `listed`, each file by its fresh resident
/// record's session id, else by its header.
fn offered<'s>(index: &Index, listed: &'s [Source], asked: &Targets<'_>) -> Vec<Hit<'s>> {
  let (mut hits, unknown) = listed
    .par_chunks(RUN)
    .map(|run| {
      let mut hits = Vec::new();
      let mut unknown = by_record(index, run.iter(), Branches::Active, asked, &mut hits);
      // A session synchronized in all-branches mode only (rare) has its record there.
      if !unknown.is_empty() {
        unknown = by_record(index, unknown.into_iter(), Branches::All, asked, &mut hits);
      }
      (hits, unknown)
    })
    .reduce(Default::default, |(mut hits, mut unknown), (more, also)| {
      hits.extend(more);
      unknown.extend(also);
      (hits, unknown)
    });
  hits.extend(by_header(index, &unknown, asked));
  hits
}

/// Adds to `hits` what `asked` names among `sources` by their fresh
/// records of `branches` mode; the sources without one.
fn by_record<'s>(
  index: &Index,
  sources: impl Iterator<Item = &'s Source>,
  branches: Branches,
  asked: &Targets<'_>,
  hits: &mut Vec<Hit<'s>>,
) -> Vec<&'s Source> {
  let mut unknown = Vec::new();
  index.resident().visit_each(
    sources,
    |source| source.path,
    branches,
    |source, slot| match slot.map(|slot| &*slot.record).filter(|record| names_id(record, source)) {
      Some(record) => asked.offer(source.path, record.session_id(), hits),
      None => unknown.push(source),
    },
  );
  unknown
}

/// Does `record` name the session id of `source` as it is now: built from
/// a file with this very stat (one rewritten in place may name another id;
/// the listing's header cache trusts a header for as long as the file is
/// the same inode, since appends never change it), and intact (a part that
/// does not decode reads as empty)?
fn names_id(record: &CacheRecord, source: &Source) -> bool {
  record.stamp == source.stamp && !record.session_id().is_empty()
}

/// What `asked` names among `sources` by their headers (the index's header
/// cache), read side by side on the header readers when there are many: a
/// fresh process has no record resident and reads every one.
fn by_header<'s>(index: &Index, sources: &[&'s Source], asked: &Targets<'_>) -> Vec<Hit<'s>> {
  let listing = index.listing();
  let each = || {
    sources
      .par_iter()
      .with_max_len(64)
      .fold(Vec::new, |mut hits, source| {
        if let Ok(Some(header)) = listing.probe(source.path, &source.stamp) {
          asked.offer(source.path, &header.id, &mut hits);
        }
        hits
      })
      .reduce(Vec::new, |mut hits, more| {
        hits.extend(more);
        hits
      })
  };
  match sources::header_readers().filter(|_| sources.len() >= sources::HEADER_READERS) {
    Some(readers) => readers.install(each),
    None => each(),
  }
}

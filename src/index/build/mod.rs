//! The builder: one session's record from its source bytes and the record
//! the index held for it before, under the settings that shape a record.
//! It opens no file and knows no index: the caller reads the source, and
//! writes and keeps what comes out (`sync::session`, [`super::writer`]).
//! (A prior cold digest whose content was never read reads it from its own
//! record file when it is encoded again: that is the digest's, not the
//! builder's.)

mod parse;
#[cfg(test)]
mod tests;

use super::freshness::{self, policy};
use super::interned::Interned;
use super::record::cold::{ColdDigest, Echoes};
use super::record::hot::HotShard;
use super::record::{Body, CacheRecord, Deferred, Details, Tier, CACHE_VERSION};
use crate::config::Config;
use crate::coverage::Reason;
use crate::session::entry::{ForgottenEntries, Policy};
use crate::session::lineage::{Branches, LiveBranch};
use crate::session::source::{Hash256, SourceFile};
use parse::Parsed;

/// What shapes a record besides its source.
#[derive(Clone, Copy)]
pub(crate) struct Recipe<'a> {
  /// The memory settings: privacy policy, entry cut, cold caps, echoes.
  pub config: &'a Config,
  pub tier: Tier,
  pub branches: Branches,
  /// Pi's live branch, when the source is the live session in active mode.
  pub live: Option<&'a LiveBranch>,
  /// The entries forgotten one by one: a record never holds them.
  pub forgotten: &'a ForgottenEntries,
}

/// How a record was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Made {
  /// The prior record, same bytes under a new stamp (a touch, a copy-back).
  Restamped,
  /// The prior hot record with the appended bytes parsed and added.
  Resumed,
  /// A parse of the whole source.
  Parsed,
}

/// A built record.
#[derive(Debug)]
pub(crate) struct Built {
  pub record: CacheRecord,
  pub made: Made,
  /// `false`: a cold digest over `maxColdCacheBytes` even with its lists
  /// cut empty; it answers, but must not be written.
  pub fits: bool,
  /// A cold body's plain bytes as the fit check serialized them, when the
  /// digest fit as built: the writer compresses these instead of
  /// serializing the body again (~3 % of a cold build).
  pub plain: Option<Vec<u8>>,
}

/// Where the reader may start hashing what a build of `prior` resumes
/// from: the end of a hot record's parsed prefix.
pub(crate) fn resume_offset(prior: Option<&CacheRecord>, tier: Tier) -> Option<usize> {
  match &prior?.body {
    Body::Hot(shard) if tier == Tier::Hot => shard.resume.as_ref().map(|resume| resume.complete_len as usize),
    _ => None,
  }
}

/// The record of `read` under `recipe`. `prior`, the record the index held
/// for this source, is reused when it still applies (same tier and policy):
/// restamped when the bytes are the same, resumed when they were appended to.
pub(crate) fn build(recipe: &Recipe<'_>, read: &SourceFile, prior: Option<&CacheRecord>) -> Result<Built, Reason> {
  let Recipe { config, tier, live, .. } = *recipe;
  let prior = prior.filter(|r| r.tier() == tier && r.policy == record_policy(recipe, r.session_id()));
  let same = |r: &&CacheRecord| r.source_hash == read.sha256 && live.is_none() && !r.content_unreadable();
  let (mut record, made) = match prior.filter(same) {
    Some(same) => {
      let record =
        CacheRecord { stamp: read.stamp, mtime: read.stamp.mtime_ms(), verified_ns: read.read_ns, ..same.clone() };
      (record, Made::Restamped)
    }
    None => parsed_record(recipe, read, prior)?,
  };
  let (fits, plain) = fit_cold(config, &mut record);
  Ok(Built { record, made, fits, plain })
}

/// The policy string of a record of session `session_id` under `recipe`.
fn record_policy(recipe: &Recipe<'_>, session_id: &str) -> Interned {
  freshness::record_policy(&policy(recipe.config, recipe.tier, recipe.branches), recipe.forgotten.get(session_id))
}

/// The entry policy of `tier`: a cold digest folds untruncated text.
fn entry_policy(config: &Config, tier: Tier) -> Policy {
  match tier {
    Tier::Hot => config.index_policy(),
    Tier::Cold => Policy { max_entry_chars: None, ..config.index_policy() },
  }
}

/// A record parsed from `read`: resumed from `prior` when it can.
fn parsed_record(
  recipe: &Recipe<'_>,
  read: &SourceFile,
  prior: Option<&CacheRecord>,
) -> Result<(CacheRecord, Made), Reason> {
  let Recipe { config, tier, branches, live, forgotten } = *recipe;
  let policy_of = entry_policy(config, tier);
  let reading = (&policy_of, forgotten);
  let resumed = prior.filter(|_| tier == Tier::Hot).and_then(|s| parse::incremental(s, read, live, reading));
  let previous = resumed.as_ref().and(prior).and_then(|s| match &s.body {
    Body::Hot(shard) => Some(&**shard),
    Body::Cold(_) => None,
  });
  let made = if resumed.is_some() { Made::Resumed } else { Made::Parsed };
  let parsed = match resumed {
    Some(parsed) => parsed,
    None => parse::full(read, branches, live, reading)?,
  };
  let header = parsed.resume.header.clone();
  // Both are `sha256_hex`'s: 64 lowercase hex digits.
  let hash = |hex: &str| Hash256::from_hex(hex).expect("a SHA-256 this package wrote as hex");
  let fingerprint = hash(&parsed.fingerprint);
  let titles = parsed.titles.clone();
  let record = CacheRecord {
    cache_version: CACHE_VERSION,
    file: Interned::file(&read.path.to_string_lossy()),
    policy: record_policy(recipe, &header.id),
    branches,
    lineage_fingerprint: fingerprint,
    source_hash: hash(&read.sha256),
    mtime: read.stamp.mtime_ms(),
    size: read.stamp.size,
    stamp: read.stamp,
    verified_ns: read.read_ns,
    cache_bytes: 0,
    cache_source_ratio: 0.0,
    details: Deferred::new(Details { session_id: header.id, cwd: Interned::new(&header.cwd), titles }),
    body: body(config, tier, parsed, previous),
  };
  Ok((record, made))
}

fn body(config: &Config, tier: Tier, parsed: Parsed, previous: Option<&HotShard>) -> Body {
  match tier {
    Tier::Hot => Body::Hot(Box::new(match previous {
      Some(previous) => previous.extended(parsed.normalized, parsed.resume),
      None => HotShard::build(parsed.normalized, Some(parsed.resume)),
    })),
    Tier::Cold => Body::Cold(
      ColdDigest::build(&parsed.normalized, config.max_cold_vocabulary_bytes as usize, Echoes::of(config))
        .with_tip(parsed.tip()),
    ),
  }
}

/// Fits a cold digest under `maxColdCacheBytes` (exact prefixes only);
/// `false` when not even the empty prefixes fit, so it must not be written.
/// A digest that fits as built comes with its body's plain bytes.
fn fit_cold(config: &Config, record: &mut CacheRecord) -> (bool, Option<Vec<u8>>) {
  let Body::Cold(digest) = &record.body else { return (true, None) };
  let cap = config.max_cold_cache_bytes;
  let trial = |candidate: &ColdDigest| CacheRecord { body: Body::Cold(candidate.clone()), ..record.clone() };
  let mut whole = trial(digest);
  if let Ok(plain) = whole.plain_body() {
    if whole.framed_len(&plain) <= cap {
      return (true, Some(plain));
    }
  }
  let mut digest = digest.clone();
  let fits = digest.shrink_to_fit(|candidate| trial(candidate).plain_len().is_ok_and(|len| len <= cap));
  record.body = Body::Cold(digest);
  (fits, None)
}

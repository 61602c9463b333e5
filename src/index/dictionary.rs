//! The cold term dictionary: every canonical term of the cold digests of one
//! branch mode → the cold sessions whose vocabulary holds it.
//!
//! A cold lexical query then touches only the sessions that hold its terms,
//! instead of probing every digest (and, past `MAX_DIGEST_CANDIDATES`
//! digests, leaving the older ones out). It is session-level only, as cold
//! digests are: a hit names the session.
//!
//! It is split into [`SHARDS`] shards, each project's sessions in a run of
//! consecutive shards ([`placement`]: a project's sessions share most of
//! their terms), so a new or changed cold session invalidates only its
//! shard: a query rebuilds just the shards that vouch for too few of their
//! candidates, and a global synchronization also those holding too many
//! sessions that moved or are gone. Each shard ([`Dictionary`]) is a term index (front-coded
//! blocks) mapping each term to the offset of its posting list, persisted
//! beside the records as `cold-terms.<mode>.<shard>.dict`. A term is looked up in every shard.
//!
//! It never serves a stale answer: each member is the record file it was
//! built from with the xxh3-128 fingerprint of that digest's vocabulary (its
//! terms and their frequency classes). A query uses a member's postings only
//! for a candidate digest with that file and the same fingerprint; every
//! other candidate digest (new, changed, or with a vocabulary that is not
//! sorted) is a straggler, searched directly.
//! So the union answers exactly what a scan of every digest answers.

mod blocks;
pub(super) mod bytes;
mod checked;
pub mod placement;
mod posting;
mod terms;

use super::dir::{self as files, IndexFile};
use super::record::cold::ColdDigest;
use super::trace::Event;
use super::Index;
use crate::session::lineage::Branches;
use parking_lot::Mutex;
use rayon::prelude::*;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
pub use terms::{Damaged, Dictionary};

/// Below this many cold candidates no shard is built for them: every digest
/// is probed directly (its Bloom filter costs less than building a
/// dictionary), unless the shards holding them are already at hand.
pub const MIN_COLD: usize = 256;

/// Below this many cold candidates every digest is probed, shards at hand
/// or not. Between this and [`MIN_COLD`], every cold session of a
/// synchronization (a project's share of a larger index, Pi's default
/// scope) is served by the shards that exist: probing reads every
/// candidate's vocabulary, ~40 ms for 200 sessions of `medium` in a fresh
/// process. A filtered subset is not (served per call, not once per
/// synchronization, the lookups cost more than probing resident digests).
pub const MIN_AT_HAND: usize = 32;

/// Which candidate sets [`serve`] takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Candidates {
  /// Every cold session of a synchronization: from [`MIN_AT_HAND`] on.
  Every,
  /// A subset (a filter's): from [`MIN_COLD`] on.
  Subset,
}

/// Above this many cold candidates no dictionary is served: past the bound
/// recall probes the newest digests and says so in its coverage
/// (`candidate_digest_budget`). A global sync that builds cold records
/// brings the shards up to date ([`refresh`], from `index::prepare_dictionary`), else a query
/// that finds no shard at hand builds them: at 100,000 synthetic cold digests (73M term-member pairs) that
/// measured 34 s on one shared core (`build_time_at_scale`), and a changed
/// session then costs a rebuild of its shard only (1/[`SHARDS`] of that).
pub const MAX_COLD: usize = 100_000;

/// Shards per branch mode. More shards make a rebuild after a change
/// smaller and a term lookup dearer (one term index per shard).
pub const SHARDS: usize = 32;
const NONE: u32 = u32::MAX;

/// Shards whose builds each hold at most this many vocabulary bytes are
/// built two at a time; larger ones (~45 MB a shard at 100,000 sessions)
/// one at a time, each merge split in two ([`terms`]), so a build holds one
/// shard's vocabularies. Small shards keep the shard-level parallelism:
/// a split merge of a few large vocabularies parallelizes worse (`medium`'s
/// cold build 4.7-5.8 -> 6.1-7.2 s with every shard built alone).
const SHARDS_AT_ONCE_BYTES: u64 = 16 << 20;

/// What a shard's build holds for its merge: its candidates' vocabularies.
fn vocabulary_bytes(group: &[Candidate<'_>]) -> u64 {
  group.iter().map(|candidate| candidate.2.index_coverage.vocabulary_bytes.unwrap_or(0)).sum()
}

/// The file of one shard of one branch mode.
pub fn file_name(branches: Branches, shard: usize) -> String {
  IndexFile::DictionaryShard { branches, shard }.to_string()
}

/// The one file per branch mode written before shards: still the index's,
/// removed when its shards are written.
fn unsharded_file_name(branches: Branches) -> String {
  IndexFile::Dictionary { branches }.to_string()
}

/// A cold candidate: its slot in the query, its record file and its digest.
pub type Candidate<'a> = (usize, &'a str, &'a ColdDigest);

type Shards = Vec<Option<Arc<Dictionary>>>;

/// The shards one index keeps resident, per branch mode, shared by its calls.
#[derive(Default)]
pub struct Resident {
  shards: Mutex<HashMap<Branches, Shards>>,
}

impl Resident {
  /// Drops shard `shard` of `branches` mode and removes its file: it may
  /// name a forgotten session (a shard is rebuilt only when it vouches for
  /// too few of its candidates, and a session gone from them leaves it
  /// vouching for the rest). The next query that needs it builds it again.
  pub fn remove(&self, dir: &crate::index::dir::IndexDir, branches: Branches, shard: usize) {
    if let Some(shards) = self.shards.lock().get_mut(&branches) {
      shards[shard] = None;
    }
    dir.remove_ours(&file_name(branches, shard));
  }
}

#[cfg(test)]
impl Resident {
  /// Forgets the resident shards (tests: a fresh process).
  pub fn forget(&self) {
    self.shards.lock().clear();
  }

  /// The resident shards of `branches` mode.
  fn of(&self, branches: Branches) -> Option<Shards> {
    self.shards.lock().get(&branches).cloned()
  }
}

/// One shard matched to the query's candidates in it.
pub struct Part {
  dictionary: Arc<Dictionary>,
  /// The candidate slot each member stands for, [`NONE`] if it stands for none.
  slot_of: Vec<u32>,
  /// How many candidates it vouches for.
  vouched: usize,
}

impl Part {
  /// The part and the candidate slots it does not vouch for.
  fn matched(dictionary: Arc<Dictionary>, candidates: &[Candidate<'_>]) -> Matched {
    let mut slot_of = vec![NONE; dictionary.members()];
    let mut stragglers = Vec::new();
    for &(slot, file, digest) in candidates {
      let member = || dictionary.member(file, digest.vocabulary_fingerprint());
      match digest.matched.member(dictionary.generation, member) {
        Some(member) if slot_of[member as usize] == NONE => slot_of[member as usize] = slot as u32,
        _ => stragglers.push(slot),
      }
    }
    let vouched = candidates.len() - stragglers.len();
    (Part { dictionary, slot_of, vouched }, stragglers)
  }

  /// The candidate slots it vouches for.
  fn vouched_slots(&self) -> impl Iterator<Item = usize> + '_ {
    self.slot_of.iter().filter(|&&slot| slot != NONE).map(|&slot| slot as usize)
  }
}

/// A shard matched to its candidates, and the candidate slots it does not vouch for.
pub type Matched = (Part, Vec<usize>);

/// The dictionary's shards matched to one query's cold candidates.
pub struct Served {
  parts: Vec<Part>,
  /// Candidate slots no shard vouches for: search their digests.
  pub stragglers: Vec<usize>,
}

impl Served {
  /// One dictionary serving every candidate (tests).
  #[cfg(test)]
  fn new(dictionary: Arc<Dictionary>, candidates: &[Candidate<'_>]) -> Served {
    let (part, stragglers) = Part::matched(dictionary, candidates);
    Served { parts: vec![part], stragglers }
  }

  /// Candidate slots whose digest holds `term`: the vouched members' postings
  /// in every shard, then the stragglers for which `scan` says so. Unordered.
  #[cfg(test)]
  pub fn holding(&self, term: &str, scan: impl Fn(usize) -> bool) -> Vec<usize> {
    let frequencies = self.frequencies(term, |slot| scan(slot).then_some(1));
    frequencies.into_iter().map(|(slot, _)| slot).collect()
  }

  /// Whether a lookup found a shard it serves from damaged: served again,
  /// that shard is rebuilt.
  pub fn damaged(&self) -> bool {
    self.parts.iter().any(|part| part.dictionary.damaged())
  }

  /// [`Served::holding`] with each session's frequency class of `term`
  /// (`scan` gives a straggler's, and every session of a shard found
  /// damaged), each given to `each` as it is read.
  pub fn each_frequency(&self, term: &str, scan: impl Fn(usize) -> Option<u8>, mut each: impl FnMut(usize, u8)) {
    let scanned = |slot: usize| scan(slot).map(|frequency| (slot, frequency));
    for part in &self.parts {
      let slot = |member: u32| part.slot_of.get(member as usize).copied().filter(|&s| s != NONE);
      match part.dictionary.frequencies(term) {
        Ok(postings) => postings.filter_map(|(m, f)| Some((slot(m)? as usize, f))).for_each(|(s, f)| each(s, f)),
        Err(Damaged) => part.vouched_slots().filter_map(scanned).for_each(|(s, f)| each(s, f)),
      }
    }
    self.stragglers.iter().filter_map(|&slot| scanned(slot)).for_each(|(slot, f)| each(slot, f));
  }

  /// [`Served::each_frequency`] collected (tests).
  #[cfg(test)]
  pub fn frequencies(&self, term: &str, scan: impl Fn(usize) -> Option<u8>) -> Vec<(usize, u8)> {
    let mut slots = Vec::new();
    self.each_frequency(term, scan, |slot, frequency| slots.push((slot, frequency)));
    slots
  }
}

/// Stragglers past this share of a shard's candidates trigger its rebuild:
/// a few cost a Bloom probe each, many mean the shard is out of date. Over
/// all shards that allows about `max(64, candidates / 16)`.
fn too_many_stragglers(stragglers: usize, candidates: usize) -> bool {
  stragglers > (64 / SHARDS).max(candidates / 16)
}

fn load(dir: &Path, branches: Branches, shard: usize, limit: u64) -> Option<Dictionary> {
  Dictionary::decode(bytes::ShardBytes::open(&dir.join(file_name(branches, shard)), limit).ok()?)
}

/// Builds shard `shard` from its candidates and persists it (best effort: a
/// failed write only costs a later process the rebuild). A written shard is
/// then served from its file, as a later process would serve it (mapped,
/// its pages released once checked): the built one holds the whole shard in
/// the heap, 240 MB over the 32 shards of 100,000 cold sessions.
fn build(dir: &Path, branches: Branches, shard: usize, candidates: &[Candidate<'_>]) -> Arc<Dictionary> {
  let digests: Vec<(&str, &ColdDigest)> = candidates.iter().map(|&(_, file, digest)| (file, digest)).collect();
  let dictionary = Dictionary::build(&digests);
  if let Some(bytes) = dir.join(files::MARKER).exists().then(|| dictionary.encode()).flatten() {
    if files::write_atomic(&dir.join(file_name(branches, shard)), &bytes).is_ok() {
      if let Some(written) = load(dir, branches, shard, bytes.len() as u64) {
        // A shard's build frees tens of MB that the next one's larger
        // buffers do not fit into: the process grew by that much per shard.
        drop((dictionary, bytes));
        super::trim_heap();
        return Arc::new(written);
      }
    }
  }
  Arc::new(dictionary)
}

/// The dictionary for `candidates` (the cold digests a query may search),
/// its shards brought up to date by [`refresh`]. `None` below [`MIN_COLD`]
/// (for [`Candidates::Every`]: below [`MIN_AT_HAND`], or unless every shard
/// holding them is at hand, in memory or on disk) and above [`MAX_COLD`].
pub fn serve(
  index: &Index,
  branches: Branches,
  (candidates, which): (&[Candidate<'_>], Candidates),
  max_record_bytes: u64,
) -> Option<Served> {
  let few = which == Candidates::Every && (MIN_AT_HAND..MIN_COLD).contains(&candidates.len());
  let how = if few { Refresh::AtHand } else { Refresh::Query };
  let parts = refresh_within(index, branches, candidates, max_record_bytes, how)?;
  index.trace().note(|| Event::DictionaryServed);
  let mut served = Served { parts: Vec::new(), stragglers: Vec::new() };
  for (part, stragglers) in parts.into_iter().flatten() {
    served.stragglers.extend(stragglers);
    if part.vouched > 0 {
      served.parts.push(part);
    }
  }
  Some(served)
}

/// How a refresh may bring a shard up to date.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Refresh {
  /// Not at all: `None` unless every shard is at hand, in memory or on disk.
  AtHand,
  /// By building the shards that vouch for too few of a query's candidates.
  Query,
  /// As for a query, with every cold session as the candidates: a shard
  /// also rebuilt when too many of its members are none of them (sessions
  /// since moved to another shard, or deleted), and removed when it has
  /// no candidate left.
  Global,
}

/// Brings the shards holding `candidates`, every cold session of a global
/// synchronization, up to date: each from memory, from disk, or built now
/// (and persisted) when the one at hand vouches for too few of its
/// candidates, or holds too many members that are none; shards to build are
/// built in parallel. Shards without candidates are removed. Returns each
/// shard matched to its candidates (`None`: no candidate in it).
/// `max_record_bytes` bounds each candidate's share of a shard file's read.
pub fn refresh(
  index: &Index,
  branches: Branches,
  candidates: &[Candidate<'_>],
  max_record_bytes: u64,
) -> Option<Vec<Option<Matched>>> {
  refresh_within(index, branches, candidates, max_record_bytes, Refresh::Global)
}

/// Brings the shards holding `candidates` up to date as `how` allows; `None`
/// outside [`MIN_COLD`]..=[`MAX_COLD`] candidates, unless only the shards
/// at hand serve them.
fn refresh_within(
  index: &Index,
  branches: Branches,
  candidates: &[Candidate<'_>],
  max_record_bytes: u64,
  how: Refresh,
) -> Option<Vec<Option<Matched>>> {
  if how != Refresh::AtHand && !(MIN_COLD..=MAX_COLD).contains(&candidates.len()) {
    return None;
  }
  let (dir, resident) = (index.dir().path(), index.dictionaries());
  let mut shards = resident.shards.lock().get(&branches).cloned().unwrap_or_else(|| vec![None; SHARDS]);
  let mut groups = vec![Vec::new(); SHARDS];
  let placement = index.listing().placement();
  for &candidate in candidates {
    groups[placement.shard_of(candidate.1, &candidate.2.matched)].push(candidate);
  }
  let limit = max_record_bytes.saturating_mul(candidates.len() as u64);
  // Shards are read (and matched) in parallel: a fresh process reads them all.
  let mut parts: Vec<Option<Matched>> = (0..SHARDS)
    .into_par_iter()
    .map(|shard| {
      let group = &groups[shard];
      if group.is_empty() {
        return None;
      }
      // A shard a lookup found damaged is rebuilt, not read again.
      let known = match &shards[shard] {
        Some(resident) => Some(resident.clone()).filter(|d| !d.damaged()),
        None => load(dir, branches, shard, limit).map(Arc::new),
      };
      let strays = |part: &Part| part.dictionary.members() - part.vouched;
      known
        .map(|d| Part::matched(d, group))
        .filter(|(_, stragglers)| !too_many_stragglers(stragglers.len(), group.len()))
        .filter(|(part, _)| how != Refresh::Global || !too_many_stragglers(strays(part), part.dictionary.members()))
    })
    .collect();
  let stale: Vec<usize> = (0..SHARDS).filter(|&s| parts[s].is_none() && !groups[s].is_empty()).collect();
  if how == Refresh::AtHand && !stale.is_empty() {
    return None;
  }
  if how == Refresh::Global {
    for shard in (0..SHARDS).filter(|&s| groups[s].is_empty()) {
      shards[shard] = None;
      files::remove_ours(dir, &file_name(branches, shard));
    }
  }
  stale.iter().for_each(|&shard| index.trace().note(|| Event::DictionaryBuilt(branches, shard)));
  let build_one = |shard: usize| (shard, build(dir, branches, shard, &groups[shard]));
  let largest = stale.iter().map(|&shard| vocabulary_bytes(&groups[shard])).max().unwrap_or(0);
  let built: Vec<(usize, Arc<Dictionary>)> = match largest <= SHARDS_AT_ONCE_BYTES {
    true => stale.into_par_iter().map(build_one).collect(),
    false => stale.into_iter().map(build_one).collect(),
  };
  if !built.is_empty() && dir.join(files::MARKER).exists() {
    // Shards now stand for the one file written before them.
    files::remove_ours(dir, &unsharded_file_name(branches));
  }
  for (shard, dictionary) in built {
    parts[shard] = Some(Part::matched(dictionary, &groups[shard]));
  }
  for (shard, (part, _)) in parts.iter().enumerate().filter_map(|(s, p)| Some((s, p.as_ref()?))) {
    shards[shard] = Some(part.dictionary.clone());
  }
  resident.shards.lock().insert(branches, shards);
  Some(parts)
}

#[cfg(test)]
mod tests;

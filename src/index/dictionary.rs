//! The cold term dictionary: every canonical term of the cold digests of one
//! branch mode → the cold sessions whose vocabulary holds it.
//!
//! A cold lexical query then touches only the sessions that hold its terms,
//! instead of probing every digest (and, past `MAX_DIGEST_CANDIDATES`
//! digests, leaving the older ones out). It is session-level only, as cold
//! digests are: a hit names the session.
//!
//! Terms are an FST (`fst`) mapping each term to the offset of its posting
//! list (member ordinals, delta varints). It is persisted beside the records
//! as `cold-terms.<mode>.dict` (`PFMIDXD1`, xxh3-64 of the rest, the members,
//! the postings, the FST) and rebuilt when too many cold digests are not in
//! it.
//!
//! It never serves a stale answer: each member is the record file it was
//! built from with the xxh3-128 fingerprint of that digest's vocabulary. A
//! query uses a member's postings only for a candidate digest with that file
//! and the same fingerprint; every other candidate digest (new, changed, or
//! with a vocabulary that is not sorted) is a straggler, searched directly.
//! So the union answers exactly what a scan of every digest answers.

use super::cold::ColdDigest;
use super::record;
use crate::session::lineage::Branches;
use fst::{Map, MapBuilder};
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Below this many cold candidates every digest is probed directly: its
/// Bloom filter costs less than loading a dictionary.
pub const MIN_COLD: usize = 256;

/// Above this many cold candidates no dictionary is served: it is built
/// inside the query that needs it, by a k-way merge of every vocabulary, and
/// at 100,000 cold sessions that took 413 s (2 shared cores). Past the bound
/// recall probes the newest digests as before and says so in its coverage
/// (`candidate_digest_budget`), rather than stall a call for minutes.
pub const MAX_COLD: usize = 20_000;
const MAGIC: &[u8; 8] = b"PFMIDXD1";
const HEADER_BYTES: usize = MAGIC.len() + 8;
const NONE: u32 = u32::MAX;

/// The dictionary file of one branch mode.
pub fn file_name(branches: Branches) -> String {
  format!("cold-terms.{}.dict", branches.as_str())
}

pub fn is_file_name(name: &str) -> bool {
  [Branches::Active, Branches::All].iter().any(|b| file_name(*b) == name)
}

/// One digest the dictionary was built from.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Member {
  file: String,
  fingerprint: u128,
}

pub struct Dictionary {
  members: Vec<Member>,
  by_file: FxHashMap<String, u32>,
  terms: Map<Vec<u8>>,
  postings: Vec<u8>,
}

/// A cold candidate: its slot in the query, its record file and its digest.
pub type Candidate<'a> = (usize, &'a str, &'a ColdDigest);

fn strictly_sorted(digest: &ColdDigest) -> bool {
  let mut terms = digest.vocabulary.iter();
  let Some(mut last) = terms.next() else { return true };
  terms.all(|term| std::mem::replace(&mut last, term) < term)
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
  while value >= 0x80 {
    out.push(value as u8 | 0x80);
    value >>= 7;
  }
  out.push(value as u8);
}

fn take_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
  let mut value = 0u64;
  for shift in (0..64).step_by(7) {
    let byte = *bytes.get(*at)?;
    *at += 1;
    value |= u64::from(byte & 0x7f) << shift;
    if byte < 0x80 {
      return Some(value);
    }
  }
  None
}

impl Dictionary {
  /// Merges the (sorted, unique) vocabularies of `digests` into one FST:
  /// a k-way merge, so memory stays at the output plus one cursor per digest.
  /// Digests whose vocabulary is not strictly sorted are left out (they stay
  /// stragglers, searched directly).
  pub fn build(digests: &[(&str, &ColdDigest)]) -> Dictionary {
    let digests: Vec<&(&str, &ColdDigest)> = digests.iter().filter(|(_, d)| strictly_sorted(d)).collect();
    let members: Vec<Member> = digests
      .iter()
      .map(|(file, d)| Member { file: file.to_string(), fingerprint: d.vocabulary_fingerprint() })
      .collect();
    let mut cursors: Vec<_> = digests.iter().map(|(_, d)| d.vocabulary.iter()).collect();
    let mut heap = BinaryHeap::with_capacity(cursors.len());
    for (member, cursor) in cursors.iter_mut().enumerate() {
      if let Some(term) = cursor.next() {
        heap.push(Reverse((term, member as u32)));
      }
    }
    let mut builder = MapBuilder::memory();
    let (mut postings, mut list) = (Vec::new(), Vec::new());
    while let Some(Reverse((term, member))) = heap.pop() {
      list.clear();
      list.push(member);
      // Equal terms pop in member order: the list comes out ascending.
      while heap.peek().is_some_and(|Reverse((next, _))| *next == term) {
        let Some(Reverse((_, other))) = heap.pop() else { break };
        list.push(other);
      }
      for &member in &list {
        if let Some(next) = cursors[member as usize].next() {
          heap.push(Reverse((next, member)));
        }
      }
      builder.insert(term, postings.len() as u64).expect("merged terms ascend");
      put_varint(&mut postings, list.len() as u64);
      let mut previous = 0;
      for &member in &list {
        put_varint(&mut postings, u64::from(member - previous));
        previous = member;
      }
    }
    let terms = Map::new(builder.into_inner().expect("in-memory FST")).expect("a built FST");
    Dictionary::assemble(members, terms, postings)
  }

  fn assemble(members: Vec<Member>, terms: Map<Vec<u8>>, postings: Vec<u8>) -> Dictionary {
    let by_file = members.iter().enumerate().map(|(at, m)| (m.file.clone(), at as u32)).collect();
    Dictionary { members, by_file, terms, postings }
  }

  pub fn len(&self) -> usize {
    self.terms.len()
  }

  pub fn is_empty(&self) -> bool {
    self.terms.is_empty()
  }

  /// The members holding the term whose posting list starts at `offset`.
  fn list(&self, offset: u64) -> impl Iterator<Item = u32> + '_ {
    let mut at = offset as usize;
    let count = take_varint(&self.postings, &mut at).unwrap_or(0);
    let mut member = 0u32;
    (0..count).map_while(move |_| {
      member += take_varint(&self.postings, &mut at)? as u32;
      Some(member)
    })
  }

  /// Members (in build order) whose vocabulary holds `term`.
  pub fn holding(&self, term: &str) -> impl Iterator<Item = u32> + '_ {
    let offset = self.terms.get(term);
    offset.into_iter().flat_map(|offset| self.list(offset))
  }

  /// `MAGIC`, xxh3-64 of the rest, then: member count, each member's file
  /// (length, bytes) and fingerprint (16 bytes LE), the postings
  /// (length, bytes), the FST.
  pub fn encode(&self) -> Vec<u8> {
    let mut body = Vec::new();
    put_varint(&mut body, self.members.len() as u64);
    for member in &self.members {
      put_varint(&mut body, member.file.len() as u64);
      body.extend_from_slice(member.file.as_bytes());
      body.extend_from_slice(&member.fingerprint.to_le_bytes());
    }
    put_varint(&mut body, self.postings.len() as u64);
    body.extend_from_slice(&self.postings);
    body.extend_from_slice(self.terms.as_fst().as_bytes());
    let mut bytes = Vec::with_capacity(HEADER_BYTES + body.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(&body).to_le_bytes());
    bytes.extend_from_slice(&body);
    bytes
  }

  /// `None` for anything but an intact dictionary file.
  pub fn decode(bytes: &[u8]) -> Option<Dictionary> {
    let (sum, body) = bytes.strip_prefix(MAGIC)?.split_at_checked(8)?;
    if sum != xxhash_rust::xxh3::xxh3_64(body).to_le_bytes() {
      return None;
    }
    let mut at = 0;
    let count = take_varint(body, &mut at)? as usize;
    let mut members = Vec::with_capacity(count.min(body.len()));
    for _ in 0..count {
      let len = take_varint(body, &mut at)? as usize;
      let file = std::str::from_utf8(body.get(at..at.checked_add(len)?)?).ok()?.to_string();
      at += len;
      let fingerprint = u128::from_le_bytes(body.get(at..at + 16)?.try_into().ok()?);
      at += 16;
      members.push(Member { file, fingerprint });
    }
    let len = take_varint(body, &mut at)? as usize;
    let postings = body.get(at..at.checked_add(len)?)?.to_vec();
    at += len;
    let terms = Map::new(body.get(at..)?.to_vec()).ok()?;
    Some(Dictionary::assemble(members, terms, postings))
  }
}

type Residents = Mutex<HashMap<(PathBuf, Branches), Arc<Dictionary>>>;

/// The resident dictionary per (index dir, branch mode), shared by calls.
fn resident() -> &'static Residents {
  static RESIDENT: OnceLock<Residents> = OnceLock::new();
  RESIDENT.get_or_init(Default::default)
}

/// A dictionary matched to one query's cold candidates.
pub struct Served {
  dictionary: Arc<Dictionary>,
  /// The candidate slot each member stands for, [`NONE`] if it stands for none.
  slot_of: Vec<u32>,
  /// Candidate slots the dictionary does not vouch for: search their digests.
  pub stragglers: Vec<usize>,
}

impl Served {
  fn new(dictionary: Arc<Dictionary>, candidates: &[Candidate<'_>]) -> Served {
    let mut slot_of = vec![NONE; dictionary.members.len()];
    let mut stragglers = Vec::new();
    for &(slot, file, digest) in candidates {
      let member = dictionary.by_file.get(file).copied();
      match member.filter(|&m| dictionary.members[m as usize].fingerprint == digest.vocabulary_fingerprint()) {
        Some(member) if slot_of[member as usize] == NONE => slot_of[member as usize] = slot as u32,
        _ => stragglers.push(slot),
      }
    }
    Served { dictionary, slot_of, stragglers }
  }

  /// Candidate slots whose digest holds `term`: the vouched members' postings,
  /// then the stragglers for which `scan` says so. Unordered.
  pub fn holding(&self, term: &str, scan: impl Fn(usize) -> bool) -> Vec<usize> {
    let vouched = self.dictionary.holding(term).map(|m| self.slot_of[m as usize]).filter(|&s| s != NONE);
    let mut slots: Vec<usize> = vouched.map(|s| s as usize).collect();
    slots.extend(self.stragglers.iter().copied().filter(|&s| scan(s)));
    slots
  }
}

/// Stragglers past this share of the candidates trigger a rebuild: a few
/// cost a Bloom probe each, many mean the dictionary is out of date.
fn too_many_stragglers(stragglers: usize, candidates: usize) -> bool {
  stragglers > 64.max(candidates / 16)
}

fn load(dir: &Path, branches: Branches, limit: u64) -> Option<Dictionary> {
  let bytes = record::read(&dir.join(file_name(branches)), limit).ok()?;
  Dictionary::decode(&bytes)
}

/// The dictionary for `candidates` (the cold digests a query may search),
/// from memory, from disk, or built now (and persisted, best effort) when
/// the one at hand vouches for too few of them. `None` below [`MIN_COLD`]
/// and above [`MAX_COLD`].
/// `max_record_bytes` bounds each candidate's share of the file read.
pub fn serve(dir: &Path, branches: Branches, candidates: &[Candidate<'_>], max_record_bytes: u64) -> Option<Served> {
  if !(MIN_COLD..=MAX_COLD).contains(&candidates.len()) {
    return None;
  }
  let key = (dir.to_path_buf(), branches);
  let known = resident().lock().get(&key).cloned();
  let limit = max_record_bytes.saturating_mul(candidates.len() as u64);
  let known = known.or_else(|| load(dir, branches, limit).map(Arc::new));
  if let Some(dictionary) = known {
    let served = Served::new(dictionary.clone(), candidates);
    if !too_many_stragglers(served.stragglers.len(), candidates.len()) {
      resident().lock().insert(key, dictionary);
      return Some(served);
    }
  }
  let digests: Vec<(&str, &ColdDigest)> = candidates.iter().map(|&(_, file, digest)| (file, digest)).collect();
  let dictionary = Arc::new(Dictionary::build(&digests));
  // A failed write only costs a later process the rebuild.
  if dir.join(super::ownership::MARKER).exists() {
    let _ = record::write_atomic(&dir.join(file_name(branches)), &dictionary.encode());
  }
  resident().lock().insert(key, dictionary.clone());
  Some(Served::new(dictionary, candidates))
}

/// Forgets the resident dictionaries (tests: a fresh process).
#[cfg(test)]
pub fn forget() {
  resident().lock().clear();
}

#[cfg(test)]
mod tests;

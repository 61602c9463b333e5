//! Hot shards: bounded entry text and metadata plus a posting index, so a
//! query scores entries without re-tokenizing stored text.

use super::cold::Lazy;
use super::compression;
use super::first_use::FirstUse;
use super::postings::{AsBytes, Packed, Postings};
use crate::coverage::IndexCoverage;
use crate::coverage::Reason;
use crate::session::entry::Provenance;
use crate::session::entry::{Entry, Normalized, Typed};
use crate::session::lineage::Node;
use crate::session::parse::Header;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::Arc;

/// What an append needs to resume without re-parsing the prefix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeState {
  /// Newline-terminated prefix length and its SHA-256.
  pub complete_len: u64,
  pub prefix_hash: String,
  pub last_line_no: u64,
  pub header: Header,
  /// Lineage nodes of every record (ids only, no text).
  pub nodes: Vec<Node>,
  /// Ordinals of the records the entries came from.
  pub selected: Vec<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HotShard {
  /// Entries with bounded text (structured payloads are not kept).
  entries: Entries,
  pub index_coverage: IndexCoverage,
  pub postings: Postings,
  pub resume: Option<ResumeState>,
  /// Per entry, its provenance and whether it is an echo (one byte, see
  /// [`fact`]): what ranking asks of every entry, without its text.
  facts: Vec<u8>,
  /// The selected records' root-to-leaf ids, worked out on the first hit
  /// that binds to them.
  #[serde(skip)]
  chain: Lazy<Option<Vec<String>>>,
  /// The entries' typed kinds, worked out on the first filtered query.
  #[serde(skip)]
  kinds: Lazy<EntryKinds>,
  /// Each term's session frequency class, echoes kept and skipped, worked
  /// out for every term on the first lexical query that asks: a common
  /// word's class summed its whole posting list on every query.
  #[serde(skip)]
  classes: [Lazy<Vec<u8>>; 2],
}

/// A fact byte's echo bit; the bits below it are the provenance's place in
/// [`Provenance::ALL`].
const ECHO: u8 = 0x80;

/// The fact byte of an entry of `provenance`, an echo or not. Echoes are
/// derived from the entries (`session::echo`), so an append that answers a
/// prompt's turn changes them: every shard built or extended works them
/// out again.
fn fact(provenance: Provenance, echo: bool) -> u8 {
  let at = Provenance::ALL.iter().position(|p| *p == provenance).expect("every provenance is listed");
  at as u8 | if echo { ECHO } else { 0 }
}

/// A shard's entries: decoded, or packed as read and decoded on the first
/// call that needs their text or fields. A fresh process's first recall of
/// a rare word ranks every hot shard (lengths and facts) and reads entries
/// of the few that hold it; decoding every shard's entries was a fifth of
/// a `medium` first recall. Packed, they are one zstd frame of their
/// postcard bytes: half of a hot body, a third of that compressed
/// (`medium`: 4.3 → 1.6 MB), decompressed only where a query reads them
/// (compressing the whole body, postings too, took a fresh process's
/// first recall 29 → 33 ms).
#[derive(Debug, Clone)]
struct Entries {
  count: usize,
  /// The entries' compressed bytes as read (empty when built in this process).
  packed: Arc<[u8]>,
  decoded: FirstUse<Vec<Entry>>,
}

impl Default for Entries {
  fn default() -> Entries {
    Entries::of(Vec::new())
  }
}

impl Entries {
  fn of(entries: Vec<Entry>) -> Entries {
    Entries { count: entries.len(), packed: Arc::from([]), decoded: FirstUse::of(entries) }
  }

  fn get(&self) -> &[Entry] {
    let decode = || {
      // The declared size was checked against the record's limit when read ([`HotShard::fits`]).
      let plain = compression::decompress(&self.packed, &compression::Alone, u64::MAX).ok()?;
      postcard::from_bytes::<Vec<Entry>>(&plain).ok().filter(|e| e.len() == self.count)
    };
    // Entries that do not decode: empty ones, so the postings stay in range.
    self.decoded.get(decode, || (0..self.count).map(|index| Entry { index, ..Entry::default() }).collect())
  }
}

impl PartialEq for Entries {
  fn eq(&self, other: &Self) -> bool {
    self.get() == other.get()
  }
}

impl Serialize for Entries {
  fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    if serializer.is_human_readable() {
      return self.get().serialize(serializer);
    }
    let packed = match self.decoded.decoded() {
      Some(entries) if self.packed.is_empty() => {
        let plain = postcard::to_allocvec(entries).map_err(serde::ser::Error::custom)?;
        std::borrow::Cow::Owned(compression::compress(&plain, None))
      }
      // Entries still packed as read (or damaged) are written as they are.
      _ => std::borrow::Cow::Borrowed(&self.packed[..]),
    };
    (self.count, AsBytes(&packed)).serialize(serializer)
  }
}

impl<'de> Deserialize<'de> for Entries {
  fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
    if deserializer.is_human_readable() {
      return Ok(Entries::of(Vec::deserialize(deserializer)?));
    }
    let (count, packed): (usize, Packed<'de>) = Deserialize::deserialize(deserializer)?;
    Ok(Entries { count, packed: Arc::from(&packed.0[..]), decoded: FirstUse::pending() })
  }
}

/// The distinct typed fields but the timestamp of a shard's entries, and
/// which of them each entry has: a structural filter is tested once per
/// combination (a few dozen) instead of once per entry (string compares
/// of every entry's fields, a fifth of a warm `ref` recall).
#[derive(Debug, Default)]
pub struct EntryKinds {
  pub distinct: Vec<Typed>,
  /// Per entry, its position in `distinct`.
  pub of: Vec<u32>,
}

impl EntryKinds {
  pub fn of(entries: &[Entry]) -> EntryKinds {
    let mut positions: FxHashMap<Typed, u32> = Default::default();
    let mut distinct = Vec::new();
    let of = entries
      .iter()
      .map(|entry| {
        let kind = Typed { timestamp: None, ..entry.typed.clone() };
        *positions.entry(kind).or_insert_with_key(|kind| {
          distinct.push(kind.clone());
          distinct.len() as u32 - 1
        })
      })
      .collect();
    EntryKinds { distinct, of }
  }
}

impl HotShard {
  pub fn build(normalized: Normalized, resume: Option<ResumeState>) -> HotShard {
    let postings = Postings::build(normalized.whole_texts(0));
    HotShard::of(normalized, postings, resume)
  }

  /// The shard of `normalized`'s entries with their `postings` and facts.
  fn of(normalized: Normalized, postings: Postings, resume: Option<ResumeState>) -> HotShard {
    let index_coverage = IndexCoverage::from_reasons(&normalized.reasons, None);
    let entries = normalized.entries;
    let echoes = crate::session::echo::echoes(&entries);
    let facts = entries.iter().zip(echoes).map(|(entry, echo)| fact(Provenance::of(entry), echo)).collect();
    let (chain, kinds, classes) = Default::default();
    HotShard { entries: Entries::of(entries), index_coverage, postings, resume, facts, chain, kinds, classes }
  }

  /// The entries, decoded on first use.
  pub fn entries(&self) -> &[Entry] {
    self.entries.get()
  }

  pub fn entry_count(&self) -> usize {
    self.entries.count
  }

  /// Were the entries or the posting lists read from disk found
  /// undecodable when first used? Then the record answers no more and is
  /// rebuilt, as a cold digest whose content is unreadable is.
  pub fn damaged(&self) -> bool {
    self.entries.decoded.damaged() || self.postings.damaged()
  }

  /// Its entries and lists decoded, none damaged: what an append extends.
  pub fn intact(&self) -> bool {
    self.entries();
    !self.entries.decoded.damaged() && self.postings.intact()
  }

  /// Does a shard read from disk hold one fact and one length per entry,
  /// each fact a known one? Checked when a record is decoded, so ranking
  /// never indexes past them.
  pub fn is_consistent(&self) -> bool {
    let count = self.entries.count;
    self.facts.len() == count
      && self.postings.doc_lengths.len() == count
      && self.facts.iter().all(|f| usize::from(f & !ECHO) < Provenance::ALL.len())
  }

  /// Is a shard read from disk consistent, its packed entries and posting
  /// lists each declaring at most `limit` bytes decompressed (checked
  /// before any is allocated)?
  pub fn fits(&self, limit: u64) -> bool {
    let within = |declared: Option<u64>| declared.is_some_and(|size| size <= limit);
    let entries = compression::declared_size(&self.entries.packed);
    self.is_consistent() && within(entries) && within(self.postings.declared_lists_len())
  }

  /// The provenance of entry `doc`.
  pub fn provenance(&self, doc: usize) -> Provenance {
    Provenance::ALL[usize::from(self.facts[doc] & !ECHO)]
  }

  /// The session's frequency class of the stored term at `at` of the
  /// postings ([`Postings::position`]), as a cold digest of the same entries
  /// keeps it: every occurrence adds its entry's field units; echoes count
  /// only when `echoes` keeps them.
  pub fn frequency_at(&self, at: usize, echoes: crate::index::record::cold::Echoes) -> u8 {
    let terms = self.postings.term_count();
    let mode = usize::from(echoes == crate::index::record::cold::Echoes::Kept);
    self.classes[mode].get_or_init(|| (0..terms).map(|at| self.class_of(at, echoes)).collect())[at]
  }

  /// [`HotShard::frequency_at`], worked out.
  fn class_of(&self, at: usize, echoes: crate::index::record::cold::Echoes) -> u8 {
    let counted = self.postings.list(at).iter().filter(|(doc, _)| self.is_evidence(*doc as usize, echoes));
    let tenths: u64 = counted.map(|&(doc, tf)| u64::from(tf) * self.provenance(doc as usize).field_units()).sum();
    if tenths == 0 {
      0
    } else {
      crate::query::score::frequency_class(tenths)
    }
  }

  /// The session's length for ranking, as a cold digest of the same entries
  /// keeps it (`ColdDigest::length`).
  pub fn length(&self, echoes: crate::index::record::cold::Echoes) -> u64 {
    let docs = 0..self.postings.doc_lengths.len();
    let counted = docs.filter(|&doc| self.is_evidence(doc, echoes));
    counted.map(|doc| u64::from(self.postings.doc_lengths[doc]) * self.provenance(doc).field_units()).sum()
  }

  /// May entry `doc`'s text match a query and count in the session's
  /// statistics? Not an echo of this package's own recall traffic
  /// (`session::echo`), unless `echoes` keeps them.
  pub fn is_evidence(&self, doc: usize, echoes: crate::index::record::cold::Echoes) -> bool {
    echoes == crate::index::record::cold::Echoes::Kept || self.facts[doc] & ECHO == 0
  }

  /// The entries' typed kinds (see [`EntryKinds`]).
  pub fn kinds(&self) -> &EntryKinds {
    self.kinds.get_or_init(|| EntryKinds::of(self.entries()))
  }

  /// The root-to-leaf ids of the selected records, when they are one
  /// parent chain (see `lineage::chain`); `None` without a resume state.
  pub fn chain(&self) -> Option<&[String]> {
    let resume = self.resume.as_ref()?;
    self.chain.get_or_init(|| crate::session::lineage::chain(&resume.nodes, &resume.selected)).as_deref()
  }

  /// This shard grown by the entries `normalized` has beyond it (an append):
  /// only the new entries are tokenized.
  pub fn extended(&self, normalized: Normalized, resume: ResumeState) -> HotShard {
    let postings = self.postings.extended(normalized.whole_texts(self.entry_count()));
    HotShard::of(normalized, postings, Some(resume))
  }

  /// The shard's entries and reasons, to continue normalization after an append.
  pub fn normalized(&self) -> Normalized {
    let reasons: BTreeSet<Reason> = self.index_coverage.reasons.iter().copied().collect();
    Normalized { entries: self.entries().to_vec(), uncut: Vec::new(), reasons }
  }
}

#[cfg(test)]
impl HotShard {
  /// The entries' postcard bytes, decompressed (tests search them).
  pub fn readable_entries(&self) -> Vec<u8> {
    postcard::to_allocvec(self.entries()).unwrap()
  }

  /// This shard as read from a record whose entries' bytes no longer decode.
  pub fn with_undecodable_entries(&self) -> HotShard {
    let mut read: HotShard = postcard::from_bytes(&postcard::to_allocvec(self).unwrap()).unwrap();
    read.entries.packed = Arc::from(compression::compress(b"\x05garbage", None));
    read
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn entry(index: usize, role: &str) -> Entry {
    let mut entry = Entry { index, text: format!("text {index} of {role}"), ..Entry::default() };
    entry.typed.role = Some(role.into());
    entry
  }

  fn normalized(entries: Vec<Entry>) -> Normalized {
    Normalized { entries, uncut: Vec::new(), reasons: BTreeSet::new() }
  }

  /// A turn that only recalled (an echo prompt and its call), then a real one.
  fn with_echoes() -> HotShard {
    let mut call = entry(1, "assistant");
    call.typed.tool = Some("memory_recall".into());
    HotShard::build(normalized(vec![entry(0, "user"), call, entry(2, "user"), entry(3, "assistant")]), None)
  }

  #[test]
  fn a_shard_read_back_ranks_without_decoding_its_entries() {
    use crate::index::record::cold::Echoes;
    let built = with_echoes();
    assert_eq!(
      (0..4).map(|doc| built.is_evidence(doc, Echoes::Skipped)).collect::<Vec<_>>(),
      [false, false, true, true]
    );
    let bytes = postcard::to_allocvec(&built).unwrap();
    let read: HotShard = postcard::from_bytes(&bytes).unwrap();
    assert!(read.is_consistent());
    for echoes in [Echoes::Skipped, Echoes::Kept] {
      assert_eq!(read.length(echoes), built.length(echoes));
      for doc in 0..4 {
        assert_eq!(
          (read.provenance(doc), read.is_evidence(doc, echoes)),
          (built.provenance(doc), built.is_evidence(doc, echoes))
        );
      }
    }
    assert_eq!(read.entry_count(), 4);
    assert!(read.entries.decoded.decoded().is_none(), "ranking decoded no entry");
    // Written again while still packed: the same bytes.
    assert_eq!(postcard::to_allocvec(&read).unwrap(), bytes);
    assert!(read.entries.decoded.decoded().is_none());
    assert_eq!(read.entries(), built.entries());
    assert!(!read.damaged());
    assert_eq!(postcard::to_allocvec(&read).unwrap(), bytes, "decoded, still written as read");
    assert_eq!(serde_json::to_value(&read).unwrap(), serde_json::to_value(&built).unwrap());
  }

  #[test]
  fn undecodable_entries_leave_the_shard_in_range_and_damaged() {
    let read = with_echoes().with_undecodable_entries();
    assert!(!read.damaged(), "found out only when decoded");
    assert_eq!(read.entries().len(), 4, "one (empty) entry per posting document");
    assert!(read.entries().iter().enumerate().all(|(at, e)| e.index == at && e.text.is_empty()));
    assert!(read.damaged());
    assert!(!read.intact(), "no prefix for an append to extend");
    assert!(with_echoes().intact());
  }

  #[test]
  fn inconsistent_facts_are_refused() {
    let built = with_echoes();
    let mut short = built.clone();
    short.facts.pop();
    let mut unknown = built.clone();
    unknown.facts[0] = Provenance::ALL.len() as u8;
    for shard in [short, unknown] {
      let read: HotShard = postcard::from_bytes(&postcard::to_allocvec(&shard).unwrap()).unwrap();
      assert!(!read.is_consistent());
    }
    assert!(built.is_consistent());
  }

  #[test]
  fn an_extended_shard_knows_its_new_entries_provenance() {
    let shard = HotShard::build(normalized(vec![entry(0, "user")]), None);
    assert_eq!(shard.provenance(0), Provenance::UserProse);
    let grown = normalized(vec![entry(0, "user"), entry(1, "assistant")]);
    let header = Header { id: "s".into(), cwd: "/".into(), timestamp: None, version: 3, parent_session: None };
    let resume = ResumeState {
      complete_len: 0,
      prefix_hash: String::new(),
      last_line_no: 0,
      header,
      nodes: Vec::new(),
      selected: Vec::new(),
    };
    let extended = shard.extended(grown, resume);
    assert_eq!((extended.provenance(0), extended.provenance(1)), (Provenance::UserProse, Provenance::AssistantProse));
  }
}

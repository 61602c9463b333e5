//! Hot shards: bounded entry text and metadata plus a posting index, so a
//! query scores entries without re-tokenizing stored text.

use super::cold::Lazy;
use super::postings::Postings;
use crate::coverage::IndexCoverage;
use crate::coverage::Reason;
use crate::session::entry::Provenance;
use crate::session::entry::{Entry, Normalized, Typed};
use crate::session::lineage::Node;
use crate::session::parse::Header;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

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
  pub entries: Vec<Entry>,
  pub index_coverage: IndexCoverage,
  pub postings: Postings,
  pub resume: Option<ResumeState>,
  /// Each entry's provenance, worked out on the first query that ranks one.
  #[serde(skip)]
  provenance: Lazy<Vec<Provenance>>,
  /// The selected records' root-to-leaf ids, worked out on the first hit
  /// that binds to them.
  #[serde(skip)]
  chain: Lazy<Option<Vec<String>>>,
  /// The entries' typed kinds, worked out on the first filtered query.
  #[serde(skip)]
  kinds: Lazy<EntryKinds>,
  /// Which entries are echoes (`session::echo`), worked out on the first
  /// lexical query: derived from the entries, so an append that answers a
  /// prompt's turn changes it without re-indexing the prompt.
  #[serde(skip)]
  echoes: Lazy<Vec<bool>>,
  /// Each term's session frequency class, echoes kept and skipped, worked
  /// out for every term on the first lexical query that asks: a common
  /// word's class summed its whole posting list on every query.
  #[serde(skip)]
  classes: [Lazy<Vec<u8>>; 2],
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

  /// The shard of `normalized`'s entries with their `postings`, nothing
  /// derived yet.
  fn of(normalized: Normalized, postings: Postings, resume: Option<ResumeState>) -> HotShard {
    let index_coverage = IndexCoverage::from_reasons(&normalized.reasons, None);
    let (provenance, chain, kinds, echoes, classes) = Default::default();
    let entries = normalized.entries;
    HotShard { entries, index_coverage, postings, resume, provenance, chain, kinds, echoes, classes }
  }

  /// The provenance of entry `doc`.
  pub fn provenance(&self, doc: usize) -> Provenance {
    self.provenance.get_or_init(|| self.entries.iter().map(Provenance::of).collect())[doc]
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
    echoes == crate::index::record::cold::Echoes::Kept
      || !self.echoes.get_or_init(|| crate::session::echo::echoes(&self.entries))[doc]
  }

  /// The entries' typed kinds (see [`EntryKinds`]).
  pub fn kinds(&self) -> &EntryKinds {
    self.kinds.get_or_init(|| EntryKinds::of(&self.entries))
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
    let postings = self.postings.extended(normalized.whole_texts(self.entries.len()));
    HotShard::of(normalized, postings, Some(resume))
  }

  /// The shard's entries and reasons, to continue normalization after an append.
  pub fn normalized(&self) -> Normalized {
    let reasons: BTreeSet<Reason> = self.index_coverage.reasons.iter().copied().collect();
    Normalized { entries: self.entries.clone(), uncut: Vec::new(), reasons }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn an_extended_shard_knows_its_new_entries_provenance() {
    let entry = |index: usize, role: &str| {
      let mut entry = Entry { index, text: format!("text {index}"), ..Entry::default() };
      entry.typed.role = Some(role.into());
      entry
    };
    let normalized = |entries: Vec<Entry>| Normalized { entries, uncut: Vec::new(), reasons: BTreeSet::new() };
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

//! Hot shards: bounded entry text and metadata plus a posting index, so a
//! query scores entries without re-tokenizing stored text.

use super::cold::Lazy;
use super::vocabulary::Vocabulary;
use crate::coverage::IndexCoverage;
use crate::coverage::Reason;
use crate::session::entry::Provenance;
use crate::session::entry::{Entry, Normalized, Typed};
use crate::session::lineage::Node;
use crate::session::parse::Header;
use crate::tokenize::for_each_stored_term;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Term → (entry, term frequency) lists, sorted by term; document lengths
/// in tokens (at least 1, so BM25 never divides by zero). Stored flat (the
/// terms as one string, the lists one after another) so a fresh process
/// decodes a shard's postings in a few allocations, not two per term.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Postings {
  terms: Vocabulary,
  /// Where each term's list starts in `pairs`, and one past the last.
  list_starts: Vec<u32>,
  pairs: Vec<(u32, u32)>,
  pub doc_lengths: Vec<u32>,
}

impl Postings {
  /// From sorted unique terms and their lists.
  fn from_lists(terms: &[String], lists: impl Iterator<Item = Vec<(u32, u32)>>, doc_lengths: Vec<u32>) -> Postings {
    let mut list_starts = Vec::with_capacity(terms.len() + 1);
    let mut pairs = Vec::new();
    for list in lists {
      list_starts.push(pairs.len() as u32);
      pairs.extend(list);
    }
    list_starts.push(pairs.len() as u32);
    Postings { terms: Vocabulary::from_sorted(terms), list_starts, pairs, doc_lengths }
  }

  fn list(&self, at: usize) -> &[(u32, u32)] {
    &self.pairs[self.list_starts[at] as usize..self.list_starts[at + 1] as usize]
  }

  pub fn build<'a>(texts: impl Iterator<Item = &'a str>) -> Postings {
    // Terms are interned once per shard; a document only counts term ids.
    let mut ids: FxHashMap<String, u32> = FxHashMap::default();
    let mut lists: Vec<Vec<(u32, u32)>> = Vec::new();
    let mut doc_lengths = Vec::new();
    let mut seen: Vec<u32> = Vec::new();
    for (doc, text) in texts.enumerate() {
      seen.clear();
      let mut length = 0u32;
      for_each_stored_term(text, |term, kind| {
        let id = match ids.get(term) {
          Some(id) => *id,
          None => {
            let id = lists.len() as u32;
            ids.insert(term.to_string(), id);
            lists.push(Vec::new());
            id
          }
        };
        seen.push(id);
        length += u32::from(kind.counts_length());
      });
      doc_lengths.push(length.max(1));
      seen.sort_unstable();
      for run in seen.chunk_by(|a, b| a == b) {
        lists[run[0] as usize].push((doc as u32, run.len() as u32));
      }
    }
    let mut terms: Vec<(String, u32)> = ids.into_iter().collect();
    terms.sort_unstable();
    let ordered = terms.iter().map(|(_, id)| std::mem::take(&mut lists[*id as usize]));
    let ordered: Vec<Vec<(u32, u32)>> = ordered.collect();
    let terms: Vec<String> = terms.into_iter().map(|(term, _)| term).collect();
    Postings::from_lists(&terms, ordered.into_iter(), doc_lengths)
  }

  /// These postings with documents added after the existing ones: only the
  /// new documents are tokenized, and the lists are merged in one pass over
  /// both sorted term lists (an appended document's id is above every
  /// existing one, so each merged list is the old list, then the new).
  pub fn extended<'a>(&self, texts: impl Iterator<Item = &'a str>) -> Postings {
    let base = self.doc_lengths.len() as u32;
    let added = Postings::build(texts);
    let mut text = String::with_capacity(self.terms.text().len() + added.terms.text().len() + 1);
    let mut list_starts = Vec::with_capacity(self.list_starts.len() + added.list_starts.len());
    let mut pairs = Vec::with_capacity(self.pairs.len() + added.pairs.len());
    let (mut old, mut new) = (self.terms.iter().enumerate().peekable(), added.terms.iter().enumerate().peekable());
    loop {
      let (term, from_old, from_new) = match (old.peek(), new.peek()) {
        (None, None) => break,
        (Some(&(at, term)), None) => (term, Some(at), None),
        (None, Some(&(at, term))) => (term, None, Some(at)),
        (Some(&(o, a)), Some(&(n, b))) => match a.cmp(b) {
          std::cmp::Ordering::Less => (a, Some(o), None),
          std::cmp::Ordering::Greater => (b, None, Some(n)),
          std::cmp::Ordering::Equal => (a, Some(o), Some(n)),
        },
      };
      if !list_starts.is_empty() {
        text.push('\n');
      }
      text.push_str(term);
      list_starts.push(pairs.len() as u32);
      if let Some(at) = from_old {
        pairs.extend_from_slice(self.list(at));
        old.next();
      }
      if let Some(at) = from_new {
        pairs.extend(added.list(at).iter().map(|&(doc, tf)| (doc + base, tf)));
        new.next();
      }
    }
    list_starts.push(pairs.len() as u32);
    let mut doc_lengths = Vec::with_capacity(self.doc_lengths.len() + added.doc_lengths.len());
    doc_lengths.extend_from_slice(&self.doc_lengths);
    doc_lengths.extend_from_slice(&added.doc_lengths);
    Postings { terms: Vocabulary::from_joined(text), list_starts, pairs, doc_lengths }
  }

  /// The posting list of a canonical term.
  pub fn get(&self, term: &str) -> &[(u32, u32)] {
    self.list_at(self.position(term))
  }

  /// Where a canonical term is in the vocabulary: a query word's position
  /// is looked up once for its session frequency and its postings.
  pub fn position(&self, term: &str) -> Option<usize> {
    self.terms.binary_search(term).ok()
  }

  /// The posting list of the term at `at` ([`Postings::position`]).
  pub fn list_at(&self, at: Option<usize>) -> &[(u32, u32)] {
    at.map_or(&[], |at| self.list(at))
  }
}

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
    let terms = self.postings.list_starts.len().saturating_sub(1);
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
  fn postings_count_terms_per_entry() {
    let postings = Postings::build(["Timeout in CI", "ci ci timeout", ""].into_iter());
    assert_eq!(postings.get("ci"), &[(0, 1), (1, 2)]);
    assert_eq!(postings.get("timeout"), &[(0, 1), (1, 1)]);
    assert_eq!(postings.get("missing"), &[] as &[(u32, u32)]);
    assert_eq!(postings.doc_lengths, [3, 3, 1]);
    assert!(postings.terms.to_vec().windows(2).all(|w| w[0] < w[1]));
  }

  #[test]
  fn extending_equals_building_at_once() {
    let texts = ["alpha beta", "beta gamma", "gamma gamma delta", "alpha"];
    let extended = Postings::build(texts[..2].iter().copied()).extended(texts[2..].iter().copied());
    assert_eq!(extended, Postings::build(texts.iter().copied()));
  }

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

  proptest::proptest! {
    #![proptest_config(crate::testing::proptest_config(256))]

    /// Terms drawn from a small alphabet, so appended documents both repeat
    /// existing terms and bring new ones on either side of them.
    #[test]
    fn extending_at_any_cut_equals_building_at_once(
      texts in proptest::collection::vec("([a-e]{1,2}|[xyz]) ?([a-e]{1,2} ?){0,4}", 0..12),
      cut in 0..12usize,
    ) {
      let cut = cut.min(texts.len());
      let built = Postings::build(texts.iter().map(String::as_str));
      let head = Postings::build(texts[..cut].iter().map(String::as_str));
      let extended = head.extended(texts[cut..].iter().map(String::as_str));
      proptest::prop_assert_eq!(extended.terms.to_vec(), built.terms.to_vec());
      proptest::prop_assert_eq!(extended, built);
    }
  }
}

//! Candidates and scoring: the filter-passing entries and cold digests
//! within the candidate budgets, scored by BM25, phrase, bounded regex or
//! browse into one stream of items.

use super::docs::{self, Docs};
use super::searched::{Searched, Sessions};
pub use super::RecallRequest;
use crate::coverage::Reason;
use crate::engine::Engine;
use crate::error::ContractError;
use crate::index::cold::{ColdContent, Echoes};
use crate::index::dictionary;
use crate::query::plan::Query;
use crate::query::regex::BoundedRegex;
use crate::query::score::{bm25, idf, session_frequency, PART_WEIGHT};
use crate::session::entry::Entry;
use crate::session::lineage::LiveBranch;
use crate::tokenize::{as_part, nfkc, part_term};
use rustc_hash::FxHashMap;
use std::collections::BTreeSet;
use std::sync::Arc;

const MAX_ENTRY_CANDIDATES: usize = 50_000;
pub const MAX_DIGEST_CANDIDATES: usize = 10_000;
const MAX_ITEM_CANDIDATES: usize = 10_000;

/// The index of the last user message on Pi's live branch: where the turn
/// that is asking begins.
fn turn_start(entries: &[Entry], live: &LiveBranch) -> Option<usize> {
  let on_branch = |id: &str| live.ids.iter().rev().any(|live_id| live_id == id);
  entries.iter().rposition(|e| e.typed.role.as_deref() == Some("user") && e.entry_id.as_deref().is_some_and(on_branch))
}

/// `session`'s cold content (see [`Searched::cold_content`]); `None` and
/// `unreadable` set when it cannot be read.
fn cold_content<'s>(
  session: Searched<'s>,
  engine: &Engine,
  branches: crate::session::lineage::Branches,
  unreadable: &std::cell::Cell<bool>,
) -> Option<&'s ColdContent> {
  let content = session.cold_content(engine, branches)?;
  unreadable.set(unreadable.get() || content.is_err());
  content.ok()
}

/// One ranked candidate.
#[derive(Debug, Clone)]
pub(super) enum Item {
  Entry { session: usize, doc: usize, score: f64 },
  Session { session: usize, score: f64, matched: Matched, structural: usize },
}

/// The terms a cold session matched.
#[derive(Debug, Clone)]
pub(super) enum Matched {
  /// Query terms: a run of [`Search::cold_hits`], whose term positions are
  /// turned into terms only for the page's hits.
  Query(std::ops::Range<usize>),
  /// Vocabulary terms a regex matched.
  Vocabulary(Vec<String>),
}

/// A hot entry's (slot, doc), its score so far and how many terms it matched.
type Scored = ((usize, usize), (f64, usize));

/// `sums` plus one term's contributions, both ascending by (slot, doc): a
/// merge, so scores add up in term order without hashing every posting.
fn accumulate(sums: Vec<Scored>, term: impl Iterator<Item = ((usize, usize), f64)>) -> Vec<Scored> {
  let mut out = Vec::with_capacity(sums.len());
  let mut sums = sums.into_iter().peekable();
  for (key, score) in term {
    while let Some(before) = sums.next_if(|(at, _)| *at < key) {
      out.push(before);
    }
    match sums.next_if(|(at, _)| *at == key) {
      Some((_, (sum, matched))) => out.push((key, (sum + score, matched + 1))),
      // From 0.0, as a fresh sum started.
      None => out.push((key, (0.0 + score, 1))),
    }
  }
  out.extend(sums);
  out
}

/// Two ascending (doc, tf) lists as one, the tf of a doc in both summed.
fn merge_by_doc(
  a: impl Iterator<Item = (usize, f64)>,
  b: impl Iterator<Item = (usize, f64)>,
) -> impl Iterator<Item = (usize, f64)> {
  let (mut a, mut b) = (a.peekable(), b.peekable());
  std::iter::from_fn(move || match (a.peek().copied(), b.peek().copied()) {
    (Some((x, tx)), Some((y, ty))) if x == y => {
      a.next();
      b.next();
      Some((x, tx + ty))
    }
    (Some((x, _)), Some((y, _))) if y < x => b.next(),
    (Some(_), _) => a.next(),
    (None, _) => b.next(),
  })
}

/// The cold candidates: the sessions passing the filters, in slot order.
#[derive(Default)]
struct Cold {
  slots: Arc<Vec<usize>>,
  /// Each candidate's matching address count; `None` without filters (none
  /// asked for: every count is 0).
  structural: Option<Vec<usize>>,
  /// How many of them (from the first) the digest budget admits; all of
  /// them when the cold term dictionary serves the query.
  within: usize,
}

impl Cold {
  /// Every cold session of the synchronization, no filter asked.
  fn every(slots: Arc<Vec<usize>>) -> Cold {
    Cold { within: slots.len().min(MAX_DIGEST_CANDIDATES), slots, structural: None }
  }

  fn is_every(&self) -> bool {
    self.structural.is_none()
  }

  fn structural(&self, at: usize) -> usize {
    self.structural.as_ref().map_or(0, |counts| counts[at])
  }

  /// The admitted candidates and their matching address counts.
  fn admitted(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
    (0..self.within).map(|at| (self.slots[at], self.structural(at)))
  }

  fn structural_of(&self, slot: usize) -> usize {
    match &self.structural {
      None => 0,
      Some(counts) => counts[self.slots.binary_search(&slot).expect("a cold candidate")],
    }
  }
}

/// Every slot of `holding` (per term, unordered) as `slot << 32 | term
/// position`, ascending: by session, the candidates' own order, then in
/// query order. A bitset of the `slots` per term, walked word by word,
/// orders them without sorting.
fn by_session(holding: &[Vec<usize>], slots: usize) -> Vec<u64> {
  let words = slots.div_ceil(64);
  let sets: Vec<Vec<u64>> = holding
    .iter()
    .map(|hits| {
      let mut set = vec![0u64; words];
      hits.iter().for_each(|&slot| set[slot / 64] |= 1 << (slot % 64));
      set
    })
    .collect();
  let mut hits = Vec::with_capacity(holding.iter().map(Vec::len).sum());
  for word in 0..words {
    let mut any = sets.iter().fold(0, |any, set| any | set[word]);
    while any != 0 {
      let bit = any.trailing_zeros();
      any &= any - 1;
      let slot = (word as u64) << 6 | u64::from(bit);
      let holds = sets.iter().enumerate().filter(|(_, set)| set[word] >> bit & 1 == 1);
      hits.extend(holds.map(|(at, _)| slot << 32 | at as u64));
    }
  }
  hits
}

/// Query state shared by the scoring passes.
pub(super) struct Search<'r> {
  pub(super) request: &'r RecallRequest,
  pub(super) engine: &'r Engine,
  config: &'r crate::config::Config,
  pub(super) live: Option<&'r crate::engine::Live>,
  pub(super) sessions: Sessions,
  /// The hot sessions' slots (ascending) and candidate entries.
  hot: Vec<(usize, Docs)>,
  cold: Cold,
  cold_terms: Option<Arc<dictionary::Served>>,
  /// Every cold hit of a lexical query as `slot << 32 | term position`,
  /// ascending: by session, then in query order.
  pub(super) cold_hits: Vec<u64>,
  index_dir: std::path::PathBuf,
  /// A cold record's content could not be read back when it was needed.
  unreadable: std::cell::Cell<bool>,
  pub(super) reasons: BTreeSet<Reason>,
}

impl<'r> Search<'r> {
  pub(super) fn new(request: &'r RecallRequest, engine: &'r Engine, sessions: Sessions) -> Search<'r> {
    let mut search = Search {
      request,
      engine,
      config: &engine.config,
      live: engine.live.as_ref(),
      hot: Vec::new(),
      cold: Cold::default(),
      cold_terms: None,
      cold_hits: Vec::new(),
      index_dir: engine.index_dir(),
      unreadable: Default::default(),
      sessions,
      reasons: BTreeSet::new(),
    };
    search.collect_candidates();
    search
  }

  /// Where the entries of a hot session recall may see end: the live
  /// session stops before the turn in progress, which is not evidence
  /// about the past.
  fn visible_end(&self, session: Searched<'_>, shard: &crate::index::hot::HotShard) -> usize {
    let live = self.live_branch(session).filter(|_| !self.config.recall_current_turn);
    live.and_then(|live| turn_start(&shard.entries, live)).unwrap_or(usize::MAX).min(shard.entries.len())
  }

  fn collect_candidates(&mut self) {
    let filters = &self.request.filters;
    let mut budget = MAX_ENTRY_CANDIDATES;
    let plan = self.sessions.plan.clone();
    for &slot in &plan.hot {
      let session = self.sessions.at(slot);
      let shard = session.shard().expect("hot session");
      let window = docs::window(self.request.entry_range, self.visible_end(session, shard));
      let docs = docs::candidates(&shard.entries, || shard.kinds(), window, filters, &mut budget, &mut self.reasons);
      self.hot.push((slot, docs));
    }
    if filters.is_empty() {
      self.cold = Cold::every(plan.cold.clone());
      return;
    }
    let counts: Vec<usize> = if filters.since.is_none() && filters.until.is_none() {
      plan.cold_kinds(&self.sessions).matching(|typed| filters.matches(typed)).collect()
    } else {
      let matching = |slot: usize| {
        let content = cold_content(self.sessions.at(slot), self.engine, self.request.branches, &self.unreadable);
        content.map_or(0, |content| content.addresses.iter().filter(|a| filters.matches(&a.typed)).count())
      };
      plan.cold.iter().map(|&slot| matching(slot)).collect()
    };
    let (mut slots, mut structural) = (Vec::new(), Vec::new());
    for (&slot, count) in plan.cold.iter().zip(counts).filter(|(_, count)| *count > 0) {
      slots.push(slot);
      structural.push(count);
    }
    let within = slots.len().min(MAX_DIGEST_CANDIDATES);
    self.cold = Cold { within, slots: Arc::new(slots), structural: Some(structural) };
  }

  pub(super) fn entry(&self, slot: usize, doc: usize) -> &Entry {
    &self.sessions.at(slot).shard().expect("hot session").entries[doc]
  }

  fn weight(&self, slot: usize, doc: usize) -> f64 {
    self.sessions.at(slot).shard().expect("hot session").provenance(doc).weight(&self.request.filters)
  }

  /// Hot postings of query word `term` restricted to the candidates:
  /// (slot, doc, tf), where an occurrence as an identifier's part (`part`,
  /// the term's stored part form) counts [`PART_WEIGHT`] of one.
  fn hot_postings(&self, term: &str, part: &str) -> Vec<(usize, usize, f64)> {
    let mut out = Vec::new();
    for &(slot, ref docs) in &self.hot {
      let shard = self.sessions.at(slot).shard().expect("hot session");
      let whole = docs.restrict(shard.postings.get(term)).map(|(doc, tf)| (doc, f64::from(tf)));
      let parts = docs.restrict(shard.postings.get(part)).map(|(doc, tf)| (doc, f64::from(tf) * PART_WEIGHT));
      let evidence = merge_by_doc(whole, parts).filter(|&(doc, _)| self.is_evidence(shard, doc));
      out.extend(evidence.map(|(doc, tf)| (slot, doc, tf)));
    }
    out
  }

  /// May hot entry `doc`'s text match a query (`HotShard::is_evidence`)?
  fn is_evidence(&self, shard: &crate::index::hot::HotShard, doc: usize) -> bool {
    shard.is_evidence(doc, Echoes::of(self.config))
  }

  /// A cold candidate's vocabulary and addresses; one that cannot be read
  /// (nor rebuilt) matches nothing, and the call's coverage says so.
  fn cold_content(&self, slot: usize) -> Option<&ColdContent> {
    cold_content(self.sessions.at(slot), self.engine, self.request.branches, &self.unreadable)
  }

  /// Lexical queries over many cold digests are served by the cold term
  /// dictionary: then every cold candidate is searched, past the digest
  /// budget too (the budget bounds matched sessions instead).
  /// Without filters the candidates are every cold session of the
  /// synchronization, served once per synchronization result.
  fn serve_cold_terms(&mut self) {
    if matches!(self.request.query, Query::Literal { .. } | Query::Phrase { .. }) {
      let which = if self.cold.is_every() { dictionary::Candidates::Every } else { dictionary::Candidates::Subset };
      let serve = || {
        let candidates: Vec<dictionary::Candidate<'_>> = (self.cold.slots.iter())
          .map(|&slot| (slot, self.sessions.at(slot).file(), self.sessions.at(slot).digest().expect("cold")))
          .collect();
        let (dir, max_record) = (&self.index_dir, self.config.max_cold_cache_bytes);
        dictionary::serve(dir, self.request.branches, (&candidates, which), max_record).map(Arc::new)
      };
      self.cold_terms = match self.cold.is_every() {
        true => self.sessions.plan.served.get_or_init(serve).clone(),
        false => serve(),
      };
    }
    if self.cold_terms.is_some() {
      self.cold.within = self.cold.slots.len();
    } else if self.cold.within < self.cold.slots.len() {
      self.reasons.insert(Reason::CandidateDigestBudget);
    }
  }

  /// The mean token length of the hot candidates (1 without any): BM25's
  /// length normalization.
  fn average_length(&self) -> f64 {
    let (mut sum, mut count) = (0u64, 0usize);
    for &(slot, ref docs) in self.hot.iter().filter(|(_, docs)| !docs.is_empty()) {
      let shard = self.sessions.at(slot).shard().expect("hot session");
      sum += docs.length_sum(&shard.postings.doc_lengths);
      count += docs.len();
    }
    // Exact: both are integers far below 2^53, as the per-entry sum was.
    if count == 0 {
      1.0
    } else {
      sum as f64 / count as f64
    }
  }

  /// A session's ranking length: the same number in a hot shard and in a
  /// cold digest of the same entries.
  fn session_length(&self, slot: usize, echoes: Echoes) -> u32 {
    let session = self.sessions.at(slot);
    let length = match session.shard() {
      Some(shard) => shard.length(echoes),
      None => session.digest().expect("cold").length,
    };
    length.clamp(1, u64::from(u32::MAX)) as u32
  }

  /// The candidate sessions holding stored term `term`, with their
  /// frequency classes: hot ones with a candidate entry (one that passes the
  /// filters, the entry range and the live turn's cut) from their postings,
  /// cold ones from the dictionary or their digests.
  fn session_frequencies(&self, term: &str, echoes: Echoes) -> FxHashMap<usize, u8> {
    let mut out: FxHashMap<usize, u8> = FxHashMap::default();
    for &(slot, ref docs) in &self.hot {
      if docs.is_empty() {
        continue;
      }
      let frequency = self.sessions.at(slot).shard().expect("hot").frequency(term, echoes);
      if frequency > 0 {
        out.insert(slot, frequency);
      }
    }
    let scan = |slot: usize| self.cold_content(slot).and_then(|content| content.frequency(term));
    let cold: Vec<(usize, u8)> = match &self.cold_terms {
      Some(served) => served.frequencies(term, scan),
      None => self.cold.admitted().filter_map(|(slot, _)| Some((slot, scan(slot)?))).collect(),
    };
    out.extend(cold);
    out
  }

  /// Lexical ranking on one scale for both tiers. Each session is scored as
  /// one BM25 document (IDF over the universe's sessions, frequencies and
  /// lengths weighted by provenance: BM25F), from statistics that are the
  /// same whether it is hot or cold. A cold session is one item with that
  /// score; a hot session's matching entries are items scored by it times
  /// 0.5–1 by their own BM25 against the session's best entry, so the best
  /// entry carries the session's score and sessions appear in the same order
  /// in every tier.
  fn lexical(&mut self, terms: &[String], all: bool, cold_needs_all: bool) -> Vec<Item> {
    let echoes = Echoes::of(self.config);
    let (sessions, average_session) = self.sessions.plan.lengths(&self.sessions, echoes);
    let average_entry = self.average_length();
    let mut session_scores: FxHashMap<usize, f64> = FxHashMap::default();
    // A hot session's length is a pass over its entries: once per call, not per term.
    let mut lengths: FxHashMap<usize, u32> = FxHashMap::default();
    let mut hot: Vec<Scored> = Vec::new();
    let mut cold: Vec<Vec<usize>> = Vec::with_capacity(terms.len());
    for term in terms {
      let part = part_term(term);
      let wholes = self.session_frequencies(term, echoes);
      let parts = self.session_frequencies(&part, echoes);
      let mut holding: Vec<usize> = wholes.keys().chain(parts.keys()).copied().collect();
      holding.sort_unstable();
      holding.dedup();
      let weight = idf(sessions, holding.len());
      for &slot in &holding {
        let frequency =
          session_frequency(wholes.get(&slot).copied().unwrap_or(0), parts.get(&slot).copied().unwrap_or(0));
        let length = *lengths.entry(slot).or_insert_with(|| self.session_length(slot, echoes));
        *session_scores.entry(slot).or_insert(0.0) += bm25(weight, frequency, length, average_session);
      }
      let scored = self.hot_postings(term, &part).into_iter().map(|(slot, doc, tf)| {
        let length = self.sessions.at(slot).shard().expect("hot").postings.doc_lengths[doc];
        ((slot, doc), bm25(weight, tf, length, average_entry))
      });
      hot = accumulate(hot, scored);
      cold.push(holding.into_iter().filter(|slot| self.sessions.at(*slot).shard().is_none()).collect());
    }
    let session_score = |slot: usize| session_scores.get(&slot).copied().unwrap_or(0.0);
    let entries: Vec<((usize, usize), f64)> = hot
      .into_iter()
      .filter(|(_, (_, matched))| !all || *matched == terms.len())
      .map(|((slot, doc), (score, _))| ((slot, doc), score * self.weight(slot, doc)))
      .collect();
    let mut best: FxHashMap<usize, f64> = FxHashMap::default();
    for &((slot, _), score) in &entries {
      let top = best.entry(slot).or_insert(0.0);
      *top = top.max(score);
    }
    let mut items: Vec<Item> = entries
      .into_iter()
      .map(|((slot, doc), score)| {
        let share = if best[&slot] > 0.0 { score / best[&slot] } else { 1.0 };
        Item::Entry { session: slot, doc, score: session_score(slot) * (0.5 + 0.5 * share) }
      })
      .collect();
    let needs_all = all || cold_needs_all;
    let cold = by_session(&cold, self.sessions.len());
    let (mut cold_items, mut start) = (0, 0);
    for matched in cold.chunk_by(|a, b| a >> 32 == b >> 32) {
      let run = start..start + matched.len();
      start = run.end;
      if needs_all && matched.len() < terms.len() {
        continue;
      }
      if cold_items == MAX_DIGEST_CANDIDATES {
        self.reasons.insert(Reason::CandidateDigestBudget);
        break;
      }
      cold_items += 1;
      let slot = (matched[0] >> 32) as usize;
      let structural = self.cold.structural_of(slot);
      items.push(Item::Session { session: slot, score: session_score(slot), matched: Matched::Query(run), structural });
    }
    self.cold_hits = cold;
    items
  }

  /// Does hot entry (slot, doc)'s kept text hold `phrase`? One cut at
  /// `maxEntryChars` that does not may hold it past the cut: `cut` is set.
  fn holds_phrase(&self, slot: usize, doc: usize, phrase: &str, cut: &mut bool) -> bool {
    let entry = self.entry(slot, doc);
    let holds = nfkc(&entry.text).to_lowercase().contains(phrase);
    *cut |= !holds && entry.truncated;
    holds
  }

  fn phrase(&mut self, phrase: &str, terms: &[String]) -> Vec<Item> {
    let mut items = self.lexical(terms, !terms.is_empty(), true);
    let mut cut = false;
    items.retain_mut(|item| match item {
      Item::Entry { session, doc, score } => {
        *score = self.weight(*session, *doc);
        self.holds_phrase(*session, *doc, phrase, &mut cut)
      }
      Item::Session { .. } => true,
    });
    if terms.is_empty() {
      // Punctuation-only phrases have no terms to prefilter by.
      for &(slot, ref docs) in &self.hot {
        let shard = self.sessions.at(slot).shard().expect("hot session");
        for doc in docs.iter().filter(|&doc| self.is_evidence(shard, doc)) {
          if self.holds_phrase(slot, doc, phrase, &mut cut) {
            items.push(Item::Entry { session: slot, doc, score: self.weight(slot, doc) });
          }
        }
      }
    }
    if cut {
      self.reasons.insert(Reason::MaxEntryChars);
    }
    items
  }

  fn regex(&mut self, regex: &mut BoundedRegex) -> Vec<Item> {
    let mut items = Vec::new();
    let mut cut = false;
    for &(slot, ref docs) in &self.hot {
      let shard = self.sessions.at(slot).shard().expect("hot session");
      for doc in docs.iter().filter(|&doc| self.is_evidence(shard, doc)) {
        match regex.test(&self.entry(slot, doc).text) {
          Ok(true) => items.push(Item::Entry { session: slot, doc, score: self.weight(slot, doc) }),
          // It may match past the cut.
          Ok(false) => cut |= self.entry(slot, doc).truncated,
          Err(stop) => {
            self.reasons.insert(stop);
            return items;
          }
        }
      }
    }
    if cut {
      self.reasons.insert(Reason::MaxEntryChars);
    }
    for (slot, structural) in self.cold.admitted() {
      let mut matched = Vec::new();
      let session = self.sessions.at(slot);
      let Some(content) = cold_content(session, self.engine, self.request.branches, &self.unreadable) else {
        continue;
      };
      // A regex runs over words and grams; parts restate their words.
      for term in content.vocabulary.iter().filter(|term| as_part(term).is_none()) {
        match regex.test(term) {
          Ok(true) => matched.push(term.to_string()),
          Ok(false) => {}
          Err(stop) => {
            self.reasons.insert(stop);
            return items;
          }
        }
      }
      if !matched.is_empty() {
        items.push(Item::Session { session: slot, score: 1.0, matched: Matched::Vocabulary(matched), structural });
      }
    }
    items
  }

  fn browse(&self) -> Vec<Item> {
    let mut items = Vec::with_capacity(self.hot.iter().map(|(_, docs)| docs.len()).sum::<usize>() + self.cold.within);
    let entries = self
      .hot
      .iter()
      .flat_map(|&(slot, ref docs)| docs.iter().map(move |doc| Item::Entry { session: slot, doc, score: 0.0 }));
    let sessions = self.cold.admitted().map(|(slot, structural)| Item::Session {
      session: slot,
      score: 0.0,
      matched: Matched::Vocabulary(Vec::new()),
      structural,
    });
    items.extend(entries.chain(sessions));
    items
  }

  pub(super) fn run(&mut self) -> Result<Vec<Item>, ContractError> {
    let request = self.request;
    self.serve_cold_terms();
    let items = match &request.query {
      Query::Browse => self.browse(),
      Query::Literal { terms, all } => self.lexical(terms, *all, false),
      Query::Phrase { phrase, terms } => self.phrase(phrase, terms),
      Query::Regex { pattern } => {
        let mut regex = BoundedRegex::compile(pattern, self.config)?;
        self.regex(&mut regex)
      }
    };
    if self.unreadable.get() {
      self.reasons.insert(Reason::IndexRecordUnreadable);
    }
    let cold_hit = items.iter().any(|i| matches!(i, Item::Session { .. }));
    if cold_hit {
      match &request.query {
        Query::Literal { terms, all: true } if terms.len() > 1 => {
          self.reasons.insert(Reason::ColdAllTermsRequiresHydration);
        }
        Query::Phrase { .. } => {
          self.reasons.insert(Reason::ColdPhraseRequiresHydration);
        }
        _ => {}
      }
      if !request.filters.is_empty() && request.query != Query::Browse {
        self.reasons.insert(Reason::ColdStructuralFilterRequiresHydration);
      }
    }
    if items.len() > MAX_ITEM_CANDIDATES {
      self.reasons.insert(Reason::CandidateItemBudget);
    }
    let need = (request.offset + request.page_size).min(MAX_ITEM_CANDIDATES);
    let items = self.rank(items, MAX_ITEM_CANDIDATES, need);
    Ok(items)
  }
}

#[cfg(test)]
mod tests {
  use super::by_session;
  use crate::testing::proptest_config;
  use proptest::prelude::*;

  proptest! {
    #![proptest_config(proptest_config(256))]

    /// The bitset walk gives what sorting the packed hits gives.
    #[test]
    fn hits_by_session_are_the_sorted_hits(
      slots in 0..300usize,
      holding in proptest::collection::vec(proptest::collection::btree_set(0..300usize, 0..80), 0..5),
    ) {
      let holding: Vec<Vec<usize>> =
        holding.into_iter().map(|set| set.into_iter().filter(|&s| s < slots).rev().collect()).collect();
      let mut sorted: Vec<u64> = (holding.iter().enumerate())
        .flat_map(|(at, hits)| hits.iter().map(move |&slot| (slot as u64) << 32 | at as u64))
        .collect();
      sorted.sort_unstable();
      prop_assert_eq!(by_session(&holding, slots), sorted);
    }
  }
}

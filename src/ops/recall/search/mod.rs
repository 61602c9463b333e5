//! Candidates and scoring: the filter-passing entries and cold digests
//! within the candidate budgets, scored by BM25, phrase, bounded regex or
//! browse into one stream of items. The search's state, its candidates,
//! browse and the driver are here; the cold candidates and the dictionary
//! that serves them in `cold`, BM25 ranking in `lexical`, the passes that
//! test text (phrase, regex) in `text`.

mod cold;
mod lexical;
mod text;

use super::docs::{self, Docs};
use super::rank::Ranked;
use super::searched::{Searched, Sessions};
pub use super::RecallRequest;
use crate::coverage::{Coverage, Reason};
use crate::engine::Engine;
use crate::error::ContractError;
use crate::index::snapshot::{Echoes, HotShard, Served};
use crate::query::plan::Query;
use crate::query::regex::BoundedRegex;
use crate::session::entry::Entry;
use crate::session::lineage::LiveBranch;
use cold::{cold_content, Cold};
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
  cold_terms: Option<Arc<Served>>,
  /// Every cold hit of a lexical query as `slot << 32 | term position`,
  /// ascending: by session, then in query order.
  pub(super) cold_hits: Vec<u64>,
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
  fn visible_end(&self, session: Searched<'_>, shard: &HotShard) -> usize {
    let live = self.live_branch(session).filter(|_| !self.config.recall_current_turn);
    live.and_then(|live| turn_start(shard.entries(), live)).unwrap_or(usize::MAX).min(shard.entry_count())
  }

  fn collect_candidates(&mut self) {
    let filters = &self.request.filters;
    let mut budget = MAX_ENTRY_CANDIDATES;
    let sessions = &self.sessions;
    for &slot in &sessions.partition().hot {
      let (session, shard) = (sessions.at(slot), sessions.hot(slot));
      let window = docs::window(self.request.entry_range, self.visible_end(session, shard));
      let docs =
        docs::candidates(|| shard.entries(), || shard.kinds(), window, filters, &mut budget, &mut self.reasons);
      self.hot.push((slot, docs));
    }
    if filters.is_empty() {
      self.cold = Cold::every(sessions.partition().cold.clone());
      return;
    }
    let counts: Vec<usize> = if filters.since.is_none() && filters.until.is_none() {
      sessions.cold_matching(|typed| filters.matches(typed))
    } else {
      let matching = |slot: usize| {
        let content = cold_content(sessions.at(slot), self.engine, self.request.branches, &self.unreadable);
        content.map_or(0, |content| content.addresses.iter().filter(|a| filters.matches(&a.typed)).count())
      };
      sessions.partition().cold.iter().map(|&slot| matching(slot)).collect()
    };
    let (mut slots, mut structural) = (Vec::new(), Vec::new());
    for (&slot, count) in sessions.partition().cold.iter().zip(counts).filter(|(_, count)| *count > 0) {
      slots.push(slot);
      structural.push(count);
    }
    let within = slots.len().min(MAX_DIGEST_CANDIDATES);
    self.cold = Cold { within, slots: Arc::new(slots), structural: Some(structural) };
  }

  pub(super) fn entry(&self, slot: usize, doc: usize) -> &Entry {
    &self.sessions.hot(slot).entries()[doc]
  }

  fn weight(&self, slot: usize, doc: usize) -> f64 {
    self.sessions.hot(slot).provenance(doc).weight(&self.request.filters)
  }

  /// May hot entry `doc`'s text match a query (`HotShard::is_evidence`)?
  fn is_evidence(&self, shard: &HotShard, doc: usize) -> bool {
    shard.is_evidence(doc, Echoes::of(self.config))
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

  /// Did a hot shard's entries or lists, decoded by this call, turn out
  /// damaged? Then the coverage says so, and the next call's
  /// synchronization rebuilds the shard. Asked once the hits are built.
  pub(super) fn note_damage(&self, coverage: &mut Coverage) {
    let sessions = &self.sessions;
    if !sessions.partition().hot.iter().any(|&slot| sessions.hot(slot).damaged()) {
      return;
    }
    crate::index::resync(&self.engine.index_context());
    coverage.complete = false;
    if let Err(at) = coverage.reasons.binary_search(&Reason::IndexRecordUnreadable) {
      coverage.reasons.insert(at, Reason::IndexRecordUnreadable);
    }
  }

  pub(super) fn run(&mut self) -> Result<Ranked, ContractError> {
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
    Ok(self.rank(items, MAX_ITEM_CANDIDATES, need))
  }
}

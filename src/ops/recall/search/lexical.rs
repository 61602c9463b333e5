//! Lexical ranking: each session one BM25F document, scored the same in
//! both tiers, and a hot session's entries by their own BM25 within it.

use super::cold::by_session;
use super::{Item, Matched, Search, MAX_DIGEST_CANDIDATES};
use crate::coverage::Reason;
use crate::index::snapshot::Echoes;
use crate::query::score::{bm25, idf, session_frequency, PART_WEIGHT};
use crate::tokenize::part_term;

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

/// The sessions holding a query word (as a whole word or a part), each
/// once, in no order: every use of them is per slot.
struct Holding {
  slots: Vec<usize>,
  /// By slot: in `slots`.
  held: Vec<bool>,
}

impl Holding {
  fn add(&mut self, slot: usize) {
    if !std::mem::replace(&mut self.held[slot], true) {
      self.slots.push(slot);
    }
  }
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

/// Where a query word is in each hot candidate's vocabulary, in the order
/// of `Search::hot` (`None`: absent, or no candidate entry there).
type HotPositions = Vec<Option<usize>>;

impl Search<'_> {
  /// [`HotPositions`] of stored term `term`: one lookup per hot session,
  /// shared by its session frequency and its postings.
  fn hot_positions(&self, term: &str) -> HotPositions {
    let position = |slot: usize| self.sessions.hot(slot).postings.position(term);
    self.hot.iter().map(|(slot, docs)| (!docs.is_empty()).then(|| position(*slot)).flatten()).collect()
  }

  /// Hot postings of query word `term` restricted to the candidates:
  /// (slot, doc, tf), where an occurrence as an identifier's part (`part`,
  /// the term's stored part form) counts [`PART_WEIGHT`] of one.
  fn hot_postings<'s>(
    &'s self,
    term: &'s HotPositions,
    part: &'s HotPositions,
  ) -> impl Iterator<Item = (usize, usize, f64)> + 's {
    self.hot.iter().enumerate().flat_map(move |(at, &(slot, ref docs))| {
      let shard = self.sessions.hot(slot);
      let postings = &shard.postings;
      let whole = docs.restrict(postings.list_at(term[at])).map(|(doc, tf)| (doc, f64::from(tf)));
      let parts = docs.restrict(postings.list_at(part[at])).map(|(doc, tf)| (doc, f64::from(tf) * PART_WEIGHT));
      let evidence = merge_by_doc(whole, parts).filter(move |&(doc, _)| self.is_evidence(shard, doc));
      evidence.map(move |(doc, tf)| (slot, doc, tf))
    })
  }

  /// The mean token length of the hot candidates (1 without any): BM25's
  /// length normalization.
  fn average_length(&self) -> f64 {
    let (mut sum, mut count) = (0u64, 0usize);
    for &(slot, ref docs) in self.hot.iter().filter(|(_, docs)| !docs.is_empty()) {
      let shard = self.sessions.hot(slot);
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

  /// The candidate sessions holding stored term `term`, each with its
  /// frequency class in `classes` (by slot) and added to `holding` once:
  /// hot ones with a candidate entry (one that passes the filters, the
  /// entry range and the live turn's cut) from their postings, cold ones
  /// from the dictionary or their digests.
  fn session_frequencies(
    &self,
    (term, hot_at): (&str, &HotPositions),
    echoes: Echoes,
    classes: &mut [u8],
    holding: &mut Holding,
  ) {
    let mut hold = |slot: usize, frequency: u8| {
      classes[slot] = frequency;
      holding.add(slot);
    };
    for (&(slot, _), at) in self.hot.iter().zip(hot_at) {
      let frequency = at.map_or(0, |at| self.sessions.hot(slot).frequency_at(at, echoes));
      if frequency > 0 {
        hold(slot, frequency);
      }
    }
    let scan = |slot: usize| self.cold_content(slot).and_then(|content| content.frequency(term));
    match &self.cold_terms {
      Some(served) => served.each_frequency(term, scan, hold),
      None => {
        self.cold.admitted().filter_map(|(slot, _)| Some((slot, scan(slot)?))).for_each(|(slot, f)| hold(slot, f))
      }
    }
  }

  /// Lexical ranking on one scale for both tiers. Each session is scored as
  /// one BM25 document (IDF over the universe's sessions, frequencies and
  /// lengths weighted by provenance: BM25F), from statistics that are the
  /// same whether it is hot or cold. A cold session is one item with that
  /// score; a hot session's matching entries are items scored by it times
  /// 0.5–1 by their own BM25 against the session's best entry, so the best
  /// entry carries the session's score and sessions appear in the same order
  /// in every tier.
  pub(super) fn lexical(&mut self, terms: &[String], all: bool, cold_needs_all: bool) -> Vec<Item> {
    let echoes = Echoes::of(self.config);
    let lengths = self.sessions.lengths(echoes);
    let (sessions, average_session) = lengths.universe();
    let average_entry = self.average_length();
    // By slot: at 100,000 sessions a common term is held by most of them,
    // and maps keyed by slot cost more than the scoring itself.
    let slots = self.sessions.len();
    let mut session_scores = vec![0.0f64; slots];
    let (mut wholes, mut parts) = (vec![0u8; slots], vec![0u8; slots]);
    let mut is_hot = vec![false; slots];
    self.hot.iter().for_each(|&(slot, _)| is_hot[slot] = true);
    let mut holding = Holding { slots: Vec::new(), held: vec![false; slots] };
    let mut hot: Vec<Scored> = Vec::new();
    let mut cold: Vec<Vec<usize>> = Vec::with_capacity(terms.len());
    for term in terms {
      let part = part_term(term);
      let (term_at, part_at) = (self.hot_positions(term), self.hot_positions(&part));
      self.session_frequencies((term, &term_at), echoes, &mut wholes, &mut holding);
      self.session_frequencies((&part, &part_at), echoes, &mut parts, &mut holding);
      let weight = idf(sessions, holding.slots.len());
      for &slot in &holding.slots {
        let frequency = session_frequency(wholes[slot], parts[slot]);
        (wholes[slot], parts[slot], holding.held[slot]) = (0, 0, false);
        session_scores[slot] += bm25(weight, frequency, lengths.of(slot), average_session);
      }
      let scored = self.hot_postings(&term_at, &part_at).map(|(slot, doc, tf)| {
        let length = self.sessions.hot(slot).postings.doc_lengths[doc];
        ((slot, doc), bm25(weight, tf, length, average_entry))
      });
      hot = accumulate(hot, scored);
      cold.push(holding.slots.drain(..).filter(|&slot| !is_hot[slot]).collect());
    }
    let session_score = |slot: usize| session_scores[slot];
    let entries: Vec<((usize, usize), f64)> = hot
      .into_iter()
      .filter(|(_, (_, matched))| !all || *matched == terms.len())
      .map(|((slot, doc), (score, _))| ((slot, doc), score * self.weight(slot, doc)))
      .collect();
    // Each hot session's best entry score, by slot.
    let mut best = vec![0.0f64; slots];
    for &((slot, _), score) in &entries {
      best[slot] = best[slot].max(score);
    }
    let mut items: Vec<Item> = entries
      .into_iter()
      .map(|((slot, doc), score)| {
        let share = if best[slot] > 0.0 { score / best[slot] } else { 1.0 };
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
}

//! `memory.pack`: one call that answers "what do we know about X" with
//! cited, verified evidence inside a token budget. Deterministic and
//! extractive (no model): the recall stream over-fetched, grouped by
//! session; each session's best entries with the turn around them; diversity
//! across sessions (every session's best match before any session's second);
//! duplicates dropped; each excerpt a [`Citation`] bound like a follow call
//! and verified by running it; what was left out counted by [`Omission`].
//! The budget rule is [`budget`]'s.

mod budget;
mod cite;
mod omit;
mod request;
mod select;

pub use budget::{tokens, CHARS_PER_TOKEN, DEFAULT_MAX_TOKENS, MAX_MAX_TOKENS, MIN_MAX_TOKENS};
pub use cite::{verify, Citation, Part, Unverified};
pub use omit::{Omission, Omitted};
pub use request::PackRequest;

use crate::coverage::Coverage;
use crate::engine::Engine;
use crate::error::{ContractError, ErrorCode};
use crate::ops::expand::ExpandRequest;
use crate::ops::recall::ranked_hits;
use crate::project::known::Known;
use crate::session::binding::{self, pin, Binding};
use crate::session::project_dirs::project_name;
use crate::session::titles::first_prompt;
use crate::session::SessionView;
use crate::text::cap_with_ellipsis;
use cite::Naming;
use omit::Tally;
use select::{Group, PER_SESSION};
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

const PROJECT_CHARS: usize = 200;

/// What was found in one session and the excerpts cited from it (in entry order).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackSession {
  pub session_id: String,
  /// The session's cwd.
  pub project: String,
  /// The short name of the cwd's project (`repo`; see [`crate::project::known::Known::of`]);
  /// absent for a header without a cwd.
  #[serde(skip_serializing_if = "Option::is_none")]
  pub project_name: Option<String>,
  /// Its first prompt.
  pub title: Option<String>,
  pub last_timestamp: Option<i64>,
  pub evidence: Vec<Citation>,
}

/// How much of the recall stream the pack chose from.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Considered {
  /// Hits read from the stream (over-fetched).
  pub hits: usize,
  /// Sessions they came from.
  pub sessions: usize,
  /// The stream's whole length.
  pub total: usize,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pack {
  pub query: Option<String>,
  pub max_tokens: usize,
  /// This result's estimated tokens ([`budget`]'s rule); never above `maxTokens`.
  pub tokens: usize,
  pub sessions: Vec<PackSession>,
  pub omitted: Vec<Omitted>,
  pub considered: Considered,
  pub coverage: Coverage,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub error: Option<ContractError>,
}

impl Pack {
  fn empty(request: &PackRequest, coverage: Coverage) -> Pack {
    Pack {
      query: request.query.clone(),
      max_tokens: request.max_tokens,
      tokens: 0,
      sessions: Vec::new(),
      omitted: Vec::new(),
      considered: Considered::default(),
      coverage,
      error: None,
    }
  }

  fn failed(request: &PackRequest, error: ContractError) -> Pack {
    Pack { error: Some(error.clone()), ..Pack::empty(request, Coverage::failed(&error)) }
  }

  /// Every citation, session by session.
  pub fn citations(&self) -> impl Iterator<Item = &Citation> {
    self.sessions.iter().flat_map(|s| s.evidence.iter())
  }
}

/// A session the pack may cite: its view (as the index saw its bytes) and
/// the matched entries it may cite, best first.
struct Candidate {
  view: Arc<SessionView>,
  echo: Vec<bool>,
  matches: Vec<usize>,
  naming: Naming,
}

/// The binding a hit's follow call carries, and its branch mode.
fn bound(hit: &crate::ops::recall::EntryHit) -> Option<ExpandRequest> {
  ExpandRequest::from_json(Some(&hit.follow.args)).ok()
}

/// The group's session as the index saw it (its bytes, bound by the best
/// hit's call), and the matches on it that may be cited.
fn candidate(engine: &Engine, group: &Group, tally: &mut Tally) -> Option<Candidate> {
  let top = bound(&group.hits[0])?;
  let source = Binding { leaf_id: None, fingerprint: None, ..top.binding.clone() };
  let policy = engine.config.expand_policy();
  let considered = group.hits.len().min(PER_SESSION);
  let view = match engine.load_bound(Path::new(&group.file), top.branches, &policy, &source) {
    Ok(view) => view,
    Err(_) => {
      tally.add(Omission::SourceChanged, considered);
      return None;
    }
  };
  let echo = select::echo_marks(&view.normalized.entries);
  let mut matches = Vec::new();
  for hit in group.hits.iter().take(PER_SESSION) {
    let index = hit.meta.index;
    let on_branch = bound(hit).is_some_and(|call| {
      binding::check_lineage(&view, &call.binding).is_ok()
        && binding::check_entries(&view, &call.binding, &[index]).is_ok()
    });
    if !on_branch || index >= view.normalized.entries.len() {
      tally.add(Omission::OffBranch, 1);
      continue;
    }
    match select::refused(&view.normalized.entries, &echo, index) {
      Some(reason) => tally.add(reason, 1),
      None => matches.push(index),
    }
  }
  (!matches.is_empty()).then_some(Candidate { view, echo, matches, naming: Naming::Path })
}

/// Each candidate's citations name its session by a pin when the pin's id
/// prefix names exactly that file among every session an id can name (one
/// pass over the index's listing per pack); a prefix two files share keeps
/// the path.
fn name_by_pins(engine: &Engine, candidates: &mut [Candidate]) {
  if candidates.is_empty() {
    return;
  }
  let references: Vec<String> =
    candidates.iter().map(|c| c.view.header.id.chars().take(pin::ID_PREFIX).collect()).collect();
  let asked: Vec<&str> = references.iter().map(String::as_str).collect();
  let found = crate::index::find_sessions(&engine.index_context(), &asked);
  for (candidate, found) in candidates.iter_mut().zip(found) {
    let names_it = found.is_ok_and(|found| found.path == candidate.view.path);
    candidate.naming = if names_it { Naming::Pin } else { Naming::Path };
  }
}

/// The pack being filled: every addition is measured and undone when the
/// result would exceed the budget.
struct Filler<'a> {
  engine: &'a Engine,
  request: &'a PackRequest,
  pack: Pack,
  tally: Tally,
  /// Per candidate, its position in `pack.sessions` once it has one.
  placed: Vec<Option<usize>>,
  cited: Vec<BTreeSet<usize>>,
  words: Vec<BTreeSet<String>>,
  /// The budget-refused excerpt with the fewest tokens, for the too-small error.
  smallest_refused: Option<usize>,
  /// The identities seen, naming each session's project.
  known: Known,
}

impl Filler<'_> {
  fn measured(&mut self) -> usize {
    self.pack.omitted = self.tally.list();
    self.pack.tokens = self.request.max_tokens;
    tokens(&self.pack)
  }

  fn try_add(&mut self, candidates: &[Candidate], slot: usize, index: usize, part: Part) {
    if self.cited[slot].contains(&index) {
      return;
    }
    let candidate = &candidates[slot];
    if part != Part::Match {
      if let Some(reason) = select::refused(&candidate.view.normalized.entries, &candidate.echo, index) {
        self.tally.add(reason, 1);
        return;
      }
    }
    let terms = self.request.recall.query.terms();
    let want = match part {
      Part::Match => budget::match_window(self.request.max_tokens),
      _ => budget::context_window(self.request.max_tokens),
    };
    let view = &candidate.view;
    let mut citation = cite::cite(view, &view.normalized.entries[index], part, terms, want, candidate.naming);
    let words = select::words(&citation.text);
    if self.words.iter().any(|seen| select::duplicate(seen, &words)) {
      self.tally.add(Omission::Duplicate, 1);
      return;
    }
    cite::verify_at(self.engine, &mut citation, &view.path);
    let at = match self.placed[slot] {
      Some(at) => at,
      None => {
        self.pack.sessions.push(PackSession {
          session_id: view.header.id.clone(),
          project: cap_with_ellipsis(&view.header.cwd, PROJECT_CHARS),
          project_name: project_name(&self.known, &view.header.cwd),
          title: first_prompt(&view.normalized),
          last_timestamp: view.normalized.entries.iter().rev().find_map(|e| e.typed.timestamp),
          evidence: Vec::new(),
        });
        self.pack.sessions.len() - 1
      }
    };
    self.pack.sessions[at].evidence.push(citation);
    let needed = self.measured();
    if needed > self.request.max_tokens {
      self.pack.sessions[at].evidence.pop();
      if self.placed[slot].is_none() {
        self.pack.sessions.pop();
      }
      self.smallest_refused = Some(self.smallest_refused.map_or(needed, |n| n.min(needed)));
      self.tally.add(Omission::Budget, 1);
      return;
    }
    self.placed[slot] = Some(at);
    self.cited[slot].insert(index);
    self.words.push(words);
  }
}

pub fn pack(engine: &Engine, request: &PackRequest) -> Pack {
  let (hits, total, coverage) = match ranked_hits(engine, &request.recall) {
    Ok(ranked) => ranked,
    Err(error) => return Pack::failed(request, error),
  };
  let considered_hits = hits.len();
  let groups = match select::groups(engine, hits, request.max_sessions * 2) {
    Ok(groups) => groups,
    Err(error) => return Pack::failed(request, error),
  };
  let mut tally = Tally::default();
  let mut candidates = Vec::new();
  for group in &groups {
    if candidates.len() >= request.max_sessions {
      tally.add(Omission::MaxSessions, group.hits.len().min(PER_SESSION));
      continue;
    }
    candidates.extend(candidate(engine, group, &mut tally));
  }
  name_by_pins(engine, &mut candidates);
  let mut pack = Pack::empty(request, coverage);
  pack.considered = Considered { hits: considered_hits, sessions: groups.len(), total };
  let mut filler = Filler {
    engine,
    request,
    pack,
    tally,
    placed: vec![None; candidates.len()],
    cited: vec![BTreeSet::new(); candidates.len()],
    words: Vec::new(),
    smallest_refused: None,
    known: Known::open(&engine.agent_dir),
  };
  // Every session's best match before any session's second.
  for round in 0..PER_SESSION {
    for slot in 0..candidates.len() {
      if let Some(&index) = candidates[slot].matches.get(round) {
        filler.try_add(&candidates, slot, index, Part::Match);
      }
    }
  }
  // Then the turn around each match, in the order the matches were cited.
  for slot in 0..candidates.len() {
    let matched: Vec<usize> =
      candidates[slot].matches.iter().copied().filter(|i| filler.cited[slot].contains(i)).collect();
    for index in matched {
      for (part, at) in select::context(&candidates[slot].view.normalized.entries, index) {
        filler.try_add(&candidates, slot, at, part);
      }
    }
  }
  filler.known.save();
  let nothing_fit = filler.pack.sessions.is_empty() && filler.smallest_refused.is_some();
  filler.measured();
  let mut pack = filler.pack;
  if nothing_fit {
    let needed = filler.smallest_refused.unwrap_or_default();
    let error = ContractError::new(
      ErrorCode::PackBudgetTooSmall,
      format!("maxTokens {} cannot hold one cited excerpt: it needs {needed}.", request.max_tokens),
    )
    .with("maxTokens", request.max_tokens)
    .with("neededTokens", needed);
    pack.error = Some(error);
  }
  for session in &mut pack.sessions {
    session.evidence.sort_by_key(|c| c.index);
  }
  pack.tokens = own_tokens(&mut pack);
  pack
}

/// The pack's tokens with `tokens` itself stated: a fixed point (its digits count too).
fn own_tokens(pack: &mut Pack) -> usize {
  loop {
    let counted = tokens(&*pack);
    if counted == pack.tokens {
      return counted;
    }
    pack.tokens = counted;
  }
}

#[cfg(test)]
mod tests;

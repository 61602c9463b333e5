//! `memory.recall`: synchronize the index for the scope, collect the
//! filter-passing candidates, score and rank them, and page the hits.

mod docs;
mod page;
mod rank;
mod request;
mod search;
mod searched;

use crate::coverage::Coverage;
use crate::coverage::Reason;
use crate::engine::Engine;
use crate::error::ContractError;
pub use request::{RecallRequest, SEARCH_ARGS};
use std::collections::BTreeSet;

pub use page::{EntryHit, Hit, RecallPage, SessionHit};
use search::Search;
pub use search::MAX_DIGEST_CANDIDATES;
use searched::searched;

pub fn recall(engine: &Engine, request: &RecallRequest) -> RecallPage {
  match ranked(engine, request) {
    Ok((search, items, coverage)) => {
      let mut page = search.page(&items, coverage);
      search.note_damage(&mut page.coverage);
      page
    }
    Err(error) => RecallPage::failed(error),
  }
}

/// The ranked stream without the envelope: up to `request.page_size` hits
/// from `request.offset`, each with its follow call, the stream's length
/// and the coverage. What `memory.pack` over-fetches and selects from.
pub fn ranked_hits(engine: &Engine, request: &RecallRequest) -> Result<(Vec<Hit>, usize, Coverage), ContractError> {
  let (search, items, mut coverage) = ranked(engine, request)?;
  let hits = search.hits(&items);
  search.note_damage(&mut coverage);
  Ok((hits, items.total, coverage))
}

fn ranked<'r>(
  engine: &'r Engine,
  request: &'r RecallRequest,
) -> Result<(Search<'r>, rank::Ranked, Coverage), ContractError> {
  // Hits are scanned for threats (`threat::flags`) once they are ranked.
  crate::threat::prepare();
  let (sessions, mut coverage) = searched(engine, request)?;
  let mut search = Search::new(request, engine, sessions);
  let items = search.run()?;
  let mut reasons: BTreeSet<Reason> = coverage.reasons.drain(..).collect();
  reasons.extend(search.reasons.iter().copied());
  coverage.complete = coverage.complete && search.reasons.is_empty();
  coverage.reasons = reasons.into_iter().collect();
  coverage.project = engine.project_coverage(&request.scope);
  Ok((search, items, coverage))
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;

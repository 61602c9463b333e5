//! `memory.recall`: synchronize the index for the scope, collect the
//! filter-passing candidates, score and rank them, and page the hits.

mod docs;
mod page;
mod rank;
mod request;
mod search;
mod searched;

use crate::coverage::Reason;
use crate::engine::Engine;
pub use request::RecallRequest;
use std::collections::BTreeSet;

pub use page::{EntryHit, Hit, RecallPage, SessionHit};
use search::Search;
pub use search::MAX_DIGEST_CANDIDATES;
use searched::searched;

pub fn recall(engine: &Engine, request: &RecallRequest) -> RecallPage {
  let (sessions, mut coverage) = match searched(engine, request) {
    Ok(loaded) => loaded,
    Err(error) => return RecallPage::failed(error),
  };
  let mut search = Search::new(request, engine, sessions);
  let items = match search.run() {
    Ok(items) => items,
    Err(error) => return RecallPage::failed(error),
  };
  let mut reasons: BTreeSet<Reason> = coverage.reasons.drain(..).collect();
  reasons.extend(search.reasons.iter().copied());
  coverage.complete = coverage.complete && search.reasons.is_empty();
  coverage.reasons = reasons.into_iter().collect();
  search.page(&items, coverage)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;

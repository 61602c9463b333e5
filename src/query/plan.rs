//! The query plan a recall runs: the query mode with its canonical terms,
//! and the exact structural filters. Parsing a call's arguments into one is
//! `ops::recall::request`.

use crate::session::entry::Typed;

#[derive(Debug, Clone, PartialEq)]
pub enum Query {
  /// No query: browse recent entries (or structural mode with filters).
  Browse,
  Literal {
    terms: Vec<String>,
    all: bool,
  },
  Phrase {
    phrase: String,
    terms: Vec<String>,
  },
  Regex {
    pattern: String,
  },
}

impl Query {
  /// Canonical terms a cold vocabulary is asked for.
  pub fn terms(&self) -> &[String] {
    match self {
      Query::Literal { terms, .. } | Query::Phrase { terms, .. } => terms,
      _ => &[],
    }
  }
}

/// Exact structural filters: the typed fields an entry must have (a
/// pattern: each field it sets; its timestamp is never set), and a time
/// window, bounds inclusive, in ms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filters {
  pub typed: Typed,
  pub since: Option<i64>,
  pub until: Option<i64>,
}

impl Filters {
  pub fn is_empty(&self) -> bool {
    *self == Filters::default()
  }

  /// Filters on operations (tool, ref, provider, action, outcome) switch
  /// provenance weighting off: the caller asked for plumbing.
  pub fn asks_for_operations(&self) -> bool {
    let typed = &self.typed;
    typed.tool.is_some()
      || typed.reference.is_some()
      || typed.provider.is_some()
      || typed.action.is_some()
      || typed.outcome.is_some()
  }

  /// Typed fields alone decide. An entry without a timestamp cannot be
  /// proven inside a time window, so it fails one.
  pub fn matches(&self, item: &Typed) -> bool {
    self.matches_kind(item) && self.matches_time(item.timestamp)
  }

  /// The typed fields but the timestamp decide.
  pub fn matches_kind(&self, item: &Typed) -> bool {
    item.has(&self.typed)
  }

  /// The time window alone decides.
  pub fn matches_time(&self, timestamp: Option<i64>) -> bool {
    self.since.is_none_or(|since| timestamp.is_some_and(|t| t >= since))
      && self.until.is_none_or(|until| timestamp.is_some_and(|t| t <= until))
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn time_filters_are_inclusive_and_need_a_timestamp() {
    let filters = Filters { since: Some(10), until: Some(20), ..Filters::default() };
    let at = |timestamp| Typed { timestamp, ..Typed::default() };
    assert!(filters.matches(&at(Some(10))));
    assert!(filters.matches(&at(Some(20))));
    assert!(!filters.matches(&at(Some(21))));
    assert!(!filters.matches(&at(None)));
  }
}

//! `memory.pack` arguments: the recall arguments that choose what is
//! searched (query, scope, branches, filters, time window) and the pack's
//! own bounds (`maxTokens`, `maxSessions`).

use super::budget::{DEFAULT_MAX_TOKENS, MAX_MAX_TOKENS, MIN_MAX_TOKENS};
use crate::args::Args;
use crate::error::{CoreError, CoreResult};
use crate::ops::recall::{RecallRequest, SEARCH_ARGS};
use serde_json::{json, Value};

pub const DEFAULT_MAX_SESSIONS: i64 = 6;
const MAX_MAX_SESSIONS: i64 = 20;

/// Recall hits over-fetched for selection: enough for every session a pack
/// can cite to bring a few entries, and for duplicates to be dropped.
pub(super) const FETCH: usize = 60;

/// The pack's own bounds, beside recall's [`SEARCH_ARGS`].
const BOUND_ARGS: &[&str] = &["maxTokens", "maxSessions"];

#[derive(Debug, Clone, PartialEq)]
pub struct PackRequest {
  /// The recall stream the pack selects from (its page is [`FETCH`] hits).
  pub recall: RecallRequest,
  pub query: Option<String>,
  pub max_tokens: usize,
  pub max_sessions: usize,
}

impl PackRequest {
  pub fn from_json(value: Option<&Value>) -> CoreResult<PackRequest> {
    let args = Args::new("memory.pack", value, &[SEARCH_ARGS, BOUND_ARGS].concat())?;
    let max_tokens = args.integer("maxTokens")?.unwrap_or(DEFAULT_MAX_TOKENS);
    if !(MIN_MAX_TOKENS..=MAX_MAX_TOKENS).contains(&max_tokens) {
      return Err(CoreError::invalid(format!(
        "memory.pack: maxTokens must be between {MIN_MAX_TOKENS} and {MAX_MAX_TOKENS} (tokens are JSON characters / 4), got {max_tokens}: a smaller budget cannot hold one cited excerpt"
      )));
    }
    let max_sessions = args.bounded("maxSessions", 1, MAX_MAX_SESSIONS, DEFAULT_MAX_SESSIONS)? as usize;
    let mut searched = value.and_then(Value::as_object).cloned().unwrap_or_default();
    searched.remove("maxTokens");
    searched.remove("maxSessions");
    // Snippets are never shown: the shortest keeps the over-fetch cheap.
    searched.insert("snippetChars".into(), json!(80));
    let mut recall = RecallRequest::from_json(Some(&Value::Object(searched))).map_err(|error| match error {
      CoreError::InvalidArgument(message) => CoreError::invalid(message.replacen("memory.recall", "memory.pack", 1)),
      other => other,
    })?;
    recall.page_size = FETCH;
    Ok(PackRequest { recall, query: args.string("query")?, max_tokens: max_tokens as usize, max_sessions })
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn bounds_and_recall_arguments_are_checked() {
    let request = PackRequest::from_json(Some(&json!({"query": "cef", "scope": "global"}))).unwrap();
    assert_eq!((request.max_tokens, request.max_sessions, request.recall.page_size), (2000, 6, FETCH));
    let small = PackRequest::from_json(Some(&json!({"query": "cef", "maxTokens": 100}))).unwrap_err();
    assert!(small.to_string().contains("maxTokens must be between 400 and 7000"), "{small}");
    let paged = PackRequest::from_json(Some(&json!({"query": "cef", "pageSize": 3}))).unwrap_err();
    assert!(paged.to_string().starts_with("memory.pack: unknown argument \"pageSize\""), "{paged}");
    let outcome = PackRequest::from_json(Some(&json!({"outcome": "exploded"}))).unwrap_err();
    assert!(outcome.to_string().starts_with("memory.pack: outcome"), "{outcome}");
  }
}

//! `memory.recall` arguments, read strictly into a [`RecallRequest`] and its
//! query plan.
//!
//! The mode is explicit: literal (default) never compiles input as a regex,
//! so `src/foo.ts` is the terms `src`, `foo`, `ts`; phrase matches contiguous
//! NFKC-lowercased text; regex is opt-in only.

use crate::args::Args;
use crate::error::{CoreError, CoreResult};
use crate::query::plan::{Filters, Query};
use crate::session::binding::pin::{self, Slot};
use crate::session::binding::Binding;
use crate::session::discover::Scope;
use crate::session::entry::{Outcome, Typed};
use crate::session::lineage::Branches;
use crate::session::time::parse_iso_ms;
use crate::tokenize::{nfkc, tokenize};
use serde_json::{Map, Value};

pub const DEFAULT_PAGE_SIZE: i64 = 10;
pub const MAX_PAGE_SIZE: i64 = 50;
pub const DEFAULT_SNIPPET_CHARS: i64 = 480;

/// The arguments that choose what is searched: every call built on recall's
/// stream (`memory.pack`) takes them as recall does.
pub const SEARCH_ARGS: &[&str] = &[
  "query",
  "queryMode",
  "queryMatch",
  "scope",
  "branches",
  "role",
  "tool",
  "ref",
  "provider",
  "action",
  "outcome",
  "since",
  "until",
];

/// Recall's own: the page and an explicit session's integrity binding.
const PAGE_ARGS: &[&str] = &[
  "pin",
  "pageSize",
  "offset",
  "snippetChars",
  "entryRange",
  "expectedSourceHash",
  "expectedSourceBytes",
  "expectedLineageFingerprint",
  "expectedLineageLeafId",
];

#[derive(Debug, Clone, PartialEq)]
pub struct RecallRequest {
  pub query: Query,
  pub scope: Scope,
  pub branches: Branches,
  pub filters: Filters,
  pub page_size: usize,
  pub offset: usize,
  pub snippet_chars: usize,
  pub entry_range: Option<(i64, i64)>,
  /// What an explicit single-session call is bound to (a pinned `next`).
  pub binding: Binding,
  /// The arguments as given, for `next` and `follow` calls.
  pub args: Map<String, Value>,
}

fn time_bound(args: &Args<'_>, key: &str) -> CoreResult<Option<i64>> {
  if let Ok(Some(ms)) = args.integer(key) {
    return Ok(Some(ms));
  }
  match args.string(key) {
    Ok(None) => Ok(None),
    Ok(Some(text)) => parse_iso_ms(&text).map(Some).ok_or_else(|| {
      CoreError::invalid(format!("memory.recall: {key} must be ms since the epoch or an ISO date, got \"{text}\""))
    }),
    Err(_) => Err(CoreError::invalid(format!("memory.recall: {key} must be ms since the epoch or an ISO date"))),
  }
}

fn plan(args: &Args<'_>) -> CoreResult<Query> {
  let query = args.string("query")?.filter(|q| !q.trim().is_empty());
  let mode = args.string("queryMode")?.unwrap_or_else(|| "literal".into());
  let all = match args.string("queryMatch")?.as_deref() {
    None | Some("any") => false,
    Some("all") if mode == "literal" => true,
    Some("all") => return Err(CoreError::invalid("memory.recall: queryMatch \"all\" needs queryMode \"literal\"")),
    Some(other) => {
      return Err(CoreError::invalid(format!("memory.recall: queryMatch must be \"any\" or \"all\", got \"{other}\"")))
    }
  };
  let Some(query) = query else {
    return match mode.as_str() {
      "literal" | "phrase" | "regex" => Ok(Query::Browse),
      other => {
        Err(CoreError::invalid(format!("memory.recall: queryMode must be literal, phrase or regex, got \"{other}\"")))
      }
    };
  };
  let mut terms = tokenize(&query);
  terms.sort();
  terms.dedup();
  match mode.as_str() {
    "literal" if terms.is_empty() => Err(CoreError::invalid(format!(
      "memory.recall: query {query:?} has no terms (letters or numbers) to search for; omit query to browse, or use queryMode \"phrase\" for punctuation"
    ))),
    "literal" => Ok(Query::Literal { terms, all }),
    "phrase" => Ok(Query::Phrase { phrase: nfkc(query.trim()).to_lowercase(), terms }),
    "regex" => Ok(Query::Regex { pattern: query }),
    other => {
      Err(CoreError::invalid(format!("memory.recall: queryMode must be literal, phrase or regex, got \"{other}\"")))
    }
  }
}

fn filters(args: &Args<'_>) -> CoreResult<Filters> {
  let outcome = match args.string("outcome")? {
    None => None,
    Some(text) => Some(Outcome::parse(&text).ok_or_else(|| {
      CoreError::invalid(format!(
        "memory.recall: outcome must be succeeded, failed, aborted or timed_out, got \"{text}\""
      ))
    })?),
  };
  let typed = Typed {
    role: args.string("role")?,
    tool: args.string("tool")?,
    reference: args.string("ref")?,
    provider: args.string("provider")?,
    action: args.string("action")?,
    outcome,
    timestamp: None,
  };
  Ok(Filters { typed, since: time_bound(args, "since")?, until: time_bound(args, "until")? })
}

impl RecallRequest {
  pub fn from_json(value: Option<&Value>) -> CoreResult<RecallRequest> {
    let unfolded = pin::unfolded(value, Slot::Scope, "memory.recall")?;
    let args = Args::new("memory.recall", unfolded.as_ref().or(value), &[SEARCH_ARGS, PAGE_ARGS].concat())?;
    let scope = args.scope(Scope::Project)?;
    let explicit = matches!(scope, Scope::Explicit(_));
    let binding = Binding::from_args(&args)?;
    let entry_range = match args.object("entryRange")? {
      None => None,
      Some(range) => {
        let inner = Args::new("memory.recall entryRange", Some(range), &["first", "last"])?;
        match (inner.integer("first")?, inner.integer("last")?) {
          (Some(first), Some(last)) => Some((first, last)),
          _ => return Err(CoreError::invalid("memory.recall: entryRange needs integer first and last")),
        }
      }
    };
    if !explicit && (entry_range.is_some() || !binding.is_empty()) {
      return Err(CoreError::invalid(
        "memory.recall: entryRange and the expected* bindings need scope \"session:<id-or-path>\"",
      ));
    }
    Ok(RecallRequest {
      query: plan(&args)?,
      scope,
      branches: args.branches()?,
      filters: filters(&args)?,
      page_size: args.bounded("pageSize", 1, MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE)? as usize,
      offset: args.bounded("offset", 0, i64::MAX, 0)? as usize,
      snippet_chars: args.bounded("snippetChars", 80, 2000, DEFAULT_SNIPPET_CHARS)? as usize,
      entry_range,
      binding,
      args: value.and_then(Value::as_object).cloned().unwrap_or_default(),
    })
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_json::json;

  fn plan_of(args: Value) -> Query {
    RecallRequest::from_json(Some(&args)).unwrap().query
  }

  #[test]
  fn literal_input_is_never_a_regex() {
    assert_eq!(
      plan_of(json!({"query": "src/foo.ts"})),
      Query::Literal { terms: vec!["foo".into(), "src".into(), "ts".into()], all: false }
    );
    assert_eq!(
      plan_of(json!({"query": "code 4[0-9]"})),
      Query::Literal { terms: vec!["0".into(), "4".into(), "9".into(), "code".into()], all: false }
    );
  }

  #[test]
  fn quoted_words_stay_terms_and_all_is_literal_only() {
    let query = plan_of(json!({"query": "\"Use CEF\" \"Stage 1\" browser Heddlework", "queryMatch": "all"}));
    assert_eq!(query.terms(), ["1", "browser", "cef", "heddlework", "stage", "use"]);
    assert!(RecallRequest::from_json(Some(&json!({"query": "x", "queryMode": "phrase", "queryMatch": "all"}))).is_err());
  }

  #[test]
  fn empty_queries_browse_and_phrases_normalize() {
    assert_eq!(plan_of(json!({})), Query::Browse);
    assert_eq!(plan_of(json!({"query": "   "})), Query::Browse);
    let no_terms = RecallRequest::from_json(Some(&json!({"query": "  ...  "}))).unwrap_err();
    assert!(no_terms.to_string().contains("has no terms"), "{no_terms}");
    assert!(
      matches!(plan_of(json!({"query": " Use  ＣＥＦ ", "queryMode": "phrase"})), Query::Phrase { phrase, .. } if phrase == "use  cef")
    );
  }

  #[test]
  fn time_bounds_are_ms_or_iso_dates() {
    assert_eq!(
      RecallRequest::from_json(Some(&json!({"since": "2026-01-01"}))).unwrap().filters.since,
      Some(1_767_225_600_000)
    );
  }

  #[test]
  fn integrity_arguments_need_an_explicit_session() {
    assert!(RecallRequest::from_json(Some(&json!({"entryRange": {"first": 0, "last": 1}}))).is_err());
    assert!(
      RecallRequest::from_json(Some(&json!({"scope": "session:abc", "entryRange": {"first": 0, "last": 1}}))).is_ok()
    );
    assert!(RecallRequest::from_json(Some(&json!({"outcome": "exploded"}))).is_err());
  }
}

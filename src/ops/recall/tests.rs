use super::*;
use crate::coverage::Reason;
use crate::engine::Engine;
use crate::index::record::Tier;
use crate::ops::contract::MAX_ENVELOPE_CHARS;
use crate::ops::expand::{expand, ExpandRequest};
use crate::ops::recall::RecallRequest;
use crate::testing::{AgentDir, CWD};
use crate::text::json_len;
use serde_json::{json, Value};
use std::fs;
use std::path::PathBuf;

type Fixture = AgentDir;

fn fixture() -> Fixture {
  AgentDir::new()
}

/// `(id, parent, message)` records after a header.
fn session(id: &str, records: &[(&str, Option<&str>, Value)]) -> String {
  let mut out = format!("{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"cwd\":\"{CWD}\"}}\n");
  for (entry_id, parent, message) in records {
    let line = json!({"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z", "message": message});
    out += &(line.to_string() + "\n");
  }
  out
}

fn user(text: &str) -> Value {
  json!({"role": "user", "content": text})
}

fn assistant(text: &str) -> Value {
  json!({"role": "assistant", "content": [{"type": "text", "text": text}]})
}

fn chain(texts: &[Value]) -> Vec<(String, Option<String>, Value)> {
  texts.iter().enumerate().map(|(i, m)| (format!("e{i}"), (i > 0).then(|| format!("e{}", i - 1)), m.clone())).collect()
}

trait Sessions {
  fn write(&self, id: &str, messages: &[Value]) -> PathBuf;
}

impl Sessions for Fixture {
  fn write(&self, id: &str, messages: &[Value]) -> PathBuf {
    let records = chain(messages);
    let borrowed: Vec<(&str, Option<&str>, Value)> =
      records.iter().map(|(a, b, c)| (a.as_str(), b.as_deref(), c.clone())).collect();
    let path = self.project.join(format!("{id}.jsonl"));
    fs::write(&path, session(id, &borrowed)).unwrap();
    path
  }
}

fn run(engine: &Engine, args: Value) -> RecallPage {
  recall(engine, &RecallRequest::from_json(Some(&args)).unwrap())
}

fn as_json(page: &RecallPage) -> Value {
  serde_json::to_value(page).unwrap()
}

fn texts_of(engine: &Engine, page: &RecallPage) -> Vec<String> {
  page
    .hits
    .iter()
    .map(|hit| match hit {
      Hit::Entry(entry) => {
        let request = ExpandRequest::from_json(Some(&entry.follow.args)).unwrap();
        expand(engine, &request).entries[0].text.clone()
      }
      Hit::Session(session) => format!("session:{}", session.session_id),
    })
    .collect()
}

#[test]
fn literal_input_is_not_a_regex_but_regex_mode_is() {
  let fx = fixture();
  fx.write("s", &[user("the code 4[0-9] literally"), assistant("code 47 returned"), user("unrelated text")]);
  let engine = fx.engine(json!({}));
  let literal = run(&engine, json!({"query": "code 4[0-9]"}));
  assert_eq!(literal.total, 2);
  assert!(literal.coverage.complete);
  let regex = run(&engine, json!({"query": "code 4[0-9]", "queryMode": "regex"}));
  assert_eq!(texts_of(&engine, &regex), ["code 47 returned"]);
  let path = run(&engine, json!({"query": "src/foo.ts"}));
  assert_eq!(path.total, 0);
}

#[test]
fn phrase_needs_adjacency_and_all_needs_co_location() {
  let fx = fixture();
  fx.write(
    "s",
    &[
      user("We should Use CEF for Stage 1 of the browser, says Heddlework"),
      assistant("use the CEF build later"),
      user("stage 1 is done"),
    ],
  );
  let engine = fx.engine(json!({}));
  let phrase = run(&engine, json!({"query": "use cef", "queryMode": "phrase"}));
  assert_eq!(texts_of(&engine, &phrase), ["We should Use CEF for Stage 1 of the browser, says Heddlework"]);
  let all = run(&engine, json!({"query": "\"Use CEF\" \"Stage 1\" browser Heddlework", "queryMatch": "all"}));
  assert_eq!(all.total, 1);
  let any = run(&engine, json!({"query": "\"Use CEF\" \"Stage 1\" browser Heddlework"}));
  assert_eq!(any.total, 3);
}

#[test]
fn structural_filters_use_typed_fields() {
  let fx = fixture();
  let grep_call = json!({"role": "assistant", "content": [{"type": "toolCall", "id": "t1", "name": "grep", "arguments": {"pattern": "timeout", "path": "src"}}]});
  let grep_result = json!({"role": "toolResult", "toolCallId": "t1", "toolName": "grep", "content": [{"type": "text", "text": "src/a.ts: timeout"}], "isError": false});
  let bash_fail = json!({"role": "toolResult", "toolCallId": "t2", "toolName": "bash", "content": [{"type": "text", "text": "timeout after 5s"}], "isError": true});
  fx.write("s", &[user("why the timeout?"), grep_call, grep_result, bash_fail]);
  let engine = fx.engine(json!({}));
  assert_eq!(run(&engine, json!({"ref": "pi.grep"})).total, 2);
  assert_eq!(run(&engine, json!({"tool": "grep", "role": "toolResult"})).total, 1);
  let failures = run(&engine, json!({"query": "timeout", "provider": "pi", "outcome": "failed"}));
  assert_eq!(texts_of(&engine, &failures), ["toolResult(bash) [error]: timeout after 5s"]);
  assert_eq!(run(&engine, json!({"ref": "agents.run"})).total, 0);
  assert_eq!(run(&engine, json!({"ref": "pi.write"})).total, 0);
}

#[test]
fn prose_ranks_ahead_of_tool_plumbing() {
  let fx = fixture();
  let call = json!({"role": "assistant", "content": [{"type": "toolCall", "id": "t", "name": "fabric_exec", "arguments": {"code": "memory.recall({query: 'database choice'})"}}]});
  fx.write("s", &[call, assistant("Decision: the database choice is Postgres.")]);
  let engine = fx.engine(json!({}));
  let page = run(&engine, json!({"query": "database choice"}));
  assert_eq!(texts_of(&engine, &page)[0], "Decision: the database choice is Postgres.");
}

#[test]
fn broad_queries_page_completely_within_the_envelope() {
  let fx = fixture();
  let messages: Vec<Value> = (0..600).map(|i| user(&format!("timeout report {i} {}", "detail ".repeat(300)))).collect();
  let path = fx.write("big", &messages);
  let engine = fx.engine(json!({"maxEntryChars": 5000}));
  let mut page = run(&engine, json!({"query": "timeout", "scope": "project", "pageSize": 50, "snippetChars": 2000}));
  assert_eq!(page.total, 600);
  assert!(page.hits.len() < 50, "the envelope shrank the page");
  let next = page.next.clone().unwrap();
  assert_eq!(next.args["scope"], json!(format!("session:{}", path.display())));
  assert_eq!(next.args["expectedSourceHash"].as_str().unwrap().len(), 64);
  let mut seen = std::collections::BTreeSet::new();
  loop {
    assert!(json_len(&page) <= MAX_ENVELOPE_CHARS);
    for hit in &page.hits {
      let Hit::Entry(entry) = hit else { panic!("hot entries only") };
      assert!(seen.insert(entry.meta.index), "hit {} repeated", entry.meta.index);
    }
    let Some(next) = page.next.clone() else { break };
    page = recall(&engine, &RecallRequest::from_json(Some(&next.args)).unwrap());
    assert!(page.error.is_none());
  }
  assert_eq!(seen.len(), 600);
  // A continuation is pinned to the session as it was: an append after the
  // first page shifts nothing; a rewrite of a bound byte is stale.
  let first = run(&engine, json!({"query": "timeout", "pageSize": 5}));
  let next = first.next.unwrap().args;
  let before = recall(&engine, &RecallRequest::from_json(Some(&next)).unwrap());
  let original = fs::read_to_string(&path).unwrap();
  let late = json!({"type": "message", "id": "x", "parentId": "e599", "message": user("late timeout timeout")});
  fs::write(&path, original.clone() + &late.to_string() + "\n").unwrap();
  let after = recall(&engine, &RecallRequest::from_json(Some(&next)).unwrap());
  assert!(after.error.is_none(), "{:?}", after.error);
  let indices = |page: &RecallPage| {
    page
      .hits
      .iter()
      .map(|h| match h {
        Hit::Entry(e) => e.meta.index,
        _ => usize::MAX,
      })
      .collect::<Vec<_>>()
  };
  assert_eq!((after.total, indices(&after)), (before.total, indices(&before)));
  assert_eq!(run(&engine, json!({"query": "timeout", "pageSize": 5})).total, 601, "a fresh recall sees the append");
  fs::write(&path, original.replacen("timeout report 3 ", "timeout report 4 ", 1) + &late.to_string() + "\n").unwrap();
  let stale = recall(&engine, &RecallRequest::from_json(Some(&next)).unwrap());
  assert_eq!(stale.error.unwrap().code, "stale_pointer");
  assert!(stale.hits.is_empty() && !stale.coverage.complete);
}

#[test]
fn cold_sessions_are_candidates_that_follow_into_entries() {
  let fx = fixture();
  fx.write("cold", &[user("we saw rarelexeme_042 in prod"), assistant("fixed rarelexeme_042 with a retry")]);
  let engine = fx.engine(json!({"hotSessions": 0}));
  let page = run(&engine, json!({"query": "rarelexeme_042"}));
  assert_eq!(page.total, 1);
  let Hit::Session(hit) = &page.hits[0] else { panic!("a cold hit names a session") };
  assert_eq!((hit.tier, hit.matched_terms.as_slice()), (Tier::Cold, ["rarelexeme_042".to_string()].as_slice()));
  assert_eq!(hit.follow.reference, "memory.recall");
  assert!(hit.follow.args.get("expectedSourceHash").is_some());
  let followed = recall(&engine, &RecallRequest::from_json(Some(&hit.follow.args)).unwrap());
  assert_eq!(followed.total, 2);
  assert!(followed.hits.iter().all(|h| matches!(h, Hit::Entry(e) if e.tier == Tier::Cold)));
  assert!(!fx.agent.join("fabric/memory-index").read_dir().unwrap().any(|f| f
    .unwrap()
    .file_name()
    .to_string_lossy()
    .ends_with(".hot")));
  let ranged = run(
    &engine,
    json!({"scope": hit.follow.args["scope"], "entryRange": {"first": 1, "last": 1}, "query": "rarelexeme_042"}),
  );
  assert_eq!(ranged.total, 1);
  let outside = run(&engine, json!({"scope": hit.follow.args["scope"], "entryRange": {"first": 1, "last": 2}}));
  assert_eq!(outside.error.unwrap().code, "index_out_of_bounds");
}

#[test]
fn a_cold_session_follow_survives_an_append_and_not_a_rewrite() {
  let fx = fixture();
  let path = fx.write("cold", &[user("we saw rarelexeme_042 in prod"), assistant("fixed rarelexeme_042 with a retry")]);
  let engine = fx.engine(json!({"hotSessions": 0}));
  let page = run(&engine, json!({"query": "rarelexeme_042"}));
  let Hit::Session(hit) = &page.hits[0] else { panic!("a cold hit names a session") };
  assert_eq!(hit.follow.args["expectedLineageLeafId"], json!("e1"));
  let original = fs::read_to_string(&path).unwrap();
  // Pi resumes the old session: the user's next message hangs off e1.
  let next = json!({"type": "message", "id": "e2", "parentId": "e1", "timestamp": "2026-01-01T00:00:02.000Z",
    "message": user("and rarelexeme_042 again")});
  fs::write(&path, format!("{original}{next}\n")).unwrap();
  let followed = recall(&engine, &RecallRequest::from_json(Some(&hit.follow.args)).unwrap());
  assert_eq!((followed.error.as_ref().map(|e| e.code), followed.total), (None, 2));
  fs::write(&path, original.replace("in prod", "in test")).unwrap();
  let rewritten = recall(&engine, &RecallRequest::from_json(Some(&hit.follow.args)).unwrap());
  assert_eq!(rewritten.error.unwrap().code, "stale_pointer");
}

#[test]
fn combined_cold_queries_name_the_hydration_requirement() {
  let fx = fixture();
  let failed = json!({"role": "toolResult", "toolCallId": "t", "toolName": "bash", "content": [{"type": "text", "text": "timeout"}], "isError": true});
  fx.write("cold", &[user("timeout in CI"), failed]);
  let engine = fx.engine(json!({"hotSessions": 0}));
  let combined = run(&engine, json!({"query": "timeout", "ref": "pi.bash", "outcome": "failed"}));
  assert_eq!(combined.total, 1);
  assert!(combined.coverage.reasons.contains(&Reason::ColdStructuralFilterRequiresHydration));
  assert!(!combined.coverage.complete);
  let Hit::Session(hit) = &combined.hits[0] else { panic!() };
  assert_eq!(hit.matched_structural_entries, 1);
  let structural = run(&engine, json!({"ref": "pi.bash"}));
  assert!(structural.coverage.complete);
  let phrase = run(&engine, json!({"query": "timeout in", "queryMode": "phrase"}));
  assert_eq!(phrase.coverage.reasons, ["cold_phrase_requires_hydration"]);
}

#[test]
fn identical_calls_give_identical_bytes() {
  let fx = fixture();
  for i in 0..5 {
    fx.write(&format!("s{i}"), &[user("shared words here"), assistant("shared words again")]);
  }
  let engine = fx.engine(json!({"hotSessions": 2}));
  let args = json!({"query": "shared words", "scope": "global"});
  let first = serde_json::to_string(&run(&engine, args.clone())).unwrap();
  assert_eq!(first, serde_json::to_string(&run(&engine, args)).unwrap());
  assert!(first.contains("\"kind\":\"entry\"") && first.contains("\"kind\":\"session\""));
}

#[test]
fn regex_limits_and_errors_are_structured() {
  let fx = fixture();
  fx.write("s", &[user(&"a".repeat(1500)), user("RARELEXEME_123 here")]);
  let engine = fx.engine(json!({"maxEntryChars": 100000, "regexTimeoutMs": 50}));
  let slow = run(&engine, json!({"query": "(a+)+$", "queryMode": "regex"}));
  assert!(slow.error.is_none());
  assert_eq!(slow.total, 1);
  let found = run(&engine, json!({"query": "^rarelexeme_[0-9]{3}", "queryMode": "regex"}));
  assert_eq!(found.total, 1);
  let invalid = run(&engine, json!({"query": "(?=a)", "queryMode": "regex"}));
  let error = invalid.error.clone().unwrap();
  assert_eq!(error.code, "invalid_regex");
  assert_eq!((invalid.total, invalid.coverage.complete), (0, false));
  assert_eq!(as_json(&invalid)["coverage"]["error"]["code"], "invalid_regex");
  let capped = run(&fx.engine(json!({"regexMaxHaystackTerms": 1})), json!({"query": "x", "queryMode": "regex"}));
  assert_eq!(capped.coverage.reasons, ["regex_max_haystack_terms"]);
  let large = run(&fx.engine(json!({"regexMaxPatternBytes": 4})), json!({"query": "abcde", "queryMode": "regex"}));
  assert_eq!(large.error.unwrap().code, "regex_pattern_too_large");
}

#[test]
fn abandoned_siblings_hide_in_active_mode() {
  let fx = fixture();
  let records = [
    ("a", None, user("root question")),
    ("b", Some("a"), assistant("abandonedzebra idea")),
    ("c", Some("a"), assistant("chosen otter idea")),
  ];
  fs::write(fx.project.join("s.jsonl"), session("s", &records)).unwrap();
  let engine = fx.engine(json!({}));
  assert_eq!(run(&engine, json!({"query": "abandonedzebra"})).total, 0);
  let all = run(&engine, json!({"query": "abandonedzebra", "branches": "all"}));
  assert_eq!(all.total, 1);
  let Hit::Entry(hit) = &all.hits[0] else { panic!() };
  assert_eq!(hit.follow.args["branches"], "all");
  let expanded = expand(&engine, &ExpandRequest::from_json(Some(&hit.follow.args)).unwrap());
  assert_eq!(expanded.entries[0].text, "abandonedzebra idea");
}

#[test]
fn browse_lists_every_entry_newest_session_first() {
  let fx = fixture();
  fx.write("one", &[user("first"), assistant("second")]);
  let engine = fx.engine(json!({}));
  let page = run(&engine, json!({}));
  assert_eq!(page.total, 2);
  assert!(page.next.is_none());
  assert!(page.coverage.complete);
}

mod echo;

/// Filters over cold digests: the interned kinds (no time bound) and the
/// addresses themselves (a time bound every address passes) count the same
/// matching entries per session.
#[test]
fn cold_kind_counts_equal_address_counts() {
  let fx = fixture();
  let result = |tool: &str, failed: bool| json!({"role": "toolResult", "toolCallId": "t", "toolName": tool, "content": [{"type": "text", "text": "out"}], "isError": failed});
  fx.write("a", &[user("one"), result("bash", true), result("bash", false), result("read", true)]);
  fx.write("b", &[user("two"), result("read", false), result("read", false)]);
  fx.write("c", &[user("three"), result("bash", true), result("bash", true), result("bash", true)]);
  let engine = fx.engine(json!({"hotSessions": 0}));
  let counts = |args: Value| -> Vec<(String, usize)> {
    let page = run(&engine, args);
    let mut counts: Vec<(String, usize)> = (page.hits.iter())
      .map(|hit| match hit {
        Hit::Session(s) => (s.session_id.clone(), s.matched_structural_entries),
        Hit::Entry(_) => panic!("every session is cold"),
      })
      .collect();
    counts.sort();
    counts
  };
  for filter in [
    json!({"ref": "pi.bash"}),
    json!({"ref": "pi.read"}),
    json!({"outcome": "failed"}),
    json!({"ref": "pi.bash", "outcome": "failed"}),
  ] {
    let mut timed = filter.clone();
    timed["since"] = json!(0);
    let (by_kind, by_address) = (counts(filter.clone()), counts(timed));
    assert!(!by_kind.is_empty(), "{filter}");
    assert_eq!(by_kind, by_address, "{filter}");
  }
  assert_eq!(counts(json!({"ref": "pi.bash", "outcome": "failed"})), [("a".to_string(), 1), ("c".to_string(), 3)]);
}

/// The session ids of a page's hits, in order, each once.
fn sessions_of(page: &RecallPage) -> Vec<String> {
  let mut out: Vec<String> = Vec::new();
  for hit in &page.hits {
    let id = match hit {
      Hit::Entry(entry) => entry.session_id.clone(),
      Hit::Session(session) => session.session_id.clone(),
    };
    if !out.contains(&id) {
      out.push(id);
    }
  }
  out
}

#[test]
fn every_script_and_identifier_part_is_found_in_both_tiers() {
  let fx = fixture();
  fx.write("zh", &[user("我们今天讨论了部署到生产环境的步骤"), assistant("部署用的是kubernetes集群")]);
  fx.write("ja", &[user("東京でデプロイした")]);
  fx.write("ko", &[user("서울에 갔어요")]);
  fx.write("th", &[user("ระบบนี้ทำงานได้ดี")]);
  fx.write("hi", &[user("नमस्ते दुनिया")]);
  fx.write("code", &[assistant("Fixed parseSessionHeader, MAX_RETRY_COUNT and kubernetes_v2")]);
  fx.write("prose", &[assistant("parse the header before the retry")]);
  for hot in [0, 10] {
    let engine = fx.engine(json!({"hotSessions": hot}));
    let found = |query: &str| {
      let page = run(&engine, json!({"query": query, "scope": "project"}));
      assert!(page.coverage.complete, "{query}: {:?}", page.coverage.reasons);
      sessions_of(&page)
    };
    assert_eq!(found("部署"), ["zh"], "hot {hot}");
    assert_eq!(found("集群"), ["zh"]);
    let mut kubernetes = found("kubernetes");
    kubernetes.sort();
    assert_eq!(kubernetes, ["code", "zh"], "a part of an identifier and of a mixed-script word");
    assert_eq!(found("東京"), ["ja"]);
    assert_eq!(found("デプロイ"), ["ja"]);
    assert_eq!(found("서울"), ["ko"]);
    assert_eq!(found("ระบบ"), ["th"]);
    assert_eq!(found("दुनिया"), ["hi"]);
    assert!(found("तैनात").is_empty(), "a word made of another word's letters is no match");
    assert_eq!(found("header"), ["prose", "code"], "a whole word ranks above a part (hot {hot})");
    assert_eq!(found("retry"), ["prose", "code"]);
    assert_eq!(found("parseSessionHeader"), ["code"]);
    assert_eq!(found("MAX_RETRY_COUNT"), ["code"]);
  }
}

#[test]
fn within_a_hot_session_an_entry_with_the_whole_word_ranks_above_one_with_a_part() {
  let fx = fixture();
  fx.write("s", &[user("fixed parseHeader today"), assistant("fixed the header today")]);
  let engine = fx.engine(json!({"hotSessions": 10}));
  let page = run(&engine, json!({"query": "header"}));
  let snippets: Vec<(&str, f64)> = page
    .hits
    .iter()
    .map(|hit| match hit {
      Hit::Entry(entry) => (entry.snippet.as_str(), entry.score),
      Hit::Session(_) => panic!("a hot session answers with entries"),
    })
    .collect();
  assert_eq!(snippets.len(), 2, "{snippets:?}");
  assert!(snippets[0].0.contains("the header"), "{snippets:?}");
  assert!(snippets[0].1 > snippets[1].1, "a part counts less than a whole word: {snippets:?}");
}

#[test]
fn every_word_of_a_cut_entry_is_found_and_only_text_scans_say_it_was_cut() {
  let fx = fixture();
  let log = format!("{} CrashLoopBackOff in pod api-7", "trace line ".repeat(400));
  fx.write("long", &[user("the deploy failed, log below"), assistant(&log)]);
  let engine = fx.engine(json!({"hotSessions": 10, "maxEntryChars": 200}));
  let page = run(&engine, json!({"query": "crashloopbackoff"}));
  assert_eq!(sessions_of(&page), ["long"]);
  assert!(page.coverage.complete, "postings hold the whole entry: {:?}", page.coverage.reasons);
  let none = run(&engine, json!({"query": "absentword"}));
  assert!(none.hits.is_empty() && none.coverage.complete, "a lexical no-match stays authoritative");
  let phrase = run(&engine, json!({"query": "CrashLoopBackOff in pod", "queryMode": "phrase"}));
  assert!(phrase.hits.is_empty());
  assert_eq!(phrase.coverage.reasons, [Reason::MaxEntryChars], "the phrase may stand past the cut");
  let regex = run(&engine, json!({"query": "CrashLoop", "queryMode": "regex"}));
  assert_eq!(regex.coverage.reasons, [Reason::MaxEntryChars]);
  let kept = run(&engine, json!({"query": "deploy failed", "queryMode": "phrase"}));
  assert_eq!((kept.total, kept.coverage.complete), (1, true));
}

/// Sessions in the order they first appear among all of a query's hits.
fn session_order(engine: &Engine, query: &str) -> Vec<String> {
  let page = run(engine, json!({"query": query, "pageSize": 50}));
  assert!(page.total <= 50, "one page holds every hit of {query}");
  sessions_of(&page)
}

#[test]
fn a_session_ranks_the_same_hot_cold_or_mixed() {
  let fx = fixture();
  let bash = |id: &str, command: &str| json!({"role": "assistant", "content": [{"type": "toolCall", "id": id, "name": "bash", "arguments": {"command": command}}]});
  let output = |id: &str, text: &str| json!({"role": "toolResult", "toolCallId": id, "toolName": "bash", "content": [{"type": "text", "text": text}], "isError": false});
  let sessions: Vec<(&str, Vec<Value>)> = vec![
    ("a", vec![user("the uploader times out on large files"), assistant("raised the uploader timeout to 30 s")]),
    (
      "b",
      vec![
        user("why does the deploy fail"),
        bash("c1", "kubectl rollout status"),
        output("c1", "timeout waiting for rollout"),
      ],
    ),
    ("c", vec![user("timeout timeout timeout in the retry loop"), assistant("the retry loop had no backoff")]),
    ("d", vec![assistant(&format!("a long report {} with one timeout at the end", "of many words ".repeat(300)))]),
    ("e", vec![user("parseSessionHeader fails on v1 files"), assistant("parse the header before the entries")]),
    (
      "f",
      vec![
        user("the photos upload with the wrong content type"),
        assistant("set the uploader content type from the file"),
      ],
    ),
    ("g", vec![user("unrelated chat about lunch"), assistant("pizza it is")]),
    ("h", vec![user("部署到生产环境的步骤"), assistant("deploy steps written down")]),
  ];
  for (id, messages) in &sessions {
    fx.write(id, messages);
  }
  let queries = ["timeout", "uploader timeout", "header", "deploy", "部署", "retry backoff", "content type uploader"];
  let orders = |hot: i64| -> Vec<Vec<String>> {
    let engine = fx.engine(json!({"hotSessions": hot}));
    queries.iter().map(|query| session_order(&engine, query)).collect()
  };
  let cold = orders(0);
  assert_eq!(cold[0][..2], ["c".to_string(), "a".to_string()], "the session that is about it leads: {:?}", cold[0]);
  assert_eq!(orders(3), cold, "some sessions hot");
  assert_eq!(orders(100), cold, "every session hot");
}

//! Recall does not find itself: this package's own tool results and the
//! turn in progress are not evidence.

use super::*;
use crate::engine::Live;
use crate::session::lineage::LiveBranch;
use std::path::Path;

fn tool_call(id: &str, name: &str, args: Value) -> Value {
  json!({"role": "assistant", "content": [{"type": "toolCall", "id": id, "name": name, "arguments": args}]})
}

fn tool_result(id: &str, name: &str, text: &str) -> Value {
  json!({"role": "toolResult", "toolCallId": id, "toolName": name, "content": [{"type": "text", "text": text}], "isError": false})
}

/// An earlier turn that recalled "bluefinch", and the turn asking again.
fn echoing_session(fx: &Fixture) -> PathBuf {
  let echo = format!("{{\"hits\":[{{\"snippet\":\"the bluefinch nests here\"}}],\"pad\":\"{}\"}}", "x".repeat(5000));
  fx.write(
    "s",
    &[
      user("the bluefinch nests here"),
      assistant("noted"),
      user("where does it nest?"),
      tool_call("c1", "memory_recall", json!({"query": "nest"})),
      tool_result("c1", "memory_recall", &echo),
      tool_result("c2", "memory_read", "bluefinch facts from MEMORY.md"),
      assistant("it nests here"),
      user("recall bluefinch"),
      tool_call("c3", "memory_recall", json!({"query": "bluefinch"})),
    ],
  )
}

fn live(engine: &Engine, path: &Path, entries: usize) -> Engine {
  let ids: Vec<String> = (0..entries).map(|i| format!("e{i}")).collect();
  engine.with_live(Some(Live { file: path.to_path_buf(), branch: LiveBranch { leaf_id: ids.last().cloned(), ids } }))
}

/// The entry indices of a page's hits, as a set (ranking is not the point here).
fn indices(page: &RecallPage) -> std::collections::BTreeSet<usize> {
  page.hits.iter().map(|hit| if let Hit::Entry(e) = hit { e.meta.index } else { usize::MAX }).collect()
}

#[test]
fn own_tool_results_are_not_evidence_by_default() {
  let fx = fixture();
  echoing_session(&fx);
  let engine = fx.engine(json!({"recallCurrentTurn": true}));
  let page = run(&engine, json!({"query": "bluefinch"}));
  // The fact alone: not the own results at 4 and 5, nor the prompt that only
  // asked to recall (7) and its call (8).
  assert_eq!(indices(&page), [0].into());
  assert!(page.coverage.complete, "a long own result is not a truncated entry: {:?}", page.coverage);
  // They stay structurally findable and fully expandable.
  let calls = run(&engine, json!({"ref": "memory.recall"}));
  assert_eq!(indices(&calls), [3, 4, 8].into());
  let read = run(&engine, json!({"ref": "memory.read", "role": "toolResult"}));
  assert_eq!(indices(&read), [5].into());
  let expanded = expand(&engine, &ExpandRequest::from_json(Some(&json!({"session": "s", "indices": [4]}))).unwrap());
  assert!(expanded.entries[0].text.contains("the bluefinch nests here"));
  let switched = fx.engine(json!({"recallCurrentTurn": true, "indexOwnToolResults": true}));
  let echoes = run(&switched, json!({"query": "bluefinch"}));
  assert_eq!(indices(&echoes), [0, 4, 5, 7, 8].into());
}

#[test]
fn the_turn_in_progress_is_left_out_of_live_recall() {
  let fx = fixture();
  let path = echoing_session(&fx);
  // Echoes kept, so what leaves the turn in progress out is the live rule.
  let config = json!({"indexOwnToolResults": true});
  let engine = live(&fx.engine(config.clone()), &path, 9);
  assert_eq!(indices(&run(&engine, json!({"query": "bluefinch", "scope": "session"}))), [0, 4, 5].into());
  assert_eq!(indices(&run(&engine, json!({"query": "bluefinch", "branches": "all"}))), [0, 4, 5].into());
  // Expansion still reads it; other sessions and a switch see it.
  let current = expand(&engine, &ExpandRequest::from_json(Some(&json!({"indices": [7]}))).unwrap());
  assert_eq!(current.entries[0].text, "recall bluefinch");
  assert_eq!(indices(&run(&fx.engine(config), json!({"query": "bluefinch"}))), [0, 4, 5, 7, 8].into());
  let switched = live(&fx.engine(json!({"recallCurrentTurn": true, "indexOwnToolResults": true})), &path, 9);
  assert_eq!(indices(&run(&switched, json!({"query": "bluefinch", "scope": "session"}))), [0, 4, 5, 7, 8].into());
}

#[test]
fn a_recall_request_is_no_evidence_in_either_tier() {
  let fx = fixture();
  fx.write("fact", &[user("the bluefinch is the release codename"), assistant("noted")]);
  let mut asks = Vec::new();
  for turn in 0..4 {
    asks.push(user("recall bluefinch"));
    asks.push(tool_call(&format!("c{turn}"), "memory_recall", json!({"query": "bluefinch"})));
    asks.push(tool_result(&format!("c{turn}"), "memory_recall", "{\"hits\":[]}"));
    asks.push(assistant("done"));
  }
  fx.write("asks", &asks);
  for hot in [0, 10] {
    let engine = fx.engine(json!({"hotSessions": hot}));
    let page = run(&engine, json!({"query": "bluefinch"}));
    assert_eq!(sessions_of(&page), ["fact"], "hot {hot}");
    assert!(page.coverage.complete);
    // Structurally the calls are still there: four entries, or one cold candidate.
    let calls = run(&engine, json!({"ref": "memory.recall", "role": "assistant"}));
    assert_eq!(calls.total, if hot == 0 { 1 } else { 4 });
    let switched = fx.engine(json!({"hotSessions": hot, "indexOwnToolResults": true}));
    let mut echoed = sessions_of(&run(&switched, json!({"query": "bluefinch"})));
    echoed.sort();
    assert_eq!(echoed, ["asks", "fact"], "indexOwnToolResults keeps them (hot {hot})");
  }
}

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
  // The first prompt, the current prompt and the current recall call, never the echoes at 4 and 5.
  assert_eq!(indices(&page), [0, 7, 8].into());
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
  let engine = live(&fx.engine(json!({})), &path, 9);
  assert_eq!(indices(&run(&engine, json!({"query": "bluefinch", "scope": "session"}))), [0].into());
  assert_eq!(indices(&run(&engine, json!({"query": "bluefinch", "branches": "all"}))), [0].into());
  // Expansion still reads it; other sessions and a switch see it.
  let current = expand(&engine, &ExpandRequest::from_json(Some(&json!({"indices": [7]}))).unwrap());
  assert_eq!(current.entries[0].text, "recall bluefinch");
  assert_eq!(indices(&run(&fx.engine(json!({})), json!({"query": "bluefinch"}))), [0, 7, 8].into());
  let switched = live(&fx.engine(json!({"recallCurrentTurn": true})), &path, 9);
  assert_eq!(indices(&run(&switched, json!({"query": "bluefinch", "scope": "session"}))), [0, 7, 8].into());
}

use super::*;
use crate::error::ErrorCode;
use crate::ops::expand::{expand, ExpandRequest};
use crate::ops::recall::{recall, RecallRequest};
use crate::ops::sessions::{sessions, SessionsRequest};
use crate::testing::{AgentDir, CWD};
use serde_json::json;
use std::fs;
use std::path::PathBuf;

/// A session with one user turn and one answer.
fn write(dir: &AgentDir, id: &str, minute: u32, answer: &str) -> PathBuf {
  let header = json!({"type": "session", "version": 3, "id": id, "cwd": CWD});
  let stamp = |i: u32| format!("2026-01-01T00:{minute:02}:{i:02}.000Z");
  let user = json!({"type": "message", "id": format!("{id}-0"), "parentId": null, "timestamp": stamp(0),
    "message": {"role": "user", "content": "what did we decide?"}});
  let assistant = json!({"type": "message", "id": format!("{id}-1"), "parentId": format!("{id}-0"), "timestamp": stamp(1),
    "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]}});
  let path = dir.project.join(format!("{id}.jsonl"));
  fs::write(&path, format!("{header}\n{user}\n{assistant}\n")).unwrap();
  path
}

fn found(engine: &Engine, query: &str, scope: &str) -> usize {
  let request = RecallRequest::from_json(Some(&json!({"query": query, "scope": scope}))).unwrap();
  let page = recall(engine, &request);
  assert!(page.error.is_none(), "{:?}", page.error);
  page.total
}

/// Index files named for `path` (its records, any tier and mode).
fn records_of(engine: &Engine, path: &std::path::Path) -> usize {
  let base = crate::index::record::base_name(path);
  fs::read_dir(engine.index_dir())
    .unwrap()
    .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with(&base))
    .count()
}

/// Does any file of the index dir hold `word`'s bytes?
fn index_holds(engine: &Engine, word: &[u8]) -> bool {
  fs::read_dir(engine.index_dir())
    .unwrap()
    .filter_map(|e| fs::read(e.unwrap().path()).ok())
    .any(|bytes| bytes.windows(word.len()).any(|w| w == word))
}

fn forget_request(session: &str) -> ForgetRequest {
  ForgetRequest::from_json("memory.forget", Some(&json!({ "session": session }))).unwrap()
}

#[test]
fn a_forgotten_session_leaves_every_answer_and_the_index_dir_until_unforget() {
  // Hot sessions answer by entry, cold ones by session: after the append the secret is in two entries.
  for (config, back_after_append) in [(json!({}), 2), (json!({"hotSessions": 0}), 1)] {
    let dir = AgentDir::new();
    let secret = write(&dir, "0190aaaa-0000-7000-8000-00000000000a", 1, "The zanzibar password is hunter2.");
    write(&dir, "0190bbbb-0000-7000-8000-00000000000b", 2, "The zanzibar deploy runs at noon.");
    let engine = dir.engine(config.clone());
    assert_eq!(found(&engine, "hunter2", "global"), 1, "{config}");
    assert_eq!(found(&engine, "zanzibar", "project"), 2, "{config}");
    assert!(records_of(&engine, &secret) > 0, "{config}");
    assert!(index_holds(&engine, b"hunter2"), "{config}: the check below can fail");

    let result = forget(&engine, &forget_request("0190aaaa"));
    assert!(result.error.is_none(), "{:?}", result.error);
    assert_eq!(result.changed.len(), 1);
    assert!(result.records_removed > 0, "{config}");
    assert_eq!(records_of(&engine, &secret), 0, "{config}");
    // No other index file holds its words either (heads and dictionary rewritten without it).
    assert!(!index_holds(&engine, b"hunter2"), "{config}");
    // Every scope, and a fresh engine (another process) too.
    for engine in [&engine, &dir.engine(config.clone())] {
      assert_eq!(found(engine, "hunter2", "global"), 0, "{config}");
      assert_eq!(found(engine, "zanzibar", "project"), 1, "{config}");
      let listed = sessions(engine, &SessionsRequest::from_json(Some(&json!({"scope": "global"}))).unwrap());
      assert_eq!(listed.sessions.len(), 1);
      let named =
        ExpandRequest::from_json(Some(&json!({"session": secret.to_string_lossy(), "indices": [1]}))).unwrap();
      assert_eq!(expand(engine, &named).error.map(|e| e.code), Some(ErrorCode::SessionForgotten));
      let explicit = RecallRequest::from_json(Some(&json!({"query": "hunter2", "scope": "session:0190aaaa"}))).unwrap();
      assert_eq!(recall(engine, &explicit).error.map(|e| e.code), Some(ErrorCode::SessionForgotten));
    }
    // An append keeps it forgotten (by file), and no record is built for it.
    let mut text = fs::read_to_string(&secret).unwrap();
    text.push_str(
      &(json!({"type": "message", "id": "x-2", "parentId": "0190aaaa-0000-7000-8000-00000000000a-1",
      "timestamp": "2026-01-01T00:09:00.000Z", "message": {"role": "user", "content": "hunter2 again"}})
      .to_string()
        + "\n"),
    );
    fs::write(&secret, text).unwrap();
    assert_eq!(found(&engine, "hunter2", "global"), 0, "{config}");
    assert_eq!(records_of(&engine, &secret), 0, "{config}");

    let back = unforget(&engine, &forget_request("0190aaaa"));
    assert_eq!(back.changed.len(), 1);
    assert!(back.forgotten.is_empty());
    assert_eq!(found(&engine, "hunter2", "global"), back_after_append, "{config}");
    assert!(list(&engine).forgotten.is_empty());
  }
}

#[test]
fn forgetting_what_no_session_is_names_the_error_and_writes_nothing() {
  let dir = AgentDir::new();
  write(&dir, "0190aaaa-0000-7000-8000-00000000000a", 1, "nothing here");
  let engine = dir.engine(json!({}));
  let result = forget(&engine, &forget_request("no-such-session"));
  assert_eq!(result.error.map(|e| e.code), Some(ErrorCode::SessionNotFound));
  assert!(!crate::forgotten::path(&engine.agent_dir).exists());
  assert_eq!(unforget(&engine, &forget_request("0190aaaa")).error.map(|e| e.code), Some(ErrorCode::SessionNotFound));
  assert!(ForgetRequest::from_json("memory.forget", Some(&json!({}))).is_err());
  assert!(ForgetRequest::from_json("memory.forget", Some(&json!({"session": "x", "other": 1}))).is_err());
}

#[test]
fn an_unreadable_list_fails_recall_closed() {
  let dir = AgentDir::new();
  write(&dir, "0190aaaa-0000-7000-8000-00000000000a", 1, "The zanzibar password is hunter2.");
  let engine = dir.engine(json!({}));
  assert_eq!(found(&engine, "hunter2", "global"), 1);
  let file = crate::forgotten::path(&engine.agent_dir);
  fs::create_dir_all(file.parent().unwrap()).unwrap();
  fs::write(&file, "{broken").unwrap();
  let request = RecallRequest::from_json(Some(&json!({"query": "hunter2", "scope": "global"}))).unwrap();
  let page = recall(&engine, &request);
  assert_eq!(page.error.map(|e| e.code), Some(ErrorCode::ForgottenUnreadable));
  assert_eq!(page.total, 0);
  assert_eq!(list(&engine).error.map(|e| e.code), Some(ErrorCode::ForgottenUnreadable));
}

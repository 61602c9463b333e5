//! Hardening tests that cross modules (issue 11): hostile files named as
//! sessions, and bounds on what any call reads or returns.

use crate::engine::Engine;
use crate::expand::{expand, ExpandRequest};
use crate::query::plan::RecallRequest;
use crate::query::recall;
use crate::testing::{within, AgentDir, CWD};
use serde_json::{json, Value};
use std::fs;
use std::path::PathBuf;

fn session_file(fx: &AgentDir, name: &str) -> PathBuf {
  let path = fx.project.join(name);
  let header = format!("{{\"type\":\"session\",\"version\":3,\"id\":\"big\",\"cwd\":\"{CWD}\"}}\n");
  let line = json!({"type":"message","id":"e0","parentId":null,"message":{"role":"user","content":"needle"}});
  fs::write(&path, format!("{header}{line}\n")).unwrap();
  path
}

fn recall_json(engine: &Engine, args: Value) -> Value {
  serde_json::to_value(recall(engine, &RecallRequest::from_json(Some(&args)).unwrap())).unwrap()
}

fn expand_json(engine: &Engine, args: Value) -> Value {
  serde_json::to_value(expand(engine, &ExpandRequest::from_json(Some(&args)).unwrap())).unwrap()
}

#[test]
fn a_session_over_the_read_bound_is_refused_unread_by_recall_and_expand() {
  let fx = AgentDir::new();
  let path = session_file(&fx, "big.jsonl");
  // 64 MiB of sparse padding after a valid first record; the bound is 1 MiB.
  fs::File::options().write(true).open(&path).unwrap().set_len(64 << 20).unwrap();
  let engine = fx.engine(json!({"maxSyncSourceBytes": 1 << 20}));
  let file = path.to_str().unwrap().to_string();
  let (recalled, expanded) = {
    let engine = engine.clone();
    within(30, move || {
      let scope = format!("session:{file}");
      (recall_json(&engine, json!({"query": "needle", "scope": scope})), expand_json(&engine, json!({"session": file})))
    })
  };
  for page in [&recalled, &expanded] {
    let error = &page["error"];
    assert_eq!(error["code"], "source_unavailable", "{page}");
    assert_eq!(
      (error["reason"].as_str(), error["size"].as_u64(), error["limit"].as_u64()),
      (Some("file_too_large"), Some(64 << 20), Some(1 << 20))
    );
  }
  let global = recall_json(&engine, json!({"query": "needle", "scope": "global"}));
  assert_eq!(global["coverage"]["reasons"], json!(["max_sync_source_bytes"]), "{global}");
}

#[cfg(target_os = "linux")]
#[test]
fn proc_files_named_as_sessions_are_never_read() {
  let fx = AgentDir::new();
  let engine = fx.engine(json!({}));
  // /proc/kmsg blocks (and consumes the kernel log) for root; never read.
  for target in ["/proc/kmsg", "/proc/self/status"] {
    if fs::metadata(target).is_err() {
      continue;
    }
    let engine = engine.clone();
    let scope = format!("session:{target}");
    let page = within(20, move || recall_json(&engine, json!({"query": "x", "scope": scope})));
    assert!(page["error"]["code"].is_string(), "{target}: {page}");
  }
}

//! Hardening tests that cross modules (issue 11): hostile files named as
//! sessions, and bounds on what any call reads or returns.

use crate::engine::Engine;
use crate::ops::expand::{expand, ExpandRequest};
use crate::ops::recall::recall;
use crate::ops::recall::RecallRequest;
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

mod decoding_as_pi {
  use super::*;
  use crate::index::sync;
  use crate::session::discover::Scope;
  use crate::session::entry::Policy;
  use crate::session::lineage::Branches;

  const HEADER: &str = "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"cwd\":\"/home/u/proj\"}\n";

  fn write(fx: &AgentDir, lines: &[&[u8]]) -> PathBuf {
    let path = fx.project.join("s.jsonl");
    let mut bytes = HEADER.as_bytes().to_vec();
    for line in lines {
      bytes.extend_from_slice(line);
      bytes.push(b'\n');
    }
    fs::write(&path, bytes).unwrap();
    path
  }

  /// (entry id, text) of the active branch, and the view's reasons.
  fn active(path: &std::path::Path) -> (Vec<(String, String)>, Vec<&'static str>) {
    let policy =
      Policy { index_thinking: false, index_tool_output: true, max_entry_chars: None, index_own_results: true };
    let view = crate::session::load(
      path,
      Branches::Active,
      None,
      crate::session::Reading { policy: &policy, forgotten: &Default::default(), max_bytes: 1 << 20 },
    )
    .unwrap();
    let entries =
      view.normalized.entries.iter().map(|e| (e.entry_id.clone().unwrap_or_default(), e.text.clone())).collect();
    (entries, view.normalized.reasons.iter().map(|r| r.as_str()).collect())
  }

  fn message(id: &str, parent: Option<&str>, content: &str) -> Vec<u8> {
    json!({"type":"message","id":id,"parentId":parent,"message":{"role":"user","content":content}})
      .to_string()
      .into_bytes()
  }

  #[test]
  fn a_lone_surrogate_escape_keeps_the_text_with_a_replacement_character() {
    let fx = AgentDir::new();
    // What Node writes for a string cut in the middle of an emoji.
    let cut =
      br#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"deploy failed \ud83d"}}"#;
    let path = write(&fx, &[cut, &message("b", Some("a"), "next")]);
    let (entries, reasons) = active(&path);
    assert_eq!(entries, [("a".into(), "deploy failed \u{FFFD}".into()), ("b".into(), "next".into())]);
    assert_eq!(reasons, ["lone_surrogate_replaced"]);
    let synced = sync(&fx.engine(json!({})).index_context(), &Scope::Global, Branches::Active).unwrap();
    assert_eq!(synced.coverage.reasons, ["lone_surrogate_replaced"]);
  }

  #[test]
  fn an_invalid_utf8_byte_keeps_the_record_and_the_branch_behind_it() {
    let fx = AgentDir::new();
    let mut bad = message("b", Some("a"), "caf\u{e9} X");
    let at = bad.windows(2).position(|w| w == "\u{e9}".as_bytes()).unwrap();
    bad.splice(at..at + 2, [0xE9]); // Latin-1 é: not UTF-8
    let path = write(&fx, &[&message("a", None, "first"), &bad, &message("c", Some("b"), "last")]);
    let (entries, reasons) = active(&path);
    let expected: Vec<(String, String)> = [("a", "first"), ("b", "caf\u{FFFD} X"), ("c", "last")]
      .iter()
      .map(|(a, b)| (a.to_string(), b.to_string()))
      .collect();
    assert_eq!(entries, expected);
    assert_eq!(reasons, ["invalid_utf8_replaced"]);
  }

  #[test]
  fn a_duplicated_key_keeps_its_last_value_as_javascript_does() {
    let fx = AgentDir::new();
    let lines: [&[u8]; 3] = [
      br#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"old","content":"new"}}"#,
      br#"{"type":"message","id":"x","id":"b","parentId":"a","message":{"role":"assistant","content":[{"type":"text","text":"t1","text":"t2"}]}}"#,
      br#"{"type":"message","id":"c","parentId":"zz","parentId":"b","message":{"role":"user","role":"user","content":"end"}}"#,
    ];
    let path = write(&fx, &lines);
    let (entries, reasons) = active(&path);
    let expected: Vec<(String, String)> =
      [("a", "new"), ("b", "t2"), ("c", "end")].iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
    assert_eq!(entries, expected);
    assert!(reasons.is_empty(), "{reasons:?}");
  }
}

#[test]
fn errors_echoing_a_long_id_stay_within_the_envelope() {
  use crate::ops::contract::MAX_ENVELOPE_CHARS;
  use crate::ops::sessions::{sessions, SessionsRequest};
  use crate::text::json_len;
  let fx = AgentDir::new();
  let engine = fx.engine(json!({}));
  let id = "\"é".repeat(20_000);
  let expanded = expand(&engine, &ExpandRequest::from_json(Some(&json!({"session": id}))).unwrap());
  let recalled =
    recall(&engine, &RecallRequest::from_json(Some(&json!({"query": "x", "scope": format!("session:{id}")}))).unwrap());
  let listed =
    sessions(&engine, &SessionsRequest::from_json(Some(&json!({"scope": format!("session:{id}")}))).unwrap());
  let pages = [bounded(&expanded), bounded(&recalled), bounded(&listed)];
  assert!(json_len(&expanded) > MAX_ENVELOPE_CHARS, "the raw page echoes the id several times");
  for page in &pages {
    assert!(json_len(page) <= MAX_ENVELOPE_CHARS, "{} chars", json_len(page));
    assert_eq!(page["error"]["code"], "session_not_found", "{page:.200}");
  }
}

#[cfg(unix)]
#[test]
fn a_named_path_that_is_not_a_regular_file_is_source_unavailable_not_not_found() {
  use crate::ops::sessions::{sessions, SessionsRequest};
  let fx = AgentDir::new();
  let engine = fx.engine(json!({}));
  let fifo = fx.project.join("fifo.jsonl");
  crate::testing::mkfifo(&fifo);
  let dir = fx.project.join("dir.jsonl");
  fs::create_dir(&dir).unwrap();
  for path in [fifo, dir, PathBuf::from("/dev/null")] {
    let file = path.to_str().unwrap().to_string();
    let pages = {
      let (engine, file) = (engine.clone(), file.clone());
      within(20, move || {
        let scope = format!("session:{file}");
        let listed = sessions(&engine, &SessionsRequest::from_json(Some(&json!({"scope": scope}))).unwrap());
        [
          recall_json(&engine, json!({"query": "x", "scope": scope})),
          expand_json(&engine, json!({"session": file})),
          bounded(&listed),
        ]
      })
    };
    for page in &pages {
      let error = &page["error"];
      assert_eq!(error["code"], "source_unavailable", "{page}");
      assert_eq!((error["reason"].as_str(), error["sessionFile"].as_str()), (Some("not_regular_file"), Some(&*file)));
    }
    for page in [&pages[0], &pages[2]] {
      assert_eq!(page["coverage"]["unavailableSessions"], 1, "{page}");
      assert_eq!(page["coverage"]["reasons"], json!(["source_unavailable"]), "{page}");
    }
  }
  // A readable file that is not a Pi session is still not found.
  let other = fx.project.join("notes.jsonl");
  fs::write(&other, "{\"type\":\"note\"}\n").unwrap();
  let page = expand_json(&engine, json!({"session": other.to_str().unwrap()}));
  assert_eq!(page["error"]["code"], "session_not_found", "{page}");
}

/// What the napi edge hands JS, as a value.
fn bounded<T: serde::Serialize>(result: &T) -> serde_json::Value {
  serde_json::from_str(&crate::ops::envelope::bounded(result).unwrap()).unwrap()
}

//! Follow calls through recall and expansion, across appends, rewrites and
//! branch changes.

use crate::engine::{Engine, Live};
use crate::ops::expand::{expand, ExpandPage, ExpandRequest};
use crate::ops::recall::RecallRequest;
use crate::ops::recall::{recall, Hit, RecallPage};
use crate::session::lineage::LiveBranch;
use crate::testing::{AgentDir, CWD};
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};

fn line(id: &str, parent: Option<&str>, role: &str, text: &str) -> String {
  let message = json!({"role": role, "content": [{"type": "text", "text": text}]});
  json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z", "message": message})
    .to_string()
    + "\n"
}

fn header() -> String {
  json!({"type": "session", "version": 3, "id": "s1", "cwd": CWD}).to_string() + "\n"
}

fn write(dir: &AgentDir, text: &str) -> PathBuf {
  let path = dir.project.join("s1.jsonl");
  fs::write(&path, text).unwrap();
  path
}

fn append(path: &Path, text: &str) {
  let mut old = fs::read_to_string(path).unwrap();
  old.push_str(text);
  fs::write(path, old).unwrap();
}

fn live<S: AsRef<str>>(engine: &Engine, path: &Path, ids: &[S]) -> Engine {
  let ids: Vec<String> = ids.iter().map(|s| s.as_ref().to_string()).collect();
  engine.with_live(Some(Live { file: path.to_path_buf(), branch: LiveBranch { leaf_id: ids.last().cloned(), ids } }))
}

/// These tests are about pointers, so recall may see the turn in progress.
fn engine(dir: &AgentDir) -> Engine {
  dir.engine(json!({"recallCurrentTurn": true}))
}

fn recall_of(engine: &Engine, args: Value) -> RecallPage {
  recall(engine, &RecallRequest::from_json(Some(&args)).unwrap())
}

fn expand_of(engine: &Engine, args: &Value) -> ExpandPage {
  expand(engine, &ExpandRequest::from_json(Some(args)).unwrap())
}

fn first_follow(page: &RecallPage) -> Value {
  match &page.hits[0] {
    Hit::Entry(hit) => hit.follow.args.clone(),
    Hit::Session(_) => panic!("an entry hit"),
  }
}

/// A live session: the user asked, the assistant answered, then the next turn.
fn conversation(dir: &AgentDir) -> PathBuf {
  write(
    dir,
    &(header()
      + &line("u1", None, "user", "remember the bluefinch")
      + &line("a1", Some("u1"), "assistant", "noted")
      + &line("u2", Some("a1"), "user", "what now")),
  )
}

#[test]
fn a_live_follow_survives_the_next_turn() {
  let dir = AgentDir::new();
  let path = conversation(&dir);
  let turn1 = live(&engine(&dir), &path, &["u1", "a1", "u2"]);
  let follow = first_follow(&recall_of(&turn1, json!({"query": "bluefinch", "scope": "session"})));
  assert_eq!(follow["expectedLineageLeafId"], json!("u1"));
  assert_eq!(follow["expectedSourceBytes"], json!(fs::metadata(&path).unwrap().len()));
  // Pi appends the assistant's reply and the next turn before the follow.
  append(&path, &(line("a2", Some("u2"), "assistant", "ok") + &line("u3", Some("a2"), "user", "go on")));
  let turn2 = live(&turn1, &path, &["u1", "a1", "u2", "a2", "u3"]);
  let page = expand_of(&turn2, &follow);
  assert!(page.error.is_none(), "{:?}", page.error);
  assert_eq!(page.entries[0].text, "remember the bluefinch");
  // Context after the entry reads the session as it is now.
  let mut around = follow.clone();
  around["after"] = json!(4);
  let around = expand_of(&turn2, &around);
  assert!(around.error.is_none(), "{:?}", around.error);
  assert_eq!(around.entries.len(), 5);
}

/// The conversation, an engine over it and the follow call of its reply.
fn follow_of_the_reply(dir: &AgentDir) -> (PathBuf, Engine, Value) {
  let path = conversation(dir);
  let engine = engine(dir);
  let follow = first_follow(&recall_of(&engine, json!({"query": "noted", "scope": "session"})));
  (path, engine, follow)
}

#[test]
fn a_same_size_rewrite_of_an_earlier_line_is_stale() {
  let dir = AgentDir::new();
  let (path, engine, follow) = follow_of_the_reply(&dir);
  append(&path, &line("a2", Some("u2"), "assistant", "later"));
  let text = fs::read_to_string(&path).unwrap();
  // "remember" → "rememBer": before the bound entry, same size.
  fs::write(&path, text.replacen("remember", "rememBer", 1)).unwrap();
  let page = expand_of(&engine, &follow);
  assert_eq!(page.error.as_ref().unwrap().code, "stale_pointer");
  assert!(page.entries.is_empty());
}

#[test]
fn navigating_away_is_stale_under_active_and_readable_under_all() {
  let dir = AgentDir::new();
  let path = conversation(&dir);
  let engine = engine(&dir);
  let on_branch = live(&engine, &path, &["u1", "a1", "u2"]);
  let active = first_follow(&recall_of(&on_branch, json!({"query": "now", "scope": "session"})));
  let all = first_follow(&recall_of(&on_branch, json!({"query": "now", "scope": "session", "branches": "all"})));
  // /tree back to a1, then a new prompt on the sibling branch.
  append(&path, &line("u2b", Some("a1"), "user", "another way"));
  let navigated = live(&engine, &path, &["u1", "a1", "u2b"]);
  let page = expand_of(&navigated, &active);
  let error = page.error.unwrap();
  assert_eq!(
    (error.code.as_str(), error.message.as_str()),
    ("stale_pointer", "The pointer's entry is no longer on the active branch.")
  );
  assert!(page.entries.is_empty());
  let readable = expand_of(&navigated, &all);
  assert!(readable.error.is_none(), "{:?}", readable.error);
  assert_eq!(readable.entries[0].text, "what now");
  // Still on the branch: the entry's own lineage is unchanged.
  let earlier = first_follow(&recall_of(&on_branch, json!({"query": "bluefinch", "scope": "session"})));
  assert_eq!(expand_of(&navigated, &earlier).entries[0].text, "remember the bluefinch");
}

#[test]
fn tokens_without_a_prefix_keep_their_whole_file_meaning() {
  let dir = AgentDir::new();
  let path = conversation(&dir);
  let engine = engine(&dir);
  let page = expand_of(&engine, &json!({"indices": [0], "session": "s1"}));
  let old = json!({
    "session": "s1", "indices": [0],
    "expectedSourceHash": page.source_hash, "expectedLineageFingerprint": page.lineage_fingerprint,
  });
  assert!(expand_of(&engine, &old).error.is_none());
  append(&path, &line("a2", Some("u2"), "assistant", "later"));
  let stale = expand_of(&engine, &old).error.unwrap();
  assert_eq!(stale.code, "stale_pointer");
}

#[test]
fn moved_entries_and_short_files_are_stale() {
  let dir = AgentDir::new();
  let (path, engine, follow) = follow_of_the_reply(&dir);
  let mut moved = follow.clone();
  moved["indices"] = json!([0]);
  assert_eq!(expand_of(&engine, &moved).error.unwrap().message, "The pointer's entries moved after it was issued.");
  let text = fs::read_to_string(&path).unwrap();
  fs::write(&path, &text[..text.len() - 10]).unwrap();
  assert_eq!(expand_of(&engine, &follow).error.unwrap().code, "stale_pointer");
}

#[test]
fn a_prefix_needs_its_hash_and_a_leaf_its_fingerprint() {
  for bad in [
    json!({"indices": [0], "expectedSourceBytes": 10}),
    json!({"indices": [0], "expectedLineageLeafId": "a"}),
    json!({"indices": [0], "expectedSourceBytes": -1, "expectedSourceHash": "x"}),
  ] {
    assert_eq!(ExpandRequest::from_json(Some(&bad)).unwrap_err().code(), "invalid_argument", "{bad}");
  }
}

#[test]
fn a_pinned_page_stream_neither_loses_nor_repeats_while_the_session_grows() {
  let dir = AgentDir::new();
  let mut text = header();
  let mut ids = Vec::new();
  for i in 0..30 {
    let id = format!("e{i}");
    text += &line(&id, (i > 0).then(|| format!("e{}", i - 1)).as_deref(), "user", &format!("kestrel sighting {i}"));
    ids.push(id);
  }
  let path = write(&dir, &text);
  let engine = engine(&dir);
  let mut page = recall_of(&live(&engine, &path, &ids), json!({"query": "kestrel", "pageSize": 7}));
  let mut seen = Vec::new();
  let mut grown = 30;
  loop {
    for hit in &page.hits {
      let Hit::Entry(hit) = hit else { panic!("entries") };
      seen.push(hit.meta.index);
    }
    let Some(next) = page.next.clone() else { break };
    // Each turn appends another matching entry before the next page.
    let id = format!("e{grown}");
    append(&path, &line(&id, Some(&format!("e{}", grown - 1)), "user", &format!("kestrel sighting {grown}")));
    ids.push(id);
    grown += 1;
    page = recall_of(&live(&engine, &path, &ids), next.args);
    assert!(page.error.is_none(), "{:?}", page.error);
  }
  let mut sorted = seen.clone();
  sorted.sort_unstable();
  sorted.dedup();
  assert_eq!(sorted.len(), seen.len(), "no hit repeats: {seen:?}");
  assert_eq!(sorted, (0..30).collect::<Vec<_>>(), "the stream is the session as it was");
}

/// A follow whose hashes are cut to a prefix (what the shim's compact `pin`
/// states): 16 hex digits or more hold as the whole hash does, and a rewrite
/// is still stale; shorter or non-hex prefixes are not hashes.
#[test]
fn hash_prefixes_of_sixteen_digits_bind_as_the_whole_hash() {
  let dir = AgentDir::new();
  let (path, engine, follow) = follow_of_the_reply(&dir);
  let cut = |follow: &Value, digits: usize| {
    let mut cut = follow.clone();
    for key in ["expectedSourceHash", "expectedLineageFingerprint"] {
      cut[key] = json!(follow[key].as_str().unwrap()[..digits].to_string());
    }
    cut
  };
  assert_eq!(expand_of(&engine, &cut(&follow, 16)).entries[0].text, "noted");
  assert_eq!(expand_of(&engine, &cut(&follow, 15)).error.unwrap().code, "stale_pointer");
  // After an append the bound prefix is re-read and checked against the prefix too.
  append(&path, &line("a2", Some("u2"), "assistant", "later"));
  assert_eq!(expand_of(&engine, &cut(&follow, 16)).entries[0].text, "noted");
  let mut upper = cut(&follow, 20);
  upper["expectedSourceHash"] = json!(upper["expectedSourceHash"].as_str().unwrap().to_uppercase());
  assert_eq!(expand_of(&engine, &upper).error.unwrap().code, "stale_pointer");
  let text = fs::read_to_string(&path).unwrap();
  fs::write(&path, text.replacen("remember", "rememBer", 1)).unwrap();
  assert_eq!(expand_of(&engine, &cut(&follow, 16)).error.unwrap().code, "stale_pointer");
}

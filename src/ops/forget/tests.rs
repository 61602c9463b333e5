use super::*;
use crate::error::ErrorCode;
use crate::ops::expand::{expand, ExpandRequest};
use crate::ops::recall::{recall, RecallRequest};
use crate::ops::sessions::{sessions, SessionsRequest};
use crate::testing::{owned_word, shared_words, AgentDir, CWD};
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
    .map(|e| crate::index::readable_file(&e.unwrap().path()))
    .any(|bytes| bytes.windows(word.len()).any(|w| w == word))
}

/// The readable bytes of each term dictionary shard file of active mode.
fn active_shards(engine: &Engine) -> Vec<Vec<u8>> {
  fs::read_dir(engine.index_dir())
    .unwrap()
    .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("cold-terms.active."))
    .map(|e| crate::index::readable_file(&e.unwrap().path()))
    .collect()
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

/// A session of `turns` (entry id, role, text), each the child of the one before.
fn write_turns(dir: &AgentDir, id: &str, turns: &[(&str, &str, &str)]) -> PathBuf {
  let header = json!({"type": "session", "version": 3, "id": id, "cwd": CWD});
  let mut lines = vec![header.to_string()];
  let mut parent = serde_json::Value::Null;
  for (i, (entry, role, text)) in turns.iter().enumerate() {
    let content = if *role == "user" { json!(text) } else { json!([{"type": "text", "text": text}]) };
    lines.push(
      json!({"type": "message", "id": entry, "parentId": parent, "timestamp": format!("2026-01-01T00:01:{i:02}.000Z"),
        "message": {"role": role, "content": content}})
      .to_string(),
    );
    parent = json!(entry);
  }
  let path = dir.project.join(format!("{id}.jsonl"));
  fs::write(&path, lines.join("\n") + "\n").unwrap();
  path
}

fn entry_request(session: &str, entry: &str) -> ForgetRequest {
  ForgetRequest::from_json("memory.forget", Some(&json!({ "session": session, "entryId": entry }))).unwrap()
}

fn expand_code(engine: &Engine, selector: serde_json::Value) -> Result<Vec<String>, ErrorCode> {
  let mut args = json!({"session": "0190aaaa"});
  args.as_object_mut().unwrap().extend(selector.as_object().unwrap().clone());
  let page = expand(engine, &ExpandRequest::from_json(Some(&args)).unwrap());
  match page.error {
    Some(error) => Err(error.code),
    None => Ok(page.entries.iter().map(|c| c.text.clone()).collect()),
  }
}

#[test]
fn a_forgotten_entry_leaves_every_answer_and_the_index_dir_while_its_neighbours_stay() {
  const ID: &str = "0190aaaa-0000-7000-8000-00000000000a";
  let turns = [
    ("e0", "user", "what is the quokka token?"),
    ("e1", "assistant", "The quokka token is sesame42."),
    ("e2", "user", "and the deploy?"),
    ("e3", "assistant", "The quokka deploy runs at noon."),
  ];
  for config in [json!({}), json!({"hotSessions": 0})] {
    let dir = AgentDir::new();
    let file = write_turns(&dir, ID, &turns);
    let engine = dir.engine(config.clone());
    assert_eq!(found(&engine, "sesame42", "global"), 1, "{config}");
    assert!(index_holds(&engine, b"sesame42"), "{config}: the check below can fail");
    let pi_bytes = fs::read(&file).unwrap();

    let result = forget(&engine, &entry_request("0190aaaa", "e1"));
    assert!(result.error.is_none(), "{:?}", result.error);
    assert_eq!(result.changed.len(), 1);
    assert_eq!((result.changed[0].session_id.as_str(), result.changed[0].entry_id.as_deref()), (ID, Some("e1")));
    assert!(result.records_removed > 0, "{config}");
    assert!(!index_holds(&engine, b"sesame42"), "{config}");
    // Every scope, and a fresh engine (another process) too: the neighbours are still found.
    for engine in [&engine, &dir.engine(config.clone())] {
      for scope in ["global", "project", "session:0190aaaa"] {
        assert_eq!(found(engine, "sesame42", scope), 0, "{config} {scope}");
        assert_eq!(found(engine, "noon", scope), 1, "{config} {scope}");
      }
      assert_eq!(expand_code(engine, json!({"entryIds": ["e1"]})), Err(ErrorCode::EntryForgotten));
      assert_eq!(expand_code(engine, json!({"entryIds": ["e3"]})), Ok(vec!["The quokka deploy runs at noon.".into()]));
      let all = expand_code(engine, json!({"entryRange": {"first": 0, "last": 2}})).unwrap();
      assert_eq!(all, ["what is the quokka token?", "and the deploy?", "The quokka deploy runs at noon."]);
      let listed = sessions(engine, &SessionsRequest::from_json(Some(&json!({"scope": "global"}))).unwrap());
      assert_eq!(listed.sessions.len(), 1);
      assert!(!index_holds(engine, b"sesame42"), "{config}");
    }
    // Forgetting it again changes nothing; a fresh all-mode call builds no record holding it.
    assert!(forget(&engine, &entry_request(ID, "e1")).changed.is_empty());
    let all_mode = RecallRequest::from_json(Some(&json!({"query": "sesame42", "branches": "all"}))).unwrap();
    assert_eq!(recall(&engine, &all_mode).total, 0);
    assert!(!index_holds(&engine, b"sesame42"), "{config}");
    // A record re-appended under the same entry id stays forgotten.
    let mut text = fs::read_to_string(&file).unwrap();
    text.push_str(
      &(json!({"type": "message", "id": "e1", "parentId": "e3", "timestamp": "2026-01-01T00:09:00.000Z",
        "message": {"role": "user", "content": "sesame42 again"}})
      .to_string()
        + "\n"),
    );
    fs::write(&file, &text).unwrap();
    assert_eq!(found(&engine, "sesame42", "global"), 0, "{config}");
    assert!(!index_holds(&engine, b"sesame42"), "{config}");
    assert_eq!(fs::read(&file).unwrap()[..pi_bytes.len()], pi_bytes[..]);

    let restored = unforget(&engine, &entry_request("0190aaaa", "e1"));
    assert!(restored.error.is_none(), "{:?}", restored.error);
    assert_eq!(restored.changed.len(), 1);
    assert!(restored.forgotten.is_empty());
    // Found again (the active path holds one of the two records under that id).
    assert_eq!(found(&engine, "sesame42", "global"), 1, "{config}");
    assert_eq!(expand_code(&engine, json!({"entryIds": ["e3"]})), Ok(vec!["The quokka deploy runs at noon.".into()]));
  }
}

#[test]
fn an_entry_forget_names_a_real_entry_and_a_session_unforget_leaves_it_forgotten() {
  let dir = AgentDir::new();
  let turns = [("e0", "user", "hello"), ("e1", "assistant", "the walrus code is 7781")];
  write_turns(&dir, "0190aaaa-0000-7000-8000-00000000000a", &turns);
  let engine = dir.engine(json!({}));
  let missing = forget(&engine, &entry_request("0190aaaa", "nope"));
  assert_eq!(missing.error.map(|e| e.code), Some(ErrorCode::AddressNotFound));
  assert!(!crate::forgotten::path(&engine.agent_dir).exists());
  assert!(ForgetRequest::from_json("memory.forget", Some(&json!({"session": "x", "entryId": " "}))).is_err());
  assert!(forget(&engine, &entry_request("0190aaaa", "e1")).error.is_none());
  assert!(forget(&engine, &forget_request("0190aaaa")).error.is_none());
  assert_eq!(list(&engine).forgotten.len(), 2);
  // Taking back the session's forget keeps its entry's.
  assert_eq!(unforget(&engine, &forget_request("0190aaaa")).changed.len(), 1);
  assert_eq!(found(&engine, "hello", "global"), 1);
  assert_eq!(found(&engine, "walrus", "global"), 0);
  let not_forgotten = unforget(&engine, &entry_request("0190aaaa", "e0"));
  assert_eq!(not_forgotten.error.map(|e| e.code), Some(ErrorCode::AddressNotFound));
}

#[test]
fn an_entry_forgotten_by_another_process_is_not_served_or_written_back_from_a_resident_record() {
  const ID: &str = "0190aaaa-0000-7000-8000-00000000000a";
  let turns =
    [("e0", "user", "hello"), ("e1", "assistant", "the walrus code is 7781"), ("e2", "user", "thanks walrus")];
  for config in [json!({}), json!({"hotSessions": 0})] {
    let dir = AgentDir::new();
    write_turns(&dir, ID, &turns);
    let engine = dir.engine(config.clone());
    assert_eq!(found(&engine, "7781", "global"), 1, "{config}");
    // Another process changes the list (and dropped the records from disk): this one still holds them resident.
    let session = crate::index::find_session(&engine.index_context(), ID).unwrap();
    crate::forgotten::forget(&engine.agent_dir, &session, Some("e1")).unwrap();
    for _ in 0..2 {
      assert_eq!(found(&engine, "7781", "global"), 0, "{config}");
      assert_eq!(found(&engine, "thanks", "global"), 1, "{config}");
      assert!(!index_holds(&engine, b"7781"), "{config}");
    }
    crate::forgotten::unforget(&engine.agent_dir, ID, Some("e1")).unwrap();
    assert_eq!(found(&engine, "7781", "global"), 1, "{config}");
  }
}

/// The cold bodies' dictionary holds pieces of the bodies it was trained
/// on: forgetting one of its sessions retires it. The records compressed
/// with it are compressed again without it, its file goes, no index file
/// holds the forgotten words, and every other session still answers.
#[test]
fn forgetting_a_session_the_cold_body_dictionary_was_trained_on_retires_it() {
  let dir = AgentDir::new();
  let id = |i: usize| format!("0190{i:04x}-0000-7000-8000-{i:012x}");
  // The first 64 cold bodies an index encodes train its dictionary: all of these.
  let secret = write(&dir, &id(0), 1, &format!("{} the zanzibar password is hunter2", shared_words(0)));
  for i in 1..64 {
    write(&dir, &id(i), 1, &shared_words(i));
  }
  let engine = dir.engine(json!({"hotSessions": 0}));
  assert_eq!(found(&engine, "hunter2", "global"), 1);
  for i in 64..80 {
    write(&dir, &id(i), 2, &shared_words(i));
  }
  assert_eq!(found(&engine, &owned_word(64), "global"), 1, "a session written after the training");
  let dictionary_files = || {
    fs::read_dir(engine.index_dir())
      .unwrap()
      .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
      .filter(|n| n.starts_with("cold-bodies."))
      .count()
  };
  let compressed_with_one = || {
    fs::read_dir(engine.index_dir())
      .unwrap()
      .filter(|e| crate::index::record::body_dictionary(&fs::read(e.as_ref().unwrap().path()).unwrap()).is_some())
      .count()
  };
  assert_eq!(dictionary_files(), 1);
  assert!(compressed_with_one() >= 16, "the later sessions' bodies use it");

  let result = forget(&engine, &forget_request(&id(0)[..8]));
  assert!(result.error.is_none(), "{:?}", result.error);
  assert_eq!((dictionary_files(), compressed_with_one()), (0, 0));
  assert!(!index_holds(&engine, b"hunter2"));
  for engine in [&engine, &dir.engine(json!({"hotSessions": 0}))] {
    assert_eq!(found(engine, "hunter2", "global"), 0);
    for word in [owned_word(1), owned_word(64), "common7".into()] {
      let request = RecallRequest::from_json(Some(&json!({"query": word, "scope": "global"}))).unwrap();
      let page = recall(engine, &request);
      assert!(page.total >= 1 && page.coverage.reasons.is_empty(), "{word}: {} {:?}", page.total, page.coverage);
    }
  }
  assert!(records_of(&engine, &secret) == 0);
}

/// With enough cold sessions for the term dictionary, a forgotten session's
/// words leave its shard too (and its packed head), not only its records.
#[test]
fn a_forgotten_cold_session_leaves_the_term_dictionary() {
  let dir = AgentDir::new();
  let count = crate::index::dictionary::MIN_COLD + 20;
  let secret = write(&dir, "0190aaaa-0000-7000-8000-00000000000a", 1, "The zanzibar password is qpxhuntertwo.");
  for i in 0..count {
    write(&dir, &format!("0190{i:04}-0000-7000-8000-00000000000b"), 2, &format!("routine work {i}"));
  }
  let engine = dir.engine(json!({"hotSessions": 0, "maxSyncSessions": 1_000_000}));
  assert_eq!(found(&engine, "qpxhuntertwo", "global"), 1);
  let shards = || active_shards(&engine);
  let named = |bytes: &Vec<u8>| bytes.windows(b"0190aaaa".len()).any(|w| w == b"0190aaaa");
  assert!(shards().iter().any(named), "the check below can fail: a shard names the session");
  let result = forget(&engine, &forget_request("0190aaaa"));
  assert!(result.error.is_none(), "{:?}", result.error);
  assert_eq!(records_of(&engine, &secret), 0);
  assert!(!shards().iter().any(named), "no shard names the forgotten session");
  assert!(!index_holds(&engine, b"0190aaaa"), "no index file does");
  assert_eq!(found(&engine, "qpxhuntertwo", "global"), 0);
  assert!(shards().len() > 1 && !shards().iter().any(named), "the shard is built again, without it");
  assert_eq!(found(&engine, "routine", "global"), count.min(crate::ops::recall::MAX_DIGEST_CANDIDATES));
}

/// A forgotten cold session whose project has since grown past a power of
/// two of sessions a shard lies, by the new count, in another shard than the
/// one still naming it (no global refresh rebuilt that one: the new file is
/// no session, so nothing was indexed): the forget removes that shard too.
#[test]
fn a_forgotten_session_leaves_the_shard_it_lay_in_before_its_project_grew() {
  use crate::index::dictionary::placement::{Placement, SESSIONS_PER_SHARD};
  let dir = AgentDir::new();
  let count = 2 * SESSIONS_PER_SHARD as usize;
  let id = |i: usize| format!("0190{i:04}-0000-7000-8000-00000000000c");
  let paths: Vec<PathBuf> = (0..count).map(|i| write(&dir, &id(i), 1, &format!("routine qpxword{i}"))).collect();
  let engine = dir.engine(json!({"hotSessions": 0, "maxSyncSessions": 1_000_000}));
  assert_eq!(found(&engine, "routine", "global"), count.min(crate::ops::recall::MAX_DIGEST_CANDIDATES));
  // One more file in the project dir: its spread doubles.
  let grown: Vec<PathBuf> = paths.iter().cloned().chain([dir.project.join("notes.jsonl")]).collect();
  let placed = |files: &[PathBuf], file: &PathBuf| {
    Placement::of(files.iter().map(|f| f.as_path()), &Default::default()).shard(&file.to_string_lossy())
  };
  let moved = (0..count).find(|&i| placed(&paths, &paths[i]) != placed(&grown, &paths[i])).expect("a session moves");
  fs::write(dir.project.join("notes.jsonl"), "not a session\n").unwrap();
  // A query places the sessions anew and builds the shards they moved to; the ones they left keep them.
  assert_eq!(found(&engine, &format!("qpxword{moved}"), "global"), 1);
  let shards = || active_shards(&engine);
  let prefix = id(moved);
  let named = |bytes: &Vec<u8>| bytes.windows(prefix.len()).any(|w| w == prefix.as_bytes());
  assert!(shards().iter().any(named), "the check below can fail: a shard names the session");
  let result = forget(&engine, &forget_request(&prefix));
  assert!(result.error.is_none(), "{:?}", result.error);
  assert!(!shards().iter().any(named), "no shard names the forgotten session");
  assert!(!index_holds(&engine, prefix.as_bytes()), "no index file does");
  assert_eq!(found(&engine, &format!("qpxword{moved}"), "global"), 0);
}

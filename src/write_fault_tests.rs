//! Write faults (issue 11): an EIO on every cache and curated-memory write
//! (the [`crate::fault`] seam; ENOSPC on a real small tmpfs and EACCES as an
//! unprivileged uid are `__test__/write-faults.test.mts`). Each fault is
//! reported, leaves source and memory files byte-identical and nothing but
//! cleaned temp files behind, and the next call after it clears recovers.

use crate::config::MAX_COLD_CACHE_BYTES;
use crate::fault::FailWrites;
use crate::index::record::compression::Alone;
use crate::index::record::CacheRecord;
use crate::ops::recall::recall;
use crate::ops::recall::RecallRequest;
use crate::store::result::{FailureCode, StoreResult};
use crate::store::{MemoryStore, StoreOptions, Target};
use crate::testing::{AgentDir, CWD};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
  let mut files = BTreeMap::new();
  for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
    let path = entry.path();
    if path.is_dir() {
      files.extend(snapshot(&path));
    } else {
      files.insert(path.clone(), fs::read(&path).unwrap());
    }
  }
  files
}

fn recall_json(engine: &crate::engine::Engine, query: &str) -> Value {
  let args = json!({"query": query, "scope": "global", "pageSize": 50});
  serde_json::to_value(recall(engine, &RecallRequest::from_json(Some(&args)).unwrap())).unwrap()
}

#[test]
fn an_eio_on_index_writes_is_reported_and_the_next_call_recovers() {
  let fx = AgentDir::new();
  for i in 0..4 {
    let header = format!("{{\"type\":\"session\",\"version\":3,\"id\":\"s{i}\",\"cwd\":\"{CWD}\"}}\n");
    let line =
      json!({"type":"message","id":"e0","parentId":null,"message":{"role":"user","content":format!("needle {i} hay")}});
    fs::write(fx.project.join(format!("s{i}.jsonl")), format!("{header}{line}\n")).unwrap();
  }
  let sources = snapshot(&fx.agent.join("sessions"));
  let engine = fx.engine(json!({"hotSessions": 2}));
  let clean =
    recall_json(&fx.engine(json!({"hotSessions": 2, "indexDir": fx.agent.join("clean").to_str().unwrap()})), "needle");
  let index_dir = fx.agent.join("fabric").join("memory-index");
  let faulty = {
    let _eio = FailWrites::under(&fx.agent.join("fabric"));
    recall_json(&engine, "needle")
  };
  assert_eq!(faulty["coverage"]["reasons"], json!(["index_write_failed"]), "{faulty}");
  assert_eq!(faulty["coverage"]["complete"], true, "the answer itself is whole");
  assert_eq!((&faulty["hits"], &faulty["total"]), (&clean["hits"], &clean["total"]));
  let left: Vec<PathBuf> = snapshot(&index_dir).into_keys().collect();
  assert!(left.iter().all(|p| !p.to_string_lossy().contains(".tmp.")), "temp files left: {left:?}");
  assert_eq!(snapshot(&fx.agent.join("sessions")), sources, "sources untouched");
  // The fault cleared: the same engine writes its records and answers as a clean build.
  assert_eq!(recall_json(&engine, "needle"), clean);
  let records: Vec<(PathBuf, Vec<u8>)> = snapshot(&index_dir)
    .into_iter()
    .filter(|(p, _)| {
      use crate::index::dir::{IndexFile, MARKER};
      ![MARKER, IndexFile::SESSION_DIRS, IndexFile::INDEX_DIR_LISTING].iter().any(|name| p.ends_with(name))
    })
    .collect();
  assert_eq!(records.len(), 4, "{records:?}");
  assert!(records.iter().all(|(_, bytes)| CacheRecord::decode(bytes, &Alone, MAX_COLD_CACHE_BYTES).is_some()));
}

fn failure_code(result: &StoreResult) -> Option<FailureCode> {
  match result {
    StoreResult::Success(_) => None,
    StoreResult::Failure(failure) => Some(failure.code),
  }
}

#[test]
fn an_eio_on_memory_writes_changes_nothing_and_the_next_write_recovers() {
  let dir = tempfile::tempdir().unwrap();
  let memories = dir.path().join("memories");
  let store = MemoryStore::new(StoreOptions::new(&memories));
  assert_eq!(failure_code(&store.add(Target::Memory, "uses npm")), None);
  assert_eq!(failure_code(&store.add(Target::Memory, "stale fact")), None);
  let before = snapshot(&memories);
  let review = json!([{"action": "add", "content": "ci on push"}, {"action": "remove", "oldText": "stale fact"}]);
  {
    let _eio = FailWrites::under(&memories);
    assert_eq!(failure_code(&store.add(Target::Memory, "new fact")), Some(FailureCode::IoError));
    assert_eq!(failure_code(&store.add(Target::User, "name: Ada")), Some(FailureCode::IoError));
    let apply = json!([{"action": "replace", "oldText": "uses npm", "newContent": "uses pnpm"}]);
    assert_eq!(failure_code(&store.apply(Target::Memory, &apply, false)), Some(FailureCode::IoError));
    assert!(failure_code(&store.apply_for_review(Target::Memory, &review)).is_some());
  }
  assert_eq!(snapshot(&memories), before, "memory files byte-identical, no temp or lock file left");
  assert_eq!(store.entries(Target::Memory), ["uses npm", "stale fact"]);
  // Recovered: the same calls now land.
  assert_eq!(failure_code(&store.add(Target::Memory, "new fact")), None);
  assert_eq!(failure_code(&store.apply_for_review(Target::Memory, &review)), None);
  assert_eq!(store.entries(Target::Memory), ["uses npm", "stale fact", "new fact", "ci on push"]);
  assert_eq!(store.proposals().unwrap().len(), 1, "the removal waits for review");
}

//! An append is indexed by parsing only the appended bytes, and the result is
//! exactly what a full rebuild produces. (Its own test binary: the parse
//! counter is process-wide, so nothing else may parse concurrently.)

use pi_fabric_memory::config::Config;
use pi_fabric_memory::engine::Engine;
use pi_fabric_memory::index::{self, record::CacheRecord};
use pi_fabric_memory::session::discover::{encode_cwd, Scope};
use pi_fabric_memory::session::lineage::Branches;
use pi_fabric_memory::session::parse::parsed_bytes;
use serde_json::json;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

const CWD: &str = "/home/u/proj";

fn line(id: &str, parent: Option<&str>, text: &str) -> String {
  json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
    "message": {"role": "user", "content": text}})
  .to_string()
    + "\n"
}

fn engine(agent: &Path, index_dir: &Path) -> Engine {
  let config = Config::from_json(Some(&json!({"indexDir": index_dir.to_str().unwrap()}))).unwrap();
  Engine::new(Some(agent.to_str().unwrap()), Some(CWD), config).unwrap()
}

fn record(engine: &Engine) -> CacheRecord {
  let result = index::sync(&engine.index_context(), &Scope::Global, Branches::Active).unwrap();
  assert!(result.coverage.complete, "{:?}", result.coverage);
  (**result.sessions[0].record.as_ref().unwrap()).clone()
}

fn append(path: &Path, text: &str) -> u64 {
  OpenOptions::new().append(true).open(path).unwrap().write_all(text.as_bytes()).unwrap();
  text.len() as u64
}

#[test]
fn appends_parse_only_new_bytes_and_match_a_full_rebuild() {
  let dir = tempfile::tempdir().unwrap();
  let agent = dir.path().join("agent");
  let project = agent.join("sessions").join(encode_cwd(CWD));
  fs::create_dir_all(&project).unwrap();
  let path = project.join("s.jsonl");
  let mut text = format!("{{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"cwd\":\"{CWD}\"}}\n");
  let mut parent = None::<String>;
  for i in 0..200 {
    text += &line(&format!("e{i}"), parent.as_deref(), &format!("entry {i} {}", "filler ".repeat(100)));
    parent = Some(format!("e{i}"));
  }
  fs::write(&path, &text).unwrap();
  let live = engine(&agent, &dir.path().join("index"));
  let first = record(&live);
  let size = fs::metadata(&path).unwrap().len();

  // A linear append: only the new line is parsed.
  let before = parsed_bytes();
  let appended = append(&path, &line("e200", Some("e199"), "the appended needle"));
  let grown = record(&live);
  assert_eq!(parsed_bytes() - before, appended, "only the appended bytes are parsed");
  assert_eq!(grown.entry_count(), first.entry_count() + 1);
  let rebuilt = record(&engine(&agent, &dir.path().join("index-full")));
  assert_eq!(grown.body, rebuilt.body, "incremental equals a full rebuild");
  assert_eq!((grown.source_hash, grown.lineage_fingerprint), (rebuilt.source_hash, rebuilt.lineage_fingerprint));

  // An append that moves the leaf back to an earlier entry changes the old
  // selection: the session is re-parsed in full, still exactly.
  let before = parsed_bytes();
  let branched = append(&path, &line("b1", Some("e10"), "a branch from entry ten"));
  let reparsed = record(&live);
  // The appended line is parsed once to find that out, then the whole file.
  assert_eq!(parsed_bytes() - before, branched + size + appended + branched);
  assert_eq!(reparsed.entry_count(), 12);
  let rebuilt = record(&engine(&agent, &dir.path().join("index-full-2")));
  assert_eq!(reparsed.body, rebuilt.body);

  // A warm call parses nothing.
  let before = parsed_bytes();
  record(&live);
  assert_eq!(parsed_bytes(), before);
}

//! Pi's custom session dir (`--session-dir`, `PI_CODING_AGENT_SESSION_DIR`,
//! `sessionDir`): its files sit flat, every cwd's together. Discovery, the
//! index and recall cover it besides `<agentDir>/sessions`; `project` means
//! the sessions whose header cwd is this cwd.

use pi_fabric_memory::config::Config;
use pi_fabric_memory::engine::Engine;
use pi_fabric_memory::ops::recall::recall;
use pi_fabric_memory::ops::recall::RecallRequest;
use pi_fabric_memory::ops::sessions::{sessions, SessionsRequest};
use pi_fabric_memory::session::discover::encode_cwd;
use serde_json::{json, Value};
use std::fs;
use std::path::Path;

const CWD: &str = "/home/u/proj";

fn session(path: &Path, id: &str, cwd: &str, text: &str) {
  let header = json!({"type": "session", "version": 3, "id": id, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": cwd});
  let message = json!({"type": "message", "id": format!("{id}-1"), "parentId": null, "timestamp": "2026-01-01T00:00:01.000Z",
    "message": {"role": "user", "content": text}});
  fs::write(path, format!("{header}\n{message}\n")).unwrap();
}

struct Fixture {
  _dir: tempfile::TempDir,
  agent: std::path::PathBuf,
  custom: std::path::PathBuf,
}

/// One session in the default layout, three in a flat custom dir (this cwd,
/// another cwd, and a header without a cwd).
fn fixture() -> Fixture {
  let dir = tempfile::tempdir().unwrap();
  let agent = dir.path().join("agent");
  let default = agent.join("sessions").join(encode_cwd(CWD));
  let custom = dir.path().join("custom-sessions");
  fs::create_dir_all(&default).unwrap();
  fs::create_dir_all(&custom).unwrap();
  session(&default.join("a_default.jsonl"), "default", CWD, "osprey in the default layout");
  session(&custom.join("b_mine.jsonl"), "mine", CWD, "osprey in the custom dir");
  session(&custom.join("c_other.jsonl"), "other", "/home/u/elsewhere", "osprey of another project");
  session(&custom.join("d_nocwd.jsonl"), "nocwd", "", "osprey without a cwd");
  Fixture { _dir: dir, agent, custom }
}

fn engine(f: &Fixture, session_dir: Option<&str>) -> Engine {
  let config = Config::from_json(Some(&json!({"indexDir": f.agent.join("index").to_str().unwrap()}))).unwrap();
  Engine::new(Some(f.agent.to_str().unwrap()), Some(CWD), config).unwrap().with_session_dir(session_dir)
}

fn ids(engine: &Engine, scope: &str) -> Vec<String> {
  let page =
    serde_json::to_value(sessions(engine, &SessionsRequest::from_json(Some(&json!({"scope": scope}))).unwrap()))
      .unwrap();
  assert_eq!(page["coverage"]["complete"], json!(true), "{page}");
  let mut ids: Vec<String> =
    page["sessions"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap().to_string()).collect();
  ids.sort();
  ids
}

#[test]
fn the_custom_dir_is_listed_and_project_means_this_cwd_by_header() {
  let f = fixture();
  let custom = f.custom.to_str().unwrap();
  let with = engine(&f, Some(custom));
  assert_eq!(ids(&with, "project"), ["default", "mine"]);
  assert_eq!(ids(&with, "global"), ["default", "mine", "nocwd", "other"]);
  // Without the setting the custom dir is unknown (today's behaviour for such users: empty recall).
  let without = engine(&f, None);
  assert_eq!(ids(&without, "project"), ["default"]);
  assert_eq!(ids(&without, "global"), ["default"]);
}

#[test]
fn recall_and_explicit_sessions_reach_the_custom_dir() {
  let f = fixture();
  let with = engine(&f, Some(f.custom.to_str().unwrap()));
  let found = |scope: &str| -> Vec<String> {
    let page = recall(&with, &RecallRequest::from_json(Some(&json!({"query": "osprey", "scope": scope}))).unwrap());
    let page: Value = serde_json::to_value(page).unwrap();
    let mut ids: Vec<String> =
      page["hits"].as_array().unwrap().iter().map(|h| h["sessionId"].as_str().unwrap().to_string()).collect();
    ids.sort();
    ids
  };
  assert_eq!(found("project"), ["default", "mine"]);
  assert_eq!(found("global"), ["default", "mine", "nocwd", "other"]);
  assert_eq!(found("session:other"), ["other"]);
}

#[test]
fn a_relative_session_dir_resolves_against_the_cwd_and_a_default_dir_is_not_listed_twice() {
  let f = fixture();
  let relative = engine(&f, Some("sub/../sessions"));
  assert_eq!(relative.session_dir.as_deref(), Some(Path::new("/home/u/proj/sessions")));
  let default = f.agent.join("sessions").join(encode_cwd(CWD));
  let same = engine(&f, Some(default.to_str().unwrap()));
  assert_eq!(ids(&same, "global"), ["default"]);
  assert_eq!(ids(&same, "project"), ["default"]);
}

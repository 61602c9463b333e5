//! Test support: a temporary agent dir with one project's session dir.

use crate::config::Config;
use crate::engine::Engine;
use crate::session::discover::encode_cwd;
use std::fs;
use std::path::PathBuf;

pub const CWD: &str = "/home/u/proj";

pub struct AgentDir {
  _dir: tempfile::TempDir,
  pub agent: PathBuf,
  pub project: PathBuf,
}

impl AgentDir {
  pub fn new() -> AgentDir {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent");
    let project = agent.join("sessions").join(encode_cwd(CWD));
    fs::create_dir_all(&project).unwrap();
    AgentDir { _dir: dir, agent, project }
  }

  /// An engine over this agent dir with the `memory` config `config`.
  pub fn engine(&self, config: serde_json::Value) -> Engine {
    Engine::new(Some(self.agent.to_str().unwrap()), Some(CWD), Config::from_json(Some(&config)).unwrap()).unwrap()
  }
}

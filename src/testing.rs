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

/// Creates a FIFO (a reader of it blocks until a writer appears).
#[cfg(unix)]
pub fn mkfifo(path: &std::path::Path) {
  let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
  // SAFETY: a valid NUL-terminated path.
  assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {path:?}");
}

/// Runs `f` on a thread and fails (instead of hanging the suite) when it
/// does not finish within `secs`.
pub fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
  let (send, receive) = std::sync::mpsc::channel();
  std::thread::spawn(move || {
    let _ = send.send(f());
  });
  receive.recv_timeout(std::time::Duration::from_secs(secs)).expect("blocked: did not finish in time")
}

/// Property-test cases: `default` (CI-sized) unless `PROPTEST_CASES` asks
/// for more. (An explicit `with_cases` would ignore the variable.)
pub fn proptest_config(default: u32) -> proptest::test_runner::Config {
  let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default);
  proptest::test_runner::Config { cases, failure_persistence: None, ..Default::default() }
}

/// Text of session `i` of many whose cold bodies share most of their words
/// (what a cold-body dictionary learns), with one of its own, [`owned_word`].
pub fn shared_words(i: usize) -> String {
  let shared: Vec<String> = (0..150).map(|w| format!("common{}", (w * 7 + i) % 400)).collect();
  format!("{} {}", shared.join(" "), owned_word(i))
}

/// Session `i`'s own word in [`shared_words`] (letters only: one term).
pub fn owned_word(i: usize) -> String {
  let own: String = [i / 26 % 26, i % 26].iter().map(|&d| char::from(b'a' + d as u8)).collect();
  format!("owned{own}word")
}

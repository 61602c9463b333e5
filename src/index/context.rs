//! What one indexing call runs with. Its caller builds it (an operation,
//! from its engine: `Engine::index_context`), so the index depends on the
//! settings and the session roots, not on the operations' per-call context.

use super::progress::ProgressSink;
use crate::config::Config;
use crate::pi_path::resolve_path;
use crate::session::discover::Discovery;
use crate::session::lineage::{Branches, LiveBranch};
use std::path::{Path, PathBuf};

pub struct Context<'a> {
  /// The memory settings.
  pub config: &'a Config,
  /// Where the sessions are: the agent dir, the cwd, Pi's custom session
  /// dir, and the live session's file.
  pub discovery: Discovery,
  /// Pi's live branch of the live session (`discovery.live_file`).
  pub live: Option<&'a LiveBranch>,
  /// Receives indexing progress (the CLI's bar); `None` for most calls.
  pub progress: Option<&'a ProgressSink>,
}

impl Context<'_> {
  /// The index dir this call synchronizes.
  pub fn dir(&self) -> PathBuf {
    index_dir(self.config, &self.discovery.agent_dir, &self.discovery.cwd)
  }

  /// Pi's live branch, when `path` is the live session and `branches` the
  /// active path (in all mode every branch is indexed anyway).
  pub fn live_branch(&self, path: &Path, branches: Branches) -> Option<&LiveBranch> {
    self.live.filter(|_| branches == Branches::Active && self.discovery.live_file.as_deref() == Some(path))
  }
}

/// Where the index lives: `memory.indexDir` (relative to the cwd) or
/// `<agentDir>/fabric/memory-index`.
pub fn index_dir(config: &Config, agent_dir: &Path, cwd: &Path) -> PathBuf {
  match &config.index_dir {
    Some(dir) => resolve_path(dir, cwd),
    None => agent_dir.join("fabric").join("memory-index"),
  }
}

//! The per-call context every operation runs in: where the agent dir is,
//! the caller's cwd, the configuration, and Pi's live branch (if any).

use crate::config::Config;
use crate::error::ContractError;
use crate::error::{CoreError, CoreResult};
use crate::index::progress::ProgressSink;
use crate::pi_path::{default_agent_dir, resolve_path};
use crate::session::discover::Discovery;
use crate::session::entry::Policy;
use crate::session::lineage::{Branches, LiveBranch};
use crate::session::{self, SessionView};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The live session as the extension reads it from Pi on every call.
#[derive(Debug, Clone, PartialEq)]
pub struct Live {
  pub file: PathBuf,
  pub branch: LiveBranch,
}

impl Live {
  /// `{sessionFile, leafId, branchIds}`; absent or file-less → `None`.
  pub fn from_json(value: Option<&Value>) -> CoreResult<Option<Live>> {
    let Some(value) = value.filter(|v| !v.is_null()) else { return Ok(None) };
    let args = crate::args::Args::new("live", Some(value), &["sessionFile", "leafId", "branchIds"])?;
    let Some(file) = args.string("sessionFile")? else { return Ok(None) };
    let ids = args
      .strings("branchIds", usize::MAX)?
      .ok_or_else(|| CoreError::invalid("live: branchIds must be the ids of getBranch()"))?;
    Ok(Some(Live { file: PathBuf::from(file), branch: LiveBranch { leaf_id: args.string("leafId")?, ids } }))
  }
}

#[derive(Debug, Clone)]
pub struct Engine {
  pub agent_dir: PathBuf,
  pub cwd: PathBuf,
  /// Pi's custom session dir (`--session-dir`, `PI_CODING_AGENT_SESSION_DIR`,
  /// `sessionDir`): sessions of every cwd, flat, besides `<agentDir>/sessions`.
  pub session_dir: Option<PathBuf>,
  pub config: Config,
  pub live: Option<Live>,
  /// Receives indexing progress (the CLI's bar); `None` for most calls.
  pub progress: Option<ProgressSink>,
  /// The explicit project key in effect ([`crate::project::chosen_key`]).
  pub project_key: Option<String>,
}

impl Engine {
  pub fn new(agent_dir: Option<&str>, cwd: Option<&str>, config: Config) -> CoreResult<Engine> {
    let process_cwd = std::env::current_dir().map_err(|e| CoreError::Io { path: PathBuf::from("."), source: e })?;
    let agent_dir = agent_dir.map(|d| resolve_path(d, &process_cwd)).unwrap_or_else(default_agent_dir);
    let cwd = cwd.map(|c| resolve_path(c, &process_cwd)).unwrap_or(process_cwd);
    let project_key = crate::project::chosen_key(config.project_key.as_deref())?;
    Ok(Engine { agent_dir, cwd, session_dir: None, config, live: None, progress: None, project_key })
  }

  /// The same engine with Pi's custom session dir (relative to the cwd, as
  /// Pi resolves it; empty = none).
  pub fn with_session_dir(self, dir: Option<&str>) -> Engine {
    let session_dir = dir.filter(|d| !d.is_empty()).map(|d| resolve_path(d, &self.cwd));
    Engine { session_dir, ..self }
  }

  pub fn with_live(&self, live: Option<Live>) -> Engine {
    Engine { live, ..self.clone() }
  }

  /// What an indexing call runs with.
  pub fn index_context(&self) -> crate::index::Context<'_> {
    crate::index::Context {
      config: &self.config,
      discovery: self.discovery(),
      live: self.live.as_ref().map(|l| &l.branch),
      progress: self.progress.as_ref(),
    }
  }

  /// Where the index lives (`memory.indexDir`, or in the agent dir).
  pub fn index_dir(&self) -> PathBuf {
    crate::index::index_dir(&self.config, &self.agent_dir, &self.cwd)
  }

  pub fn discovery(&self) -> Discovery {
    Discovery {
      agent_dir: self.agent_dir.clone(),
      cwd: self.cwd.clone(),
      session_dir: self.session_dir.clone(),
      live_file: self.live.as_ref().map(|l| l.file.clone()),
      project_key: self.project_key.clone(),
      project: Default::default(),
    }
  }

  /// The coverage's `project` for a call over `scope`: the project and
  /// global scopes state the cwd's project, a session scope does not.
  pub fn project_coverage(&self, scope: &session::discover::Scope) -> Option<crate::coverage::ProjectCoverage> {
    use session::discover::Scope;
    if !matches!(scope, Scope::Project | Scope::Global) {
      return None;
    }
    let project = self.discovery().project_dirs();
    let identity = &project.identity;
    Some(crate::coverage::ProjectCoverage {
      name: identity.name.clone(),
      source: identity.source,
      fallback: identity.fallback,
      identities_unreadable: project.known_unreadable(),
    })
  }

  pub fn load(&self, path: &Path, branches: Branches, policy: &Policy) -> Result<Arc<SessionView>, ContractError> {
    let live = self.live.as_ref().map(|l| (l.file.as_path(), &l.branch));
    let forgotten = crate::forgotten::load(&self.agent_dir)?;
    session::load(path, branches, live, self.reading(policy, &forgotten))
  }

  /// How this engine reads a view: without the forgotten entries, and
  /// bounded like indexing (expansion re-reads the source on every call).
  fn reading<'a>(&self, policy: &'a Policy, forgotten: &'a crate::forgotten::List) -> session::Reading<'a> {
    session::Reading { policy, forgotten: &forgotten.entries, max_bytes: self.config.max_sync_source_bytes }
  }

  /// The view a bound call names (see [`session::load_bound`]).
  pub fn load_bound(
    &self,
    path: &Path,
    branches: Branches,
    policy: &Policy,
    binding: &session::binding::Binding,
  ) -> Result<Arc<SessionView>, ContractError> {
    let live = self.live.as_ref().map(|l| (l.file.as_path(), &l.branch));
    let forgotten = crate::forgotten::load(&self.agent_dir)?;
    session::load_bound(path, branches, live, self.reading(policy, &forgotten), binding)
  }
}

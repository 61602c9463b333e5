//! `projectIdentity(cwd, options?)`: the project a directory belongs to
//! (`crate::project`), for the shim's project memory store and for hosts.
//! The explicit key is `PI_FABRIC_MEMORY_PROJECT_KEY` when set, else the
//! `projectKey` option (the `memory.projectKey` setting): the environment
//! wins, as Pi's own variables win over its settings.

use super::{caught, to_napi};
use crate::project::{self, chosen_key};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::path::Path;

#[napi(object)]
pub struct ProjectIdentityOptions {
  /// The `memory.projectKey` setting; `PI_FABRIC_MEMORY_PROJECT_KEY` takes precedence.
  pub project_key: Option<String>,
}

#[napi(object)]
pub struct ProjectIdentity {
  /// `v1:<32 hex digits>`, versioned and opaque: equal keys are one project.
  pub key: String,
  /// A short human name (`repo`): lowercase `[a-z0-9._-]`.
  pub name: String,
  /// Which rule decided.
  #[napi(ts_type = "'explicit' | 'remote' | 'commonDir' | 'cwd'")]
  pub source: String,
  /// What that rule read: the explicit key, `host/org/repo`, the git common dir, or the cwd.
  pub evidence: String,
  /// A filesystem-safe directory name for the project's files (`repo-<16 hex digits of the key>`).
  pub dir_name: String,
  /// Why the cwd rule decided although git metadata was found (or the cwd is missing).
  #[napi(
    ts_type = "'cwd_missing' | 'git_file_malformed' | 'git_dir_missing' | 'git_dir_invalid' | 'common_dir_malformed' | 'config_unreadable' | 'config_malformed' | 'remote_malformed' | 'remotes_conflict'"
  )]
  pub fallback: Option<String>,
}

/// Resolves the project of `cwd`: explicit key, git remote, git common dir,
/// else the cwd (see docs/curated-memory.md#project-identity).
#[napi]
pub fn project_identity(cwd: String, options: Option<ProjectIdentityOptions>) -> Result<ProjectIdentity> {
  caught("projectIdentity", || {
    let key = chosen_key(options.and_then(|o| o.project_key).as_deref()).map_err(to_napi)?;
    // A relative cwd is the process's: the cwd rule keys an absolute path.
    let cwd = std::path::absolute(Path::new(&cwd))
      .map_err(|e| to_napi(crate::error::CoreError::invalid(format!("projectIdentity: cwd {cwd:?}: {e}"))))?;
    let identity = project::resolve(&cwd, key.as_deref());
    Ok(ProjectIdentity {
      dir_name: identity.dir_name(),
      key: identity.key,
      name: identity.name,
      source: <&str>::from(identity.source).to_string(),
      evidence: identity.evidence,
      fallback: identity.fallback.map(|f| f.as_str().to_string()),
    })
  })?
}

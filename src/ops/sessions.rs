//! `memory.sessions`: the sessions a scope names, newest first, with their
//! entry counts and lineage in the requested branch mode.

use crate::args::Args;
use crate::engine::Engine;
use crate::error::{ContractError, CoreResult};
use crate::index::record::Tier;
use crate::index::{self, Coverage};
use crate::project::known::Known;
use crate::session::discover::Scope;
use crate::session::lineage::Branches;
use crate::session::project_dirs::project_name;
use serde::Serialize;
use serde_json::Value;

const MAX_LIMIT: i64 = 500;

#[derive(Debug, Clone, PartialEq)]
pub struct SessionsRequest {
  pub scope: Scope,
  pub branches: Branches,
  pub limit: Option<usize>,
}

impl SessionsRequest {
  pub fn from_json(value: Option<&Value>) -> CoreResult<SessionsRequest> {
    let args = Args::new("memory.sessions", value, &["scope", "branches", "limit"])?;
    Ok(SessionsRequest {
      scope: args.scope(Scope::Project)?,
      branches: args.branches()?,
      limit: args
        .integer("limit")?
        .map(|_| args.bounded("limit", 1, MAX_LIMIT, MAX_LIMIT))
        .transpose()?
        .map(|n| n as usize),
    })
  }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRow {
  pub id: String,
  pub file: String,
  pub cwd: String,
  /// The short name of the cwd's project (`repo`); absent for a header without a cwd.
  #[serde(skip_serializing_if = "Option::is_none")]
  pub project: Option<String>,
  pub mtime: f64,
  pub entry_count: usize,
  pub tier: Tier,
  pub branches: Branches,
  pub lineage_fingerprint: String,
  /// Pi's session name (`/name`), when it has one.
  #[serde(skip_serializing_if = "Option::is_none")]
  pub name: Option<String>,
  /// The first user message, one line, at most 120 characters.
  #[serde(skip_serializing_if = "Option::is_none")]
  pub first_prompt: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SessionsPage {
  pub scope: String,
  pub branches: Branches,
  pub sessions: Vec<SessionRow>,
  pub coverage: Coverage,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub error: Option<ContractError>,
}

/// Lists the scope's sessions from the index, synchronizing it first (the
/// records this builds are on disk when the call returns).
pub fn sessions(engine: &Engine, request: &SessionsRequest) -> SessionsPage {
  let mut page = SessionsPage {
    scope: request.scope.label(),
    branches: request.branches,
    sessions: Vec::new(),
    coverage: Coverage::default(),
    error: None,
  };
  let synced = match index::sync(&engine.index_context(), &request.scope, request.branches) {
    Ok(synced) => synced,
    Err(error) => {
      return SessionsPage { coverage: Coverage::failed(&error), error: Some(error), ..page };
    }
  };
  let known = Known::open(&engine.agent_dir);
  let limit = request.limit.unwrap_or(usize::MAX).min(engine.config.max_sessions as usize);
  page.sessions = synced
    .records()
    .take(limit)
    .map(|(tier, record)| SessionRow {
      id: record.session_id().to_string(),
      file: record.file.to_string(),
      cwd: record.cwd().to_string(),
      project: project_name(&known, record.cwd()),
      mtime: record.mtime,
      entry_count: record.entry_count(),
      tier,
      branches: record.branches,
      lineage_fingerprint: record.lineage_fingerprint.hex(),
      name: record.titles().name.clone(),
      first_prompt: record.titles().first_prompt.clone(),
    })
    .collect();
  known.save();
  page.coverage = synced.coverage;
  page.coverage.project = engine.project_coverage(&request.scope);
  page
}

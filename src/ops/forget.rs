//! `memory.forget`, `memory.unforget` and `memory.forgotten`: a session the
//! user wants recall never to surface again, without touching Pi's history.
//! The list is [`crate::forgotten`]'s; forgetting also drops the session's
//! derived records from the index dir, so neither its vocabulary nor its
//! text stays on disk, and every later sync leaves it out.

use crate::args::Args;
use crate::engine::Engine;
use crate::error::{ContractError, CoreResult};
use crate::forgotten::{self, Forgotten};
use crate::index;
use serde::Serialize;
use serde_json::Value;

/// A forget or unforget: the session by id, id prefix, file stem or path.
#[derive(Debug, Clone, PartialEq)]
pub struct ForgetRequest {
  pub session: String,
}

impl ForgetRequest {
  pub fn from_json(call: &'static str, value: Option<&Value>) -> CoreResult<ForgetRequest> {
    let args = Args::new(call, value, &["session"])?;
    match args.string("session")? {
      Some(session) if !session.trim().is_empty() => Ok(ForgetRequest { session }),
      _ => Err(crate::error::CoreError::invalid(format!("{call}: session (an id, id prefix or path) is required"))),
    }
  }
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ForgetResult {
  /// The sessions this call forgot or took back; empty when nothing changed.
  pub changed: Vec<Forgotten>,
  /// Every forgotten session after the call.
  pub forgotten: Vec<Forgotten>,
  /// Index records of the forgotten session removed from the index dir.
  pub records_removed: usize,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub error: Option<ContractError>,
}

impl ForgetResult {
  fn failed(error: ContractError) -> ForgetResult {
    ForgetResult { error: Some(error), ..ForgetResult::default() }
  }
}

/// Forgets the session `request` names (found among every session, forgotten
/// or not) and drops its records from the index.
pub fn forget(engine: &Engine, request: &ForgetRequest) -> ForgetResult {
  let session = match engine.discovery().find(&request.session) {
    Ok(session) => session,
    Err(error) => return ForgetResult::failed(error),
  };
  let change = match forgotten::forget(&engine.agent_dir, &session) {
    Ok(change) => change,
    Err(error) => return ForgetResult::failed(error),
  };
  let records_removed = index::drop_session(&engine.index_context(), &session.path);
  ForgetResult { changed: change.changed, forgotten: change.forgotten, records_removed, error: None }
}

/// Takes back the forget of the session `request` names, as the list records it.
pub fn unforget(engine: &Engine, request: &ForgetRequest) -> ForgetResult {
  match forgotten::unforget(&engine.agent_dir, &request.session) {
    Ok(change) => ForgetResult { changed: change.changed, forgotten: change.forgotten, ..ForgetResult::default() },
    Err(error) => ForgetResult::failed(error),
  }
}

/// Every forgotten session.
pub fn list(engine: &Engine) -> ForgetResult {
  match forgotten::load(&engine.agent_dir) {
    Ok(list) => ForgetResult { forgotten: list.sessions.clone(), ..ForgetResult::default() },
    Err(error) => ForgetResult::failed(error),
  }
}

#[cfg(test)]
mod tests;

//! `memory.forget`, `memory.unforget` and `memory.forgotten`: a session the
//! user wants recall never to surface again, without touching Pi's history.
//! The list is [`crate::forgotten`]'s; forgetting also drops the session's
//! derived records from the index dir, so neither its vocabulary nor its
//! text stays on disk, and every later sync leaves it out.

use crate::args::Args;
use crate::engine::Engine;
use crate::error::{ContractError, CoreResult, ErrorCode};
use crate::forgotten::{self, Forgotten};
use crate::index;
use crate::session::discover::SessionFile;
use crate::session::lineage::Branches;
use serde::Serialize;
use serde_json::Value;

/// A forget or unforget: the session by id, id prefix, file stem or path,
/// and optionally one entry of it by its id (as `memory.expand`'s
/// `entryIds` names it).
#[derive(Debug, Clone, PartialEq)]
pub struct ForgetRequest {
  pub session: String,
  pub entry_id: Option<String>,
}

impl ForgetRequest {
  pub fn from_json(call: &'static str, value: Option<&Value>) -> CoreResult<ForgetRequest> {
    let args = Args::new(call, value, &["session", "entryId"])?;
    let entry_id = match args.string("entryId")? {
      Some(id) if id.trim().is_empty() => {
        return Err(crate::error::CoreError::invalid(format!("{call}: entryId, when given, is an entry's id")))
      }
      id => id,
    };
    match args.string("session")? {
      Some(session) if !session.trim().is_empty() => Ok(ForgetRequest { session, entry_id }),
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
/// or not), or its one entry, and drops the session's records from the
/// index: they are rebuilt without the entry, or not at all.
pub fn forget(engine: &Engine, request: &ForgetRequest) -> ForgetResult {
  let forgot = index::find_session(&engine.index_context(), &request.session).and_then(|session| {
    if let Some(entry) = &request.entry_id {
      check_entry(engine, &session, entry)?;
    }
    Ok((forgotten::forget(&engine.agent_dir, &session, request.entry_id.as_deref())?, session))
  });
  let (change, session) = match forgot {
    Ok(forgot) => forgot,
    Err(error) => return ForgetResult::failed(error),
  };
  let records_removed = index::drop_session(&engine.index_context(), &session.path);
  ForgetResult { changed: change.changed, forgotten: change.forgotten, records_removed, error: None }
}

/// `address_not_found` unless `entry` is an entry of `session` on some
/// branch, or already forgotten (a second forget then changes nothing).
fn check_entry(engine: &Engine, session: &SessionFile, entry: &str) -> Result<(), ContractError> {
  let view = engine.load(&session.path, Branches::All, &engine.config.expand_policy())?;
  if view.forgotten.contains(entry) || view.normalized.entries.iter().any(|e| e.entry_id.as_deref() == Some(entry)) {
    return Ok(());
  }
  Err(
    ContractError::new(ErrorCode::AddressNotFound, format!("Session {} has no entry \"{entry}\".", session.header.id))
      .with("addressType", "entryId")
      .with("address", entry),
  )
}

/// Takes back the forget of the session `request` names, or of its one
/// entry, as the list records it. An entry's session is rebuilt with it
/// (its records dropped); a whole session is indexed again by the next call.
pub fn unforget(engine: &Engine, request: &ForgetRequest) -> ForgetResult {
  let change = match forgotten::unforget(&engine.agent_dir, &request.session, request.entry_id.as_deref()) {
    Ok(change) => change,
    Err(error) => return ForgetResult::failed(error),
  };
  let records_removed = match (&request.entry_id, change.changed.first()) {
    (Some(_), Some(taken)) => index::drop_session(&engine.index_context(), std::path::Path::new(&taken.file)),
    _ => 0,
  };
  ForgetResult { changed: change.changed, forgotten: change.forgotten, records_removed, error: None }
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

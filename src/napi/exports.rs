//! The addon's module-level functions: its version, Pi's path rules, a
//! session file's header, a cache record's JSON, and pinning call arguments.

use super::json::Json;
use super::{caught, to_napi};
use crate::error::CoreError;
use crate::session::binding::pin::{self, Slot};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;

/// The addon's version, for diagnostics.
#[napi]
pub fn version() -> String {
  env!("CARGO_PKG_VERSION").to_string()
}

/// A user-given path as Pi's `normalizePath` reads it (`~`, `~/…`, a
/// `file://` URL; anything else as given): the one copy of the rule, which
/// the shim uses for every agent and session dir.
#[napi]
pub fn expand_pi_path(path: String) -> String {
  crate::pi_path::expand_home(&path).to_string_lossy().into_owned()
}

/// A Pi session file's header, read as recall reads it (a regular file
/// only, the first non-blank line, bounded, never blocking on a FIFO);
/// `null` when the file is not a Pi session or cannot be read.
#[napi(object)]
pub struct SessionHeader {
  pub id: String,
  pub cwd: String,
  pub timestamp: Option<String>,
  pub version: u32,
  pub parent_session: Option<String>,
}

#[napi]
pub fn session_header(path: String) -> Result<Option<SessionHeader>> {
  caught("sessionHeader", || {
    let header = crate::session::discover::read_header(std::path::Path::new(&path))?;
    let crate::session::parse::Header { id, cwd, timestamp, version, parent_session } = header;
    Some(SessionHeader { id, cwd, timestamp, version, parent_session })
  })
}

/// Pi's `getAgentDir()` for a `PI_CODING_AGENT_DIR` value: unset or empty
/// is `~/.pi/agent`, anything else as [`expand_pi_path`].
#[napi]
pub fn pi_agent_dir(from_env: Option<String>) -> String {
  crate::pi_path::agent_dir_from(from_env.as_deref()).to_string_lossy().into_owned()
}

/// Decodes one index record (`<indexDir>/*.hot|*.cold`) as JSON, for
/// diagnostics and tests; `null` when the file is not an intact record of the current version (head and body).
#[napi(ts_return_type = "Record<string, unknown> | null")]
pub fn inspect_cache_record(path: String) -> Result<Option<Json>> {
  caught("inspectCacheRecord", || {
    let config = crate::config::Config::default();
    let limit =
      crate::index::record::read_limit(&config, crate::index::record::Tier::Hot, config.max_sync_source_bytes);
    let bytes = crate::index::record::read(std::path::Path::new(&path), limit).ok()?;
    let record = crate::index::decode_record(std::path::Path::new(&path), &bytes, limit)?;
    serde_json::to_value(record).ok().map(Json)
  })
}

fn pin_slot(slot: &str) -> Result<Slot> {
  Slot::parse(slot)
    .ok_or_else(|| to_napi(CoreError::invalid(format!("pin slot must be \"session\" or \"scope\", got {slot:?}"))))
}

/// A follow or next call's arguments with the session it names and its
/// binding folded into one `pin` (`session::binding::pin`); other calls as
/// they are. `sessionId` is the header id of the session the call names.
#[napi(
  ts_args_type = "args: Record<string, unknown>, slot: 'session' | 'scope', sessionId?: string | null",
  ts_return_type = "Record<string, unknown>"
)]
pub fn pin_call(args: Value, slot: String, session_id: Option<String>) -> Result<Value> {
  caught("pinCall", || {
    let slot = pin_slot(&slot)?;
    let folded = args.as_object().and_then(|map| pin::fold(map, slot, session_id.as_deref()));
    Ok(folded.map(Value::Object).unwrap_or(args))
  })?
}

/// The arguments of a call that may carry a `pin`, with it unfolded: what
/// `memory.recall` and `memory.expand` read. Throws `invalid_argument` for a
/// malformed pin or one beside a key it stands for.
#[napi(
  ts_args_type = "args: Record<string, unknown>, slot: 'session' | 'scope', call: string",
  ts_return_type = "Record<string, unknown>"
)]
pub fn unpin_call(args: Value, slot: String, call: String) -> Result<Value> {
  caught("unpinCall", || {
    let slot = pin_slot(&slot)?;
    let unfolded = pin::unfolded(Some(&args), slot, &call).map_err(to_napi)?;
    Ok(unfolded.unwrap_or(args))
  })?
}

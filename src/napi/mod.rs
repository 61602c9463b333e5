//! The napi edge: the `MemoryEngine` class, one `AsyncTask` per call, and
//! error mapping. Argument validation runs synchronously (cheap) so a bad
//! call throws at once; the work runs on the libuv pool and rayon, and a
//! panic is caught here so it never crosses into JavaScript. The class is
//! here; the task each call runs in `task`, the JSON values handed to
//! JavaScript in `json`, progress callbacks in `progress`, the module-level
//! functions in `exports`, the curated store in `store`.

use crate::config::Config;
use crate::engine::{Engine, Live};
use crate::error::CoreError;
use crate::ops::expand::ExpandRequest;
use crate::ops::forget::ForgetRequest;
use crate::ops::pack::PackRequest;
use crate::ops::recall::RecallRequest;
use crate::ops::sessions::SessionsRequest;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};

mod exports;
mod json;
mod progress;
mod project;
mod store;
mod task;

use json::Json;
use progress::{progress_sink, ProgressCallback};
use task::{Operation, OperationTask};

fn to_napi(error: CoreError) -> Error {
  let status = match error {
    CoreError::InvalidArgument(_) => Status::InvalidArg,
    _ => Status::GenericFailure,
  };
  // Messages can quote arguments: thrown errors stay small too.
  Error::new(status, crate::text::cap_with_ellipsis(&error.to_string(), 2_000))
}

/// Runs `work`, turning a panic into a thrown `internal_error` that keeps
/// the panic's message: the one policy of every export, sync or async
/// (constructors, argument parsing, tasks; getters only read a field), so
/// no panic crosses into JavaScript, where it would abort the process.
fn caught<T>(what: &str, work: impl FnOnce() -> T) -> Result<T> {
  catch_unwind(AssertUnwindSafe(work)).map_err(|payload| {
    let message = payload
      .downcast_ref::<&str>()
      .map(|s| s.to_string())
      .or_else(|| payload.downcast_ref::<String>().cloned())
      .unwrap_or_else(|| "no message".into());
    to_napi(CoreError::Internal(format!("{what} panicked: {message}")))
  })
}

#[napi(object)]
pub struct MemoryOptions {
  /// Pi's agent dir; default `PI_CODING_AGENT_DIR` or `~/.pi/agent`.
  pub agent_dir: Option<String>,
  /// The project directory for `session` and `project` scopes; default `process.cwd()`.
  pub cwd: Option<String>,
  /// The `memory` settings object (see README, Configuration).
  pub config: Option<Value>,
  /// Pi's custom session dir (flat, every cwd's sessions), searched besides
  /// `<agentDir>/sessions`; relative to `cwd`.
  pub session_dir: Option<String>,
}

/// Recall over one Pi agent dir. Every method takes the call's arguments
/// and, for the live session, `{sessionFile, leafId, branchIds}` read from
/// Pi's `SessionManager` on that call.
#[napi]
pub struct MemoryEngine {
  engine: Engine,
}

#[napi]
impl MemoryEngine {
  #[napi(constructor)]
  pub fn new(options: Option<MemoryOptions>) -> Result<Self> {
    caught("new MemoryEngine", || {
      let (agent_dir, cwd, config, session_dir) = match options {
        Some(o) => (o.agent_dir, o.cwd, o.config, o.session_dir),
        None => (None, None, None, None),
      };
      let config = Config::from_json(config.as_ref()).map_err(to_napi)?;
      let engine = Engine::new(agent_dir.as_deref(), cwd.as_deref(), config)
        .map_err(to_napi)?
        .with_session_dir(session_dir.as_deref());
      Ok(MemoryEngine { engine })
    })?
  }

  #[napi(getter)]
  pub fn agent_dir(&self) -> String {
    self.engine.agent_dir.to_string_lossy().into_owned()
  }

  #[napi(getter)]
  pub fn cwd(&self) -> String {
    self.engine.cwd.to_string_lossy().into_owned()
  }

  /// The resolved custom session dir, or null.
  #[napi(getter)]
  pub fn session_dir(&self) -> Option<String> {
    self.engine.session_dir.as_ref().map(|d| d.to_string_lossy().into_owned())
  }

  fn task(&self, live: Option<Value>, operation: Operation) -> Result<AsyncTask<OperationTask>> {
    self.task_with_progress(live, None, operation)
  }

  fn task_with_progress(
    &self,
    live: Option<Value>,
    on_progress: Option<ProgressCallback>,
    operation: Operation,
  ) -> Result<AsyncTask<OperationTask>> {
    let live = Live::from_json(live.as_ref()).map_err(to_napi)?;
    let engine = Engine { progress: on_progress.map(progress_sink), ..self.engine.with_live(live) };
    Ok(AsyncTask::new(OperationTask { engine, operation }))
  }

  /// The effective `memory` configuration (defaults filled in), camelCase.
  #[napi(getter, ts_return_type = "Record<string, unknown>")]
  pub fn config(&self) -> Json {
    Json(self.engine.config.to_json())
  }

  /// The index directory this engine reads and writes.
  #[napi(getter)]
  pub fn index_dir(&self) -> String {
    self.engine.index_dir().to_string_lossy().into_owned()
  }

  /// `memory.recall`: ranked, bounded evidence with copy-ready `follow` calls.
  /// `onProgress` receives the indexing work this call does (the plan, then
  /// each build), so a host can show a first recall's wait.
  #[napi(ts_return_type = "Promise<RecallPage>")]
  pub fn recall(
    &self,
    #[napi(ts_arg_type = "RecallArgs")] args: Option<Value>,
    #[napi(ts_arg_type = "LiveBranchArg")] live: Option<Value>,
    #[napi(ts_arg_type = "(progress: IndexProgress) => void")] on_progress: Option<ProgressCallback>,
  ) -> Result<AsyncTask<OperationTask>> {
    let request = caught("memory.recall's arguments", || RecallRequest::from_json(args.as_ref()))?.map_err(to_napi)?;
    self.task_with_progress(live, on_progress, Operation::Recall(Box::new(request)))
  }

  /// `memory.expand`: full normalized entries in `textRange` chunks.
  #[napi(ts_return_type = "Promise<ExpandPage>")]
  pub fn expand(
    &self,
    #[napi(ts_arg_type = "ExpandArgs")] args: Option<Value>,
    #[napi(ts_arg_type = "LiveBranchArg")] live: Option<Value>,
  ) -> Result<AsyncTask<OperationTask>> {
    let request = caught("memory.expand's arguments", || ExpandRequest::from_json(args.as_ref()))?.map_err(to_napi)?;
    self.task(live, Operation::Expand(request))
  }

  /// `memory.pack`: what the history says about a query, as cited excerpts
  /// (each verified by running its follow call) within `maxTokens`.
  #[napi(ts_return_type = "Promise<EvidencePack>")]
  pub fn pack(
    &self,
    #[napi(ts_arg_type = "PackArgs")] args: Option<Value>,
    #[napi(ts_arg_type = "LiveBranchArg")] live: Option<Value>,
    #[napi(ts_arg_type = "(progress: IndexProgress) => void")] on_progress: Option<ProgressCallback>,
  ) -> Result<AsyncTask<OperationTask>> {
    let request = caught("memory.pack's arguments", || PackRequest::from_json(args.as_ref()))?.map_err(to_napi)?;
    self.task_with_progress(live, on_progress, Operation::Pack(Box::new(request)))
  }

  /// `memory.sessions`: sessions of a scope, newest first. `onProgress`
  /// receives the indexing work this call does (the plan, then each build).
  #[napi(ts_return_type = "Promise<SessionsPage>")]
  pub fn sessions(
    &self,
    #[napi(ts_arg_type = "SessionsArgs")] args: Option<Value>,
    #[napi(ts_arg_type = "LiveBranchArg")] live: Option<Value>,
    #[napi(ts_arg_type = "(progress: IndexProgress) => void")] on_progress: Option<ProgressCallback>,
  ) -> Result<AsyncTask<OperationTask>> {
    let request =
      caught("memory.sessions' arguments", || SessionsRequest::from_json(args.as_ref()))?.map_err(to_napi)?;
    self.task_with_progress(live, on_progress, Operation::Sessions(request))
  }

  /// `memory.forget({session, entryId?})`: recall, expand, sessions and
  /// packs never surface the session again (by its id and its file), or
  /// with `entryId` that one entry of it, until `unforget`; its index
  /// records are removed (rebuilt without the entry). Pi's file is never
  /// touched.
  #[napi(ts_return_type = "Promise<ForgetResult>")]
  pub fn forget(&self, #[napi(ts_arg_type = "ForgetArgs")] args: Value) -> Result<AsyncTask<OperationTask>> {
    let request = caught("memory.forget's arguments", || ForgetRequest::from_json("memory.forget", Some(&args)))?
      .map_err(to_napi)?;
    self.task(None, Operation::Forget(request))
  }

  /// `memory.unforget({session, entryId?})`: takes a forget back (by the
  /// id, an id prefix or the file the list records, and the entry's id).
  #[napi(ts_return_type = "Promise<ForgetResult>")]
  pub fn unforget(&self, #[napi(ts_arg_type = "ForgetArgs")] args: Value) -> Result<AsyncTask<OperationTask>> {
    let request = caught("memory.unforget's arguments", || ForgetRequest::from_json("memory.unforget", Some(&args)))?
      .map_err(to_napi)?;
    self.task(None, Operation::Unforget(request))
  }

  /// Every forgotten session (`forgotten`), or the list's error.
  #[napi(ts_return_type = "Promise<ForgetResult>")]
  pub fn forgotten(&self) -> Result<AsyncTask<OperationTask>> {
    self.task(None, Operation::Forgotten)
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a_panic_is_a_thrown_internal_error_that_keeps_its_message() {
    let error = caught("a test export", || -> u32 { panic!("boom {}", 7) }).unwrap_err();
    assert_eq!(error.status, Status::GenericFailure);
    assert_eq!(error.reason, "internal error: a test export panicked: boom 7");
    let error = caught("a test export", || -> u32 { std::panic::panic_any(3_u8) }).unwrap_err();
    assert_eq!(error.reason, "internal error: a test export panicked: no message");
    assert_eq!(caught("a test export", || 5).unwrap(), 5);
  }
}

//! The napi edge: the `MemoryEngine` class, one `AsyncTask` per call, and
//! error mapping. Argument validation runs synchronously (cheap) so a bad
//! call throws at once; the work runs on the libuv pool and rayon, and a
//! panic is caught here so it never crosses into JavaScript.

use crate::config::Config;
use crate::engine::{Engine, Live};
use crate::error::CoreError;
use crate::index::progress::{ProgressSink, SyncProgress};
use crate::ops::envelope::bounded;
use crate::ops::expand::{expand, ExpandRequest};
use crate::ops::forget::{self, ForgetRequest};
use crate::ops::pack::{pack, PackRequest};
use crate::ops::recall::{recall, RecallRequest};
use crate::ops::sessions::{sessions, SessionsRequest};
use crate::session::binding::pin::{self, Slot};
use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use serde_json::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

mod project;
mod store;

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

/// Indexing progress of one call: the sessions and source bytes it plans to
/// index (current records cost nothing) and how much of that is done.
#[napi(object)]
#[derive(Clone, Copy)]
pub struct IndexProgress {
  pub eligible_sessions: f64,
  /// Sessions whose records were already current when the call started.
  pub fresh_sessions: f64,
  pub sessions_to_index: f64,
  pub sessions_indexed: f64,
  pub bytes_to_index: f64,
  pub bytes_indexed: f64,
}

impl From<SyncProgress> for IndexProgress {
  fn from(p: SyncProgress) -> Self {
    IndexProgress {
      eligible_sessions: p.eligible_sessions as f64,
      fresh_sessions: p.fresh_sessions as f64,
      sessions_to_index: p.sessions_to_index as f64,
      sessions_indexed: p.sessions_indexed as f64,
      bytes_to_index: p.bytes_to_index as f64,
      bytes_indexed: p.bytes_indexed as f64,
    }
  }
}

/// A JS progress callback: called without waiting for it (non-blocking, so
/// a slow renderer never stalls indexing) and weak (it never keeps Node alive).
type ProgressCallback = ThreadsafeFunction<IndexProgress, Unknown<'static>, IndexProgress, Status, false, true>;

fn progress_sink(callback: ProgressCallback) -> ProgressSink {
  ProgressSink(Arc::new(move |p: SyncProgress| {
    callback.call(p.into(), ThreadsafeFunctionCallMode::NonBlocking);
  }))
}

/// A JSON result handed to JavaScript as a plain object.
pub struct Json(Value);

impl TypeName for Json {
  fn type_name() -> &'static str {
    "unknown"
  }

  fn value_type() -> ValueType {
    ValueType::Object
  }
}

impl ToNapiValue for Json {
  unsafe fn to_napi_value(env: napi::sys::napi_env, val: Self) -> Result<napi::sys::napi_value> {
    Value::to_napi_value(env, val.0)
  }
}

/// A result serialized to JSON text on the worker thread and handed to
/// JavaScript through `JSON.parse`: one V8 parse is several times cheaper on
/// the event loop than building the object one napi call per property
/// (measured: a 30 KB recall page took 1.6 ms as `Value::to_napi_value`).
/// The text is ASCII (`text::ascii_json`), so V8 takes it as a one-byte string.
pub struct JsonText(String);

impl TypeName for JsonText {
  fn type_name() -> &'static str {
    "unknown"
  }

  fn value_type() -> ValueType {
    ValueType::Object
  }
}

impl ToNapiValue for JsonText {
  unsafe fn to_napi_value(env: napi::sys::napi_env, val: Self) -> Result<napi::sys::napi_value> {
    use napi::sys;
    let mut global = std::ptr::null_mut();
    check_status!(sys::napi_get_global(env, &mut global))?;
    let mut json = std::ptr::null_mut();
    check_status!(sys::napi_get_named_property(env, global, c"JSON".as_ptr(), &mut json))?;
    let mut parse = std::ptr::null_mut();
    check_status!(sys::napi_get_named_property(env, json, c"parse".as_ptr(), &mut parse))?;
    let mut text = std::ptr::null_mut();
    // ASCII (`text::ascii_json`): Latin-1 bytes as they are, no UTF-8 decoding.
    let create = if val.0.is_ascii() { sys::napi_create_string_latin1 } else { sys::napi_create_string_utf8 };
    check_status!(create(env, val.0.as_ptr().cast(), val.0.len() as isize, &mut text))?;
    let mut parsed = std::ptr::null_mut();
    check_status!(sys::napi_call_function(env, json, parse, 1, &text, &mut parsed))?;
    Ok(parsed)
  }
}

enum Operation {
  Recall(Box<RecallRequest>),
  Expand(ExpandRequest),
  Sessions(SessionsRequest),
  Pack(Box<PackRequest>),
  Forget(ForgetRequest),
  Unforget(ForgetRequest),
  Forgotten,
}

pub struct OperationTask {
  engine: Engine,
  operation: Operation,
}

#[napi]
impl Task for OperationTask {
  type Output = String;
  type JsValue = JsonText;

  fn compute(&mut self) -> Result<String> {
    let json = caught("a memory operation", || match &self.operation {
      Operation::Recall(request) => bounded(&recall(&self.engine, request)),
      Operation::Expand(request) => bounded(&expand(&self.engine, request)),
      Operation::Sessions(request) => bounded(&sessions(&self.engine, request)),
      Operation::Pack(request) => bounded(&pack(&self.engine, request)),
      Operation::Forget(request) => bounded(&forget::forget(&self.engine, request)),
      Operation::Unforget(request) => bounded(&forget::unforget(&self.engine, request)),
      Operation::Forgotten => bounded(&forget::list(&self.engine)),
    })?;
    json.map(crate::text::ascii_json).map_err(|error| to_napi(CoreError::Internal(error.to_string())))
  }

  fn resolve(&mut self, _env: Env, output: String) -> Result<JsonText> {
    Ok(JsonText(output))
  }
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

  /// `memory.forget({session})`: recall, expand, sessions and packs never
  /// surface the session again (by its id and its file) until `unforget`;
  /// its index records are removed. Pi's file is never touched.
  #[napi(ts_return_type = "Promise<ForgetResult>")]
  pub fn forget(&self, #[napi(ts_arg_type = "ForgetArgs")] args: Value) -> Result<AsyncTask<OperationTask>> {
    let request = caught("memory.forget's arguments", || ForgetRequest::from_json("memory.forget", Some(&args)))?
      .map_err(to_napi)?;
    self.task(None, Operation::Forget(request))
  }

  /// `memory.unforget({session})`: takes a forget back (by the id, an id
  /// prefix or the file the list records).
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

/// Pi's `getAgentDir()` for a `PI_CODING_AGENT_DIR` value: unset or empty
/// is `~/.pi/agent`, anything else as [`expand_pi_path`].
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
    let record = crate::index::record::CacheRecord::decode(&bytes)?;
    serde_json::to_value(record).ok().map(Json)
  })
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

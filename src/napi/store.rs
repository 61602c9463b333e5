//! The `MemoryStore` class: curated memory (`MEMORY.md`, `USER.md`). Disk
//! work runs as an `AsyncTask` on the libuv pool; the prompt-snapshot
//! accessors are synchronous (they read in-memory state only). Panics are
//! caught here so none crosses into JavaScript.

use super::{caught, to_napi, Json};
use crate::error::CoreError;
use crate::pi_path::{default_agent_dir, expand_home};
use crate::store::proposals::Selection;
use crate::store::{snapshot, MemoryStore as Core, Project, StoreOptions, Target};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

#[napi(object)]
pub struct MemoryStoreOptions {
  /// Directory of `MEMORY.md` and `USER.md`; default `<agentDir>/memories`.
  pub dir: Option<String>,
  /// Limit of `MEMORY.md` in UTF-16 units (1–1,000,000; default 2,200).
  pub memory_char_limit: Option<f64>,
  /// Limit of `USER.md` in UTF-16 units (1–1,000,000; default 1,375).
  pub user_char_limit: Option<f64>,
  /// How long a write waits for another writer's lock (0–600,000 ms; default 10,000).
  pub lock_timeout_ms: Option<f64>,
  /// Age after which a lock is abandoned (2,000–600,000 ms; default 30,000, as proper-lockfile).
  pub lock_stale_ms: Option<f64>,
  /// The project whose `MEMORY.md` is target `"project"` (`projectIdentity(cwd)`'s `key` and `name`);
  /// without it the store is global only.
  pub project: Option<MemoryStoreProject>,
}

/// A project identity as the store needs it (a `ProjectIdentity` passes as it is).
#[napi(object)]
pub struct MemoryStoreProject {
  pub key: String,
  pub name: String,
}

/// The project a store was opened for, and where its `MEMORY.md` lives.
#[napi(object)]
pub struct MemoryStoreProjectInfo {
  pub key: String,
  pub name: String,
  pub dir_name: String,
  /// `<dir>/projects/<dirName>`.
  pub dir: String,
}

#[napi(object)]
pub struct ThreatFlagsOptions {
  /// Skip text that cannot match (default true); off only to measure the prefilter.
  pub prefilter: Option<bool>,
}

/// The threat-pattern ids recalled evidence with this text is flagged with
/// (`threats` on hits and expanded entries); empty for clean text.
#[napi]
pub fn threat_flags(text: String, options: Option<ThreatFlagsOptions>) -> Result<Vec<String>> {
  let prefilter = options.and_then(|o| o.prefilter).unwrap_or(true);
  caught("threatFlags", || crate::threat::flags::flags_with(&text, prefilter))
}

#[napi(object)]
pub struct MemoryReadOptions {
  /// Include each entry's provenance (`provenance[i]` for `entries[i]`, `null` when none).
  pub provenance: Option<bool>,
}

#[napi(object)]
pub struct MemoryApplyOptions {
  /// Check the batch against the file as it is now, without writing.
  pub dry_run: Option<bool>,
}

fn bounded(name: &str, value: Option<f64>, min: u64, max: u64, default: u64) -> std::result::Result<u64, CoreError> {
  match value {
    None => Ok(default),
    Some(v) if v.fract() == 0.0 && v >= min as f64 && v <= max as f64 => Ok(v as u64),
    Some(v) => Err(CoreError::invalid(format!("MemoryStore: {name} must be an integer from {min} to {max}, got {v}"))),
  }
}

fn store_options(options: Option<MemoryStoreOptions>) -> std::result::Result<StoreOptions, CoreError> {
  let o = options.unwrap_or(MemoryStoreOptions {
    dir: None,
    memory_char_limit: None,
    user_char_limit: None,
    lock_timeout_ms: None,
    lock_stale_ms: None,
    project: None,
  });
  let dir = match o.dir.as_deref().map(str::trim) {
    Some(dir) if !dir.is_empty() => expand_home(dir),
    _ => default_agent_dir().join("memories"),
  };
  let mut store = StoreOptions::new(dir);
  store.memory_char_limit = bounded("memoryCharLimit", o.memory_char_limit, 1, 1_000_000, 2_200)? as usize;
  store.user_char_limit = bounded("userCharLimit", o.user_char_limit, 1, 1_000_000, 1_375)? as usize;
  store.lock.timeout = Duration::from_millis(bounded("lockTimeoutMs", o.lock_timeout_ms, 0, 600_000, 10_000)?);
  store.lock.stale = Duration::from_millis(bounded("lockStaleMs", o.lock_stale_ms, 2_000, 600_000, 30_000)?);
  if let Some(project) = o.project {
    let parsed = Project::new(&project.key, &project.name);
    store.project = Some(parsed.ok_or_else(|| {
      CoreError::invalid(format!(
        "MemoryStore: project.key must be a key projectIdentity made (v1:<32 hex digits>), got {:?}",
        project.key
      ))
    })?);
  }
  Ok(store)
}

fn parse_target(text: &str) -> Result<Target> {
  caught("the target argument", || Target::parse(text))?.ok_or_else(|| {
    to_napi(CoreError::invalid(format!("target must be \"memory\", \"user\" or \"project\", got {text:?}")))
  })
}

enum StoreOp {
  Load,
  Status,
  Read(Target, bool),
  Add(Target, String),
  Replace(Target, String, String),
  Remove(Target, String),
  Apply(Target, Value, bool),
  ApplyForReview(Target, Value),
  Proposals,
  ApplyProposals(Selection),
  RejectProposals(Selection),
}

/// `"all"` or a list of proposal ids.
fn parse_selection(value: &Value) -> Result<Selection> {
  caught("the proposals argument", || selection(value))?
}

fn selection(value: &Value) -> Result<Selection> {
  if value.as_str() == Some("all") {
    return Ok(Selection::All);
  }
  let ids = value.as_array().and_then(|list| list.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>());
  match ids {
    Some(ids) if !ids.is_empty() => Ok(Selection::Ids(ids)),
    _ => Err(to_napi(CoreError::invalid(format!("proposals must be \"all\" or a non-empty list of ids, got {value}")))),
  }
}

fn proposals_value(store: &Core) -> serde_json::Result<Value> {
  match store.proposals() {
    Ok(proposals) => Ok(serde_json::json!({ "success": true, "proposals": proposals })),
    Err(failure) => serde_json::to_value(failure),
  }
}

pub struct StoreTask {
  store: Arc<Core>,
  op: StoreOp,
}

#[napi]
impl Task for StoreTask {
  type Output = Value;
  type JsValue = Json;

  fn compute(&mut self) -> Result<Value> {
    let store = &self.store;
    let value = caught("a curated-memory operation", || match &self.op {
      StoreOp::Load => serde_json::to_value(store.load_from_disk()),
      StoreOp::Status => serde_json::to_value(store.status()),
      StoreOp::Read(t, false) => serde_json::to_value(store.read(*t)),
      StoreOp::Read(t, true) => serde_json::to_value(store.read_with_provenance(*t)),
      StoreOp::Add(t, content) => serde_json::to_value(store.add(*t, content)),
      StoreOp::Replace(t, old, new) => serde_json::to_value(store.replace(*t, old, new)),
      StoreOp::Remove(t, old) => serde_json::to_value(store.remove(*t, old)),
      StoreOp::Apply(t, ops, dry_run) => serde_json::to_value(store.apply(*t, ops, *dry_run)),
      StoreOp::ApplyForReview(t, ops) => serde_json::to_value(store.apply_for_review(*t, ops)),
      StoreOp::Proposals => proposals_value(store),
      StoreOp::ApplyProposals(selection) => serde_json::to_value(store.apply_proposals(selection)),
      StoreOp::RejectProposals(selection) => serde_json::to_value(store.reject_proposals(selection)),
    })?;
    value.map_err(|error| to_napi(CoreError::Internal(error.to_string())))
  }

  fn resolve(&mut self, _env: Env, output: Value) -> Result<Json> {
    Ok(Json(output))
  }
}

/// Curated memory: `MEMORY.md` (target `"memory"`) and `USER.md` (target
/// `"user"`), entries separated by a line holding only `§`, compatible with
/// `@amaster.ai/pi-memory`; opened for a project, also that project's
/// `MEMORY.md` (target `"project"`). Write failures are results with `success: false`.
#[napi]
pub struct MemoryStore {
  store: Arc<Core>,
}

#[napi]
impl MemoryStore {
  #[napi(constructor)]
  pub fn new(options: Option<MemoryStoreOptions>) -> Result<Self> {
    caught("new MemoryStore", || {
      let options = store_options(options).map_err(to_napi)?;
      Ok(MemoryStore { store: Arc::new(Core::new(options)) })
    })?
  }

  #[napi(getter)]
  pub fn dir(&self) -> String {
    self.store.dir().to_string_lossy().into_owned()
  }

  /// The project the store was opened for (target `"project"`); `null`: global only.
  #[napi(getter)]
  pub fn project(&self) -> Option<MemoryStoreProjectInfo> {
    let project = self.store.project()?;
    let dir = self.store.dir_of(Target::Project)?;
    Some(MemoryStoreProjectInfo {
      key: project.key.clone(),
      name: project.name.clone(),
      dir_name: project.dir_name.clone(),
      dir: dir.to_string_lossy().into_owned(),
    })
  }

  #[napi(getter)]
  pub fn memory_char_limit(&self) -> u32 {
    self.store.limit(Target::Memory) as u32
  }

  #[napi(getter)]
  pub fn user_char_limit(&self) -> u32 {
    self.store.limit(Target::User) as u32
  }

  fn task(&self, op: StoreOp) -> AsyncTask<StoreTask> {
    AsyncTask::new(StoreTask { store: self.store.clone(), op })
  }

  /// Re-reads both files and rebuilds the sanitized prompt snapshot.
  #[napi(ts_return_type = "Promise<MemoryStoreStatus>")]
  pub fn load_from_disk(&self) -> AsyncTask<StoreTask> {
    self.task(StoreOp::Load)
  }

  /// Entry counts and usage per file, read fresh from disk.
  #[napi(ts_return_type = "Promise<MemoryStoreStatus>")]
  pub fn status(&self) -> AsyncTask<StoreTask> {
    self.task(StoreOp::Status)
  }

  /// The live, raw entries of one file (re-read from disk); with
  /// `{ provenance: true }`, each entry's recorded evidence too.
  #[napi(ts_return_type = "Promise<MemoryStoreResult>")]
  pub fn read(
    &self,
    #[napi(ts_arg_type = "MemoryTarget")] target: String,
    options: Option<MemoryReadOptions>,
  ) -> Result<AsyncTask<StoreTask>> {
    let provenance = options.and_then(|o| o.provenance).unwrap_or(false);
    Ok(self.task(StoreOp::Read(parse_target(&target)?, provenance)))
  }

  #[napi(ts_return_type = "Promise<MemoryStoreResult>")]
  pub fn add(
    &self,
    #[napi(ts_arg_type = "MemoryTarget")] target: String,
    content: String,
  ) -> Result<AsyncTask<StoreTask>> {
    Ok(self.task(StoreOp::Add(parse_target(&target)?, content)))
  }

  /// Replaces the one entry containing `oldText` with `newContent`.
  #[napi(ts_return_type = "Promise<MemoryStoreResult>")]
  pub fn replace(
    &self,
    #[napi(ts_arg_type = "MemoryTarget")] target: String,
    old_text: String,
    new_content: String,
  ) -> Result<AsyncTask<StoreTask>> {
    Ok(self.task(StoreOp::Replace(parse_target(&target)?, old_text, new_content)))
  }

  /// Removes the one entry containing `oldText`.
  #[napi(ts_return_type = "Promise<MemoryStoreResult>")]
  pub fn remove(
    &self,
    #[napi(ts_arg_type = "MemoryTarget")] target: String,
    old_text: String,
  ) -> Result<AsyncTask<StoreTask>> {
    Ok(self.task(StoreOp::Remove(parse_target(&target)?, old_text)))
  }

  /// Applies a batch all or nothing: validated, then run in order under one
  /// lock, checked against the final size budget, written once. A failure
  /// names the operation (`failedOperation`) and leaves the file untouched.
  #[napi(ts_return_type = "Promise<MemoryStoreResult>")]
  pub fn apply(
    &self,
    #[napi(ts_arg_type = "MemoryTarget")] target: String,
    #[napi(ts_arg_type = "MemoryOperation[]")] operations: Value,
    #[napi(ts_arg_type = "MemoryApplyOptions")] options: Option<MemoryApplyOptions>,
  ) -> Result<AsyncTask<StoreTask>> {
    let dry_run = options.and_then(|o| o.dry_run).unwrap_or(false);
    Ok(self.task(StoreOp::Apply(parse_target(&target)?, operations, dry_run)))
  }

  /// Applies a batch as unattended dreaming does by default: net additions
  /// are written, replacements and removals are staged in `proposals.json`
  /// for the user's review (`proposed` in the result).
  #[napi(ts_return_type = "Promise<MemoryStoreResult>")]
  pub fn apply_for_review(
    &self,
    #[napi(ts_arg_type = "MemoryTarget")] target: String,
    #[napi(ts_arg_type = "MemoryOperation[]")] operations: Value,
  ) -> Result<AsyncTask<StoreTask>> {
    Ok(self.task(StoreOp::ApplyForReview(parse_target(&target)?, operations)))
  }

  /// The changes awaiting review (read fresh from `proposals.json`).
  #[napi(ts_return_type = "Promise<MemoryProposalList>")]
  pub fn proposals(&self) -> AsyncTask<StoreTask> {
    self.task(StoreOp::Proposals)
  }

  /// Applies proposals by id (or `"all"`), each only to the exact entry it
  /// was made for; a stale one is refused and stays listed.
  #[napi(ts_return_type = "Promise<MemoryReviewReport>")]
  pub fn apply_proposals(&self, #[napi(ts_arg_type = "number[] | 'all'")] ids: Value) -> Result<AsyncTask<StoreTask>> {
    Ok(self.task(StoreOp::ApplyProposals(parse_selection(&ids)?)))
  }

  /// Drops proposals by id (or `"all"`) without changing memory.
  #[napi(ts_return_type = "Promise<MemoryReviewReport>")]
  pub fn reject_proposals(&self, #[napi(ts_arg_type = "number[] | 'all'")] ids: Value) -> Result<AsyncTask<StoreTask>> {
    Ok(self.task(StoreOp::RejectProposals(parse_selection(&ids)?)))
  }

  /// The live entries as last seen by this store (no disk access).
  #[napi]
  pub fn get_entries(&self, #[napi(ts_arg_type = "MemoryTarget")] target: String) -> Result<Vec<String>> {
    let target = parse_target(&target)?;
    caught("a curated-memory operation", || self.store.entries(target))
  }

  /// One file's block of the snapshot frozen at the last `loadFromDisk()`.
  #[napi]
  pub fn format_for_system_prompt(&self, #[napi(ts_arg_type = "MemoryTarget")] target: String) -> Result<String> {
    let target = parse_target(&target)?;
    caught("a curated-memory operation", || self.store.format_for_system_prompt(target))
  }

  /// Both blocks of the frozen snapshot, bounded to 50,000 characters with room for each.
  #[napi]
  pub fn format_all_for_system_prompt(&self) -> Result<String> {
    caught("a curated-memory operation", || self.store.format_all_for_system_prompt())
  }

  /// Could `snapshot` have been rendered by a store, with nothing unsafe in
  /// it? Used before restoring a snapshot saved in a Pi session.
  #[napi]
  pub fn is_valid_snapshot(&self, snapshot: String) -> Result<bool> {
    caught("a curated-memory operation", || snapshot::is_valid(&snapshot))
  }
}

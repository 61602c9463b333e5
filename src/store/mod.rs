//! Curated memory: `MEMORY.md` (the agent's notes) and `USER.md` (what the
//! agent knows about the user), compatible with `@amaster.ai/pi-memory`.
//!
//! A mutation runs as: validate and threat-scan the input (no lock) → take
//! the in-process gate and the cross-process file lock → read the file
//! strictly → refuse on drift (saving a `.bak`) → apply → atomic write. Reads
//! take no file lock: writes replace the file atomically. The prompt snapshot
//! is rebuilt only by [`MemoryStore::load_from_disk`]; writes never touch it.

pub mod batch;
pub mod entries;
pub mod file;
pub mod lock;
pub mod proposals;
pub mod provenance;
pub mod result;
pub mod snapshot;
pub mod threat;

#[cfg(test)]
mod tests;

use crate::text::utf16_len;
use batch::{NetChange, Op, Step};
use entries::{group_thousands, joined_len, js_trim};
use lock::{LockError, LockOptions};
use parking_lot::Mutex;
use provenance::{Citation, Records, Stamp};
use result::{Failure, FailureCode, FileStatus, OperationOutcome, OperationStatus, StoreResult, StoreStatus, Success};
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

pub const DEFAULT_MEMORY_CHAR_LIMIT: usize = 2_200;
pub const DEFAULT_USER_CHAR_LIMIT: usize = 1_375;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
  Memory,
  User,
}

impl Target {
  pub const ALL: [Target; 2] = [Target::Memory, Target::User];

  pub fn parse(text: &str) -> Option<Target> {
    match text {
      "memory" => Some(Target::Memory),
      "user" => Some(Target::User),
      _ => None,
    }
  }

  pub fn name(self) -> &'static str {
    match self {
      Target::Memory => "memory",
      Target::User => "user",
    }
  }

  pub fn file_name(self) -> &'static str {
    match self {
      Target::Memory => "MEMORY.md",
      Target::User => "USER.md",
    }
  }

  fn index(self) -> usize {
    self as usize
  }
}

#[derive(Debug, Clone)]
pub struct StoreOptions {
  pub dir: PathBuf,
  pub memory_char_limit: usize,
  pub user_char_limit: usize,
  pub lock: LockOptions,
}

impl StoreOptions {
  pub fn new(dir: impl Into<PathBuf>) -> StoreOptions {
    StoreOptions {
      dir: dir.into(),
      memory_char_limit: DEFAULT_MEMORY_CHAR_LIMIT,
      user_char_limit: DEFAULT_USER_CHAR_LIMIT,
      lock: LockOptions::default(),
    }
  }
}

#[derive(Default)]
struct State {
  /// Entries as last read from or written to disk, raw.
  live: [Vec<String>; 2],
  /// Entries as of the last `load_from_disk`, sanitized: the prompt snapshot.
  frozen: [Vec<String>; 2],
  loaded: bool,
}

/// How a batch of operations was called, which shapes its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
  /// `add` / `replace` / `remove`: the reference's result shape.
  Single,
  /// `apply`: per-operation outcomes.
  Batch,
  /// `apply` without writing.
  DryRun,
  /// `apply` for review: only additions are written; the rest is staged.
  Review,
}

const DRIFT_REMEDIATION: &str = "Open the .bak file, integrate the missing entries into the memory tool one at a time via memory_add, then remove or rewrite the original file to a clean state.";

pub struct MemoryStore {
  options: StoreOptions,
  state: Mutex<State>,
}

/// One gate per file per process: writers in this process queue here instead
/// of polling the file lock, and a read never interleaves with a write's
/// update of the live entries.
fn gate(path: &Path) -> Arc<Mutex<()>> {
  static GATES: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
  GATES.get_or_init(Default::default).lock().entry(path.to_path_buf()).or_default().clone()
}

fn success(target: Target, entries: Vec<String>, limit: usize, message: Option<&'static str>) -> StoreResult {
  StoreResult::Success(Box::new(success_record(target, entries, limit, message)))
}

fn success_record(target: Target, entries: Vec<String>, limit: usize, message: Option<&'static str>) -> Success {
  Success {
    success: true,
    target: target.name(),
    usage: entries::usage(joined_len(&entries), limit),
    entry_count: entries.len(),
    entries,
    message,
    replaced_entry: None,
    removed_entry: None,
    operations: None,
    added: None,
    proposed: None,
    proposal_error: None,
    provenance: None,
    provenance_error: None,
  }
}

/// Review mode: the original entries plus the batch's net additions when
/// they fit (or do not grow an over-limit file), and the changes to stage.
fn review_split(working: &batch::Working, limit: usize) -> (Option<Vec<String>>, Vec<NetChange>, Vec<String>) {
  let (adds, mut staged): (Vec<NetChange>, Vec<NetChange>) =
    working.net().into_iter().partition(|change| matches!(change, NetChange::Add(_)));
  let added: Vec<String> = adds
    .iter()
    .filter_map(|change| match change {
      NetChange::Add(content) => Some(content.clone()),
      _ => None,
    })
    .collect();
  if added.is_empty() {
    return (None, staged, added);
  }
  let mut entries = working.before.clone();
  entries.extend(added.iter().cloned());
  if joined_len(&entries) > limit {
    staged.extend(adds);
    return (None, staged, Vec::new());
  }
  (Some(entries), staged, added)
}

/// A staged change with the citations of what it writes (or, for a
/// removal, the citations given for it).
fn with_evidence(change: NetChange, carried: &provenance::Carried) -> (NetChange, Vec<Citation>) {
  let citations = match &change {
    NetChange::Add(text) | NetChange::Replace { new: text, .. } => {
      carried.records.get(text).map(|p| p.citations.clone())
    }
    NetChange::Remove(old) => carried.removals.get(old).cloned(),
  };
  (change, citations.unwrap_or_default())
}

fn outcome(index: usize, op: &Op, step: &Step, show: &dyn Fn(&String) -> String) -> OperationOutcome {
  let (status, entry) = match step {
    Step::Added => (OperationStatus::Added, None),
    Step::Unchanged => (OperationStatus::Unchanged, None),
    Step::Replaced(old) => (OperationStatus::Replaced, Some(show(old))),
    Step::Removed(old) => (OperationStatus::Removed, Some(show(old))),
  };
  OperationOutcome { index, action: op.action(), status, entry }
}

/// Adds what the model needs to retry at once: the current entries
/// (sanitized) and usage, to a no-match or over-limit failure.
fn with_current(mut failure: Failure, target: Target, before: &[String], limit: usize) -> Failure {
  if matches!(failure.code, FailureCode::NoMatch | FailureCode::OverLimit | FailureCode::Stale) {
    failure.details.current_entries = Some(before.iter().map(|e| snapshot::sanitize(e, target)).collect());
    failure.details.usage = Some(format!("{}/{}", group_thousands(joined_len(before)), group_thousands(limit)));
  }
  failure
}

fn over_limit(ops: &[Op], mode: Mode, current: usize, total: usize, limit: usize) -> Failure {
  let (current, total, limit) = (group_thousands(current), group_thousands(total), group_thousands(limit));
  let message = match (mode, &ops[0]) {
    (Mode::Single, Op::Add(content)) => format!(
      "Memory at {current}/{limit} chars. Adding this entry ({} chars) would exceed the limit. Replace or remove existing entries first.",
      utf16_len(content)
    ),
    (Mode::Single, _) => {
      format!("Replacement would put memory at {total}/{limit} chars. Shorten the new content or remove other entries first.")
    }
    _ => format!(
      "The batch would put memory at {total}/{limit} chars (now {current}); nothing was written. Shorten or merge entries in the batch, or remove others in it."
    ),
  };
  Failure::new(FailureCode::OverLimit, message)
}

/// Normalizes and checks new entry text: CRLF as LF, trimmed, non-empty,
/// free of threats, and storable as exactly one entry.
fn prepare(content: &str, empty_error: &str) -> Result<String, Failure> {
  let normalized = entries::normalize_newlines(content);
  let trimmed = js_trim(&normalized);
  if trimmed.is_empty() {
    return Err(Failure::new(FailureCode::EmptyContent, empty_error));
  }
  if let Some(message) = threat::first_threat_message(trimmed) {
    return Err(Failure::new(FailureCode::Blocked, message));
  }
  if !entries::is_storable(trimmed) {
    return Err(Failure::new(
      FailureCode::Unstorable,
      "Content cannot contain a line holding only '§' (the entry delimiter). Rephrase it or add separate entries.",
    ));
  }
  Ok(trimmed.to_string())
}

fn needle(old_text: &str) -> Result<String, Failure> {
  let normalized = entries::normalize_newlines(old_text);
  let trimmed = js_trim(&normalized);
  if trimmed.is_empty() {
    return Err(Failure::new(FailureCode::EmptyContent, "oldText cannot be empty."));
  }
  Ok(trimmed.to_string())
}

/// The index of the entry equal to `needle` or else of the one entry
/// containing it (an exact whole-entry match wins, as in Hermes).
fn find_unique(target: Target, entries: &[String], needle: &str) -> Result<usize, Failure> {
  if let Some(exact) = entries.iter().position(|e| e == needle) {
    return Ok(exact);
  }
  let found: Vec<usize> = (0..entries.len()).filter(|&i| entries[i].contains(needle)).collect();
  match found.as_slice() {
    [one] => Ok(*one),
    [] => Err(Failure::new(FailureCode::NoMatch, format!("No entry matched '{needle}'."))),
    many => {
      let mut failure =
        Failure::new(FailureCode::AmbiguousMatch, format!("Multiple entries matched '{needle}'. Be more specific."));
      failure.details.matches =
        Some(many.iter().map(|&i| entries::preview(&snapshot::sanitize(&entries[i], target))).collect());
      Err(failure)
    }
  }
}

impl MemoryStore {
  pub fn new(options: StoreOptions) -> MemoryStore {
    MemoryStore { options, state: Mutex::new(State::default()) }
  }

  pub fn dir(&self) -> &Path {
    &self.options.dir
  }

  pub fn limit(&self, target: Target) -> usize {
    match target {
      Target::Memory => self.options.memory_char_limit,
      Target::User => self.options.user_char_limit,
    }
  }

  /// The file's canonical path, as proper-lockfile resolves it (symlinks
  /// followed), so both implementations lock the same `<path>.lock`.
  fn path(&self, target: Target) -> PathBuf {
    let plain = self.options.dir.join(target.file_name());
    fs::canonicalize(&plain)
      .or_else(|_| fs::canonicalize(&self.options.dir).map(|dir| dir.join(target.file_name())))
      .unwrap_or(plain)
  }

  /// The file's entries (deduplicated). With `refuse_drift`, a file that
  /// would not survive a rewrite is refused and backed up instead.
  fn read_entries(&self, target: Target, path: &Path, refuse_drift: bool) -> Result<Vec<String>, Failure> {
    let on_disk = match file::read(path, file::read_bound(self.limit(target))) {
      Ok(None) => return Ok(Vec::new()),
      Ok(Some(on_disk)) => on_disk,
      Err(error) => {
        return Err(Failure::new(
          FailureCode::Unreadable,
          format!(
            "Could not read {} ({}): {error}. Nothing was changed; fix or move the file, then retry.",
            target.file_name(),
            path.display()
          ),
        ))
      }
    };
    if refuse_drift && file::is_drift(&on_disk.text, self.limit(target)) {
      return Err(drift_failure(target, path, &on_disk.bytes));
    }
    Ok(entries::dedupe(entries::parse(&on_disk.text)))
  }

  fn set_live(&self, target: Target, entries: &[String]) {
    self.state.lock().live[target.index()] = entries.to_vec();
  }

  /// Re-reads one file into the live entries.
  fn refresh(&self, target: Target) -> Result<Vec<String>, Failure> {
    let path = self.path(target);
    let gate = gate(&path);
    let _in_process = gate.lock();
    let entries = self.read_entries(target, &path, false)?;
    self.set_live(target, &entries);
    Ok(entries)
  }

  fn file_status(&self, target: Target, read: Result<Vec<String>, Failure>) -> FileStatus {
    let (entries, error) = match read {
      Ok(entries) => (entries, None),
      Err(failure) => (Vec::new(), Some(failure.error)),
    };
    FileStatus {
      target: target.name(),
      file: self.options.dir.join(target.file_name()).to_string_lossy().into_owned(),
      entry_count: entries.len(),
      usage: entries::usage(joined_len(&entries), self.limit(target)),
      error,
    }
  }

  /// Re-reads both files into live state and rebuilds the sanitized prompt
  /// snapshot. An unreadable file is reported in its status, never loaded
  /// as empty for writing (every write reads the file again).
  pub fn load_from_disk(&self) -> StoreStatus {
    let [memory, user] = Target::ALL.map(|target| {
      let read = self.refresh(target);
      let frozen: Vec<String> =
        read.as_ref().map(|e| e.iter().map(|entry| snapshot::sanitize(entry, target)).collect()).unwrap_or_default();
      self.state.lock().frozen[target.index()] = frozen;
      self.file_status(target, read)
    });
    self.state.lock().loaded = true;
    StoreStatus { memory, user }
  }

  /// Entry counts and usage per file, read fresh from disk.
  pub fn status(&self) -> StoreStatus {
    let [memory, user] = Target::ALL.map(|target| self.file_status(target, self.refresh(target)));
    StoreStatus { memory, user }
  }

  /// The live (raw, unsanitized) entries of one file, re-read from disk. The
  /// first call on a never-loaded store loads both files.
  pub fn read(&self, target: Target) -> StoreResult {
    if !self.state.lock().loaded {
      self.load_from_disk();
    }
    match self.refresh(target) {
      Ok(entries) => success(target, entries, self.limit(target), None),
      Err(failure) => failure.into(),
    }
  }

  /// The live entries as last seen, without touching the disk.
  pub fn entries(&self, target: Target) -> Vec<String> {
    self.state.lock().live[target.index()].clone()
  }

  pub fn add(&self, target: Target, content: &str) -> StoreResult {
    self.single(target, Op::add(content))
  }

  /// Replaces the one entry equal to `old_text` or, failing that, the one
  /// entry containing it.
  pub fn replace(&self, target: Target, old_text: &str, new_content: &str) -> StoreResult {
    self.single(target, Op::replace(old_text, new_content))
  }

  pub fn remove(&self, target: Target, old_text: &str) -> StoreResult {
    self.single(target, Op::remove(old_text))
  }

  /// A batch (a JSON array shaped like the tools' arguments), all or
  /// nothing: validated and threat-scanned first, then applied in order
  /// under one lock, checked against the final size budget and written
  /// once. With `dry_run`, nothing is written and no lock is taken.
  pub fn apply(&self, target: Target, operations: &serde_json::Value, dry_run: bool) -> StoreResult {
    match batch::parse(operations) {
      Ok(ops) => {
        let evidence = match provenance::parse_evidence(operations) {
          Ok(evidence) => evidence,
          Err(failure) => return failure.into(),
        };
        let mode = if dry_run { Mode::DryRun } else { Mode::Batch };
        self.run_ops(target, &ops, mode, &evidence, None).0
      }
      Err(failure) => failure.into(),
    }
  }

  /// A batch as unattended dreaming applies it by default: its net
  /// additions are written (when they fit on their own), its replacements
  /// and removals, and additions that fit only after them, are appended to
  /// the proposals awaiting review (`proposed` in the result).
  pub fn apply_for_review(&self, target: Target, operations: &serde_json::Value) -> StoreResult {
    let parsed = batch::parse(operations).and_then(|ops| Ok((ops, provenance::parse_evidence(operations)?)));
    let (ops, evidence) = match parsed {
      Ok(parsed) => parsed,
      Err(failure) => return failure.into(),
    };
    let (mut result, staged) = self.run_ops(target, &ops, Mode::Review, &evidence, None);
    let StoreResult::Success(success) = &mut result else { return result };
    if staged.is_empty() {
      success.message = Some("Batch applied.");
      success.proposed = Some(Vec::new());
      return result;
    }
    let appended = proposals::update(&self.options.dir, &self.options.lock, |ledger| {
      Ok((proposals::append(ledger, target, &staged), true))
    });
    match appended {
      Ok(proposed) => success.proposed = Some(proposed),
      Err(failure) => {
        success.message = Some("Additions applied; staging the other changes for review failed (see proposalError).");
        success.proposal_error = Some(failure.error);
      }
    }
    result
  }

  /// The proposals awaiting review, read fresh from disk.
  pub fn proposals(&self) -> Result<Vec<proposals::Proposal>, Failure> {
    proposals::read(&proposals::path(&self.options.dir)).map(|ledger| ledger.proposals)
  }

  /// Applies the selected proposals one by one (id order), each as an exact
  /// whole-entry change: one whose entry changed is refused as stale and
  /// stays listed. Applied ones leave the ledger.
  pub fn apply_proposals(&self, selection: &proposals::Selection) -> proposals::ReviewReport {
    self.review(selection, |proposal| match proposal.op() {
      Ok(op) => {
        let evidence = [proposal.evidence.clone().unwrap_or_default()];
        self.run_ops(proposal.target(), std::slice::from_ref(&op), Mode::Single, &evidence, Some(proposal.id)).0
      }
      Err(failure) => failure.into(),
    })
  }

  /// Drops the selected proposals without touching the memory files.
  pub fn reject_proposals(&self, selection: &proposals::Selection) -> proposals::ReviewReport {
    self.review(selection, |proposal| success(proposal.target(), Vec::new(), 0, Some("Rejected.")))
  }

  fn review(
    &self,
    selection: &proposals::Selection,
    mut settle: impl FnMut(&proposals::Proposal) -> StoreResult,
  ) -> proposals::ReviewReport {
    let outcome = proposals::update(&self.options.dir, &self.options.lock, |ledger| {
      let (picked, missing) = selection.pick(ledger);
      let mut report = proposals::ReviewReport { missing, ..Default::default() };
      for proposal in &picked {
        let settled = settle(proposal);
        report.record(proposal, &settled);
        if settled.is_success() {
          ledger.proposals.retain(|p| p.id != proposal.id);
        }
      }
      report.remaining = ledger.proposals.len();
      report.success = report.refused.is_empty();
      let changed = !report.settled.is_empty();
      Ok((report, changed))
    });
    outcome.unwrap_or_else(proposals::ReviewReport::failed)
  }

  fn single(&self, target: Target, op: Result<Op, Failure>) -> StoreResult {
    match op {
      Ok(op) => self.run_ops(target, std::slice::from_ref(&op), Mode::Single, &[], None).0,
      Err(failure) => failure.into(),
    }
  }

  /// Runs validated operations, recording `evidence[i]` as the provenance
  /// of what operation `i` writes; also returns the batch's net changes,
  /// each with its evidence (what review mode stages).
  fn run_ops(
    &self,
    target: Target,
    ops: &[Op],
    mode: Mode,
    evidence: &[Vec<Citation>],
    proposal: Option<u64>,
  ) -> (StoreResult, Vec<(NetChange, Vec<Citation>)>) {
    let limit = self.limit(target);
    let mut done = None;
    let stamp = Stamp { now: proposals::now_ms(), proposal };
    let mut update = |before: Vec<String>, on_disk: &Records| {
      let (working, steps) = batch::run(target, before.clone(), ops, mode != Mode::Single)
        .map_err(|f| with_current(f, target, &before, limit))?;
      let total = batch::total(&working);
      let current = joined_len(&before);
      if total > limit && total > current {
        return Err(with_current(over_limit(ops, mode, current, total, limit), target, &before, limit));
      }
      let before_records = provenance::prune(&before, &Records::new(), on_disk);
      let carried = provenance::carry(&before_records, ops, &steps, evidence, stamp);
      let (write, staged, added) = match mode {
        Mode::Review => review_split(&working, limit),
        _ => (working.changed().then(|| working.entries.clone()), working.net(), Vec::new()),
      };
      let staged = staged.into_iter().map(|change| with_evidence(change, &carried)).collect();
      done = Some((steps, staged, added));
      Ok(write.map(|entries| {
        let records = provenance::prune(&entries, &carried.records, &before_records);
        (entries, records)
      }))
    };
    let outcome = match mode {
      Mode::DryRun => self.read_entries(target, &self.path(target), false).and_then(|before| {
        let unchanged = before.clone();
        update(before, &Records::new()).map(|write| (write.map(|(e, _)| e).unwrap_or(unchanged), None))
      }),
      Mode::Single | Mode::Batch | Mode::Review => self.locked_update(target, update),
    };
    match (outcome, done) {
      (Ok((entries, note)), Some((steps, net, added))) => {
        let mut result = self.report(target, ops, &steps, entries, mode);
        if let StoreResult::Success(success) = &mut result {
          success.provenance_error = note;
        }
        if let (StoreResult::Success(success), Mode::Review) = (&mut result, mode) {
          success.added = Some(added.iter().map(|e| snapshot::sanitize(e, target)).collect());
          success.operations = None;
        }
        (result, net)
      }
      (Ok(_), None) => unreachable!("a successful update records its steps"),
      (Err(failure), _) => (failure.into(), Vec::new()),
    }
  }

  fn report(&self, target: Target, ops: &[Op], steps: &[Step], entries: Vec<String>, mode: Mode) -> StoreResult {
    let show = |entry: &String| snapshot::sanitize(entry, target);
    let mut success = success_record(target, entries.iter().map(show).collect(), self.limit(target), None);
    if mode == Mode::Single {
      success.message = Some(match &steps[0] {
        Step::Added => "Entry added.",
        Step::Unchanged => "Entry already exists (no duplicate added).",
        Step::Replaced(_) => "Entry replaced.",
        Step::Removed(_) => "Entry removed.",
      });
      match &steps[0] {
        Step::Replaced(old) => success.replaced_entry = Some(show(old)),
        Step::Removed(old) => success.removed_entry = Some(show(old)),
        _ => {}
      }
      return StoreResult::Success(Box::new(success));
    }
    success.message = Some(match mode {
      Mode::DryRun => "Dry run: nothing was written.",
      Mode::Review => "Additions applied; replacements and removals are staged for review.",
      _ => "Batch applied.",
    });
    success.operations =
      Some(ops.iter().zip(steps).enumerate().map(|(index, (op, step))| outcome(index, op, step, &show)).collect());
    StoreResult::Success(Box::new(success))
  }

  /// Read-modify-write of one file under the in-process gate and the file
  /// lock: `change` gets the current entries and provenance records and
  /// returns the entries and records to write (`None`: nothing changes).
  /// The sidecar is written after the file, under the same lock. Returns
  /// the file's entries after, and why provenance was not kept, if so.
  fn locked_update(
    &self,
    target: Target,
    change: impl FnOnce(Vec<String>, &Records) -> Result<Option<(Vec<String>, Records)>, Failure>,
  ) -> Result<(Vec<String>, Option<String>), Failure> {
    if let Err(error) = fs::create_dir_all(&self.options.dir) {
      return Err(io_failure(&self.options.dir, &error));
    }
    let path = self.path(target);
    let gate = gate(&path);
    let _in_process = gate.lock();
    let held = take_lock(&path, target.file_name(), &self.options.lock)?;
    let entries = self.read_entries(target, &path, true)?;
    self.set_live(target, &entries);
    let sidecar = provenance::path(&path, target);
    let (on_disk, mut note) = provenance::read_for_write(&sidecar);
    let Some((entries, records)) = change(entries.clone(), on_disk.as_ref().unwrap_or(&Records::new()))? else {
      return Ok((entries, None));
    };
    write_held(&held, &path, entries::serialize(&entries).as_bytes())?;
    self.set_live(target, &entries);
    let stale = match &on_disk {
      Some(old) => note.is_some() || *old != records,
      None => !records.is_empty(),
    };
    if stale {
      if let Err(failure) = write_held(&held, &sidecar, provenance::serialize(&records).as_bytes()) {
        note = Some(format!("The entries were written, their provenance was not: {}", failure.error));
      }
    }
    Ok((entries, note))
  }

  /// `read` with each entry's provenance (`provenance[i]` for `entries[i]`,
  /// `null` when none was recorded: written by hand or by the model directly).
  pub fn read_with_provenance(&self, target: Target) -> StoreResult {
    let mut result = self.read(target);
    if let StoreResult::Success(success) = &mut result {
      let records = match provenance::read(&provenance::path(&self.path(target), target)) {
        Ok(records) => records.unwrap_or_default(),
        Err(reason) => {
          success.provenance_error = Some(format!("Provenance unavailable: {reason}."));
          Records::new()
        }
      };
      success.provenance = Some(provenance::lookup(&success.entries, &records));
    }
    result
  }

  /// One file's prompt block from the frozen snapshot, bounded on its own.
  pub fn format_for_system_prompt(&self, target: Target) -> String {
    let state = self.state.lock();
    snapshot::render(target, &state.frozen[target.index()], self.limit(target), snapshot::MAX_SNAPSHOT_UNITS)
  }

  /// Both blocks (memory first), bounded together with room for each.
  pub fn format_all_for_system_prompt(&self) -> String {
    let state = self.state.lock();
    let full =
      Target::ALL.map(|t| utf16_len(&snapshot::render(t, &state.frozen[t.index()], self.limit(t), usize::MAX)));
    let (memory_budget, user_budget) = snapshot::allot(full[0], full[1], snapshot::MAX_SNAPSHOT_UNITS);
    let blocks = [(Target::Memory, memory_budget), (Target::User, user_budget)]
      .map(|(t, budget)| snapshot::render(t, &state.frozen[t.index()], self.limit(t), budget));
    snapshot::join_blocks(&blocks)
  }
}

/// Takes the cross-process lock of `path`, or the failure to report.
fn take_lock(path: &Path, name: &str, options: &LockOptions) -> Result<lock::FileLock, Failure> {
  lock::acquire(path, options).map_err(|error| match error {
    LockError::Locked(lock_path) => Failure::new(
      FailureCode::Locked,
      format!(
        "{name} is locked by another writer ({}); nothing was written. Try again in a moment.",
        lock_path.display()
      ),
    ),
    LockError::Io(lock_path, error) => io_failure(&lock_path, &error),
  })
}

/// Writes `path` atomically while `held` is still ours: a lock taken over
/// as stale (held past `stale`) is not, and writing then could overwrite
/// the new holder's write.
fn write_held(held: &lock::FileLock, path: &Path, bytes: &[u8]) -> Result<(), Failure> {
  if !held.still_held() {
    let error = std::io::Error::other("the file lock was taken over by another writer");
    return Err(io_failure(held.path(), &error));
  }
  file::remove_orphan_temps(path);
  file::write_atomic(path, bytes).map_err(|error| io_failure(path, &error))
}

fn io_failure(path: &Path, error: &std::io::Error) -> Failure {
  Failure::new(
    FailureCode::IoError,
    format!("Could not write memory ({}): {error}. Nothing was changed.", path.display()),
  )
}

fn drift_failure(target: Target, path: &Path, bytes: &[u8]) -> Failure {
  let backup = match file::backup(path, bytes) {
    Ok(backup) => backup.display().to_string(),
    Err((backup, _)) => format!("{} (BACKUP FAILED — file unchanged on disk)", backup.display()),
  };
  let mut failure = Failure::new(
    FailureCode::Drift,
    format!(
      "Refusing to write {}: file on disk has content that wouldn't round-trip through the memory tool (likely added by a patch tool, a shell append, a manual edit, or a concurrent session). A snapshot was saved to {backup}. Resolve the drift first — either rewrite the file as a clean §-delimited list of entries, or move the extra content out — then retry. This guard exists to prevent silent data loss.",
      target.file_name()
    ),
  );
  failure.details.drift_backup = Some(backup);
  failure.details.remediation = Some(DRIFT_REMEDIATION);
  failure
}

//! Operations on one file (`add` / `replace` / `remove` / `apply`): run
//! them on a working copy under the write path and shape the result.

use super::batch::{self, NetChange, Op, Step};
use super::entries::{self, joined_len};
use super::provenance::{self, Citation, Records, Stamp};
use super::result::{Failure, FailureCode, OperationOutcome, OperationStatus, StoreResult, Success};
use super::{proposals, snapshot, MemoryStore, Target};
use crate::text::group_thousands;
use crate::text::utf16_len;

/// How a batch of operations was called, which shapes its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
  /// `add` / `replace` / `remove`: the reference's result shape.
  Single,
  /// `apply`: per-operation outcomes.
  Batch,
  /// `apply` without writing.
  DryRun,
  /// `apply` for review: only additions are written; the rest is staged.
  Review,
}

pub(super) fn success(
  target: Target,
  entries: Vec<String>,
  limit: usize,
  message: Option<&'static str>,
) -> StoreResult {
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

impl MemoryStore {
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

  fn single(&self, target: Target, op: Result<Op, Failure>) -> StoreResult {
    match op {
      Ok(op) => self.run_ops(target, std::slice::from_ref(&op), Mode::Single, &[], None).0,
      Err(failure) => failure.into(),
    }
  }

  /// Runs validated operations, recording `evidence[i]` as the provenance
  /// of what operation `i` writes; also returns the batch's net changes,
  /// each with its evidence (what review mode stages).
  pub(super) fn run_ops(
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
      Mode::DryRun => self.path(target).and_then(|path| self.read_entries(target, &path, false)).and_then(|before| {
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
}

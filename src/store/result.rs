//! Result shapes of the store, serialized with the reference's field names
//! and order. Failures are data (`success: false`) with a stable `code`.

use super::batch::{Action, FailedOperation};
use super::proposals::Proposal;
use super::provenance::Provenance;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Success {
  pub success: bool,
  pub target: &'static str,
  pub entries: Vec<String>,
  pub usage: String,
  pub entry_count: usize,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub message: Option<&'static str>,
  /// A replace: the entry it overwrote (sanitized like the snapshot).
  #[serde(skip_serializing_if = "Option::is_none")]
  pub replaced_entry: Option<String>,
  /// A remove: the entry it deleted (sanitized like the snapshot).
  #[serde(skip_serializing_if = "Option::is_none")]
  pub removed_entry: Option<String>,
  /// A batch: what each operation did, in order.
  #[serde(skip_serializing_if = "Option::is_none")]
  pub operations: Option<Vec<OperationOutcome>>,
  /// `applyForReview`: the net additions written (sanitized).
  #[serde(skip_serializing_if = "Option::is_none")]
  pub added: Option<Vec<String>>,
  /// `applyForReview`: the changes staged for review by this call.
  #[serde(skip_serializing_if = "Option::is_none")]
  pub proposed: Option<Vec<Proposal>>,
  /// `applyForReview`: the additions were written but staging the rest failed.
  #[serde(skip_serializing_if = "Option::is_none")]
  pub proposal_error: Option<String>,
  /// `readWithProvenance`: each entry's provenance (`None`: none recorded).
  #[serde(skip_serializing_if = "Option::is_none")]
  pub provenance: Option<Vec<Option<Provenance>>>,
  /// The provenance sidecar could not be read or written (the entries were).
  #[serde(skip_serializing_if = "Option::is_none")]
  pub provenance_error: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum OperationStatus {
  Added,
  /// An add of an entry already present (no duplicate added).
  Unchanged,
  Replaced,
  Removed,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OperationOutcome {
  pub index: usize,
  pub action: Action,
  pub status: OperationStatus,
  /// The entry a replace overwrote or a remove deleted (sanitized).
  #[serde(skip_serializing_if = "Option::is_none")]
  pub entry: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FailureCode {
  EmptyContent,
  /// The threat scanner rejected the content.
  Blocked,
  /// The content cannot be stored as one entry (it holds the delimiter).
  Unstorable,
  OverLimit,
  NoMatch,
  AmbiguousMatch,
  Drift,
  /// Another writer held the file lock for the whole timeout.
  Locked,
  /// The file exists but could not be read or decoded.
  Unreadable,
  /// Writing failed; the file on disk is unchanged.
  IoError,
  /// A batch operation is malformed (unknown action, missing field, empty or oversized batch).
  InvalidOperation,
  /// A staged change's entry is no longer in the file exactly as it was.
  Stale,
  /// Target `project` in a store opened for no project.
  NoProject,
  /// A proposal for another project's memory (apply it from that project).
  OtherProject,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
  pub success: bool,
  pub error: String,
  /// Boxed: failures travel in `Result`s and are rare.
  #[serde(flatten)]
  pub details: Box<FailureDetails>,
  pub code: FailureCode,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FailureDetails {
  /// A batch: the operation that failed (0-based).
  #[serde(skip_serializing_if = "Option::is_none")]
  pub failed_operation: Option<FailedOperation>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub matches: Option<Vec<String>>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub current_entries: Option<Vec<String>>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub usage: Option<String>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub drift_backup: Option<String>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub remediation: Option<&'static str>,
}

impl Failure {
  pub fn new(code: FailureCode, error: impl Into<String>) -> Failure {
    Failure { success: false, error: error.into(), details: Box::default(), code }
  }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(untagged)]
pub enum StoreResult {
  /// Boxed: a success carries many optional fields, a failure few.
  Success(Box<Success>),
  Failure(Failure),
}

impl StoreResult {
  pub fn is_success(&self) -> bool {
    matches!(self, StoreResult::Success(_))
  }
}

impl From<Failure> for StoreResult {
  fn from(failure: Failure) -> Self {
    StoreResult::Failure(failure)
  }
}

/// One file's state for `status()` and `loadFromDisk()`.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FileStatus {
  pub target: &'static str,
  pub file: String,
  pub entry_count: usize,
  pub usage: String,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StoreStatus {
  pub memory: FileStatus,
  pub user: FileStatus,
  /// The project's `MEMORY.md`, in a store opened for a project.
  #[serde(skip_serializing_if = "Option::is_none")]
  pub project: Option<FileStatus>,
}

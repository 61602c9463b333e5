//! The typed core error and the contract error carried as data.
//!
//! Two kinds of failure leave this crate. A [`CoreError`] is a programmer or
//! environment error (bad arguments, an unreadable agent dir): the napi edge
//! throws it with a stable code. A [`ContractError`] is part of the recall
//! contract (`stale_pointer`, `address_not_found`, …): it is returned inside the
//! result's `error` field so callers can branch on `error.code`.

use serde::Serialize;
use serde_json::{Map, Value};
use std::fmt;
use std::path::PathBuf;

#[derive(Debug)]
pub enum CoreError {
  /// Malformed call arguments; the message names the argument.
  InvalidArgument(String),
  /// An I/O failure outside any single session source (e.g. the agent dir).
  Io { path: PathBuf, source: std::io::Error },
  /// A bug: a panic caught at the edge, or an invariant that did not hold.
  Internal(String),
}

impl CoreError {
  pub fn invalid(message: impl Into<String>) -> Self {
    CoreError::InvalidArgument(message.into())
  }

  /// The kind of error, for tests: the edge maps each variant to a napi
  /// status and the shim gives argument errors `code: "invalid_argument"`.
  #[cfg(test)]
  pub fn code(&self) -> &'static str {
    match self {
      CoreError::InvalidArgument(_) => "invalid_argument",
      CoreError::Io { .. } => "io_error",
      CoreError::Internal(_) => "internal_error",
    }
  }
}

impl fmt::Display for CoreError {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match self {
      CoreError::InvalidArgument(message) => f.write_str(message),
      CoreError::Io { path, source } => write!(f, "{}: {}", path.display(), source),
      CoreError::Internal(message) => write!(f, "internal error: {message}"),
    }
  }
}

impl std::error::Error for CoreError {}

pub type CoreResult<T> = Result<T, CoreError>;

/// The contract's error codes: a closed set, the `code` of a result's
/// `error`. `src/napi/header.d.ts` declares the same union (a test holds it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum ErrorCode {
  /// A follow call's binding no longer holds: the session changed under it.
  StalePointer,
  AddressNotFound,
  AmbiguousAddress,
  AmbiguousSession,
  IndexOutOfBounds,
  TextOffsetOutOfBounds,
  SessionNotFound,
  /// A named or eligible source that cannot be read.
  SourceUnavailable,
  IndexDirRefused,
  InvalidRegex,
  RegexPatternTooLarge,
  /// A pack's `maxTokens` cannot hold one cited excerpt.
  PackBudgetTooSmall,
  /// The session was forgotten (`forget`): recall, expand and sessions never surface it.
  SessionForgotten,
  /// One entry was forgotten (`forget` with an entry id): recall, expand and packs never surface it.
  EntryForgotten,
  /// The list of forgotten sessions cannot be read: nothing is answered rather than risk surfacing it.
  ForgottenUnreadable,
  /// A file this package changes under a lock is held by another writer past the timeout.
  Locked,
  /// A file this package keeps could not be written; nothing was changed.
  WriteFailed,
}

impl ErrorCode {
  /// The wire spelling.
  pub fn as_str(self) -> &'static str {
    self.into()
  }
}

/// Tests and callers compare with the wire spelling.
impl PartialEq<&str> for ErrorCode {
  fn eq(&self, other: &&str) -> bool {
    self.as_str() == *other
  }
}

/// A contract error, serialized as `{code, message, ...details}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ContractError {
  pub code: ErrorCode,
  pub message: String,
  pub details: Map<String, Value>,
}

impl ContractError {
  pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
    ContractError { code, message: message.into(), details: Map::new() }
  }

  pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
    self.details.insert(key.to_string(), value.into());
    self
  }
}

impl Serialize for ContractError {
  fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    let mut map = Map::new();
    map.insert("code".into(), Value::from(self.code.as_str()));
    map.insert("message".into(), Value::from(self.message.clone()));
    for (key, value) in &self.details {
      map.insert(key.clone(), value.clone());
    }
    map.serialize(serializer)
  }
}

#[cfg(test)]
mod tests {
  use super::ErrorCode;
  use strum::VariantArray;

  /// The quoted members of `MemoryError['code']` in the TypeScript header.
  fn declared_codes() -> Vec<String> {
    let header = include_str!("napi/header.d.ts");
    let start = header.find("export interface MemoryError {").expect("MemoryError is declared");
    let union = &header[start..][..header[start..].find("message:").expect("then its message")];
    union.lines().filter_map(|line| line.trim().strip_prefix("| '")?.strip_suffix('\'').map(str::to_string)).collect()
  }

  #[test]
  fn the_typescript_union_is_the_rust_set_plus_the_walk_codes() {
    let mut rust: Vec<String> = ErrorCode::VARIANTS.iter().map(|code| code.as_str().to_string()).collect();
    rust.extend(["walk_discontinuity".to_string(), "walk_incomplete".to_string()]);
    assert_eq!(declared_codes(), rust, "src/napi/header.d.ts MemoryError['code'] in ErrorCode's variant order");
  }
}

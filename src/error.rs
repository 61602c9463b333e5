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

  /// The stable code the edge attaches to the thrown JS error.
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

/// A contract error, serialized as `{code, message, ...details}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ContractError {
  pub code: &'static str,
  pub message: String,
  pub details: Map<String, Value>,
}

impl ContractError {
  pub fn new(code: &'static str, message: impl Into<String>) -> Self {
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
    map.insert("code".into(), Value::from(self.code));
    map.insert("message".into(), Value::from(self.message.clone()));
    for (key, value) in &self.details {
      map.insert(key.clone(), value.clone());
    }
    map.serialize(serializer)
  }
}

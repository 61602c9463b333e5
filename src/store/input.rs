//! New entry text and `oldText` needles, checked before any lock is taken,
//! and the match rule that finds the entry an operation changes.

use super::entries::{self, js_trim};
use super::result::{Failure, FailureCode};
use super::{snapshot, Target};
use crate::threat;

/// Normalizes and checks new entry text: CRLF as LF, trimmed, non-empty,
/// free of threats, and storable as exactly one entry.
pub(super) fn prepare(content: &str, empty_error: &str) -> Result<String, Failure> {
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

pub(super) fn needle(old_text: &str) -> Result<String, Failure> {
  let normalized = entries::normalize_newlines(old_text);
  let trimmed = js_trim(&normalized);
  if trimmed.is_empty() {
    return Err(Failure::new(FailureCode::EmptyContent, "oldText cannot be empty."));
  }
  Ok(trimmed.to_string())
}

/// The index of the entry equal to `needle` or else of the one entry
/// containing it (an exact whole-entry match wins, as in Hermes).
pub(super) fn find_unique(target: Target, entries: &[String], needle: &str) -> Result<usize, Failure> {
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

//! A part of a record read from disk that is decoded when first used, not
//! when read, and what happens when it does not decode: checksummed bytes
//! this version wrote always do, so a failure is a damaged record. The part
//! then stands in as a placeholder that keeps every index in range, and the
//! record reports itself damaged, so the next synchronization rebuilds it.

use std::sync::OnceLock;

#[derive(Debug, Clone)]
pub(super) struct FirstUse<T>(OnceLock<(T, bool)>);

impl<T> FirstUse<T> {
  /// Not decoded yet.
  pub(super) fn pending() -> FirstUse<T> {
    FirstUse(OnceLock::new())
  }

  /// Built in this process: never damaged.
  pub(super) fn of(value: T) -> FirstUse<T> {
    FirstUse(OnceLock::from((value, false)))
  }

  /// The value, decoded on first use; `placeholder` when `decode` fails.
  pub(super) fn get(&self, decode: impl FnOnce() -> Option<T>, placeholder: impl FnOnce() -> T) -> &T {
    &self.0.get_or_init(|| decode().map_or_else(|| (placeholder(), true), |value| (value, false))).0
  }

  /// The value if it was decoded (or built), damaged or not.
  pub(super) fn decoded(&self) -> Option<&T> {
    self.0.get().map(|(value, _)| value)
  }

  /// Decoded, and found not to decode.
  pub(super) fn damaged(&self) -> bool {
    self.0.get().is_some_and(|(_, damaged)| *damaged)
  }
}

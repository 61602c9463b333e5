//! Reading one byte string of a binary record (postcard) straight into a
//! value: postcard lends the bytes, so nothing is copied before `make`
//! looks at them. Hashes, a head's kinds table and its deferred parts are
//! each written as one byte string.

use serde::de::{Error, Visitor};
use serde::Deserializer;

/// The value `make` builds from the next byte string; `make`'s `None` is
/// an error naming `expecting`.
pub(crate) fn read<'de, D: Deserializer<'de>, T>(
  deserializer: D,
  expecting: &'static str,
  make: impl FnOnce(&[u8]) -> Option<T>,
) -> Result<T, D::Error> {
  struct Visit<F>(F, &'static str);
  impl<T, F: FnOnce(&[u8]) -> Option<T>> Visitor<'_> for Visit<F> {
    type Value = T;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
      f.write_str(self.1)
    }
    fn visit_bytes<E: Error>(self, bytes: &[u8]) -> Result<T, E> {
      let Visit(make, expecting) = self;
      make(bytes).ok_or_else(|| E::invalid_length(bytes.len(), &expecting))
    }
  }
  deserializer.deserialize_bytes(Visit(make, expecting))
}

//! Lenient readers for raw JSON fields.
//!
//! Session files come from many writers; a field of an unexpected type must
//! never lose the record. Each reader returns `None` for the wrong type.

use serde_json::value::RawValue;
use serde_json::Value;

pub fn string(raw: Option<&RawValue>) -> Option<String> {
  let raw = raw?;
  if !raw.get().starts_with('"') {
    return None;
  }
  serde_json::from_str(raw.get()).ok()
}

pub fn boolean(raw: Option<&RawValue>) -> Option<bool> {
  match raw?.get() {
    "true" => Some(true),
    "false" => Some(false),
    _ => None,
  }
}

pub fn number(raw: Option<&RawValue>) -> Option<f64> {
  let text = raw?.get();
  if text.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
    serde_json::from_str::<f64>(text).ok().filter(|n| n.is_finite())
  } else {
    None
  }
}

pub fn value(raw: Option<&RawValue>) -> Option<Value> {
  serde_json::from_str(raw?.get()).ok()
}

/// Compact JSON text of a raw value, equal to `JSON.stringify(JSON.parse(raw))`
/// for input that JSON.stringify wrote (Pi's case): whitespace outside
/// strings is removed, everything else is kept byte for byte.
pub fn compact(raw: &str) -> String {
  let mut out = String::with_capacity(raw.len());
  let mut in_string = false;
  let mut escaped = false;
  for ch in raw.chars() {
    if in_string {
      out.push(ch);
      if escaped {
        escaped = false;
      } else if ch == '\\' {
        escaped = true;
      } else if ch == '"' {
        in_string = false;
      }
    } else if ch == '"' {
      in_string = true;
      out.push(ch);
    } else if !ch.is_ascii_whitespace() {
      out.push(ch);
    }
  }
  out
}

/// UTF-8 byte length of `JSON.stringify(value)`.
pub fn serialized_bytes(value: &Value) -> usize {
  serde_json::to_string(value).map(|s| s.len()).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn compact_keeps_strings_verbatim() {
    assert_eq!(compact("{ \"a b\" : [1, 2],\n \"c\":\"x\\\" y\" }"), "{\"a b\":[1,2],\"c\":\"x\\\" y\"}");
  }

  #[test]
  fn readers_reject_wrong_types() {
    let raw: Box<RawValue> = serde_json::from_str("12").unwrap();
    assert_eq!(string(Some(&raw)), None);
    assert_eq!(number(Some(&raw)), Some(12.0));
    assert_eq!(boolean(Some(&raw)), None);
  }
}

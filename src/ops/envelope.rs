//! The last line of defence for the 30,000-character envelope.
//!
//! Pages fit themselves (hits and chunks are dropped or cut first), but an
//! error or a page can echo arguments: a 20,000-character session id came
//! back in `session`, in the error's message and in its details. [`bounded`]
//! serializes any result and, only when it is still over the envelope, cuts
//! its longest strings (ending each with `…`) until it fits.

use crate::ops::contract::MAX_ENVELOPE_CHARS;
use crate::text::{cap_with_ellipsis, json_len, utf16_len};
use serde::Serialize;
use serde_json::Value;

/// A string this short is never cut: the envelope is then exceeded by
/// structure, which the page's own fitting bounds.
const MIN_CUT_CHARS: usize = 64;

/// `result` as JSON text within [`MAX_ENVELOPE_CHARS`]. Serialized once
/// when it fits, as every page does (its own fitting saw to that); only an
/// over-long result goes through a [`Value`] to be cut. A warm recall spent
/// a tenth of its time building that tree and serializing it twice more.
pub fn bounded<T: Serialize>(result: &T) -> serde_json::Result<String> {
  let json = serde_json::to_string(result)?;
  if utf16_len(&json) <= MAX_ENVELOPE_CHARS {
    return Ok(json);
  }
  let mut value = serde_json::to_value(result)?;
  fit(&mut value, MAX_ENVELOPE_CHARS);
  Ok(value.to_string())
}

/// Cuts the longest strings of `value` until its JSON is at most `max`.
pub fn fit(value: &mut Value, max: usize) {
  loop {
    let len = json_len(value);
    if len <= max {
      return;
    }
    let Some(longest) = longest_string(value).filter(|s| utf16_len(s) > MIN_CUT_CHARS) else { return };
    let keep = utf16_len(longest).saturating_sub(len - max).max(MIN_CUT_CHARS);
    *longest = cap_with_ellipsis(longest, keep);
  }
}

fn longest_string(value: &mut Value) -> Option<&mut String> {
  match value {
    Value::String(s) => Some(s),
    Value::Array(items) => items.iter_mut().filter_map(longest_string).max_by_key(|s| s.len()),
    Value::Object(map) => map.values_mut().filter_map(longest_string).max_by_key(|s| s.len()),
    _ => None,
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_json::json;

  #[derive(Serialize)]
  #[serde(rename_all = "camelCase")]
  struct Outer {
    score: f64,
    #[serde(flatten)]
    inner: Inner,
    missing: Option<u64>,
    text: String,
  }

  #[derive(Serialize)]
  #[serde(rename_all = "camelCase")]
  struct Inner {
    entry_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target_id: Option<String>,
    not_a_number: f64,
  }

  #[test]
  fn a_result_that_fits_is_the_text_its_value_would_give() {
    let inner = Inner { entry_id: Some("e\u{1}\"".into()), target_id: None, not_a_number: f64::NAN };
    let outer = Outer { score: 0.1 + 0.2, inner, missing: None, text: "…\u{10348} \\".into() };
    assert_eq!(bounded(&outer).unwrap(), serde_json::to_value(&outer).unwrap().to_string());
    let long = Outer { text: "x".repeat(MAX_ENVELOPE_CHARS), ..outer };
    let cut = bounded(&long).unwrap();
    assert!(utf16_len(&cut) <= MAX_ENVELOPE_CHARS && cut.contains('…'));
  }

  #[test]
  fn long_echoes_are_cut_until_the_result_fits() {
    let id = "\"x".repeat(20_000);
    let mut value = json!({"session": id, "entries": [], "error": {"code": "session_not_found", "message": format!("No Pi session matches {id}"), "session": id}});
    fit(&mut value, MAX_ENVELOPE_CHARS);
    assert!(json_len(&value) <= MAX_ENVELOPE_CHARS, "{}", json_len(&value));
    assert_eq!(value["error"]["code"], "session_not_found");
    assert!(value["session"].as_str().unwrap().ends_with('…'));
    let small = json!({"a": "short"});
    let mut same = small.clone();
    fit(&mut same, MAX_ENVELOPE_CHARS);
    assert_eq!(same, small);
  }
}

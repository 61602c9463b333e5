//! Session bytes decoded as Pi decodes them, before parsing.
//!
//! Pi reads a session with `readFileSync(path, "utf8")` (invalid UTF-8
//! becomes U+FFFD, one per maximal invalid subsequence, the record is kept)
//! and `JSON.parse` (a lone surrogate escape such as `"\ud83d"`, which Node
//! writes when a string is cut mid-emoji, is a valid string; in text it
//! shows as U+FFFD). serde_json rejects both, which used to drop the record
//! or empty its text. Decoding rewrites the buffer once, only when needed:
//! invalid bytes become U+FFFD (lengths change) and lone surrogate escapes
//! become `\ufffd` (same length). Duplicate keys are handled where records
//! are deserialized (`json::last_wins!`). Every replacement is named in
//! coverage.

use crate::coverage::Reason;
use std::borrow::Cow;

/// The decoded bytes and what was replaced.
#[derive(Debug)]
pub struct Decoded<'a> {
  pub bytes: Cow<'a, [u8]>,
  pub invalid_utf8: usize,
  pub lone_surrogates: usize,
}

impl Decoded<'_> {
  /// Do byte offsets in the decoded text equal those in the file? (Lone
  /// surrogate fixes keep lengths; U+FFFD for invalid bytes does not.)
  pub fn same_offsets(&self) -> bool {
    self.invalid_utf8 == 0
  }

  /// Coverage reasons for the replacements made.
  pub fn reasons(&self) -> impl Iterator<Item = Reason> {
    let utf8 = (self.invalid_utf8 > 0).then_some(Reason::InvalidUtf8Replaced);
    let surrogates = (self.lone_surrogates > 0).then_some(Reason::LoneSurrogateReplaced);
    utf8.into_iter().chain(surrogates)
  }
}

pub fn decode(bytes: &[u8]) -> Decoded<'_> {
  let (mut text, invalid_utf8): (Cow<'_, [u8]>, usize) = match std::str::from_utf8(bytes) {
    Ok(_) => (Cow::Borrowed(bytes), 0),
    Err(_) => {
      let mut out = String::with_capacity(bytes.len() + 16);
      let mut replaced = 0;
      for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        if !chunk.invalid().is_empty() {
          out.push('\u{FFFD}');
          replaced += 1;
        }
      }
      (Cow::Owned(out.into_bytes()), replaced)
    }
  };
  let lone = lone_surrogate_escapes(&text);
  for &at in &lone {
    text.to_mut()[at..at + 6].copy_from_slice(b"\\ufffd");
  }
  Decoded { bytes: text, invalid_utf8, lone_surrogates: lone.len() }
}

fn hex4(bytes: &[u8], at: usize) -> Option<u16> {
  let digits = std::str::from_utf8(bytes.get(at..at + 4)?).ok()?;
  u16::from_str_radix(digits, 16).ok()
}

/// Is the backslash at `at` an escape (preceded by an even run of `\`)?
fn is_escape(bytes: &[u8], at: usize) -> bool {
  bytes[..at].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 0
}

/// Offsets of `\uXXXX` escapes that are surrogates without their partner.
fn lone_surrogate_escapes(bytes: &[u8]) -> Vec<usize> {
  let mut lone = Vec::new();
  let mut paired_low = None;
  for at in memchr::memmem::find_iter(bytes, b"\\u") {
    if Some(at) == paired_low || !is_escape(bytes, at) {
      continue;
    }
    let Some(unit) = hex4(bytes, at + 2) else { continue };
    match unit {
      0xD800..=0xDBFF => {
        let low = bytes.get(at + 6..at + 8) == Some(b"\\u") && hex4(bytes, at + 8).is_some_and(is_low);
        if low {
          paired_low = Some(at + 6);
        } else {
          lone.push(at);
        }
      }
      unit if is_low(unit) => lone.push(at),
      _ => {}
    }
  }
  lone
}

fn is_low(unit: u16) -> bool {
  (0xDC00..=0xDFFF).contains(&unit)
}

#[cfg(test)]
mod tests {
  use super::*;

  fn fixed(input: &str) -> (String, usize) {
    let decoded = decode(input.as_bytes());
    (String::from_utf8(decoded.bytes.into_owned()).unwrap(), decoded.lone_surrogates)
  }

  #[test]
  fn lone_surrogate_escapes_become_replacement_escapes() {
    assert_eq!(fixed(r#"{"t":"cut \ud83d"}"#), (r#"{"t":"cut \ufffd"}"#.into(), 1));
    assert_eq!(fixed(r#"{"t":"\ude00 and \uD83D\uDE00"}"#), (r#"{"t":"\ufffd and \uD83D\uDE00"}"#.into(), 1));
    assert_eq!(fixed(r#"{"t":"\ud83d\ud83d\ude00"}"#), (r#"{"t":"\ufffd\ud83d\ude00"}"#.into(), 1));
    // An escaped backslash followed by "ud83d" is text, not an escape.
    assert_eq!(fixed(r#"{"t":"\\ud83d \\\ud83d"}"#), (r#"{"t":"\\ud83d \\\ufffd"}"#.into(), 1));
    assert!(matches!(decode(br#"{"t":"\u00e9"}"#).bytes, Cow::Borrowed(_)));
  }

  #[test]
  fn invalid_utf8_becomes_one_replacement_per_maximal_subpart() {
    let decoded = decode(b"a\xffb\xf0\x9f\x98c");
    assert_eq!(decoded.bytes.as_ref(), "a\u{FFFD}b\u{FFFD}c".as_bytes());
    assert_eq!((decoded.invalid_utf8, decoded.same_offsets()), (2, false));
    assert_eq!(decoded.reasons().collect::<Vec<_>>(), ["invalid_utf8_replaced"]);
  }
}

//! The one canonical tokenizer, used for hot postings, cold vocabulary and
//! literal queries alike.
//!
//! NFKC, then maximal runs of Unicode letters (`\p{L}`), numbers (`\p{N}`)
//! and `_`, then lowercase. No stemming, no synonyms, no classification.
//! ASCII text is already NFKC and takes a fast path that never allocates
//! for the normalization step.

use regex::Regex;
use std::sync::OnceLock;
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

fn token_pattern() -> &'static Regex {
  static PATTERN: OnceLock<Regex> = OnceLock::new();
  PATTERN.get_or_init(|| Regex::new(r"^[\p{L}\p{N}_]$").expect("token pattern compiles"))
}

/// `[\p{L}\p{N}_]` membership for the Basic Multilingual Plane, computed
/// once from the regex class itself (so the tables stay Unicode's), then a
/// bit test per character instead of a regex search per token.
fn bmp_words() -> &'static [u64] {
  static BITS: OnceLock<Vec<u64>> = OnceLock::new();
  BITS.get_or_init(|| {
    let pattern = token_pattern();
    let mut bits = vec![0u64; 0x10000 / 64];
    let mut buffer = [0u8; 4];
    for code in 0x80u32..0x10000 {
      if let Some(c) = char::from_u32(code) {
        if pattern.is_match(c.encode_utf8(&mut buffer)) {
          bits[(code / 64) as usize] |= 1 << (code % 64);
        }
      }
    }
    bits
  })
}

/// Is `c` a letter, a number or `_` (`[\p{L}\p{N}_]`)?
pub fn is_word_char(c: char) -> bool {
  let code = c as u32;
  if code < 0x80 {
    return c.is_ascii_alphanumeric() || c == '_';
  }
  if code < 0x10000 {
    return bmp_words()[(code / 64) as usize] & (1 << (code % 64)) != 0;
  }
  let mut buffer = [0u8; 4];
  token_pattern().is_match(c.encode_utf8(&mut buffer))
}

/// `text` in NFKC (borrowed when it already is).
pub fn nfkc(text: &str) -> std::borrow::Cow<'_, str> {
  if text.is_ascii() || is_nfkc_quick(text.chars()) == IsNormalized::Yes {
    std::borrow::Cow::Borrowed(text)
  } else {
    std::borrow::Cow::Owned(text.nfkc().collect())
  }
}

/// Calls `emit` with each canonical token of `text`, in order.
pub fn for_each_token(text: &str, mut emit: impl FnMut(&str)) {
  if text.is_ascii() {
    let bytes = text.as_bytes();
    let mut start = None;
    let mut lowered = String::new();
    for (at, byte) in bytes.iter().enumerate().chain(std::iter::once((bytes.len(), &b' '))) {
      let word = byte.is_ascii_alphanumeric() || *byte == b'_';
      match (word, start) {
        (true, None) => start = Some(at),
        (false, Some(from)) => {
          lowered.clear();
          lowered.push_str(&text[from..at]);
          lowered.make_ascii_lowercase();
          emit(&lowered);
          start = None;
        }
        _ => {}
      }
    }
    return;
  }
  let normalized = nfkc(text);
  let mut lowered = String::new();
  let mut start = None;
  for (at, c) in normalized.char_indices().chain(std::iter::once((normalized.len(), ' '))) {
    match (is_word_char(c) && at < normalized.len(), start) {
      (true, None) => start = Some(at),
      (false, Some(from)) => {
        let token = &normalized[from..at];
        if token.is_ascii() {
          lowered.clear();
          lowered.push_str(token);
          lowered.make_ascii_lowercase();
          emit(&lowered);
        } else {
          emit(&token.to_lowercase());
        }
        start = None;
      }
      _ => {}
    }
  }
}

/// The canonical tokens of `text`, in order, with repeats.
pub fn tokenize(text: &str) -> Vec<String> {
  let mut out = Vec::new();
  for_each_token(text, |token| out.push(token.to_string()));
  out
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn matches_the_seed_example() {
    assert_eq!(tokenize("CAFÉ café Ωmega雪 snake_case 42"), ["café", "café", "ωmega雪", "snake_case", "42"]);
  }

  #[test]
  fn paths_and_punctuation_split_into_terms() {
    assert_eq!(tokenize("src/foo.ts: \"Use CEF\" (Stage 1)"), ["src", "foo", "ts", "use", "cef", "stage", "1"]);
  }

  #[test]
  fn nfkc_folds_compatibility_forms() {
    // Fullwidth letters and the "ﬁ" ligature fold; a decomposed é composes.
    assert_eq!(tokenize("ＡＢＣ ﬁle cafe\u{301}"), ["abc", "file", "café"]);
  }

  #[test]
  fn ascii_fast_path_agrees_with_the_unicode_path() {
    let text = "Hello_World foo-bar 42x __init__ ü";
    let ascii: Vec<String> = tokenize(&text[..text.len() - 3]);
    let unicode: Vec<String> = tokenize(text);
    assert_eq!(unicode[..ascii.len()], ascii[..]);
    assert_eq!(unicode.last().map(String::as_str), Some("ü"));
  }

  #[test]
  fn the_character_table_agrees_with_the_unicode_class() {
    let class = Regex::new(r"^[\p{L}\p{N}_]$").unwrap();
    let mut buffer = [0u8; 4];
    for code in (0u32..0x11000).step_by(7).chain([0x5f, 0x3000, 0x96ea, 0x1d400, 0x1f600]) {
      if let Some(c) = char::from_u32(code) {
        assert_eq!(is_word_char(c), class.is_match(c.encode_utf8(&mut buffer)), "U+{code:04X}");
      }
    }
  }

  #[test]
  fn empty_and_symbol_only_text_has_no_tokens() {
    assert!(tokenize("").is_empty());
    assert!(tokenize("-- ** //").is_empty());
  }
}

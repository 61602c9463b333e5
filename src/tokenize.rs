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
  PATTERN.get_or_init(|| Regex::new(r"[\p{L}\p{N}_]+").expect("token pattern compiles"))
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
  for token in token_pattern().find_iter(&normalized) {
    emit(&token.as_str().to_lowercase());
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
  fn empty_and_symbol_only_text_has_no_tokens() {
    assert!(tokenize("").is_empty());
    assert!(tokenize("-- ** //").is_empty());
  }
}

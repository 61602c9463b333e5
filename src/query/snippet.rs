//! Snippets: a bounded window of entry text anchored on the match.
//!
//! The anchor is found in the original text (tokens are compared in
//! canonical form), so the window lands where the match is even when NFKC
//! or lowercasing change lengths. Lengths are UTF-16 units; no cut splits a
//! surrogate pair.

use crate::text::{slice_utf16, utf16_len};
use crate::tokenize::for_each_term;
use regex::Regex;
use std::sync::OnceLock;

fn token_runs() -> &'static Regex {
  static RUNS: OnceLock<Regex> = OnceLock::new();
  RUNS.get_or_init(|| Regex::new(r"[\p{L}\p{N}_\p{M}\u{200C}\u{200D}]+").expect("token runs compile"))
}

/// UTF-16 offset of the first word of `text` that holds `term` (as the
/// word, one of its parts or grams).
fn find_term(text: &str, term: &str) -> Option<usize> {
  token_runs().find_iter(text).find_map(|run| {
    let mut hit = false;
    for_each_term(run.as_str(), |token, _| hit |= token == term);
    hit.then(|| utf16_len(&text[..run.start()]))
  })
}

/// The anchor: the longest query term (ties: the lexically first).
fn anchor(text: &str, terms: &[String]) -> Option<usize> {
  let mut sorted: Vec<&String> = terms.iter().collect();
  sorted.sort_by(|a, b| b.chars().count().cmp(&a.chars().count()).then(a.cmp(b)));
  sorted.into_iter().find_map(|term| find_term(text, term))
}

/// Where a window of `max` units of `text` (`total` units long, more than
/// `max`) starts: a third of the window before the anchor, or at 0 when no
/// term is found. (The window may start inside a surrogate pair; slicing
/// rounds it down.)
pub fn window_start(text: &str, terms: &[String], max: usize, total: usize) -> usize {
  let at = anchor(text, terms).unwrap_or(0);
  at.saturating_sub(max / 3).min(total.saturating_sub(max))
}

/// `(snippet, cut)`: the whole text when it fits, else a window of `max`
/// units starting a third of the window before the anchor, with `…` on each
/// cut side.
pub fn snippet(text: &str, terms: &[String], max: usize) -> (String, bool) {
  let total = utf16_len(text);
  if total <= max {
    return (text.to_string(), false);
  }
  let start = window_start(text, terms, max, total);
  let (window, end) = slice_utf16(text, start, start + max);
  let actual_start = end - utf16_len(window);
  let mut out = String::with_capacity(window.len() + 6);
  if actual_start > 0 {
    out.push('…');
  }
  out.push_str(window);
  if end < total {
    out.push('…');
  }
  (out, true)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn short_text_is_whole() {
    assert_eq!(snippet("hello", &[], 80), ("hello".to_string(), false));
  }

  #[test]
  fn long_text_is_anchored_on_the_longest_term() {
    let text = format!("{} the NEEDLE is here {}", "a ".repeat(200), "b ".repeat(200));
    let (cut, truncated) = snippet(&text, &["is".into(), "needle".into()], 80);
    assert!(truncated);
    assert!(cut.starts_with('…') && cut.ends_with('…'));
    assert!(cut.contains("NEEDLE"));
    assert!(utf16_len(&cut) <= 82);
  }

  #[test]
  fn windows_never_split_surrogate_pairs() {
    let text = "😀".repeat(100);
    let (cut, _) = snippet(&text, &[], 81);
    assert!(cut.trim_end_matches('…').chars().all(|c| c == '😀'));
  }

  #[test]
  fn canonical_matching_finds_compatibility_forms() {
    let text = format!("{} ＣＡＦＥ {}", "x ".repeat(100), "y ".repeat(100));
    let (cut, _) = snippet(&text, &["cafe".into()], 80);
    assert!(cut.contains("ＣＡＦＥ"));
  }
}

//! The entry list format shared with `@amaster.ai/pi-memory`: entries joined by
//! `"\n§\n"`, each trimmed as JavaScript's `String.prototype.trim` would, empty
//! ones dropped. Lengths and limits are JavaScript string lengths (UTF-16
//! units) so files written by either implementation stay within each other's
//! limits.

use crate::text::{byte_offset_of_utf16, group_thousands, utf16_len};

pub(crate) const DELIMITER: &str = "\n§\n";

/// JavaScript's WhiteSpace + LineTerminator set: Rust's `White_Space` without
/// U+0085 (NEL), plus U+FEFF (BOM), which `trim()` strips in JavaScript.
pub(crate) fn is_js_space(c: char) -> bool {
  c == '\u{FEFF}' || (c.is_whitespace() && c != '\u{85}')
}

pub fn js_trim(text: &str) -> &str {
  text.trim_matches(is_js_space)
}

/// CRLF line endings read as LF: a file saved by a Windows editor keeps its
/// entries instead of collapsing into one. A lone CR is content.
pub(crate) fn normalize_newlines(text: &str) -> std::borrow::Cow<'_, str> {
  if text.contains("\r\n") {
    std::borrow::Cow::Owned(text.replace("\r\n", "\n"))
  } else {
    std::borrow::Cow::Borrowed(text)
  }
}

/// Splits file text into trimmed, non-empty entries (duplicates kept).
pub fn parse(text: &str) -> Vec<String> {
  if js_trim(text).is_empty() {
    return Vec::new();
  }
  text.split(DELIMITER).map(js_trim).filter(|e| !e.is_empty()).map(str::to_string).collect()
}

/// Keeps the first occurrence of each entry, in order.
pub(crate) fn dedupe(entries: Vec<String>) -> Vec<String> {
  let mut seen = std::collections::HashSet::new();
  entries.into_iter().filter(|e| seen.insert(e.clone())).collect()
}

pub fn serialize(entries: &[String]) -> String {
  entries.join(DELIMITER)
}

/// UTF-16 length of the joined entries, without building the string.
pub(crate) fn joined_len(entries: &[String]) -> usize {
  let text: usize = entries.iter().map(|e| utf16_len(e)).sum();
  text + entries.len().saturating_sub(1) * utf16_len(DELIMITER)
}

/// Would this (trimmed) entry survive a write and a re-read unchanged? It must
/// not contain the delimiter, nor begin or end with a `§` line that would
/// fuse with the delimiter of a neighbour.
pub fn is_storable(entry: &str) -> bool {
  !format!("\n{entry}\n").contains(DELIMITER)
}

/// The percentage as JavaScript computes it: `min(100, floor(cur / lim * 100))`
/// in doubles, so rounding agrees with the TypeScript original.
pub(crate) fn percent(current: usize, limit: usize) -> usize {
  if limit == 0 {
    return 0;
  }
  ((current as f64 / limit as f64) * 100.0).floor().min(100.0) as usize
}

/// `"56% — 1,234/2,200 chars"`.
pub(crate) fn usage(current: usize, limit: usize) -> String {
  format!("{}% — {}/{} chars", percent(current, limit), group_thousands(current), group_thousands(limit))
}

/// A match preview: the first 80 UTF-16 units plus `...` when longer (never
/// splitting a surrogate pair).
pub(crate) fn preview(entry: &str) -> String {
  const MAX: usize = 80;
  if utf16_len(entry) <= MAX {
    return entry.to_string();
  }
  format!("{}...", &entry[..byte_offset_of_utf16(entry, MAX)])
}

#[cfg(test)]
mod tests {
  use super::*;

  fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
  }

  #[test]
  fn parses_trimmed_non_empty_entries() {
    assert_eq!(parse("one\n§\n  two \n§\n\n§\nthree"), strings(&["one", "two", "three"]));
    assert_eq!(parse(" \n\t"), Vec::<String>::new());
    assert_eq!(parse("a § b\n§x"), strings(&["a § b\n§x"]));
  }

  #[test]
  fn trims_like_javascript() {
    assert_eq!(js_trim("\u{FEFF} a \u{3000}"), "a");
    assert_eq!(js_trim("\u{85}a\u{85}"), "\u{85}a\u{85}");
  }

  #[test]
  fn crlf_reads_as_lf() {
    assert_eq!(parse(&normalize_newlines("one\r\n§\r\ntwo\rthree")), strings(&["one", "two\rthree"]));
  }

  #[test]
  fn dedupe_keeps_first_occurrence() {
    assert_eq!(dedupe(strings(&["same", "other", "same"])), strings(&["same", "other"]));
  }

  #[test]
  fn joined_length_counts_utf16_units() {
    assert_eq!(joined_len(&strings(&["a😀", "b"])), utf16_len(&serialize(&strings(&["a😀", "b"]))));
    assert_eq!(joined_len(&[]), 0);
  }

  #[test]
  fn entries_that_would_fuse_with_a_delimiter_are_not_storable() {
    assert!(is_storable("plain\nmulti-line § text"));
    for bad in ["a\n§\nb", "§\nb", "a\n§", "§"] {
      assert!(!is_storable(bad), "{bad:?}");
    }
  }

  #[test]
  fn usage_groups_digits_regardless_of_locale() {
    assert_eq!(usage(1234, 2200), "56% — 1,234/2,200 chars");
    assert_eq!(usage(5000, 2200), "100% — 5,000/2,200 chars");
    assert_eq!(usage(0, 0), "0% — 0/0 chars");
  }

  #[test]
  fn previews_cut_at_80_units() {
    let long = "x".repeat(81);
    assert_eq!(preview(&long), format!("{}...", "x".repeat(80)));
    assert_eq!(preview("short"), "short");
  }
}

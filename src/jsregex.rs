//! JavaScript regex syntax for the `regex` crate.
//!
//! Patterns written for JavaScript's `RegExp` with the `iu` flags differ from
//! the Rust crate's in a few classes: `\w`, `\d` and `\b` are ASCII in
//! JavaScript, `\s` is its own whitespace set, and `.` stops at four line
//! terminators. Translating those keeps a pattern's meaning; everything else
//! passes through (and the crate rejects what it cannot run, such as
//! look-around and backreferences).

/// JavaScript's `\s` members, for use inside a character class.
pub const JS_SPACE_MEMBERS: &str =
  r"\t\n\x0B\x0C\r \u{A0}\u{1680}\u{2000}-\u{200A}\u{2028}\u{2029}\u{202F}\u{205F}\u{3000}\u{FEFF}";

const WORD: &str = "0-9A-Za-z_";
const DIGIT: &str = "0-9";

/// Rewrites JavaScript-specific classes; the result is `regex` syntax.
pub fn translate(js: &str) -> String {
  let mut out = String::with_capacity(js.len() * 2);
  let mut in_class = false;
  let mut chars = js.chars();
  while let Some(ch) = chars.next() {
    match ch {
      '\\' => match chars.next() {
        None => out.push('\\'),
        Some(escaped) => escape(escaped, in_class, &mut out),
      },
      '[' if !in_class => {
        in_class = true;
        out.push('[');
      }
      ']' if in_class => {
        in_class = false;
        out.push(']');
      }
      '.' if !in_class => out.push_str(r"[^\n\r\u{2028}\u{2029}]"),
      other => out.push(other),
    }
  }
  out
}

fn escape(escaped: char, in_class: bool, out: &mut String) {
  let class = |members: &str, negated: bool| {
    // Inside a class a negated set nests as its own class.
    match (in_class, negated) {
      (false, false) => format!("[{members}]"),
      (false, true) => format!("[^{members}]"),
      (true, false) => members.to_string(),
      (true, true) => format!("[^{members}]"),
    }
  };
  match escaped {
    'w' => out.push_str(&class(WORD, false)),
    'W' => out.push_str(&class(WORD, true)),
    'd' => out.push_str(&class(DIGIT, false)),
    'D' => out.push_str(&class(DIGIT, true)),
    's' => out.push_str(&class(JS_SPACE_MEMBERS, false)),
    'S' => out.push_str(&class(JS_SPACE_MEMBERS, true)),
    'b' if !in_class => out.push_str(r"(?-u:\b)"),
    'B' if !in_class => out.push_str(r"(?-u:\B)"),
    other => {
      out.push('\\');
      out.push(other);
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use regex::RegexBuilder;

  fn js(pattern: &str) -> regex::Regex {
    RegexBuilder::new(&translate(pattern)).case_insensitive(true).build().unwrap()
  }

  #[test]
  fn word_digit_and_boundary_are_ascii() {
    assert!(!js(r"^\w+$").is_match("café"));
    assert!(js(r"^\w+$").is_match("snake_Case9"));
    assert!(!js(r"^\d$").is_match("٣"));
    assert!(js(r"\bcode\b").is_match("a code b"));
    assert!(js(r"[\w.-]+@").is_match("a.b-c@"));
    assert!(js(r"[^\W]").is_match("x"));
  }

  #[test]
  fn dot_stops_at_line_terminators_and_space_is_javascripts() {
    assert!(!js("a.b").is_match("a\u{2028}b"));
    assert!(js(r"a\sb").is_match("a\u{FEFF}b"));
    assert!(js(r"a\Sb").is_match("a\u{85}b"));
  }

  #[test]
  fn escapes_pass_through() {
    assert_eq!(translate(r"a\.b\\w"), r"a\.b\\w");
    assert_eq!(translate("x\\"), "x\\");
  }
}

//! Where a word splits: between bigram scripts and others, and an
//! identifier into its parts.

use super::{is_attached, is_gram_char};

/// `word` split where it changes between bigram scripts and others; marks
/// stay with the character before them. `true` marks a bigram segment.
pub(super) fn script_segments(word: &str) -> Vec<(&str, bool)> {
  let mut out: Vec<(&str, bool)> = Vec::new();
  let mut start = 0;
  let mut current: Option<bool> = None;
  for (at, c) in word.char_indices() {
    if is_attached(c) {
      continue;
    }
    let grams = is_gram_char(c);
    match current {
      Some(was) if was != grams => {
        out.push((&word[start..at], was));
        start = at;
      }
      _ => {}
    }
    current = Some(grams);
  }
  out.push((&word[start..], current.unwrap_or(false)));
  out
}

/// The pieces of an identifier: split at `_`, at a lower-to-upper case
/// change (`parseSession`), before the last capital of a capital run that
/// starts a word (`HTTPServer` → `HTTP`, `Server`) and between letters and
/// digits (`v2`). Marks stay with the character before them.
pub(super) struct IdentifierParts<'w> {
  word: &'w str,
  at: usize,
  /// Whether letter/digit changes split: not in a word with more than two
  /// of them (a hash, an id: `a3f9c2e1` is one token, not eight).
  digits_split: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
  Lower,
  Upper,
  Digit,
  Other,
}

fn class_of(c: char) -> Class {
  if c.is_numeric() {
    Class::Digit
  } else if c.is_uppercase() {
    Class::Upper
  } else if c.is_lowercase() {
    Class::Lower
  } else {
    Class::Other
  }
}

impl<'w> IdentifierParts<'w> {
  pub(super) fn new(word: &'w str) -> Self {
    let mut digits = word.chars().filter(|&c| !is_attached(c) && c != '_').map(|c| class_of(c) == Class::Digit);
    let (mut changes, mut previous) = (0, digits.next());
    for digit in digits {
      changes += usize::from(previous != Some(digit));
      previous = Some(digit);
    }
    IdentifierParts { word, at: 0, digits_split: changes <= 2 }
  }
}

impl<'w> Iterator for IdentifierParts<'w> {
  type Item = &'w str;

  fn next(&mut self) -> Option<&'w str> {
    let rest = &self.word[self.at..];
    let skip = rest.len() - rest.trim_start_matches('_').len();
    self.at += skip;
    let rest = &self.word[self.at..];
    if rest.is_empty() {
      return None;
    }
    let mut chars = rest.char_indices().filter(|(_, c)| !is_attached(*c)).peekable();
    let (_, first) = chars.next()?;
    let mut previous = class_of(first);
    let mut end = rest.len();
    while let Some((at, c)) = chars.next() {
      if c == '_' {
        end = at;
        break;
      }
      let class = class_of(c);
      let next_is_lower = chars.peek().is_some_and(|(_, n)| class_of(*n) == Class::Lower);
      let boundary = match (previous, class) {
        (Class::Lower | Class::Other, Class::Upper) => true,
        (Class::Upper, Class::Upper) => next_is_lower,
        (Class::Digit, Class::Digit) => false,
        (Class::Digit, _) | (_, Class::Digit) => self.digits_split,
        _ => false,
      };
      if boundary {
        end = at;
        break;
      }
      previous = class;
    }
    self.at += end;
    Some(&rest[..end])
  }
}

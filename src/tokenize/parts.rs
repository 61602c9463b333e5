//! Where a word splits: between bigram scripts and others, and an
//! identifier into its parts.

use super::{class, is_attached, is_gram_char};

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
/// digits (`v2`). Marks stay with the character before them. An ASCII word
/// is walked byte by byte through the tokenizer's class table; any other
/// char by char, with Unicode's classes (which agree on ASCII).
pub(super) struct IdentifierParts<'w> {
  word: &'w str,
  at: usize,
  ascii: bool,
  /// Whether letter/digit changes split: not in a word with more than two
  /// of them (a hash, an id: `a3f9c2e1` is one token, not eight).
  digits_split: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
  Lower,
  Upper,
  Digit,
  Underscore,
  Other,
}

fn class_of(c: char) -> Class {
  if c == '_' {
    Class::Underscore
  } else if c.is_numeric() {
    Class::Digit
  } else if c.is_uppercase() {
    Class::Upper
  } else if c.is_lowercase() {
    Class::Lower
  } else {
    Class::Other
  }
}

fn class_of_byte(byte: u8) -> Class {
  match class::OF[byte as usize] {
    class::LOWER => Class::Lower,
    class::UPPER => Class::Upper,
    class::DIGIT => Class::Digit,
    class::UNDERSCORE => Class::Underscore,
    _ => Class::Other,
  }
}

/// `text`'s units (a byte of ASCII, else a char without its marks) with
/// their offsets and classes, handed to `f` as one concrete iterator type
/// per kind of text.
macro_rules! with_units {
  ($ascii:expr, $text:expr, $f:expr) => {
    if $ascii {
      $f($text.bytes().enumerate().map(|(at, byte)| (at, class_of_byte(byte))))
    } else {
      $f($text.char_indices().filter(|(_, c)| !is_attached(*c)).map(|(at, c)| (at, class_of(c))))
    }
  };
}

/// Letter/digit changes between the units of a word, `_` skipped.
fn digit_changes(units: impl Iterator<Item = (usize, Class)>) -> usize {
  let mut digits = units.filter(|(_, class)| *class != Class::Underscore).map(|(_, class)| class == Class::Digit);
  let (mut changes, mut previous) = (0, digits.next());
  for digit in digits {
    changes += usize::from(previous != Some(digit));
    previous = Some(digit);
  }
  changes
}

/// Where the part that starts the units (not at a `_`) ends: `None` when
/// there is no unit (only marks are left).
fn part_end(units: impl Iterator<Item = (usize, Class)>, len: usize, digits_split: bool) -> Option<usize> {
  let mut units = units.peekable();
  let (_, mut previous) = units.next()?;
  while let Some((at, class)) = units.next() {
    if class == Class::Underscore {
      return Some(at);
    }
    let next_is_lower = units.peek().is_some_and(|(_, next)| *next == Class::Lower);
    let boundary = match (previous, class) {
      (Class::Lower | Class::Other, Class::Upper) => true,
      (Class::Upper, Class::Upper) => next_is_lower,
      (Class::Digit, Class::Digit) => false,
      (Class::Digit, _) | (_, Class::Digit) => digits_split,
      _ => false,
    };
    if boundary {
      return Some(at);
    }
    previous = class;
  }
  Some(len)
}

impl<'w> IdentifierParts<'w> {
  pub(super) fn new(word: &'w str) -> Self {
    let ascii = word.is_ascii();
    let changes = with_units!(ascii, word, digit_changes);
    IdentifierParts { word, at: 0, ascii, digits_split: changes <= 2 }
  }

  /// Walked char by char even when ASCII (tests: the byte walk's oracle).
  #[cfg(test)]
  pub(super) fn by_chars(word: &'w str) -> Self {
    let changes = with_units!(false, word, digit_changes);
    IdentifierParts { word, at: 0, ascii: false, digits_split: changes <= 2 }
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
    let end = with_units!(self.ascii, rest, |units| part_end(units, rest.len(), self.digits_split))?;
    self.at += end;
    Some(&rest[..end])
  }
}

//! The one canonical tokenizer, used for hot postings, cold vocabulary,
//! literal queries, phrase prefilters and snippet anchors alike.
//!
//! NFKC, then words: maximal runs of Unicode letters (`\p{L}`), marks
//! (`\p{M}`, so a Devanagari vowel sign stays inside its word, as UAX #29's
//! Extend rule keeps it), numbers (`\p{N}`), `_` and the joiners ZWNJ/ZWJ;
//! then lowercase. Unlike UAX #29, `.` and `'` never join a word, so
//! `src/foo.ts` stays the three terms `src`, `foo`, `ts`. No stemming, no
//! synonyms.
//!
//! A word yields up to three kinds of term ([`TermKind`]):
//! - the whole word (`parsesessionheader`), exactly findable as before;
//! - its identifier parts (camelCase, snake_case, letter/digit and script
//!   boundaries: `parse`, `session`, `header`), stored marked with
//!   [`PART_MARK`] so a whole-word match and a part match stay distinct terms
//!   (ranking weighs a part match lower);
//! - overlapping character bigrams of runs in scripts written without spaces
//!   (Han, Hiragana, Katakana, Hangul, Thai, Lao, Khmer, Myanmar), as Lucene's
//!   CJK analysis does: `部署到生产环境` → `部署 署到 到生 生产 产环 环境`, so a
//!   query word written in those scripts is found where its characters stand
//!   together. A lone character of such a script is its own term. A run made
//!   only of such characters is not also kept whole (it is a sentence, not a
//!   word); a word mixing them with other letters is.
//!
//! ASCII text is already NFKC and skips normalization. Words are found by a
//! byte-class table (a non-ASCII character is decoded only where one
//! stands); an ASCII word is emitted borrowed from the text unless it needs
//! lowering, so the common term costs no copy.

use regex::Regex;
use std::sync::OnceLock;
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

mod parts;

use parts::{script_segments, IdentifierParts};

/// What a term stands for in its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TermKind {
  /// A whole word.
  Word,
  /// A piece of a word that has several (an identifier's part, or a
  /// script's run inside a mixed word).
  Part,
  /// A character bigram (or lone character) of a script without spaces.
  Gram,
}

impl TermKind {
  /// Does the term count toward its document's length? Parts restate their
  /// word, so they do not.
  pub fn counts_length(self) -> bool {
    self != TermKind::Part
  }
}

/// Leads a part term as stored in postings and vocabularies. Never inside a
/// word (it is a control character), and never equal to the newline that
/// joins a vocabulary's terms.
pub const PART_MARK: char = '\u{1}';

/// `part` as postings and vocabularies store it.
pub fn part_term(part: &str) -> String {
  let mut out = String::with_capacity(part.len() + 1);
  out.push(PART_MARK);
  out.push_str(part);
  out
}

/// The part a stored term stands for, when it is one.
pub fn as_part(stored: &str) -> Option<&str> {
  stored.strip_prefix(PART_MARK)
}

fn word_pattern() -> &'static Regex {
  static PATTERN: OnceLock<Regex> = OnceLock::new();
  PATTERN.get_or_init(|| Regex::new(r"^[\p{L}\p{M}\p{N}_\u{200C}\u{200D}]$").expect("word pattern compiles"))
}

/// Word-character membership for the Basic Multilingual Plane, computed
/// once from the regex class itself (so the tables stay Unicode's), then a
/// bit test per character instead of a regex search per token.
fn bmp_words() -> &'static [u64] {
  static BITS: OnceLock<Vec<u64>> = OnceLock::new();
  BITS.get_or_init(|| {
    let pattern = word_pattern();
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

/// Is `c` a word character (a letter, mark, number, `_`, ZWNJ or ZWJ)?
pub fn is_word_char(c: char) -> bool {
  let code = c as u32;
  if code < 0x80 {
    return c.is_ascii_alphanumeric() || c == '_';
  }
  if code < 0x10000 {
    return bmp_words()[(code / 64) as usize] & (1 << (code % 64)) != 0;
  }
  let mut buffer = [0u8; 4];
  word_pattern().is_match(c.encode_utf8(&mut buffer))
}

/// Is `c` of a script written without spaces between words, which is
/// indexed by character bigrams?
pub fn is_gram_char(c: char) -> bool {
  matches!(c as u32,
    0x0E00..=0x0EFF          // Thai, Lao
    | 0x1000..=0x109F        // Myanmar
    | 0x1100..=0x11FF        // Hangul Jamo
    | 0x1780..=0x17FF        // Khmer
    | 0x3005..=0x3007        // 々 〆 〇
    | 0x3040..=0x30FF        // Hiragana, Katakana
    | 0x3130..=0x318F        // Hangul compatibility Jamo
    | 0x31F0..=0x31FF        // Katakana phonetic extensions
    | 0x3400..=0x4DBF        // CJK extension A
    | 0x4E00..=0x9FFF        // CJK unified ideographs
    | 0xA960..=0xA97F        // Hangul Jamo extended A
    | 0xAC00..=0xD7FF        // Hangul syllables, Jamo extended B
    | 0xF900..=0xFAFF        // CJK compatibility ideographs
    | 0x20000..=0x3FFFF      // CJK extensions B and later
  )
}

/// Is `c` a combining mark (or joiner), which belongs to the character
/// before it?
fn is_attached(c: char) -> bool {
  !c.is_alphanumeric() && c != '_' && is_word_char(c)
}

/// `text` in NFKC (borrowed when it already is).
pub fn nfkc(text: &str) -> std::borrow::Cow<'_, str> {
  if text.is_ascii() || is_nfkc_quick(text.chars()) == IsNormalized::Yes {
    std::borrow::Cow::Borrowed(text)
  } else {
    std::borrow::Cow::Owned(text.nfkc().collect())
  }
}

/// ASCII byte classes: one table lookup per byte tells whether it is a word
/// character and which, so a word's scan also learns whether it needs
/// lowering and whether it can have parts.
mod class {
  pub const LOWER: u8 = 1;
  pub const UPPER: u8 = 2;
  pub const DIGIT: u8 = 4;
  pub const UNDERSCORE: u8 = 8;

  /// 0 for a byte that is not an ASCII word character.
  pub static OF: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut byte = 0;
    while byte < 256 {
      table[byte] = match byte as u8 {
        b'a'..=b'z' => LOWER,
        b'A'..=b'Z' => UPPER,
        b'0'..=b'9' => DIGIT,
        b'_' => UNDERSCORE,
        _ => 0,
      };
      byte += 1;
    }
    table
  };
}

/// Emits lowercased terms: borrowed from the text when lowering changes
/// nothing, else through one reused buffer (which also leads a part with
/// [`PART_MARK`] when stored terms are asked for).
struct Emitter<F> {
  emit: F,
  lowered: String,
  mark_parts: bool,
}

impl<F: FnMut(&str, TermKind)> Emitter<F> {
  fn lower(&mut self, text: &str, kind: TermKind) {
    self.lowered.clear();
    if self.mark_parts && kind == TermKind::Part {
      self.lowered.push(PART_MARK);
    }
    if text.is_ascii() {
      let from = self.lowered.len();
      self.lowered.push_str(text);
      self.lowered[from..].make_ascii_lowercase();
    } else {
      self.lowered.extend(text.chars().flat_map(char::to_lowercase));
    }
    (self.emit)(&self.lowered, kind);
  }

  /// An ASCII word, with the classes of its first byte and the union of
  /// the rest's: the same terms as [`Emitter::word`], without its scans.
  fn ascii_word(&mut self, word: &str, first: u8, rest: u8) {
    use class::*;
    if (first | rest) & UPPER == 0 {
      (self.emit)(word, TermKind::Word);
    } else {
      self.lower(word, TermKind::Word);
    }
    // As `parts`'s shortcut: a lowercase or capitalized word, or a number.
    let plain = first & (LOWER | UPPER) != 0 && rest & !LOWER == 0;
    if !plain && (first | rest) != DIGIT {
      self.split_parts(word);
    }
  }

  /// One word (a maximal run of word characters).
  fn word(&mut self, word: &str) {
    if word.is_ascii() || !word.chars().any(is_gram_char) {
      self.lower(word, TermKind::Word);
      self.parts(word);
      return;
    }
    let segments = script_segments(word);
    let mixed = segments.len() > 1;
    if mixed {
      self.lower(word, TermKind::Word);
    }
    for (segment, grams) in segments {
      if grams {
        self.grams(segment);
      } else {
        self.lower(segment, TermKind::Part);
        self.parts(segment);
      }
    }
  }

  /// The identifier parts of `word` (one without bigram-script characters),
  /// when it has several, or one that differs from the word (`__init__`).
  fn parts(&mut self, word: &str) {
    // The common cases, a lowercase or capitalized word or a number, have no
    // parts; they skip the scan.
    let bytes = word.as_bytes();
    if bytes[0].is_ascii_alphabetic() && bytes[1..].iter().all(u8::is_ascii_lowercase)
      || bytes.iter().all(u8::is_ascii_digit)
    {
      return;
    }
    self.split_parts(word);
  }

  fn split_parts(&mut self, word: &str) {
    let mut parts = IdentifierParts::new(word).peekable();
    let Some(first) = parts.next() else { return };
    if parts.peek().is_none() && first.len() == word.len() {
      return;
    }
    self.lower(first, TermKind::Part);
    for part in parts {
      self.lower(part, TermKind::Part);
    }
  }

  /// Overlapping bigrams of a run's characters (each with its marks); a
  /// lone character is its own term.
  fn grams(&mut self, run: &str) {
    let units: Vec<usize> = run.char_indices().filter(|(_, c)| !is_attached(*c)).map(|(at, _)| at).collect();
    match units.len() {
      0 => {}
      1 => self.lower(run, TermKind::Gram),
      n => {
        for i in 0..n - 1 {
          let end = units.get(i + 2).copied().unwrap_or(run.len());
          self.lower(&run[units[i]..end], TermKind::Gram);
        }
      }
    }
  }

  /// Every word of `text` (already NFKC), in order. ASCII bytes are
  /// classed by table; only a non-ASCII character is decoded and looked
  /// up, and only a word holding one takes the general [`Emitter::word`].
  fn text(&mut self, text: &str) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
      let (byte, start) = (bytes[at], at);
      let first = class::OF[byte as usize];
      if byte < 0x80 {
        at += 1;
        if first == 0 {
          continue;
        }
      } else {
        let (len, word) = char_at(text, at);
        at += len;
        if !word {
          continue;
        }
      }
      // The rest of the word, with its ASCII classes while it stays ASCII.
      let (mut rest, mut ascii) = (0u8, byte < 0x80);
      while at < bytes.len() {
        let byte = bytes[at];
        if byte < 0x80 {
          let class = class::OF[byte as usize];
          if class == 0 {
            break;
          }
          rest |= class;
          at += 1;
        } else {
          let (len, word) = char_at(text, at);
          if !word {
            break;
          }
          ascii = false;
          at += len;
        }
      }
      let word = &text[start..at];
      if ascii {
        self.ascii_word(word, first, rest);
      } else {
        self.word(word);
      }
    }
  }
}

/// The length of the (non-ASCII) character at `at`, and whether it is a
/// word character.
fn char_at(text: &str, at: usize) -> (usize, bool) {
  let c = text[at..].chars().next().expect("at a char boundary");
  (c.len_utf8(), is_word_char(c))
}

/// Calls `emit` with each canonical term of `text` and its kind, in order
/// (a word, then its parts or grams). Parts are passed bare; see
/// [`for_each_stored_term`] for the form indexes keep.
pub fn for_each_term(text: &str, emit: impl FnMut(&str, TermKind)) {
  Emitter { emit, lowered: String::new(), mark_parts: false }.text(&nfkc(text));
}

/// Calls `emit` with each term of `text` as postings and vocabularies store
/// it (parts led by [`PART_MARK`]) and its kind.
pub fn for_each_stored_term(text: &str, emit: impl FnMut(&str, TermKind)) {
  Emitter { emit, lowered: String::new(), mark_parts: true }.text(&nfkc(text));
}

/// The terms a query asks for, in order, with repeats: its words and
/// grams. A query's own identifier parts are not asked for (a query for
/// `parseSessionHeader` wants that identifier, not every `parse`); each
/// asked term matches a stored word or part equal to it.
pub fn tokenize(text: &str) -> Vec<String> {
  let mut out = Vec::new();
  for_each_term(text, |term, kind| {
    if kind != TermKind::Part {
      out.push(term.to_string());
    }
  });
  out
}

#[cfg(test)]
mod tests;

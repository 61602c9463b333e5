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
//! ASCII text is already NFKC and takes a fast path that never allocates for
//! the normalization step.

use regex::Regex;
use std::sync::OnceLock;
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

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

/// Emits lowercased terms, reusing one buffer.
struct Emitter<F> {
  emit: F,
  lowered: String,
}

impl<F: FnMut(&str, TermKind)> Emitter<F> {
  fn lower(&mut self, text: &str, kind: TermKind) {
    self.lowered.clear();
    if text.is_ascii() {
      self.lowered.push_str(text);
      self.lowered.make_ascii_lowercase();
    } else {
      self.lowered.extend(text.chars().flat_map(char::to_lowercase));
    }
    (self.emit)(&self.lowered, kind);
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
}

/// `word` split where it changes between bigram scripts and others; marks
/// stay with the character before them. `true` marks a bigram segment.
fn script_segments(word: &str) -> Vec<(&str, bool)> {
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
struct IdentifierParts<'w> {
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
  fn new(word: &'w str) -> Self {
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

/// Calls `emit` with each canonical term of `text` and its kind, in order
/// (a word, then its parts or grams). Parts are passed bare; see
/// [`for_each_stored_term`] for the form indexes keep.
pub fn for_each_term(text: &str, emit: impl FnMut(&str, TermKind)) {
  let mut emitter = Emitter { emit, lowered: String::new() };
  if text.is_ascii() {
    let bytes = text.as_bytes();
    let mut start = None;
    for (at, byte) in bytes.iter().enumerate().chain(std::iter::once((bytes.len(), &b' '))) {
      let word = byte.is_ascii_alphanumeric() || *byte == b'_';
      match (word, start) {
        (true, None) => start = Some(at),
        (false, Some(from)) => {
          emitter.word(&text[from..at]);
          start = None;
        }
        _ => {}
      }
    }
    return;
  }
  let normalized = nfkc(text);
  let mut start = None;
  for (at, c) in normalized.char_indices().chain(std::iter::once((normalized.len(), ' '))) {
    match (is_word_char(c) && at < normalized.len(), start) {
      (true, None) => start = Some(at),
      (false, Some(from)) => {
        emitter.word(&normalized[from..at]);
        start = None;
      }
      _ => {}
    }
  }
}

/// Calls `emit` with each term of `text` as postings and vocabularies store
/// it (parts led by [`PART_MARK`]) and its kind.
pub fn for_each_stored_term(text: &str, mut emit: impl FnMut(&str, TermKind)) {
  let mut marked = String::new();
  for_each_term(text, |term, kind| {
    if kind == TermKind::Part {
      marked.clear();
      marked.push(PART_MARK);
      marked.push_str(term);
      emit(&marked, kind);
    } else {
      emit(term, kind);
    }
  });
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
mod tests {
  use super::*;

  fn terms(text: &str) -> Vec<(String, TermKind)> {
    let mut out = Vec::new();
    for_each_term(text, |term, kind| out.push((term.to_string(), kind)));
    out
  }

  fn of_kind(text: &str, want: TermKind) -> Vec<String> {
    terms(text).into_iter().filter(|(_, kind)| *kind == want).map(|(term, _)| term).collect()
  }

  #[test]
  fn matches_the_seed_example() {
    assert_eq!(tokenize("CAFÉ café Ωmega snake_case 42"), ["café", "café", "ωmega", "snake_case", "42"]);
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
    let text = "Hello_World foo-bar 42x __init__ parseHTTPHeader ü";
    let ascii = terms(&text[..text.len() - 3]);
    let unicode = terms(text);
    assert_eq!(unicode[..ascii.len()], ascii[..]);
    assert_eq!(unicode.last().map(|(t, _)| t.as_str()), Some("ü"));
  }

  #[test]
  fn identifiers_keep_the_whole_word_and_add_their_parts() {
    let kinds = terms("parseSessionHeader");
    assert_eq!(
      kinds,
      [
        ("parsesessionheader".to_string(), TermKind::Word),
        ("parse".to_string(), TermKind::Part),
        ("session".to_string(), TermKind::Part),
        ("header".to_string(), TermKind::Part),
      ]
    );
    assert_eq!(of_kind("MAX_RETRY_COUNT", TermKind::Part), ["max", "retry", "count"]);
    assert_eq!(of_kind("kubernetes_v2", TermKind::Part), ["kubernetes", "v", "2"]);
    assert_eq!(of_kind("HTTPServer2xx", TermKind::Part), ["http", "server", "2", "xx"]);
    assert_eq!(of_kind("__init__", TermKind::Part), ["init"]);
    assert!(of_kind("plain", TermKind::Part).is_empty());
    assert!(of_kind("12345", TermKind::Part).is_empty());
    assert_eq!(of_kind("sha256sum", TermKind::Part), ["sha", "256", "sum"]);
    assert!(of_kind("a3f9c2e1", TermKind::Part).is_empty(), "a hash is not an identifier");
    assert!(of_kind("ΩMEGA", TermKind::Part).is_empty());
    // Kebab-case is words already.
    assert_eq!(tokenize("kebab-case"), ["kebab", "case"]);
  }

  #[test]
  fn unspaced_scripts_are_found_by_their_bigrams() {
    assert_eq!(tokenize("我们今天讨论了部署到生产环境的步骤").iter().filter(|t| *t == "部署").count(), 1);
    assert!(tokenize("生产环境").windows(3).any(|w| w == ["生产", "产环", "环境"]));
    assert!(tokenize("東京でデプロイした").contains(&"東京".to_string()));
    assert!(tokenize("東京でデプロイした").contains(&"デプ".to_string()));
    assert!(tokenize("서울에 갔다").contains(&"서울".to_string()));
    assert!(tokenize("ระบบนี้ทำงาน").contains(&"ระ".to_string()));
    assert_eq!(tokenize("雪"), ["雪"]);
    // Only the bigrams: a run of those scripts is not kept whole.
    assert_eq!(of_kind("部署", TermKind::Word), Vec::<String>::new());
  }

  #[test]
  fn a_mixed_word_keeps_itself_its_latin_part_and_its_grams() {
    let all = terms("部署用的是kubernetes集群");
    assert!(all.contains(&("部署用的是kubernetes集群".to_string(), TermKind::Word)));
    assert!(all.contains(&("kubernetes".to_string(), TermKind::Part)));
    assert!(all.contains(&("集群".to_string(), TermKind::Gram)));
    assert!(all.contains(&("部署".to_string(), TermKind::Gram)));
    assert_eq!(tokenize("ΩMEGA雪"), ["ωmega雪", "雪"]);
  }

  #[test]
  fn marks_stay_inside_their_words() {
    // The Devanagari vowel signs are marks: the words stay whole.
    assert_eq!(tokenize("नमस्ते दुनिया"), ["नमस्ते", "दुनिया"]);
    assert!(!tokenize("नमस्ते दुनिया").contains(&"त".to_string()));
    assert_eq!(tokenize("तैनात"), ["तैनात"]);
    // Thai marks ride with their consonant inside a bigram.
    assert!(tokenize("ที่นี่").iter().all(|gram| gram.chars().next().is_some_and(|c| !is_attached(c))));
    // A lone mark is a term of its own, never an empty query.
    assert_eq!(tokenize("ि"), ["ि"]);
  }

  #[test]
  fn stored_parts_are_marked_and_never_collide_with_words() {
    let mut stored = Vec::new();
    for_each_stored_term("fooBar foo", |term, _| stored.push(term.to_string()));
    assert_eq!(stored, ["foobar".to_string(), part_term("foo"), part_term("bar"), "foo".to_string()]);
    assert_eq!(as_part(&part_term("foo")), Some("foo"));
    assert_eq!(as_part("foo"), None);
    assert!(!is_word_char(PART_MARK) && PART_MARK != '\n');
  }

  #[test]
  fn the_character_table_agrees_with_the_unicode_class() {
    let class = word_pattern();
    let mut buffer = [0u8; 4];
    for code in (0u32..0x11000).step_by(7).chain([0x5f, 0x3000, 0x96ea, 0x1d400, 0x1f600, 0x093f, 0x200d]) {
      if let Some(c) = char::from_u32(code) {
        assert_eq!(is_word_char(c), class.is_match(c.encode_utf8(&mut buffer)), "U+{code:04X}");
      }
    }
  }

  use crate::testing::proptest_config;
  use proptest::prelude::*;

  /// Words from the scripts the tokenizer treats differently.
  fn word() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-zA-Z0-9_]{1,12}|[部署生产环境東京]{1,6}|[デプロイ]{1,4}|[서울에]{1,4}|[ระบบที่นี้]{1,6}|[नमस्तेदुनिया]{1,6}|[a-z]{1,4}[集群]{1,3}")
      .expect("a word pattern")
  }

  proptest! {
    #![proptest_config(proptest_config(256))]

    /// A text's terms are its words' terms, one word after another: no term
    /// spans a separator, and every word of a text is found as the query of
    /// that word alone asks for it (the exactness a literal query relies on).
    #[test]
    fn a_text_is_the_sum_of_its_words(words in proptest::collection::vec(word(), 1..8), separator in "[ ./:,-]") {
      let text = words.join(&separator);
      let whole = terms(&text);
      let each: Vec<(String, TermKind)> = words.iter().flat_map(|w| terms(w)).collect();
      prop_assert_eq!(&whole, &each);
      for w in &words {
        for asked in tokenize(w) {
          prop_assert!(whole.iter().any(|(term, _)| *term == asked), "{} of {} in {}", asked, w, text);
        }
      }
    }

    /// The ASCII fast path gives what the Unicode path gives.
    #[test]
    fn the_ascii_path_is_the_unicode_path(text in "[ -~]{0,60}") {
      let unicode = terms(&format!("{text} ·"));
      prop_assert_eq!(terms(&text), unicode);
    }
  }

  #[test]
  fn empty_and_symbol_only_text_has_no_tokens() {
    assert!(tokenize("").is_empty());
    assert!(tokenize("-- ** //").is_empty());
  }
}

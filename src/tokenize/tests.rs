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

/// The general path alone: every word found char by char and taken through
/// `Emitter::word`, as the tokenizer did before its ASCII fast path.
fn by_chars(text: &str) -> Vec<(String, TermKind)> {
  let mut out = Vec::new();
  let mut emitter =
    Emitter { emit: |term: &str, kind| out.push((term.to_string(), kind)), lowered: String::new(), mark_parts: false };
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
  out
}

/// The general path's terms as stored: parts led by the mark.
fn stored_by_chars(text: &str) -> Vec<(String, TermKind)> {
  let mark = |(term, kind): (String, TermKind)| match kind {
    TermKind::Part => (part_term(&term), kind),
    _ => (term, kind),
  };
  by_chars(text).into_iter().map(mark).collect()
}

fn stored_terms(text: &str) -> Vec<(String, TermKind)> {
  let mut out = Vec::new();
  for_each_stored_term(text, |term, kind| out.push((term.to_string(), kind)));
  out
}

#[test]
fn the_fast_path_borrows_lowercase_words_and_marks_parts() {
  assert_eq!(
    stored_terms("getX x_y Ab 12ab éB"),
    [
      ("getx".to_string(), TermKind::Word),
      ("\u{1}get".to_string(), TermKind::Part),
      ("\u{1}x".to_string(), TermKind::Part),
      ("x_y".to_string(), TermKind::Word),
      ("\u{1}x".to_string(), TermKind::Part),
      ("\u{1}y".to_string(), TermKind::Part),
      ("ab".to_string(), TermKind::Word),
      ("12ab".to_string(), TermKind::Word),
      ("\u{1}12".to_string(), TermKind::Part),
      ("\u{1}ab".to_string(), TermKind::Part),
      ("éb".to_string(), TermKind::Word),
      ("\u{1}é".to_string(), TermKind::Part),
      ("\u{1}b".to_string(), TermKind::Part),
    ]
  );
}

proptest! {
  #![proptest_config(proptest_config(512))]

  /// The byte-class scan and the ASCII word path emit exactly what the
  /// char-by-char general path does, bare and stored, on ASCII and mixed
  /// text (accents, marks, bigram scripts, compatibility forms, symbols).
  #[test]
  fn the_fast_path_equals_the_general_path(
    text in "([a-zA-Z0-9_]{1,8}|[ ./:,\\-'\"\n()]{1,3}|[éÉüßΩω]|e\u{301}|[ﬁＡ２]|[部署東京デプロイ서울ระบบ]{1,3}|[नमस्ते]{1,3}|[😀—’]){0,24}"
  ) {
    let bare = {
      let mut out = Vec::new();
      for_each_term(&text, |term, kind| out.push((term.to_string(), kind)));
      out
    };
    prop_assert_eq!(bare, by_chars(&text));
    prop_assert_eq!(stored_terms(&text), stored_by_chars(&text));
  }

  /// An ASCII identifier's parts walked by bytes equal its parts walked by
  /// chars.
  #[test]
  fn ascii_parts_by_bytes_equal_parts_by_chars(word in "[a-zA-Z0-9_]{1,16}") {
    let by_bytes: Vec<&str> = parts::IdentifierParts::new(&word).collect();
    let by_chars: Vec<&str> = parts::IdentifierParts::by_chars(&word).collect();
    prop_assert_eq!(by_bytes, by_chars);
  }
}

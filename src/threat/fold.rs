//! Code points that hide payloads (always, or out of their legitimate use),
//! and the folded spelling a reader sees (NFKC, confusables to Latin,
//! hidden characters dropped) that patterns also run on.

/// Zero-width, bidirectional-control and other invisible code points used to
/// hide payloads; always findings. (ZWNJ/ZWJ, TAG characters and variation
/// selectors are judged in context: [`hidden_carrier`].)
pub(crate) const INVISIBLE: [char; 20] = [
  '\u{200B}', '\u{2060}', '\u{2061}', '\u{2062}', '\u{2063}', '\u{2064}', '\u{FEFF}', '\u{202A}', '\u{202B}',
  '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}', '\u{200E}', '\u{200F}',
  '\u{061C}', '\u{00AD}',
];

const ZWNJ: char = '\u{200C}';
const ZWJ: char = '\u{200D}';

pub(super) fn is_tag(c: char) -> bool {
  ('\u{E0000}'..='\u{E007F}').contains(&c)
}

pub(super) fn is_variation_selector(c: char) -> bool {
  ('\u{FE00}'..='\u{FE0F}').contains(&c) || ('\u{E0100}'..='\u{E01EF}').contains(&c)
}

/// Pictographs, dingbats, skin tones and regional indicators: what emoji
/// ZWJ sequences join.
fn is_emoji(c: char) -> bool {
  matches!(c, '\u{1F000}'..='\u{1FAFF}' | '\u{2600}'..='\u{27BF}' | '\u{2B00}'..='\u{2BFF}' | '\u{2300}'..='\u{23FF}')
    || matches!(
      c,
      '\u{00A9}' | '\u{00AE}' | '\u{203C}' | '\u{2049}' | '\u{2122}' | '\u{2139}' | '\u{3030}' | '\u{303D}'
    )
}

/// Letters of scripts whose orthography uses ZWNJ/ZWJ: Arabic (Persian,
/// Urdu), Syriac, Thaana, N'Ko, the Indic scripts, Sinhala, Myanmar, Khmer.
fn joins_letters(c: char) -> bool {
  matches!(c, '\u{0600}'..='\u{08FF}' | '\u{0900}'..='\u{0DFF}' | '\u{1000}'..='\u{109F}' | '\u{1780}'..='\u{17FF}')
    || matches!(c, '\u{FB50}'..='\u{FDFF}' | '\u{FE70}'..='\u{FEFF}' | '\u{A8E0}'..='\u{A8FF}')
}

/// The first hidden-carrier code point in `chars` at `at`, if the character
/// there is a joiner, TAG or variation selector out of its legitimate use.
pub(super) fn hidden_carrier(chars: &[char], at: usize) -> Option<char> {
  let c = chars[at];
  let before = at.checked_sub(1).map(|i| chars[i]);
  let after = chars.get(at + 1).copied();
  // The base an emoji modifier sequence hangs on (VS16 may follow it).
  let emoji_before = || before.is_some_and(|b| is_emoji(b) || (b == '\u{FE0F}' && at >= 2 && is_emoji(chars[at - 2])));
  let legitimate = match c {
    ZWJ => {
      (emoji_before() && after.is_some_and(is_emoji))
        || (before.is_some_and(joins_letters) && after.is_some_and(joins_letters))
    }
    ZWNJ => before.is_some_and(joins_letters) && after.is_some_and(joins_letters),
    c if is_tag(c) => in_flag_tag_sequence(chars, at),
    c if is_variation_selector(c) => {
      before.is_some_and(|b| !is_variation_selector(b) && !b.is_whitespace())
        && !after.is_some_and(is_variation_selector)
    }
    _ => return None,
  };
  (!legitimate).then_some(c)
}

/// Emoji tag sequences (subdivision flags such as England's): U+1F3F4, 1-6
/// tag digits or lowercase letters, then CANCEL TAG.
fn in_flag_tag_sequence(chars: &[char], at: usize) -> bool {
  let spec = |c: char| matches!(c, '\u{E0030}'..='\u{E0039}' | '\u{E0061}'..='\u{E007A}');
  let start = (0..at).rev().take_while(|&i| spec(chars[i])).last().unwrap_or(at);
  let end = (at..chars.len()).find(|&i| !spec(chars[i])).unwrap_or(chars.len());
  start > 0
    && chars[start - 1] == '\u{1F3F4}'
    && (1..=6).contains(&(end - start))
    && chars.get(end) == Some(&'\u{E007F}')
}

/// Common Cyrillic and Greek letters that look like Latin ones (the
/// Unicode confusables most used to dodge filters), after NFKC.
pub(super) fn confusable(c: char) -> Option<char> {
  Some(match c {
    'а' | 'α' => 'a',
    'в' | 'β' => 'b',
    'с' | 'ϲ' => 'c',
    'ԁ' => 'd',
    'е' | 'ε' => 'e',
    'һ' => 'h',
    'і' | 'ι' | 'ı' => 'i',
    'ј' => 'j',
    'к' | 'κ' => 'k',
    'м' => 'm',
    'п' | 'η' => 'n',
    'о' | 'ο' | 'σ' => 'o',
    'р' | 'ρ' => 'p',
    'ԛ' => 'q',
    'г' => 'r',
    'ѕ' => 's',
    'т' | 'τ' => 't',
    'υ' | 'ц' => 'u',
    'ν' => 'v',
    'ԝ' | 'ω' => 'w',
    'х' | 'χ' => 'x',
    'у' | 'γ' => 'y',
    'А' | 'Α' => 'A',
    'В' | 'Β' => 'B',
    'С' => 'C',
    'Е' | 'Ε' => 'E',
    'Н' | 'Η' => 'H',
    'І' | 'Ι' => 'I',
    'Ј' => 'J',
    'К' | 'Κ' => 'K',
    'М' | 'Μ' => 'M',
    'Ν' => 'N',
    'О' | 'Ο' => 'O',
    'Р' | 'Ρ' => 'P',
    'Ѕ' => 'S',
    'Т' | 'Τ' => 'T',
    'Х' | 'Χ' => 'X',
    'У' | 'Υ' => 'Y',
    'Ζ' => 'Z',
    _ => return None,
  })
}

/// A code point that may carry a hidden payload: the always-invisible ones
/// and the carriers [`hidden_carrier`] judges in context.
pub(super) fn may_hide(c: char) -> bool {
  INVISIBLE.contains(&c) || matches!(c, ZWJ | ZWNJ) || is_tag(c) || is_variation_selector(c)
}

/// NFKC, confusables to Latin, invisible and format characters dropped:
/// the spelling a reader (or a model) sees; borrowed when that is the text.
///
/// NFKC works segment by segment: a segment starts at a character that is
/// NFKC_QC=Yes with combining class 0, which nothing before it can change
/// or compose with (UAX #15, "stable code points"). Only segments holding a
/// character that normalization, confusable folding or the drop would touch
/// are rebuilt: a whole-text NFKC runs at ~25 MB/s, and most evidence has a
/// few such characters (`…` in truncated output) or none.
pub(super) fn folded(text: &str) -> std::borrow::Cow<'_, str> {
  use unicode_normalization::char::canonical_combining_class;
  use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};
  if text.is_ascii() {
    return std::borrow::Cow::Borrowed(text);
  }
  let stable = |c: char| is_nfkc_quick(std::iter::once(c)) == IsNormalized::Yes;
  let mut out: Option<String> = None;
  let mut flush = |segment: std::ops::Range<usize>, touched: bool| match (&mut out, touched) {
    (None, false) => {}
    (Some(out), false) => out.push_str(&text[segment]),
    (out, true) => {
      let out = out.get_or_insert_with(|| text[..segment.start].to_string());
      out.extend(text[segment].nfkc().filter(|&c| !may_hide(c)).map(|c| confusable(c).unwrap_or(c)));
    }
  };
  let (mut start, mut touched) = (0, false);
  for (at, c) in text.char_indices() {
    if c.is_ascii() || (stable(c) && canonical_combining_class(c) == 0) {
      flush(start..at, touched);
      (start, touched) = (at, false);
    }
    touched |= !c.is_ascii() && (!stable(c) || may_hide(c) || confusable(c).is_some());
  }
  flush(start..text.len(), touched);
  out.map_or(std::borrow::Cow::Borrowed(text), std::borrow::Cow::Owned)
}

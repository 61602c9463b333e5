//! String measures shared by every bounded output.
//!
//! The contract counts hot-text limits in Unicode scalars and envelope and
//! chunk limits in JavaScript string length (UTF-16 code units), because the
//! consumers are JavaScript. These helpers keep both measures exact and never
//! cut inside a scalar, so every slice stays valid UTF-8 and valid UTF-16.

/// Length in UTF-16 code units, as JavaScript's `String.prototype.length`.
/// Counted over bytes, not chars: every byte that starts a scalar is one
/// unit and a 4-byte scalar's lead one more (a surrogate pair). A loop the
/// compiler vectorizes: decoding chars was ~3 % of a warm recall's samples
/// (every page is measured twice).
pub fn utf16_len(text: &str) -> usize {
  utf16_units(text.as_bytes())
}

/// [`utf16_len`] of UTF-8 bytes; additive, so a text may come in pieces
/// split anywhere.
fn utf16_units(bytes: &[u8]) -> usize {
  bytes.iter().map(|&b| usize::from(b & 0xC0 != 0x80) + usize::from(b >= 0xF0)).sum()
}

/// Byte offset of the UTF-16 offset `units`, rounded down to a scalar
/// boundary (a surrogate pair is never split). Offsets past the end clamp.
pub fn byte_offset_of_utf16(text: &str, units: usize) -> usize {
  let mut seen = 0;
  for (byte, ch) in text.char_indices() {
    let next = seen + ch.len_utf16();
    if next > units {
      return byte;
    }
    seen = next;
  }
  text.len()
}

/// The UTF-16 range `[start, end)` of `text`, widened so it never ends inside
/// a surrogate pair when `end` would split one; returns the slice and the
/// actual UTF-16 end.
pub fn slice_utf16(text: &str, start: usize, end: usize) -> (&str, usize) {
  let from = byte_offset_of_utf16(text, start);
  let mut to = byte_offset_of_utf16(text, end).max(from);
  let mut actual_end = utf16_len(&text[..to]);
  // Guarantee progress: a one-unit window that lands in a pair takes the pair.
  if to == from && from < text.len() {
    let ch = text[from..].chars().next().map(char::len_utf8).unwrap_or(0);
    to = from + ch;
    actual_end = utf16_len(&text[..to]);
  }
  (&text[from..to], actual_end)
}

/// UTF-16 offsets of one long text, marked every [`Utf16Index::STEP`]
/// units: a page of a 50 MB entry finds its bytes by one jump and a scan of
/// at most a step, instead of counting from the start (which made paging
/// through a huge entry quadratic).
#[derive(Debug)]
pub struct Utf16Index {
  total: usize,
  /// `(units, byte)` at the first scalar boundary at or past each step.
  marks: Vec<(usize, usize)>,
}

impl Utf16Index {
  pub const STEP: usize = 1 << 16;

  pub fn new(text: &str) -> Utf16Index {
    Self::with_step(text, Self::STEP)
  }

  fn with_step(text: &str, step: usize) -> Utf16Index {
    let mut marks = vec![(0, 0)];
    let mut units = 0;
    for (byte, ch) in text.char_indices() {
      if units >= marks.last().expect("one mark").0 + step {
        marks.push((units, byte));
      }
      units += ch.len_utf16();
    }
    Utf16Index { total: units, marks }
  }

  /// [`utf16_len`] of the indexed text.
  pub fn total(&self) -> usize {
    self.total
  }

  /// The last mark at or before the UTF-16 offset `units`.
  fn mark_before(&self, units: usize) -> (usize, usize) {
    self.marks[self.marks.partition_point(|&(at, _)| at <= units).saturating_sub(1)]
  }

  /// [`byte_offset_of_utf16`] of the indexed `text`.
  pub fn byte_offset(&self, text: &str, units: usize) -> usize {
    let (at, byte) = self.mark_before(units);
    byte + byte_offset_of_utf16(&text[byte..], units - at)
  }

  /// [`slice_utf16`] of the indexed `text`.
  pub fn slice<'t>(&self, text: &'t str, start: usize, end: usize) -> (&'t str, usize) {
    let (at, byte) = self.mark_before(start);
    let from = byte + byte_offset_of_utf16(&text[byte..], start - at);
    // `from`'s own offset: `start`, or one less when `start` falls inside a surrogate pair.
    let from_units = at + utf16_len(&text[byte..from]);
    let (window, window_end) = slice_utf16(&text[from..], 0, end.saturating_sub(from_units));
    (window, from_units + window_end)
  }
}

/// Keeps at most `max` Unicode scalars; returns the kept prefix and whether
/// anything was cut.
pub fn truncate_scalars(text: &str, max: usize) -> (&str, bool) {
  // No more bytes than `max`: no more scalars either (every hot entry is
  // checked again after each append).
  if text.len() <= max {
    return (text, false);
  }
  match text.char_indices().nth(max) {
    Some((byte, _)) => (&text[..byte], true),
    None => (text, false),
  }
}

/// Caps a metadata string at `max` UTF-16 units, ending it with `…` when cut.
pub fn cap_with_ellipsis(text: &str, max: usize) -> String {
  if utf16_len(text) <= max {
    return text.to_string();
  }
  let keep = byte_offset_of_utf16(text, max.saturating_sub(1));
  format!("{}…", &text[..keep])
}

/// Identity and type strings in results are capped at this many UTF-16 units.
pub const META_CHARS: usize = 512;

/// An optional metadata string capped at [`META_CHARS`].
pub fn meta(value: &Option<String>) -> Option<String> {
  value.as_deref().map(|v| cap_with_ellipsis(v, META_CHARS))
}

/// UTF-16 length of a value's compact JSON text, as `JSON.stringify(v).length`.
/// Counted as it is written, never held: a page is measured until it fits.
pub fn json_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
  struct Units(usize);
  impl std::io::Write for Units {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
      self.0 += utf16_units(bytes);
      Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
      Ok(())
    }
  }
  let mut units = Units(0);
  serde_json::to_writer(&mut units, value).map_or(usize::MAX, |()| units.0)
}

/// `json` (JSON text) with every non-ASCII scalar written as a `\u` escape
/// (a surrogate pair past U+FFFF): the same JSON value, in bytes that V8
/// takes as a one-byte string without decoding UTF-8 and parses on its
/// faster one-byte path. A single `…` in a recall page made the whole page a
/// two-byte string: decoding and parsing it was a third of the event loop's
/// share of a warm call. Outside strings JSON text is ASCII already.
pub fn ascii_json(json: String) -> String {
  if json.is_ascii() {
    return json;
  }
  use std::fmt::Write;
  let mut out = String::with_capacity(json.len() + json.len() / 8);
  let mut units = [0u16; 2];
  for ch in json.chars() {
    if ch.is_ascii() {
      out.push(ch);
    } else {
      for unit in ch.encode_utf16(&mut units) {
        let _ = write!(out, "\\u{unit:04x}");
      }
    }
  }
  out
}

/// `1234567` → `"1,234,567"`, independent of the machine's locale.
pub fn group_thousands(n: usize) -> String {
  let digits = n.to_string();
  let mut out = String::with_capacity(digits.len() + digits.len() / 3);
  for (i, ch) in digits.chars().enumerate() {
    if i > 0 && (digits.len() - i).is_multiple_of(3) {
      out.push(',');
    }
    out.push(ch);
  }
  out
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn thousands_are_grouped_regardless_of_locale() {
    assert_eq!(group_thousands(1_234_567), "1,234,567");
    assert_eq!(group_thousands(999), "999");
    assert_eq!(group_thousands(0), "0");
  }

  #[test]
  fn ascii_json_is_the_same_value_in_ascii_bytes() {
    let value =
      serde_json::json!({"snippet": "naïve … 雪 😀 \u{2028} \u{fffd}", "ascii": "plain \"quoted\" \\ text", "n": 1});
    let text = value.to_string();
    let ascii = ascii_json(text.clone());
    assert!(ascii.is_ascii() && ascii != text, "{ascii}");
    assert!(ascii.contains("\\ud83d\\ude00"), "a scalar past U+FFFF is a surrogate pair: {ascii}");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&ascii).unwrap(), value);
    let plain = serde_json::json!({"a": "b"}).to_string();
    assert_eq!(ascii_json(plain.clone()), plain);
  }

  proptest::proptest! {
    /// The index answers exactly as counting from the start does, whatever
    /// the step and wherever a surrogate pair falls.
    #[test]
    fn the_utf16_index_agrees_with_counting_from_the_start(
      text in "[a雪😀\u{2028}]{0,200}",
      step in 1usize..9,
      start in 0usize..420,
      len in 0usize..60,
    ) {
      let index = Utf16Index::with_step(&text, step);
      proptest::prop_assert_eq!(index.total(), utf16_len(&text));
      proptest::prop_assert_eq!(index.byte_offset(&text, start), byte_offset_of_utf16(&text, start));
      let start = start.min(utf16_len(&text));
      proptest::prop_assert_eq!(index.slice(&text, start, start + len), slice_utf16(&text, start, start + len));
    }
  }

  proptest::proptest! {
    #[test]
    fn utf16_len_counts_what_encoding_to_utf16_gives(text in "\\PC{0,64}") {
      proptest::prop_assert_eq!(utf16_len(&text), text.encode_utf16().count());
    }

    #[test]
    fn json_len_is_the_utf16_length_of_the_json_text(texts in proptest::collection::vec("\\PC{0,24}", 0..6)) {
      let value = serde_json::json!({"texts": texts, "n": texts.len()});
      proptest::prop_assert_eq!(json_len(&value), serde_json::to_string(&value).unwrap().encode_utf16().count());
    }
  }

  #[test]
  fn utf16_lengths_match_javascript() {
    assert_eq!(utf16_len("a😀b"), 4);
    assert_eq!(utf16_len("雪"), 1);
  }

  #[test]
  fn slicing_never_splits_a_surrogate_pair() {
    let text = "a😀b";
    assert_eq!(slice_utf16(text, 0, 2), ("a", 1));
    assert_eq!(slice_utf16(text, 1, 2), ("😀", 3));
    assert_eq!(slice_utf16(text, 1, 3), ("😀", 3));
    assert_eq!(slice_utf16(text, 3, 4), ("b", 4));
  }

  #[test]
  fn truncation_counts_scalars() {
    assert_eq!(truncate_scalars("a😀b", 2), ("a😀", true));
    assert_eq!(truncate_scalars("ab", 2), ("ab", false));
    assert_eq!(truncate_scalars("a😀", 2), ("a😀", false), "5 bytes, 2 scalars");
    assert_eq!(truncate_scalars("abc", 2), ("ab", true));
  }

  #[test]
  fn ellipsis_cap_keeps_the_bound() {
    assert_eq!(cap_with_ellipsis("abcdef", 4), "abc…");
    assert_eq!(cap_with_ellipsis("abc", 4), "abc");
  }
}

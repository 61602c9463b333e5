//! The token budget. Tokens are estimated as the pack's compact JSON text
//! (the result as the caller receives it, `JSON.stringify(pack).length` in
//! UTF-16 units) divided by four, rounded up: the common characters-per-token
//! rule for English and code. Counting the whole result, call tokens and
//! framing included, makes the bound checkable by anyone and conservative
//! for whatever leaner view a host renders from it.

use crate::text::json_len;
use serde::Serialize;

pub const CHARS_PER_TOKEN: usize = 4;
/// Fits a tool result comfortably: ~8,000 characters.
pub const DEFAULT_MAX_TOKENS: i64 = 2_000;
/// Below this not even one session with one cited excerpt fits.
pub const MIN_MAX_TOKENS: i64 = 400;
/// 28,000 characters: inside the 30,000-character envelope of every result.
pub const MAX_MAX_TOKENS: i64 = 7_000;

/// Estimated tokens of `value` as JSON.
pub fn tokens<T: Serialize + ?Sized>(value: &T) -> usize {
  json_len(value).div_ceil(CHARS_PER_TOKEN)
}

/// The excerpt window of a matched entry (UTF-16 units): a tenth of the
/// budget, so several sessions fit, never below what a follow call can
/// expand exactly (`memory.expand`'s smallest `maxChars`).
pub fn match_window(max_tokens: usize) -> usize {
  (max_tokens * CHARS_PER_TOKEN / 10).clamp(MIN_WINDOW, 1_600)
}

/// The window of a context excerpt (the question, the answer, the proof).
pub fn context_window(max_tokens: usize) -> usize {
  (max_tokens * CHARS_PER_TOKEN / 20).clamp(MIN_WINDOW, 800)
}

/// `memory.expand`'s smallest `maxChars`: a shorter excerpt must end where
/// its entry ends, or its follow call would expand more than it cites.
pub const MIN_WINDOW: usize = crate::ops::expand::MIN_MAX_CHARS as usize;

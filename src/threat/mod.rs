//! The threat scanner: run on every memory write and every snapshot build
//! (`store`), and, as [`flags`], on the text of every recall hit and
//! expansion chunk (`ops`) and for the edge's `threatFlags`. It holds
//! the pattern table of `@amaster.ai/pi-memory` (a port of hermes'
//! `threat_patterns`, with Hermes's later false-positive fixes), patterns
//! for secrets and Pi's own persistence targets, and invisible code points.
//!
//! Patterns run on the content and, when it differs, on a folded copy
//! (NFKC, common Cyrillic/Greek confusables mapped to Latin, invisible
//! format characters removed), so fullwidth, mathematical-alphanumeric,
//! homoglyph or soft-hyphen spellings of a pattern match too. Joiners are
//! judged in context: ZWJ inside an emoji sequence and ZWJ/ZWNJ between
//! letters of scripts that use them (Arabic, Persian, Indic, …) are text;
//! TAG characters only inside an emoji flag tag sequence; variation
//! selectors only one at a time after a character (a run of them can carry
//! hidden bytes).
//!
//! The sources below are written in JavaScript regex syntax and translated
//! once, so they read like the reference and match as JavaScript's
//! `RegExp(src, "i")` does: `\w` and `\b` are ASCII, `.` stops at line
//! terminators, `\s` is JavaScript's Unicode whitespace, and case folding is
//! ASCII-only for ASCII letters. The `regex` crate runs in linear time, and a
//! scan reads at most [`MAX_SCAN_UNITS`], so every scan is bounded.

mod fold;
mod patterns;
mod prefilter;

use crate::text::utf16_len;
#[cfg(test)]
use fold::confusable;
use fold::{folded, hidden_carrier, may_hide, INVISIBLE};
#[cfg(test)]
use patterns::compiled;
pub(crate) use patterns::Among;
use patterns::{ascii_fold_guard, PATTERNS};

/// Longest content scanned (UTF-16 units); longer content is blocked unread.
pub(crate) const MAX_SCAN_UNITS: usize = 65_536;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
  /// Low false-positive set: classic injection and exfiltration.
  All,
  /// Adds promptware, C2 and role-play patterns.
  Context,
  /// Every pattern; used for memory writes and snapshot builds.
  Strict,
}

impl Scope {
  pub fn parse(text: &str) -> Option<Scope> {
    match text {
      "all" => Some(Scope::All),
      "context" => Some(Scope::Context),
      "strict" => Some(Scope::Strict),
      _ => None,
    }
  }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
  Invisible(char),
  Pattern(&'static str),
  /// Content longer than [`MAX_SCAN_UNITS`]; not scanned, so never trusted.
  Oversized(usize),
}

impl Finding {
  /// The reference's finding id (`invisible_unicode_U+200B`, `prompt_injection`, …).
  pub fn id(&self) -> String {
    match self {
      Finding::Invisible(ch) => format!("invisible_unicode_U+{:04X}", *ch as u32),
      Finding::Pattern(id) => id.to_string(),
      Finding::Oversized(_) => "oversized_content".to_string(),
    }
  }

  /// The reference's rejection message.
  pub fn message(&self) -> String {
    match self {
      Finding::Invisible(ch) => {
        format!("Blocked: content contains invisible unicode character U+{:04X} (possible injection).", *ch as u32)
      }
      Finding::Pattern(id) => format!(
        "Blocked: content matches threat pattern '{id}'. Content is injected into the system prompt and must not contain injection or exfiltration payloads."
      ),
      Finding::Oversized(units) => format!(
        "Blocked: content is too long to scan ({} chars; at most {}).",
        crate::text::group_thousands(*units),
        crate::text::group_thousands(MAX_SCAN_UNITS)
      ),
    }
  }
}

/// Invisible code points first (once each, in order of first appearance),
/// then every matching pattern of `scope` in table order (on the content or
/// its folded spelling).
pub fn scan(content: &str, scope: Scope) -> Vec<Finding> {
  if content.is_empty() {
    return Vec::new();
  }
  let units = utf16_len(content);
  if units > MAX_SCAN_UNITS {
    return vec![Finding::Oversized(units)];
  }
  let spelling = changed(folded(content));
  let candidates = prefilter::candidates(content, spelling.as_deref(), scope);
  scan_among(content, spelling.as_deref(), scope, candidates.as_deref().map_or(Among::All, Among::Only))
}

/// Builds the prefilter on a pool thread unless it is built: a fresh
/// process's first recall scans its hits only after its sync, and the build
/// (~10 ms) then ran alone on the calling thread; started with the call, it
/// fills the sync's idle moments (a scan that comes first waits for it).
pub(crate) fn prepare() {
  if !prefilter::built() {
    rayon::spawn(|| {
      prefilter::prefilter();
    });
  }
}

/// The folded spelling when it differs from the text it was folded from.
pub(super) fn changed(spelling: std::borrow::Cow<'_, str>) -> Option<String> {
  match spelling {
    std::borrow::Cow::Owned(folded) => Some(folded),
    std::borrow::Cow::Borrowed(_) => None,
  }
}

/// [`scan`] of non-empty content within [`MAX_SCAN_UNITS`] whose folded
/// spelling (when it differs) the caller already has, trying only the
/// patterns `among` names (the others must be known not to match).
pub(crate) fn scan_among(content: &str, folded: Option<&str>, scope: Scope, among: Among) -> Vec<Finding> {
  let mut findings: Vec<Finding> = Vec::new();
  let mut matched = among.matching(&ascii_fold_guard(content));
  // ASCII holds no invisible code point and is its own folded spelling:
  // most recalled evidence skips the per-char pass and NFKC.
  if !content.is_ascii() {
    let chars: Vec<char> = content.chars().collect();
    for (at, &ch) in chars.iter().enumerate() {
      let hidden = if INVISIBLE.contains(&ch) { Some(ch) } else { hidden_carrier(&chars, at) };
      if let Some(ch) = hidden.filter(|ch| !findings.contains(&Finding::Invisible(*ch))) {
        findings.push(Finding::Invisible(ch));
      }
    }
    if let Some(folded) = folded {
      matched.extend(among.matching(folded));
      matched.sort_unstable();
      matched.dedup();
    }
  }
  for index in matched {
    let (_, id, narrowest) = PATTERNS[index];
    if narrowest <= scope {
      findings.push(Finding::Pattern(id));
    }
  }
  findings
}

/// The message for the first strict-scope finding, or `None` for clean content.
pub(crate) fn first_threat_message(content: &str) -> Option<String> {
  scan(content, Scope::Strict).first().map(Finding::message)
}

pub(crate) mod flags;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod hermes;

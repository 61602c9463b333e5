//! The threat scanner run on every memory write and every snapshot build:
//! the pattern table of `@amaster.ai/pi-memory` (a port of hermes'
//! `threat_patterns`) plus 17 invisible code points.
//!
//! The sources below are written in JavaScript regex syntax and translated
//! once, so they read like the reference and match as JavaScript's
//! `RegExp(src, "i")` does: `\w` and `\b` are ASCII, `.` stops at line
//! terminators, `\s` is JavaScript's Unicode whitespace, and case folding is
//! ASCII-only for ASCII letters. The `regex` crate runs in linear time, and a
//! scan reads at most [`MAX_SCAN_UNITS`], so every scan is bounded.

use crate::text::utf16_len;
use regex::{RegexSet, RegexSetBuilder};
use std::sync::OnceLock;

/// Longest content scanned (UTF-16 units); longer content is blocked unread.
pub const MAX_SCAN_UNITS: usize = 65_536;

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

/// `(JavaScript regex source, id, narrowest scope that applies it)`, in the
/// reference's order (findings are reported in this order).
const PATTERNS: &[(&str, &str, Scope)] = &[
  (r"ignore\s+(?:\w+\s+)*(previous|all|above|prior)\s+(?:\w+\s+)*instructions", "prompt_injection", Scope::All),
  (r"system\s+prompt\s+override", "sys_prompt_override", Scope::All),
  (
    r"disregard\s+(?:\w+\s+)*(your|all|any)\s+(?:\w+\s+)*(instructions|rules|guidelines)",
    "disregard_rules",
    Scope::All,
  ),
  (
    r"act\s+as\s+(if|though)\s+(?:\w+\s+)*you\s+(?:\w+\s+)*(have\s+no|don't\s+have)\s+(?:\w+\s+)*(restrictions|limits|rules)",
    "bypass_restrictions",
    Scope::All,
  ),
  (r"<!--[^>]*(?:ignore|override|system|secret|hidden)[^>]*-->", "html_comment_injection", Scope::All),
  (r#"<\s*div\s+style\s*=\s*["'][\s\S]*?display\s*:\s*none"#, "hidden_div", Scope::All),
  (r"translate\s+.*\s+into\s+.*\s+and\s+(execute|run|eval)", "translate_execute", Scope::All),
  (r"do\s+not\s+(?:\w+\s+)*tell\s+(?:\w+\s+)*the\s+user", "deception_hide", Scope::All),
  (r"you\s+are\s+(?:\w+\s+)*now\s+(?:a|an|the)\s+", "role_hijack", Scope::Context),
  (r"pretend\s+(?:\w+\s+)*(you\s+are|to\s+be)\s+", "role_pretend", Scope::Context),
  (r"output\s+(?:\w+\s+)*(system|initial)\s+prompt", "leak_system_prompt", Scope::Context),
  (
    r"(respond|answer|reply)\s+without\s+(?:\w+\s+)*(restrictions|limitations|filters|safety)",
    "remove_filters",
    Scope::Context,
  ),
  (r"you\s+have\s+been\s+(?:\w+\s+)*(updated|upgraded|patched)\s+to", "fake_update", Scope::Context),
  (r"\bname\s+yourself\s+\w+", "identity_override", Scope::Context),
  (r"register\s+(as\s+)?a?\s*node", "c2_node_registration", Scope::Context),
  (r"(heartbeat|beacon|check[\s\-]?in)\s+(to|with)\s+", "c2_heartbeat", Scope::Context),
  (r"pull\s+(down\s+)?(?:new\s+)?task(?:ing|s)?\b", "c2_task_pull", Scope::Context),
  (r"connect\s+to\s+the\s+network\b", "c2_network_connect", Scope::Context),
  (r"you\s+must\s+(?:\w+\s+){0,3}(register|connect|report|beacon)\b", "forced_action", Scope::Context),
  (r"only\s+use\s+one[\s\-]?liners?\b", "anti_forensic_oneliner", Scope::Context),
  (
    r"never\s+(?:\w+\s+)*(?:create|write)\s+(?:\w+\s+)*(?:script|file)\s+(?:\w+\s+)*disk",
    "anti_forensic_disk",
    Scope::Context,
  ),
  (r"unset\s+\w*(?:CLAUDE|CODEX|HERMES|AGENT|OPENAI|ANTHROPIC|PI)\w*", "env_var_unset_agent", Scope::Context),
  (r"\b(?:praxis|cobalt\s*strike|sliver|havoc|mythic|metasploit|brainworm)\b", "known_c2_framework", Scope::Context),
  (r"\bc2\s+(?:server|channel|infrastructure|beacon)\b", "c2_explicit", Scope::Context),
  (r"\bcommand\s+and\s+control\b", "c2_explicit_long", Scope::Context),
  (r"curl\s+[^\n]*\$\{?\w*(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|API)", "exfil_curl", Scope::All),
  (r"wget\s+[^\n]*\$\{?\w*(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|API)", "exfil_wget", Scope::All),
  (r"cat\s+[^\n]*(\.env|credentials|\.netrc|\.pgpass|\.npmrc|\.pypirc)", "read_secrets", Scope::All),
  (r"(send|post|upload|transmit)\s+.*\s+(to|at)\s+https?://", "send_to_url", Scope::Strict),
  (
    r"(include|output|print|share)\s+(?:\w+\s+)*(conversation|chat\s+history|previous\s+messages|full\s+context|entire\s+context)",
    "context_exfil",
    Scope::Strict,
  ),
  (r"authorized_keys", "ssh_backdoor", Scope::Strict),
  (r"\$HOME/\.ssh|~/\.ssh", "ssh_access", Scope::Strict),
  (r"\$HOME/\.pi/\.env|~/\.pi/\.env", "pi_env", Scope::Strict),
  (
    r"(update|modify|edit|write|change|append|add\s+to)\s+.*(?:AGENTS\.md|CLAUDE\.md|\.cursorrules|\.clinerules)",
    "agent_config_mod",
    Scope::Strict,
  ),
  (r#"(?:api[_-]?key|token|secret|password)\s*[=:]\s*["'][A-Za-z0-9+/=_-]{20,}"#, "hardcoded_secret", Scope::Strict),
];

/// Zero-width and bidirectional-control code points used to hide payloads.
pub const INVISIBLE: [char; 17] = [
  '\u{200B}', '\u{200C}', '\u{200D}', '\u{2060}', '\u{2062}', '\u{2063}', '\u{2064}', '\u{FEFF}', '\u{202A}',
  '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
];

fn compiled() -> &'static RegexSet {
  static SET: OnceLock<RegexSet> = OnceLock::new();
  SET.get_or_init(|| {
    let sources: Vec<String> = PATTERNS.iter().map(|(js, _, _)| crate::jsregex::translate(js)).collect();
    RegexSetBuilder::new(sources)
      .case_insensitive(true)
      .size_limit(64 << 20)
      .dfa_size_limit(64 << 20)
      .build()
      .expect("the threat patterns compile")
  })
}

/// Rust's case folding also maps KELVIN SIGN to `k` and LONG S to `s`;
/// JavaScript's non-Unicode `i` flag does not, so they must not match.
fn ascii_fold_guard(text: &str) -> std::borrow::Cow<'_, str> {
  if text.contains(['\u{212A}', '\u{17F}']) {
    std::borrow::Cow::Owned(text.replace(['\u{212A}', '\u{17F}'], "\u{FFFD}"))
  } else {
    std::borrow::Cow::Borrowed(text)
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
        super::entries::group_thousands(*units),
        super::entries::group_thousands(MAX_SCAN_UNITS)
      ),
    }
  }
}

/// Invisible code points first (once each, in order of first appearance),
/// then every matching pattern of `scope` in table order.
pub fn scan(content: &str, scope: Scope) -> Vec<Finding> {
  if content.is_empty() {
    return Vec::new();
  }
  let units = utf16_len(content);
  if units > MAX_SCAN_UNITS {
    return vec![Finding::Oversized(units)];
  }
  let mut findings: Vec<Finding> = Vec::new();
  for ch in content.chars().filter(|c| INVISIBLE.contains(c)) {
    if !findings.contains(&Finding::Invisible(ch)) {
      findings.push(Finding::Invisible(ch));
    }
  }
  let matched = compiled().matches(&ascii_fold_guard(content));
  for index in matched.iter() {
    let (_, id, narrowest) = PATTERNS[index];
    if narrowest <= scope {
      findings.push(Finding::Pattern(id));
    }
  }
  findings
}

/// The message for the first strict-scope finding, or `None` for clean content.
pub fn first_threat_message(content: &str) -> Option<String> {
  scan(content, Scope::Strict).first().map(Finding::message)
}

pub mod flags;

#[cfg(test)]
mod tests;

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

use crate::text::utf16_len;
use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use std::sync::OnceLock;

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
  // Keywords need letter boundaries (`<!-- ecoSYSTEM auto-start -->` is clean), as Hermes fixed.
  (
    r"<!--(?:[^>]*[^>A-Za-z])?(?:ignore|override|system|secret|hidden)(?:[^>A-Za-z][^>]*)?-->",
    "html_comment_injection",
    Scope::All,
  ),
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
  // Role reassignment by name ("you are now DAN"): an all-caps persona name,
  // or an explicit "called/named/known as"; "you are now ready" stays clean.
  // One concatenation, so the evidence prefilter anchors on its words.
  (
    r"you\s+are\s+(?:now\s+(?:called\s+|named\s+|known\s+as\s+)?(?-i:[A-Z][A-Z0-9]+)\b|(?:now\s+)?(?:called|named|known\s+as)\s+\w+)",
    "role_rename",
    Scope::Context,
  ),
  // Instruction erasure: "forget your system prompt", "disregard prior guidance".
  (
    r"(?:forget|disregard|abandon|erase|unlearn|wipe)\s+(?:\w+\s+){0,3}?(?:your|all|any|prior|previous|earlier|above|original|existing)\s+(?:\w+\s+){0,2}?(?:instructions|rules|guidelines|guidance|directives|system\s+prompt|programming|training|constraints)\b",
    "instruction_erasure",
    Scope::Context,
  ),
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
  // `praxis` dropped, as Hermes did: a common product and agent name.
  (r"\b(?:cobalt\s*strike|sliver|havoc|mythic|metasploit|brainworm)\b", "known_c2_framework", Scope::Context),
  (r"\bc2\s+(?:server|channel|infrastructure|beacon)\b", "c2_explicit", Scope::Context),
  (r"\bcommand\s+and\s+control\b", "c2_explicit_long", Scope::Context),
  // A secret variable's name ends in KEY/TOKEN/SECRET/PASSWORD/CREDENTIAL(S)
  // (`$TRILLIUM_ETAPI_URL` is not one), as Hermes fixed.
  (r"curl\s+[^\n]*\$\{?\w*(KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)\b", "exfil_curl", Scope::All),
  (r"wget\s+[^\n]*\$\{?\w*(KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)\b", "exfil_wget", Scope::All),
  (r"cat\s+[^\n]*(\.env|credentials|\.netrc|\.pgpass|\.npmrc|\.pypirc|auth\.json)", "read_secrets", Scope::All),
  (
    r"(?:\$\(|`)\s*(?:cat|base64|xxd|head|tail|less|more|jq)\s+[^)`\n]*(?:auth\.json|models\.json|\.env|credentials|\.netrc|id_rsa|id_ed25519|\.pgpass|\.npmrc|\.pypirc)",
    "exfil_command_substitution",
    Scope::All,
  ),
  (r"(send|post|upload|transmit)\s+.*\s+(to|at)\s+https?://", "send_to_url", Scope::Strict),
  (
    r"(include|output|print|share)\s+(?:\w+\s+)*(conversation|chat\s+history|previous\s+messages|full\s+context|entire\s+context)",
    "context_exfil",
    Scope::Strict,
  ),
  // Fetch-and-execute: a download piped or substituted into a shell or
  // interpreter runs whatever the URL serves; strict only, since recalled
  // install logs hold `curl … | sh` legitimately.
  (
    r"\b(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod)\b[^\n|]*\|\s*(?:sudo\s+(?:-\w+\s+)*)?(?:ba|z|da|k|fi)?sh\b|\b(?:curl|wget)\b[^\n|]*\|\s*(?:sudo\s+)?(?:python[0-9.]*|perl|ruby|node)\b|(?:ba|z)?sh\s+(?:-c\s+)?[\x22']?(?:<\(|\$\()\s*(?:curl|wget)\b|\b(?:iex|invoke-expression)\b[^\n]*\b(?:iwr|irm|invoke-webrequest|invoke-restmethod|downloadstring)\b",
    "fetch_execute",
    Scope::Strict,
  ),
  (r"authorized_keys", "ssh_backdoor", Scope::Strict),
  (r"\$HOME/\.ssh|~/\.ssh", "ssh_access", Scope::Strict),
  (r"\$HOME/\.pi/\.env|~/\.pi/\.env", "pi_env", Scope::Strict),
  // Other agents' instruction files too: Hermes's `.hermes/config.yaml` and `SOUL.md` (its hermes_config_mod).
  (
    r"(update|modify|edit|write|change|append|add\s+to)\s+.*(?:AGENTS\.md|CLAUDE\.md|\.cursorrules|\.clinerules|\.hermes/(?:config\.yaml|SOUL\.md))",
    "agent_config_mod",
    Scope::Strict,
  ),
  (r#"(?:api[_-]?key|token|secret|password)\s*[=:]\s*["'][A-Za-z0-9+/=_-]{20,}"#, "hardcoded_secret", Scope::Strict),
  // Pi's persistence targets, where Hermes guards its own config files.
  (
    r"(update|modify|edit|write|change|append|add\s+to|overwrite|replace)\s+.*(?:\.pi/(?:agent/)?settings\.json|agent/settings\.json|\bAPPEND_SYSTEM\.md|\bSYSTEM\.md)",
    "pi_config_mod",
    Scope::Strict,
  ),
  (r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----", "private_key", Scope::All),
  (r"(?-i:\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}))", "github_token", Scope::All),
  (r"(?-i:\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)", "aws_access_key", Scope::All),
  (r"\bbearer\s+[A-Za-z0-9\-._~+/]{20,}=*", "bearer_token", Scope::Strict),
];

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

fn is_tag(c: char) -> bool {
  ('\u{E0000}'..='\u{E007F}').contains(&c)
}

fn is_variation_selector(c: char) -> bool {
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
fn hidden_carrier(chars: &[char], at: usize) -> Option<char> {
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
fn confusable(c: char) -> Option<char> {
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
fn may_hide(c: char) -> bool {
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
fn folded(text: &str) -> std::borrow::Cow<'_, str> {
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

/// Pattern `index` alone, with the set's options, compiled on first use: a
/// single regex leads with its own literal search, which a set cannot.
fn alone(index: usize) -> &'static Regex {
  static EACH: OnceLock<Vec<OnceLock<Regex>>> = OnceLock::new();
  EACH.get_or_init(|| PATTERNS.iter().map(|_| OnceLock::new()).collect())[index].get_or_init(|| {
    RegexBuilder::new(&crate::jsregex::translate(PATTERNS[index].0))
      .case_insensitive(true)
      .size_limit(64 << 20)
      .dfa_size_limit(64 << 20)
      .build()
      .expect("the threat patterns compile")
  })
}

/// The patterns a scan tries: every one (one pass of the set), or only the
/// table indices a prefilter left, each alone.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Among<'a> {
  All,
  Only(&'a [usize]),
}

impl Among<'_> {
  fn matching(self, text: &str) -> Vec<usize> {
    match self {
      Among::All => compiled().matches(text).iter().collect(),
      Among::Only(indices) => indices.iter().copied().filter(|&index| alone(index).is_match(text)).collect(),
    }
  }
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
  scan_among(content, changed(folded(content)).as_deref(), scope, Among::All)
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

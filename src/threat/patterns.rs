//! The pattern table (JavaScript regex sources, each with its id and the
//! narrowest scope that applies it) and how it runs: one set for a whole
//! scan, or single patterns a prefilter left.

use super::Scope;
use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use std::sync::OnceLock;

/// `(JavaScript regex source, id, narrowest scope that applies it)`, in the
/// reference's order (findings are reported in this order).
pub(super) const PATTERNS: &[(&str, &str, Scope)] = &[
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

pub(super) fn compiled() -> &'static RegexSet {
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
  pub(super) fn matching(self, text: &str) -> Vec<usize> {
    match self {
      Among::All => compiled().matches(text).iter().collect(),
      Among::Only(indices) => indices.iter().copied().filter(|&index| alone(index).is_match(text)).collect(),
    }
  }
}

/// Rust's case folding also maps KELVIN SIGN to `k` and LONG S to `s`;
/// JavaScript's non-Unicode `i` flag does not, so they must not match.
pub(super) fn ascii_fold_guard(text: &str) -> std::borrow::Cow<'_, str> {
  if text.contains(['\u{212A}', '\u{17F}']) {
    std::borrow::Cow::Owned(text.replace(['\u{212A}', '\u{17F}'], "\u{FFFD}"))
  } else {
    std::borrow::Cow::Borrowed(text)
  }
}

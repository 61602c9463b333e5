//! An entry: one content-bearing Pi record on the selected lineage, as
//! normalization makes it and the index stores it, with its typed fields.

use crate::coverage::Reason;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;

/// Entry ids forgotten one by one (`forget` with an entry id), by session
/// header id: the normalizer leaves their records out, so no view and no
/// index record holds their text.
pub type ForgottenEntries = std::collections::HashMap<String, BTreeSet<String>>;

/// What enters entry text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
  pub index_thinking: bool,
  pub index_tool_output: bool,
  /// Unicode-scalar cap on text; `None` keeps full text (expansion).
  pub max_entry_chars: Option<usize>,
  /// Do this package's own tool results enter text? They quote other
  /// entries (or all of curated memory), so indexing them makes recall find
  /// its own echoes.
  pub index_own_results: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
  Succeeded,
  Failed,
  Aborted,
  TimedOut,
}

impl Outcome {
  pub fn parse(text: &str) -> Option<Self> {
    match text {
      "succeeded" => Some(Outcome::Succeeded),
      "failed" => Some(Outcome::Failed),
      "aborted" => Some(Outcome::Aborted),
      "timed_out" => Some(Outcome::TimedOut),
      _ => None,
    }
  }

  pub fn as_str(self) -> &'static str {
    match self {
      Outcome::Succeeded => "succeeded",
      Outcome::Failed => "failed",
      Outcome::Aborted => "aborted",
      Outcome::TimedOut => "timed_out",
    }
  }
}

/// What a later `context_edit` on the selected records did to an entry's
/// model context (Pi ≥ 0.87). The entry's own text stays as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContextEdit {
  Omitted,
  Replaced,
}

impl ContextEdit {
  pub fn as_str(self) -> &'static str {
    match self {
      ContextEdit::Omitted => "omitted",
      ContextEdit::Replaced => "replaced",
    }
  }
}

/// The typed fields structural filters test (`role`, `tool`, `ref`,
/// `provider`, `action`, `outcome`, the time window): an entry and a cold
/// digest's address tuple both carry them.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Typed {
  pub role: Option<String>,
  pub tool: Option<String>,
  pub reference: Option<String>,
  pub provider: Option<String>,
  pub action: Option<String>,
  pub outcome: Option<Outcome>,
  /// Milliseconds since the epoch.
  pub timestamp: Option<i64>,
}

impl Typed {
  /// Has every field `pattern` sets (its timestamp included, when set).
  pub fn has(&self, pattern: &Typed) -> bool {
    fn exact<T: PartialEq>(want: &Option<T>, have: &Option<T>) -> bool {
      want.is_none() || want == have
    }
    exact(&pattern.role, &self.role)
      && exact(&pattern.tool, &self.tool)
      && exact(&pattern.reference, &self.reference)
      && exact(&pattern.provider, &self.provider)
      && exact(&pattern.action, &self.action)
      && exact(&pattern.outcome, &self.outcome)
      && exact(&pattern.timestamp, &self.timestamp)
  }
}

/// One normalized record. Serialized into hot shards without the
/// structured payloads, which only expansion (from source) returns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Entry {
  pub index: usize,
  pub entry_id: Option<String>,
  pub parent_id: Option<String>,
  pub kind: String,
  pub typed: Typed,
  pub text: String,
  pub is_error: bool,
  pub truncated: bool,
  pub files_touched: Vec<String>,
  pub parent_entry_id: Option<String>,
  pub operation_address: Option<String>,
  #[serde(skip)]
  pub operation: Option<Value>,
  #[serde(skip)]
  pub branch_fact: Option<Value>,
  pub fact_address: Option<String>,
  pub carrier_entry_id: Option<String>,
  pub carrier_parent_id: Option<String>,
  pub carrier_from_id: Option<String>,
  /// On a `context_edit` entry: the entry it edits (Pi's `targetId`).
  pub target_id: Option<String>,
  /// On a `context_edit` entry, what it does; on another entry, what the
  /// latest edit of it among the selected records did (`context_edit_id`).
  pub context_edit: Option<ContextEdit>,
  pub context_edit_id: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct Normalized {
  pub entries: Vec<Entry>,
  /// The whole text of each entry cut at `maxEntryChars` (by entry index,
  /// ascending): hot postings index every word of an entry, not only the
  /// words of the text it keeps. Never persisted.
  pub uncut: Vec<(usize, String)>,
  /// Coverage reasons found while normalizing (sorted, unique).
  pub reasons: BTreeSet<Reason>,
}

impl Normalized {
  /// The whole text of each entry from `from` on: what postings index.
  pub fn whole_texts(&self, from: usize) -> impl Iterator<Item = &str> {
    let mut uncut = self.uncut.iter().skip_while(move |(at, _)| *at < from).peekable();
    self.entries[from..].iter().map(move |entry| match uncut.next_if(|(at, _)| *at == entry.index) {
      Some((_, whole)) => whole.as_str(),
      None => entry.text.as_str(),
    })
  }
}

/// Pi's built-in tools: their calls and results carry `provider: "pi"`.
pub const PI_TOOLS: [&str; 7] = ["read", "write", "edit", "bash", "grep", "find", "ls"];

/// This package's tools and the capability each one is: their calls and
/// results carry `provider: "memory"` and `ref: "memory.<action>"`.
pub const MEMORY_TOOLS: [(&str, &str); 8] = [
  ("memory_recall", "recall"),
  ("memory_expand", "expand"),
  ("memory_sessions", "sessions"),
  ("memory_pack", "pack"),
  ("memory_read", "read"),
  ("memory_add", "add"),
  ("memory_replace", "replace"),
  ("memory_remove", "remove"),
];

/// Is `tool` one of this package's tools?
pub fn is_memory_tool(tool: &str) -> bool {
  MEMORY_TOOLS.iter().any(|(name, _)| *name == tool)
}

/// Where an entry's text comes from: prose of either side, a summary, tool
/// plumbing. Ranking weighs it (`query::score`); worked out once per hot
/// shard (see `HotShard::provenance`), not per scored entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provenance {
  AssistantProse,
  UserProse,
  Summary,
  ToolOutput,
  ToolCall,
  Other,
}

impl Provenance {
  pub const ALL: [Provenance; 6] = [
    Provenance::AssistantProse,
    Provenance::UserProse,
    Provenance::Summary,
    Provenance::ToolOutput,
    Provenance::ToolCall,
    Provenance::Other,
  ];

  pub fn of(entry: &Entry) -> Provenance {
    match (entry.typed.tool.is_none(), entry.typed.role.as_deref()) {
      (true, Some("assistant")) => Provenance::AssistantProse,
      (true, Some("user")) => Provenance::UserProse,
      (true, Some("compactionSummary" | "custom")) => Provenance::Summary,
      (_, Some("toolResult" | "fabricOperation")) => Provenance::ToolOutput,
      (false, _) => Provenance::ToolCall,
      _ => Provenance::Other,
    }
  }
}

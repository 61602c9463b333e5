//! Normalization: Pi records on the selected lineage become dense entries.
//!
//! One entry per content-bearing record (`message`, `compaction`,
//! `branch_summary`, `custom_message`), plus Fabric child records placed right
//! after their carrier. Structural records (`model_change`, `label`, `custom`,
//! …) and unknown types emit nothing but still take part in the parent chain.
//! Entry emission never depends on the privacy policy, so an entry's `index`
//! is the same for recall and for expansion; the policy only shapes `text`.
//! Every field comes from typed session fields: nothing is inferred from prose.

use super::entry::{is_memory_tool, ContextEdit, Entry, Normalized, Outcome, Policy, Typed, MEMORY_TOOLS, PI_TOOLS};
use super::fabric;
use super::json;
use super::lineage::Lineage;
use super::parse::{ParsedSession, Record};
use super::time::raw_timestamp_ms;
use crate::coverage::Reason;
use crate::text::truncate_scalars;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};

mod content;

use super::message::{text, Message};
pub use content::argument_paths;
use content::{blocks, plain_text, raw_plain_text, tool_call_text};

/// Sets `provider/action/ref` for Pi's built-in tools and this package's.
fn mark_pi_tool(entry: &mut Entry) {
  let Some(tool) = entry.typed.tool.as_deref() else { return };
  let (provider, action) = match MEMORY_TOOLS.iter().find(|(name, _)| *name == tool) {
    Some((_, action)) => ("memory", *action),
    None if PI_TOOLS.contains(&tool) => ("pi", tool),
    None => return,
  };
  entry.typed.reference = Some(format!("{provider}.{action}"));
  entry.typed.provider = Some(provider.into());
  entry.typed.action = Some(action.to_string());
}

struct Context<'p> {
  policy: &'p Policy,
  /// The record-level fields every entry of the record starts from.
  entry_base: Entry,
}

fn assistant(message: &Message<'_>, ctx: &Context<'_>, entry: &mut Entry) {
  let (whole, parts) = blocks(&message.content);
  let mut lines: Vec<Cow<'_, str>> = whole.map(Cow::Borrowed).into_iter().collect();
  for block in parts {
    match block.kind.as_deref() {
      Some("text") => lines.extend(text(&block.text).map(Cow::Borrowed)),
      Some("thinking") if ctx.policy.index_thinking => lines.extend(text(&block.thinking).map(Cow::Borrowed)),
      Some("toolCall") => {
        let name = text(&block.name).unwrap_or_default();
        if entry.typed.tool.is_none() {
          entry.typed.tool = Some(name.to_string());
        }
        lines.push(Cow::Owned(tool_call_text(name, block.arguments)));
        if let Some(args) = json::value(block.arguments) {
          argument_paths(&args, &mut entry.files_touched);
        }
      }
      _ => {}
    }
  }
  if let Some(error) = json::string(message.error_message) {
    lines.push(Cow::Owned(format!("Error: {error}")));
  }
  entry.text = lines.join("\n");
  mark_pi_tool(entry);
}

fn tool_result(message: &Message<'_>, ctx: &Context<'_>, entry: &mut Entry) {
  let tool = json::string(message.tool_name).unwrap_or_default();
  let is_error = json::boolean(message.is_error).unwrap_or(false);
  let prefix = format!("toolResult({tool}){}", if is_error { " [error]" } else { "" });
  let body = plain_text(&message.content);
  let indexed = ctx.policy.index_tool_output && (ctx.policy.index_own_results || !is_memory_tool(&tool));
  entry.text = if indexed && !body.is_empty() { format!("{prefix}: {body}") } else { prefix };
  entry.typed.tool = Some(tool);
  entry.is_error = is_error;
  entry.typed.outcome = Some(if is_error { Outcome::Failed } else { Outcome::Succeeded });
  mark_pi_tool(entry);
}

fn bash_execution(message: &Message<'_>, ctx: &Context<'_>, entry: &mut Entry) {
  let command = text(&message.command).unwrap_or_default();
  let exit = json::number(message.exit_code).map(|n| n as i64);
  let cancelled = json::boolean(message.cancelled).unwrap_or(false);
  let mut line = format!("bash$ {command}");
  if let Some(code) = exit {
    line.push_str(&format!(" [exit {code}]"));
  }
  let output = text(&message.output).unwrap_or_default();
  if ctx.policy.index_tool_output && !output.is_empty() {
    line.push('\n');
    line.push_str(output);
  }
  entry.text = line;
  entry.typed.tool = Some("bash".into());
  entry.typed.outcome = match (cancelled, exit) {
    (true, _) => Some(Outcome::Aborted),
    (false, Some(0)) => Some(Outcome::Succeeded),
    (false, Some(_)) => Some(Outcome::Failed),
    (false, None) => None,
  };
  entry.is_error = entry.typed.outcome == Some(Outcome::Failed);
  mark_pi_tool(entry);
}

fn custom_text(custom_type: Option<&RawValue>, body: &str) -> String {
  format!("[{}] {body}", json::string(custom_type).unwrap_or_default())
}

/// Builds the entry of one `message` record, and its Fabric children. Pi 1.x
/// persisted system prompts are plumbing, not conversation: no entry.
fn message_entry(record: &Record<'_>, ctx: &Context<'_>, out: &mut Vec<Entry>, carriers: &mut fabric::Carriers) {
  let empty = Message::default();
  let message = record.fields.message.as_ref().unwrap_or(&empty);
  let role = message.role.as_deref().map(|r| if r == "hookMessage" { "custom" } else { r });
  let mut entry = ctx.entry_base.clone();
  entry.typed.role = role.map(str::to_string);
  if entry.typed.timestamp.is_none() {
    entry.typed.timestamp = raw_timestamp_ms(message.timestamp);
  }
  match role {
    Some("system") => return,
    Some("user") => entry.text = plain_text(&message.content),
    Some("assistant") => assistant(message, ctx, &mut entry),
    Some("toolResult") => tool_result(message, ctx, &mut entry),
    Some("bashExecution") => bash_execution(message, ctx, &mut entry),
    Some("custom") => entry.text = custom_text(message.custom_type, &plain_text(&message.content)),
    Some("compactionSummary") => {
      entry.text = format!("compaction: {}", json::string(message.summary).unwrap_or_default())
    }
    Some("branchSummary") => {}
    // Unknown roles (and role-less messages) stay addressable entries.
    _ => entry.text = plain_text(&message.content),
  }
  let is_fabric_exec = role == Some("toolResult") && entry.typed.tool.as_deref() == Some("fabric_exec");
  let is_branch_summary = role == Some("branchSummary");
  out.push(entry);
  if !is_fabric_exec && !is_branch_summary {
    return;
  }
  // A copy for the children to point at while they join `out` (only these
  // two have children: a tool result's text can be megabytes).
  let carrier = out.last().expect("just pushed").clone();
  if is_fabric_exec {
    fabric::trace_children(&carrier, message.details, ctx.policy, out);
  }
  if is_branch_summary {
    carriers.branch_facts(&carrier, message.details, json::string(message.from_id), ctx.policy, out);
  }
}

fn record_entries(record: &Record<'_>, policy: &Policy, out: &mut Vec<Entry>, carriers: &mut fabric::Carriers) {
  let base = Entry {
    entry_id: record.id.clone(),
    parent_id: record.parent_id.clone(),
    kind: record.kind.to_string(),
    typed: Typed { timestamp: raw_timestamp_ms(record.fields.timestamp), ..Typed::default() },
    ..Entry::default()
  };
  let ctx = Context { policy, entry_base: base };
  if record.kind == "message" {
    return message_entry(record, &ctx, out, carriers);
  }
  let mut entry = ctx.entry_base.clone();
  match record.kind.as_ref() {
    "compaction" => {
      entry.typed.role = Some("compaction".into());
      entry.text = format!("compaction: {}", json::string(record.fields.summary).unwrap_or_default());
    }
    "branch_summary" => {
      entry.typed.role = Some("branchSummary".into());
      out.push(entry);
      let carrier = out.last().expect("just pushed").clone();
      let from = json::string(record.fields.from_id);
      carriers.branch_facts(&carrier, record.fields.details, from, policy, out);
      return;
    }
    "custom_message" => {
      entry.typed.role = Some("custom".into());
      entry.text = custom_text(record.fields.custom_type, &raw_plain_text(record.fields.content));
    }
    // Pi ≥ 0.87: an entry of its own, so a replacement's text is findable.
    "context_edit" => {
      entry.typed.role = Some("contextEdit".into());
      entry.target_id = json::string(record.fields.target_id);
      entry.context_edit =
        Some(if record.fields.replacement.is_some() { ContextEdit::Replaced } else { ContextEdit::Omitted });
      entry.text = raw_plain_text(replacement_content(record.fields.replacement));
    }
    _ => return,
  }
  out.push(entry);
}

/// Builds dense entries record by record. `resume` continues from entries
/// normalized earlier (an append), so only new records are normalized.
pub struct Normalizer {
  policy: Policy,
  /// Ids of this session's forgotten entries: their records emit nothing.
  forgotten: BTreeSet<String>,
  entries: Vec<Entry>,
  carriers: fabric::Carriers,
  reasons: BTreeSet<Reason>,
}

impl Normalizer {
  pub fn new(policy: &Policy) -> Normalizer {
    Normalizer {
      policy: *policy,
      forgotten: BTreeSet::new(),
      entries: Vec::new(),
      carriers: fabric::Carriers::default(),
      reasons: BTreeSet::new(),
    }
  }

  /// Leaves out the records of `forgotten` (the session's forgotten entry
  /// ids): the entry and its Fabric children are never made, so their text
  /// reaches no view and no index record. Later entries' indices close up.
  pub fn forgetting(mut self, forgotten: Option<&BTreeSet<String>>) -> Normalizer {
    self.forgotten = forgotten.cloned().unwrap_or_default();
    self
  }

  /// Continues after `previous`, normalized under the same policy from a
  /// prefix of the same lineage.
  pub fn resume(policy: &Policy, previous: Normalized) -> Normalizer {
    let facts = previous.entries.iter().filter_map(|e| e.fact_address.clone());
    Normalizer {
      policy: *policy,
      forgotten: BTreeSet::new(),
      carriers: fabric::Carriers::with_seen(facts),
      entries: previous.entries,
      reasons: previous.reasons,
    }
  }

  pub fn push(&mut self, record: &Record<'_>) {
    if record.id.as_ref().is_some_and(|id| self.forgotten.contains(id)) {
      return;
    }
    record_entries(record, &self.policy, &mut self.entries, &mut self.carriers);
  }

  pub fn finish(self) -> Normalized {
    let Normalizer { policy, mut entries, carriers, mut reasons, .. } = self;
    reasons.extend(carriers.reasons);
    mark_context_edits(&mut entries);
    let mut uncut = Vec::new();
    for (index, entry) in entries.iter_mut().enumerate() {
      entry.index = index;
      if let Some(max) = policy.max_entry_chars {
        let (kept, cut) = truncate_scalars(&entry.text, max);
        if cut {
          let kept = kept.to_string();
          uncut.push((index, std::mem::replace(&mut entry.text, kept)));
          entry.truncated = true;
        }
      }
    }
    if has_duplicates(entries.iter().filter_map(|e| e.entry_id.as_deref())) {
      reasons.insert(Reason::DuplicateEntryId);
    }
    if has_duplicates(entries.iter().filter_map(|e| e.operation_address.as_deref())) {
      reasons.insert(Reason::DuplicateOperationAddress);
    }
    Normalized { entries, uncut, reasons }
  }
}

/// The `content` of a context edit's `replacement: {content}`.
fn replacement_content(raw: Option<&RawValue>) -> Option<&RawValue> {
  #[derive(Deserialize)]
  struct Replacement<'a> {
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
  }
  serde_json::from_str::<Replacement<'_>>(raw?.get()).ok()?.content
}

/// Marks every entry a later `context_edit` entry targets (the latest one
/// wins, as in Pi). Only selected records are entries, so an edit on another
/// branch does not count. Re-run on the whole list after an append.
fn mark_context_edits(entries: &mut [Entry]) {
  let mut latest: HashMap<String, (ContextEdit, Option<String>)> = HashMap::new();
  for entry in entries.iter().filter(|e| e.typed.role.as_deref() == Some("contextEdit") && e.kind == "context_edit") {
    if let (Some(target), Some(edit)) = (&entry.target_id, entry.context_edit) {
      latest.insert(target.clone(), (edit, entry.entry_id.clone()));
    }
  }
  for entry in entries.iter_mut().filter(|e| e.kind != "context_edit") {
    let edit = entry.entry_id.as_ref().filter(|_| entry.parent_entry_id.is_none() && entry.carrier_entry_id.is_none());
    let (kind, id) = edit.and_then(|id| latest.get(id)).cloned().unzip();
    entry.context_edit = kind;
    entry.context_edit_id = id.flatten();
  }
}

/// Normalizes the records of `lineage` into dense entries, without the
/// session's `forgotten` entries.
pub fn normalize(
  parsed: &ParsedSession<'_>,
  lineage: &Lineage,
  policy: &Policy,
  forgotten: Option<&BTreeSet<String>>,
) -> Normalized {
  normalize_selected(Normalizer::new(policy).forgetting(forgotten), parsed.records.iter(), lineage)
}

/// Feeds the records `lineage` selects to `normalizer` (fresh, or resumed
/// after an append), in the lineage's order, and finishes it.
pub fn normalize_selected<'r>(
  mut normalizer: Normalizer,
  records: impl Iterator<Item = &'r Record<'r>>,
  lineage: &Lineage,
) -> Normalized {
  let mut by_ordinal: rustc_hash::FxHashMap<usize, &Record<'_>> =
    records.filter(|r| lineage.contains(r.ordinal)).map(|r| (r.ordinal, r)).collect();
  for ordinal in &lineage.order {
    if let Some(record) = by_ordinal.remove(ordinal) {
      normalizer.push(record);
    }
  }
  let mut normalized = normalizer.finish();
  if lineage.invalid_parent_graph {
    normalized.reasons.insert(Reason::InvalidParentGraph);
  }
  normalized
}

fn has_duplicates<'a>(values: impl Iterator<Item = &'a str>) -> bool {
  // Fx: run over every entry id of a session on each append.
  let mut seen = rustc_hash::FxHashSet::default();
  values.into_iter().any(|value| !seen.insert(value))
}

#[cfg(test)]
mod tests;

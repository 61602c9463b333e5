//! The page: `textRange` chunks of the selected entries, shrunk until the
//! JSON fits the envelope, and the `next` call that resumes where it stopped.

use super::request::ExpandRequest;
use super::select::out_of_bounds;
use crate::error::{ContractError, ErrorCode};
use crate::ops::contract::{Call, EditFields, EntryMeta, MAX_ENVELOPE_CHARS};
use crate::session::binding::{self};
use crate::session::entry::Entry;
use crate::session::lineage::Branches;
use crate::session::{LongText, SessionView};
use crate::text::{cap_with_ellipsis, json_len, meta, slice_utf16, utf16_len};
use serde::Serialize;
use serde_json::{json, Map, Value};

const MAX_FILES: usize = 20;
const MAX_FILE_CHARS: usize = 1024;
const STRUCTURED_MAX_CHARS: usize = 2000;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TextRange {
  pub start: usize,
  pub end: usize,
  pub total: usize,
  pub complete: bool,
}

/// One entry (or one chunk of its text) in an expansion page.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Chunk {
  #[serde(flatten)]
  pub meta: EntryMeta,
  pub text: String,
  pub text_range: TextRange,
  /// Threat-pattern ids this text matches (untrusted evidence; text unchanged).
  #[serde(skip_serializing_if = "Option::is_none")]
  pub threats: Option<Vec<String>>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub anchor: Option<bool>,
  pub files_touched: Vec<String>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub parent_entry_id: Option<String>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub fact_address: Option<String>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub carrier_entry_id: Option<String>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub carrier_parent_id: Option<String>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub carrier_from_id: Option<String>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub operation: Option<Value>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub branch_fact: Option<Value>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub structured_truncated: Option<bool>,
  #[serde(flatten)]
  pub edit: EditFields,
}

/// Structured payloads travel only while small; otherwise flagged.
fn structured(value: &Option<Value>, truncated: &mut bool) -> Option<Value> {
  let value = value.as_ref()?;
  if json_len(value) <= STRUCTURED_MAX_CHARS {
    Some(value.clone())
  } else {
    *truncated = true;
    None
  }
}

impl Chunk {
  /// `long`: the entry's [`LongText`] when it has one (its offsets and flags are worked out once).
  fn of(entry: &Entry, long: Option<&LongText>, start: usize, end_limit: usize, anchor: Option<bool>) -> Chunk {
    let total = long.map_or_else(|| utf16_len(&entry.text), |l| l.units.total());
    let (text, end) = match long {
      Some(long) => long.units.slice(&entry.text, start, end_limit),
      None => slice_utf16(&entry.text, start, end_limit),
    };
    let mut truncated = false;
    let operation = structured(&entry.operation, &mut truncated);
    let branch_fact = structured(&entry.branch_fact, &mut truncated);
    Chunk {
      meta: EntryMeta::of(entry),
      text: text.to_string(),
      text_range: TextRange { start, end, total, complete: end >= total },
      threats: long.map_or_else(|| crate::threat::flags::field(&entry.text), |l| l.threats(&entry.text)),
      anchor,
      files_touched: entry.files_touched.iter().take(MAX_FILES).map(|f| cap_with_ellipsis(f, MAX_FILE_CHARS)).collect(),
      parent_entry_id: meta(&entry.parent_entry_id),
      fact_address: meta(&entry.fact_address),
      carrier_entry_id: meta(&entry.carrier_entry_id),
      carrier_parent_id: meta(&entry.carrier_parent_id),
      carrier_from_id: meta(&entry.carrier_from_id),
      operation,
      branch_fact,
      structured_truncated: truncated.then_some(true),
      edit: EditFields::of(entry),
    }
  }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpandPage {
  pub session: Option<String>,
  pub session_id: Option<String>,
  pub source_hash: Option<String>,
  pub branches: Branches,
  pub lineage_fingerprint: Option<String>,
  pub entry_count: Option<usize>,
  pub entries: Vec<Chunk>,
  pub next: Option<Call>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub error: Option<ContractError>,
}

impl ExpandPage {
  pub(super) fn failed(session: Option<String>, branches: Branches, error: ContractError) -> ExpandPage {
    ExpandPage {
      session,
      session_id: None,
      source_hash: None,
      branches,
      lineage_fingerprint: None,
      entry_count: None,
      entries: Vec::new(),
      next: None,
      error: Some(error),
    }
  }

  pub(super) fn bound(view: &SessionView) -> ExpandPage {
    ExpandPage {
      session: Some(view.file()),
      session_id: Some(view.header.id.clone()),
      source_hash: Some(view.source_hash.clone()),
      branches: view.branches,
      lineage_fingerprint: Some(view.lineage_fingerprint.clone()),
      entry_count: Some(view.normalized.entries.len()),
      entries: Vec::new(),
      next: None,
      error: None,
    }
  }
}

pub(super) fn next_call(
  request: &ExpandRequest,
  view: &SessionView,
  resolved: &[usize],
  entry: usize,
  text: usize,
) -> Call {
  let mut args = Map::new();
  args.insert("session".into(), json!(view.file()));
  let last = resolved.iter().max().map(|&i| &view.normalized.entries[i]);
  view.issuer().bind(last.and_then(binding::record_id)).insert_into(&mut args);
  args.insert("branches".into(), json!(view.branches.as_str()));
  request.canonical_selection(resolved, &mut args);
  args.insert("entryOffset".into(), json!(entry));
  if text > 0 {
    args.insert("textOffset".into(), json!(text));
  }
  args.insert("maxChars".into(), json!(request.max_chars));
  args.insert("maxEntries".into(), json!(request.max_entries));
  Call { reference: "memory.expand", args: Value::Object(args) }
}

/// Where the page stopped: `(selection position, text offset)`.
type Cursor = Option<(usize, usize)>;

pub(super) fn fill_page(
  request: &ExpandRequest,
  view: &SessionView,
  resolved: &[usize],
  anchor: Option<usize>,
) -> Result<(Vec<Chunk>, Cursor), ContractError> {
  let entries = &view.normalized.entries;
  if request.entry_offset > resolved.len() {
    return Err(
      out_of_bounds(resolved.len(), format!("entryOffset {}", request.entry_offset))
        .with("entryOffset", request.entry_offset),
    );
  }
  let mut chunks = Vec::new();
  let mut budget = request.max_chars;
  for (position, &index) in resolved.iter().enumerate().skip(request.entry_offset) {
    if chunks.len() >= request.max_entries || (budget == 0 && !chunks.is_empty()) {
      return Ok((chunks, Some((position, 0))));
    }
    let entry = &entries[index];
    let long = view.long_text(index);
    let start = if position == request.entry_offset { request.text_offset } else { 0 };
    let total = long.as_ref().map_or_else(|| utf16_len(&entry.text), |l| l.units.total());
    if start > total || (start == total && start > 0) {
      return Err(
        ContractError::new(ErrorCode::TextOffsetOutOfBounds, format!("textOffset {start} is past the entry's text."))
          .with("textOffset", start)
          .with("textLength", total),
      );
    }
    let chunk = Chunk::of(entry, long.as_deref(), start, start + budget.max(1), anchor.map(|a| a == index));
    budget = budget.saturating_sub(chunk.text_range.end - start);
    let partial = !chunk.text_range.complete;
    let end = chunk.text_range.end;
    chunks.push(chunk);
    if partial {
      return Ok((chunks, Some((position, end))));
    }
  }
  Ok((chunks, None))
}

/// Shrinks a page until its JSON fits the envelope: drop whole entries,
/// then cut the last text chunk, then drop structured payloads, then keep
/// one code point.
pub(super) fn fit_envelope(page: &mut ExpandPage, cursor: &mut Cursor, first_position: usize) {
  while json_len(page) > MAX_ENVELOPE_CHARS && page.entries.len() > 1 {
    let dropped = page.entries.pop().expect("more than one entry");
    *cursor = Some((first_position + page.entries.len(), dropped.text_range.start));
  }
  let position = first_position;
  let mut excess = json_len(page).saturating_sub(MAX_ENVELOPE_CHARS);
  if excess > 0 {
    if let Some(chunk) = page.entries.last_mut() {
      let keep = utf16_len(&chunk.text).saturating_sub(excess + 256).max(1);
      shrink_chunk(chunk, keep);
      *cursor = (!chunk.text_range.complete).then_some((position, chunk.text_range.end)).or(*cursor);
      excess = json_len(page).saturating_sub(MAX_ENVELOPE_CHARS);
    }
  }
  if excess > 0 {
    if let Some(chunk) = page.entries.last_mut() {
      if chunk.operation.take().is_some() | chunk.branch_fact.take().is_some() {
        chunk.structured_truncated = Some(true);
      }
      chunk.files_touched.truncate(4);
      for file in chunk.files_touched.iter_mut() {
        *file = cap_with_ellipsis(file, 256);
      }
    }
  }
  if json_len(page) > MAX_ENVELOPE_CHARS {
    if let Some(chunk) = page.entries.last_mut() {
      shrink_chunk(chunk, 1);
      *cursor = (!chunk.text_range.complete).then_some((position, chunk.text_range.end)).or(*cursor);
    }
  }
}

fn shrink_chunk(chunk: &mut Chunk, keep_units: usize) {
  let (kept, kept_end) = slice_utf16(&chunk.text, 0, keep_units);
  let kept = kept.to_string();
  let end = chunk.text_range.start + utf16_len(&kept);
  debug_assert!(kept_end <= utf16_len(&chunk.text));
  chunk.text = kept;
  chunk.text_range.end = end;
  chunk.text_range.complete = end >= chunk.text_range.total;
}

//! `memory.expand`: integrity-checked selection of full normalized entries,
//! delivered in `textRange` chunks that never exceed the JSON envelope.
//!
//! Expansion re-reads and re-normalizes the source (never the derived
//! index), so it always returns complete text. A long entry is split across
//! pages; each page's `next` call carries the source hash and lineage
//! fingerprint it was cut from, so a page can never silently shift.

use crate::args::Args;
use crate::engine::Engine;
use crate::error::{ContractError, CoreError, CoreResult};
use crate::ops::contract::{parse_branches, Call, EditFields, MAX_ENVELOPE_CHARS};
use crate::session::binding::{self, Binding, SourceCheck};
use crate::session::lineage::Branches;
use crate::session::normalize::Entry;
use crate::session::SessionView;
use crate::text::{cap_with_ellipsis, json_len, meta, slice_utf16, utf16_len, META_CHARS};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

pub const DEFAULT_MAX_CHARS: i64 = 20_000;
const MIN_MAX_CHARS: i64 = 256;
const MAX_MAX_CHARS: i64 = 24_000;
const DEFAULT_MAX_ENTRIES: i64 = 10;
const MAX_MAX_ENTRIES: i64 = 20;
const MAX_CONTEXT: i64 = 100;
const MAX_SELECTORS: usize = 100;
const MAX_ADDRESS_CHARS: usize = 512;
const MAX_FILES: usize = 20;
const MAX_FILE_CHARS: usize = 1024;
const STRUCTURED_MAX_CHARS: usize = 2000;

const ALLOWED: &[&str] = &[
  "session",
  "branches",
  "indices",
  "entryIds",
  "operationAddresses",
  "entryRange",
  "before",
  "after",
  "maxChars",
  "maxEntries",
  "expectedSourceHash",
  "expectedSourceBytes",
  "expectedLineageFingerprint",
  "expectedLineageLeafId",
  "entryOffset",
  "textOffset",
];

#[derive(Debug, Clone, PartialEq)]
pub enum Selection {
  None,
  /// Indices, entry ids and operation addresses, resolved in that order.
  Items {
    indices: Vec<i64>,
    entry_ids: Vec<String>,
    operation_addresses: Vec<String>,
  },
  Range {
    first: i64,
    last: i64,
  },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ExpandRequest {
  pub session: Option<String>,
  pub branches: Branches,
  pub selection: Selection,
  pub before: usize,
  pub after: usize,
  pub max_chars: usize,
  pub max_entries: usize,
  pub binding: Binding,
  pub entry_offset: usize,
  pub text_offset: usize,
}

fn parse_range(args: &Args<'_>) -> CoreResult<Option<(i64, i64)>> {
  let Some(range) = args.object("entryRange")? else { return Ok(None) };
  let inner = Args::new("memory.expand entryRange", Some(range), &["first", "last"])?;
  match (inner.integer("first")?, inner.integer("last")?) {
    (Some(first), Some(last)) => Ok(Some((first, last))),
    _ => Err(CoreError::invalid("memory.expand: entryRange needs integer first and last")),
  }
}

impl ExpandRequest {
  pub fn from_json(value: Option<&Value>) -> CoreResult<ExpandRequest> {
    let args = Args::new("memory.expand", value, ALLOWED)?;
    let indices = args.integers("indices")?.unwrap_or_default();
    let entry_ids = args.strings("entryIds", MAX_ADDRESS_CHARS)?.unwrap_or_default();
    let operation_addresses = args.strings("operationAddresses", MAX_ADDRESS_CHARS)?.unwrap_or_default();
    let items = indices.len() + entry_ids.len() + operation_addresses.len();
    if items > MAX_SELECTORS {
      return Err(CoreError::invalid(format!("memory.expand: at most {MAX_SELECTORS} selectors, got {items}")));
    }
    let range = parse_range(&args)?;
    let selection = match (range, items) {
      (Some(_), n) if n > 0 => {
        return Err(CoreError::invalid("memory.expand: entryRange cannot be combined with other selectors"))
      }
      (Some((first, last)), _) => Selection::Range { first, last },
      (None, 0) => Selection::None,
      (None, _) => Selection::Items { indices, entry_ids, operation_addresses },
    };
    let before = args.bounded("before", 0, MAX_CONTEXT, 0)? as usize;
    let after = args.bounded("after", 0, MAX_CONTEXT, 0)? as usize;
    if (before > 0 || after > 0) && items != 1 {
      return Err(CoreError::invalid("memory.expand: before/after need exactly one selected anchor"));
    }
    Ok(ExpandRequest {
      session: args.string("session")?,
      branches: parse_branches(&args)?,
      selection,
      before,
      after,
      max_chars: args.bounded("maxChars", MIN_MAX_CHARS, MAX_MAX_CHARS, DEFAULT_MAX_CHARS)? as usize,
      max_entries: args.bounded("maxEntries", 1, MAX_MAX_ENTRIES, DEFAULT_MAX_ENTRIES)? as usize,
      binding: Binding::from_args(&args)?,
      entry_offset: args.bounded("entryOffset", 0, i64::MAX, 0)? as usize,
      text_offset: args.bounded("textOffset", 0, i64::MAX, 0)? as usize,
    })
  }

  fn has_context(&self) -> bool {
    self.before > 0 || self.after > 0
  }

  /// The selection a continuation repeats: resolved indices, the range, or
  /// the single anchor selector with its context.
  fn canonical_selection(&self, resolved: &[usize], args: &mut Map<String, Value>) {
    match &self.selection {
      Selection::Range { first, last } => {
        args.insert("entryRange".into(), json!({"first": first, "last": last}));
      }
      Selection::Items { indices, entry_ids, operation_addresses } if self.has_context() => {
        if !indices.is_empty() {
          args.insert("indices".into(), json!(indices));
        }
        if !entry_ids.is_empty() {
          args.insert("entryIds".into(), json!(entry_ids));
        }
        if !operation_addresses.is_empty() {
          args.insert("operationAddresses".into(), json!(operation_addresses));
        }
        args.insert("before".into(), json!(self.before));
        args.insert("after".into(), json!(self.after));
      }
      _ => {
        args.insert("indices".into(), json!(resolved));
      }
    }
  }
}

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
  pub index: usize,
  pub entry_id: Option<String>,
  pub parent_id: Option<String>,
  #[serde(rename = "type")]
  pub kind: String,
  pub role: Option<String>,
  pub tool: Option<String>,
  #[serde(rename = "ref")]
  pub reference: Option<String>,
  pub provider: Option<String>,
  pub action: Option<String>,
  pub outcome: Option<&'static str>,
  pub operation_address: Option<String>,
  pub timestamp: Option<i64>,
  pub is_error: bool,
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
  fn of(entry: &Entry, start: usize, end_limit: usize, anchor: Option<bool>) -> Chunk {
    let total = utf16_len(&entry.text);
    let (text, end) = slice_utf16(&entry.text, start, end_limit);
    let mut truncated = false;
    let operation = structured(&entry.operation, &mut truncated);
    let branch_fact = structured(&entry.branch_fact, &mut truncated);
    Chunk {
      index: entry.index,
      entry_id: meta(&entry.entry_id),
      parent_id: meta(&entry.parent_id),
      kind: cap_with_ellipsis(&entry.kind, META_CHARS),
      role: meta(&entry.role),
      tool: meta(&entry.tool),
      reference: meta(&entry.reference),
      provider: meta(&entry.provider),
      action: meta(&entry.action),
      outcome: entry.outcome.map(|o| o.as_str()),
      operation_address: meta(&entry.operation_address),
      timestamp: entry.timestamp,
      is_error: entry.is_error,
      text: text.to_string(),
      text_range: TextRange { start, end, total, complete: end >= total },
      threats: crate::store::threat::flags::field(&entry.text),
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
  fn failed(session: Option<String>, branches: Branches, error: ContractError) -> ExpandPage {
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

  fn bound(view: &SessionView) -> ExpandPage {
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

/// The session as the caller's bindings name it, or `stale_pointer`. A
/// view that went out of date while a prefix was checked is loaded again.
fn bound_view(
  engine: &Engine,
  path: &std::path::Path,
  request: &ExpandRequest,
) -> Result<Arc<SessionView>, ContractError> {
  let policy = engine.config.expand_policy();
  for _ in 0..2 {
    let view = engine.load(path, request.branches, &policy)?;
    match binding::check_source(&view, &request.binding) {
      SourceCheck::Holds => {
        binding::check_lineage(&view, &request.binding)?;
        return Ok(view);
      }
      SourceCheck::Stale(error) => return Err(error),
      SourceCheck::ViewOutdated => continue,
    }
  }
  Err(
    ContractError::new("source_unavailable", "Session source kept changing while the pointer was checked.")
      .with("sessionFile", path.to_string_lossy().into_owned()),
  )
}

fn out_of_bounds(count: usize, what: String) -> ContractError {
  ContractError::new("index_out_of_bounds", format!("{what} is outside the session's {count} entries."))
    .with("entryCount", count)
}

fn check_index(index: i64, count: usize) -> Result<usize, ContractError> {
  if index < 0 || index as usize >= count {
    return Err(out_of_bounds(count, format!("Index {index}")).with("index", index));
  }
  Ok(index as usize)
}

fn resolve_address(
  entries: &[Entry],
  address: &str,
  address_type: &'static str,
  field: fn(&Entry) -> Option<&str>,
) -> Result<usize, ContractError> {
  let matches: Vec<usize> = entries.iter().filter(|e| field(e) == Some(address)).map(|e| e.index).collect();
  match matches.as_slice() {
    [one] => Ok(*one),
    _ => {
      let (code, message) = if matches.is_empty() {
        ("address_not_found", format!("No entry has {address_type} \"{address}\" in this view."))
      } else {
        ("ambiguous_address", format!("{} entries have {address_type} \"{address}\".", matches.len()))
      };
      Err(
        ContractError::new(code, message)
          .with("addressType", address_type)
          .with("address", address)
          .with("matches", matches.len()),
      )
    }
  }
}

/// The selected entry indices (deduplicated, in selection order) and the
/// anchor when context was requested.
pub fn resolve_selection(
  request: &ExpandRequest,
  entries: &[Entry],
) -> Result<(Vec<usize>, Option<usize>), ContractError> {
  let count = entries.len();
  let mut picked = Vec::new();
  match &request.selection {
    Selection::None => {}
    Selection::Range { first, last } => {
      if *first < 0 || *last < *first || *last as usize >= count {
        return Err(
          out_of_bounds(count, format!("Range {first}..{last}"))
            .with("entryRange", json!({"first": first, "last": last})),
        );
      }
      picked.extend(*first as usize..=*last as usize);
    }
    Selection::Items { indices, entry_ids, operation_addresses } => {
      for index in indices {
        picked.push(check_index(*index, count)?);
      }
      for id in entry_ids {
        picked.push(resolve_address(entries, id, "entry_id", |e| e.entry_id.as_deref())?);
      }
      for address in operation_addresses {
        picked.push(resolve_address(entries, address, "operation_address", |e| e.operation_address.as_deref())?);
      }
    }
  }
  let mut seen = std::collections::HashSet::new();
  picked.retain(|i| seen.insert(*i));
  if !request.has_context() {
    return Ok((picked, None));
  }
  let anchor = picked[0];
  let first = anchor.saturating_sub(request.before);
  let last = (anchor + request.after).min(count - 1);
  Ok(((first..=last).collect(), Some(anchor)))
}

fn next_call(request: &ExpandRequest, view: &SessionView, resolved: &[usize], entry: usize, text: usize) -> Call {
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

fn fill_page(
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
    let start = if position == request.entry_offset { request.text_offset } else { 0 };
    let total = utf16_len(&entry.text);
    if start > total || (start == total && start > 0) {
      return Err(
        ContractError::new("text_offset_out_of_bounds", format!("textOffset {start} is past the entry's text."))
          .with("textOffset", start)
          .with("textLength", total),
      );
    }
    let chunk = Chunk::of(entry, start, start + budget.max(1), anchor.map(|a| a == index));
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
fn fit_envelope(page: &mut ExpandPage, cursor: &mut Cursor, first_position: usize) {
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

pub fn expand(engine: &Engine, request: &ExpandRequest) -> ExpandPage {
  let fail = |error| ExpandPage::failed(request.session.clone(), request.branches, error);
  let session = match request.session.as_deref() {
    Some(target) => engine.discovery().find(target),
    None => engine.discovery().current().ok_or_else(|| {
      ContractError::new("session_not_found", "There is no current session and the cwd has no sessions.")
    }),
  };
  let session = match session {
    Ok(session) => session,
    Err(error) => return fail(error),
  };
  let view = match bound_view(engine, &session.path, request) {
    Ok(view) => view,
    Err(error) => return fail(error),
  };
  let mut page = ExpandPage::bound(&view);
  if request.selection == Selection::None {
    return page;
  }
  let resolved = resolve_selection(request, &view.normalized.entries).and_then(|(resolved, anchor)| {
    let named: Vec<usize> = resolved.iter().copied().max().into_iter().chain(anchor).collect();
    binding::check_entries(&view, &request.binding, &named)?;
    Ok((resolved, anchor))
  });
  let (resolved, anchor) = match resolved {
    Ok(resolved) => resolved,
    Err(error) if error.code == "stale_pointer" => return fail(error),
    Err(error) => return ExpandPage { error: Some(error), ..page },
  };
  let (chunks, mut cursor) = match fill_page(request, &view, &resolved, anchor) {
    Ok(filled) => filled,
    Err(error) => return ExpandPage { error: Some(error), ..page },
  };
  page.entries = chunks;
  fit_envelope(&mut page, &mut cursor, request.entry_offset);
  page.next = cursor.map(|(entry, text)| next_call(request, &view, &resolved, entry, text));
  page
}

#[cfg(test)]
mod tests;

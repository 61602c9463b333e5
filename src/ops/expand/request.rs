//! `memory.expand`'s arguments: the selection (indices, entry ids,
//! operation addresses or a range), context, page bounds and bindings.

use crate::args::Args;
use crate::error::{CoreError, CoreResult};
use crate::session::binding::pin::{self, Slot};
use crate::session::binding::Binding;
use crate::session::lineage::Branches;
use serde_json::{json, Map, Value};

pub const DEFAULT_MAX_CHARS: i64 = 20_000;
/// The smallest page a call may ask for (`memory.pack` cuts its excerpts to it).
pub const MIN_MAX_CHARS: i64 = 256;
const MAX_MAX_CHARS: i64 = 24_000;
const DEFAULT_MAX_ENTRIES: i64 = 10;
const MAX_MAX_ENTRIES: i64 = 20;
const MAX_CONTEXT: i64 = 100;
const MAX_SELECTORS: usize = 100;
const MAX_ADDRESS_CHARS: usize = 512;

const ALLOWED: &[&str] = &[
  "pin",
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
    let unfolded = pin::unfolded(value, Slot::Session, "memory.expand")?;
    let args = Args::new("memory.expand", unfolded.as_ref().or(value), ALLOWED)?;
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
      branches: args.branches()?,
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

  pub(super) fn has_context(&self) -> bool {
    self.before > 0 || self.after > 0
  }

  /// The selection a continuation repeats: resolved indices, the range, or
  /// the single anchor selector with its context.
  pub(super) fn canonical_selection(&self, resolved: &[usize], args: &mut Map<String, Value>) {
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

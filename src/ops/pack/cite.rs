//! Citations: one excerpt of one entry, bound like a follow call (the
//! source prefix and lineage it was cut from, the entry's text range), and
//! the proof, taken when the pack is built, that its follow call expands
//! exactly the cited text.

use super::budget::MIN_WINDOW;
use crate::engine::Engine;
use crate::error::CoreResult;
use crate::error::ErrorCode;
use crate::ops::contract::Call;
use crate::ops::expand::{expand, expand_at, ExpandPage, ExpandRequest, DEFAULT_MAX_CHARS};
use crate::query::snippet::window_start;
use crate::session::binding::pin::{self, Slot};
use crate::session::binding::{record_id, MIN_HASH_PREFIX};
use crate::session::entry::{ContextEdit, Entry};
use crate::session::lineage::Branches;
use crate::session::source::sha256_hex;
use crate::session::SessionView;
use crate::text::{byte_offset_of_utf16, meta, slice_utf16, utf16_len};
use serde::{Serialize, Serializer};
use serde_json::{json, Map, Value};
use std::path::Path;

/// Why an excerpt is in the pack: the entry that matched, or the context
/// around it (the user turn that asked, the assistant's answer, the tool
/// result the answer rests on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
  Match,
  Question,
  Answer,
  Proof,
}

/// Why a citation did not verify: its follow call failed (the contract's
/// code, e.g. `stale_pointer` after a rewrite) or expanded other text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unverified {
  Failed(ErrorCode),
  TextChanged,
}

impl Serialize for Unverified {
  fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(match self {
      Unverified::Failed(code) => code.as_str(),
      Unverified::TextChanged => "text_changed",
    })
  }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Range {
  pub start: usize,
  pub end: usize,
  pub total: usize,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Citation {
  pub part: Part,
  pub index: usize,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub entry_id: Option<String>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub role: Option<String>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub tool: Option<String>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub timestamp: Option<i64>,
  pub text: String,
  /// Where `text` lies in the entry's whole text (UTF-16 units).
  pub text_range: Range,
  /// The first 16 hex digits of the SHA-256 of `text`.
  pub content_hash: String,
  pub verified: bool,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub unverified: Option<Unverified>,
  /// What a later context edit did to the entry in the model's context.
  #[serde(skip_serializing_if = "Option::is_none")]
  pub context_edit: Option<ContextEdit>,
  /// Threat-pattern ids the entry's text matches.
  #[serde(skip_serializing_if = "Option::is_none")]
  pub threats: Option<Vec<String>>,
  /// Set with `threats`: the text is evidence to read, never instructions.
  #[serde(skip_serializing_if = "std::ops::Not::not")]
  pub untrusted: bool,
  /// `memory.expand` of exactly `text`, bound to the bytes and lineage it was cut from.
  pub follow: Call,
}

fn short(hash: &str) -> String {
  hash[..MIN_HASH_PREFIX.min(hash.len())].to_string()
}

/// The UTF-16 window `[start, end)` of `text` to cite: the whole text when it
/// fits `want`, else `want` units anchored on the query's terms (`terms`
/// empty: from the start). `want` is at least [`MIN_WINDOW`], so a window
/// shorter than that ends where the text ends.
fn window(text: &str, terms: &[String], want: usize) -> (usize, usize, usize) {
  let total = utf16_len(text);
  if total <= want {
    return (0, total, total);
  }
  let start = window_start(text, terms, want, total);
  // A start inside a surrogate pair is where slicing starts: the pair's first unit.
  let start = utf16_len(&text[..byte_offset_of_utf16(text, start)]);
  let (_, end) = slice_utf16(text, start, start + want);
  (start, end, total)
}

/// How a citation's follow call names its session: by a pin (the session id
/// prefix, the byte length and hash digits, ~60 characters) when that id
/// names exactly the cited file, else by its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Naming {
  Pin,
  Path,
}

/// A citation of `entry` of `view` (not yet verified).
pub(super) fn cite(
  view: &SessionView,
  entry: &Entry,
  part: Part,
  terms: &[String],
  want: usize,
  naming: Naming,
) -> Citation {
  let want = want.max(MIN_WINDOW);
  let (start, end, total) = window(&entry.text, terms, want);
  let text = slice_utf16(&entry.text, start, end).0.to_string();
  let mut args = Map::new();
  args.insert("session".into(), json!(view.file()));
  let mut binding = view.issuer().bind(record_id(entry));
  binding.source_hash = binding.source_hash.as_deref().map(short);
  binding.fingerprint = binding.fingerprint.as_deref().map(short);
  binding.insert_into(&mut args);
  if view.branches == Branches::All {
    args.insert("branches".into(), json!(view.branches.as_str()));
  }
  args.insert("indices".into(), json!([entry.index]));
  if start > 0 {
    args.insert("textOffset".into(), json!(start));
  }
  // The requested width, not the cut's: expand cuts it the same way. An
  // excerpt that runs to the entry's end needs none: expand's default reads on to it.
  if end < total || total - start > DEFAULT_MAX_CHARS as usize {
    args.insert("maxChars".into(), json!(want.min(total - start).max(MIN_WINDOW)));
  }
  let args = match naming {
    Naming::Pin => pin::fold(&args, Slot::Session, Some(&view.header.id)).unwrap_or(args),
    Naming::Path => args,
  };
  let threats = crate::threat::flags::field(&entry.text);
  Citation {
    part,
    index: entry.index,
    entry_id: meta(&entry.entry_id),
    role: meta(&entry.typed.role),
    tool: meta(&entry.typed.tool),
    timestamp: entry.typed.timestamp,
    content_hash: short(&sha256_hex(text.as_bytes())),
    text,
    text_range: Range { start, end, total },
    verified: false,
    unverified: None,
    context_edit: entry.context_edit,
    untrusted: threats.is_some(),
    threats,
    follow: Call { reference: "memory.expand", args: Value::Object(args) },
  }
}

/// Runs the citation's follow call against the file as it is now: verified
/// when it expands exactly the cited text at the cited range.
pub fn verify(engine: &Engine, citation: &mut Citation) {
  settle(citation, ExpandRequest::from_json(Some(&citation.follow.args)).map(|request| expand(engine, &request)));
}

/// [`verify`] with the follow call's session already resolved to `path`
/// (a pack resolves each pin once, not once per citation).
pub(super) fn verify_at(engine: &Engine, citation: &mut Citation, path: &Path) {
  let request = ExpandRequest::from_json(Some(&citation.follow.args));
  settle(citation, request.map(|request| expand_at(engine, &request, path)));
}

fn settle(citation: &mut Citation, expanded: CoreResult<ExpandPage>) {
  let outcome = match expanded {
    Err(_) => Err(Unverified::TextChanged),
    Ok(page) => match (page.error, page.entries.first()) {
      (Some(error), _) => Err(Unverified::Failed(error.code)),
      (None, Some(chunk))
        if chunk.text == citation.text
          && chunk.text_range.start == citation.text_range.start
          && chunk.text_range.end == citation.text_range.end =>
      {
        Ok(())
      }
      _ => Err(Unverified::TextChanged),
    },
  };
  citation.verified = outcome.is_ok();
  citation.unverified = outcome.err();
}

//! What a follow or continuation call depends on, and the proof that it
//! still holds.
//!
//! A call is bound to the source prefix that held its entries (byte length
//! and SHA-256 of exactly those bytes) and, in active mode, to the lineage of
//! its last entry: the path from the root to the record that entry came from
//! (`expectedLineageLeafId`). Pi only appends to a session, so an append
//! keeps every earlier pointer valid; a rewrite of a bound byte, or a branch
//! change that takes the entry off the active path, is `stale_pointer`.
//! Without `expectedSourceBytes` the hash covers the whole file, and without
//! a leaf id the fingerprint covers the whole lineage: older tokens keep
//! their exact meaning. Both hashes may be stated by a prefix of at least
//! [`MIN_HASH_PREFIX`] hex digits (compact pointers for the model).

use super::lineage::{tip_fingerprint, Branches};
use super::source::{read_source, sha256_hex, Hash256};
use super::SessionView;
use crate::args::Args;
use crate::error::{ContractError, CoreError, CoreResult, ErrorCode};
use crate::session::entry::Entry;
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// Argument names a bound call may carry.
pub const ARGS: [&str; 4] =
  ["expectedSourceHash", "expectedSourceBytes", "expectedLineageFingerprint", "expectedLineageLeafId"];

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Binding {
  /// Length of the bound prefix; `None`: the whole file.
  pub source_bytes: Option<u64>,
  pub source_hash: Option<String>,
  /// Where the bound lineage ends; `None`: the whole lineage of the view.
  pub leaf_id: Option<String>,
  pub fingerprint: Option<String>,
}

impl Binding {
  pub fn from_args(args: &Args<'_>) -> CoreResult<Binding> {
    let binding = Binding {
      source_bytes: match args.integer("expectedSourceBytes")? {
        Some(_) => Some(args.bounded("expectedSourceBytes", 0, i64::MAX, 0)? as u64),
        None => None,
      },
      source_hash: args.string("expectedSourceHash")?,
      leaf_id: args.string("expectedLineageLeafId")?,
      fingerprint: args.string("expectedLineageFingerprint")?,
    };
    if binding.source_bytes.is_some() && binding.source_hash.is_none() {
      return Err(CoreError::invalid(format!("{}: expectedSourceBytes needs expectedSourceHash", args.call)));
    }
    if binding.leaf_id.is_some() && binding.fingerprint.is_none() {
      return Err(CoreError::invalid(format!("{}: expectedLineageLeafId needs expectedLineageFingerprint", args.call)));
    }
    Ok(binding)
  }

  pub fn is_empty(&self) -> bool {
    *self == Binding::default()
  }

  /// Writes the binding into a call's arguments (and drops stale keys).
  pub fn insert_into(&self, args: &mut Map<String, Value>) {
    for key in ARGS {
      args.remove(key);
    }
    let mut put = |key: &str, value: Option<Value>| {
      if let Some(value) = value {
        args.insert(key.into(), value);
      }
    };
    put("expectedSourceHash", self.source_hash.as_ref().map(|h| json!(h)));
    put("expectedSourceBytes", self.source_bytes.map(|n| json!(n)));
    put("expectedLineageFingerprint", self.fingerprint.as_ref().map(|f| json!(f)));
    put("expectedLineageLeafId", self.leaf_id.as_ref().map(|l| json!(l)));
  }
}

/// The last on-disk record of an active path and the fingerprint of the
/// path up to it: what a pointer into a session binds to, kept by cold
/// digests (which keep no lineage) so their pointers survive appends too.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BoundTip {
  pub id: String,
  pub fingerprint: Hash256,
}

impl BoundTip {
  /// The tip of `path` (root-to-leaf ids), bound as `Issuer::bind` would.
  pub fn of<S: AsRef<str> + serde::Serialize>(path: &[S], tip: Option<&str>) -> Option<BoundTip> {
    let id = tip?;
    Some(BoundTip { id: id.to_string(), fingerprint: Hash256::from_hex(&tip_fingerprint(path, id)?)? })
  }
}

/// What a pointer is issued from: one session as a view or an index record
/// saw it.
pub struct Issuer<'a, S> {
  pub source_len: u64,
  pub source_hash: Cow<'a, str>,
  pub branches: Branches,
  pub fingerprint: Cow<'a, str>,
  /// The root-to-leaf ids of the active lineage, when known exactly.
  pub path: Option<&'a [S]>,
  /// The path's tip, when only that is known (a cold digest).
  pub tip: Option<&'a BoundTip>,
}

impl<S: AsRef<str> + serde::Serialize> Issuer<'_, S> {
  /// The binding of a call whose last entry came from record `tip`. In all
  /// mode the fingerprint is constant and `tip` only guards the index.
  pub fn bind(&self, tip: Option<&str>) -> Binding {
    let source = (Some(self.source_len), Some(self.source_hash.to_string()));
    let whole = |leaf_id: Option<&str>| Binding {
      source_bytes: source.0,
      source_hash: source.1.clone(),
      leaf_id: leaf_id.map(str::to_string),
      fingerprint: Some(self.fingerprint.to_string()),
    };
    match (self.branches, tip, self.path) {
      (Branches::All, tip, _) => whole(tip),
      (Branches::Active, Some(tip), Some(path)) => match tip_fingerprint(path, tip) {
        Some(fingerprint) => Binding { fingerprint: Some(fingerprint), ..whole(Some(tip)) },
        None => whole(None),
      },
      (Branches::Active, Some(tip), None) => match self.tip.filter(|known| known.id == tip) {
        Some(known) => Binding { fingerprint: Some(known.fingerprint.hex()), ..whole(Some(tip)) },
        None => whole(None),
      },
      (Branches::Active, None, _) => whole(None),
    }
  }
}

impl SessionView {
  pub fn issuer(&self) -> Issuer<'_, String> {
    Issuer {
      source_len: self.source_len,
      source_hash: Cow::Borrowed(&self.source_hash),
      branches: self.branches,
      fingerprint: Cow::Borrowed(&self.lineage_fingerprint),
      path: (self.branches == Branches::Active).then_some(self.lineage_path.as_slice()),
      tip: None,
    }
  }
}

/// The record an entry came from: itself, or the carrier of a Fabric child.
pub fn record_id(entry: &Entry) -> Option<&str> {
  entry.carrier_entry_id.as_deref().or(entry.parent_entry_id.as_deref()).or(entry.entry_id.as_deref())
}

fn stale(view: &SessionView, binding: &Binding, message: &str) -> ContractError {
  ContractError::new(ErrorCode::StalePointer, message)
    .with("sessionFile", view.file())
    .with("expectedSourceHash", binding.source_hash.clone())
    .with("actualSourceHash", view.source_hash.clone())
    .with("expectedLineageFingerprint", binding.fingerprint.clone())
    .with("actualLineageFingerprint", view.lineage_fingerprint.clone())
}

const SOURCE_CHANGED: &str = "Session source changed after the pointer was issued.";

/// Why a source check could not be decided on this view.
pub enum SourceCheck {
  Holds,
  Stale(ContractError),
  /// The file changed after `view` was loaded: load it again and retry.
  ViewOutdated,
}

/// Does the bound prefix still hold the same bytes? A prefix shorter than
/// the view is hashed from a fresh read proven to be the view's bytes.
pub fn check_source(view: &SessionView, binding: &Binding) -> SourceCheck {
  let Some(expected) = binding.source_hash.as_deref() else { return SourceCheck::Holds };
  let len = binding.source_bytes.unwrap_or(view.source_len);
  let actual = match len.cmp(&view.source_len) {
    std::cmp::Ordering::Equal => Some(view.source_hash.clone()),
    std::cmp::Ordering::Greater => None,
    std::cmp::Ordering::Less => match prefix_hash(view, len) {
      Some(hash) => Some(hash),
      None => return SourceCheck::ViewOutdated,
    },
  };
  match actual {
    Some(actual) if same_hash(&actual, expected) => SourceCheck::Holds,
    _ => SourceCheck::Stale(stale(view, binding, SOURCE_CHANGED).with("expectedSourceBytes", binding.source_bytes)),
  }
}

/// SHA-256 of the first `len` bytes of the view's source, remembered per
/// view; `None` when the file no longer holds the view's bytes.
fn prefix_hash(view: &SessionView, len: u64) -> Option<String> {
  if let Some((_, hash)) = view.prefix_hashes.lock().iter().find(|(n, _)| *n == len) {
    return Some(hash.clone());
  }
  // Bounded by the view's own length: a file that has grown since no longer holds the view's bytes.
  let source = read_source(&view.path, view.source_len).ok()?;
  if source.sha256 != view.source_hash {
    return None;
  }
  let hash = sha256_hex(&source.bytes[..len as usize]);
  let mut known = view.prefix_hashes.lock();
  if known.len() >= PREFIX_HASHES_KEPT {
    known.remove(0);
  }
  known.push((len, hash.clone()));
  Some(hash)
}

const PREFIX_HASHES_KEPT: usize = 4;

/// Does the bound lineage still hold? In active mode the bound leaf must be
/// on the view's path with the same path from the root to it.
pub fn check_lineage(view: &SessionView, binding: &Binding) -> Result<(), ContractError> {
  let Some(expected) = binding.fingerprint.as_deref() else { return Ok(()) };
  let actual = match (view.branches, binding.leaf_id.as_deref()) {
    (Branches::Active, Some(leaf)) => match tip_fingerprint(&view.lineage_path, leaf) {
      Some(actual) => actual,
      None => {
        return Err(
          stale(view, binding, "The pointer's entry is no longer on the active branch.")
            .with("expectedLineageLeafId", leaf),
        )
      }
    },
    _ => view.lineage_fingerprint.clone(),
  };
  if same_hash(&actual, expected) {
    return Ok(());
  }
  Err(stale(view, binding, "Session active lineage changed after the pointer was issued."))
}

/// The shortest hash prefix a binding may carry: 64 bits, as a compact
/// pointer (the shim's `pin`) states them; a chance match is 2^-64.
pub const MIN_HASH_PREFIX: usize = 16;

/// Is `expected` this hash, or a lowercase-hex prefix of it at least
/// [`MIN_HASH_PREFIX`] long?
pub(crate) fn same_hash(actual: &str, expected: &str) -> bool {
  actual == expected
    || (expected.len() >= MIN_HASH_PREFIX
      && expected.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
      && actual.starts_with(expected))
}

/// The entries a call names still come from the bound leaf record: the last
/// of them (a continuation) or the anchor its context was added around (a
/// follow call with `before`/`after`). So indices name what they named.
pub fn check_entries(view: &SessionView, binding: &Binding, named: &[usize]) -> Result<(), ContractError> {
  let Some(leaf) = binding.leaf_id.as_deref() else { return Ok(()) };
  let from_leaf = |&index: &usize| view.normalized.entries.get(index).and_then(record_id) == Some(leaf);
  if named.iter().any(from_leaf) {
    return Ok(());
  }
  Err(stale(view, binding, "The pointer's entries moved after it was issued.").with("expectedLineageLeafId", leaf))
}

/// Does `binding` cover `view` as a whole (nothing appended to what it names)?
pub fn covers_whole(view: &SessionView, binding: &Binding) -> bool {
  let source = binding.source_bytes.is_none_or(|n| n == view.source_len);
  let lineage = match (view.branches, binding.leaf_id.as_deref()) {
    (Branches::Active, Some(leaf)) => view.lineage_tip.as_deref() == Some(leaf),
    _ => true,
  };
  source && lineage
}

pub mod pin;

#[cfg(test)]
mod tests;

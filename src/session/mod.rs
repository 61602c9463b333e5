//! Pi's session model: discovery, reading, parsing, lineage and
//! normalization, composed by [`load`] into one [`SessionView`].

pub(crate) mod binding;
pub mod decode;
pub mod discover;
pub mod echo;
pub mod entry;
pub(crate) mod fabric;
pub(crate) mod json;
pub mod lineage;
pub mod message;
pub mod named;
pub mod normalize;
pub mod parse;
pub mod project_dirs;
pub(crate) mod source;
pub(crate) mod time;
pub mod titles;
pub(crate) mod views;

#[cfg(test)]
pub(crate) mod proptests;

use crate::error::{ContractError, ErrorCode};
use crate::fsread::ReadError;
use entry::{ForgottenEntries, Normalized, Policy};
use lineage::{Branches, LiveBranch};
use source::StatStamp;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One session seen in one branch mode under one policy.
#[derive(Debug)]
pub struct SessionView {
  pub path: PathBuf,
  pub header: parse::Header,
  pub stamp: StatStamp,
  /// How many source bytes the view was built from (the file's size, or a
  /// pinned prefix) and their SHA-256.
  pub source_len: u64,
  pub source_hash: String,
  pub branches: Branches,
  pub lineage_fingerprint: String,
  /// Root-to-leaf ids of the active lineage (empty in all mode).
  pub lineage_path: Vec<String>,
  /// The last selected record's id.
  pub lineage_tip: Option<String>,
  pub normalized: Normalized,
  /// The ids of the session's forgotten entries, which `normalized` leaves out.
  pub forgotten: BTreeSet<String>,
  pub bad_lines: usize,
  /// Hashes of shorter prefixes of the same bytes, computed on demand.
  pub prefix_hashes: parking_lot::Mutex<Vec<(u64, String)>>,
  /// What paging through a long entry needs, worked out once per view.
  long_texts: parking_lot::Mutex<rustc_hash::FxHashMap<usize, Arc<LongText>>>,
}

/// Entries at least this long (bytes) are paged through a [`LongText`].
pub const LONG_TEXT_BYTES: usize = 1 << 20;

/// A long entry's UTF-16 index and threat flags: each page of it costs the
/// bytes it returns, not a count from the start and a scan of the whole text.
#[derive(Debug)]
pub struct LongText {
  pub units: crate::text::Utf16Index,
  threats: std::sync::OnceLock<Option<Vec<String>>>,
}

impl LongText {
  /// The entry's threat flags (scanned on first use).
  pub fn threats(&self, text: &str) -> Option<Vec<String>> {
    self.threats.get_or_init(|| crate::threat::flags::field(text)).clone()
  }
}

impl SessionView {
  pub fn file(&self) -> String {
    self.path.to_string_lossy().into_owned()
  }

  /// The [`LongText`] of entry `index` when its text is at least [`LONG_TEXT_BYTES`].
  pub fn long_text(&self, index: usize) -> Option<Arc<LongText>> {
    let text = &self.normalized.entries.get(index)?.text;
    if text.len() < LONG_TEXT_BYTES {
      return None;
    }
    let mut known = self.long_texts.lock();
    let long = known.entry(index).or_insert_with(|| {
      Arc::new(LongText { units: crate::text::Utf16Index::new(text), threats: std::sync::OnceLock::new() })
    });
    Some(long.clone())
  }
}

fn unavailable(path: &Path, why: impl std::fmt::Display) -> ContractError {
  ContractError::new(ErrorCode::SourceUnavailable, format!("Session source {} is unavailable: {why}", path.display()))
    .with("sessionFile", path.to_string_lossy().into_owned())
}

/// A read failure as `source_unavailable` with its `reason`
/// (`not_regular_file`, `file_too_large` with `size` and `limit`,
/// `permission_denied`, or `io_error`).
fn read_failed(path: &Path, error: &ReadError) -> ContractError {
  let failure = unavailable(path, error).with("reason", error.reason());
  match error {
    ReadError::TooLarge { size, limit } => failure.with("size", *size).with("limit", *limit),
    _ => failure,
  }
}

/// How a view is read: the entry policy, the forgotten entries left out,
/// and the most bytes read.
#[derive(Clone, Copy)]
pub struct Reading<'a> {
  pub policy: &'a Policy,
  pub forgotten: &'a ForgottenEntries,
  pub max_bytes: u64,
}

/// Reads, parses, selects and normalizes one session file, or reuses the
/// cached view while the file is unchanged (and so are its forgotten
/// entries). `live` is used only when `path` is the live session and the
/// mode is active; a file over `max_bytes` is refused unread.
pub fn load(
  path: &Path,
  branches: Branches,
  live: Option<(&Path, &LiveBranch)>,
  reading: Reading<'_>,
) -> Result<Arc<SessionView>, ContractError> {
  let Reading { policy, forgotten, max_bytes } = reading;
  let live_branch = live.filter(|(file, _)| *file == path && branches == Branches::Active).map(|(_, branch)| branch);
  if let Some(view) = views::get(path, branches, live_branch, policy, forgotten) {
    return Ok(view);
  }
  let source = source::read_source(path, max_bytes).map_err(|e| read_failed(path, &e))?;
  let hash = (source.bytes.len() as u64, source.sha256.clone());
  let view = Arc::new(view_of(path, source.stamp, &source.bytes, reading, hash, |records| {
    lineage::select(records, branches, live_branch)
  })?);
  views::put(branches, live_branch, policy, view.clone(), source.read_ns);
  Ok(view)
}

/// Decodes (as Pi does), parses, selects the lineage and normalizes `raw`
/// (the whole source, or the bound prefix of it); `hash` is of `raw` itself.
fn view_of(
  path: &Path,
  stamp: StatStamp,
  raw: &[u8],
  reading: Reading<'_>,
  hash: (u64, String),
  select: impl FnOnce(&[parse::Record<'_>]) -> lineage::Lineage,
) -> Result<SessionView, ContractError> {
  let decoded = decode::decode(raw);
  let parsed = parse::parse(&decoded.bytes).map_err(|_| unavailable(path, "not a Pi session file"))?;
  let lineage = select(&parsed.records);
  let forgotten = reading.forgotten.get(&parsed.header.id);
  let mut view = build_view(path, stamp, &parsed, lineage, (reading.policy, forgotten), hash);
  view.normalized.reasons.extend(decoded.reasons());
  Ok(view)
}

fn build_view(
  path: &Path,
  stamp: StatStamp,
  parsed: &parse::ParsedSession<'_>,
  lineage: lineage::Lineage,
  (policy, forgotten): (&Policy, Option<&BTreeSet<String>>),
  (source_len, source_hash): (u64, String),
) -> SessionView {
  let normalized = normalize::normalize(parsed, &lineage, policy, forgotten);
  SessionView {
    path: path.to_path_buf(),
    header: parsed.header.clone(),
    stamp,
    source_len,
    source_hash,
    branches: lineage.branches,
    lineage_fingerprint: lineage.fingerprint,
    lineage_path: lineage.path,
    lineage_tip: lineage.tip,
    normalized,
    forgotten: forgotten.cloned().unwrap_or_default(),
    bad_lines: parsed.bad_lines,
    prefix_hashes: parking_lot::Mutex::new(Vec::new()),
    long_texts: Default::default(),
  }
}

/// The view a bound call names: the current one when the binding covers it,
/// else the session as it was when the call was issued (the bound source
/// prefix, on the bound lineage). `stale_pointer` when either changed.
pub fn load_bound(
  path: &Path,
  branches: Branches,
  live: Option<(&Path, &LiveBranch)>,
  reading: Reading<'_>,
  bound: &binding::Binding,
) -> Result<Arc<SessionView>, ContractError> {
  let current = load(path, branches, live, reading)?;
  binding::check_lineage(&current, bound)?;
  if binding::covers_whole(&current, bound) {
    return match binding::check_source(&current, bound) {
      binding::SourceCheck::Stale(error) => Err(error),
      _ => Ok(current),
    };
  }
  pinned(&current, bound, reading).map(Arc::new)
}

/// Re-reads the source and rebuilds the view of its bound prefix.
fn pinned(current: &SessionView, bound: &binding::Binding, reading: Reading<'_>) -> Result<SessionView, ContractError> {
  let path = current.path.as_path();
  let source = source::read_source(path, reading.max_bytes).map_err(|e| read_failed(path, &e))?;
  let len = bound.source_bytes.unwrap_or(source.bytes.len() as u64) as usize;
  let prefix = source.bytes.get(..len).map(|p| (p, source::sha256_hex(p)));
  let expected = bound.source_hash.as_deref();
  let prefix = prefix.filter(|(_, hash)| expected.is_none_or(|h| binding::same_hash(hash, h)));
  let stale = || {
    ContractError::new(ErrorCode::StalePointer, "Session source changed after the pointer was issued.")
      .with("sessionFile", current.file())
      .with("expectedSourceBytes", bound.source_bytes)
  };
  let (prefix, hash) = prefix.ok_or_else(stale)?;
  let view = view_of(path, current.stamp, prefix, reading, (len as u64, hash), |records| {
    let nodes = lineage::nodes(records);
    match (current.branches, bound.leaf_id.as_deref()) {
      (Branches::All, _) => lineage::all(&nodes),
      (Branches::Active, Some(leaf)) => lineage::active_from(&nodes, leaf),
      (Branches::Active, None) => lineage::persisted_active(&nodes),
    }
  })
  .map_err(|_| stale())?;
  if bound.fingerprint.as_deref().is_some_and(|f| !binding::same_hash(&view.lineage_fingerprint, f)) {
    return Err(stale());
  }
  Ok(view)
}

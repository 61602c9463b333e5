//! Pi's session model: discovery, reading, parsing, lineage and
//! normalization, composed by [`load`] into one [`SessionView`].

pub mod decode;
pub mod discover;
pub mod fabric;
pub mod json;
pub mod lineage;
pub mod normalize;
pub mod parse;
pub mod source;
pub mod time;
pub mod views;

use crate::error::ContractError;
use crate::fsread::ReadError;
use lineage::{Branches, LiveBranch};
use normalize::{Normalized, Policy};
use source::StatStamp;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One session seen in one branch mode under one policy.
#[derive(Debug)]
pub struct SessionView {
  pub path: PathBuf,
  pub header: parse::Header,
  pub stamp: StatStamp,
  pub source_hash: String,
  pub branches: Branches,
  pub lineage_fingerprint: String,
  pub normalized: Normalized,
  pub bad_lines: usize,
}

impl SessionView {
  pub fn file(&self) -> String {
    self.path.to_string_lossy().into_owned()
  }
}

fn unavailable(path: &Path, why: impl std::fmt::Display) -> ContractError {
  ContractError::new("source_unavailable", format!("Session source {} is unavailable: {why}", path.display()))
    .with("sessionFile", path.to_string_lossy().into_owned())
}

/// A read failure as `source_unavailable` with its `reason`
/// (`not_regular_file`, `file_too_large` with `size` and `limit`, or an I/O
/// error).
fn read_failed(path: &Path, error: &ReadError) -> ContractError {
  let failure = unavailable(path, error).with("reason", error.reason());
  match error {
    ReadError::TooLarge { size, limit } => failure.with("size", *size).with("limit", *limit),
    _ => failure,
  }
}

/// Reads, parses, selects and normalizes one session file, or reuses the
/// cached view while the file is unchanged. `live` is used only when `path`
/// is the live session and the mode is active; a file over `max_bytes` is
/// refused unread.
pub fn load(
  path: &Path,
  branches: Branches,
  live: Option<(&Path, &LiveBranch)>,
  policy: &Policy,
  max_bytes: u64,
) -> Result<Arc<SessionView>, ContractError> {
  let live_branch = live.filter(|(file, _)| *file == path && branches == Branches::Active).map(|(_, branch)| branch);
  if let Some(view) = views::get(path, branches, live_branch, policy) {
    return Ok(view);
  }
  let source = source::read_source(path, max_bytes).map_err(|e| read_failed(path, &e))?;
  let decoded = decode::decode(&source.bytes);
  let parsed = parse::parse(&decoded.bytes).map_err(|_| unavailable(path, "not a Pi session file"))?;
  let lineage = lineage::select(&parsed.records, branches, live_branch);
  let mut normalized = normalize::normalize(&parsed, &lineage, policy);
  normalized.reasons.extend(decoded.reasons());
  let view = Arc::new(SessionView {
    path: path.to_path_buf(),
    header: parsed.header.clone(),
    stamp: source.stamp,
    source_hash: source.sha256.clone(),
    branches,
    lineage_fingerprint: lineage.fingerprint,
    normalized,
    bad_lines: parsed.bad_lines,
  });
  views::put(branches, live_branch, policy, view.clone(), source.read_ns);
  Ok(view)
}

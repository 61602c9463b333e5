//! A record's file name, from its source path (one file per source, branch
//! mode and tier; the grammar is `dir::IndexFile`'s).

use super::Tier;
use crate::index::dir::IndexFile;
use crate::session::lineage::Branches;
use crate::session::source::sha256_hex;
use std::path::Path;

/// `<sha256(path)[..16]>-<sanitized basename>.<mode>.<tier>`: one file per
/// source, branch mode and tier, so the modes never contaminate each other.
pub fn file_name(source: &Path, branches: Branches, tier: Tier) -> String {
  IndexFile::Record { base: &base_name(source), branches, tier }.to_string()
}

/// `<sha256(path)[..16]>-<sanitized basename>`: hashes the path's
/// `to_string_lossy` spelling, so a source path and a record's `file` (that
/// same spelling) name the same record.
pub fn base_name(source: &Path) -> String {
  let hash = sha256_hex(source.to_string_lossy().as_bytes());
  format!("{}-{}", &hash[..16], stem(source))
}

/// The sanitized file name that ends a [`base_name`].
pub fn stem(source: &Path) -> String {
  source
    .file_name()
    .map(|n| {
      n.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' })
        .collect()
    })
    .unwrap_or_default()
}

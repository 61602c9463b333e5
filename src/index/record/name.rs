//! A record's file name, from its source path (one file per source, branch
//! mode and tier; the grammar is `dir::IndexFile`'s).

use super::Tier;
use crate::index::dir::IndexFile;
use crate::session::lineage::Branches;
use sha2::{Digest, Sha256};
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
  base_of(base_hash(source), source)
}

/// The hash prefix that starts `source`'s [`base_name`], as a number.
pub fn base_hash(source: &Path) -> u64 {
  let digest = Sha256::digest(source.to_string_lossy().as_bytes());
  u64::from_be_bytes(digest[..8].try_into().expect("a SHA-256 has 32 bytes"))
}

/// The [`base_name`] of `source`, whose hash prefix is `hash`.
pub fn base_of(hash: u64, source: &Path) -> String {
  format!("{hash:016x}-{}", stem(source))
}

/// The hash prefix a [`base_name`] starts with, as a number.
pub fn hash_of_base(base: &str) -> Option<u64> {
  let hash = base.get(..16)?;
  hash.bytes().all(|b| b.is_ascii_hexdigit()).then(|| u64::from_str_radix(hash, 16).ok())?
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

#[cfg(test)]
mod tests {
  use super::*;
  use crate::session::source::sha256_hex;

  #[test]
  fn a_base_name_is_its_hash_number_and_the_file_name() {
    let source = Path::new("/s/--p--/2026-01-01T00-00-00_a b.jsonl");
    let base = base_name(source);
    assert_eq!(
      base,
      format!("{}-2026-01-01T00-00-00_a_b.jsonl", &sha256_hex(source.to_str().unwrap().as_bytes())[..16])
    );
    assert_eq!(base_of(base_hash(source), source), base);
    assert_eq!(hash_of_base(&base), Some(base_hash(source)));
    assert_eq!(base_of(1, source), "0000000000000001-2026-01-01T00-00-00_a_b.jsonl", "leading zeros kept");
    for bad in ["", "0123", "+123456789abcdef-x", "0123456789abcdeg-x"] {
      assert_eq!(hash_of_base(bad), None, "{bad:?}");
    }
  }
}

//! Cache V9 records on disk: naming, encoding, validation, atomic writes.
//!
//! A record is `PFMIDX9C`, the xxh3-64 (little-endian) of the payload, and
//! the payload: a postcard-encoded [`CacheRecord`] (compact,
//! allocation-light to decode, no text escaping). The checksum turns any
//! in-place change (a bit flip, a same-length edit) into a torn record,
//! which is rebuilt. Every record
//! names its exact source path, branch mode, lineage, policy, source hash
//! and stamp, and its own size (`cacheBytes`), so a torn, foreign or stale
//! file is recognized and rebuilt from source, never migrated.

use super::cold::ColdDigest;
use super::hot::HotShard;
use crate::session::lineage::Branches;
use crate::session::source::{sha256_hex, StatStamp};
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

pub const CACHE_VERSION: u32 = 9;
/// `9C`: cacheVersion 9 (entries and addresses nest their typed fields),
/// checksummed; records of earlier versions (`PFMIDX06`, `PFMIDX6C`,
/// `PFMIDX07`, `PFMIDX7C`, `PFMIDX8C`) are rebuilt.
const MAGIC: &[u8; 8] = b"PFMIDX9C";
const HEADER_BYTES: usize = MAGIC.len() + 8;
/// What every version's magic starts with: a file without it was never a record.
pub const MAGIC_PREFIX: &[u8; 6] = b"PFMIDX";

/// Serialized by variant index in records (postcard), by name in results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Tier {
  Hot,
  Cold,
}

impl Tier {
  pub fn as_str(self) -> &'static str {
    self.into()
  }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Body {
  Hot(HotShard),
  Cold(ColdDigest),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheRecord {
  pub cache_version: u32,
  pub file: String,
  pub session_id: String,
  pub cwd: String,
  pub branches: Branches,
  pub lineage_fingerprint: String,
  /// Everything that shaped the record besides the source (see `policy`).
  pub policy: String,
  pub source_hash: String,
  pub mtime: f64,
  pub size: u64,
  pub stamp: StatStamp,
  /// When the source was read for this record (racy-stamp rule).
  pub verified_ns: i128,
  pub cache_bytes: u64,
  pub cache_source_ratio: f64,
  pub body: Body,
}

impl CacheRecord {
  pub fn tier(&self) -> Tier {
    match self.body {
      Body::Hot(_) => Tier::Hot,
      Body::Cold(_) => Tier::Cold,
    }
  }

  pub fn coverage(&self) -> &super::IndexCoverage {
    match &self.body {
      Body::Hot(shard) => &shard.index_coverage,
      Body::Cold(digest) => &digest.index_coverage,
    }
  }

  pub fn entry_count(&self) -> usize {
    match &self.body {
      Body::Hot(shard) => shard.entries.len(),
      Body::Cold(digest) => digest.entry_count as usize,
    }
  }

  /// Encodes the record with `cacheBytes` equal to the encoded length (a
  /// fixed point: the length's own varint can grow the length).
  pub fn encode(&mut self) -> Vec<u8> {
    let mut guess = 0;
    loop {
      self.cache_bytes = guess;
      self.cache_source_ratio = ratio(guess, self.size);
      let payload = postcard::to_allocvec(self).expect("cache records serialize");
      let mut bytes = Vec::with_capacity(HEADER_BYTES + payload.len());
      bytes.extend_from_slice(MAGIC);
      bytes.extend_from_slice(&checksum(&payload));
      bytes.extend_from_slice(&payload);
      if bytes.len() as u64 == guess {
        return bytes;
      }
      guess = bytes.len() as u64;
    }
  }

  /// `None` for anything but an intact current record: wrong magic, a
  /// checksum mismatch (torn or edited), an undecodable payload, another
  /// version, or a length other than its own `cacheBytes`.
  pub fn decode(bytes: &[u8]) -> Option<CacheRecord> {
    let rest = bytes.strip_prefix(MAGIC)?;
    let (sum, payload) = rest.split_at_checked(HEADER_BYTES - MAGIC.len())?;
    if sum != checksum(payload) {
      return None;
    }
    let record: CacheRecord = postcard::from_bytes(payload).ok()?;
    (record.cache_version == CACHE_VERSION && record.cache_bytes == bytes.len() as u64).then_some(record)
  }
}

fn checksum(payload: &[u8]) -> [u8; 8] {
  xxhash_rust::xxh3::xxh3_64(payload).to_le_bytes()
}

/// `cacheBytes / size`, rounded to 6 decimals.
fn ratio(cache_bytes: u64, size: u64) -> f64 {
  if size == 0 {
    return 0.0;
  }
  (cache_bytes as f64 / size as f64 * 1e6).round() / 1e6
}

/// `<sha256(path)[..16]>-<sanitized basename>.<mode>.<tier>`: one file per
/// source, branch mode and tier, so the modes never contaminate each other.
pub fn file_name(source: &Path, branches: Branches, tier: Tier) -> String {
  format!("{}.{}.{}", base_name(source), branches.as_str(), tier.as_str())
}

pub fn base_name(source: &Path) -> String {
  let hash = sha256_hex(source.to_string_lossy().as_bytes());
  let stem: String = source
    .file_name()
    .map(|n| {
      n.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' })
        .collect()
    })
    .unwrap_or_default();
  format!("{}-{}", &hash[..16], stem)
}

/// The hash prefix of a well-formed record name, for orphan detection.
pub fn name_hash(name: &str) -> Option<&str> {
  let (base, rest) = name.split_once('-')?;
  let valid_rest = ["active.hot", "active.cold", "all.hot", "all.cold"].iter().any(|suffix| rest.ends_with(suffix));
  (base.len() == 16 && base.bytes().all(|b| b.is_ascii_hexdigit()) && valid_rest).then_some(base)
}

/// Does the record at `path` (named with `hash`) belong to a session that
/// still exists, though outside the roots this engine searches (another
/// host's custom session dir)? Read from the head of the payload alone:
/// postcard puts `cacheVersion` and `file` first.
pub fn source_exists(path: &Path, hash: &str) -> bool {
  #[derive(Deserialize)]
  struct Head {
    _cache_version: u32,
    file: PathBuf,
  }
  let Ok(head) = crate::fsread::read_prefix(path, HEAD_BYTES, crate::fsread::Links::Refuse) else { return false };
  let Some(payload) = head.strip_prefix(MAGIC).and_then(|rest| rest.get(HEADER_BYTES - MAGIC.len()..)) else {
    return false;
  };
  let Ok((head, _)) = postcard::take_from_bytes::<Head>(payload) else { return false };
  base_name(&head.file).starts_with(hash) && fs::metadata(&head.file).is_ok_and(|m| m.is_file())
}

/// Enough of a record for its header fields and any path.
const HEAD_BYTES: u64 = 8 * 1024;

/// The most a record of `tier` for a source of `source_size` bytes can
/// legitimately take: cold digests are fit under `maxColdCacheBytes`; a hot
/// shard holds at most the source's text, postings and ids (a generous 4x,
/// plus room for fixed fields). A larger file is not read, only rebuilt.
pub fn read_limit(config: &crate::config::Config, tier: Tier, source_size: u64) -> u64 {
  match tier {
    Tier::Cold => config.max_cold_cache_bytes,
    Tier::Hot => source_size.saturating_mul(4).saturating_add(1 << 20),
  }
}

/// Reads a record file: bounded, non-blocking, never through a symlink.
pub fn read(path: &Path, limit: u64) -> Result<Vec<u8>, crate::fsread::ReadError> {
  crate::fsread::read_regular(path, limit, crate::fsread::Links::Refuse).map(|(bytes, _)| bytes)
}

/// Temp file + rename, mode 0600: a reader sees the old record or the new
/// one, never a torn one, even with several Pi processes writing.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
  let temp = temp_path(path);
  let result = (|| {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
      use std::os::unix::fs::OpenOptionsExt;
      options.mode(0o600);
    }
    let mut file = options.open(&temp)?;
    file.write_all(bytes)?;
    crate::fault::check_write(&temp)?;
    drop(file);
    fs::rename(&temp, path)
  })();
  if result.is_err() {
    let _ = fs::remove_file(&temp);
  }
  result
}

fn temp_path(path: &Path) -> PathBuf {
  use std::sync::atomic::{AtomicU64, Ordering};
  static COUNTER: AtomicU64 = AtomicU64::new(0);
  let unique = format!(".tmp.{}.{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
  let mut name = path.file_name().unwrap_or_default().to_os_string();
  name.push(unique);
  path.with_file_name(name)
}

/// Is this a temp file some writer left behind?
pub fn is_temp(name: &str) -> bool {
  name.contains(".tmp.")
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::index::IndexCoverage;
  use crate::session::entry::Normalized;

  fn record() -> CacheRecord {
    CacheRecord {
      cache_version: CACHE_VERSION,
      file: "/a/b.jsonl".into(),
      session_id: "s".into(),
      cwd: "/a".into(),
      branches: Branches::Active,
      lineage_fingerprint: "f".repeat(64),
      policy: "p".into(),
      source_hash: "0".repeat(64),
      mtime: 1.0,
      size: 1000,
      stamp: StatStamp { dev: 1, ino: 2, size: 1000, mtime_ns: 3, ctime_ns: 4 },
      verified_ns: 5,
      cache_bytes: 0,
      cache_source_ratio: 0.0,
      body: Body::Hot(HotShard::build(Normalized::default(), None)),
    }
  }

  #[test]
  fn encoding_round_trips_and_knows_its_size() {
    let mut original = record();
    let bytes = original.encode();
    assert_eq!(original.cache_bytes, bytes.len() as u64);
    assert_eq!(original.cache_source_ratio, (bytes.len() as f64 / 1000.0 * 1e6).round() / 1e6);
    assert_eq!(CacheRecord::decode(&bytes), Some(original));
    assert_eq!(CacheRecord::decode(&bytes[..bytes.len() - 1]), None, "torn");
    assert_eq!(CacheRecord::decode(b"{\"cacheVersion\":5}"), None, "foreign");
    let _ = IndexCoverage::default();
  }

  #[test]
  fn every_single_bit_flip_is_detected() {
    let mut original = record();
    let bytes = original.encode();
    for position in 0..bytes.len() {
      for bit in 0..8 {
        let mut flipped = bytes.clone();
        flipped[position] ^= 1 << bit;
        assert_eq!(CacheRecord::decode(&flipped), None, "bit {bit} of byte {position}");
      }
    }
    // A same-length edit of a string field (what postcard alone accepts).
    let mut same_length = bytes.clone();
    let at = bytes.windows(10).position(|w| w == b"/a/b.jsonl").unwrap();
    same_length[at..at + 10].copy_from_slice(b"/a/c.jsonl");
    assert_eq!(CacheRecord::decode(&same_length), None);
  }

  #[test]
  fn names_identify_source_mode_and_tier() {
    let name = file_name(Path::new("/x/2026 a:b.jsonl"), Branches::All, Tier::Cold);
    assert!(name.ends_with("-2026_a_b.jsonl.all.cold"), "{name}");
    assert_eq!(name_hash(&name).map(str::len), Some(16));
    assert_eq!(name_hash("0123456789abcdef-x.jsonl.json"), None);
    assert_eq!(name_hash("nothex0123456789-x.active.hot"), None);
  }

  #[test]
  fn writes_are_atomic_and_private() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("index");
    crate::index::ownership::ensure_dir(&index).unwrap();
    let path = index.join("r");
    write_atomic(&path, b"one").unwrap();
    write_atomic(&path, b"two").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"two");
    assert_eq!(fs::read_dir(&index).unwrap().count(), 2, "the marker and the record, no temp files left");
    #[cfg(unix)]
    {
      use std::os::unix::fs::PermissionsExt;
      assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
      assert_eq!(fs::metadata(&index).unwrap().permissions().mode() & 0o777, 0o700);
    }
  }
}

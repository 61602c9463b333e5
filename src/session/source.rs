//! Reading one session source: its bytes, its stat stamp and its SHA-256.
//!
//! The whole file is read at once (session files are append-only JSONL of a
//! few MB; one `read` beats line-buffered I/O),
//! bounded and non-blocking (`crate::fsread`). The
//! file is stat'ed before and after the read so a write racing the read is
//! detected instead of producing a hash that matches neither version.

use crate::fsread::{self, Links, ReadError};
use sha2::{Digest, Sha256};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Identity of a file's content as the filesystem reports it. Unchanged
/// stamps prove an unchanged file for an append-only writer; a same-size
/// rewrite still changes `ctime_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct StatStamp {
  pub dev: u64,
  pub ino: u64,
  pub size: u64,
  pub mtime_ns: i128,
  pub ctime_ns: i128,
}

impl StatStamp {
  pub fn of(metadata: &fs::Metadata) -> Self {
    #[cfg(unix)]
    {
      use std::os::unix::fs::MetadataExt;
      StatStamp {
        dev: metadata.dev(),
        ino: metadata.ino(),
        size: metadata.size(),
        mtime_ns: metadata.mtime() as i128 * 1_000_000_000 + metadata.mtime_nsec() as i128,
        ctime_ns: metadata.ctime() as i128 * 1_000_000_000 + metadata.ctime_nsec() as i128,
      }
    }
    #[cfg(not(unix))]
    {
      let mtime_ns = metadata
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0);
      StatStamp { dev: 0, ino: 0, size: metadata.len(), mtime_ns, ctime_ns: mtime_ns }
    }
  }

  /// The stamp of a raw `stat` (as [`StatStamp::of`] gives for the same file).
  #[cfg(unix)]
  pub fn of_stat(stat: &libc::stat) -> Self {
    #[allow(clippy::unnecessary_cast)] // the fields' types differ between Unixes
    StatStamp {
      dev: stat.st_dev as u64,
      ino: stat.st_ino as u64,
      size: stat.st_size as u64,
      mtime_ns: stat.st_mtime as i128 * 1_000_000_000 + stat.st_mtime_nsec as i128,
      ctime_ns: stat.st_ctime as i128 * 1_000_000_000 + stat.st_ctime_nsec as i128,
    }
  }

  /// Can this stamp vouch for content verified at `verified_ns`? Filesystems
  /// update timestamps from a coarse clock, so a rewrite landing in the same
  /// tick as the earlier write keeps mtime and ctime (and, same size, the
  /// whole stamp). As git does for "racily clean" files, a stamp within
  /// [`RACY_WINDOW_NS`] of the verification proves nothing; the content must
  /// be hashed again.
  ///
  /// The change time decides, not the modification time: every write, and
  /// every `utimes`, sets ctime to the kernel's clock, while mtime is whatever
  /// a copy tool, another machine's clock or a generator set, possibly in the
  /// future, where it would never be old enough and the file would be re-hashed
  /// on every call. Where ctime is unknown (0) mtime stands in.
  pub fn proves_unchanged_since(&self, verified_ns: i128) -> bool {
    let changed = if self.ctime_ns != 0 { self.ctime_ns } else { self.mtime_ns };
    changed < verified_ns - RACY_WINDOW_NS
  }

  /// Modification time in milliseconds, as JavaScript's `stat.mtimeMs`.
  pub fn mtime_ms(&self) -> f64 {
    (self.mtime_ns as f64 / 1_000_000.0).floor()
  }
}

/// Timestamps this close to a verification cannot prove anything (see
/// [`StatStamp::proves_unchanged_since`]).
pub const RACY_WINDOW_NS: i128 = 2_000_000_000;

/// The wall clock in nanoseconds since the epoch.
pub fn now_ns() -> i128 {
  std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as i128).unwrap_or(0)
}

/// A session file read whole, with the hash of exactly the bytes read.
#[derive(Debug, Clone)]
pub struct SourceFile {
  pub path: PathBuf,
  pub bytes: Vec<u8>,
  pub stamp: StatStamp,
  pub sha256: String,
  /// The SHA-256 of the first `.0` bytes, when asked for (see [`read_source_resuming`]).
  pub prefix_sha256: Option<(usize, String)>,
  /// When the bytes were read (taken before the read).
  pub read_ns: i128,
}

impl SourceFile {
  /// The SHA-256 of the first `len` bytes (from the read's own pass when it was asked for that length).
  pub fn prefix_sha256(&self, len: usize) -> String {
    match &self.prefix_sha256 {
      Some((at, hash)) if *at == len => hash.clone(),
      _ => sha256_hex(&self.bytes[..len]),
    }
  }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
  hex(&Sha256::digest(bytes))
}

/// A SHA-256 (a source's content, a lineage's fingerprint) held as its 32
/// bytes: a record keeps three, and at 100,000 sessions their hex strings
/// were 24 MB of resident heads (and three allocations a head). Shown,
/// compared and written to JSON as the lowercase hex the rest of the
/// package uses ([`sha256_hex`]); records store the bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Hash256([u8; 32]);

impl Hash256 {
  /// The hash `sha256_hex` wrote as `hex`; `None` for anything else.
  pub fn from_hex(hex: &str) -> Option<Hash256> {
    let digit = |c: u8| match c {
      b'0'..=b'9' => Some(c - b'0'),
      b'a'..=b'f' => Some(c - b'a' + 10),
      _ => None,
    };
    let hex = hex.as_bytes();
    if hex.len() != 64 {
      return None;
    }
    let mut bytes = [0u8; 32];
    for (byte, pair) in bytes.iter_mut().zip(hex.chunks_exact(2)) {
      *byte = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(Hash256(bytes))
  }

  pub fn hex(&self) -> String {
    hex(&self.0)
  }
}

impl std::fmt::Display for Hash256 {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.write_str(&self.hex())
  }
}

impl std::fmt::Debug for Hash256 {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.write_str(&self.hex())
  }
}

/// Equal to the hex of the same hash (uppercase or malformed text never is).
impl PartialEq<str> for Hash256 {
  fn eq(&self, hex: &str) -> bool {
    Hash256::from_hex(hex).is_some_and(|other| other == *self)
  }
}

impl PartialEq<String> for Hash256 {
  fn eq(&self, hex: &String) -> bool {
    *self == *hex.as_str()
  }
}

impl serde::Serialize for Hash256 {
  fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    match serializer.is_human_readable() {
      true => serializer.serialize_str(&self.hex()),
      // One byte string: read with one copy, not 32 elements of a tuple.
      false => serializer.serialize_bytes(&self.0),
    }
  }
}

impl<'de> serde::Deserialize<'de> for Hash256 {
  fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Hash256, D::Error> {
    match deserializer.is_human_readable() {
      true => {
        let hex = <String as serde::Deserialize>::deserialize(deserializer)?;
        Hash256::from_hex(&hex).ok_or_else(|| serde::de::Error::custom("not a lowercase SHA-256 hex"))
      }
      false => crate::byte_string::read(deserializer, "the 32 bytes of a SHA-256", |b| b.try_into().ok().map(Hash256)),
    }
  }
}

pub fn hex(bytes: &[u8]) -> String {
  const DIGITS: &[u8; 16] = b"0123456789abcdef";
  let mut out = String::with_capacity(bytes.len() * 2);
  for byte in bytes {
    out.push(DIGITS[(byte >> 4) as usize] as char);
    out.push(DIGITS[(byte & 15) as usize] as char);
  }
  out
}

/// How many times a read is retried when the file changes underneath it.
const READ_ATTEMPTS: usize = 3;

/// Reads `path` whole: opened non-blocking, a regular file by `fstat`, at
/// most `limit` bytes (else `TooLarge`, nothing read). A file that keeps
/// changing during every attempt is reported as `Io(Interrupted)` so callers
/// can name it `source_changed_during_index`.
pub fn read_source(path: &Path, limit: u64) -> Result<SourceFile, ReadError> {
  read_source_resuming(path, limit, None)
}

/// [`read_source`], also hashing the first `prefix` bytes in the same pass
/// (an append resumes after a prefix it must prove unchanged: one pass over
/// the file, not two).
pub fn read_source_resuming(path: &Path, limit: u64, prefix: Option<usize>) -> Result<SourceFile, ReadError> {
  for _ in 0..READ_ATTEMPTS {
    let read_ns = now_ns();
    let (file, metadata) = fsread::open_regular(path, Links::Follow)?;
    let before = StatStamp::of(&metadata);
    let bytes = match fsread::read_open(file, &metadata, limit) {
      Err(ReadError::Io(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
      other => other?,
    };
    let after = StatStamp::of(&fs::metadata(path)?);
    if before == after && bytes.len() as u64 == after.size {
      let (sha256, prefix_sha256) = hash_with_prefix(&bytes, prefix);
      return Ok(SourceFile { path: path.to_path_buf(), bytes, stamp: after, sha256, prefix_sha256, read_ns });
    }
  }
  Err(ReadError::Io(io::Error::new(io::ErrorKind::Interrupted, "source changed during read")))
}

/// The SHA-256 of `bytes`, and of its first `prefix` bytes when that many exist.
fn hash_with_prefix(bytes: &[u8], prefix: Option<usize>) -> (String, Option<(usize, String)>) {
  let Some(at) = prefix.filter(|&at| at <= bytes.len()) else { return (sha256_hex(bytes), None) };
  let mut hasher = Sha256::new();
  hasher.update(&bytes[..at]);
  let head = hex(&hasher.clone().finalize());
  hasher.update(&bytes[at..]);
  (hex(&hasher.finalize()), Some((at, head)))
}

/// Is `path` still exactly `size` bytes hashing to `sha256`? (Bounded by
/// `size`, non-blocking; any failure is "no".)
pub fn same_content(path: &Path, size: u64, sha256: &str) -> bool {
  fsread::read_regular(path, size, Links::Follow).is_ok_and(|(bytes, _)| sha256_hex(&bytes) == sha256)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn hashes_are_lowercase_sha256() {
    assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  }

  #[test]
  fn a_hash_is_its_hex_in_text_and_its_bytes_in_records() {
    let hex = sha256_hex(b"abc");
    let hash = Hash256::from_hex(&hex).unwrap();
    assert_eq!((hash.hex(), hash.to_string()), (hex.clone(), hex.clone()));
    assert!(hash == hex && hash == *hex.as_str());
    assert!(hash != sha256_hex(b"abd") && hash != hex.to_uppercase() && hash != hex[1..]);
    for bad in ["", "xyz", &hex.to_uppercase(), &hex[..63], &format!("{hex}0"), &format!("g{}", &hex[1..])] {
      assert_eq!(Hash256::from_hex(bad), None, "{bad:?}");
    }
    assert_eq!(serde_json::to_value(hash).unwrap(), serde_json::json!(hex));
    assert_eq!(serde_json::from_value::<Hash256>(serde_json::json!(hex)).unwrap(), hash);
    let stored = postcard::to_allocvec(&hash).unwrap();
    assert_eq!(stored, [&[32u8][..], &Sha256::digest(b"abc")].concat(), "its length, then its 32 bytes");
    assert_eq!(postcard::from_bytes::<Hash256>(&stored).unwrap(), hash);
    assert!(postcard::from_bytes::<Hash256>(&postcard::to_allocvec(&[1u8; 31][..]).unwrap()).is_err(), "31 bytes");
  }

  #[test]
  fn the_prefix_hash_of_one_pass_equals_its_own() {
    let bytes = b"abcdefgh".repeat(100);
    for at in [0, 1, 64, 65, 799, 800] {
      let (whole, head) = hash_with_prefix(&bytes, Some(at));
      assert_eq!((whole, head), (sha256_hex(&bytes), Some((at, sha256_hex(&bytes[..at])))));
    }
    assert_eq!(hash_with_prefix(&bytes, Some(801)), (sha256_hex(&bytes), None));
  }

  #[test]
  fn recent_stamps_prove_nothing() {
    let stamp = StatStamp { dev: 1, ino: 1, size: 1, mtime_ns: 10 * RACY_WINDOW_NS, ctime_ns: 10 * RACY_WINDOW_NS };
    assert!(!stamp.proves_unchanged_since(10 * RACY_WINDOW_NS + 1));
    assert!(stamp.proves_unchanged_since(12 * RACY_WINDOW_NS));
  }

  #[cfg(unix)]
  #[test]
  fn a_future_mtime_is_proven_by_the_change_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("copied.jsonl");
    fs::write(&path, b"{}\n").unwrap();
    let in_a_year = std::time::SystemTime::now() + std::time::Duration::from_secs(365 * 86_400);
    fs::File::options().write(true).open(&path).unwrap().set_modified(in_a_year).unwrap();
    let stamp = StatStamp::of(&fs::metadata(&path).unwrap());
    assert!(stamp.mtime_ns > now_ns() + RACY_WINDOW_NS, "the mtime is in the future");
    assert!(!stamp.proves_unchanged_since(now_ns()), "just changed: inside the racy window");
    assert!(stamp.proves_unchanged_since(now_ns() + 2 * RACY_WINDOW_NS), "proven once its ctime is old enough");
  }

  #[test]
  fn reads_whole_file_with_stamp() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.jsonl");
    fs::write(&path, b"hello\n").unwrap();
    let source = read_source(&path, 6).unwrap();
    assert!(matches!(read_source(&path, 5), Err(ReadError::TooLarge { size: 6, limit: 5 })));
    assert_eq!(source.bytes, b"hello\n");
    assert_eq!(source.stamp.size, 6);
    assert_eq!(source.sha256, sha256_hex(b"hello\n"));
  }
}

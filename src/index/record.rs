//! Cache records on disk (version [`CACHE_VERSION`]): naming, encoding,
//! validation (written atomically by `dir::write_atomic`).
//!
//! A record is [`MAGIC`], the head's length (u32 LE), the xxh3-64 (LE) of
//! the head and of the body, then the head and the body, both postcard
//! (compact, allocation-light to decode, no text escaping). The head is the
//! [`CacheRecord`] without its bulk: for a cold digest every field a query
//! plans with; the body is the hot shard or the digest's [`ColdContent`]. A
//! fresh process reads only the heads of cold records, and a cold body when
//! a query first needs it ([`open`]). The checksums turn any in-place change
//! (a bit flip, a same-length edit) into a torn record, which is rebuilt; a
//! body read later must also come with the very head it was read with.
//! Every record
//! names its exact source path, branch mode, lineage, policy, source hash
//! and stamp, and its own size (`cacheBytes`), so a torn, foreign or stale
//! file is recognized and rebuilt from source, never migrated.

use super::cold::{ColdContent, ColdDigest, LazyContent, Unreadable};
use super::dir::IndexFile;
use super::hot::HotShard;
use crate::session::lineage::Branches;
use crate::session::source::{sha256_hex, StatStamp};
use crate::session::titles::Titles;
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};

pub const CACHE_VERSION: u32 = 14;
/// `BT`: cacheVersion 14, the session's name and first prompt in the head
/// (13: session frequencies and lengths for ranking; 12:
/// the tokenizer's identifier parts and script
/// bigrams; 11: a cold digest's files touched and tool histogram
/// moved from its head to its body); records of earlier versions
/// (`PFMIDX06`, `PFMIDX6C`, `PFMIDX07`, `PFMIDX7C`, `PFMIDX8C`, `PFMIDX9C`,
/// `PFMIDXAS`, `PFMIDXBS`) are rebuilt.
const MAGIC: &[u8; 8] = b"PFMIDXBT";
/// The magic, the head's length, the head's and the body's checksums.
const PREFIX_BYTES: usize = MAGIC.len() + 4 + 8 + 8;
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

/// A hot shard is boxed: most records at scale are cold digests, and an
/// inline shard made every one of them ~190 bytes larger. The digest stays
/// inline (the lint's advice): boxing it would be an allocation per head.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum Body {
  Hot(Box<HotShard>),
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
  /// What a session list shows besides the id (Pi's name, the first prompt).
  pub titles: Titles,
  #[serde(with = "summary")]
  pub body: Body,
}

/// How a record's body appears in its head: which tier, and for a cold
/// digest its head fields (the content is `serde(skip)`); the hot shard is
/// all body. JSON (`inspectCacheRecord`) shows the whole body instead.
mod summary {
  use super::{Body, ColdDigest};
  use serde::{Deserialize, Deserializer, Serialize, Serializer};

  #[derive(Serialize)]
  enum Ref<'a> {
    Hot,
    Cold(&'a ColdDigest),
  }

  #[derive(Deserialize)]
  #[allow(clippy::large_enum_variant)] // transient: moved into `Body` at once
  enum Owned {
    Hot,
    Cold(ColdDigest),
  }

  /// The digest's fields and its content's, as one JSON object.
  #[derive(Serialize)]
  struct Whole<'a> {
    #[serde(flatten)]
    digest: &'a ColdDigest,
    #[serde(flatten)]
    content: Option<&'a super::ColdContent>,
  }

  pub fn serialize<S: Serializer>(body: &Body, serializer: S) -> Result<S::Ok, S::Error> {
    match (body, serializer.is_human_readable()) {
      (Body::Hot(shard), true) => serializer.serialize_newtype_variant("Body", 0, "Hot", shard),
      (Body::Cold(digest), true) => {
        let whole = Whole { digest, content: digest.content().ok() };
        serializer.serialize_newtype_variant("Body", 1, "Cold", &whole)
      }
      (Body::Hot(_), false) => Ref::Hot.serialize(serializer),
      (Body::Cold(digest), false) => Ref::Cold(digest).serialize(serializer),
    }
  }

  /// A hot body is a placeholder until the body section is decoded.
  pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Body, D::Error> {
    Ok(match Owned::deserialize(deserializer)? {
      Owned::Hot => Body::Hot(Box::default()),
      Owned::Cold(digest) => Body::Cold(digest),
    })
  }
}

/// The parts of a record file, checked against each other.
struct Parts<'a> {
  head: &'a [u8],
  head_sum: [u8; 8],
  /// All of the body, or only its start when only the head was read.
  body: &'a [u8],
  body_sum: [u8; 8],
}

impl<'a> Parts<'a> {
  /// Splits `bytes` (the whole file, or a prefix holding at least the head)
  /// and verifies the head. `Err(needed)`: a prefix too short for the head,
  /// which needs `needed` bytes.
  fn split(bytes: &'a [u8]) -> Result<Option<Parts<'a>>, usize> {
    let Some(rest) = bytes.strip_prefix(MAGIC) else { return Ok(None) };
    let Some(fixed) = rest.get(..PREFIX_BYTES - MAGIC.len()) else { return Err(PREFIX_BYTES) };
    let head_len = u32::from_le_bytes(fixed[..4].try_into().expect("4 bytes")) as usize;
    let head_sum: [u8; 8] = fixed[4..12].try_into().expect("8 bytes");
    let body_sum: [u8; 8] = fixed[12..20].try_into().expect("8 bytes");
    let rest = &bytes[PREFIX_BYTES..];
    let Some(head) = rest.get(..head_len) else { return Err(PREFIX_BYTES.saturating_add(head_len)) };
    if checksum(head) != head_sum {
      return Ok(None);
    }
    Ok(Some(Parts { head, head_sum, body: &rest[head_len..], body_sum }))
  }

  /// The body, if intact: only asked of a whole file (a head-only read
  /// never pays for hashing the part of the body it happened to read).
  fn intact_body(&self) -> Option<&'a [u8]> {
    Some(self.body).filter(|body| checksum(body) == self.body_sum)
  }
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

  /// A cold digest whose content was found unreadable when a query needed
  /// it: the record no longer answers and is rebuilt by the next sync.
  pub fn content_unreadable(&self) -> bool {
    matches!(&self.body, Body::Cold(digest) if digest.content.is_resident() && digest.content().is_err())
  }

  pub fn entry_count(&self) -> usize {
    match &self.body {
      Body::Hot(shard) => shard.entries.len(),
      Body::Cold(digest) => digest.entry_count as usize,
    }
  }

  /// Encodes the record with `cacheBytes` equal to the encoded length (a
  /// fixed point: the length's own varint can grow the length).
  /// `Err` when a cold digest's content can no longer be read.
  pub fn encode(&mut self) -> Result<Vec<u8>, Unreadable> {
    let body = self.encode_body()?;
    Ok(self.frame(&body))
  }

  /// Encodes a record that is shared (still answering queries): as
  /// [`CacheRecord::encode`], but only the head is copied to carry
  /// `cacheBytes`; the body is serialized where it is.
  pub fn encode_shared(&self) -> Result<Vec<u8>, Unreadable> {
    let body = self.encode_body()?;
    let summary = match &self.body {
      Body::Hot(_) => Body::Hot(Box::default()),
      Body::Cold(digest) => Body::Cold(digest.clone()),
    };
    let mut head = CacheRecord {
      cache_version: self.cache_version,
      file: self.file.clone(),
      session_id: self.session_id.clone(),
      cwd: self.cwd.clone(),
      branches: self.branches,
      lineage_fingerprint: self.lineage_fingerprint.clone(),
      policy: self.policy.clone(),
      source_hash: self.source_hash.clone(),
      mtime: self.mtime,
      size: self.size,
      stamp: self.stamp,
      verified_ns: self.verified_ns,
      cache_bytes: 0,
      cache_source_ratio: 0.0,
      titles: self.titles.clone(),
      body: summary,
    };
    Ok(head.frame(&body))
  }

  fn encode_body(&self) -> Result<Vec<u8>, Unreadable> {
    Ok(
      match &self.body {
        Body::Hot(shard) => postcard::to_allocvec(shard),
        Body::Cold(digest) => postcard::to_allocvec(digest.content()?),
      }
      .expect("cache records serialize"),
    )
  }

  /// The record file: prefix, this head (its `cacheBytes` set to the
  /// file's length) and `body`.
  fn frame(&mut self, body: &[u8]) -> Vec<u8> {
    let mut guess = 0;
    loop {
      self.cache_bytes = guess;
      self.cache_source_ratio = ratio(guess, self.size);
      let head = self.head_bytes();
      let len = PREFIX_BYTES + head.len() + body.len();
      if len as u64 == guess {
        let mut bytes = Vec::with_capacity(len);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&(head.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&checksum(&head));
        bytes.extend_from_slice(&checksum(body));
        bytes.extend_from_slice(&head);
        bytes.extend_from_slice(body);
        return bytes;
      }
      guess = len as u64;
    }
  }

  /// The head as its record file holds it: what the head checksum covers.
  /// Postcard is canonical, so a record decoded from its file (or one
  /// written, whose `cacheBytes` the write set) encodes to the same bytes.
  pub fn head_bytes(&self) -> Vec<u8> {
    postcard::to_allocvec(self).expect("cache records serialize")
  }

  /// `None` for anything but an intact current record: wrong magic, a
  /// checksum mismatch (torn or edited), an undecodable head or body,
  /// another version, or a length other than its own `cacheBytes`.
  pub fn decode(bytes: &[u8]) -> Option<CacheRecord> {
    let parts = Parts::split(bytes).ok()??;
    let mut record = CacheRecord::decode_head(parts.head, bytes.len() as u64)?;
    let body = parts.intact_body()?;
    match &mut record.body {
      Body::Hot(shard) => *shard = postcard::from_bytes(body).ok()?,
      Body::Cold(digest) => digest.content = LazyContent::loaded(postcard::from_bytes(body).ok()?),
    }
    Some(record)
  }

  fn decode_head(head: &[u8], file_len: u64) -> Option<CacheRecord> {
    let record: CacheRecord = postcard::from_bytes(head).ok()?;
    (record.cache_version == CACHE_VERSION && record.cache_bytes == file_len).then_some(record)
  }
}

/// How much of a cold record [`open`] reads first: one page, which holds
/// nearly every head (measured: 1.2–2.1 KB median, 3.8 KB largest;
/// a longer head costs a second read). Reading more is most of the I/O of a
/// fresh process at 100,000 sessions, whose records are ~15 KB.
const COLD_HEAD_READ: u64 = 4 * 1024;

/// Reads the record at `path`: a hot record whole, a cold one up to its
/// head, with a loader that reads the body on first use and accepts it only
/// from the same record (same length and head checksum, intact body).
/// `Ok(None)`: not an intact current record of `tier` (torn, foreign,
/// another version); `Err`: it could not be read at all.
pub fn open(path: &Path, tier: Tier, limit: u64) -> Result<Option<CacheRecord>, crate::fsread::ReadError> {
  if tier == Tier::Hot {
    return Ok(CacheRecord::decode(&read(path, limit)?).filter(|r| r.tier() == tier));
  }
  let read_head = |len| {
    let (prefix, metadata) = crate::fsread::read_prefix(path, len, crate::fsread::Links::Refuse)?;
    match metadata.len() {
      size if size > limit => Err(crate::fsread::ReadError::TooLarge { size, limit }),
      file_len => Ok((prefix, file_len)),
    }
  };
  let (mut prefix, mut file_len) = read_head(COLD_HEAD_READ)?;
  let parts = match Parts::split(&prefix) {
    Err(needed) if (needed as u64) <= file_len => {
      (prefix, file_len) = read_head(needed as u64)?;
      Parts::split(&prefix)
    }
    parts => parts,
  };
  let Ok(Some(parts)) = parts else { return Ok(None) };
  let Some(mut record) = CacheRecord::decode_head(parts.head, file_len).filter(|r| r.tier() == tier) else {
    return Ok(None);
  };
  defer(&mut record, path, parts.head_sum, limit);
  Ok(Some(record))
}

/// A cold record from a copy of its head (`head`: the bytes the record
/// file's head checksum covers, see [`CacheRecord::head_bytes`]), as
/// [`open`] would give it: its body is read on first use from `path`, and
/// only if that file is still the record this head came from. `None` for
/// anything but a current cold head within `limit`.
pub fn from_head(head: &[u8], path: &Path, limit: u64) -> Option<CacheRecord> {
  let mut record: CacheRecord = postcard::from_bytes(head).ok()?;
  if record.cache_version != CACHE_VERSION || record.tier() != Tier::Cold || record.cache_bytes > limit {
    return None;
  }
  defer(&mut record, path, checksum(head), limit);
  Some(record)
}

/// The source file a head of this cache version names, read without
/// decoding the rest (`cache_version` and `file` lead the head).
pub fn file_of_head(head: &[u8]) -> Option<&str> {
  let ((version, file), _) = postcard::take_from_bytes::<(u32, &str)>(head).ok()?;
  (version == CACHE_VERSION).then_some(file)
}

/// Gives a cold record read from its head a loader for its body.
fn defer(record: &mut CacheRecord, path: &Path, head_sum: [u8; 8], limit: u64) {
  let (path, cache_bytes) = (path.to_path_buf(), record.cache_bytes);
  if let Body::Cold(digest) = &mut record.body {
    digest.content = LazyContent::deferred(move || read_content(&path, head_sum, cache_bytes, limit));
  }
}

/// After `bytes` (this cold record, encoded) were written to `path`: the
/// digest's content is dropped from memory and read back from there when a
/// query needs it, so building many cold records keeps few of them resident.
pub fn defer_content(record: &mut CacheRecord, path: &Path, bytes: &[u8]) {
  let Body::Cold(digest) = &mut record.body else { return };
  let Ok(Some(parts)) = Parts::split(bytes) else { return };
  let (path, head_sum, cache_bytes) = (path.to_path_buf(), parts.head_sum, bytes.len() as u64);
  digest.content = LazyContent::deferred(move || read_content(&path, head_sum, cache_bytes, cache_bytes));
}

/// The content of the cold record at `path`, if it is still the record
/// whose head had `head_sum` and `cache_bytes`.
fn read_content(path: &Path, head_sum: [u8; 8], cache_bytes: u64, limit: u64) -> Result<ColdContent, Unreadable> {
  let bytes = read(path, limit).map_err(|_| Unreadable)?;
  let parts =
    Parts::split(&bytes).ok().flatten().filter(|p| p.head_sum == head_sum && bytes.len() as u64 == cache_bytes);
  let body = parts.and_then(|p| p.intact_body()).ok_or(Unreadable)?;
  postcard::from_bytes(body).map_err(|_| Unreadable)
}

pub(super) fn checksum(payload: &[u8]) -> [u8; 8] {
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
  let Ok((head, _)) = crate::fsread::read_prefix(path, HEAD_BYTES, crate::fsread::Links::Refuse) else { return false };
  let Some(payload) = head.strip_prefix(MAGIC).and_then(|rest| rest.get(PREFIX_BYTES - MAGIC.len()..)) else {
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
      titles: Default::default(),
      body: Body::Hot(Box::new(HotShard::build(Normalized::default(), None))),
    }
  }

  #[test]
  fn encoding_round_trips_and_knows_its_size() {
    let mut original = record();
    let bytes = original.encode().unwrap();
    assert_eq!(original.cache_bytes, bytes.len() as u64);
    assert_eq!(original.cache_source_ratio, (bytes.len() as f64 / 1000.0 * 1e6).round() / 1e6);
    assert_eq!(CacheRecord::decode(&bytes), Some(original.clone()));
    assert_eq!(
      CacheRecord { cache_bytes: 0, cache_source_ratio: 0.0, ..original.clone() }.encode_shared().unwrap(),
      bytes
    );
    assert_eq!(CacheRecord::decode(&bytes[..bytes.len() - 1]), None, "torn");
    assert_eq!(CacheRecord::decode(b"{\"cacheVersion\":5}"), None, "foreign");
    let _ = IndexCoverage::default();
  }

  #[test]
  fn a_heads_source_file_is_read_from_its_first_fields() {
    let head = record().head_bytes();
    assert_eq!(file_of_head(&head), Some("/a/b.jsonl"));
    let other = CacheRecord { cache_version: CACHE_VERSION + 1, ..record() }.head_bytes();
    assert_eq!(file_of_head(&other), None, "another version's layout is not read");
    assert_eq!(file_of_head(&head[..3]), None);
  }

  #[test]
  fn a_cold_head_longer_than_the_first_read_is_read_whole() {
    let entries = (0..3)
      .map(|i| crate::session::entry::Entry {
        index: i,
        text: ["alpha", "beta", "gamma"][i].into(),
        ..Default::default()
      })
      .collect();
    let mut digest =
      ColdDigest::build(&Normalized { entries, ..Default::default() }, 1 << 20, crate::index::cold::Echoes::Kept);
    let long =
      |i: usize| crate::session::entry::Typed { tool: Some(format!("{}{i}", "deep".repeat(40))), ..Default::default() };
    digest.kinds = (0..50).map(|i| (crate::index::kind::Kind::intern(long(i)), 1)).collect();
    let mut original = CacheRecord { body: Body::Cold(digest), ..record() };
    let bytes = original.encode().unwrap();
    let head_len = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as u64;
    assert!(head_len > COLD_HEAD_READ, "the head ({head_len} bytes) needs the second read");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.cold");
    fs::write(&path, &bytes).unwrap();
    let opened = open(&path, Tier::Cold, 1 << 20).unwrap().expect("an intact record");
    let (Body::Cold(read), Body::Cold(written)) = (&opened.body, &original.body) else { panic!("cold") };
    assert_eq!(read.kinds, written.kinds);
    assert_eq!(read.content().unwrap().vocabulary.to_vec(), ["alpha", "beta", "gamma"]);
    // Cut inside the head: neither read gives an intact head.
    fs::write(&path, &bytes[..head_len as usize]).unwrap();
    assert!(open(&path, Tier::Cold, 1 << 20).unwrap().is_none());
  }

  #[test]
  fn every_single_bit_flip_is_detected() {
    let mut original = record();
    let bytes = original.encode().unwrap();
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
    let base = base_name(Path::new("/x/2026 a:b.jsonl"));
    assert_eq!(IndexFile::record_base(&name, Branches::All, Tier::Cold), Some(base.as_str()));
    assert_eq!(IndexFile::parse(&name).and_then(|f| f.record_hash()), Some(&base[..16]));
  }

  /// Slots are named from the source path, a record from its `file`: the
  /// same name as long as `file` is the path's lossy spelling, as built
  /// records carry it, even for a path that is not UTF-8.
  #[test]
  fn a_path_and_its_lossy_spelling_name_the_same_record() {
    let mut paths = vec![PathBuf::from("/x/2026 a:b.jsonl"), PathBuf::from("/d/é ü\u{fffd}/s ß.jsonl")];
    #[cfg(unix)]
    {
      use std::os::unix::ffi::OsStrExt;
      paths.push(PathBuf::from(std::ffi::OsStr::from_bytes(b"/d\xff\xfe/s\xc3x\xff\xffy.jsonl")));
    }
    for path in &paths {
      let lossy = path.to_string_lossy().into_owned();
      for (branches, tier) in [(Branches::Active, Tier::Hot), (Branches::All, Tier::Cold)] {
        assert_eq!(file_name(Path::new(&lossy), branches, tier), file_name(path, branches, tier), "{path:?}");
      }
    }
  }
}

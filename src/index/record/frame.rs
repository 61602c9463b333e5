//! The record file's framing: [`MAGIC`], the head's length, the head's and
//! the body's xxh3-64, then the head and the body (both postcard; a cold
//! body as one zstd frame of its postcard bytes); a record encodes with
//! `cacheBytes` equal to its own length and decodes only when every part
//! checks out.

use super::compression::{self, Dictionaries};
use super::{Body, CacheRecord, CACHE_VERSION, MAGIC};
use crate::config::MAX_COLD_CACHE_BYTES;
use crate::index::record::cold::{ColdContent, LazyContent, Unreadable};

/// The magic, the head's length, the head's and the body's checksums.
pub(super) const PREFIX_BYTES: usize = MAGIC.len() + 4 + 8 + 8;
/// What every version's magic starts with: a file without it was never a record.
pub const MAGIC_PREFIX: &[u8; 6] = b"PFMIDX";

/// The parts of a record file, checked against each other.
pub(super) struct Parts<'a> {
  pub(super) head: &'a [u8],
  pub(super) head_sum: [u8; 8],
  /// All of the body, or only its start when only the head was read.
  body: &'a [u8],
  body_sum: [u8; 8],
}

impl<'a> Parts<'a> {
  /// Splits `bytes` (the whole file, or a prefix holding at least the head)
  /// and verifies the head. `Err(needed)`: a prefix too short for the head,
  /// which needs `needed` bytes.
  pub(super) fn split(bytes: &'a [u8]) -> Result<Option<Parts<'a>>, usize> {
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
  pub(super) fn intact_body(&self) -> Option<&'a [u8]> {
    Some(self.body).filter(|body| checksum(body) == self.body_sum)
  }
}

impl CacheRecord {
  /// Encodes the record with `cacheBytes` equal to the encoded length (a
  /// fixed point: the length's own varint can grow the length).
  /// A cold body is compressed with the dictionary `dictionaries` give (a
  /// hot body's entries and posting lists are compressed alone, see `hot`).
  /// `Err` when a cold digest's content can no longer be read.
  pub fn encode(&mut self, dictionaries: &dyn Dictionaries) -> Result<Vec<u8>, Unreadable> {
    let body = self.encode_body(dictionaries)?;
    Ok(self.frame(&body))
  }

  /// As [`CacheRecord::encode`], from the body's plain bytes serialized
  /// already ([`CacheRecord::plain_body`]: the cold fit check's).
  pub fn encode_plain(&mut self, plain: Vec<u8>, dictionaries: &dyn Dictionaries) -> Vec<u8> {
    let body = match &self.body {
      Body::Hot(_) => plain,
      Body::Cold(_) => self.compress_cold_body(&plain, dictionaries),
    };
    self.frame(&body)
  }

  /// Encodes a record that is shared (still answering queries): as
  /// [`CacheRecord::encode`], but only the head is copied to carry
  /// `cacheBytes`; the body is serialized where it is.
  pub fn encode_shared(&self, dictionaries: &dyn Dictionaries) -> Result<Vec<u8>, Unreadable> {
    let body = self.encode_body(dictionaries)?;
    let summary = match &self.body {
      Body::Hot(_) => Body::Hot(Box::default()),
      Body::Cold(digest) => Body::Cold(digest.clone()),
    };
    let mut head = CacheRecord {
      cache_version: self.cache_version,
      file: self.file,
      branches: self.branches,
      lineage_fingerprint: self.lineage_fingerprint,
      policy: self.policy,
      source_hash: self.source_hash,
      mtime: self.mtime,
      size: self.size,
      stamp: self.stamp,
      verified_ns: self.verified_ns,
      cache_bytes: 0,
      cache_source_ratio: 0.0,
      details: self.details.clone(),
      body: summary,
    };
    Ok(head.frame(&body))
  }

  fn encode_body(&self, dictionaries: &dyn Dictionaries) -> Result<Vec<u8>, Unreadable> {
    let plain = self.plain_body()?;
    Ok(match &self.body {
      Body::Hot(_) => plain,
      Body::Cold(_) => self.compress_cold_body(&plain, dictionaries),
    })
  }

  /// This cold record's body `plain`, compressed with the dictionary
  /// `dictionaries` give for its source.
  fn compress_cold_body(&self, plain: &[u8], dictionaries: &dyn Dictionaries) -> Vec<u8> {
    let dictionary = dictionaries.for_encoding(plain, self.file.as_path(), self.session_id());
    compression::compress(plain, dictionary.as_deref())
  }

  /// A cold record file's bytes with its body compressed again: the same
  /// record, its body now compressed with what `dictionaries` give (none,
  /// when a dictionary its body named is retired). `None` for anything but
  /// an intact current cold record whose body `dictionaries` can read.
  pub fn recompress(bytes: &[u8], dictionaries: &dyn Dictionaries) -> Option<Vec<u8>> {
    let parts = Parts::split(bytes).ok()??;
    let mut record =
      CacheRecord::decode_head(parts.head, bytes.len() as u64).filter(|r| r.tier() == super::Tier::Cold)?;
    let plain = compression::decompress(parts.intact_body()?, dictionaries, MAX_COLD_CACHE_BYTES).ok()?;
    let body = record.compress_cold_body(&plain, dictionaries);
    Some(record.frame(&body))
  }

  /// The body as postcard, uncompressed.
  pub fn plain_body(&self) -> Result<Vec<u8>, Unreadable> {
    Ok(
      match &self.body {
        Body::Hot(shard) => postcard::to_allocvec(shard),
        Body::Cold(digest) => postcard::to_allocvec(digest.content()?),
      }
      .expect("cache records serialize"),
    )
  }

  /// The record's length with its body uncompressed: for a cold digest, what
  /// `maxColdCacheBytes` caps (so compression changes no digest's fit,
  /// and no body decompresses to more than the largest setting).
  pub fn plain_len(&mut self) -> Result<u64, Unreadable> {
    let body = self.plain_body()?;
    Ok(self.framed_len(&body))
  }

  /// The record's length with `plain` (its [`CacheRecord::plain_body`]) for a body.
  pub fn framed_len(&mut self, plain: &[u8]) -> u64 {
    self.frame(plain).len() as u64
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
  /// another version, a length other than its own `cacheBytes`, or hot
  /// entries or posting lists that would decompress to more than `limit`
  /// bytes (what their file may take, [`read_limit`](super::read_limit)).
  /// A cold body's dictionary comes from `dictionaries`.
  pub fn decode(bytes: &[u8], dictionaries: &dyn Dictionaries, limit: u64) -> Option<CacheRecord> {
    let parts = Parts::split(bytes).ok()??;
    let mut record = CacheRecord::decode_head(parts.head, bytes.len() as u64)?;
    let body = parts.intact_body()?;
    match &mut record.body {
      Body::Hot(shard) => **shard = postcard::from_bytes(body).ok().filter(|s: &super::HotShard| s.fits(limit))?,
      Body::Cold(digest) => digest.content = LazyContent::loaded(decode_cold_body(body, dictionaries).ok()?),
    }
    Some(record)
  }

  pub(super) fn decode_head(head: &[u8], file_len: u64) -> Option<CacheRecord> {
    let record: CacheRecord = postcard::from_bytes(head).ok()?;
    (record.cache_version == CACHE_VERSION && record.cache_bytes == file_len).then_some(record)
  }
}

/// The dictionary a record file's body was compressed with, if any (read
/// from its frame's header: `bytes` may be the file's start).
pub fn body_dictionary(bytes: &[u8]) -> Option<u32> {
  let parts = Parts::split(bytes).ok()??;
  compression::dictionary_of(parts.body)
}

/// A cold body's content: its frame decompressed (see
/// [`compression::decompress`]) and decoded.
pub(super) fn decode_cold_body(frame: &[u8], dictionaries: &dyn Dictionaries) -> Result<ColdContent, Unreadable> {
  postcard::from_bytes(&compression::decompress(frame, dictionaries, MAX_COLD_CACHE_BYTES)?).map_err(|_| Unreadable)
}

/// A record file's bytes as text can be searched in them: a record's head
/// and its body decompressed (tests that look for a forgotten word in the
/// index dir must see what a compressed body holds: a cold body, a hot
/// body's entries); any other file as it is.
#[cfg(test)]
pub fn readable_bytes(bytes: &[u8], dictionaries: &dyn Dictionaries) -> Vec<u8> {
  let Ok(Some(parts)) = Parts::split(bytes) else { return bytes.to_vec() };
  let plain = || {
    let record = CacheRecord::decode_head(parts.head, bytes.len() as u64)?;
    if let Some(Body::Hot(shard)) = CacheRecord::decode(bytes, dictionaries, u64::MAX).map(|r| r.body) {
      return Some([record.head_bytes(), parts.intact_body()?.to_vec(), shard.readable_entries()].concat());
    }
    let plain = compression::decompress(parts.intact_body()?, dictionaries, MAX_COLD_CACHE_BYTES).ok()?;
    Some([record.head_bytes(), plain].concat())
  };
  plain().unwrap_or_else(|| bytes.to_vec())
}

pub(crate) fn checksum(payload: &[u8]) -> [u8; 8] {
  xxhash_rust::xxh3::xxh3_64(payload).to_le_bytes()
}

/// An index file written whole: `magic`, the [`checksum`] of the rest, the
/// rest (the packed heads, the cold bodies' dictionaries, the session dirs'
/// listings).
pub(crate) fn sealed(magic: &[u8; 8], rest: &[u8]) -> Vec<u8> {
  [&magic[..], &checksum(rest), rest].concat()
}

/// The rest of a [`sealed`] file, when it is one of `magic` and intact.
pub(crate) fn unsealed<'a>(magic: &[u8; 8], bytes: &'a [u8]) -> Option<&'a [u8]> {
  let (sum, rest) = bytes.strip_prefix(magic)?.split_at_checked(8)?;
  (sum == checksum(rest)).then_some(rest)
}

/// `cacheBytes / size`, rounded to 6 decimals.
fn ratio(cache_bytes: u64, size: u64) -> f64 {
  if size == 0 {
    return 0.0;
  }
  (cache_bytes as f64 / size as f64 * 1e6).round() / 1e6
}

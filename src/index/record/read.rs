//! Reading records: a hot record whole, a cold one up to its head with a
//! loader that reads its body on first use (only from the same record), a
//! cold record from a packed copy of its head, and the bounds of each read.

use super::compression::Dictionaries;
use super::frame::{checksum, Parts, PREFIX_BYTES};
use super::name::base_name;
use super::{Body, CacheRecord, Tier, CACHE_VERSION, MAGIC};
use crate::index::record::cold::{ColdContent, LazyContent, Unreadable};
use serde::Deserialize;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How much of a cold record [`open`] reads first: one page, which holds
/// nearly every head (measured: 1.2–2.1 KB median, 3.8 KB largest;
/// a longer head costs a second read). Reading more is most of the I/O of a
/// fresh process at 100,000 sessions, whose records are ~15 KB.
pub(super) const COLD_HEAD_READ: u64 = 4 * 1024;

/// Reads the record at `path`: a hot record whole, a cold one up to its
/// head, with a loader that reads the body on first use and accepts it only
/// from the same record (same length and head checksum, intact body), its
/// dictionary from `dictionaries`. `Ok(None)`: not an intact current record of `tier` (torn, foreign,
/// another version); `Err`: it could not be read at all.
pub fn open<D: Dictionaries + 'static>(
  path: &Path,
  tier: Tier,
  limit: u64,
  dictionaries: &Arc<D>,
) -> Result<Option<CacheRecord>, crate::fsread::ReadError> {
  if tier == Tier::Hot {
    return Ok(CacheRecord::decode(&read(path, limit)?, &**dictionaries, limit).filter(|r| r.tier() == tier));
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
  defer(&mut record, at(path.to_path_buf()), parts.head_sum, limit, dictionaries);
  Ok(Some(record))
}

/// A cold record from a copy of its head (`head`: the bytes the record
/// file's head checksum covers, see [`CacheRecord::head_bytes`]), as
/// [`open`] would give it: its body is read on first use from its record
/// file in `dir` (named from the head's source when first needed: a path
/// made for each of 100,000 packed heads was 3.5 % of a fresh process's
/// first call), and only if that file is still the record this head came
/// from. `None` for anything but a current cold head within `limit`.
pub fn from_head<D: Dictionaries + 'static>(
  head: &[u8],
  dir: &Arc<Path>,
  limit: u64,
  dictionaries: &Arc<D>,
) -> Option<CacheRecord> {
  let mut record: CacheRecord = postcard::from_bytes(head).ok()?;
  if record.cache_version != CACHE_VERSION || record.tier() != Tier::Cold || record.cache_bytes > limit {
    return None;
  }
  let (dir, file, branches) = (dir.clone(), record.file.as_path(), record.branches);
  let locate = move || dir.join(super::file_name(file, branches, Tier::Cold));
  defer(&mut record, locate, checksum(head), limit, dictionaries);
  Some(record)
}

/// The source file a head of this cache version names, read without
/// decoding the rest (`cache_version` and `file` lead the head).
pub fn file_of_head(head: &[u8]) -> Option<&str> {
  let ((version, file), _) = postcard::take_from_bytes::<(u32, &str)>(head).ok()?;
  (version == CACHE_VERSION).then_some(file)
}

/// Gives a cold record read from its head a loader for its body, read from
/// the file `locate` names (the loader holds the one clone of
/// `dictionaries` a record takes).
fn defer<D: Dictionaries + 'static>(
  record: &mut CacheRecord,
  locate: impl Fn() -> PathBuf + Send + Sync + 'static,
  head_sum: [u8; 8],
  limit: u64,
  dictionaries: &Arc<D>,
) {
  let (cache_bytes, dictionaries): (u64, Arc<dyn Dictionaries>) = (record.cache_bytes, dictionaries.clone());
  if let Body::Cold(digest) = &mut record.body {
    digest.content =
      LazyContent::deferred(move || read_content(&locate(), head_sum, cache_bytes, limit, &*dictionaries));
  }
}

/// A locator for a record whose path is known.
fn at(path: PathBuf) -> impl Fn() -> PathBuf + Send + Sync + 'static {
  move || path.clone()
}

/// After `bytes` (this cold record, encoded) were written to `path`: the
/// digest's content is dropped from memory and read back from there when a
/// query needs it, so building many cold records keeps few of them resident.
pub fn defer_content<D: Dictionaries + 'static>(
  record: &mut CacheRecord,
  path: &Path,
  bytes: &[u8],
  dictionaries: &Arc<D>,
) {
  if record.tier() != Tier::Cold {
    return;
  }
  let Ok(Some(parts)) = Parts::split(bytes) else { return };
  defer(record, at(path.to_path_buf()), parts.head_sum, bytes.len() as u64, dictionaries);
}

/// The content of the cold record at `path`, if it is still the record
/// whose head had `head_sum` and `cache_bytes`.
fn read_content(
  path: &Path,
  head_sum: [u8; 8],
  cache_bytes: u64,
  limit: u64,
  dictionaries: &dyn Dictionaries,
) -> Result<ColdContent, Unreadable> {
  let bytes = read(path, limit).map_err(|_| Unreadable)?;
  let parts =
    Parts::split(&bytes).ok().flatten().filter(|p| p.head_sum == head_sum && bytes.len() as u64 == cache_bytes);
  let body = parts.and_then(|p| p.intact_body()).ok_or(Unreadable)?;
  super::frame::decode_cold_body(body, dictionaries)
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

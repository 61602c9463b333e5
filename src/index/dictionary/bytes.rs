//! The bytes of one dictionary shard: built in this process, or read from
//! its file. On Linux, on a local filesystem, a shard file is mapped, not
//! read: a term lookup touches a few pages of its term blocks and postings, and
//! once its head has been read ([`ShardBytes::release`]) its pages leave the
//! process's resident memory, so only the pages lookups touch come back. Shard files are only ever replaced by a rename, never rewritten in
//! place, so on a local filesystem a mapping keeps the bytes it was checked
//! with. Network filesystems and FUSE may not (another machine replaces the
//! file, and the mapping's next fault raises SIGBUS), and on Windows a mapped
//! file cannot be replaced by that rename: there the file is read.

use crate::fsread::{self, Links, ReadError};
use std::path::Path;

pub enum ShardBytes {
  Owned(Vec<u8>),
  #[cfg(target_os = "linux")]
  Mapped(memmap2::Mmap),
}

impl ShardBytes {
  /// The shard file at `path`, if it is a regular file (not a symlink) of
  /// at most `limit` bytes.
  pub fn open(path: &Path, limit: u64) -> Result<ShardBytes, ReadError> {
    let (file, metadata) = fsread::open_regular(path, Links::Refuse)?;
    #[cfg(target_os = "linux")]
    if metadata.len() > 0 && metadata.len() <= limit && fsread::may_map(&file) {
      // SAFETY: the index replaces a shard file only by renaming a new one
      // over it, and on a local filesystem the mapped inode keeps its bytes.
      let map = unsafe { memmap2::Mmap::map(&file) }?;
      if map.len() as u64 != metadata.len() {
        return Err(ReadError::Io(std::io::Error::new(std::io::ErrorKind::Interrupted, "file changed during read")));
      }
      return Ok(ShardBytes::Mapped(map));
    }
    fsread::read_open(file, &metadata, limit).map(ShardBytes::Owned)
  }

  /// Drops the mapped pages from the process's resident memory (they stay in
  /// the page cache); a later read maps them in again. Called once the
  /// shard's head is read.
  pub fn release(&self) {
    #[cfg(target_os = "linux")]
    if let ShardBytes::Mapped(map) = self {
      // SAFETY: a read-only shared mapping of a file: MADV_DONTNEED only
      // unmaps pages, and a later access reads the same file bytes back.
      let _ = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
    }
  }
}

impl From<Vec<u8>> for ShardBytes {
  fn from(bytes: Vec<u8>) -> ShardBytes {
    ShardBytes::Owned(bytes)
  }
}

impl AsRef<[u8]> for ShardBytes {
  fn as_ref(&self) -> &[u8] {
    self
  }
}

impl ShardBytes {
  /// Whether the bytes are a file's mapped pages.
  pub fn mapped(&self) -> bool {
    #[cfg(target_os = "linux")]
    if let ShardBytes::Mapped(_) = self {
      return true;
    }
    false
  }
}

impl std::ops::Deref for ShardBytes {
  type Target = [u8];

  fn deref(&self) -> &[u8] {
    match self {
      ShardBytes::Owned(bytes) => bytes,
      #[cfg(target_os = "linux")]
      ShardBytes::Mapped(map) => map,
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use std::fs;

  #[test]
  fn a_shard_reads_the_same_after_release_and_after_its_file_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shard");
    let original: Vec<u8> = (0..64 * 1024u32).map(|i| (i * 7 % 251) as u8).collect();
    fs::write(&path, &original).unwrap();
    let shard = ShardBytes::open(&path, 1 << 20).unwrap();
    // The test dir is on a local disk or tmpfs.
    #[cfg(target_os = "linux")]
    assert!(matches!(shard, ShardBytes::Mapped(_)));
    shard.release();
    assert_eq!(&shard[..], &original[..]);
    // The index replaces a shard by renaming a new file over it.
    let next = dir.path().join("next");
    fs::write(&next, b"replacement").unwrap();
    fs::rename(&next, &path).unwrap();
    shard.release();
    assert_eq!(&shard[..], &original[..]);
    assert_eq!(&ShardBytes::open(&path, 1 << 20).unwrap()[..], b"replacement");
  }

  #[test]
  fn empty_oversized_and_linked_shards() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    fs::write(&empty, b"").unwrap();
    assert!(ShardBytes::open(&empty, 10).unwrap().is_empty());
    let big = dir.path().join("big");
    fs::write(&big, [0u8; 11]).unwrap();
    assert!(matches!(ShardBytes::open(&big, 10), Err(ReadError::TooLarge { size: 11, limit: 10 })));
    assert!(ShardBytes::open(&dir.path().join("missing"), 10).is_err_and(|e| e.is_not_found()));
    #[cfg(unix)]
    {
      let link = dir.path().join("link");
      std::os::unix::fs::symlink(&big, &link).unwrap();
      assert!(matches!(ShardBytes::open(&link, 100), Err(ReadError::NotRegular)));
    }
  }
}

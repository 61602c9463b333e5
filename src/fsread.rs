//! Bounded reads of files that other processes (or users) control.
//!
//! Every session source, cache record, curated memory file and index marker
//! is read through [`read_regular`]: opened non-blocking (a FIFO or a tty
//! never blocks the open), checked with `fstat` on the open descriptor to
//! be a regular file (a `stat` before the open would race a swap), and
//! read only up to a limit the caller derives from what the file may
//! legitimately hold (a symlink to `/dev/zero` or a huge sparse file is
//! refused without reading it).

use std::fs::{self, File, Metadata};
use std::io::{self, Read};
use std::path::Path;

#[derive(Debug)]
pub enum ReadError {
  Io(io::Error),
  /// A FIFO, socket, device or directory where a regular file belongs.
  NotRegular,
  /// Larger than the caller's limit; nothing was read.
  TooLarge {
    size: u64,
    limit: u64,
  },
}

impl ReadError {
  /// The stable reason/code callers report.
  pub fn reason(&self) -> &'static str {
    match self {
      ReadError::Io(e) if e.kind() == io::ErrorKind::PermissionDenied => "permission_denied",
      ReadError::Io(_) => "io_error",
      ReadError::NotRegular => "not_regular_file",
      ReadError::TooLarge { .. } => "file_too_large",
    }
  }

  pub fn is_not_found(&self) -> bool {
    matches!(self, ReadError::Io(e) if e.kind() == io::ErrorKind::NotFound)
  }
}

impl std::fmt::Display for ReadError {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    match self {
      ReadError::Io(e) => write!(f, "{e}"),
      ReadError::NotRegular => f.write_str("not a regular file"),
      ReadError::TooLarge { size, limit } => write!(f, "{size} bytes exceeds the {limit}-byte bound"),
    }
  }
}

impl From<io::Error> for ReadError {
  fn from(e: io::Error) -> Self {
    ReadError::Io(e)
  }
}

/// Whether symlinks are followed when opening.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
  Follow,
  /// The final component must not be a symlink (files this package wrote
  /// itself by rename are never links).
  Refuse,
}

/// Opens `path` for reading without blocking and returns it with its
/// `fstat`, refusing anything but a regular file.
pub fn open_regular(path: &Path, links: Links) -> Result<(File, Metadata), ReadError> {
  let mut options = fs::OpenOptions::new();
  options.read(true);
  #[cfg(unix)]
  {
    use std::os::unix::fs::OpenOptionsExt;
    let nofollow = if links == Links::Refuse { libc::O_NOFOLLOW } else { 0 };
    options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | nofollow);
  }
  let file = options.open(path).map_err(|e| {
    // O_NOFOLLOW on a symlink fails with ELOOP: a link is not a regular file.
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ELOOP) {
      return ReadError::NotRegular;
    }
    ReadError::Io(e)
  })?;
  let metadata = file.metadata()?;
  if !metadata.is_file() || is_pseudo_file(&file) {
    return Err(ReadError::NotRegular);
  }
  Ok((file, metadata))
}

/// procfs and sysfs files claim to be regular (size 0) but are generated on
/// read, and some reads consume (`/proc/kmsg`) or block: never read them.
#[cfg(target_os = "linux")]
fn is_pseudo_file(file: &File) -> bool {
  fs_type(file).is_some_and(|t| t == libc::PROC_SUPER_MAGIC as libc::c_long || t == libc::SYSFS_MAGIC as libc::c_long)
}

/// The magic number of the filesystem `file` is on.
#[cfg(target_os = "linux")]
fn fs_type(file: &File) -> Option<libc::c_long> {
  use std::os::fd::AsRawFd;
  // SAFETY: fstatfs writes into a zeroed, properly sized statfs for a valid fd.
  let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
  (unsafe { libc::fstatfs(file.as_raw_fd(), &mut stat) } == 0).then_some(stat.f_type as libc::c_long)
}

/// Is `file` on a local disk or in memory, where a file replaced by a
/// rename (or unlinked) keeps its pages for whoever still maps it? Network
/// filesystems and FUSE may drop them when another machine or process
/// replaces the file, and touching such a mapping raises SIGBUS: files there
/// are read, never mapped.
#[cfg(target_os = "linux")]
pub fn may_map(file: &File) -> bool {
  #[allow(clippy::unnecessary_cast)] // c_long is i32 on 32-bit targets
  fs_type(file).is_some_and(|t| is_local_fs(t as i64))
}

/// Filesystems whose every change goes through this kernel (statfs magic
/// numbers, linux/magic.h): inotify sees each change to their files
/// (`index::watch`), and a file replaced or unlinked keeps its pages for
/// whoever maps it ([`may_map`]). Network and FUSE filesystems are not here:
/// their files change without this kernel knowing. An allowlist, so an
/// unknown filesystem is neither watched nor mapped.
#[cfg(target_os = "linux")]
pub(crate) fn is_local_fs(magic: i64) -> bool {
  const LOCAL: &[i64] = &[
    0xEF53,              // ext2/3/4
    0x5846_5342,         // xfs
    0x9123_683E,         // btrfs
    0x0102_1994,         // tmpfs
    0x794C_7630,         // overlayfs
    0x2FC1_2FC1,         // zfs
    0xF2F5_2010u32 as _, // f2fs
    0xCA45_1A4E,         // bcachefs
    0x3153_464A,         // jfs
    0x5265_4973,         // reiserfs
  ];
  LOCAL.contains(&magic)
}

#[cfg(not(target_os = "linux"))]
fn is_pseudo_file(_file: &File) -> bool {
  false
}

/// A prefix read wants its few pages only: without this the kernel reads
/// ahead tens of KB per file, which is most of the I/O when 100,000 record
/// heads are read from a cold page cache.
#[cfg(target_os = "linux")]
fn no_readahead(file: &File) {
  use std::os::fd::AsRawFd;
  // SAFETY: advice on a valid open descriptor; it changes no memory.
  unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
}

#[cfg(not(target_os = "linux"))]
fn no_readahead(_file: &File) {}

/// Reads a regular file whole, refusing one larger than `limit` bytes.
pub fn read_regular(path: &Path, limit: u64, links: Links) -> Result<(Vec<u8>, Metadata), ReadError> {
  let (file, metadata) = open_regular(path, links)?;
  let bytes = read_open(file, &metadata, limit)?;
  Ok((bytes, metadata))
}

/// Reads an already opened regular file, bounded by `limit` and by its own
/// `fstat` size: a file that yields more than it said is growing (or a
/// pseudo-file such as `/proc/*` that reports 0), and is reported as
/// changed (`Interrupted`) instead of being read on.
pub fn read_open(file: File, metadata: &Metadata, limit: u64) -> Result<Vec<u8>, ReadError> {
  let size = metadata.len();
  if size > limit {
    return Err(ReadError::TooLarge { size, limit });
  }
  let mut bytes = Vec::with_capacity(size as usize);
  file.take(size + 1).read_to_end(&mut bytes)?;
  if bytes.len() as u64 > size {
    return Err(ReadError::Io(io::Error::new(io::ErrorKind::Interrupted, "file changed during read")));
  }
  Ok(bytes)
}

/// Reads at most the first `len` bytes of a regular file (magic checks,
/// record heads), with the `fstat` of the descriptor they were read from.
pub fn read_prefix(path: &Path, len: u64, links: Links) -> Result<(Vec<u8>, Metadata), ReadError> {
  let (file, metadata) = open_regular(path, links)?;
  no_readahead(&file);
  let mut bytes = Vec::with_capacity(len.min(metadata.len()) as usize);
  file.take(len).read_to_end(&mut bytes)?;
  Ok((bytes, metadata))
}

#[cfg(all(test, unix))]
mod tests {
  use super::*;
  use crate::testing::mkfifo;
  use std::time::{Duration, Instant};

  /// One allowlist for watching and mapping: local disks and memory in,
  /// network and FUSE out.
  #[cfg(target_os = "linux")]
  #[test]
  #[allow(clippy::unnecessary_cast)] // c_long is i32 on 32-bit targets
  fn local_filesystems_are_an_allowlist() {
    for local in [libc::EXT4_SUPER_MAGIC, libc::TMPFS_MAGIC, libc::XFS_SUPER_MAGIC, libc::OVERLAYFS_SUPER_MAGIC] {
      assert!(is_local_fs(local as i64), "{local:#x}");
    }
    for remote in [libc::NFS_SUPER_MAGIC, libc::SMB_SUPER_MAGIC, libc::FUSE_SUPER_MAGIC, libc::PROC_SUPER_MAGIC] {
      assert!(!is_local_fs(remote as i64), "{remote:#x}");
    }
  }

  #[test]
  fn a_fifo_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let started = Instant::now();
    assert!(matches!(read_regular(&fifo, 1024, Links::Follow), Err(ReadError::NotRegular)));
    assert!(started.elapsed() < Duration::from_secs(5));
  }

  #[test]
  fn devices_symlinks_and_oversized_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let zero = dir.path().join("zero");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    assert!(matches!(read_regular(&zero, 1 << 20, Links::Follow), Err(ReadError::NotRegular)));
    let sparse = dir.path().join("sparse");
    File::create(&sparse).unwrap().set_len(3 << 30).unwrap();
    let result = read_regular(&sparse, 1 << 20, Links::Follow);
    assert!(matches!(result, Err(ReadError::TooLarge { size, limit: 1048576 }) if size == 3 << 30), "{result:?}");
    let real = dir.path().join("real");
    fs::write(&real, b"abc").unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert_eq!(read_regular(&link, 3, Links::Follow).unwrap().0, b"abc");
    assert!(matches!(read_regular(&link, 3, Links::Refuse), Err(ReadError::NotRegular)));
    assert!(matches!(read_regular(&real, 2, Links::Refuse), Err(ReadError::TooLarge { size: 3, limit: 2 })));
    assert!(read_regular(&dir.path().join("missing"), 3, Links::Follow).unwrap_err().is_not_found());
    assert_eq!(read_prefix(&real, 2, Links::Refuse).unwrap().0, b"ab");
  }

  #[test]
  fn a_file_yielding_more_than_its_stat_is_not_read_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("grows");
    fs::write(&path, b"abc").unwrap();
    let (file, metadata) = open_regular(&path, Links::Follow).unwrap();
    // Rewritten in place after the fstat: the same inode now holds more.
    fs::write(&path, b"abcdef").unwrap();
    let result = read_open(file, &metadata, 1 << 20);
    assert!(matches!(result, Err(ReadError::Io(ref e)) if e.kind() == io::ErrorKind::Interrupted), "{result:?}");
  }

  #[cfg(target_os = "linux")]
  #[test]
  fn proc_files_are_never_read() {
    // Regular by fstat, size 0, generated (or consumed: /proc/kmsg) on read.
    let result = read_regular(Path::new("/proc/self/status"), 1 << 20, Links::Follow);
    assert!(matches!(result, Err(ReadError::NotRegular)), "{result:?}");
  }
}

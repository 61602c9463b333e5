//! Durable file I/O for the memory files: strict reads, atomic writes, the
//! drift check and `.bak` snapshots.
//!
//! A file that cannot be read or decoded is an error, never "empty": the
//! TypeScript original treats it as empty and a following add rewrites it
//! with one entry, losing everything else.

use super::entries::{self, js_trim};
use crate::fsread::{self, Links, ReadError};
use crate::text::utf16_len;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A memory file as read: its exact bytes (for backups) and its text with a
/// leading BOM removed and CRLF read as LF (for parsing).
pub(crate) struct OnDisk {
  pub bytes: Vec<u8>,
  pub text: String,
}

/// The most bytes a memory file with a limit of `char_limit` UTF-16 units
/// is read up to: 4 bytes per unit (a UTF-8 scalar is at most 3 bytes per
/// unit) times 8, for files over their limit that must still be shown, plus
/// a fixed allowance for tiny limits.
pub(crate) fn read_bound(char_limit: usize) -> u64 {
  (char_limit as u64).saturating_mul(32).saturating_add(64 * 1024)
}

/// `Ok(None)` when the file does not exist; invalid UTF-8 is `InvalidData`.
/// Opened non-blocking; a FIFO, device or directory is `InvalidInput`, a
/// file over `max_bytes` is `FileTooLarge`, and neither is read.
pub(crate) fn read(path: &Path, max_bytes: u64) -> io::Result<Option<OnDisk>> {
  let bytes = match fsread::read_regular(path, max_bytes, Links::Follow) {
    Ok((bytes, _)) => bytes,
    Err(error) if error.is_not_found() => return Ok(None),
    Err(ReadError::Io(error)) => return Err(error),
    Err(error @ ReadError::NotRegular) => return Err(io::Error::new(io::ErrorKind::InvalidInput, error.to_string())),
    Err(error @ ReadError::TooLarge { .. }) => {
      return Err(io::Error::new(io::ErrorKind::FileTooLarge, error.to_string()))
    }
  };
  let decoded = std::str::from_utf8(&bytes)
    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("not valid UTF-8 ({e})")))?;
  let text = entries::normalize_newlines(decoded.strip_prefix('\u{FEFF}').unwrap_or(decoded)).into_owned();
  Ok(Some(OnDisk { bytes, text }))
}

/// Would rewriting this file from its parsed entries change or lose content?
/// True when the text does not round-trip through parse + serialize, or when
/// one entry alone exceeds the limit (undelimited text appended by another
/// writer). A total over the limit is not drift.
pub fn is_drift(text: &str, limit: usize) -> bool {
  let trimmed = js_trim(text);
  if trimmed.is_empty() {
    return false;
  }
  let parsed = entries::parse(text);
  trimmed != entries::serialize(&parsed) || parsed.iter().any(|e| utf16_len(e) > limit)
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

fn file_name(path: &Path) -> String {
  path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

fn temp_path(target: &Path) -> PathBuf {
  let unique = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
  target.with_file_name(format!(".{}.{}.{unique}.tmp", file_name(target), std::process::id()))
}

/// Removes temp files of `target` left by a writer that died between
/// creating and renaming them. Call only while holding the file lock: only
/// a lock holder creates them, so any that exist then are orphans.
pub(crate) fn remove_orphan_temps(target: &Path) {
  let prefix = format!(".{}.", file_name(target));
  let Some(Ok(listing)) = target.parent().map(fs::read_dir) else { return };
  for entry in listing.filter_map(Result::ok) {
    let name = entry.file_name().to_string_lossy().into_owned();
    if name.starts_with(&prefix) && name.ends_with(".tmp") {
      let _ = fs::remove_file(entry.path());
    }
  }
}

/// Writes `bytes` to `target` so a crash at any point leaves either the old
/// or the new file: temp file in the same directory, fsync, rename over the
/// target, fsync the directory so the rename itself is durable.
pub(crate) fn write_atomic(target: &Path, bytes: &[u8]) -> io::Result<()> {
  let temp = temp_path(target);
  let written = (|| {
    let mut file = File::options().write(true).create_new(true).open(&temp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    crate::fault::check_write(&temp)?;
    fs::rename(&temp, target)
  })();
  if written.is_err() {
    let _ = fs::remove_file(&temp);
  }
  written?;
  sync_dir(target.parent().unwrap_or(Path::new(".")))
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
  File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
  Ok(())
}

/// Saves `bytes` as `<file>.bak.<unix-seconds>` and returns the path. A
/// backup with identical content is reused, so repeated refusals of the same
/// drifted file do not pile up copies; an existing different backup is never
/// overwritten.
pub(crate) fn backup(file: &Path, bytes: &[u8]) -> Result<PathBuf, (PathBuf, io::Error)> {
  let prefix = format!("{}.bak.", file_name(file));
  let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
  let fresh = file.with_file_name(format!("{prefix}{secs}"));
  if let Some(existing) = identical_backup(file, &prefix, bytes) {
    return Ok(existing);
  }
  let mut candidate = fresh.clone();
  let mut n = 1;
  while candidate.exists() {
    candidate = file.with_file_name(format!("{prefix}{secs}.{n}"));
    n += 1;
  }
  write_atomic(&candidate, bytes).map(|()| candidate).map_err(|e| (fresh, e))
}

fn identical_backup(file: &Path, prefix: &str, bytes: &[u8]) -> Option<PathBuf> {
  let dir = file.parent()?;
  let mut names: Vec<PathBuf> = fs::read_dir(dir)
    .ok()?
    .filter_map(Result::ok)
    .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
    .map(|e| e.path())
    .collect();
  names.sort();
  names.into_iter().find(|path| {
    fsread::read_regular(path, bytes.len() as u64, Links::Refuse).is_ok_and(|(content, _)| content == bytes)
  })
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn missing_is_none_and_invalid_utf8_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("MEMORY.md");
    assert!(read(&file, 1 << 20).unwrap().is_none());
    fs::write(&file, [b'a', 0xff, b'b']).unwrap();
    assert_eq!(read(&file, 1 << 20).err().unwrap().kind(), io::ErrorKind::InvalidData);
  }

  #[test]
  fn bom_and_crlf_are_normalized_but_bytes_kept() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("MEMORY.md");
    fs::write(&file, "\u{FEFF}one\r\n§\r\ntwo").unwrap();
    let on_disk = read(&file, 1 << 20).unwrap().unwrap();
    assert_eq!(on_disk.text, "one\n§\ntwo");
    assert_eq!(on_disk.bytes, "\u{FEFF}one\r\n§\r\ntwo".as_bytes());
    assert!(!is_drift(&on_disk.text, 100));
  }

  #[test]
  fn drift_rules_follow_the_reference() {
    assert!(!is_drift("one\n§\ntwo\n§\nthree", 9999));
    assert!(is_drift("one\n§\ntwo\n§\n", 9999), "trailing delimiter");
    assert!(is_drift("one \n§\ntwo", 9999), "padded entry");
    assert!(is_drift("one\n\n§\ntwo", 9999), "blank line before §");
    assert!(!is_drift("  \n", 10), "whitespace only");
    assert!(is_drift("x".repeat(11).as_str(), 10), "one entry over the limit");
    assert!(!is_drift("12345\n§\n12345", 6), "a total over the limit is not drift");
  }

  #[test]
  fn atomic_write_replaces_and_leaves_no_temp() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("MEMORY.md");
    write_atomic(&file, b"old").unwrap();
    write_atomic(&file, b"new").unwrap();
    assert_eq!(fs::read(&file).unwrap(), b"new");
    let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["MEMORY.md"]);
  }

  #[test]
  fn orphaned_temps_of_the_file_are_removed_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("MEMORY.md");
    for name in [".MEMORY.md.123.0.tmp", ".USER.md.123.0.tmp", "MEMORY.md", ".mem_abc.tmp"] {
      fs::write(dir.path().join(name), "x").unwrap();
    }
    remove_orphan_temps(&file);
    let mut names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, [".USER.md.123.0.tmp", ".mem_abc.tmp", "MEMORY.md"]);
  }

  #[test]
  fn identical_backups_are_reused_and_different_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("MEMORY.md");
    let first = backup(&file, b"drifted").unwrap();
    assert_eq!(backup(&file, b"drifted").unwrap(), first);
    let second = backup(&file, b"drifted again").unwrap();
    assert_ne!(second, first);
    assert_eq!(fs::read(&first).unwrap(), b"drifted");
    assert_eq!(fs::read(&second).unwrap(), b"drifted again");
    assert!(first.file_name().unwrap().to_string_lossy().starts_with("MEMORY.md.bak."));
  }
}

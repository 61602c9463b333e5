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

/// How many backups of one file are kept: the oldest (the first state that
/// was saved) and the newest others.
pub(crate) const KEPT_BACKUPS: usize = 8;

/// Saves `bytes` as `<file>.bak.<unix-seconds>` and returns the path. A
/// backup with identical content is reused, so repeated refusals of the same
/// drifted file do not pile up copies; an existing different backup is never
/// overwritten. Past [`KEPT_BACKUPS`], the backups between the oldest and
/// the newest are removed (only files named as this function names them).
pub(crate) fn backup(file: &Path, bytes: &[u8]) -> Result<PathBuf, (PathBuf, io::Error)> {
  let prefix = format!("{}.bak.", file_name(file));
  let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
  let fresh = file.with_file_name(format!("{prefix}{secs}"));
  if let Some(existing) = identical_backup(file, &prefix, bytes) {
    return Ok(existing);
  }
  // After the newest backup in name order, even if the clock went back or
  // pruning freed an older name: the order of names is the order of saves.
  let (secs, mut n) = match backups(file, &prefix).last() {
    Some(&((last, n), _)) if last >= secs => (last, n + 1),
    _ => (secs, 0),
  };
  let name = |n: u64| if n == 0 { format!("{prefix}{secs}") } else { format!("{prefix}{secs}.{n}") };
  let mut candidate = file.with_file_name(name(n));
  while candidate.exists() {
    n += 1;
    candidate = file.with_file_name(name(n));
  }
  write_atomic(&candidate, bytes).map_err(|e| (fresh, e))?;
  prune_backups(file, &prefix);
  Ok(candidate)
}

/// `<prefix><secs>` or `<prefix><secs>.<n>` as (secs, n): a name [`backup`] wrote.
fn backup_order(name: &str, prefix: &str) -> Option<(u64, u64)> {
  let rest = name.strip_prefix(prefix)?;
  let (secs, n) = rest.split_once('.').unwrap_or((rest, "0"));
  let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
  (digits(secs) && digits(n)).then(|| Some((secs.parse().ok()?, n.parse().ok()?))).flatten()
}

/// The regular files named as [`backup`] names them, oldest first.
fn backups(file: &Path, prefix: &str) -> Vec<((u64, u64), PathBuf)> {
  let Some(Ok(listing)) = file.parent().map(fs::read_dir) else { return Vec::new() };
  let mut ours: Vec<((u64, u64), PathBuf)> = listing
    .filter_map(Result::ok)
    .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_file()))
    .filter_map(|entry| Some((backup_order(entry.file_name().to_str()?, prefix)?, entry.path())))
    .collect();
  ours.sort();
  ours
}

/// Keeps the oldest backup and the newest `KEPT_BACKUPS - 1`; removes the
/// ones in between. Best effort: a backup that cannot be removed stays.
fn prune_backups(file: &Path, prefix: &str) {
  let ours = backups(file, prefix);
  if ours.len() > KEPT_BACKUPS {
    for (_, path) in &ours[1..ours.len() - (KEPT_BACKUPS - 1)] {
      let _ = fs::remove_file(path);
    }
  }
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

  #[test]
  fn backups_keep_the_oldest_and_the_newest_and_nothing_not_ours() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("MEMORY.md");
    fs::write(dir.path().join("MEMORY.md.bak.notes"), "mine").unwrap();
    let saved: Vec<PathBuf> =
      (0..KEPT_BACKUPS + 5).map(|i| backup(&file, format!("state {i}").as_bytes()).unwrap()).collect();
    let mut left: Vec<String> = fs::read_dir(dir.path())
      .unwrap()
      .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
      .filter(|name| name.starts_with("MEMORY.md.bak."))
      .collect();
    left.sort();
    assert_eq!(left.len(), KEPT_BACKUPS + 1, "{left:?}");
    assert!(left.contains(&"MEMORY.md.bak.notes".to_string()), "a file we did not name is never removed");
    assert_eq!(fs::read(&saved[0]).unwrap(), b"state 0", "the first saved state stays");
    for newest in &saved[saved.len() - (KEPT_BACKUPS - 1)..] {
      assert!(newest.exists(), "{newest:?}");
    }
    assert!(!saved[1].exists());
  }
}

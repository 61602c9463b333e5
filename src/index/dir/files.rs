//! Writing and removing the index dir's files: the one atomic writer, and
//! the test of what is ours to remove (an index name and the record magic).

use super::name::{temp_path, IndexFile, Name, MARKER_TEXT};
use crate::fsread::{self, Links};
use crate::index::record;
use std::fs;
use std::io::Write;
use std::path::Path;

/// Temp file + rename, mode 0600: a reader sees the old record or the new
/// one, never a torn one, even with several Pi processes writing. No fsync,
/// unlike the curated store's writer (`store::file::write_atomic`): a record
/// is a disposable cache of a source that is still there, so one a crash
/// tore or lost fails its checksums (or is missing) and is rebuilt, while a
/// cold build that synced every record would wait on the disk thousands of
/// times. Memory files have no other copy: those are synced.
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
/// Rewrites `path`, an index file that already exists, in place: unlike
/// [`write_atomic`]'s rename, this leaves its dir's mtime as it was, which is
/// what a listing of that dir is proven by. Only a regular file with one
/// link and the index's magic is written (never through a link: it may be
/// someone's file); a reader meanwhile may see it torn, so only files whose
/// readers check a checksum and fall back are written this way. Unix only
/// (`Unsupported` elsewhere: opening without following a link needs it).
pub fn write_in_place(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
  #[cfg(unix)]
  {
    use std::io::{Read, Seek};
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let mut file = fs::OpenOptions::new().read(true).write(true).custom_flags(libc::O_NOFOLLOW).open(path)?;
    let metadata = file.metadata()?;
    let mut magic = [0u8; record::MAGIC_PREFIX.len()];
    let ours = metadata.file_type().is_file() && metadata.nlink() == 1 && file.read_exact(&mut magic).is_ok();
    if !ours || magic != *record::MAGIC_PREFIX {
      return Err(std::io::Error::other("not an index file"));
    }
    file.set_len(0)?;
    file.rewind()?;
    file.write_all(bytes)
  }
  #[cfg(not(unix))]
  {
    let _ = (path, bytes);
    Err(std::io::ErrorKind::Unsupported.into())
  }
}

/// Did the index write `dir/name`? Regular file (not followed), index name,
/// record magic (a temp file may hold any prefix of it, even nothing yet).
pub fn is_ours(dir: &Path, name: &str) -> bool {
  let Some(parsed) = Name::parse(name) else { return false };
  let path = dir.join(name);
  if !fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_file()) {
    return false;
  }
  let magic = record::MAGIC_PREFIX;
  let Ok((head, _)) = fsread::read_prefix(&path, magic.len() as u64, Links::Refuse) else { return false };
  if parsed.temp {
    let expected: &[u8] = if parsed.file == IndexFile::Marker { MARKER_TEXT } else { magic };
    expected.starts_with(&head)
  } else {
    head == magic
  }
}

/// Removes `dir/name` only if the index wrote it; `true` when removed.
pub fn remove_ours(dir: &Path, name: &str) -> bool {
  is_ours(dir, name) && fs::remove_file(dir.join(name)).is_ok()
}

#[cfg(test)]
mod tests {
  use super::*;

  /// A session file named like a temp file (`x.tmp.1.2.jsonl`) has a record
  /// like any other: it was not the index's (so its other tier's file and
  /// its orphan were never removed) while names were read from the first
  /// `.tmp.` on; a temp file is now only a name that ends like one.
  #[test]
  fn a_record_of_a_session_named_like_a_temp_file_is_ours() {
    let dir = tempfile::tempdir().unwrap();
    let record = "0123456789abcdef-x.tmp.1.2.jsonl.active.hot";
    fs::write(dir.path().join(record), record::MAGIC_PREFIX).unwrap();
    assert_eq!(Name::parse(record).map(|n| n.temp), Some(false));
    assert!(remove_ours(dir.path(), record));
    assert!(!dir.path().join(record).exists());
  }

  /// In place: the dir's stamp as it was; never through a link, nor into a
  /// file without the index's magic or with another name for it.
  #[cfg(unix)]
  #[test]
  fn an_index_file_is_rewritten_in_place_and_nothing_else_is() {
    let dir = tempfile::tempdir().unwrap();
    let stamp = || crate::session::source::StatStamp::of(&fs::metadata(dir.path()).unwrap());
    let ours = dir.path().join("ours");
    fs::write(&ours, b"PFMIDXSD old and longer").unwrap();
    let before = stamp();
    write_in_place(&ours, b"PFMIDXSD new").unwrap();
    assert_eq!(fs::read(&ours).unwrap(), b"PFMIDXSD new");
    assert_eq!(stamp(), before, "no name changed in the dir");
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    fs::write(&victim, b"PFMIDXSD someone's").unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let foreign = dir.path().join("foreign");
    fs::write(&foreign, b"not an index file").unwrap();
    let linked = dir.path().join("linked");
    fs::hard_link(&victim, &linked).unwrap();
    for path in [&link, &foreign, &linked] {
      assert!(write_in_place(path, b"PFMIDXSD x").is_err(), "{path:?}");
    }
    assert_eq!(fs::read(&victim).unwrap(), b"PFMIDXSD someone's");
    assert_eq!(fs::read(&foreign).unwrap(), b"not an index file");
    assert!(write_in_place(&dir.path().join("missing"), b"PFMIDXSD x").is_err());
    assert!(!dir.path().join("missing").exists(), "never created");
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
    assert_eq!(fs::read_dir(&index).unwrap().count(), 3, "the marker, the dir's listing, the record; no temp file");
    #[cfg(unix)]
    {
      use std::os::unix::fs::PermissionsExt;
      assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
      assert_eq!(fs::metadata(&index).unwrap().permissions().mode() & 0o777, 0o700);
    }
  }
}

//! Values stored once for the process's life: session file paths, and the
//! strings every record of a kind repeats (its policy, its project's cwd).
//!
//! At 100,000 sessions a resident cold head held its own copy of each: the
//! policy alone (~190 bytes) was 19 MB, and a fresh process allocated and
//! freed them 100,000 times while decoding heads. Interned, a head holds a
//! pointer, and equal values are the same pointer. Nothing is ever freed:
//! the tables only grow, by each distinct value a process meets, which the
//! files on disk bound (one path per session file; one policy per
//! configuration; one cwd per project). A reference count instead would
//! have every decoding thread increment the same shared counter per head.

use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashSet;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::path::Path;

/// `path`, stored once for the process's life: a session file's path is
/// interned when first listed, and the same path listed again is the same
/// reference (~100 bytes each: what one listing held before); a process
/// global, since listings of every index of the process share it.
pub fn path(path: &Path) -> &'static Path {
  let hash = hash_of(path.as_os_str().as_encoded_bytes());
  // Most paths asked for are known (the listing interned them; heads name
  // them again): found under a read lock, so threads decoding heads look
  // them up side by side instead of taking turns.
  if let Some(known) = paths().read().get(path, hash) {
    return known;
  }
  paths().write().intern(path, hash)
}

/// `dir`'s files `names`, each interned as [`path`] does. The paths not yet
/// interned are copied into one buffer, outside the table's lock, and
/// entered under one hold of it: a listing interns 100,000 at scale, and an
/// allocation each, made under the lock, had the listing's threads take
/// turns on it (and scattered the paths that decoding heads then compares).
pub fn paths_in<'a>(dir: &Path, names: impl ExactSizeIterator<Item = &'a str>) -> Vec<&'static Path> {
  let mut buffer = Joined::new(dir);
  let hashed: Vec<(u64, &str)> =
    names.map(|name| (hash_of(buffer.with(name).as_os_str().as_encoded_bytes()), name)).collect();
  let mut found: Vec<Option<&'static Path>> = {
    let table = paths().read();
    hashed.iter().map(|&(hash, name)| table.get(buffer.with(name), hash)).collect()
  };
  let new: Vec<usize> = (0..found.len()).filter(|&at| found[at].is_none()).collect();
  if new.is_empty() {
    return found.into_iter().flatten().collect();
  }
  let mut joined = Vec::new();
  let ends: Vec<usize> = new
    .iter()
    .map(|&at| {
      joined.extend_from_slice(buffer.with(hashed[at].1).as_os_str().as_encoded_bytes());
      joined.len()
    })
    .collect();
  let joined: &'static [u8] = Box::leak(joined.into_boxed_slice());
  let mut table = paths().write();
  table.reserve(new.len());
  let mut start = 0;
  for (&at, end) in new.iter().zip(ends) {
    // SAFETY: each slice is one whole path's `as_encoded_bytes`, as copied.
    let path = Path::new(unsafe { std::ffi::OsStr::from_encoded_bytes_unchecked(&joined[start..end]) });
    found[at] = Some(table.enter(path, hashed[at].0));
    start = end;
  }
  found.into_iter().flatten().collect()
}

/// A dir's path with one file name after it at a time: `dir.join(name)`
/// without a path per name. On Unix the name replaces the last one's bytes
/// (`PathBuf::pop` parses the path's components to find them).
struct Joined {
  #[cfg(unix)]
  bytes: Vec<u8>,
  #[cfg(unix)]
  dir_len: usize,
  #[cfg(not(unix))]
  path: std::path::PathBuf,
}

impl Joined {
  fn new(dir: &Path) -> Joined {
    #[cfg(unix)]
    {
      // `join("")` ends the dir with the separator `join(name)` puts before a name.
      let bytes = dir.join("").into_os_string().into_encoded_bytes();
      Joined { dir_len: bytes.len(), bytes }
    }
    #[cfg(not(unix))]
    Joined { path: dir.join("_") }
  }

  /// `dir.join(name)` for a name read from the dir (no separator in it).
  fn with(&mut self, name: &str) -> &Path {
    #[cfg(unix)]
    {
      use std::os::unix::ffi::OsStrExt;
      self.bytes.truncate(self.dir_len);
      self.bytes.extend_from_slice(name.as_bytes());
      Path::new(std::ffi::OsStr::from_bytes(&self.bytes))
    }
    #[cfg(not(unix))]
    {
      self.path.set_file_name(name);
      &self.path
    }
  }
}

/// Each of `files` interned, if it ever was, in order: looked up side by
/// side under one hold of the table's lock (for [`with_file_hint`]).
pub fn known_files<'a>(files: impl Iterator<Item = &'a str>) -> Vec<Option<&'static Path>> {
  let hashed: Vec<(u64, &str)> = files.map(|file| (hash_of(file.as_bytes()), file)).collect();
  let table = paths().read();
  hashed.iter().map(|&(hash, file)| table.get(Path::new(file), hash)).collect()
}

thread_local! {
  static FILE_HINT: std::cell::Cell<Option<&'static Path>> = const { std::cell::Cell::new(None) };
}

/// Runs `decode` with `hint` as the interned path its file field most
/// likely names ([`Interned::file`] takes it when the bytes are equal, and
/// looks the path up otherwise). A caller decoding many heads looks their
/// paths up first with [`known_files`]: a lookup per head, each under its
/// own hold of the lock and a cache miss or two away, was ~6 % of a fresh
/// process's first call at 100,000 sessions.
pub fn with_file_hint<R>(hint: Option<&'static Path>, decode: impl FnOnce() -> R) -> R {
  let before = FILE_HINT.replace(hint);
  let decoded = decode();
  FILE_HINT.set(before);
  decoded
}

/// `path` interned, if it ever was.
pub fn known_path(path: &Path) -> Option<&'static Path> {
  paths().read().get(path, hash_of(path.as_os_str().as_encoded_bytes()))
}

/// The path table: each path with its hash, so the table grows without
/// reading its paths again (a rehash of 100,000 paths, each a cache miss,
/// was most of interning a listing) and a lookup compares bytes only where
/// the whole hash matches.
#[derive(Default)]
struct Paths(hashbrown::HashTable<(u64, &'static std::ffi::OsStr)>);

fn hash_of(bytes: &[u8]) -> u64 {
  use std::hash::BuildHasher;
  rustc_hash::FxBuildHasher.hash_one(bytes)
}

impl Paths {
  /// `path` (whose hash is `hash`), if interned.
  fn get(&self, path: &Path, hash: u64) -> Option<&'static Path> {
    let bytes = path.as_os_str().as_encoded_bytes();
    let found = self.0.find(hash, |(known_hash, known)| *known_hash == hash && known.as_encoded_bytes() == bytes);
    found.map(|(_, known)| Path::new(*known))
  }

  fn intern(&mut self, path: &Path, hash: u64) -> &'static Path {
    if let Some(known) = self.get(path, hash) {
      return known;
    }
    self.insert_new(Box::leak(path.to_path_buf().into_boxed_path()), hash)
  }

  /// `path`, already stored for the process's life, unless an equal path is in.
  fn enter(&mut self, path: &'static Path, hash: u64) -> &'static Path {
    match self.get(path, hash) {
      Some(known) => known,
      None => self.insert_new(path, hash),
    }
  }

  /// `path`, stored for the process's life and not in the table.
  fn insert_new(&mut self, path: &'static Path, hash: u64) -> &'static Path {
    self.0.insert_unique(hash, (hash, path.as_os_str()), |(hash, _)| *hash);
    path
  }

  fn reserve(&mut self, additional: usize) {
    self.0.reserve(additional, |(hash, _)| *hash);
  }
}

fn paths() -> &'static RwLock<Paths> {
  static TABLE: std::sync::OnceLock<RwLock<Paths>> = std::sync::OnceLock::new();
  TABLE.get_or_init(Default::default)
}

/// A string stored once for the process's life (see the module doc); it
/// reads as a `&str`, and is written and read by serde as one, so records
/// holding it keep their format.
#[derive(Clone, Copy)]
pub struct Interned(&'static str);

impl Interned {
  /// The process's copy of `text`.
  pub fn new(text: &str) -> Interned {
    // The last few values this thread interned, asked before the table: a
    // thread decoding heads meets the same policy and cwd head after head,
    // and two threads would otherwise take turns on the table's lock.
    thread_local! {
      static RECENT: std::cell::RefCell<[Option<&'static str>; 4]> = const { std::cell::RefCell::new([None; 4]) };
    }
    if let Some(found) = RECENT.with(|recent| recent.borrow().iter().flatten().find(|known| ***known == *text).copied())
    {
      return Interned(found);
    }
    let found = {
      let mut table = strings().lock();
      match table.get(text) {
        Some(&known) => known,
        None => {
          let leaked: &'static str = Box::leak(Box::from(text));
          table.insert(leaked);
          leaked
        }
      }
    };
    RECENT.with(|recent| {
      let mut recent = recent.borrow_mut();
      recent.rotate_right(1);
      recent[0] = Some(found);
    });
    Interned(found)
  }

  /// A session file's path, interned as listings intern it ([`path`]).
  pub fn file(file: &str) -> Interned {
    let hinted = FILE_HINT.get().filter(|hint| hint.as_os_str().as_encoded_bytes() == file.as_bytes());
    // A path made from a `str` is that `str`'s bytes.
    Interned(hinted.unwrap_or_else(|| path(Path::new(file))).to_str().expect("made from a str"))
  }

  pub fn as_str(&self) -> &'static str {
    self.0
  }

  /// The same text as a path (a file's, see [`Interned::file`]).
  pub fn as_path(&self) -> &'static Path {
    Path::new(self.0)
  }
}

fn strings() -> &'static Mutex<FxHashSet<&'static str>> {
  static TABLE: std::sync::OnceLock<Mutex<FxHashSet<&'static str>>> = std::sync::OnceLock::new();
  TABLE.get_or_init(Default::default)
}

impl From<&str> for Interned {
  fn from(text: &str) -> Interned {
    Interned::new(text)
  }
}

/// The empty string (a damaged record's placeholder, see `record::Deferred`).
impl Default for Interned {
  fn default() -> Interned {
    Interned::new("")
  }
}

impl std::ops::Deref for Interned {
  type Target = str;

  fn deref(&self) -> &str {
    self.0
  }
}

impl AsRef<str> for Interned {
  fn as_ref(&self) -> &str {
    self.0
  }
}

impl AsRef<Path> for Interned {
  fn as_ref(&self) -> &Path {
    Path::new(self.0)
  }
}

impl PartialEq for Interned {
  /// Equal values interned in one table are one pointer; a file's and a
  /// string's tables may each hold the text, so the bytes decide otherwise.
  fn eq(&self, other: &Interned) -> bool {
    std::ptr::eq(self.0, other.0) || self.0 == other.0
  }
}

impl Eq for Interned {}

impl PartialEq<str> for Interned {
  fn eq(&self, other: &str) -> bool {
    self.0 == other
  }
}

impl PartialEq<&str> for Interned {
  fn eq(&self, other: &&str) -> bool {
    self.0 == *other
  }
}

impl PartialEq<String> for Interned {
  fn eq(&self, other: &String) -> bool {
    self.0 == other.as_str()
  }
}

impl std::fmt::Debug for Interned {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    self.0.fmt(f)
  }
}

impl std::fmt::Display for Interned {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    self.0.fmt(f)
  }
}

impl Serialize for Interned {
  fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(self.0)
  }
}

/// Read as a string and interned ([`Interned::new`]) without an
/// intermediate copy when the decoder can lend its input (postcard can).
fn visit<'de, D: Deserializer<'de>>(deserializer: D, intern: fn(&str) -> Interned) -> Result<Interned, D::Error> {
  struct Visit(fn(&str) -> Interned);
  impl serde::de::Visitor<'_> for Visit {
    type Value = Interned;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
      f.write_str("a string")
    }
    fn visit_str<E>(self, text: &str) -> Result<Interned, E> {
      Ok((self.0)(text))
    }
  }
  deserializer.deserialize_str(Visit(intern))
}

impl<'de> Deserialize<'de> for Interned {
  fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Interned, D::Error> {
    visit(deserializer, Interned::new)
  }
}

/// Serde for a session file's path field: interned as listings intern it.
pub mod file {
  use super::Interned;
  use serde::{Deserializer, Serialize, Serializer};

  pub fn serialize<S: Serializer>(file: &Interned, serializer: S) -> Result<S::Ok, S::Error> {
    file.serialize(serializer)
  }

  pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Interned, D::Error> {
    super::visit(deserializer, Interned::file)
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn equal_values_are_one_copy_however_they_were_made() {
    let made = Interned::new("interned-test-policy");
    let decoded: Interned = postcard::from_bytes(&postcard::to_allocvec(&made).unwrap()).unwrap();
    let from_json: Interned = serde_json::from_str("\"interned-test-policy\"").unwrap();
    let built = Interned::new(&String::from("interned-test-policy"));
    for other in [decoded, from_json, built] {
      assert!(std::ptr::eq(other.as_str(), made.as_str()));
    }
    assert_ne!(Interned::new("interned-test-other"), made);
    // The wire form is a plain string's: records keep their format.
    assert_eq!(postcard::to_allocvec(&made).unwrap(), postcard::to_allocvec("interned-test-policy").unwrap());
  }

  #[test]
  fn a_file_is_the_listings_own_path() {
    let listed = path(Path::new("/interned-test/sessions/a.jsonl"));
    let file = Interned::file("/interned-test/sessions/a.jsonl");
    assert!(std::ptr::eq(file.as_path(), listed));
    assert_eq!(file, Interned::new("/interned-test/sessions/a.jsonl"), "equal text, whichever table");
    assert_eq!(known_path(Path::new("/interned-test/sessions/never.jsonl")), None);
  }

  #[test]
  fn a_file_hint_is_taken_only_for_its_own_path() {
    let a = path(Path::new("/interned-test/hint/a.jsonl"));
    let b = path(Path::new("/interned-test/hint/b.jsonl"));
    let found = known_files(["/interned-test/hint/a.jsonl", "/interned-test/hint/none.jsonl"].into_iter());
    assert!(std::ptr::eq(found[0].unwrap(), a) && found[1].is_none());
    let decoded = with_file_hint(Some(a), || Interned::file("/interned-test/hint/b.jsonl"));
    assert!(std::ptr::eq(decoded.as_path(), b), "another path's hint is not taken");
    let decoded = with_file_hint(Some(a), || Interned::file("/interned-test/hint/a.jsonl"));
    assert!(std::ptr::eq(decoded.as_path(), a));
    let unknown = with_file_hint(Some(a), || Interned::file("/interned-test/hint/c.jsonl"));
    assert!(std::ptr::eq(unknown.as_path(), path(Path::new("/interned-test/hint/c.jsonl"))), "interned as without one");
    assert!(FILE_HINT.get().is_none(), "the hint ends with the decode");
  }

  #[test]
  fn a_dirs_files_are_their_joined_paths() {
    let names = ["a.jsonl", "b c.jsonl", "..x.jsonl"];
    for dir in ["/interned-test/dir", "/interned-test/slash/", "relative-dir", "", "/"] {
      let dir = Path::new(dir);
      let files = paths_in(dir, names.iter().copied());
      for (file, name) in files.iter().zip(names) {
        assert_eq!(file.as_os_str(), dir.join(name).as_os_str(), "{dir:?} {name}");
        assert!(std::ptr::eq(*file, path(&dir.join(name))), "interned as `path` interns it");
      }
    }
    // Listed again with a new name, and a name twice: each path one copy.
    let dir = Path::new("/interned-test/again");
    let first = paths_in(dir, ["a.jsonl"].into_iter());
    let again = paths_in(dir, ["b.jsonl", "a.jsonl", "b.jsonl"].into_iter());
    assert!(std::ptr::eq(again[1], first[0]) && std::ptr::eq(again[0], again[2]));
    assert_eq!(again[0], dir.join("b.jsonl"));
  }
}

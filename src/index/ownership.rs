//! Which index dir is ours (which of its files are: [`super::dir::is_ours`]).
//!
//! `memory.indexDir` can be any directory (a trusted project's settings may
//! set it), so the index proves ownership before it removes anything:
//!
//! - The directory is owned through a marker file, [`MARKER`], written when
//!   the index creates the directory, or when it adopts an existing one that
//!   is empty or holds nothing but index files. A directory with any other
//!   file and no marker is refused, and so are the agent dir, the sessions
//!   dir (and anything inside it), an ancestor of the agent dir, the home
//!   dir and `/`, by their real paths (a symlinked indexDir is resolved).
//! - Only a directory the index created is chmod'ed (0700).
//! - A file is the index's only when it is a regular file (never a symlink:
//!   `lstat`, `O_NOFOLLOW`), its name parses as an index file or a temp file
//!   of one (`super::dir`), and it starts with the record magic. Nothing else
//!   is ever removed, even inside an owned directory.

use super::dir::{is_ours, Names, MARKER, MARKER_TEXT};
use crate::error::{ContractError, ErrorCode};
use crate::fsread::{self, Links};
use crate::pi_path::home_dir;
use crate::session::discover::Discovery;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Why a directory cannot be the index dir.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
  Root,
  Home,
  AgentDir,
  AncestorOfAgentDir,
  SessionsDir,
  NotADirectory,
  ForeignFiles,
}

impl Refusal {
  pub fn as_str(self) -> &'static str {
    match self {
      Refusal::Root => "root",
      Refusal::Home => "home_dir",
      Refusal::AgentDir => "agent_dir",
      Refusal::AncestorOfAgentDir => "ancestor_of_agent_dir",
      Refusal::SessionsDir => "sessions_dir",
      Refusal::NotADirectory => "not_a_directory",
      Refusal::ForeignFiles => "foreign_files_without_marker",
    }
  }

  pub fn error(self, dir: &Path) -> ContractError {
    ContractError::new(
      ErrorCode::IndexDirRefused,
      format!(
        "memory.indexDir {} is refused ({}): the index only uses a directory it owns; nothing was changed.",
        dir.display(),
        self.as_str()
      ),
    )
    .with("indexDir", dir.to_string_lossy().into_owned())
    .with("reason", self.as_str())
  }
}

/// The real path of `path`, or of its deepest existing ancestor joined with
/// the rest, so a not-yet-created dir under a symlink is judged by where it
/// will be.
fn real(path: &Path) -> PathBuf {
  let mut rest = Vec::new();
  let mut at = path;
  loop {
    if let Ok(real) = fs::canonicalize(at) {
      return rest.iter().rev().fold(real, |acc, part| acc.join(part));
    }
    match (at.parent(), at.file_name()) {
      (Some(parent), Some(name)) => {
        rest.push(name.to_os_string());
        at = parent;
      }
      _ => return path.to_path_buf(),
    }
  }
}

/// Is `dir` a place the index may never own, whatever it holds?
fn forbidden(discovery: &Discovery, dir: &Path) -> Option<Refusal> {
  let dir = real(dir);
  let agent = real(&discovery.agent_dir);
  let sessions = real(&discovery.sessions_dir());
  if dir.parent().is_none() {
    Some(Refusal::Root)
  } else if dir == real(&home_dir()) {
    Some(Refusal::Home)
  } else if dir == agent {
    Some(Refusal::AgentDir)
  } else if agent.starts_with(&dir) {
    Some(Refusal::AncestorOfAgentDir)
  } else if dir.starts_with(&sessions) {
    Some(Refusal::SessionsDir)
  } else {
    None
  }
}

/// Checks (and, for an adoptable existing dir, claims) `dir` before a
/// synchronization touches it. A missing dir is fine: [`ensure_dir`]
/// creates and marks it.
pub fn check(discovery: &Discovery, dir: &Path, names: &Names) -> Result<(), ContractError> {
  if let Some(refusal) = forbidden(discovery, dir) {
    return Err(refusal.error(dir));
  }
  match fs::metadata(dir) {
    Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
    Ok(m) if !m.is_dir() => Err(Refusal::NotADirectory.error(dir)),
    _ if names.contains(MARKER) && has_marker(dir) => Ok(()),
    _ => adopt(dir).map_err(|_| Refusal::ForeignFiles.error(dir)),
  }
}

/// Is `dir` the index's already, marked as such ([`check`] without claiming
/// anything: what a call that only reads the index asks)?
pub fn is_marked(discovery: &Discovery, dir: &Path, names: &Names) -> bool {
  forbidden(discovery, dir).is_none() && names.contains(MARKER) && has_marker(dir)
}

fn has_marker(dir: &Path) -> bool {
  fsread::read_prefix(&dir.join(MARKER), MARKER_TEXT.len() as u64, Links::Refuse).is_ok_and(|(b, _)| b == MARKER_TEXT)
}

/// Marks an existing dir as the index's if everything in it is an index
/// file (an empty dir, or one written before markers existed).
fn adopt(dir: &Path) -> io::Result<()> {
  for entry in fs::read_dir(dir)? {
    let name = entry?.file_name();
    let name = name.to_string_lossy();
    // A writer may rename or remove its temp file meanwhile: gone is fine.
    let gone = || fs::symlink_metadata(dir.join(&*name)).is_err_and(|e| e.kind() == io::ErrorKind::NotFound);
    // Another thread or process may have just created and marked it.
    let marked = || name == MARKER && has_marker(dir);
    if !is_ours(dir, &name) && !gone() && !marked() {
      return Err(io::Error::new(io::ErrorKind::AlreadyExists, "foreign files"));
    }
  }
  write_marker(dir)
}

/// The marker, and the (empty) file the dir's own listing persists in: made
/// now, with the dir, it is in every listing of it (made later, it would
/// change the dir a listing of it was just proven by).
fn write_marker(dir: &Path) -> io::Result<()> {
  super::dir::write_atomic(&dir.join(MARKER), MARKER_TEXT)?;
  let _ = super::dir::listing::write_empty(&dir.join(super::dir::IndexFile::INDEX_DIR_LISTING));
  Ok(())
}

/// Creates the index dir if needed (0700 and the marker only for a dir it
/// created), or claims an existing adoptable one; an existing foreign dir
/// is an error and stays untouched.
pub fn ensure_dir(dir: &Path) -> io::Result<()> {
  if has_marker(dir) {
    return Ok(());
  }
  if let Some(parent) = dir.parent() {
    fs::create_dir_all(parent)?;
  }
  match fs::create_dir(dir) {
    Ok(()) => {
      #[cfg(unix)]
      {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
      }
      write_marker(dir)
    }
    // Another process may have created it a moment ago (empty or marked).
    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => adopt(dir),
    Err(e) => Err(e),
  }
}

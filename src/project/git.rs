//! Git evidence read from the filesystem, never by running `git`: the first
//! `.git` walking up from the cwd, the git dir it names (a linked worktree's
//! `.git` file says `gitdir: …`), the shared common dir (`commondir`, so
//! every worktree of a repository and a bare repository's checkouts find one
//! directory) and the remotes of its `config`. Every read is bounded
//! (`fsread`); anything unreadable or malformed is a [`Fallback`], never a
//! guess.

use super::config;
use super::Fallback;
use crate::fsread::{self, Links};
use std::fs;
use std::path::{Path, PathBuf};

/// A `.git` file or `commondir` holds one path.
const MAX_POINTER_BYTES: u64 = 4 * 1024;
/// A repository's `config`: remotes, branches, a few settings.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// The repository a directory belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repository {
  /// The git dir shared by every worktree (canonical).
  pub common_dir: PathBuf,
  /// The remotes of its `config`, in file order: (name, urls).
  pub remotes: Vec<(String, Vec<String>)>,
}

/// The repository of `cwd` (canonical), `Ok(None)` when no `.git` is found
/// up to the root.
pub fn discover(cwd: &Path) -> Result<Option<Repository>, Fallback> {
  let Some((worktree, dot_git)) = cwd.ancestors().find_map(|dir| {
    let dot_git = dir.join(".git");
    fs::symlink_metadata(&dot_git).ok().map(|_| (dir.to_path_buf(), dot_git))
  }) else {
    return Ok(None);
  };
  let git_dir = git_dir(&worktree, &dot_git)?;
  if !git_dir.join("HEAD").is_file() {
    return Err(Fallback::GitDirInvalid);
  }
  let common_dir = common_dir(&git_dir)?;
  let remotes = remotes(&common_dir.join("config"))?;
  Ok(Some(Repository { common_dir, remotes }))
}

/// The git dir a `.git` names: itself when a directory, else the `gitdir:`
/// line of the file (relative to the worktree).
fn git_dir(worktree: &Path, dot_git: &Path) -> Result<PathBuf, Fallback> {
  if dot_git.is_dir() {
    return fs::canonicalize(dot_git).map_err(|_| Fallback::GitDirInvalid);
  }
  let text = pointer(dot_git).ok_or(Fallback::GitFileMalformed)?;
  let target =
    text.strip_prefix("gitdir:").map(str::trim).filter(|t| !t.is_empty()).ok_or(Fallback::GitFileMalformed)?;
  let dir = fs::canonicalize(worktree.join(target)).map_err(|_| Fallback::GitDirMissing)?;
  if dir.is_dir() {
    Ok(dir)
  } else {
    Err(Fallback::GitDirMissing)
  }
}

/// The common dir: `commondir` (relative to the git dir) when present, else
/// the git dir itself.
fn common_dir(git_dir: &Path) -> Result<PathBuf, Fallback> {
  let file = git_dir.join("commondir");
  if fs::symlink_metadata(&file).is_err() {
    return Ok(git_dir.to_path_buf());
  }
  let text = pointer(&file).filter(|t| !t.is_empty()).ok_or(Fallback::CommonDirMalformed)?;
  let dir = fs::canonicalize(git_dir.join(text)).map_err(|_| Fallback::CommonDirMalformed)?;
  if dir.is_dir() {
    Ok(dir)
  } else {
    Err(Fallback::CommonDirMalformed)
  }
}

/// A one-path file's text, trimmed; `None` when unreadable, too large or not UTF-8.
fn pointer(path: &Path) -> Option<String> {
  let (bytes, _) = fsread::read_regular(path, MAX_POINTER_BYTES, Links::Follow).ok()?;
  String::from_utf8(bytes).ok().map(|text| text.trim().to_string())
}

fn remotes(path: &Path) -> Result<Vec<(String, Vec<String>)>, Fallback> {
  let bytes = match fsread::read_regular(path, MAX_CONFIG_BYTES, Links::Follow) {
    Ok((bytes, _)) => bytes,
    Err(error) if error.is_not_found() => return Ok(Vec::new()),
    Err(_) => return Err(Fallback::ConfigUnreadable),
  };
  let text = String::from_utf8(bytes).map_err(|_| Fallback::ConfigUnreadable)?;
  config::remotes(&text).ok_or(Fallback::ConfigMalformed)
}

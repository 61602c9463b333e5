//! The session dirs of one project. Pi keeps a dir per cwd
//! (`sessions/--<cwd>--/`), so a repository's main checkout, each linked
//! worktree and each clone has its own. The project scope reads every dir
//! whose sessions' cwd resolves to the current cwd's project identity
//! ([`crate::project`]: the git remote, else the git common dir) besides the
//! cwd's own dir. A cwd without git evidence, or with ambiguous evidence, is
//! its own project, as before identities: only its own dir. A similar name
//! is never the same project: identities are compared whole.
//!
//! Each dir's cwd (one session header) and each cwd's identity are looked
//! up once per process; which dirs there are is listed once per call.

use super::discover::read_header;
use crate::project::{self, Identity, Source};
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The current cwd's project: its identity and the session dirs that hold it.
#[derive(Debug)]
pub struct ProjectDirs {
  pub identity: Identity,
  /// Other dirs under `sessions/` whose cwd is this project (the cwd's own dir is not listed).
  pub dirs: HashSet<PathBuf>,
  /// Every dir's cwd was known (a dir with no session yet is looked at again).
  complete: bool,
}

impl ProjectDirs {
  /// Does a git identity (not the cwd rule) name this project?
  pub fn spans_checkouts(&self) -> bool {
    matches!(self.identity.source, Source::Remote | Source::CommonDir)
  }

  /// Is `cwd` (a session header's) this project?
  pub fn holds_cwd(&self, cwd: &str) -> bool {
    self.spans_checkouts() && !cwd.is_empty() && identity_of(cwd).key == self.identity.key
  }
}

/// Computed once per [`super::discover::Discovery`] (one call).
#[derive(Debug, Default, Clone)]
pub struct Cell(Arc<OnceLock<Arc<ProjectDirs>>>);

impl Cell {
  pub fn get(&self, sessions_dir: &Path, cwd: &Path, own_dir: &Path) -> Arc<ProjectDirs> {
    self.0.get_or_init(|| project_dirs(sessions_dir, cwd, own_dir)).clone()
  }
}

fn identities() -> &'static Mutex<FxHashMap<String, Arc<Identity>>> {
  static IDENTITIES: OnceLock<Mutex<FxHashMap<String, Arc<Identity>>>> = OnceLock::new();
  IDENTITIES.get_or_init(Default::default)
}

fn dir_cwds() -> &'static Mutex<FxHashMap<PathBuf, Option<String>>> {
  static DIR_CWDS: OnceLock<Mutex<FxHashMap<PathBuf, Option<String>>>> = OnceLock::new();
  DIR_CWDS.get_or_init(Default::default)
}

/// The identity of `cwd` without an explicit key (a key names only the
/// current cwd's own project: another checkout's settings are not read),
/// resolved once per process.
pub fn identity_of(cwd: &str) -> Arc<Identity> {
  if let Some(known) = identities().lock().get(cwd) {
    return known.clone();
  }
  let identity = Arc::new(project::resolve(Path::new(cwd), None));
  identities().lock().insert(cwd.to_string(), identity.clone());
  identity
}

/// The short name of the project a session header's `cwd` belongs to
/// (`repo`, a folder's name); `None` for an old header without a cwd.
pub fn project_name(cwd: &str) -> Option<String> {
  (!cwd.is_empty()).then(|| identity_of(cwd).name.clone())
}

/// The cwd a session dir is for: its first readable session's header
/// (`None` while it holds none; looked for again on a later call).
fn cwd_of_dir(dir: &Path) -> Option<String> {
  if let Some(Some(known)) = dir_cwds().lock().get(dir) {
    return Some(known.clone());
  }
  let mut names: Vec<PathBuf> = fs::read_dir(dir)
    .ok()?
    .filter_map(Result::ok)
    .map(|e| e.path())
    .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
    .collect();
  names.sort();
  let cwd = names.iter().take(4).find_map(|path| read_header(path)).map(|h| h.cwd).filter(|c| !c.is_empty());
  dir_cwds().lock().insert(dir.to_path_buf(), cwd.clone());
  cwd
}

/// The last answer per (sessions dir, cwd), with the sessions dir's mtime it
/// was listed at: a new session dir changes that mtime, so a warm call
/// stats one directory instead of listing them all.
type Known = FxHashMap<(PathBuf, PathBuf), (Option<std::time::SystemTime>, Arc<ProjectDirs>)>;

fn known() -> &'static Mutex<Known> {
  static KNOWN: OnceLock<Mutex<Known>> = OnceLock::new();
  KNOWN.get_or_init(Default::default)
}

fn project_dirs(sessions_dir: &Path, cwd: &Path, own_dir: &Path) -> Arc<ProjectDirs> {
  let key = (sessions_dir.to_path_buf(), cwd.to_path_buf());
  let listed_at = fs::metadata(sessions_dir).and_then(|m| m.modified()).ok();
  if let Some((at, dirs)) = known().lock().get(&key) {
    // A session dir whose first session had not been written yet is looked at again.
    if listed_at.is_some() && *at == listed_at && dirs.complete {
      return dirs.clone();
    }
  }
  let dirs = Arc::new(list(sessions_dir, cwd, own_dir));
  known().lock().insert(key, (listed_at, dirs.clone()));
  dirs
}

fn list(sessions_dir: &Path, cwd: &Path, own_dir: &Path) -> ProjectDirs {
  let identity = (*identity_of(&cwd.to_string_lossy())).clone();
  let mut found = ProjectDirs { identity, dirs: HashSet::new(), complete: true };
  if !found.spans_checkouts() {
    return found;
  }
  let Ok(read) = fs::read_dir(sessions_dir) else { return found };
  for entry in read.filter_map(Result::ok) {
    let dir = entry.path();
    if dir == own_dir || !entry.file_type().is_ok_and(|t| t.is_dir()) {
      continue;
    }
    match cwd_of_dir(&dir) {
      Some(other) if found.holds_cwd(&other) => {
        found.dirs.insert(dir);
      }
      Some(_) => {}
      None => found.complete = false,
    }
  }
  found
}

#[cfg(test)]
mod tests;

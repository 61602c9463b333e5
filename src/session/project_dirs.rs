//! The session dirs of one project. Pi keeps a dir per cwd
//! (`sessions/--<cwd>--/`), so a repository's main checkout, each linked
//! worktree and each clone has its own. The project scope reads every dir
//! whose sessions' cwd has the current cwd's project identity
//! ([`crate::project`]: an explicit key, the git remote, else the git common
//! dir) besides the cwd's own dir. Another cwd's identity is what
//! [`Known::of`] says: an explicit key recorded for it, else its evidence
//! now, else (a folder moved or deleted) the identity it had when last seen.
//! A cwd without git evidence or key, or with ambiguous evidence, is its own
//! project, as before identities: only its own dir. A similar name is never
//! the same project: identities are compared whole.
//!
//! Each dir's cwd (one session header) and each cwd's identity are looked
//! up once per process; which dirs there are is listed again when the
//! sessions dir or the map of identities seen changes.

use super::discover::read_header;
use crate::project::known::Known;
use crate::project::{Identity, Source};
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
  /// The identities seen, as this listing read them (and what it found to record).
  known: Known,
}

impl ProjectDirs {
  /// Does evidence or a key (not the cwd rule) name this project?
  pub fn spans_checkouts(&self) -> bool {
    self.identity.source != Source::Cwd
  }

  /// Is `cwd` (a session header's) this project?
  pub fn holds_cwd(&self, cwd: &str) -> bool {
    self.spans_checkouts() && !cwd.is_empty() && self.known.of(cwd).key == self.identity.key
  }

  /// The map of identities seen could not be read: moved folders and other
  /// checkouts' explicit keys are unknown (coverage says so).
  pub fn known_unreadable(&self) -> bool {
    self.known.unreadable()
  }

  /// Records the identities this project's lookups found (best effort).
  pub fn save(&self) {
    self.known.save();
  }
}

/// Computed once per [`super::discover::Discovery`] (one call).
#[derive(Debug, Default, Clone)]
pub struct Cell(Arc<OnceLock<Arc<ProjectDirs>>>);

/// Where one call's project is looked for.
pub struct Lookup<'a> {
  pub agent_dir: &'a Path,
  pub sessions_dir: &'a Path,
  pub cwd: &'a Path,
  /// The cwd's own session dir.
  pub own_dir: &'a Path,
  /// The explicit key in effect for the cwd ([`crate::project::chosen_key`]).
  pub key: Option<&'a str>,
}

impl Cell {
  pub fn get(&self, lookup: &Lookup<'_>) -> Arc<ProjectDirs> {
    self.0.get_or_init(|| project_dirs(lookup)).clone()
  }
}

fn dir_cwds() -> &'static Mutex<FxHashMap<PathBuf, Option<String>>> {
  static DIR_CWDS: OnceLock<Mutex<FxHashMap<PathBuf, Option<String>>>> = OnceLock::new();
  DIR_CWDS.get_or_init(Default::default)
}

/// The short name of the project a session header's `cwd` belongs to
/// (`repo`, a folder's name; [`Known::of`]); `None` for an old header without a cwd.
pub fn project_name(known: &Known, cwd: &str) -> Option<String> {
  (!cwd.is_empty()).then(|| known.of(cwd).name.clone())
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

/// The last answer per (sessions dir, cwd, explicit key), with the sessions
/// dir's mtime it was listed at: a new session dir changes that mtime, so a
/// warm call stats one directory (and the map of identities seen) instead of
/// listing them all.
type Listed = FxHashMap<(PathBuf, PathBuf, Option<String>), (Option<std::time::SystemTime>, Arc<ProjectDirs>)>;

fn listed() -> &'static Mutex<Listed> {
  static LISTED: OnceLock<Mutex<Listed>> = OnceLock::new();
  LISTED.get_or_init(Default::default)
}

fn project_dirs(lookup: &Lookup<'_>) -> Arc<ProjectDirs> {
  let key = (lookup.sessions_dir.to_path_buf(), lookup.cwd.to_path_buf(), lookup.key.map(str::to_string));
  let listed_at = fs::metadata(lookup.sessions_dir).and_then(|m| m.modified()).ok();
  if let Some((at, dirs)) = listed().lock().get(&key) {
    // A session dir whose first session had not been written yet is looked at again.
    if listed_at.is_some() && *at == listed_at && dirs.complete && dirs.known.is_current() {
      return dirs.clone();
    }
  }
  let dirs = Arc::new(list(lookup));
  dirs.save();
  listed().lock().insert(key, (listed_at, dirs.clone()));
  dirs
}

fn list(lookup: &Lookup<'_>) -> ProjectDirs {
  let known = Known::open(lookup.agent_dir);
  let identity = known.current(lookup.cwd, lookup.key);
  let mut found = ProjectDirs { identity, dirs: HashSet::new(), complete: true, known };
  if !found.spans_checkouts() {
    return found;
  }
  let (sessions_dir, own_dir) = (lookup.sessions_dir, lookup.own_dir);
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

//! Where sessions live and which ones a scope names.
//!
//! Layout (docs/sessions-and-index.md "Where sessions are looked for"): `<agentDir>/sessions/--<cwd>--/*.jsonl`,
//! the directory name being Pi's lossy cwd encoding. Session id and cwd are
//! always taken from the header, never decoded from names.

use super::named::not_found;
use super::parse::{parse_header_prefix, Header};
use super::source::StatStamp;
use crate::error::ContractError;
// Re-exported: the index resolves named sources with it too.
use super::project_dirs::{self, ProjectDirs};
pub use crate::pi_path::resolve_path;
use rayon::prelude::*;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How much of a file is read to find its header line.
const HEADER_PREFIX_BYTES: u64 = 1024 * 1024;

/// Pi's session directory name for a cwd: drop one leading separator,
/// replace every `/`, `\` and `:` with `-`, wrap in `--…--`.
pub fn encode_cwd(cwd: &str) -> String {
  let trimmed = cwd.strip_prefix(['/', '\\']).unwrap_or(cwd);
  format!("--{}--", trimmed.replace(['/', '\\', ':'], "-"))
}

/// Does a session whose header names `header_cwd` belong to `cwd`? By the
/// header's cwd (the directory name is lossy); old sessions without one
/// count as the directory's.
pub fn belongs_to(header_cwd: &str, cwd: &Path) -> bool {
  header_cwd.is_empty() || resolve_path(header_cwd, Path::new("/")) == cwd
}

/// A session file with its header and stat stamp.
#[derive(Debug, Clone)]
pub struct SessionFile {
  pub path: PathBuf,
  /// Shared: a lookup hands the same header to each call that asks.
  pub header: Arc<Header>,
  pub stamp: StatStamp,
}

impl SessionFile {
  /// Reads the header of `path`; `None` when it is not a Pi session.
  pub fn open(path: &Path) -> Option<SessionFile> {
    let metadata = fs::metadata(path).ok()?;
    if !metadata.is_file() {
      return None;
    }
    let header = Arc::new(read_header(path)?);
    Some(SessionFile { path: path.to_path_buf(), header, stamp: StatStamp::of(&metadata) })
  }
}

/// Reads just enough of the file to parse its header: chunk by chunk until
/// a complete first value is seen (headers are small; the cap bounds a
/// pathological file).
pub fn read_header(path: &Path) -> Option<Header> {
  try_read_header(path).ok().flatten()
}

/// [`read_header`], telling a file that cannot be read (`Err`: permissions,
/// I/O) from one that is not a Pi session (`Ok(None)`).
pub fn try_read_header(path: &Path) -> std::io::Result<Option<Header>> {
  use crate::fsread::{open_regular, Links, ReadError};
  const CHUNK: usize = 4096;
  let mut file = match open_regular(path, Links::Follow) {
    Ok((file, _)) => file,
    Err(ReadError::Io(e)) => return Err(e),
    Err(_) => return Ok(None),
  };
  let mut prefix = Vec::new();
  let mut chunk = [0u8; CHUNK];
  loop {
    let read = file.read(&mut chunk)?;
    prefix.extend_from_slice(&chunk[..read]);
    let ended = read == 0 || prefix.len() as u64 >= HEADER_PREFIX_BYTES;
    let has_line = prefix.iter().any(|b| *b != b'\n' && !b.is_ascii_whitespace()) && prefix.contains(&b'\n');
    if has_line || ended {
      if let Some(header) = parse_header_prefix(&prefix) {
        return Ok(Some(header));
      }
      // The first line may have been blank or malformed; Pi skips those.
      if ended {
        return Ok(None);
      }
    }
  }
}

fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
  let Ok(read) = fs::read_dir(dir) else { return Vec::new() };
  let mut files: Vec<PathBuf> = read
    .filter_map(Result::ok)
    .map(|entry| entry.path())
    .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
    .collect();
  files.sort();
  files
}

fn open_all(paths: Vec<PathBuf>) -> Vec<SessionFile> {
  let mut sessions: Vec<SessionFile> = paths.par_iter().filter_map(|p| SessionFile::open(p)).collect();
  sort_newest_first(&mut sessions);
  sessions
}

/// Newest first by mtime, then by path, so listings are deterministic.
pub fn sort_newest_first(sessions: &mut [SessionFile]) {
  sessions.sort_by(|a, b| b.stamp.mtime_ns.cmp(&a.stamp.mtime_ns).then_with(|| a.path.cmp(&b.path)));
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
  Session,
  Project,
  Global,
  Explicit(String),
}

impl Scope {
  /// Parses a scope, accepting the reference's aliases.
  pub fn parse(text: &str) -> Option<Scope> {
    match text {
      "session" | "current" => Some(Scope::Session),
      "project" | "cwd" | "repo" | "directory" | "folder" => Some(Scope::Project),
      "global" | "all" => Some(Scope::Global),
      _ => text.strip_prefix("session:").filter(|s| !s.is_empty()).map(|s| Scope::Explicit(s.to_string())),
    }
  }

  pub fn label(&self) -> String {
    match self {
      Scope::Session => "session".into(),
      Scope::Project => "project".into(),
      Scope::Global => "global".into(),
      Scope::Explicit(target) => format!("session:{target}"),
    }
  }
}

/// Where to look: the agent dir, Pi's custom session dir, the caller's cwd
/// and Pi's live session file.
#[derive(Debug, Clone)]
pub struct Discovery {
  pub agent_dir: PathBuf,
  pub cwd: PathBuf,
  pub session_dir: Option<PathBuf>,
  pub live_file: Option<PathBuf>,
  /// The explicit project key in effect for the cwd (`memory.projectKey`,
  /// `PI_FABRIC_MEMORY_PROJECT_KEY`): checkouts that ran under the same key
  /// are one project (the map of identities seen records it per cwd).
  pub project_key: Option<String>,
  /// The cwd's project and its session dirs, found once per call.
  pub project: project_dirs::Cell,
}

/// Sorted, without repeats (a custom session dir may be one of the default ones).
fn unique(mut paths: Vec<PathBuf>) -> Vec<PathBuf> {
  paths.sort();
  paths.dedup();
  paths
}

impl Discovery {
  pub fn sessions_dir(&self) -> PathBuf {
    self.agent_dir.join("sessions")
  }

  pub fn project_dir(&self) -> PathBuf {
    self.sessions_dir().join(encode_cwd(&self.cwd.to_string_lossy()))
  }

  /// The cwd's project (its identity) and the other session dirs of it:
  /// the dirs of the repository's other checkouts ([`project_dirs`]).
  pub fn project_dirs(&self) -> Arc<ProjectDirs> {
    let (sessions_dir, own_dir) = (self.sessions_dir(), self.project_dir());
    self.project.get(&project_dirs::Lookup {
      agent_dir: &self.agent_dir,
      sessions_dir: &sessions_dir,
      cwd: &self.cwd,
      own_dir: &own_dir,
      key: self.project_key.as_deref(),
    })
  }

  /// Is `dir` a session dir of the project whose own dir is `project_dir`
  /// (the cwd's, [`Discovery::project_dir`]): that dir, or one of another
  /// checkout of the same repository?
  fn project_holds_dir(&self, project_dir: &Path, dir: &Path) -> bool {
    dir == project_dir || self.project_dirs().dirs.contains(dir)
  }

  /// Can the session at `path` belong to the project whose own dir is
  /// `project_dir`, before its header is read? Only the project's session
  /// dirs and the flat custom dir hold its sessions (see [`Discovery::in_project`]).
  pub fn may_hold(&self, project_dir: &Path, path: &Path) -> bool {
    let Some(parent) = path.parent() else { return false };
    self.project_holds_dir(project_dir, parent) || Some(parent) == self.session_dir.as_deref()
  }

  /// Is the session at `path`, whose header names `header_cwd`, one of this
  /// cwd's project, whose own dir is `project_dir` ([`Discovery::project_dir`])?
  /// In the default layout its directory decides, whatever its header says (a
  /// session moved into this cwd's dir is this cwd's, as Pi's
  /// `SessionManager.list` lists it; a dir of another checkout of the same
  /// repository is this project's); in the flat custom session dir, which
  /// holds every cwd's sessions, only a header cwd equal to this cwd, or of
  /// the same project, does.
  /// `header_cwd` is asked only for a session in the flat custom dir (a
  /// record's is decoded on first use).
  pub fn in_project<'a>(&self, project_dir: &Path, path: &Path, header_cwd: impl FnOnce() -> &'a str) -> bool {
    let Some(parent) = path.parent() else { return false };
    if self.project_holds_dir(project_dir, parent) {
      return true;
    }
    if Some(parent) != self.session_dir.as_deref() {
      return false;
    }
    let header_cwd = header_cwd();
    !header_cwd.is_empty() && (belongs_to(header_cwd, &self.cwd) || self.project_dirs().holds_cwd(header_cwd))
  }

  /// Sessions recorded for this cwd (by header; the directory name is lossy).
  pub fn project(&self) -> Vec<SessionFile> {
    let project_dir = self.project_dir();
    let mut files = jsonl_files(&project_dir);
    files.extend(self.custom_files());
    let mut sessions = open_all(unique(files));
    sessions.retain(|s| self.in_project(&project_dir, &s.path, || &s.header.cwd));
    // The custom dir's header cwds were looked up: record what they showed.
    self.project_dirs().save();
    sessions
  }

  fn custom_files(&self) -> Vec<PathBuf> {
    self.session_dir.as_deref().map(jsonl_files).unwrap_or_default()
  }

  /// The live session if it is on disk, else the newest session of the cwd.
  pub fn current(&self) -> Option<SessionFile> {
    if let Some(live) = self.live_file.as_deref().and_then(SessionFile::open) {
      return Some(live);
    }
    self.project().into_iter().next()
  }

  /// `session:<path>`: the session at the path `target` names, when it
  /// looks like one (a separator or `.jsonl`) and something is there;
  /// `None` when the target may still be an id ([`super::named`]).
  pub fn open_path(&self, target: &str) -> Option<Result<SessionFile, ContractError>> {
    let looks_like_path = target.contains('/') || target.contains('\\') || target.ends_with(".jsonl");
    looks_like_path.then(|| open_named(&resolve_path(target, &self.cwd), target)).flatten()
  }
}

/// A path that exists: a session, `source_unavailable` when it is not a
/// regular file or cannot be read (with the path and why), or
/// `session_not_found` when it is readable but not a Pi session. `None`
/// when nothing is there, so the target may still be an id.
fn open_named(path: &Path, target: &str) -> Option<Result<SessionFile, ContractError>> {
  use crate::fsread::ReadError;
  let metadata = fs::metadata(path).ok()?;
  if !metadata.is_file() {
    return Some(Err(super::read_failed(path, &ReadError::NotRegular)));
  }
  Some(match try_read_header(path) {
    Ok(Some(header)) => {
      Ok(SessionFile { path: path.to_path_buf(), header: Arc::new(header), stamp: StatStamp::of(&metadata) })
    }
    Ok(None) => Err(not_found(target)),
    Err(error) => Err(super::read_failed(path, &ReadError::Io(error))),
  })
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn encodes_cwd_like_pi() {
    assert_eq!(encode_cwd("/Users/badlogic/workspaces/pi-mono"), "--Users-badlogic-workspaces-pi-mono--");
    assert_eq!(encode_cwd("C:\\Users\\me\\proj"), "--C--Users-me-proj--");
    assert_eq!(encode_cwd("/a b/c.d"), "--a b-c.d--");
  }

  #[test]
  fn parses_scopes_and_aliases() {
    assert_eq!(Scope::parse("repo"), Some(Scope::Project));
    assert_eq!(Scope::parse("session:abc"), Some(Scope::Explicit("abc".into())));
    assert_eq!(Scope::parse("session:"), None);
    assert_eq!(Scope::parse("everything"), None);
  }
}

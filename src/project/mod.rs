//! Project identity: which project a directory belongs to, the same for
//! every checkout of one repository (main checkout, linked worktrees, clones
//! elsewhere, a folder moved) and different for every other repository.
//!
//! Resolved in this order (the first that applies wins):
//! 1. an explicit key (`memory.projectKey`, or `PI_FABRIC_MEMORY_PROJECT_KEY`);
//! 2. the normalized git remote: `upstream`, else `origin`, else the first
//!    (`remote::normalize`);
//! 3. the git common dir (`git::discover`), shared by linked worktrees and
//!    a bare repository's checkouts;
//! 4. the cwd itself (what `project` meant before identities).
//!
//! Evidence is read from the filesystem, bounded, never by running `git`.
//! Ambiguous evidence (unreadable or malformed git metadata, remotes whose
//! urls disagree) fails closed to the cwd rule, and the identity says why
//! ([`Fallback`]). The key is versioned and opaque (`v1:` + 32 hex digits of
//! SHA-256 over the rule and its evidence): a later version can change the
//! rules without old keys ever matching new ones by accident.

mod config;
#[cfg(test)]
pub(crate) mod fixtures;
mod git;
pub mod known;
mod remote;

use crate::error::CoreError;
use crate::threat::{self, Scope};
use remote::Remote;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;

/// The version prefix of every key this build resolves.
pub const VERSION: &str = "v1";
/// Longest explicit key, in bytes (a name, not a document).
pub const MAX_EXPLICIT_KEY_BYTES: usize = 256;
/// Longest short name, in characters (it names a directory and a prompt block).
const MAX_NAME_CHARS: usize = 40;
/// Hex digits of the key in a directory name: 64 bits, enough to keep a few
/// thousand projects of one user apart.
const DIR_HASH_DIGITS: usize = 16;

/// Which rule decided the identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "camelCase")]
#[strum(serialize_all = "camelCase")]
pub enum Source {
  Explicit,
  Remote,
  CommonDir,
  Cwd,
}

/// Why the cwd rule decided although the cwd may be in a repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, strum::IntoStaticStr, strum::EnumIter)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Fallback {
  /// The cwd does not exist (or cannot be resolved): no evidence to read.
  CwdMissing,
  /// A `.git` file that is not one `gitdir: <path>` line, or unreadable.
  GitFileMalformed,
  /// The git dir a `.git` file names does not exist.
  GitDirMissing,
  /// A `.git` that holds no `HEAD`: not a git dir.
  GitDirInvalid,
  /// A `commondir` file that is unreadable or names no directory.
  CommonDirMalformed,
  /// The repository's `config` exists but cannot be read (too large, not UTF-8, no permission).
  ConfigUnreadable,
  /// The repository's `config` is not one git could read.
  ConfigMalformed,
  /// The chosen remote's url is not a url git could use.
  RemoteMalformed,
  /// The chosen remote lists urls naming different repositories.
  RemotesConflict,
}

impl Fallback {
  pub fn as_str(self) -> &'static str {
    self.into()
  }
}

/// A resolved project identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Identity {
  /// `v1:<32 hex digits>`: equal keys are the same project.
  pub key: String,
  /// A short human name (`repo`), lowercase `[a-z0-9._-]`.
  pub name: String,
  pub source: Source,
  /// What the rule read: the explicit key, `host/org/repo`, the common dir, the cwd.
  pub evidence: String,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub fallback: Option<Fallback>,
}

impl Identity {
  fn new(source: Source, evidence: String, name: &str, fallback: Option<Fallback>) -> Identity {
    let tag: &'static str = source.into();
    let digest = Sha256::digest(format!("{tag}\0{evidence}").as_bytes());
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    Identity { key: format!("{VERSION}:{hex}"), name: short_name(name), source, evidence, fallback }
  }

  /// A directory name for this project's files: the short name and the
  /// key's first 16 hex digits (`repo-0123456789abcdef`). Derived from the
  /// key and name only, so it is the same in every process and on every
  /// platform; lowercase ASCII, so case-insensitive filesystems agree.
  pub fn dir_name(&self) -> String {
    dir_name(&self.key, &self.name).unwrap_or_default()
  }
}

/// The directory name of a key and name (see [`Identity::dir_name`]);
/// `None` when the key is not one this version makes.
pub fn dir_name(key: &str, name: &str) -> Option<String> {
  let hex = key.strip_prefix(VERSION)?.strip_prefix(':')?;
  let valid = hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
  valid.then(|| format!("{}-{}", short_name(name), &hex[..DIR_HASH_DIGITS]))
}

/// `[a-z0-9._-]`, at most 40 characters, no leading dot; `project` when
/// nothing is left or the name reads as a prompt injection (it labels a
/// block of the system prompt).
pub fn short_name(text: &str) -> String {
  let mut name = String::new();
  for c in text.chars().flat_map(char::to_lowercase) {
    let keep = c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-';
    if keep {
      name.push(c);
    } else if !name.ends_with('-') {
      name.push('-');
    }
  }
  let name: String = name.trim_matches(|c| c == '-' || c == '.').chars().take(MAX_NAME_CHARS).collect();
  let name = name.trim_end_matches(['-', '.']);
  if name.is_empty() || !threat::scan(&name.replace(['-', '_', '.'], " "), Scope::Strict).is_empty() {
    return "project".into();
  }
  name.to_string()
}

/// An explicit key as given: trimmed, non-empty, at most
/// [`MAX_EXPLICIT_KEY_BYTES`], no control characters.
pub fn explicit_key(text: &str, what: &str) -> Result<String, CoreError> {
  let key = text.trim();
  if key.is_empty() || key.len() > MAX_EXPLICIT_KEY_BYTES || key.chars().any(char::is_control) {
    return Err(CoreError::invalid(format!(
      "{what} must be a non-empty name of at most {MAX_EXPLICIT_KEY_BYTES} bytes without control characters, got {text:?}"
    )));
  }
  Ok(key.to_string())
}

/// The environment variable that names the project explicitly.
pub const PROJECT_KEY_ENV: &str = "PI_FABRIC_MEMORY_PROJECT_KEY";

/// The explicit key in effect: `PI_FABRIC_MEMORY_PROJECT_KEY` when set (the
/// environment wins, as Pi's own variables win over its settings), else the
/// setting's (`memory.projectKey`); an invalid one is `invalid_argument`
/// naming where it came from.
pub fn chosen_key(setting: Option<&str>) -> Result<Option<String>, CoreError> {
  match std::env::var(PROJECT_KEY_ENV).ok().filter(|v| !v.is_empty()) {
    Some(env) => explicit_key(&env, PROJECT_KEY_ENV).map(Some),
    None => setting.map(|key| explicit_key(key, "projectKey")).transpose(),
  }
}

/// The identity of `cwd` (see the module comment); `explicit` is an
/// already validated key ([`explicit_key`]).
pub fn resolve(cwd: &Path, explicit: Option<&str>) -> Identity {
  if let Some(key) = explicit {
    return Identity::new(Source::Explicit, key.to_string(), key, None);
  }
  let by_cwd = |fallback| {
    let name = cwd.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Identity::new(Source::Cwd, cwd.to_string_lossy().into_owned(), &name, fallback)
  };
  let Ok(real) = std::fs::canonicalize(cwd) else { return by_cwd(Some(Fallback::CwdMissing)) };
  let repository = match git::discover(&real) {
    Ok(Some(repository)) => repository,
    Ok(None) => return by_cwd(None),
    Err(fallback) => return by_cwd(Some(fallback)),
  };
  match chosen_remote(&repository.remotes) {
    Ok(Some(url)) => {
      let name = url.rsplit('/').next().unwrap_or_default().to_string();
      Identity::new(Source::Remote, url, &name, None)
    }
    Ok(None) => {
      let dir = &repository.common_dir;
      let repo_dir = if dir.file_name().is_some_and(|n| n == ".git") { dir.parent().unwrap_or(dir) } else { dir };
      let name = repo_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
      let name = name.strip_suffix(".git").unwrap_or(&name).to_string();
      Identity::new(Source::CommonDir, dir.to_string_lossy().into_owned(), &name, None)
    }
    Err(fallback) => by_cwd(Some(fallback)),
  }
}

/// `upstream`, else `origin`, else the first remote with a url: its
/// normalized url, `None` when there is none or it is a local path.
fn chosen_remote(remotes: &[(String, Vec<String>)]) -> Result<Option<String>, Fallback> {
  let named = |name: &str| remotes.iter().find(|(n, urls)| n == name && !urls.is_empty());
  let Some((_, urls)) =
    named("upstream").or_else(|| named("origin")).or_else(|| remotes.iter().find(|(_, u)| !u.is_empty()))
  else {
    return Ok(None);
  };
  let mut found: Option<String> = None;
  for url in urls {
    match remote::normalize(url) {
      Remote::Malformed => return Err(Fallback::RemoteMalformed),
      Remote::Local => {}
      Remote::Network(normalized) => match &found {
        Some(first) if *first != normalized => return Err(Fallback::RemotesConflict),
        _ => found = Some(normalized),
      },
    }
  }
  Ok(found)
}

#[cfg(test)]
mod tests;

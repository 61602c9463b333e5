//! Paths the user gives Pi (`PI_CODING_AGENT_DIR`, `--agent-dir`,
//! `--session-dir`, `sessionDir`), read as Pi reads them. The one copy of
//! these rules: the shim calls them through the addon (`expandPiPath`,
//! `piAgentDir`), and `__test__/pi-path.test.mts` holds them equal to Pi's
//! own `normalizePath` / `getAgentDir`.

use std::path::{Component, Path, PathBuf};

/// Pi's `getAgentDir()` for a `PI_CODING_AGENT_DIR` value: unset or empty is
/// `~/.pi/agent`, anything else [`expand_home`].
pub fn agent_dir_from(env: Option<&str>) -> PathBuf {
  match env {
    Some(dir) if !dir.is_empty() => expand_home(dir),
    _ => home_dir().join(".pi").join("agent"),
  }
}

/// [`agent_dir_from`] this process's `PI_CODING_AGENT_DIR`.
pub fn default_agent_dir() -> PathBuf {
  agent_dir_from(std::env::var("PI_CODING_AGENT_DIR").ok().as_deref())
}

pub fn home_dir() -> PathBuf {
  std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/"))
}

/// Pi's `normalizePath`: `~` is the home dir and `~/…` (`~\…` on Windows)
/// a path under it, joined as Node's `path.join` (lexically normalized);
/// then a `file://` URL is its path. Anything else is kept as given
/// (relative stays relative). A file URL Node refuses (another host, an
/// encoded `/`, a bad escape) is kept as given too: Pi itself would not start.
pub fn expand_home(path: &str) -> PathBuf {
  if path == "~" {
    return home_dir();
  }
  let tilde = path.strip_prefix("~/").or_else(|| path.strip_prefix("~\\").filter(|_| cfg!(windows)));
  if let Some(rest) = tilde {
    // `path.join` keeps a trailing separator and never restarts at a `/`.
    let mut joined = normalize(&home_dir().join(rest.trim_start_matches('/')));
    if rest.ends_with('/') {
      joined.push("");
    }
    return joined;
  }
  path.strip_prefix("file://").and_then(file_url_path).unwrap_or_else(|| PathBuf::from(path))
}

/// `path.resolve(base, path)` after [`expand_home`], without touching the
/// filesystem (no symlink resolution, as Pi).
pub fn resolve_path(path: &str, base: &Path) -> PathBuf {
  let expanded = expand_home(path);
  normalize(&if expanded.is_absolute() { expanded } else { base.join(expanded) })
}

/// `.` dropped and `..` taken back, lexically, as Node's `path.normalize`.
fn normalize(path: &Path) -> PathBuf {
  let mut out = PathBuf::new();
  for component in path.components() {
    match component {
      Component::ParentDir => {
        out.pop();
      }
      Component::CurDir => {}
      other => out.push(other.as_os_str()),
    }
  }
  out
}

/// What follows `file://`, as Node's `fileURLToPath` reads it on POSIX
/// (the WHATWG parse of a `file:` URL): tabs and newlines dropped, trailing
/// spaces and controls trimmed, `\` as `/`, query and fragment cut, host
/// empty or `localhost`, dot segments (also `%2e`) resolved, escapes decoded.
fn file_url_path(rest: &str) -> Option<PathBuf> {
  let cleaned: String = rest.chars().filter(|c| !matches!(c, '\t' | '\n' | '\r')).collect();
  let cleaned = cleaned.trim_end_matches(|c: char| c <= ' ').replace('\\', "/");
  let url = cleaned.split(['?', '#']).next().unwrap_or_default();
  let (host, path) = url.split_at(url.find('/').unwrap_or(url.len()));
  if !host.is_empty() && !host.eq_ignore_ascii_case("localhost") {
    return None;
  }
  let mut segments: Vec<&str> = Vec::new();
  let parts: Vec<&str> = path.split('/').skip(1).collect();
  for (i, segment) in parts.iter().enumerate() {
    let last = i + 1 == parts.len();
    match segment.to_ascii_lowercase().as_str() {
      "." | "%2e" => {}
      ".." | ".%2e" | "%2e." | "%2e%2e" => {
        segments.pop();
      }
      _ => {
        segments.push(segment);
        continue;
      }
    }
    if last {
      segments.push("");
    }
  }
  let joined = format!("/{}", segments.join("/"));
  if joined.to_ascii_lowercase().contains("%2f") {
    return None;
  }
  percent_decode(&joined).map(PathBuf::from)
}

/// `decodeURIComponent`: `None` on a malformed escape or invalid UTF-8.
pub(crate) fn percent_decode(text: &str) -> Option<String> {
  let bytes = text.as_bytes();
  let mut out = Vec::with_capacity(bytes.len());
  let mut i = 0;
  while i < bytes.len() {
    if bytes[i] == b'%' {
      let hex = text.get(i + 1..i + 3).filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))?;
      out.push(u8::from_str_radix(hex, 16).ok()?);
      i += 3;
    } else {
      out.push(bytes[i]);
      i += 1;
    }
  }
  String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
  use super::*;

  fn home() -> PathBuf {
    home_dir()
  }

  #[test]
  fn tilde_only_at_the_start_and_joined_as_node() {
    assert_eq!(expand_home("~"), home());
    assert_eq!(expand_home("~/a/./b/../c"), home().join("a/c"));
    assert_eq!(expand_home("~//a"), home().join("a"));
    assert_eq!(expand_home("~/a/").to_str(), Some(format!("{}/a/", home().display()).as_str()));
    assert_eq!(expand_home("a/~/b"), PathBuf::from("a/~/b"));
    assert_eq!(expand_home("~user/x"), PathBuf::from("~user/x"));
    assert_eq!(expand_home("rel/dir"), PathBuf::from("rel/dir"));
  }

  #[test]
  fn file_urls_as_node_reads_them() {
    assert_eq!(expand_home("file:///x/y"), PathBuf::from("/x/y"));
    assert_eq!(expand_home("file://localhost/x"), PathBuf::from("/x"));
    assert_eq!(expand_home("file:///a%20b/%C3%A9"), PathBuf::from("/a b/é"));
    assert_eq!(expand_home("file:///a/./b/../c?q#f"), PathBuf::from("/a/c"));
    assert_eq!(expand_home("file:///a/%2e%2E/b"), PathBuf::from("/b"));
    assert_eq!(expand_home("file:///a/.."), PathBuf::from("/"));
    assert_eq!(expand_home("file://"), PathBuf::from("/"));
    // The tilde rule runs first, as in Pi: no `~` inside a URL.
    assert_eq!(expand_home("file:///~/x"), PathBuf::from("/~/x"));
  }

  #[test]
  fn file_urls_node_refuses_are_kept_as_given() {
    for refused in ["file://host/x", "file:///a%2Fb", "file:///a%zz", "file:///a%+1", "file:///%ff"] {
      assert_eq!(expand_home(refused), PathBuf::from(refused), "{refused}");
    }
  }

  #[test]
  fn the_agent_dir_from_the_environment_value() {
    assert_eq!(agent_dir_from(None), home().join(".pi/agent"));
    assert_eq!(agent_dir_from(Some("")), home().join(".pi/agent"));
    assert_eq!(agent_dir_from(Some("~/pi")), home().join("pi"));
    assert_eq!(agent_dir_from(Some("file:///srv/pi")), PathBuf::from("/srv/pi"));
  }

  #[test]
  fn resolves_paths_without_the_filesystem() {
    assert_eq!(resolve_path("../x/./y", Path::new("/a/b")), PathBuf::from("/a/x/y"));
    assert_eq!(resolve_path("/abs/", Path::new("/a")), PathBuf::from("/abs"));
  }
}

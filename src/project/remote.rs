//! A git remote URL as project evidence: `host/org/repo`, lowercase, with
//! the scheme, credentials, port, a trailing `/` and `.git` stripped, so the
//! https, ssh:// and scp-like (`git@host:org/repo`) forms of one repository
//! are equal and `org/repo` never equals `org/repo2` or `other/repo`.

/// What a remote URL says about the project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Remote {
  /// A network repository: `host/path`, normalized.
  Network(String),
  /// A local path or `file://` URL: names a directory, not a repository
  /// anyone else shares, so it is no evidence (the next rule decides).
  Local,
  /// Not a URL git could use: the evidence is ambiguous.
  Malformed,
}

/// Normalizes one remote URL (see the module comment).
pub fn normalize(url: &str) -> Remote {
  let url = url.trim();
  if url.is_empty() || url.chars().any(|c| c.is_control() || c.is_whitespace()) {
    return Remote::Malformed;
  }
  if let Some((scheme, rest)) = url.split_once("://") {
    return with_scheme(&scheme.to_ascii_lowercase(), rest);
  }
  if is_local_path(url) {
    return Remote::Local;
  }
  // scp-like: `[user@]host:path`, the colon before any slash.
  match url.split_once(':') {
    Some((authority, path)) if !authority.contains('/') => join(host_of(authority), path),
    _ => Remote::Local,
  }
}

fn with_scheme(scheme: &str, rest: &str) -> Remote {
  match scheme {
    "file" => Remote::Local,
    "http" | "https" | "ssh" | "git" | "git+ssh" | "ssh+git" | "ftp" | "ftps" => {
      let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
      join(host_of(authority), path)
    }
    _ => Remote::Malformed,
  }
}

/// A path git would open locally: absolute, relative to the repository, or
/// a Windows drive path (whose colon is not scp syntax).
fn is_local_path(url: &str) -> bool {
  let bytes = url.as_bytes();
  let drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
  url.starts_with('/') || url.starts_with('.') || url.starts_with('\\') || url.starts_with('~') || drive
}

/// The host of an authority: credentials (up to the last `@`) and the port
/// removed, lowercase. An IPv6 literal keeps its brackets.
fn host_of(authority: &str) -> Option<String> {
  let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
  let host = match host.strip_prefix('[') {
    Some(v6) => &host[..v6.find(']')? + 2],
    None => host.split_once(':').map_or(host, |(name, _)| name),
  };
  (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// `host/path` with the path's empty segments, a leading `~` segment's
/// tilde, a trailing `.git` and the case normalized; `..` is malformed.
fn join(host: Option<String>, path: &str) -> Remote {
  let Some(host) = host else { return Remote::Malformed };
  let path = path.to_ascii_lowercase();
  let mut segments: Vec<&str> = path.split(['/', '\\']).filter(|s| !s.is_empty() && *s != ".").collect();
  if segments.first().is_some_and(|s| s.starts_with('~')) {
    segments[0] = &segments[0][1..];
  }
  if let Some(last) = segments.last_mut() {
    *last = last.strip_suffix(".git").unwrap_or(last);
  }
  segments.retain(|s| !s.is_empty());
  if segments.is_empty() || segments.contains(&"..") {
    return Remote::Malformed;
  }
  Remote::Network(format!("{host}/{}", segments.join("/")))
}

#[cfg(test)]
mod tests {
  use super::*;

  fn net(text: &str) -> Remote {
    Remote::Network(text.into())
  }

  #[test]
  fn https_ssh_and_scp_forms_of_one_repository_are_equal() {
    for url in [
      "https://github.com/Org/Repo.git",
      "https://github.com/org/repo",
      "https://github.com/org/repo/",
      "https://user:secret@GitHub.com:443/org/repo.git",
      "http://github.com/org/repo.git",
      "ssh://git@github.com/org/repo.git",
      "ssh://git@github.com:22/org/repo",
      "git+ssh://git@github.com/org/repo.git",
      "git://github.com/org/repo.git",
      "git@github.com:org/repo.git",
      "git@github.com:/org/repo",
      "github.com:org/repo.git",
      "  git@github.com:org/repo.git\n",
    ] {
      assert_eq!(normalize(url), net("github.com/org/repo"), "{url}");
    }
  }

  #[test]
  fn similar_names_stay_apart() {
    assert_eq!(normalize("git@github.com:org/repo2.git"), net("github.com/org/repo2"));
    assert_eq!(normalize("git@github.com:other/repo.git"), net("github.com/other/repo"));
    assert_eq!(normalize("git@gitlab.com:org/repo.git"), net("gitlab.com/org/repo"));
    assert_eq!(normalize("https://gitlab.com/group/sub/repo.git"), net("gitlab.com/group/sub/repo"));
    assert_eq!(normalize("ssh://host/~user/repo.git"), net("host/user/repo"));
    assert_eq!(normalize("https://[::1]:8080/org/repo"), net("[::1]/org/repo"));
  }

  #[test]
  fn local_paths_are_no_evidence() {
    for url in
      ["/srv/git/repo.git", "../repo", "./repo", "file:///srv/git/repo.git", "C:\\repos\\x", "C:/repos/x", "~/repo"]
    {
      assert_eq!(normalize(url), Remote::Local, "{url}");
    }
  }

  #[test]
  fn unusable_urls_are_malformed() {
    for url in [
      "",
      "https://",
      "https://host",
      "https://host/..",
      "git@:org/repo",
      "https://host/a b",
      "nope://host/x",
      "git@host:.git",
    ] {
      assert_eq!(normalize(url), Remote::Malformed, "{url:?}");
    }
  }
}

//! Which session `session:<target>` names, by id: a header id or file stem
//! equal to the target, else a unique prefix of a header id of at least
//! [`MIN_ID_PREFIX`] characters (what recall's human view shows). Several
//! files with that id or prefix are ambiguous.
//!
//! The sessions are offered one by one, as their path and header id, so a
//! caller can answer from what it already holds (the index's listing and
//! resident records) and ask several targets in one pass (a pack names
//! each of its sessions by a pin).

use crate::error::{ContractError, ErrorCode};
use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};

/// The shortest id prefix `session:<prefix>` accepts: shorter ones would
/// match by accident (every UUIDv7 of a month shares its first characters).
pub const MIN_ID_PREFIX: usize = 8;

/// The targets asked, looked up by what a session offers.
pub struct Targets<'t> {
  targets: &'t [&'t str],
  /// Target positions by their whole text (an id or file stem equal to
  /// it), as bytes: a file stem is compared without checking it is UTF-8.
  whole: FxHashMap<&'t [u8], Vec<usize>>,
  /// Positions of the targets long enough to be a prefix, by their first
  /// [`MIN_ID_PREFIX`] characters: an id is looked up by its own.
  prefixes: FxHashMap<&'t str, Vec<usize>>,
}

/// A session that a target names: exactly (its id or file stem) or by a
/// prefix of its id.
#[derive(Debug, Clone, Copy)]
pub struct Hit<'p> {
  pub target: usize,
  pub path: &'p Path,
  pub exact: bool,
}

/// `text`'s first [`MIN_ID_PREFIX`] characters, when it has that many.
fn head(text: &str) -> Option<&str> {
  match text.char_indices().nth(MIN_ID_PREFIX) {
    Some((end, _)) => Some(&text[..end]),
    None => (text.chars().count() == MIN_ID_PREFIX).then_some(text),
  }
}

/// `path`'s file stem, as bytes: a session file's name without `.jsonl`
/// found by one scan from the end (`Path::file_stem` parses components and
/// was a tenth of a lookup over 100,000 files).
fn stem(path: &Path) -> Option<&[u8]> {
  let bytes = path.as_os_str().as_encoded_bytes();
  let name = bytes.rsplit(|&b| b == b'/' || (cfg!(windows) && b == b'\\')).next()?;
  match name.strip_suffix(b".jsonl") {
    Some(stem) if !stem.is_empty() => Some(stem),
    _ => path.file_stem().map(|stem| stem.as_encoded_bytes()),
  }
}

impl<'t> Targets<'t> {
  pub fn new(targets: &'t [&'t str]) -> Targets<'t> {
    let (mut whole, mut prefixes) = (FxHashMap::default(), FxHashMap::default());
    for (at, target) in targets.iter().enumerate() {
      whole.entry(target.as_bytes()).or_insert_with(Vec::new).push(at);
      if let Some(head) = head(target) {
        prefixes.entry(head).or_insert_with(Vec::new).push(at);
      }
    }
    Targets { targets, whole, prefixes }
  }

  /// Adds to `hits` what the session at `path`, whose header id is `id`, is
  /// named by.
  pub fn offer<'p>(&self, path: &'p Path, id: &str, hits: &mut Vec<Hit<'p>>) {
    let mut exact = |target: usize| hits.push(Hit { target, path, exact: true });
    let by_id = self.whole.get(id.as_bytes()).map(Vec::as_slice).unwrap_or_default();
    by_id.iter().copied().for_each(&mut exact);
    if let Some(stem) = stem(path).filter(|stem| *stem != id.as_bytes()) {
      self.whole.get(stem).into_iter().flatten().copied().for_each(&mut exact);
    }
    let Some(by_prefix) = head(id).and_then(|head| self.prefixes.get(head)) else { return };
    for &target in by_prefix {
      let named = self.targets[target];
      // Equal ids were hit above; a stem equal to the target is exact anyway.
      if named != id && id.starts_with(named) {
        hits.push(Hit { target, path, exact: false });
      }
    }
  }

  /// Each target's session from every hit of the sessions offered: its
  /// exact matches, else its prefix matches; none is `session_not_found`,
  /// several `ambiguous_session` with their paths (sorted).
  pub fn answer(&self, hits: &[Hit<'_>]) -> Vec<Result<PathBuf, ContractError>> {
    (0..self.targets.len())
      .map(|target| {
        let of_target = || hits.iter().filter(move |hit| hit.target == target);
        let exact = of_target().any(|hit| hit.exact);
        let mut paths: Vec<&Path> = of_target().filter(|hit| hit.exact == exact).map(|hit| hit.path).collect();
        paths.sort();
        paths.dedup();
        match paths.as_slice() {
          [] => Err(not_found(self.targets[target])),
          [one] => Ok(one.to_path_buf()),
          several => Err(ambiguous(self.targets[target], several)),
        }
      })
      .collect()
  }
}

pub fn not_found(target: &str) -> ContractError {
  ContractError::new(ErrorCode::SessionNotFound, format!("No Pi session matches \"{target}\".")).with("session", target)
}

fn ambiguous(target: &str, paths: &[&Path]) -> ContractError {
  let candidates: Vec<String> = paths.iter().map(|path| path.to_string_lossy().into_owned()).collect();
  ContractError::new(ErrorCode::AmbiguousSession, format!("Session \"{target}\" matches {} files.", candidates.len()))
    .with("session", target)
    .with("candidates", candidates)
}

#[cfg(test)]
mod tests {
  use super::*;

  /// What each target names among `sessions` (path, id).
  fn named(sessions: &[(&str, &str)], targets: &[&str]) -> Vec<Result<String, String>> {
    let asked = Targets::new(targets);
    let mut hits = Vec::new();
    for (path, id) in sessions {
      asked.offer(Path::new(path), id, &mut hits);
    }
    let answer = |found: Result<PathBuf, ContractError>| {
      found.map(|path| path.to_string_lossy().into_owned()).map_err(|error| error.code.as_str().to_string())
    };
    asked.answer(&hits).into_iter().map(answer).collect()
  }

  #[test]
  fn an_id_or_stem_names_its_session_else_a_unique_prefix_of_eight_characters() {
    let sessions = [
      ("/s/a_019e9a22-a7d6-7000-8000-000000000001.jsonl", "019e9a22-a7d6-7000-8000-000000000001"),
      ("/s/b.jsonl", "019e9a22-a7d6-7000-8000-000000000002"),
      ("/s/c.jsonl", "019e9b00-0000-7000-8000-000000000003"),
      ("/s/dup1.jsonl", "dup"),
      ("/s/dup2.jsonl", "dup"),
      ("/s/019e9b00.jsonl", "other"),
    ];
    let ok = |path: &str| Ok(path.to_string());
    let err = |code: &str| Err(code.to_string());
    let targets = [
      "019e9a22-a7d6-7000-8000-000000000002",
      "a_019e9a22-a7d6-7000-8000-000000000001",
      "019e9a22-a7d6",
      "019e9b00-0",
      "019e9b0",
      "dup",
      "019e9b00",
      "nothing-like-it",
    ];
    assert_eq!(
      named(&sessions, &targets),
      vec![
        ok("/s/b.jsonl"),
        ok("/s/a_019e9a22-a7d6-7000-8000-000000000001.jsonl"),
        err("ambiguous_session"),
        ok("/s/c.jsonl"),
        // Below the minimum a prefix names nothing, even a unique one.
        err("session_not_found"),
        err("ambiguous_session"),
        // A stem equal to the target is exact: it wins over an id it prefixes.
        ok("/s/019e9b00.jsonl"),
        err("session_not_found"),
      ]
    );
  }

  #[test]
  fn a_stem_is_the_name_without_its_extension() {
    for (path, expected) in [
      ("/s/a.jsonl", Some("a")),
      ("/s/a.b.jsonl", Some("a.b")),
      ("/s/.jsonl", Some(".jsonl")),
      ("/s/x.txt", Some("x")),
      ("b.jsonl", Some("b")),
    ] {
      assert_eq!(stem(Path::new(path)), expected.map(str::as_bytes), "{path}");
      assert_eq!(stem(Path::new(path)), Path::new(path).file_stem().map(|s| s.as_encoded_bytes()), "{path}");
    }
  }

  #[test]
  fn ids_shorter_than_the_minimum_and_non_ascii_targets_are_compared_by_characters() {
    let sessions = [("/s/x.jsonl", "ééééééééé-1"), ("/s/y.jsonl", "short")];
    assert_eq!(
      named(&sessions, &["éééééééé", "short", "shor"]),
      vec![Ok("/s/x.jsonl".to_string()), Ok("/s/y.jsonl".to_string()), Err("session_not_found".to_string())]
    );
  }
}

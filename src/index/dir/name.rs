//! Every name the index gives a file in its dir, in one grammar: an
//! [`IndexFile`] is displayed as its name and parsed back from it, and a
//! writer's temp file is `<name>.tmp.<pid>.<n>` ([`temp_path`], what
//! `files::write_atomic` writes). What a name does not parse as is not the
//! index's, whatever it holds (`files::is_ours` then also asks for the
//! file's magic).

use crate::index::dictionary::SHARDS;
use crate::index::record::Tier;
use crate::session::lineage::Branches;
use std::fmt;
use std::path::{Path, PathBuf};

/// The marker file: this dir is the index's.
pub const MARKER: &str = ".pi-fabric-memory-index";
/// What the marker holds.
pub(crate) const MARKER_TEXT: &[u8] =
  b"pi-fabric-memory index: this directory holds cache records only; safe to delete.\n";

/// A file of the index dir.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexFile<'a> {
  /// `<sha256(path)[:16]>-<stem>.<mode>.<tier>`: one session's record;
  /// `base` is its source's `record::base_name`.
  Record { base: &'a str, branches: Branches, tier: Tier },
  /// `cold-terms.<mode>.<NN>.dict`: a shard of the cold term dictionary.
  DictionaryShard { branches: Branches, shard: usize },
  /// `cold-terms.<mode>.dict`: the unsharded dictionary of older versions.
  Dictionary { branches: Branches },
  /// `cold-heads.<mode>.<NN>.pack`: a shard of the packed cold heads.
  HeadsPack { branches: Branches, shard: usize },
  /// `cold-bodies.<cacheVersion>.<id, 8 hex digits>.zdict`: a dictionary cold
  /// bodies of that cache version are compressed with (`index::body_dictionary`).
  BodyDictionary { version: u32, id: u32 },
  /// `session-dirs.listing`: the session dirs' listings a fresh process may
  /// trust (`listing::DirCache::persisted`).
  SessionDirs,
  /// `index-dir.listing`: the index dir's own listing, written in place
  /// (`listing::DirCache::save_own`).
  IndexDirListing,
  /// [`MARKER`].
  Marker,
}

/// A name in the index dir: one of its files, or a writer's temp file
/// that becomes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Name<'a> {
  pub file: IndexFile<'a>,
  pub temp: bool,
}

impl<'a> Name<'a> {
  /// `name` as the index spells its files; `None` for any other name
  /// (the marker itself is written only through a temp file, so it counts
  /// here as a temp file's target only).
  pub fn parse(name: &'a str) -> Option<Name<'a>> {
    match strip_temp(name) {
      Some(target) => Some(Name { file: IndexFile::parse(target)?, temp: true }),
      None => IndexFile::parse(name).filter(|file| *file != IndexFile::Marker).map(|file| Name { file, temp: false }),
    }
  }
}

/// `<target>.tmp.<pid>.<n>` (see [`temp_path`]) → `target`.
fn strip_temp(name: &str) -> Option<&str> {
  let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
  let (rest, n) = name.rsplit_once('.')?;
  let (rest, pid) = rest.rsplit_once('.')?;
  let target = rest.strip_suffix(".tmp")?;
  (digits(pid) && digits(n)).then_some(target)
}

impl<'a> IndexFile<'a> {
  /// What every [`IndexFile::BodyDictionary`] name starts with.
  pub const BODY_DICTIONARY_PREFIX: &'static str = "cold-bodies.";
  /// [`IndexFile::SessionDirs`]'s name.
  pub const SESSION_DIRS: &'static str = "session-dirs.listing";
  /// [`IndexFile::IndexDirListing`]'s name.
  pub const INDEX_DIR_LISTING: &'static str = "index-dir.listing";

  pub fn parse(name: &'a str) -> Option<IndexFile<'a>> {
    if name == MARKER {
      return Some(IndexFile::Marker);
    }
    if name == Self::SESSION_DIRS {
      return Some(IndexFile::SessionDirs);
    }
    if name == Self::INDEX_DIR_LISTING {
      return Some(IndexFile::IndexDirListing);
    }
    if let Some(rest) = name.strip_prefix("cold-terms.").and_then(|r| r.strip_suffix(".dict")) {
      return match rest.split_once('.') {
        None => Some(IndexFile::Dictionary { branches: branches(rest)? }),
        Some((mode, shard)) => Some(IndexFile::DictionaryShard { branches: branches(mode)?, shard: shard_no(shard)? }),
      };
    }
    if let Some(rest) = name.strip_prefix("cold-heads.").and_then(|r| r.strip_suffix(".pack")) {
      let (mode, shard) = rest.split_once('.')?;
      return Some(IndexFile::HeadsPack { branches: branches(mode)?, shard: shard_no(shard)? });
    }
    if let Some(rest) = name.strip_prefix(Self::BODY_DICTIONARY_PREFIX).and_then(|r| r.strip_suffix(".zdict")) {
      let (version, id) = rest.split_once('.')?;
      let version = version.parse().ok().filter(|v: &u32| v.to_string() == version)?;
      let id = (id.len() == 8 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        .then(|| u32::from_str_radix(id, 16).ok())
        .flatten()?;
      return Some(IndexFile::BodyDictionary { version, id });
    }
    let (rest, tier) = name.rsplit_once('.')?;
    let tier = match tier {
      "hot" => Tier::Hot,
      "cold" => Tier::Cold,
      _ => return None,
    };
    let (base, mode) = rest.rsplit_once('.')?;
    let (hash, _stem) = base.split_once('-')?;
    (hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit())).then_some(IndexFile::Record {
      base,
      branches: branches(mode)?,
      tier,
    })
  }

  /// The base of `name` when it is a record of `branches` mode and `tier`.
  pub fn record_base(name: &'a str, branches: Branches, tier: Tier) -> Option<&'a str> {
    match IndexFile::parse(name)? {
      IndexFile::Record { base, branches: b, tier: t } if b == branches && t == tier => Some(base),
      _ => None,
    }
  }

  /// A record's hash prefix (its source path's), for orphan detection.
  pub fn record_hash(&self) -> Option<&'a str> {
    match self {
      IndexFile::Record { base, .. } => base.get(..16),
      _ => None,
    }
  }
}

fn branches(mode: &str) -> Option<Branches> {
  [Branches::Active, Branches::All].into_iter().find(|b| b.as_str() == mode)
}

/// Two digits, below [`SHARDS`].
fn shard_no(text: &str) -> Option<usize> {
  (text.len() == 2 && text.bytes().all(|b| b.is_ascii_digit()))
    .then(|| text.parse().ok())
    .flatten()
    .filter(|&s| s < SHARDS)
}

impl fmt::Display for IndexFile<'_> {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match *self {
      IndexFile::Record { base, branches, tier } => write!(f, "{base}.{}.{}", branches.as_str(), tier.as_str()),
      IndexFile::DictionaryShard { branches, shard } => write!(f, "cold-terms.{}.{shard:02}.dict", branches.as_str()),
      IndexFile::Dictionary { branches } => write!(f, "cold-terms.{}.dict", branches.as_str()),
      IndexFile::HeadsPack { branches, shard } => write!(f, "cold-heads.{}.{shard:02}.pack", branches.as_str()),
      IndexFile::BodyDictionary { version, id } => {
        write!(f, "{}{version}.{id:08x}.zdict", Self::BODY_DICTIONARY_PREFIX)
      }
      IndexFile::SessionDirs => f.write_str(Self::SESSION_DIRS),
      IndexFile::IndexDirListing => f.write_str(Self::INDEX_DIR_LISTING),
      IndexFile::Marker => f.write_str(MARKER),
    }
  }
}
/// A new temp file beside `path`, to be renamed over it.
pub(super) fn temp_path(path: &Path) -> PathBuf {
  use std::sync::atomic::{AtomicU64, Ordering};
  static COUNTER: AtomicU64 = AtomicU64::new(0);
  // `<name>.tmp.<pid>.<n>`, as `strip_temp` reads it.
  let unique = format!(".tmp.{}.{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
  let mut name = path.file_name().unwrap_or_default().to_os_string();
  name.push(unique);
  path.with_file_name(name)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn index_names_are_records_and_their_temps() {
    let index_name = |name| Name::parse(name).is_some();
    assert!(index_name("0123456789abcdef-a.jsonl.active.hot"));
    assert!(index_name("0123456789abcdef-a.jsonl.all.cold.tmp.12.3"));
    assert!(index_name(".pi-fabric-memory-index.tmp.12.3"));
    assert!(index_name("cold-terms.active.dict") && index_name("cold-terms.all.dict.tmp.12.3"));
    for foreign in [".env", "auth.json", "a.tmp.1.2", "0123456789abcdef-a.jsonl.active.hot.tmp.x.2", MARKER] {
      assert!(!index_name(foreign), "{foreign}");
    }
  }

  #[test]
  fn every_kind_of_file_parses_back_from_its_name() {
    let files = [
      IndexFile::Record { base: "0123456789abcdef-a.b.jsonl", branches: Branches::All, tier: Tier::Cold },
      IndexFile::Record { base: "0123456789abcdef-a.tmp.1.2.jsonl", branches: Branches::Active, tier: Tier::Hot },
      IndexFile::DictionaryShard { branches: Branches::Active, shard: 0 },
      IndexFile::DictionaryShard { branches: Branches::All, shard: 31 },
      IndexFile::Dictionary { branches: Branches::All },
      IndexFile::HeadsPack { branches: Branches::Active, shard: 7 },
      IndexFile::BodyDictionary { version: 22, id: 0x0abc_1234 },
      IndexFile::SessionDirs,
      IndexFile::IndexDirListing,
      IndexFile::Marker,
    ];
    let names: Vec<String> = files.iter().map(ToString::to_string).collect();
    assert_eq!(
      names,
      [
        "0123456789abcdef-a.b.jsonl.all.cold",
        "0123456789abcdef-a.tmp.1.2.jsonl.active.hot",
        "cold-terms.active.00.dict",
        "cold-terms.all.31.dict",
        "cold-terms.all.dict",
        "cold-heads.active.07.pack",
        "cold-bodies.22.0abc1234.zdict",
        "session-dirs.listing",
        "index-dir.listing",
        MARKER,
      ]
    );
    for (file, name) in files.iter().zip(&names) {
      assert_eq!(IndexFile::parse(name).as_ref(), Some(file), "{name}");
      let temp = format!("{name}.tmp.12.3");
      assert_eq!(Name::parse(&temp), Some(Name { file: *file, temp: true }), "{temp}");
    }
    assert_eq!(IndexFile::parse(&names[0]).unwrap().record_hash(), Some("0123456789abcdef"));
    assert_eq!(IndexFile::record_base(&names[0], Branches::All, Tier::Cold), Some("0123456789abcdef-a.b.jsonl"));
    assert_eq!(IndexFile::record_base(&names[0], Branches::Active, Tier::Cold), None);
    assert_eq!(IndexFile::record_base(&names[0], Branches::All, Tier::Hot), None);
  }

  #[test]
  fn other_names_are_not_the_index_s() {
    for foreign in [
      ".env",
      "auth.json",
      "a.tmp.1.2",
      "0123456789abcdef-a.jsonl.active.hot.tmp.x.2",
      "0123456789abcdef-a.jsonl.json",
      "nothex0123456789-x.active.hot",
      "0123456789abcdef-a.jsonl.some.hot",
      "cold-terms.active.32.dict",
      "cold-terms.active.1.dict",
      "cold-heads.all.32.pack",
      "cold-heads.active.pack",
      "cold-bodies.22.0ABC1234.zdict",
      "cold-bodies.022.0abc1234.zdict",
      "cold-bodies.22.abc1234.zdict",
      "cold-bodies.0abc1234.zdict",
      MARKER,
    ] {
      assert_eq!(Name::parse(foreign), None, "{foreign}");
    }
  }
}

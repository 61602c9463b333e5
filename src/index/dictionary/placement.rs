//! Which shard a cold session lies in (its dictionary shard, and the pack
//! of its head): each project dir's sessions spread over a run of
//! consecutive shards that starts at a hash of the dir, as many as its
//! session count needs (one per [`SESSIONS_PER_SHARD`], a power of two, at
//! most [`SHARDS`]), and each session placed in that run by a hash of its
//! file.
//!
//! Why by project: sessions of one project share most of their vocabulary
//! (its identifiers, paths, tools), so a shard holding one project's
//! sessions holds each of its terms once. Spread by file alone, every shard
//! repeated every project's terms: over `medium`'s cold sessions 1.55M term
//! entries in 32 shards against 0.58M in 18 at 64 sessions a shard (what
//! [`SESSIONS_PER_SHARD`] measured), and a project's queries then look up
//! fewer shards.
//!
//! A project's spread comes from the listing (every listed file of its
//! dir), not from a query's candidates: a filtered query would otherwise
//! place the same session elsewhere. When a dir's count crosses a power of
//! two its sessions move; the shards they left then hold members no
//! candidate stands for, and a global refresh rebuilds them (see
//! `dictionary::refresh`). A session's shard is therefore one of the
//! [`every_shard`] it could ever have had, which is what a forget removes.

use super::SHARDS;
use crate::index::record::cold::DictionaryMatch;
use rustc_hash::FxHashMap;
use std::path::Path;

/// Sessions per shard a project is spread for: up to it one shard holds the
/// whole project. Measured over `medium`'s shards (1,000 sessions in 8
/// projects): term blocks 16.2 MB spread by file, 5.5 MB at 64 sessions a
/// shard (18 shards, postings 4.7), 4.0 at 128 (11, postings 4.6), 3.3 at
/// 256 (8). More sessions a shard make a rebuild after changes larger.
pub const SESSIONS_PER_SHARD: u32 = 128;

/// The placement of every project dir of one listing.
#[derive(Debug, Default, PartialEq)]
pub struct Placement {
  /// Bumped whenever a spread changes: a digest's remembered shard is its
  /// placement's only while the generation is the same.
  generation: u32,
  /// log2 of each project dir's spread, by the dir's path bytes.
  spreads: FxHashMap<Box<[u8]>, u8>,
  /// Each project dir's count of listed files, which its spread is of: a
  /// listing that only adds files recounts their dirs alone (counting
  /// 100,000 files was a quarter of a new session's cost at that scale).
  counts: FxHashMap<Box<[u8]>, u32>,
}

/// The bytes of the dir of `file` (a session file's project dir), as
/// `Path::parent` gives them.
fn dir_of(file: &Path) -> &[u8] {
  let bytes = file.as_os_str().as_encoded_bytes();
  // A listed path is a dir joined with a plain name: the bytes before the
  // last separator, without parsing every component (asked of each listed
  // file and each cold record, 100,000 of each at scale).
  #[cfg(unix)]
  if let Some(dir) = plain_parent(bytes) {
    return dir;
  }
  file.parent().map_or(&[][..], |dir| dir.as_os_str().as_encoded_bytes())
}

/// The bytes before the last `/` when `Path::parent` gives exactly those: a
/// last name other than `.`, and a dir that does not end in a separator or
/// a `.` (which `Path` trims); `None` otherwise.
#[cfg(unix)]
fn plain_parent(bytes: &[u8]) -> Option<&[u8]> {
  let slash = memchr::memrchr(b'/', bytes)?;
  let (dir, name) = (&bytes[..slash], &bytes[slash + 1..]);
  let plain_name = !matches!(name, b"" | b".");
  let plain_dir = !dir.is_empty() && !dir.ends_with(b"/") && dir != b"." && !dir.ends_with(b"/.");
  (plain_name && plain_dir).then_some(dir)
}

/// log2 of the shards `count` sessions of one dir spread over.
fn spread_of(count: u32) -> u8 {
  let shards = count.div_ceil(SESSIONS_PER_SHARD).next_power_of_two().min(SHARDS as u32);
  shards.trailing_zeros() as u8
}

/// The shard of `file` in `dir` spread over `1 << log2` shards: stable across processes.
fn place(dir: &[u8], file: &str, log2: u8) -> usize {
  let first = xxhash_rust::xxh3::xxh3_64(dir) % SHARDS as u64;
  let offset = xxhash_rust::xxh3::xxh3_64(file.as_bytes()) % (1u64 << log2);
  ((first + offset) % SHARDS as u64) as usize
}

/// The widest spread: a dir the listing did not count is spread as far as
/// any (each session by its file, as before placement by project).
const WIDEST: u8 = SHARDS.trailing_zeros() as u8;

impl Placement {
  /// The placement of the listed `files`; of `previous`'s generation when
  /// every dir's spread is the same (remembered shards stay valid).
  pub fn of<'a>(
    files: impl Iterator<Item = &'a Path>,
    previous: &std::sync::Arc<Placement>,
  ) -> std::sync::Arc<Placement> {
    let mut counts: FxHashMap<&[u8], u32> = FxHashMap::default();
    for file in files {
      *counts.entry(dir_of(file)).or_default() += 1;
    }
    Placement::counted(counts.into_iter().map(|(dir, count)| (Box::from(dir), count)).collect(), previous)
  }

  /// This placement with the `added` files (new to the listing) counted too.
  pub fn with_added<'a>(
    self: &std::sync::Arc<Placement>,
    added: impl Iterator<Item = &'a Path>,
  ) -> std::sync::Arc<Placement> {
    let mut counts = self.counts.clone();
    for file in added {
      *counts.entry(Box::from(dir_of(file))).or_default() += 1;
    }
    Placement::counted(counts, self)
  }

  fn counted(counts: FxHashMap<Box<[u8]>, u32>, previous: &std::sync::Arc<Placement>) -> std::sync::Arc<Placement> {
    let spreads: FxHashMap<Box<[u8]>, u8> =
      counts.iter().map(|(dir, &count)| (dir.clone(), spread_of(count))).collect();
    let same_spreads = spreads == previous.spreads;
    if same_spreads && counts == previous.counts {
      return previous.clone();
    }
    let generation = if same_spreads { previous.generation } else { previous.generation.wrapping_add(1) };
    std::sync::Arc::new(Placement { generation, spreads, counts })
  }

  /// The shard of the session at `file`.
  pub fn shard(&self, file: &str) -> usize {
    let dir = dir_of(Path::new(file));
    place(dir, file, self.spreads.get(dir).copied().unwrap_or(WIDEST))
  }

  /// [`Placement::shard`], remembered in the session's digest while this
  /// placement holds.
  pub fn shard_of(&self, file: &str, matched: &DictionaryMatch) -> usize {
    matched.shard(self.generation, || self.shard(file))
  }
}

/// Every shard the session at `file` lies in under any spread of its dir.
pub fn every_shard(file: &str) -> Vec<usize> {
  let dir = dir_of(Path::new(file));
  let mut shards: Vec<usize> = (0..=WIDEST).map(|log2| place(dir, file, log2)).collect();
  shards.sort_unstable();
  shards.dedup();
  shards
}

#[cfg(test)]
mod tests {
  use super::*;
  use std::sync::Arc;

  #[cfg(unix)]
  proptest::proptest! {
    #[test]
    fn a_plain_parent_is_what_path_parent_gives(path in "[/.a]{0,10}") {
      let path = Path::new(&path);
      let parsed = path.parent().map_or(&[][..], |dir| dir.as_os_str().as_encoded_bytes());
      if let Some(plain) = plain_parent(path.as_os_str().as_encoded_bytes()) {
        proptest::prop_assert_eq!(plain, parsed);
      }
      proptest::prop_assert_eq!(dir_of(path), parsed);
    }
  }

  #[cfg(unix)]
  #[test]
  fn a_listed_path_has_a_plain_parent() {
    for (path, dir) in [("/s/--a--/x.jsonl", "/s/--a--"), ("s/x.jsonl", "s"), ("/a/../x.jsonl", "/a/..")] {
      assert_eq!(plain_parent(path.as_bytes()), Some(dir.as_bytes()), "{path}");
    }
    for path in ["/x.jsonl", "x.jsonl", "/s//x.jsonl", "/s/./x.jsonl", "/s/x/", "/s/x/.", "./x"] {
      assert_eq!(plain_parent(path.as_bytes()), None, "{path}");
    }
  }

  fn listing(dirs: &[(&str, usize)]) -> Vec<std::path::PathBuf> {
    let file = |(dir, i): (&str, usize)| Path::new(dir).join(format!("{i:05}.jsonl"));
    dirs.iter().flat_map(|&(dir, count)| (0..count).map(move |i| file((dir, i)))).collect()
  }

  fn placed(files: &[std::path::PathBuf]) -> Arc<Placement> {
    Placement::of(files.iter().map(|f| f.as_path()), &Arc::default())
  }

  #[test]
  fn a_project_spreads_over_a_run_of_shards_as_its_count_needs() {
    const S: usize = SESSIONS_PER_SHARD as usize;
    let counts = [(1, 1), (S, 1), (S + 1, 2), (2 * S, 2), (2 * S + 1, 4), (5 * S, 8), (40 * S, 32), (100 * S, 32)];
    for (count, spread) in counts {
      let files = listing(&[("/s/p", count)]);
      let placement = placed(&files);
      let shards: std::collections::BTreeSet<usize> =
        files.iter().map(|f| placement.shard(&f.to_string_lossy())).collect();
      let first = place(b"/s/p", "", 0);
      let run: std::collections::BTreeSet<usize> = (0..spread).map(|at| (first + at) % SHARDS).collect();
      assert!(shards.is_subset(&run), "{count} sessions: {shards:?} outside {run:?}");
      assert!(shards.len() * 4 >= spread * 3, "{count} sessions use {} of {spread} shards", shards.len());
    }
  }

  #[test]
  fn a_session_lies_in_one_of_its_every_shards_under_any_count_and_a_dir_not_counted_spreads_widest() {
    for count in [1, 65, 129, 257, 513, 1_025, 3_000, 5_000] {
      let files = listing(&[("/s/p", count), ("/s/q", 3)]);
      let placement = placed(&files);
      for file in files.iter().step_by(7) {
        let file = file.to_string_lossy();
        assert!(every_shard(&file).contains(&placement.shard(&file)), "{file} of {count}");
      }
    }
    let placement = placed(&listing(&[("/s/p", 1)]));
    let elsewhere = "/s/other/x.jsonl";
    assert_eq!(placement.shard(elsewhere), place(b"/s/other", elsewhere, WIDEST));
  }

  #[test]
  fn the_generation_moves_only_when_a_spread_changes() {
    const S: usize = SESSIONS_PER_SHARD as usize;
    let first = placed(&listing(&[("/s/p", 10), ("/s/q", S + 1)]));
    let same = Placement::of(listing(&[("/s/p", S), ("/s/q", 2 * S)]).iter().map(|f| f.as_path()), &first);
    assert_eq!((same.generation, &same.spreads), (first.generation, &first.spreads));
    let crossed = Placement::of(listing(&[("/s/p", S + 1), ("/s/q", 2 * S)]).iter().map(|f| f.as_path()), &first);
    assert_eq!(crossed.generation, first.generation + 1);
    let matched = DictionaryMatch::default();
    let file = "/s/p/00001.jsonl";
    assert_eq!(first.shard_of(file, &matched), first.shard(file));
    assert_eq!(crossed.shard_of(file, &matched), crossed.shard(file), "remembered for the old generation only");
  }

  /// Files added to a listing, counted alone, place as a count of the whole
  /// listing does.
  #[test]
  fn added_files_place_as_a_recount_does() {
    const S: usize = SESSIONS_PER_SHARD as usize;
    let before = placed(&listing(&[("/s/p", S - 2), ("/s/q", 5)]));
    let after = listing(&[("/s/p", S + 3), ("/s/q", 5), ("/s/r", 2)]);
    let added: Vec<&Path> = after
      .iter()
      .map(|f| f.as_path())
      .filter(|f| {
        let (dir, n) = (f.parent().unwrap(), f.file_stem().unwrap().to_string_lossy().parse::<usize>().unwrap());
        (dir == Path::new("/s/p") && n >= S - 2) || dir == Path::new("/s/r")
      })
      .collect();
    let counted = before.with_added(added.into_iter());
    let recounted = Placement::of(after.iter().map(|f| f.as_path()), &before);
    assert_eq!((&counted.spreads, &counted.counts), (&recounted.spreads, &recounted.counts));
    assert_eq!((counted.generation, recounted.generation), (before.generation + 1, before.generation + 1));
    let one_more = counted.with_added(std::iter::once(Path::new("/s/q/00099.jsonl")));
    assert_eq!(one_more.generation, counted.generation, "no spread changed");
  }
}

use super::terms::HEADER_BYTES;
use super::*;
use crate::engine::Engine;
use crate::index::record::cold::ColdContent;
use crate::index::record::vocabulary::Vocabulary;
use crate::ops::recall::RecallRequest;
use crate::ops::recall::{recall, Hit, RecallPage, MAX_DIGEST_CANDIDATES};
use crate::session::entry::{Entry, Normalized};
use crate::testing::{AgentDir, CWD};
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::fs;
use std::time::{Duration, SystemTime};

fn digest(text: &str) -> ColdDigest {
  let entry = Entry { text: text.into(), entry_id: Some("e0".into()), ..Entry::default() };
  ColdDigest::build(
    &Normalized { entries: vec![entry], ..Default::default() },
    1 << 20,
    crate::index::record::cold::Echoes::Kept,
  )
}

/// The shard of `file` when no listing counted its dir (spread by file).
fn shard_of(file: &str) -> usize {
  placement::Placement::default().shard(file)
}

/// The shard the index of `fx` places the session at `path` in.
fn placed(fx: &AgentDir, path: &std::path::Path) -> usize {
  index_of(fx).listing().placement().shard(&path.to_string_lossy())
}

fn files(count: usize) -> Vec<String> {
  (0..count).map(|i| format!("/s/{i}.jsonl")).collect()
}

/// Slots whose digest holds `term`, by probing every digest.
fn scan(digests: &[ColdDigest], term: &str) -> Vec<usize> {
  (0..digests.len()).filter(|&slot| digests[slot].contains(term)).collect()
}

/// Shards built from `built`, each matched to the candidates in it.
fn sharded_served(built: &[(&str, &ColdDigest)], candidates: &[Candidate<'_>]) -> Served {
  let mut served = Served { parts: Vec::new(), stragglers: Vec::new() };
  for shard in 0..SHARDS {
    let members: Vec<(&str, &ColdDigest)> = built.iter().copied().filter(|(file, _)| shard_of(file) == shard).collect();
    let group: Vec<Candidate<'_>> = candidates.iter().copied().filter(|c| shard_of(c.1) == shard).collect();
    let (part, stragglers) = Part::matched(Arc::new(Dictionary::build(&members)), &group);
    served.stragglers.extend(stragglers);
    served.parts.push(part);
  }
  served
}

proptest! {
  #![proptest_config(crate::testing::proptest_config(64))]

  /// The merge cut into parts at any terms (the build cuts at quantile
  /// medians) gives the same term index and postings, byte for byte, as one
  /// merge of everything.
  #[test]
  fn a_merge_cut_anywhere_equals_one_merge(
    built in vec(vec("[a-f]{1,3}", 0..25), 1..20),
    mut pivots in vec("[a-g]{0,3}", 0..5),
  ) {
    let digests: Vec<ColdDigest> = built.iter().map(|words| digest(&words.join(" "))).collect();
    let contents: Vec<&ColdContent> = digests.iter().map(|d| d.content().unwrap()).collect();
    let vocabularies: Vec<(&Vocabulary, &[u8])> = contents.iter().map(|c| (&c.vocabulary, &c.frequencies[..])).collect();
    pivots.sort();
    pivots.dedup();
    let pivots: Vec<&str> = pivots.iter().map(String::as_str).collect();
    let (whole, whole_postings) = terms::merge_parts(&vocabularies, &[]);
    let (cut, cut_postings) = terms::merge_parts(&vocabularies, &pivots);
    prop_assert_eq!(whole.parts(), cut.parts());
    prop_assert_eq!(whole_postings, cut_postings);
  }

  /// The merge gives what a map of each term to its members gives, encoded
  /// the same way: terms in byte order (long terms sharing their first 8
  /// bytes, which the merge's keys cannot tell apart, included), each
  /// member once, ascending, with its frequency class.
  #[test]
  fn the_merge_equals_a_map_of_terms_to_members(
    built in vec(vec("(abcdefgh|abcdefghij)?[a-c]{0,3}", 0..30), 1..25),
  ) {
    let digests: Vec<ColdDigest> = built.iter().map(|words| digest(&words.join(" "))).collect();
    let contents: Vec<&ColdContent> = digests.iter().map(|d| d.content().unwrap()).collect();
    let vocabularies: Vec<(&Vocabulary, &[u8])> = contents.iter().map(|c| (&c.vocabulary, &c.frequencies[..])).collect();
    let mut map: std::collections::BTreeMap<&str, Vec<(u32, u8)>> = Default::default();
    for (member, content) in contents.iter().enumerate() {
      for (term, &class) in content.vocabulary.iter().zip(&content.frequencies) {
        map.entry(term).or_default().push((member as u32, class));
      }
    }
    let (mut writer, mut postings) = (super::blocks::Writer::default(), Vec::new());
    for (term, list) in &map {
      writer.push(term, postings.len() as u64);
      super::posting::put_list(&mut postings, list, contents.len() as u32);
    }
    let (merged, merged_postings) = terms::merge_parts(&vocabularies, &[]);
    let expected = writer.blocks().unwrap();
    prop_assert_eq!(merged.parts(), expected.parts());
    prop_assert_eq!(merged_postings, postings);
  }

  /// Built from some digests, persisted and read back, then matched to
  /// candidates of which some changed since: every term answers exactly what
  /// probing the current digests answers.
  #[test]
  fn the_dictionary_agrees_with_a_digest_scan(
    built in vec(vec("[a-f]{1,3}", 0..25), 1..40),
    changed in vec(proptest::option::of(vec("[a-g]{1,3}", 0..25)), 1..40),
    probes in vec("[a-g]{1,4}", 0..10),
    sharded in any::<bool>(),
  ) {
    let old: Vec<ColdDigest> = built.iter().map(|words| digest(&words.join(" "))).collect();
    let names = files(old.len());
    let pairs: Vec<(&str, &ColdDigest)> = names.iter().map(String::as_str).zip(&old).collect();
    let dictionary = Dictionary::decode(Dictionary::build(&pairs).encode().unwrap()).expect("round trip");
    for term in old.iter().flat_map(|d| d.content().unwrap().vocabulary.to_vec()).chain(probes.iter().cloned()) {
      prop_assert_eq!(dictionary.holding(&term).map(|m| m as usize).collect::<Vec<_>>(), scan(&old, &term));
    }
    // Now: some digests changed, the rest are as built (same file, same vocabulary).
    let now: Vec<ColdDigest> = old
      .iter()
      .zip(changed.iter().chain(std::iter::repeat(&None)))
      .map(|(d, change)| change.as_ref().map_or_else(|| d.clone(), |words| digest(&words.join(" "))))
      .collect();
    let candidates: Vec<Candidate<'_>> = (0..now.len()).map(|slot| (slot, names[slot].as_str(), &now[slot])).collect();
    let served = if sharded { sharded_served(&pairs, &candidates) } else { Served::new(Arc::new(dictionary), &candidates) };
    for (slot, digest) in now.iter().enumerate() {
      let vouched = !served.stragglers.contains(&slot);
      prop_assert!(!vouched || digest.content() == old[slot].content(), "a changed digest is never vouched for");
    }
    for term in now.iter().flat_map(|d| d.content().unwrap().vocabulary.to_vec()).chain(probes.iter().cloned()) {
      let mut found = served.holding(&term, |slot| now[slot].contains(&term));
      found.sort_unstable();
      prop_assert_eq!(found, scan(&now, &term));
    }
  }
}

#[test]
fn a_digest_whose_vocabulary_is_not_sorted_is_a_straggler() {
  let mut unsorted = digest("alpha beta");
  let vocabulary = crate::index::record::vocabulary::Vocabulary::from_sorted(&["beta".into(), "alpha".into()]);
  unsorted = unsorted.with_content(ColdContent::new(vocabulary, Vec::new(), Vec::new()));
  let sorted = digest("gamma");
  let dictionary = Dictionary::build(&[("/a", &unsorted), ("/b", &sorted)]);
  assert_eq!(dictionary.members(), 1);
  let served = Served::new(Arc::new(dictionary), &[(0, "/a", &unsorted), (1, "/b", &sorted)]);
  assert_eq!(served.stragglers, [0]);
  assert_eq!(served.holding("alpha", |slot| slot == 0), [0]);
  assert_eq!(served.holding("gamma", |_| false), [1]);
}

/// A session whose appended turns only repeat its words keeps its
/// vocabulary but not its frequency classes: the dictionary must not answer
/// for it with the classes it was built from.
#[test]
fn a_digest_whose_frequencies_changed_is_a_straggler() {
  let old = digest("alpha beta");
  let new = digest(&format!("{}beta", "alpha ".repeat(60)));
  let (was, is) = (old.content().unwrap(), new.content().unwrap());
  assert_eq!(was.vocabulary, is.vocabulary);
  assert_ne!(was.frequencies, is.frequencies, "the same terms, other frequency classes");
  let dictionary = Arc::new(Dictionary::build(&[("/a", &old)]));
  assert!(Served::new(dictionary.clone(), &[(0, "/a", &old)]).stragglers.is_empty());
  assert_eq!(Served::new(dictionary, &[(0, "/a", &new)]).stragglers, [0]);
}

#[test]
fn a_digest_s_cached_membership_holds_for_one_dictionary_only() {
  let (a, b) = (digest("alpha"), digest("beta"));
  let candidates: [Candidate<'_>; 2] = [(0, "/a", &a), (1, "/b", &b)];
  let with = Arc::new(Dictionary::build(&[("/a", &a), ("/b", &b)]));
  let without = Arc::new(Dictionary::build(&[("/b", &b)]));
  assert!(Served::new(with.clone(), &candidates).stragglers.is_empty());
  assert_eq!(Served::new(without, &candidates).stragglers, [0], "not a member of the other shard");
  let again = Served::new(with, &candidates);
  assert!(again.stragglers.is_empty(), "matched again, not from the other shard's answer");
  assert_eq!(again.holding("alpha", |_| false), [0]);
}

#[test]
fn a_torn_dictionary_file_or_one_with_an_edited_head_is_not_read() {
  let (a, b) = (digest("alpha beta"), digest("beta gamma"));
  let bytes = Dictionary::build(&[("/a", &a), ("/b", &b)]).encode().unwrap();
  let back = Dictionary::decode(bytes.clone()).expect("intact");
  assert_eq!(back.holding("beta").collect::<Vec<_>>(), [0, 1]);
  assert_eq!(back.len(), 3);
  assert!(Dictionary::decode(bytes[..bytes.len() - 1].to_vec()).is_none(), "torn");
  let head_len = u32::from_le_bytes(bytes[16..20].try_into().unwrap()) as usize;
  for at in [0, 9, 17, HEADER_BYTES + 3, HEADER_BYTES + head_len - 1] {
    let mut flipped = bytes.clone();
    flipped[at] ^= 0x10;
    assert!(Dictionary::decode(flipped).is_none(), "byte {at}");
  }
}

/// `count` digests with distinct words each, and the shard built from them
/// as its file's bytes: its postings and blocks span several chunks.
fn many_chunk_shard(count: usize) -> (Vec<ColdDigest>, Vec<String>, Vec<u8>) {
  let digests: Vec<ColdDigest> =
    (0..count).map(|i| digest(&format!("alpha w{i}x{} v{}y{} z{i}", i * 7, i * 13, i % 5))).collect();
  let names = files(count);
  let pairs: Vec<(&str, &ColdDigest)> = names.iter().map(String::as_str).zip(&digests).collect();
  let bytes = Dictionary::build(&pairs).encode().unwrap();
  (digests, names, bytes)
}

/// A shard file's postings and term blocks are checked a chunk at a time as
/// lookups read them: an edit there leaves the shard readable, and the
/// lookup that reads the edited chunk (and every one after it) is refused,
/// while the served answer stays exact (from the digests) and the next
/// refresh rebuilds the shard.
#[test]
fn an_edited_chunk_is_refused_when_read_and_its_shard_answers_from_the_digests() {
  let (digests, names, bytes) = many_chunk_shard(3000);
  let head_len = u32::from_le_bytes(bytes[16..20].try_into().unwrap()) as usize;
  let lazy = bytes.len() - HEADER_BYTES - head_len;
  assert!(lazy > 4 * checked::CHUNK, "{lazy} bytes past the head");
  let intact = Dictionary::decode(bytes.clone()).unwrap();
  let mut edited = bytes.clone();
  let last = bytes.len() - 2;
  edited[last] ^= 0x01;
  let dictionary = Arc::new(Dictionary::decode(edited).expect("the head is intact"));
  // `alpha`'s list (every member) starts the postings: the first chunk.
  assert_eq!(dictionary.holding("alpha").count(), 3000);
  assert!(!dictionary.damaged());
  // The last term sorts last: its block ends the file.
  let last_term = (0..3000).map(|i| format!("z{i}")).max().unwrap();
  assert_eq!(intact.holding(&last_term).count(), 1);
  assert!(dictionary.frequencies(&last_term).is_err());
  assert!(dictionary.damaged());
  assert!(dictionary.frequencies("alpha").is_err(), "nothing of a damaged shard answers");
  let candidates: Vec<Candidate<'_>> =
    (0..digests.len()).map(|slot| (slot, names[slot].as_str(), &digests[slot])).collect();
  let served = Served::new(dictionary, &candidates);
  assert!(served.stragglers.is_empty());
  for term in ["alpha", &last_term, "v3y39", "absent"] {
    let mut found = served.holding(term, |slot| digests[slot].contains(term));
    found.sort_unstable();
    assert_eq!(found, scan(&digests, term), "{term}");
  }
}

/// Resident kB of the mappings of `file` (from `/proc/self/smaps`).
#[cfg(target_os = "linux")]
fn mapped_resident_kb(file: &std::path::Path) -> Option<u64> {
  let smaps = fs::read_to_string("/proc/self/smaps").ok()?;
  let (mut inside, mut found, mut kb) = (false, false, 0);
  for line in smaps.lines() {
    match line.strip_prefix("Rss:") {
      Some(rss) if inside => kb += rss.trim().trim_end_matches("kB").trim().parse::<u64>().ok()?,
      Some(_) => {}
      // A mapping's first line: `address perms offset dev inode path`.
      None if line.split_whitespace().nth(4).is_some_and(|inode| inode.parse::<u64>().is_ok()) => {
        inside = line.ends_with(&*file.to_string_lossy());
        found |= inside;
      }
      None => {}
    }
  }
  found.then_some(kb)
}

/// A shard file read through a mapping keeps none of its pages resident once
/// decoded: everything decode reads (the checksum, the members, the term
/// index's start table) comes before the release, so only a lookup maps pages back.
#[cfg(target_os = "linux")]
#[test]
fn a_decoded_shard_keeps_none_of_its_mapped_pages_resident() {
  let dir = tempfile::tempdir().unwrap();
  let digests: Vec<ColdDigest> = (0..64).map(|i| digest(&format!("alpha w{i} x{} y{}", i * 7, i * 13))).collect();
  let names = files(digests.len());
  let pairs: Vec<(&str, &ColdDigest)> = names.iter().map(String::as_str).zip(&digests).collect();
  let path = dir.path().join("shard.dict");
  fs::write(&path, Dictionary::build(&pairs).encode().unwrap()).unwrap();
  let shard = bytes::ShardBytes::open(&path, 1 << 30).unwrap();
  if !matches!(shard, bytes::ShardBytes::Mapped(_)) {
    return; // a filesystem that is read, not mapped
  }
  let dictionary = Dictionary::decode(shard).expect("intact");
  assert_eq!(mapped_resident_kb(&path), Some(0), "decode left pages of the shard resident");
  assert_eq!(dictionary.holding("alpha").count(), 64);
  assert!(mapped_resident_kb(&path).is_some_and(|kb| kb > 0), "a lookup maps pages back");
}

// --- through recall -------------------------------------------------------------------------------

/// `count` one-message sessions, session `i` dated `i` minutes before a
/// fixed past instant (so `0` is the newest); `text(i)` is its message.
fn sessions(fx: &AgentDir, count: usize, text: impl Fn(usize) -> String) -> Vec<std::path::PathBuf> {
  let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_780_000_000);
  (0..count)
    .map(|i| {
      let path = fx.project.join(format!("s{i:05}.jsonl"));
      write_session(&path, i, &text(i));
      fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(base - Duration::from_secs(60 * i as u64))
        .unwrap();
      path
    })
    .collect()
}

fn write_session(path: &std::path::Path, i: usize, text: &str) {
  let header = json!({"type": "session", "version": 3, "id": format!("id{i}"), "cwd": CWD});
  let message = json!({"type": "message", "id": "e0", "parentId": null, "timestamp": "2026-01-01T00:00:01.000Z",
    "message": {"role": "user", "content": text}});
  fs::write(path, format!("{header}\n{message}\n")).unwrap();
}

fn run(engine: &Engine, args: Value) -> RecallPage {
  recall(engine, &RecallRequest::from_json(Some(&args)).unwrap())
}

fn session_ids(page: &RecallPage) -> Vec<String> {
  page
    .hits
    .iter()
    .map(|hit| match hit {
      Hit::Session(session) => session.session_id.clone(),
      Hit::Entry(entry) => panic!("every session is cold: {}", entry.session_id),
    })
    .collect()
}

fn all_cold(fx: &AgentDir) -> Engine {
  fx.engine(json!({"hotSessions": 0, "maxSyncSessions": 1_000_000}))
}

#[test]
fn a_rare_term_in_the_oldest_of_more_cold_sessions_than_the_digest_budget_is_found() {
  let fx = AgentDir::new();
  let count = MAX_DIGEST_CANDIDATES + 40;
  let paths =
    sessions(
      &fx,
      count,
      |i| if i == count - 1 { "the oldest holds qzarvinthe".into() } else { format!("routine {i}") },
    );
  let engine = all_cold(&fx);
  let page = run(&engine, json!({"query": "qzarvinthe", "scope": "global"}));
  assert!(page.coverage.complete, "{:?}", page.coverage);
  assert_eq!(page.coverage.indexed_sessions, count);
  assert_eq!(session_ids(&page), [format!("id{}", count - 1)]);
  // A term every session holds still meets the budget, on matched sessions.
  let common = run(&engine, json!({"query": "routine", "scope": "global"}));
  assert_eq!(common.coverage.reasons, ["candidate_digest_budget"]);
  assert_eq!(common.total, MAX_DIGEST_CANDIDATES);
  // A fresh process answers from the persisted dictionary the same way.
  index_of(&fx).dictionaries().forget();
  let oldest = placed(&fx, &paths[count - 1]);
  assert!(fx.agent.join("fabric/memory-index").join(file_name(Branches::Active, oldest)).is_file());
  let again = run(&engine, json!({"query": "qzarvinthe", "scope": "global"}));
  assert_eq!((session_ids(&again), again.coverage.complete), (session_ids(&page), true));
}

#[test]
fn a_changed_cold_session_is_never_answered_from_a_stale_dictionary() {
  let fx = AgentDir::new();
  let paths = sessions(&fx, MIN_COLD + 10, |i| format!("routine {i} vrenqalith{}", i % 3));
  let engine = all_cold(&fx);
  let before = run(&engine, json!({"query": "vrenqalith0", "scope": "global"}));
  assert_eq!(before.total, (MIN_COLD + 10).div_ceil(3));
  let dir = fx.agent.join("fabric/memory-index");
  let read_all = || (0..SHARDS).map(|s| fs::read(dir.join(file_name(Branches::Active, s))).ok()).collect::<Vec<_>>();
  let built = read_all();
  // Session 0 loses vrenqalith0 and gains oqmendrive; the dictionary still names the old vocabulary.
  let mtime = fs::metadata(&paths[0]).unwrap().modified().unwrap();
  write_session(&paths[0], 0, "rewritten oqmendrive");
  fs::File::options().write(true).open(&paths[0]).unwrap().set_modified(mtime).unwrap();
  for fresh_process in [false, true] {
    if fresh_process {
      index_of(&fx).dictionaries().forget();
    }
    let gone = run(&engine, json!({"query": "vrenqalith0", "scope": "global"}));
    assert_eq!(gone.total, before.total - 1);
    assert!(!session_ids(&gone).contains(&"id0".to_string()));
    let gained = run(&engine, json!({"query": "oqmendrive", "scope": "global"}));
    assert_eq!((session_ids(&gained), gained.coverage.complete), (vec!["id0".to_string()], true));
  }
  assert_eq!(read_all(), built, "one straggler does not rebuild its shard");
}

#[test]
fn no_dictionary_is_built_or_read_past_the_cold_bound() {
  // A first build over more cold sessions than measured would stall a query for a minute or more.
  let dir = tempfile::tempdir().unwrap();
  let one = digest("alpha beta");
  let names = files(MAX_COLD + 1);
  let candidates: Vec<Candidate<'_>> = names.iter().enumerate().map(|(at, file)| (at, file.as_str(), &one)).collect();
  let index = Index::shared(dir.path().to_path_buf());
  assert!(serve(&index, Branches::Active, (&candidates[..MAX_COLD + 1], Candidates::Every), 1 << 20).is_none());
  assert!(serve(&index, Branches::Active, (&candidates[..MAX_COLD], Candidates::Every), 1 << 20).is_some());
}

#[test]
fn shard_file_names_are_the_index_s_and_nothing_else_is() {
  use crate::index::dir::IndexFile;
  let is_file_name = |name: &str| {
    matches!(IndexFile::parse(name), Some(IndexFile::DictionaryShard { .. } | IndexFile::Dictionary { .. }))
  };
  for branches in [Branches::Active, Branches::All] {
    for shard in 0..SHARDS {
      assert!(is_file_name(&file_name(branches, shard)), "{}", file_name(branches, shard));
    }
    assert!(is_file_name(&unsharded_file_name(branches)));
  }
  assert_eq!(file_name(Branches::All, 7), "cold-terms.all.07.dict");
  let foreign =
    ["cold-terms.active.32.dict", "cold-terms.active.7.dict", "cold-terms.active.+1.dict", "cold-terms.x.01.dict"];
  for name in foreign.into_iter().chain(["cold-terms.active..dict", "cold-terms.active.01.dict.bak", "cold-terms.dict"])
  {
    assert!(!is_file_name(name), "{name}");
  }
}

/// Sessions of `fx` placed in shard `shard`.
fn in_shard(fx: &AgentDir, paths: &[std::path::PathBuf], shard: usize) -> Vec<usize> {
  (0..paths.len()).filter(|&i| placed(fx, &paths[i]) == shard).collect()
}

/// The index of `fx`'s default index dir.
fn index_of(fx: &AgentDir) -> Arc<Index> {
  Index::shared(fx.agent.join("fabric/memory-index"))
}

/// A new cold session patched into a warm process is no shard's member
/// until a rebuild (the patch refreshes no shard): a query searches it
/// directly and finds it, building no shard for one straggler, and answers
/// as an index built from scratch.
#[cfg(target_os = "linux")]
#[test]
fn a_new_cold_session_patched_in_is_searched_directly() {
  let fx = AgentDir::new();
  let count = MIN_COLD + 20;
  sessions(&fx, count, |i| format!("routine {i}"));
  let engine = all_cold(&fx);
  let index = index_of(&fx);
  assert_eq!(run(&engine, json!({"query": "routine", "scope": "global"})).total, count);
  let _ = (index.trace().shards_built(), index.trace().passes());
  write_session(&fx.project.join("s99999.jsonl"), 99_999, "routine plus uqvaldrin");
  let found = run(&engine, json!({"query": "uqvaldrin", "scope": "global"}));
  assert_eq!(session_ids(&found), ["id99999"]);
  let passes = index.trace().passes();
  // An overflow of the queue the tests share lists again, rightly.
  if passes.first() == Some(&crate::index::trace::Pass::Patched) {
    assert_eq!(index.trace().shards_built(), 0, "no shard built for one straggler");
  }
  let scratch = fx.engine(json!({"hotSessions": 0, "indexDir": fx.agent.join("scratch").to_str().unwrap()}));
  assert_eq!(run(&engine, json!({"query": "routine", "scope": "global"})).total, count + 1);
  assert_eq!(run(&scratch, json!({"query": "routine", "scope": "global"})).total, count + 1);
}

#[test]
fn changed_cold_sessions_rebuild_only_their_shard() {
  let fx = AgentDir::new();
  let count = MIN_COLD + 200;
  let paths = sessions(&fx, count, |i| format!("routine {i} vrenqalith{}", i % 3));
  let engine = all_cold(&fx);
  let index = index_of(&fx);
  let built = run(&engine, json!({"query": "vrenqalith0", "scope": "global"}));
  assert_eq!(built.total, count.div_ceil(3));
  let shards: BTreeSet<usize> = paths.iter().map(|p| placed(&fx, p)).collect();
  assert_eq!(index.trace().shards_built(), shards.len(), "a first query builds every shard with candidates");
  let dir = fx.agent.join("fabric/memory-index");
  let read_all = || (0..SHARDS).map(|s| fs::read(dir.join(file_name(Branches::Active, s))).ok()).collect::<Vec<_>>();
  let on_disk = read_all();
  // More sessions of one shard change than its straggler allowance.
  let target = *shards.iter().max_by_key(|&&s| in_shard(&fx, &paths, s).len()).unwrap();
  let members = in_shard(&fx, &paths, target);
  let changed = &members[..(members.len() / 16 + 1).max(3)];
  assert!(too_many_stragglers(changed.len(), members.len()), "{} of {}", changed.len(), members.len());
  for &i in changed {
    let mtime = fs::metadata(&paths[i]).unwrap().modified().unwrap();
    write_session(&paths[i], i, &format!("rewritten oqmendrive {i}"));
    fs::File::options().write(true).open(&paths[i]).unwrap().set_modified(mtime).unwrap();
  }
  let gained = run(&engine, json!({"query": "oqmendrive", "scope": "global"}));
  assert_eq!(index.trace().shards_built(), 1, "only the changed shard is rebuilt");
  let mut expected: Vec<String> = changed.iter().map(|i| format!("id{i}")).collect();
  let mut found = session_ids(&gained);
  expected.sort();
  found.sort();
  assert_eq!((found, gained.coverage.complete), (expected, true));
  let now = read_all();
  for shard in 0..SHARDS {
    assert_eq!(now[shard] == on_disk[shard], shard != target, "shard {shard}");
  }
  // A fresh process reads every shard from disk and builds none.
  index.dictionaries().forget();
  let again = run(&engine, json!({"query": "vrenqalith0", "scope": "global"}));
  assert_eq!(index.trace().shards_built(), 0);
  let lost = changed.iter().filter(|&&i| i % 3 == 0).count();
  assert_eq!(again.total, count.div_ceil(3) - lost);
}

/// Shard files edited past their heads (as a disk might) are read, answer
/// nothing from the edited chunk, and the query answers from the digests:
/// every session found, coverage complete; the next query rebuilds them.
#[test]
fn shard_files_damaged_past_their_heads_answer_from_the_digests_and_are_rebuilt() {
  let fx = AgentDir::new();
  let count = MIN_COLD + 200;
  sessions(&fx, count, |i| format!("routine {i} vrenqalith{}", i % 3));
  let engine = all_cold(&fx);
  let index = index_of(&fx);
  let query = json!({"query": "vrenqalith0", "scope": "global"});
  let built = run(&engine, query.clone());
  let shards = index.trace().shards_built();
  let dir = fx.agent.join("fabric/memory-index");
  for shard in 0..SHARDS {
    let path = dir.join(file_name(Branches::Active, shard));
    if let Ok(mut bytes) = fs::read(&path) {
      *bytes.last_mut().unwrap() ^= 0x01; // a small shard's only chunk
      fs::write(&path, bytes).unwrap();
    }
  }
  let fresh_process = || {
    index.dictionaries().forget();
    index.sync_state().forget_last();
  };
  fresh_process();
  let damaged = run(&engine, query.clone());
  assert_eq!((session_ids(&damaged), damaged.coverage.complete), (session_ids(&built), true));
  assert_eq!(index.trace().shards_built(), 0, "the heads are intact: read, not rebuilt");
  let resident = index.dictionaries().of(Branches::Active).unwrap();
  assert!(resident.iter().flatten().all(|shard| shard.damaged()), "every lookup read its shard's edited chunk");
  let rebuilt = run(&engine, query.clone());
  assert_eq!(session_ids(&rebuilt), session_ids(&built));
  assert_eq!(index.trace().shards_built(), shards, "every damaged shard rebuilt");
  fresh_process();
  let again = run(&engine, query);
  assert_eq!((session_ids(&again), index.trace().shards_built()), (session_ids(&built), 0));
}

#[test]
fn a_global_sync_that_builds_cold_records_builds_the_shards_a_query_then_uses() {
  let fx = AgentDir::new();
  let paths = sessions(&fx, MIN_COLD + 40, |i| format!("routine {i} zelquarin{}", i % 5));
  let engine = all_cold(&fx);
  let dir = fx.agent.join("fabric/memory-index");
  let on_disk = || (0..SHARDS).filter(|&s| dir.join(file_name(Branches::Active, s)).is_file()).count();
  // A project-scoped sync indexes the same sessions but builds no shards.
  let project =
    crate::index::sync(&engine.index_context(), &crate::session::discover::Scope::Project, Branches::Active).unwrap();
  assert_eq!((project.sessions.len(), on_disk()), (paths.len(), 0));
  // A fresh process whose records are gone: the global sync builds them again.
  for name in fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()) {
    if name.ends_with(".cold") {
      fs::remove_file(dir.join(name)).unwrap();
    }
  }
  let index = crate::index::Index::shared(dir.clone());
  index.resident().clear();
  index.sync_state().forget_last();
  index.trace().shards_built();
  crate::index::sync(&engine.index_context(), &crate::session::discover::Scope::Global, Branches::Active).unwrap();
  let shards: BTreeSet<usize> = paths.iter().map(|p| placed(&fx, p)).collect();
  assert_eq!((index.trace().shards_built(), on_disk()), (shards.len(), shards.len()), "built while indexing");
  // Served from the files just written, as a later process serves them (mapped
  // on Linux): not from the built copies, which held every shard in the heap.
  let resident = index.dictionaries().of(Branches::Active).unwrap();
  let decoded: Vec<bool> = resident.iter().flatten().map(|shard| shard.is_decoded()).collect();
  assert!(decoded.len() == shards.len() && decoded.iter().all(|&d| d), "{decoded:?}");
  let page = run(&engine, json!({"query": "zelquarin0", "scope": "global"}));
  assert_eq!((page.total, page.coverage.complete), ((MIN_COLD + 40).div_ceil(5), true));
  assert_eq!(index.trace().shards_built(), 0, "the query builds nothing");
  // A filtered query is served by the shards built from every session.
  let filtered = run(&engine, json!({"query": "zelquarin1", "scope": "global", "role": "user"}));
  assert_eq!((filtered.total, index.trace().shards_built()), ((MIN_COLD + 40 + 3) / 5, 0));
}

#[test]
fn a_project_with_fewer_cold_sessions_than_the_bound_is_served_by_the_shards_at_hand() {
  let fx = AgentDir::new();
  let text = |i: usize| format!("routine {i} quelvarin{}", i % 4);
  let mine = sessions(&fx, MIN_AT_HAND + 8, text);
  let other = fx.agent.join("sessions").join(crate::session::discover::encode_cwd("/home/u/other"));
  fs::create_dir_all(&other).unwrap();
  for i in 0..MIN_COLD {
    let path = other.join(format!("o{i:05}.jsonl"));
    write_session(&path, 100_000 + i, &text(i));
    fs::write(&path, fs::read_to_string(&path).unwrap().replace(CWD, "/home/u/other")).unwrap();
  }
  let engine = all_cold(&fx);
  let trace = index_of(&fx);
  let trace = trace.trace();
  let (served, builds) = (|| trace.dictionary_served(), || trace.shards_built());
  let project = |engine: &Engine, term: &str| run(engine, json!({"query": term, "scope": "project"}));
  // No shard yet: the project's digests are probed, and no shard is built.
  let probed = project(&engine, "quelvarin1");
  assert_eq!((served(), builds()), (0, 0));
  assert_eq!((probed.total, probed.coverage.complete), (mine.len() / 4, true));
  // A global call builds the shards; the project's query is then served by them.
  assert_eq!(run(&engine, json!({"query": "quelvarin1", "scope": "global"})).total, (mine.len() + MIN_COLD) / 4);
  assert!(builds() > 0);
  served();
  let answered = project(&engine, "quelvarin1");
  assert_eq!((served(), builds()), (1, 0), "served, nothing built");
  assert_eq!((answered.total, session_ids(&answered)), (probed.total, session_ids(&probed)));
  // A filter's subset is served per call: probed, its digests being resident.
  let filtered = run(&engine, json!({"query": "quelvarin1", "scope": "project", "role": "user"}));
  assert_eq!((filtered.total, served()), (probed.total, 0));
  // Too few candidates: probed, shards or not.
  let few = fx.engine(json!({"hotSessions": 0, "maxSyncSessions": 1_000_000}));
  for path in &mine[MIN_AT_HAND - 1..] {
    fs::remove_file(path).unwrap();
  }
  assert_eq!(project(&few, "quelvarin0").total, (MIN_AT_HAND - 1).div_ceil(4));
  assert_eq!(served(), 0);
}

#[test]
fn a_global_sync_cut_by_its_budget_leaves_the_shards_to_the_sync_that_completes() {
  let fx = AgentDir::new();
  // The first call indexes enough cold sessions to be served a dictionary.
  let paths = sessions(&fx, 2 * MIN_COLD + 40, |i| format!("routine {i} zelquarin{}", i % 5));
  let engine = fx.engine(json!({"hotSessions": 0, "maxSyncSessions": MIN_COLD + 20}));
  let dir = fx.agent.join("fabric/memory-index");
  let on_disk = || (0..SHARDS).filter(|&s| dir.join(file_name(Branches::Active, s)).is_file()).count();
  let global =
    || crate::index::sync(&engine.index_context(), &crate::session::discover::Scope::Global, Branches::Active).unwrap();
  let index = index_of(&fx);
  let first = global();
  assert!(first.coverage.reasons.contains(&crate::coverage::Reason::MaxSyncSessions), "{:?}", first.coverage);
  assert_eq!((index.trace().shards_built(), on_disk()), (0, 0), "the next call changes every shard again");
  let last = global();
  assert!(last.coverage.complete, "{:?}", last.coverage);
  let shards: BTreeSet<usize> = paths.iter().map(|p| placed(&fx, p)).collect();
  assert_eq!((index.trace().shards_built(), on_disk()), (shards.len(), shards.len()), "built once, when complete");
}

/// `count` sessions in the project dir of `cwd`, numbered from `first`.
fn sessions_of(fx: &AgentDir, cwd: &str, first: usize, count: usize) -> Vec<std::path::PathBuf> {
  let dir = fx.agent.join("sessions").join(crate::session::discover::encode_cwd(cwd));
  fs::create_dir_all(&dir).unwrap();
  let paths: Vec<std::path::PathBuf> = (first..first + count).map(|i| dir.join(format!("s{i:05}.jsonl"))).collect();
  for (i, path) in (first..).zip(&paths) {
    write_session(path, i, &format!("routine {i} {cwd} zelquarin{}", i % 5));
    fs::write(path, fs::read_to_string(path).unwrap().replace(CWD, cwd)).unwrap();
  }
  paths
}

/// The record file of every member of every shard file of active mode.
fn members_on_disk(fx: &AgentDir) -> Vec<String> {
  let dir = fx.agent.join("fabric/memory-index");
  let shards = (0..SHARDS).filter_map(|shard| load(&dir, Branches::Active, shard, u64::MAX));
  let mut files: Vec<String> = shards.flat_map(|d| d.member_files().map(String::from).collect::<Vec<_>>()).collect();
  files.sort();
  files
}

/// A project whose session count crosses a power of two of
/// [`placement::SESSIONS_PER_SHARD`] is spread over more shards: the
/// global sync that indexes the new sessions rebuilds the shards they
/// moved from and to, and removes the shards of a project whose sessions
/// are all gone. Every cold session is then a member of exactly one shard
/// file, and no shard file names a session no longer listed.
#[test]
fn sessions_moved_or_deleted_leave_no_shard_naming_them() {
  let fx = AgentDir::new();
  let engine = all_cold(&fx);
  let global = || run(&engine, json!({"query": "zelquarin1", "scope": "global"}));
  let below = placement::SESSIONS_PER_SHARD as usize - 4;
  let mut project = sessions_of(&fx, "/home/u/mine", 0, below);
  let other = sessions_of(&fx, "/home/u/other", 1_000, MIN_COLD);
  let listed = |paths: &[&[std::path::PathBuf]]| {
    let mut files: Vec<String> = paths.concat().iter().map(|p| p.to_string_lossy().into_owned()).collect();
    files.sort();
    files
  };
  // Session `i` holds zelquarin1 when `i % 5 == 1`.
  let ones = |range: std::ops::Range<usize>| range.filter(|i| i % 5 == 1).count();
  let matching = |count: usize| ones(0..count) + ones(1_000..1_000 + MIN_COLD);
  assert_eq!(global().total, matching(below));
  assert_eq!(members_on_disk(&fx), listed(&[&project, &other]));
  let shards_of = |paths: &[std::path::PathBuf]| paths.iter().map(|p| placed(&fx, p)).collect::<BTreeSet<usize>>();
  assert_eq!(shards_of(&project).len(), 1, "{below} sessions: one shard");
  project.extend(sessions_of(&fx, "/home/u/mine", below, 10));
  assert_eq!(global().total, matching(below + 10));
  assert_eq!(shards_of(&project).len(), 2, "{} sessions: two shards", below + 10);
  assert_eq!(members_on_disk(&fx), listed(&[&project, &other]), "the moved sessions are in their new shards only");
  for path in &project {
    fs::remove_file(path).unwrap();
  }
  let more = sessions_of(&fx, "/home/u/other", 2_000, 5);
  assert_eq!(global().total, ones(1_000..1_000 + MIN_COLD) + ones(2_000..2_005));
  assert_eq!(members_on_disk(&fx), listed(&[&other, &more]), "the deleted project's sessions are in no shard");
}

#[test]
fn the_unsharded_dictionary_file_of_older_versions_is_removed() {
  let fx = AgentDir::new();
  sessions(&fx, MIN_COLD + 10, |i| format!("routine {i}"));
  let engine = all_cold(&fx);
  run(&engine, json!({"query": "routine", "scope": "global"}));
  let old = fx.agent.join("fabric/memory-index").join(unsharded_file_name(Branches::Active));
  fs::write(&old, Dictionary::build(&[("/a", &digest("alpha"))]).encode().unwrap()).unwrap();
  // Every shard is rebuilt when a fresh process finds none of them.
  for shard in 0..SHARDS {
    let _ = fs::remove_file(fx.agent.join("fabric/memory-index").join(file_name(Branches::Active, shard)));
  }
  index_of(&fx).dictionaries().forget();
  run(&engine, json!({"query": "routine", "scope": "global"}));
  assert!(!old.exists());
}

// --- build time at scale (measurement, not a gate) -----------------------------------------------

/// A deterministic xorshift stream.
struct Rng(u64);

impl Rng {
  fn next(&mut self) -> u64 {
    self.0 ^= self.0 << 13;
    self.0 ^= self.0 >> 7;
    self.0 ^= self.0 << 17;
    self.0
  }

  /// A Zipf-ish rank in `0..n`: log-uniform, so rank r is drawn ~1/r as often.
  fn zipf(&mut self, n: u64) -> u64 {
    let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
    ((n as f64).powf(u) as u64).saturating_sub(1).min(n - 1)
  }
}

/// A word-like term for a rank: base-26 letters, a few more for rarer ranks.
fn word(rank: u64) -> String {
  let (mut rank, mut out) = (rank + 26 * 26, String::new());
  while rank > 0 {
    out.push((b'a' + (rank % 26) as u8) as char);
    rank /= 26;
  }
  out
}

/// `count` synthetic cold digests of about `terms` terms each: 85% drawn
/// Zipf-ish from a 200,000-word lexicon shared by all, 15% the session's own
/// identifiers.
fn synthetic(count: usize, terms: usize) -> Vec<ColdDigest> {
  let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
  let template = digest("");
  (0..count)
    .map(|session| {
      let mut vocabulary: Vec<String> = (0..terms)
        .map(|i| if i % 7 == 0 { format!("id{session}x{}", rng.next() % 100_000) } else { word(rng.zipf(200_000)) })
        .collect();
      vocabulary.sort_unstable();
      vocabulary.dedup();
      template.clone().with_content(ColdContent::new(
        crate::index::record::vocabulary::Vocabulary::from_sorted(&vocabulary),
        Vec::new(),
        Vec::new(),
      ))
    })
    .collect()
}

fn status_kb(field: &str) -> u64 {
  let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
  let line = status.lines().find(|l| l.starts_with(field)).unwrap_or_default();
  line.split_whitespace().nth(1).and_then(|kb| kb.parse().ok()).unwrap_or(0)
}

/// `PFM_DICT_SIZES=20000,100000 PFM_DICT_TERMS=400 cargo test --profile fastrel
/// build_time_at_scale -- --ignored --nocapture`: times a full build, prints
/// seconds, pairs, terms, file bytes and the peak RSS the build adds.
#[test]
#[ignore = "a measurement: run it in release mode"]
fn build_time_at_scale() {
  let sizes = std::env::var("PFM_DICT_SIZES").unwrap_or_else(|_| "20000".into());
  let terms: usize = std::env::var("PFM_DICT_TERMS").ok().and_then(|t| t.parse().ok()).unwrap_or(400);
  for count in sizes.split(',').filter_map(|s| s.trim().parse::<usize>().ok()) {
    let digests = synthetic(count, terms);
    let names = files(count);
    let pairs: Vec<(&str, &ColdDigest)> = names.iter().map(String::as_str).zip(&digests).collect();
    let total: usize = digests.iter().map(|d| d.content().unwrap().vocabulary.len()).sum();
    let _ = fs::write("/proc/self/clear_refs", "5"); // resets VmHWM to the current RSS
    let before = status_kb("VmRSS:");
    let started = std::time::Instant::now();
    let (mut terms, mut bytes) = (0, 0);
    for shard in 0..SHARDS {
      let group: Vec<(&str, &ColdDigest)> = pairs.iter().copied().filter(|(file, _)| shard_of(file) == shard).collect();
      let dictionary = Dictionary::build(&group);
      (terms, bytes) = (terms + dictionary.len(), bytes + dictionary.encode().unwrap().len());
    }
    let seconds = started.elapsed().as_secs_f64();
    let peak = status_kb("VmHWM:").saturating_sub(before);
    println!(
      "build {count} digests in {SHARDS} shards, {total} term-member pairs, {terms} shard terms: {seconds:.2} s, {:.1} MB files, +{} MB peak RSS",
      bytes as f64 / 1e6,
      peak / 1024
    );
  }
}

#[test]
fn a_merge_is_cut_at_ascending_terms_of_its_vocabularies() {
  let words: Vec<String> = (0..400).map(|n| format!("w{n:03}")).collect();
  let digests: Vec<ColdDigest> = (0..5).map(|d| digest(&words[d * 40..d * 40 + 200].join(" "))).collect();
  let contents: Vec<&ColdContent> = digests.iter().map(|d| d.content().unwrap()).collect();
  let vocabularies: Vec<(&Vocabulary, &[u8])> = contents.iter().map(|c| (&c.vocabulary, &c.frequencies[..])).collect();
  let pivots = terms::pivots(&vocabularies, 4);
  assert_eq!(pivots.len(), 3, "{pivots:?}");
  assert!(pivots.windows(2).all(|pair| pair[0] < pair[1]), "{pivots:?}");
  assert!(pivots.iter().all(|p| contents.iter().any(|c| c.vocabulary.binary_search(p).is_ok())), "{pivots:?}");
  assert_eq!(terms::pivots(&vocabularies, 1), Vec::<&str>::new());
  let ((cut, cut_postings), (whole, whole_postings)) =
    (terms::merge_parts(&vocabularies, &pivots), terms::merge_parts(&vocabularies, &[]));
  assert_eq!((cut.parts(), cut_postings), (whole.parts(), whole_postings));
}

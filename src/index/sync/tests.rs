//! Synchronization through the index's own API (no query): which pass runs
//! (reuse, patch, full), what each builds and how, and that a patched
//! result holds the records a full pass from scratch builds.

use super::*;
use crate::engine::Engine;
use crate::index::build::Made;
use crate::index::record::Body;
use crate::index::snapshot::Lengths;
use crate::index::trace::Pass;
use crate::index::watch_tests::write;
use crate::testing::AgentDir;
use serde_json::json;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

fn global(engine: &Engine) -> Snapshot {
  sync(&engine.index_context(), &Scope::Global, Branches::Active).unwrap()
}

fn index(engine: &Engine) -> Arc<Index> {
  Index::shared(engine.index_dir())
}

fn record<'a>(result: &'a Snapshot, path: &Path) -> &'a Arc<CacheRecord> {
  let synced = result.sessions.iter().find(|s| s.path == path).expect("synchronized");
  synced.record.as_ref().expect("indexed")
}

/// A hot record's entry texts, or a cold digest's vocabulary.
fn words(record: &CacheRecord) -> Vec<String> {
  match &record.body {
    Body::Hot(shard) => shard.entries().iter().map(|e| e.text.clone()).collect(),
    Body::Cold(digest) => digest.content().unwrap().vocabulary.to_vec(),
  }
}

fn append(path: &Path, id: &str, parent: &str, text: &str) {
  let entry = json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:02.000Z",
    "message": {"role": "user", "content": text}});
  fs::OpenOptions::new().append(true).open(path).unwrap().write_all(format!("{entry}\n").as_bytes()).unwrap();
}

fn set_age(path: &Path, age_secs: u64) {
  let when = SystemTime::now() - Duration::from_secs(age_secs);
  fs::File::options().write(true).open(path).unwrap().set_modified(when).unwrap();
}

/// `a` (hot, the newest) and `b` (cold), synchronized once by a full pass
/// that built both.
fn two_sessions() -> (AgentDir, Engine, PathBuf, PathBuf, Snapshot) {
  let fx = AgentDir::new();
  let a = write(&fx, "a", "alpha words", 100);
  let b = write(&fx, "b", "bravo words", 200);
  let engine = fx.engine(json!({"hotSessions": 1}));
  let first = global(&engine);
  let index = index(&engine);
  let trace = index.trace();
  assert_eq!(trace.passes(), [Pass::Full]);
  let mut built = trace.built();
  built.sort_by(|x, y| x.0.cmp(&y.0));
  assert_eq!(built, [(a.clone(), Made::Parsed), (b.clone(), Made::Parsed)]);
  assert_eq!((record(&first, &a).tier(), record(&first, &b).tier()), (Tier::Hot, Tier::Cold));
  // Looked for on disk first, and not found.
  assert_eq!(trace.opened().len(), 2);
  (fx, engine, a, b, first)
}

/// The records a full pass over the same files builds in an index of its own.
fn from_scratch(fx: &AgentDir, engine: &Engine) -> Snapshot {
  let dir = fx.agent.join("scratch");
  let scratch = fx.engine(json!({"hotSessions": engine.config.hot_sessions, "indexDir": dir.to_str().unwrap()}));
  global(&scratch)
}

#[cfg(target_os = "linux")]
#[test]
fn an_unchanged_listing_reuses_the_last_synchronization() {
  let (_fx, engine, _, _, first) = two_sessions();
  let again = global(&engine);
  assert!(Arc::ptr_eq(&first.sessions, &again.sessions), "the same session list");
  assert!(first.is(&again), "and the same derived state");
  assert!(std::ptr::eq(first.partition(), again.partition()), "so one plan, worked out once");
  assert_eq!(index(&engine).trace().passes(), [], "no pass ran");
  assert_eq!(index(&engine).trace().built(), []);
}

/// The snapshot partitions its slots by tier, and each view hands out the
/// very record the session list holds, typed by its tier.
#[test]
fn a_snapshot_reads_its_sessions_through_typed_views() {
  let (_fx, _engine, a, b, first) = two_sessions();
  let partition = first.partition();
  assert_eq!((partition.hot.as_slice(), partition.cold.as_slice()), ([0].as_slice(), [1].as_slice()));
  let (hot, cold) = (first.hot(0), first.cold(1));
  assert!(std::ptr::eq(hot.head, &**record(&first, &a)), "slot 0 is a's record");
  assert!(std::ptr::eq(cold.head, &**record(&first, &b)), "slot 1 is b's record");
  assert_eq!(words(hot.head), ["alpha words"]);
  assert_eq!(hot.shard.entries().len(), 1);
  assert_eq!(cold.digest.content().unwrap().vocabulary.to_vec(), words(cold.head));
  assert!(first.view(2).is_none(), "no slot past the list");
  let tiers: Vec<Tier> = first.records().map(|(tier, _)| tier).collect();
  assert_eq!(tiers, [Tier::Hot, Tier::Cold]);
}

/// A slot of the other tier is the caller's bug, as an index past a slice is.
#[test]
#[should_panic(expected = "slot 1 is not a hot session")]
fn a_cold_slot_has_no_hot_view() {
  let (_fx, _engine, _, _, first) = two_sessions();
  first.hot(1);
}

#[cfg(target_os = "linux")]
#[test]
fn an_append_to_the_hot_session_is_patched_in_by_resuming_its_record() {
  let (fx, engine, a, b, first) = two_sessions();
  append(&a, "a-1", "a-0", "appended zulu");
  let patched = global(&engine);
  let index = index(&engine);
  let trace = index.trace();
  assert_eq!(trace.passes(), [Pass::Patched]);
  assert_eq!(trace.built(), [(a.clone(), Made::Resumed)], "only the appended session was built");
  assert!(!patched.is(&first), "a patched list has derived state of its own");
  assert_eq!(words(record(&patched, &a)), ["alpha words", "appended zulu"]);
  assert!(Arc::ptr_eq(record(&patched, &b), record(&first, &b)), "the other record as it was");
  let c = &patched.coverage;
  assert_eq!((c.complete, c.indexed_sessions, c.eligible_sessions), (true, 2, 2));
  let scratch = from_scratch(&fx, &engine);
  for path in [&a, &b] {
    assert_eq!(record(&patched, path).body, record(&scratch, path).body, "{path:?} as a full pass builds it");
  }
  assert_eq!(patched.coverage, scratch.coverage);
}

#[cfg(target_os = "linux")]
#[test]
fn an_append_to_a_cold_session_is_patched_in_by_a_full_parse() {
  let (fx, engine, a, b, first) = two_sessions();
  append(&b, "b-1", "b-0", "appended yankee");
  // Still the older one: the tiers stay as they were.
  set_age(&b, 200);
  let patched = global(&engine);
  let index = index(&engine);
  let trace = index.trace();
  assert_eq!(trace.passes(), [Pass::Patched]);
  assert_eq!(trace.built(), [(b.clone(), Made::Parsed)], "a cold digest does not resume");
  assert_eq!(words(record(&patched, &b)), ["appended", "bravo", "words", "yankee"]);
  assert!(Arc::ptr_eq(record(&patched, &a), record(&first, &a)));
  let scratch = from_scratch(&fx, &engine);
  assert_eq!(record(&patched, &b).body, record(&scratch, &b).body);
}

/// The index dir's names read again (its watch lost events, or reported
/// our own writes late): the same names in another `Arc` are the same
/// index dir, and an append still patches.
#[cfg(target_os = "linux")]
#[test]
fn an_index_dir_listed_again_with_the_same_names_still_patches() {
  let (_fx, engine, a, _, _) = two_sessions();
  let index = index(&engine);
  index.dir().overflow_next();
  append(&a, "a-1", "a-0", "appended zulu");
  global(&engine);
  assert_eq!(index.trace().passes(), [Pass::Patched]);
  assert_eq!(index.trace().built(), [(a.clone(), Made::Resumed)]);
}

#[cfg(target_os = "linux")]
#[test]
fn a_session_that_becomes_the_newest_moves_tiers() {
  let (fx, engine, a, b, _) = two_sessions();
  append(&b, "b-1", "b-0", "appended yankee");
  let moved = global(&engine);
  let index = index(&engine);
  let trace = index.trace();
  // The patch where the watch vouches for the rest (Linux), else the full pass.
  let passes = trace.passes();
  assert!(passes == [Pass::Patched] || passes == [Pass::Full], "{passes:?}");
  let mut built = trace.built();
  built.sort_by(|x, y| x.0.cmp(&y.0));
  assert_eq!(built, [(a.clone(), Made::Parsed), (b.clone(), Made::Parsed)], "both change tier");
  assert_eq!((record(&moved, &a).tier(), record(&moved, &b).tier()), (Tier::Cold, Tier::Hot));
  assert_eq!(words(record(&moved, &b)), ["bravo words", "appended yankee"]);
  let scratch = from_scratch(&fx, &engine);
  for path in [&a, &b] {
    assert_eq!(record(&moved, path).body, record(&scratch, path).body);
  }
}

#[test]
fn a_fresh_process_loads_every_record_and_builds_none() {
  let (_fx, engine, a, b, first) = two_sessions();
  let index = index(&engine);
  index.resident().clear();
  index.sync_state().forget_last();
  let loaded = global(&engine);
  let trace = index.trace();
  assert_eq!(trace.passes(), [Pass::Full]);
  assert_eq!(trace.built(), [], "every record was current");
  let mut opened: Vec<String> =
    trace.opened().iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
  opened.sort();
  let names = |path: &Path, tier| index.record_name(path, Branches::Active, tier);
  assert_eq!(opened, {
    let mut names = vec![names(&a, Tier::Hot), names(&b, Tier::Cold)];
    names.sort();
    names
  });
  for path in [&a, &b] {
    assert_eq!(record(&loaded, path).body, record(&first, path).body);
    assert!(!Arc::ptr_eq(record(&loaded, path), record(&first, path)), "read from disk");
  }
}

#[test]
fn rebuild_cold_builds_a_cold_record_from_source_and_drops_the_last_synchronization() {
  let (_fx, engine, _, b, first) = two_sessions();
  let index = index(&engine);
  let file = index.dir().join(index.record_name(&b, Branches::Active, Tier::Cold));
  fs::remove_file(&file).unwrap();
  // What a query finds before it asks for the rebuild.
  let Body::Cold(digest) = &record(&first, &b).body else { panic!("cold") };
  assert!(digest.content().is_err(), "its content is gone with its file");
  let rebuilt = rebuild_cold(&engine.index_context(), &b, Branches::Active).expect("rebuilt");
  assert_eq!(index.trace().built(), [(b.clone(), Made::Parsed)], "parsed again: the resident record no longer answers");
  assert_eq!(words(&rebuilt), ["bravo", "words"]);
  assert!(file.is_file(), "written again");
  global(&engine);
  assert_eq!(index.trace().passes(), [Pass::Full], "the last synchronization was not reused");
}

/// Hot and cold slots, lengths, cold kinds' address counts, "words"' holders.
type WorkedOut = (Vec<usize>, Vec<usize>, Lengths, Vec<usize>, Vec<(usize, u8)>);

/// What every query of the snapshot works out (partition, lengths, kinds,
/// the dictionary serving the cold slots), as a fresh snapshot of the same
/// sessions works it out.
fn worked_out(snapshot: &Snapshot, engine: &Engine) -> WorkedOut {
  let echoes = crate::index::record::cold::Echoes::of(&engine.config);
  let partition = snapshot.partition();
  let served = snapshot.serve_every_cold(u64::MAX).expect("enough cold sessions for a dictionary");
  let mut words = served.frequencies("words", |_| None);
  words.sort_unstable();
  (
    partition.hot.clone(),
    partition.cold.to_vec(),
    snapshot.lengths(echoes).clone(),
    snapshot.cold_kinds().matching(|_| true).collect(),
    words,
  )
}

/// A patch carries over what the last snapshot worked out while its change
/// leaves it as it was (at 100,000 sessions working it out again cost each
/// append tens of milliseconds), and what it carries equals what a fresh
/// snapshot of the same sessions works out.
#[cfg(target_os = "linux")]
#[test]
fn a_patched_snapshot_carries_over_what_its_change_left_as_it_was() {
  let fx = AgentDir::new();
  let a = write(&fx, "a", "alpha words", 100);
  let cold: Vec<PathBuf> = (0..crate::index::dictionary::MIN_COLD)
    .map(|n| write(&fx, &format!("c{n}"), &format!("cold{n} words"), 200 + n as u64))
    .collect();
  let engine = fx.engine(json!({"hotSessions": 1}));
  let first = global(&engine);
  worked_out(&first, &engine);
  append(&a, "a-1", "a-0", "appended zulu words words");
  let hot_append = global(&engine);
  assert_eq!(index(&engine).trace().passes(), [Pass::Full, Pass::Patched]);
  assert!(hot_append.shares_partition(&first) && hot_append.shares_cold_terms(&first), "a hot append changes neither");
  assert_eq!(worked_out(&hot_append, &engine), worked_out(&hot_append.worked_out_afresh(), &engine));
  let echoes = crate::index::record::cold::Echoes::of(&engine.config);
  assert_ne!(hot_append.lengths(echoes), first.lengths(echoes), "the appended session's length was adjusted");
  append(&cold[7], "c7-1", "c7-0", "appended words yankee");
  set_age(&cold[7], 207); // Its place in the order kept: a patch, not a full pass.
  let cold_append = global(&engine);
  assert_eq!(index(&engine).trace().passes(), [Pass::Patched]);
  assert!(cold_append.shares_partition(&hot_append), "the same tiers");
  assert!(!cold_append.shares_cold_terms(&hot_append), "a cold append is served anew");
  assert_eq!(worked_out(&cold_append, &engine), worked_out(&cold_append.worked_out_afresh(), &engine));
}

/// Each sync key keeps its last synchronization: a one-session call (a
/// follow) or a project call between two global calls leaves the global one
/// to be reused, where it used to cost the next global call a full pass.
#[cfg(target_os = "linux")]
#[test]
fn a_one_session_call_between_global_calls_leaves_the_global_synchronization_reused() {
  let (_fx, engine, a, _, first) = two_sessions();
  let explicit = Scope::Explicit(a.to_string_lossy().into_owned());
  let one = sync(&engine.index_context(), &explicit, Branches::Active).unwrap();
  assert_eq!(one.sessions.len(), 1);
  sync(&engine.index_context(), &Scope::Project, Branches::Active).unwrap();
  assert_eq!(index(&engine).trace().passes(), [Pass::Full, Pass::Full], "the explicit and the project call");
  let again = global(&engine);
  assert!(first.is(&again), "the global synchronization as it was");
  assert_eq!(index(&engine).trace().passes(), [], "no pass ran");
  let project = sync(&engine.index_context(), &Scope::Project, Branches::Active).unwrap();
  assert_eq!(index(&engine).trace().passes(), [], "nor for the project's");
  assert_eq!(project.sessions.len(), 2);
}

/// A listing's paths are interned: a second listing (after a change) and
/// the session list name each file by the very same storage, so copying a
/// listing of 100,000 files touches none of their paths.
#[test]
fn listings_and_session_lists_share_interned_paths() {
  let (fx, engine, a, _, first) = two_sessions();
  write(&fx, "c", "charlie words", 50);
  let second = global(&engine);
  let slot = |snapshot: &Snapshot| snapshot.sessions.iter().find(|s| s.path == a.as_path()).unwrap().path;
  assert!(std::ptr::eq(slot(&first), slot(&second)), "the same path, stored once");
  assert!(std::ptr::eq(crate::index::sources::interned(&a), slot(&first)));
  let copy = a.to_string_lossy().into_owned();
  assert!(std::ptr::eq(crate::index::sources::interned(Path::new(&copy)), slot(&first)), "found by its bytes");
}

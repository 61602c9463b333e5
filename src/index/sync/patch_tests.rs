//! The incremental synchronization (`patch`) against the full pass: the
//! same result and answers after every change it takes, and a full pass for
//! every change the watch cannot vouch for.

use super::*;
use crate::engine::Engine;
use crate::index::record::compression::Alone;
use crate::index::trace::Pass;
use crate::index::watch_tests::{session, write};
use crate::index::*;
use crate::ops::recall::recall;
use crate::ops::recall::RecallRequest;
use crate::testing::{proptest_config, AgentDir};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use serde_json::json;
use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

fn entry(id: &str, parent: Option<&str>, text: &str) -> String {
  let entry = json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
    "message": {"role": "user", "content": text}});
  format!("{entry}\n")
}

fn append(path: &Path, bytes: &str) {
  fs::OpenOptions::new().append(true).open(path).unwrap().write_all(bytes.as_bytes()).unwrap();
}

/// What a caller can see after a global sync: the coverage, each session's
/// path, tier and what its record was built from, and recall's answers over
/// hot and cold records (the fixture's dir masked).
fn observe(fx: &AgentDir, engine: &Engine) -> Vec<String> {
  let synced = sync(&engine.index_context(), &Scope::Global, Branches::Active).unwrap();
  let mut out = vec![format!("{:?}", synced.coverage)];
  for s in synced.sessions.iter() {
    let record =
      s.record.as_ref().map(|r| (r.size, &r.source_hash, &r.lineage_fingerprint, r.coverage(), r.entry_count()));
    out.push(format!("{} {:?} {record:?}", s.path.display(), s.tier));
  }
  for query in ["words", "appended", "zulu"] {
    let args = json!({"query": query, "scope": "global", "pageSize": 50});
    let page = recall(engine, &RecallRequest::from_json(Some(&args)).unwrap());
    out.push(serde_json::to_string(&page).unwrap());
  }
  let agent = fx.agent.to_str().unwrap();
  out.into_iter().map(|o| o.replace(agent, "<agent>")).collect()
}

/// The same observation from an index built from scratch.
fn from_scratch(fx: &AgentDir, config: serde_json::Value, n: usize) -> Vec<String> {
  let mut config = config;
  config["indexDir"] = json!(fx.agent.join(format!("scratch{n}")).to_str().unwrap());
  let engine = fx.engine(config);
  let observed = observe(fx, &engine);
  observed.into_iter().map(|o| o.replace(&format!("scratch{n}"), "fabric/memory-index")).collect()
}

/// The passes `engine`'s index ran since the last call of this.
fn passes(engine: &Engine) -> Vec<Pass> {
  Index::shared(engine.index_dir()).trace().passes()
}

#[cfg(target_os = "linux")]
#[test]
fn an_append_is_patched_in_and_answers_as_a_full_sync() {
  let fx = AgentDir::new();
  let config = json!({"hotSessions": 1});
  let newest = write(&fx, "a", "alpha words", 100);
  let older = write(&fx, "b", "bravo words", 200);
  let engine = fx.engine(config.clone());
  observe(&fx, &engine);
  assert_eq!(passes(&engine), [Pass::Full]);
  append(&newest, &entry("a-1", Some("a-0"), "appended zulu"));
  let patched = observe(&fx, &engine);
  assert_eq!(passes(&engine), [Pass::Patched], "only the appended session was synchronized");
  assert_eq!(patched, from_scratch(&fx, config.clone(), 0));
  assert!(patched.iter().any(|p| p.contains("appended zulu")));
  // Our own record write left the index dir's listing as it was: nothing
  // changed since, so the next call reuses the result.
  observe(&fx, &engine);
  assert_eq!(passes(&engine), [], "the unchanged shortcut holds after our own write");
  // An append to the older session makes it the newest: tiers move, and
  // the patch moves both sessions. (The newest goes back in time first: two
  // appends in one timestamp tick would keep the order.)
  let back = SystemTime::now() - Duration::from_secs(50);
  fs::File::options().write(true).open(&newest).unwrap().set_modified(back).unwrap();
  observe(&fx, &engine);
  passes(&engine);
  append(&older, &entry("b-1", Some("b-0"), "appended yankee"));
  let moved = observe(&fx, &engine);
  assert_eq!(passes(&engine).first(), Some(&Pass::Patched), "a move in the order is patched");
  assert_eq!(moved, from_scratch(&fx, config, 1));
  assert!(moved.iter().any(|p| p.contains("b.jsonl Hot")) && moved.iter().any(|p| p.contains("a.jsonl Cold")));
}

/// A new session is patched in: it joins the result in its place, and the
/// session it pushes past the newest `hotSessions` goes cold (its hot record
/// file replaced by a cold one), as a full sync would have it.
#[cfg(target_os = "linux")]
#[test]
fn a_new_session_is_patched_in_and_pushes_the_oldest_hot_one_cold() {
  let TwoSessions { fx, config, a: hot, engine, index, .. } = two_sessions();
  let record = |path: &Path, tier| engine.index_dir().join(index.record_name(path, Branches::Active, tier));
  assert!(record(&hot, Tier::Hot).is_file());
  write(&fx, "c", "charlie words zulu", 0);
  let patched = observe(&fx, &engine);
  assert_eq!(passes(&engine), [Pass::Patched], "no full pass for a new session");
  assert_eq!(patched, from_scratch(&fx, config.clone(), 0));
  assert!(patched.iter().any(|p| p.contains("a.jsonl Cold")), "{patched:?}");
  assert!(record(&hot, Tier::Cold).is_file() && !record(&hot, Tier::Hot).exists());
  // A file that is not a session joins nothing, as in a full pass.
  fs::write(fx.project.join("notes.jsonl"), "not json\n").unwrap();
  assert_eq!(observe(&fx, &engine), from_scratch(&fx, config, 1));
}

/// Every change the watch cannot vouch for, or that is not an append to a
/// session of the last result, takes the full pass, and answers as one.
#[cfg(target_os = "linux")]
#[test]
fn changes_the_patch_cannot_vouch_for_take_the_full_pass() {
  let fx = AgentDir::new();
  let config = json!({"hotSessions": 1});
  let a = write(&fx, "a", "alpha words", 100);
  let b = write(&fx, "b", "bravo words", 200);
  // More sessions than a patch re-checks: after an overflow every one is in doubt.
  for n in 0..super::patch::MAX_PATCHED {
    write(&fx, &format!("c{n}"), "charlie words", 300 + n as u64);
  }
  let empty = fx.project.join("e.jsonl");
  fs::write(&empty, "").unwrap();
  let engine = fx.engine(config.clone());
  observe(&fx, &engine);
  let index = Index::shared(engine.index_dir());
  let steps: [(&str, &dyn Fn()); 5] = [
    // Named by the watch but not in the last result (not a session yet).
    ("empty file becomes a session", &|| append(&empty, &session("e", "echo words zulu"))),
    ("overflow", &|| {
      append(&a, &entry("a-1", Some("a-0"), "appended xray"));
      index.listing().watcher().overflow_next.store(true, std::sync::atomic::Ordering::Relaxed);
    }),
    ("deleted", &|| fs::remove_file(&b).unwrap()),
    ("renamed", &|| fs::rename(&a, fx.project.join("r.jsonl")).unwrap()),
    ("settings", &|| {}),
  ];
  for (n, (name, change)) in steps.iter().enumerate() {
    passes(&engine);
    change();
    let config = if *name == "settings" { json!({"hotSessions": 2}) } else { config.clone() };
    let engine = fx.engine(config.clone());
    assert_eq!(observe(&fx, &engine), from_scratch(&fx, config, n), "{name}");
    // The call that saw the change. (Events queued before a re-arming can
    // reach it when another index watches the same dir: a later call then
    // re-checks that file, which is only conservative.)
    assert_eq!(passes(&engine).first(), Some(&Pass::Full), "{name}");
  }
}

/// A record someone else deletes from the index dir is seen by the next
/// call (its listing is kept current by the watch, not assumed) and written
/// back, as before.
#[cfg(target_os = "linux")]
#[test]
fn a_record_deleted_by_someone_else_is_written_back() {
  let fx = AgentDir::new();
  let a = write(&fx, "a", "alpha words", 100);
  let engine = fx.engine(json!({}));
  observe(&fx, &engine);
  append(&a, &entry("a-1", Some("a-0"), "appended zulu"));
  observe(&fx, &engine);
  // Our own write done (it is behind the call) before someone else's delete.
  Index::shared(engine.index_dir()).writes().flush();
  let dir = engine.index_dir();
  let record = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).find(|p| p.to_string_lossy().ends_with(".hot"));
  let record = record.expect("the hot record");
  fs::remove_file(&record).unwrap();
  passes(&engine);
  observe(&fx, &engine);
  assert_eq!(passes(&engine), [Pass::Full]);
  assert!(record.exists(), "written back");
}

/// The hot record file of `path` in `engine`'s index, if there is one.
fn hot_record(engine: &Engine, path: &Path) -> Option<Vec<u8>> {
  fs::read(engine.index_dir().join(record::file_name(path, Branches::Active, Tier::Hot))).ok()
}

/// Forgets what this process holds, as a fresh process would.
fn forget(index: &Index) {
  index.resident().clear();
  index.sync_state().forget_last();
}

/// Two sessions, `a` the hot one, synchronized once: where each
/// write-behind test starts.
struct TwoSessions {
  fx: AgentDir,
  config: serde_json::Value,
  a: PathBuf,
  b: PathBuf,
  engine: Engine,
  index: Arc<Index>,
}

fn two_sessions() -> TwoSessions {
  let fx = AgentDir::new();
  let config = json!({"hotSessions": 1});
  let a = write(&fx, "a", "alpha words", 100);
  let b = write(&fx, "b", "bravo words", 200);
  let engine = fx.engine(config.clone());
  let index = Index::shared(engine.index_dir());
  observe(&fx, &engine);
  passes(&engine);
  TwoSessions { fx, config, a, b, engine, index }
}

impl TwoSessions {
  /// Appends an entry to `a` and synchronizes it with the writer held (it
  /// writes once the guard goes); what recall then observes.
  fn append_held(&self, id: &str, parent: &str, text: &str) -> (parking_lot::MutexGuard<'_, ()>, Vec<String>) {
    append(&self.a, &entry(id, Some(parent), text));
    let paused = self.index.writes().paused.lock();
    (paused, observe(&self.fx, &self.engine))
  }
}

/// A patched append leaves the previous record on disk until the writer
/// writes the new one after the call; the disk is then exactly the resident
/// record. Before that, a fresh process resumes from the old record and
/// answers as a full build does.
#[cfg(target_os = "linux")]
#[test]
fn a_patched_append_is_written_behind_the_call() {
  let t = two_sessions();
  let before = hot_record(&t.engine, &t.a).expect("written by the full pass");
  let (paused, patched) = t.append_held("a-1", "a-0", "appended zulu");
  assert_eq!(passes(&t.engine), [Pass::Patched]);
  assert_eq!(hot_record(&t.engine, &t.a).as_ref(), Some(&before), "not written by the call");
  drop(paused);
  t.index.writes().flush();
  let resident = t.index.resident().get(&t.a, Branches::Active).unwrap().record.clone();
  assert_eq!(hot_record(&t.engine, &t.a), Some(resident.encode_shared(&Alone).unwrap()), "written behind it");
  assert!(patched.iter().any(|p| p.contains("appended zulu")));
  // Queued again, and this process gone before the writer ran: the next
  // one resumes from the old record on disk.
  let (paused, _) = t.append_held("a-2", "a-1", "appended yankee");
  let older = hot_record(&t.engine, &t.a);
  forget(&t.index);
  t.index.trace().resumed();
  passes(&t.engine);
  assert_eq!(observe(&t.fx, &t.engine), from_scratch(&t.fx, t.config.clone(), 0));
  assert_eq!(passes(&t.engine), [Pass::Full]);
  assert_eq!(t.index.trace().resumed(), std::slice::from_ref(&t.a), "resumed from the record the disk held");
  assert_ne!(hot_record(&t.engine, &t.a), older, "the full pass wrote its record now");
  drop(paused);
  t.index.writes().flush();
}

/// A record written after its source was cut back (it claims bytes the
/// source no longer has) is never trusted: it is checked against the
/// source like any other, and a fresh process answers from the source.
#[cfg(target_os = "linux")]
#[test]
fn a_late_write_after_the_source_was_cut_is_not_trusted() {
  let t = two_sessions();
  let original = fs::read(&t.a).unwrap();
  let (paused, _) = t.append_held("a-1", "a-0", "appended zulu");
  fs::write(&t.a, &original).unwrap();
  drop(paused);
  t.index.writes().flush();
  let on_disk =
    record::CacheRecord::decode(&hot_record(&t.engine, &t.a).unwrap(), &Alone, crate::config::MAX_COLD_CACHE_BYTES)
      .unwrap();
  assert!(on_disk.size > original.len() as u64, "the disk claims the cut bytes");
  let expected = from_scratch(&t.fx, t.config.clone(), 0);
  assert!(!expected.iter().any(|p| p.contains("appended zulu")));
  forget(&t.index);
  assert_eq!(observe(&t.fx, &t.engine), expected, "a fresh process");
}

/// A queued record replaced before the writer ran (here: its session moved
/// to the cold tier) is not written: no hot record beside the cold one.
#[cfg(target_os = "linux")]
#[test]
fn a_queued_record_that_no_longer_answers_is_not_written() {
  let t = two_sessions();
  let (paused, _) = t.append_held("a-1", "a-0", "appended zulu");
  let back = SystemTime::now() - Duration::from_secs(50);
  fs::File::options().write(true).open(&t.a).unwrap().set_modified(back).unwrap();
  append(&t.b, &entry("b-1", Some("b-0"), "appended yankee"));
  passes(&t.engine);
  assert_eq!(observe(&t.fx, &t.engine), from_scratch(&t.fx, t.config.clone(), 0));
  assert_eq!(passes(&t.engine).first(), Some(&Pass::Patched), "tiers moved, by the patch");
  drop(paused);
  t.index.writes().flush();
  assert_eq!(hot_record(&t.engine, &t.a), None, "a is cold now");
  assert!(t.engine.index_dir().join(record::file_name(&t.a, Branches::Active, Tier::Cold)).exists());
}

/// One step of a random history of the agent dir.
#[derive(Debug, Clone)]
enum Step {
  /// Appends whole entries to session `n` (modulo those there).
  Append(usize, u8),
  /// A partial line (a writer's flush), completed by the next append.
  Partial(usize),
  /// A new session.
  Create,
  Delete(usize),
  /// Rewrites session `n` with other text.
  Rewrite(usize),
}

fn step() -> impl Strategy<Value = Step> {
  prop_oneof![
    6 => (0..4usize, 1..3u8).prop_map(|(n, k)| Step::Append(n, k)),
    1 => (0..4usize).prop_map(Step::Partial),
    1 => Just(Step::Create),
    1 => (0..4usize).prop_map(Step::Delete),
    1 => (0..4usize).prop_map(Step::Rewrite),
  ]
}

/// A random history of appends (mostly to the newest session, as Pi does),
/// new, deleted and rewritten sessions: after every step the kept index
/// observes what an index built from scratch does.
#[cfg(target_os = "linux")]
#[test]
fn a_patched_index_over_random_changes_equals_one_built_from_scratch() {
  let mut runner = TestRunner::new(proptest_config(24));
  let (patched, steps_run) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
  runner
    .run(&(proptest::collection::vec(step(), 1..12), 1..3u64), |(steps, hot)| {
      let fx = AgentDir::new();
      let config = json!({"hotSessions": hot});
      // (path, id of the last entry, a partial line pending)
      let mut live: Vec<(PathBuf, String, bool)> = Vec::new();
      for (n, name) in ["s0", "s1", "s2"].iter().enumerate() {
        live.push((write(&fx, name, &format!("{name} words"), 300 - 100 * n as u64), format!("{name}-0"), false));
      }
      let engine = fx.engine(config.clone());
      observe(&fx, &engine);
      let mut made = 3;
      for (n, step) in steps.iter().enumerate() {
        match step.clone() {
          Step::Append(_, _) | Step::Partial(_) | Step::Delete(_) | Step::Rewrite(_) if live.is_empty() => continue,
          // Mostly the newest (last written), as an agent session appends.
          Step::Append(which, k) => {
            let at = if which < 2 { live.len() - 1 } else { which % live.len() };
            let (path, last, partial) = &mut live[at];
            let mut text = if *partial { "\"}}\n".to_string() } else { String::new() };
            for i in 0..k {
              let id = format!("{last}-{n}-{i}");
              text.push_str(&entry(&id, Some(last), &format!("appended zulu {n} {i}")));
              *last = id;
            }
            append(path, &text);
            *partial = false;
            let moved = live.remove(at);
            live.push(moved);
          }
          Step::Partial(which) => {
            let at = which % live.len();
            let (path, last, partial) = &mut live[at];
            if !*partial {
              append(path, &format!("{{\"type\":\"message\",\"id\":\"p{n}\",\"parentId\":\"{last}\",\"message\":{{\"role\":\"user\",\"content\":\"half"));
              *last = format!("p{n}");
              *partial = true;
              let moved = live.remove(at);
              live.push(moved);
            }
          }
          Step::Create => {
            let name = format!("s{made}");
            made += 1;
            live.push((write(&fx, &name, "new words", 0), format!("{name}-0"), false));
          }
          Step::Delete(which) => {
            let (path, _, _) = live.remove(which % live.len());
            fs::remove_file(path).unwrap();
          }
          Step::Rewrite(which) => {
            let at = which % live.len();
            let (path, last, partial) = &mut live[at];
            let id = path.file_stem().unwrap().to_string_lossy().into_owned();
            fs::write(&*path, session(&id, "rewritten words")).unwrap();
            *last = format!("{id}-0");
            *partial = false;
            let moved = live.remove(at);
            live.push(moved);
          }
        }
        passes(&engine);
        let kept = observe(&fx, &engine);
        patched.set(patched.get() + passes(&engine).iter().filter(|p| **p == Pass::Patched).count());
        steps_run.set(steps_run.get() + 1);
        prop_assert_eq!(kept, from_scratch(&fx, config.clone(), n), "after step {} ({:?})", n, step);
      }
      Ok(())
    })
    .unwrap();
  // Not vacuous: appends to the newest session, the common step, are patched.
  let (patched, steps_run) = (patched.get(), steps_run.get());
  eprintln!("{patched} of {steps_run} steps patched");
  assert!(patched * 5 >= steps_run, "only {patched} of {steps_run} steps patched");
}

use super::*;
use crate::testing::{AgentDir, CWD};
use record::Body;
use serde_json::json;
use std::time::{Duration, SystemTime};

type Fixture = AgentDir;

fn fixture() -> Fixture {
  AgentDir::new()
}

fn session_text(id: &str, texts: &[&str]) -> String {
  let mut out = format!("{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"{CWD}\"}}\n");
  let mut parent: Option<String> = None;
  for (i, text) in texts.iter().enumerate() {
    let entry = json!({"type": "message", "id": format!("{id}-{i}"), "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
      "message": {"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": text}});
    out.push_str(&entry.to_string());
    out.push('\n');
    parent = Some(format!("{id}-{i}"));
  }
  out
}

trait Sessions {
  fn write(&self, id: &str, texts: &[&str], age_secs: u64) -> PathBuf;
  fn index_dir(&self) -> PathBuf;
  fn index_files(&self) -> Vec<String>;
}

impl Sessions for Fixture {
  fn write(&self, id: &str, texts: &[&str], age_secs: u64) -> PathBuf {
    let path = self.project.join(format!("{id}.jsonl"));
    fs::write(&path, session_text(id, texts)).unwrap();
    set_age(&path, age_secs);
    path
  }

  fn index_dir(&self) -> PathBuf {
    self.agent.join("fabric").join("memory-index")
  }

  fn index_files(&self) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(self.index_dir())
      .map(|r| r.filter_map(Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
      .unwrap_or_default();
    names.sort();
    names
  }
}

fn set_age(path: &Path, age_secs: u64) {
  let when = SystemTime::now() - Duration::from_secs(age_secs);
  fs::File::options().write(true).open(path).unwrap().set_modified(when).unwrap();
}

fn global(engine: &Engine) -> SyncResult {
  sync(engine, &Scope::Global, Branches::Active).unwrap()
}

fn tiers(result: &SyncResult) -> Vec<(String, &'static str)> {
  result
    .sessions
    .iter()
    .map(|s| (s.path.file_stem().unwrap().to_string_lossy().into_owned(), s.tier.as_str()))
    .collect()
}

#[test]
fn builds_records_on_disk_and_reports_complete_coverage() {
  let fx = fixture();
  fx.write("a", &["hello world", "hi"], 100);
  fx.write("b", &["second session"], 50);
  let result = global(&fx.engine(json!({"hotSessions": 1})));
  assert_eq!(tiers(&result), [("b".to_string(), "hot"), ("a".to_string(), "cold")]);
  let c = &result.coverage;
  assert!(c.complete, "{c:?}");
  assert_eq!((c.indexed_sessions, c.eligible_sessions, c.stale_sessions, c.incomplete_sessions), (2, 2, 0, 0));
  let names = fx.index_files();
  assert_eq!(names.len(), 2);
  assert!(
    names.iter().any(|n| n.ends_with("-b.jsonl.active.hot"))
      && names.iter().any(|n| n.ends_with("-a.jsonl.active.cold"))
  );
  #[cfg(unix)]
  {
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(fs::metadata(fx.index_dir()).unwrap().permissions().mode() & 0o777, 0o700);
    for name in &names {
      assert_eq!(fs::metadata(fx.index_dir().join(name)).unwrap().permissions().mode() & 0o777, 0o600);
    }
  }
  let cold = result.sessions[1].record.as_ref().unwrap();
  let Body::Cold(digest) = &cold.body else { panic!("cold") };
  assert_eq!(digest.vocabulary.to_vec(), ["hello", "hi", "world"]);
  let cold_file = names.iter().find(|n| n.ends_with(".cold")).unwrap();
  assert_eq!(cold.cache_bytes, fs::metadata(fx.index_dir().join(cold_file)).unwrap().len());
  assert!(cold.cache_source_ratio > 0.0);
  let hot = result.sessions[0].record.as_ref().unwrap();
  let Body::Hot(shard) = &hot.body else { panic!("hot") };
  assert_eq!(shard.postings.get("session"), &[(0, 1)]);
}

#[test]
fn active_and_all_modes_use_separate_records() {
  let fx = fixture();
  let path = fx.project.join("s.jsonl");
  let text = session_text("s", &["root words"])
    + &json!({"type":"message","id":"x","parentId":"s-0","message":{"role":"user","content":"abandonedsibling"}})
      .to_string()
    + "\n"
    + &json!({"type":"message","id":"y","parentId":"s-0","message":{"role":"user","content":"chosen branch"}})
      .to_string()
    + "\n";
  fs::write(&path, text).unwrap();
  let engine = fx.engine(json!({"hotSessions": 0}));
  let vocabulary = |branches| {
    let result = sync(&engine, &Scope::Global, branches).unwrap();
    match &result.sessions[0].record.as_ref().unwrap().body {
      Body::Cold(d) => d.vocabulary.to_vec(),
      Body::Hot(_) => panic!("cold expected"),
    }
  };
  assert!(!vocabulary(Branches::Active).contains(&"abandonedsibling".to_string()));
  assert!(vocabulary(Branches::All).contains(&"abandonedsibling".to_string()));
  assert_eq!(fx.index_files().iter().filter(|n| n.ends_with(".active.cold") || n.ends_with(".all.cold")).count(), 2);
}

#[test]
fn crossing_the_tier_boundary_replaces_the_record() {
  let fx = fixture();
  let old = fx.write("old", &["old text"], 300);
  fx.write("mid", &["mid text"], 200);
  let engine = fx.engine(json!({"hotSessions": 1}));
  assert_eq!(tiers(&global(&engine)), [("mid".into(), "hot"), ("old".into(), "cold")]);
  // A newer session demotes "mid"; appending to "old" promotes it.
  fx.write("new", &["new text"], 100);
  let demoted = global(&engine);
  assert_eq!(tiers(&demoted), [("new".into(), "hot"), ("mid".into(), "cold"), ("old".into(), "cold")]);
  assert!(fx.index_files().iter().any(|n| n.ends_with("-mid.jsonl.active.cold")));
  assert!(!fx.index_files().iter().any(|n| n.ends_with("-mid.jsonl.active.hot")));
  let mut text = fs::read_to_string(&old).unwrap();
  text.push_str(
    &json!({"type":"message","id":"old-9","parentId":"old-0","message":{"role":"user","content":"revived"}})
      .to_string(),
  );
  text.push('\n');
  fs::write(&old, text).unwrap();
  let promoted = global(&engine);
  assert_eq!(promoted.sessions[0].tier, Tier::Hot);
  assert!(promoted.sessions[0].path.ends_with("old.jsonl"));
  assert!(fx.index_files().iter().any(|n| n.ends_with("-old.jsonl.active.hot")));
  assert!(!fx.index_files().iter().any(|n| n.ends_with("-old.jsonl.active.cold")));
  assert_eq!(fx.index_files().len(), 3);
}

#[test]
fn stale_foreign_and_orphaned_records_are_removed() {
  let fx = fixture();
  let gone = fx.write("gone", &["bye"], 100);
  fx.write("kept", &["hi"], 50);
  let engine = fx.engine(json!({}));
  global(&engine);
  let dir = fx.index_dir();
  fs::write(dir.join("0123456789abcdef-v5.jsonl.digest.json"), "{\"cacheVersion\":5}").unwrap();
  fs::write(dir.join("junk.txt"), "x").unwrap();
  fs::write(dir.join("fedcba9876543210-nosuch.jsonl.active.hot"), "PFMIDX06garbage").unwrap();
  let kept = fx.index_files().into_iter().find(|n| n.contains("-kept.jsonl")).unwrap();
  fs::write(dir.join(&kept), "PFMIDX06torn").unwrap();
  fs::remove_file(&gone).unwrap();
  let fresh = fx.engine(json!({}));
  Index::shared(fx.index_dir()).resident.clear();
  let result = global(&fresh);
  assert!(result.coverage.complete);
  assert_eq!(result.coverage.eligible_sessions, 1);
  let names = fx.index_files();
  assert_eq!(names, std::slice::from_ref(&kept));
  assert!(record::CacheRecord::decode(&fs::read(dir.join(&kept)).unwrap()).is_some(), "torn record rebuilt");
}

#[test]
fn same_size_rewrites_are_detected_even_with_the_old_mtime() {
  let fx = fixture();
  let path = fx.write("s", &["alpha"], 3600);
  let engine = fx.engine(json!({"hotSessions": 0}));
  let first = global(&engine).sessions[0].record.clone().unwrap();
  let mtime = fs::metadata(&path).unwrap().modified().unwrap();
  fs::write(&path, session_text("s", &["omega"])).unwrap();
  fs::File::options().write(true).open(&path).unwrap().set_modified(mtime).unwrap();
  assert_eq!(fs::metadata(&path).unwrap().len(), first.size);
  let second = global(&engine).sessions[0].record.clone().unwrap();
  assert_ne!(second.source_hash, first.source_hash);
  let Body::Cold(digest) = &second.body else { panic!() };
  assert_eq!(digest.vocabulary.to_vec(), ["omega"]);
}

#[test]
fn cold_caps_name_their_reasons() {
  let fx = fixture();
  let many: String = (0..2000).map(|i| format!("token{i} ")).collect();
  fx.write("s", &[&many], 100);
  let vocab = global(&fx.engine(json!({"hotSessions": 0, "maxColdVocabularyBytes": 100})));
  assert_eq!(vocab.coverage.reasons, ["max_cold_vocabulary_bytes"]);
  assert!(!vocab.coverage.complete);
  assert_eq!(vocab.coverage.incomplete_sessions, 1);
  let capped = global(&fx.engine(json!({"hotSessions": 0, "maxColdCacheBytes": 2048})));
  assert_eq!(capped.coverage.reasons, ["max_cold_cache_bytes"]);
  let record = capped.sessions[0].record.as_ref().unwrap();
  assert!(record.cache_bytes <= 2048);
  let Body::Cold(digest) = &record.body else { panic!() };
  assert!(!digest.vocabulary.is_empty() && digest.vocabulary.len() < 2000);
  assert!(digest.vocabulary.to_vec().windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn work_budgets_stop_indexing_and_keep_sessions_counted() {
  let fx = fixture();
  for (i, id) in ["a", "b", "c"].iter().enumerate() {
    fx.write(id, &["some text here"], 100 + i as u64);
  }
  let sessions = global(&fx.engine(json!({"maxSyncSessions": 1})));
  let c = &sessions.coverage;
  assert_eq!((c.indexed_sessions, c.eligible_sessions, c.stale_sessions), (1, 3, 2));
  assert_eq!(c.reasons, ["max_sync_sessions"]);
  assert!(!c.complete);
  // The next call continues where this one stopped.
  let next = global(&fx.engine(json!({"maxSyncSessions": 1})));
  assert_eq!(next.coverage.indexed_sessions, 2);
  // Fresh records cost nothing; only work actually done is charged.
  let warm = global(&fx.engine(json!({"maxSyncSessions": 1, "maxSyncSourceBytes": 1024})));
  assert_eq!((warm.coverage.indexed_sessions, warm.coverage.reasons.len()), (3, 0));
  let other = fixture();
  for id in ["a", "b", "c"] {
    other.write(id, &[&"x".repeat(600)], 100);
  }
  let bytes = global(&other.engine(json!({"maxSyncSourceBytes": 1024})));
  assert_eq!(bytes.coverage.reasons, ["max_sync_source_bytes"]);
  assert_eq!(bytes.coverage.indexed_sessions, 1);
}

#[test]
fn deleting_the_index_dir_rebuilds_identical_records() {
  let fx = fixture();
  fx.write("a", &["one two three"], 200);
  fx.write("b", &["four five"], 100);
  let engine = fx.engine(json!({"hotSessions": 1}));
  let strip = |r: &SyncResult| -> Vec<(String, Body)> {
    r.sessions.iter().map(|s| s.record.as_ref().unwrap()).map(|r| (r.source_hash.clone(), r.body.clone())).collect()
  };
  let before = strip(&global(&engine));
  fs::remove_dir_all(fx.index_dir()).unwrap();
  Index::shared(fx.index_dir()).resident.clear();
  let after = global(&engine);
  assert_eq!(strip(&after), before);
  assert_eq!(fx.index_files().len(), 2);
}

#[test]
fn a_thousand_and_one_sessions_are_fully_covered() {
  let fx = fixture();
  for i in 0..1001 {
    let rare = if i == 1000 { "rarelexeme_000 ΩMEGA雪" } else { "common words only" };
    fx.write(&format!("s{i:04}"), &[rare, "reply"], 10 + i);
  }
  let result = global(&fx.engine(json!({"maxSessions": 10})));
  let c = &result.coverage;
  assert!(c.complete, "{c:?}");
  assert_eq!((c.indexed_sessions, c.eligible_sessions), (1001, 1001));
  assert_eq!(result.sessions.iter().filter(|s| s.tier == Tier::Hot).count(), 50);
  let oldest = result.sessions.last().unwrap().record.as_ref().unwrap();
  let Body::Cold(digest) = &oldest.body else { panic!() };
  assert!(digest.vocabulary.binary_search("ωmega雪").is_ok());
  let project = sync(&fx.engine(json!({})), &Scope::Project, Branches::Active).unwrap();
  assert_eq!(project.coverage.indexed_sessions, 1001);
}

#[test]
fn cleanup_is_bounded_by_its_budget() {
  let fx = fixture();
  fx.write("a", &["text"], 100);
  global(&fx.engine(json!({})));
  for i in 0..3 {
    fs::write(fx.index_dir().join(format!("{i:016x}-gone.jsonl.active.hot")), "x").unwrap();
  }
  let first = global(&fx.engine(json!({"maxCacheCleanupFiles": 2})));
  assert_eq!(first.coverage.reasons, ["cache_cleanup_budget"]);
  assert_eq!(fx.index_files().len(), 2);
  let second = global(&fx.engine(json!({"maxCacheCleanupFiles": 2})));
  assert!(second.coverage.complete);
  assert_eq!(fx.index_files().len(), 1);
}

#[test]
fn progress_reports_the_plan_then_every_build_and_charges_appends_only_their_bytes() {
  use std::io::Write;
  let fx = fixture();
  let a = fx.write("a", &["alpha words", "reply"], 100);
  let b = fx.write("b", &["beta words"], 50);
  let reports = Arc::new(Mutex::new(Vec::new()));
  let mut engine = fx.engine(json!({}));
  let sink = reports.clone();
  engine.progress = Some(progress::ProgressSink(Arc::new(move |p| sink.lock().push(p))));
  global(&engine);
  let size = |p: &Path| fs::metadata(p).unwrap().len();
  let total = size(&a) + size(&b);
  let first = reports.lock().clone();
  assert_eq!(first.len(), 3, "the plan, then one report per build: {first:?}");
  assert_eq!((first[0].eligible_sessions, first[0].fresh_sessions, first[0].sessions_to_index), (2, 0, 2));
  assert_eq!((first[0].sessions_indexed, first[0].bytes_indexed, first[0].bytes_to_index), (0, 0, total));
  assert_eq!((first[2].sessions_indexed, first[2].bytes_indexed), (2, total));
  reports.lock().clear();
  let before = size(&a);
  let line =
    json!({"type":"message","id":"a-9","parentId":"a-1","message":{"role":"user","content":"more"}}).to_string() + "\n";
  fs::OpenOptions::new().append(true).open(&a).unwrap().write_all(line.as_bytes()).unwrap();
  global(&engine);
  let second = reports.lock().clone();
  assert_eq!((second[0].fresh_sessions, second[0].sessions_to_index), (1, 1), "{second:?}");
  assert_eq!(second.last().unwrap().bytes_indexed, size(&a) - before, "an append parses only its new bytes");
}

use super::*;
use crate::config::MAX_COLD_CACHE_BYTES;
use crate::engine::Engine;
use crate::session::discover::Scope;
use crate::session::lineage::Branches;
use crate::session::source::{StatStamp, RACY_WINDOW_NS};
use crate::testing::{owned_word, shared_words, AgentDir, CWD};
use parking_lot::Mutex;
use record::compression::Alone;
use record::Tier;
use record::{Body, CacheRecord};
use serde_json::json;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
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

  /// The index dir's files but the session dirs' listings and the dir's own,
  /// which every full sync may write (tested in `dir::listing`, and
  /// `session_dirs_*` and `*_index_dir_*` below).
  fn index_files(&self) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(self.index_dir())
      .map(|r| r.filter_map(Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
      .unwrap_or_default();
    names.retain(|name| name != dir::IndexFile::SESSION_DIRS && name != dir::IndexFile::INDEX_DIR_LISTING);
    names.sort();
    names
  }
}

fn set_age(path: &Path, age_secs: u64) {
  let when = SystemTime::now() - Duration::from_secs(age_secs);
  fs::File::options().write(true).open(path).unwrap().set_modified(when).unwrap();
}

/// `body` with a cold digest's content read (and kept), so the copy still
/// compares equal after its record file is gone or damaged.
fn loaded(body: &Body) -> Body {
  if let Body::Cold(digest) = body {
    digest.content().expect("readable");
  }
  body.clone()
}

fn global(engine: &Engine) -> Snapshot {
  sync(&engine.index_context(), &Scope::Global, Branches::Active).unwrap()
}

fn tiers(result: &Snapshot) -> Vec<(String, &'static str)> {
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
  let names: Vec<String> = fx.index_files().into_iter().filter(|n| n != dir::MARKER).collect();
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
  assert_eq!(digest.content().unwrap().vocabulary.to_vec(), ["hello", "hi", "world"]);
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
    let result = sync(&engine.index_context(), &Scope::Global, branches).unwrap();
    match &result.sessions[0].record.as_ref().unwrap().body {
      Body::Cold(d) => d.content().unwrap().vocabulary.to_vec(),
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
  assert_eq!(fx.index_files().len(), 4, "three records and the marker");
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
  fs::write(dir.join("fedcba9876543210-nosuch.jsonl.active.hot"), "PFMIDX07garbage").unwrap();
  let kept = fx.index_files().into_iter().find(|n| n.contains("-kept.jsonl")).unwrap();
  fs::write(dir.join(&kept), "PFMIDX07torn").unwrap();
  fs::remove_file(&gone).unwrap();
  let fresh = fx.engine(json!({}));
  Index::shared(fx.index_dir()).resident().clear();
  let result = global(&fresh);
  assert!(result.coverage.complete);
  assert_eq!(result.coverage.eligible_sessions, 1);
  let names = fx.index_files();
  // Files without the record magic were never the index's: they stay.
  let mut expected = [dir::MARKER, "0123456789abcdef-v5.jsonl.digest.json", &kept, "junk.txt"];
  expected.sort_unstable(); // `kept`'s hash prefix (of the temp path) sorts anywhere
  assert_eq!(names, expected);
  assert!(
    record::CacheRecord::decode(&fs::read(dir.join(&kept)).unwrap(), &Alone, MAX_COLD_CACHE_BYTES).is_some(),
    "torn record rebuilt"
  );
}

#[test]
fn records_of_another_hosts_session_dir_are_kept_until_their_source_goes() {
  let fx = fixture();
  fx.write("here", &["hi"], 50);
  let custom = fx.agent.parent().unwrap().join("custom-sessions");
  fs::create_dir_all(&custom).unwrap();
  let elsewhere = custom.join("there.jsonl");
  fs::write(&elsewhere, session_text("there", &["far away"])).unwrap();
  set_age(&elsewhere, 60);
  let with_dir = fx.engine(json!({})).with_session_dir(custom.to_str());
  assert_eq!(global(&with_dir).coverage.eligible_sessions, 2);
  let theirs = |fx: &Fixture| fx.index_files().into_iter().filter(|n| n.contains("-there.jsonl")).count();
  assert_eq!(theirs(&fx), 1);
  // A host without the custom dir (the CLI, another Pi) shares the index.
  let without = fx.engine(json!({}));
  assert_eq!(global(&without).coverage.eligible_sessions, 1);
  assert_eq!(theirs(&fx), 1, "a live session's record is not an orphan");
  fs::remove_file(&elsewhere).unwrap();
  // A fresh process checks again (and its first call is a full pass).
  Index::shared(fx.index_dir()).dir().forget_elsewhere();
  Index::shared(fx.index_dir()).sync_state().forget_last();
  let touched = fx.write("here", &["hi", "again"], 40);
  assert!(touched.exists());
  global(&without);
  assert_eq!(theirs(&fx), 0, "the record of a deleted session is an orphan");
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
  assert_eq!(digest.content().unwrap().vocabulary.to_vec(), ["omega"]);
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
  assert!(!digest.content().unwrap().vocabulary.is_empty() && digest.content().unwrap().vocabulary.len() < 2000);
  assert!(digest.content().unwrap().vocabulary.to_vec().windows(2).all(|w| w[0] < w[1]));
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
  let strip = |r: &Snapshot| -> Vec<(String, Body)> {
    r.sessions.iter().map(|s| s.record.as_ref().unwrap()).map(|r| (r.source_hash.hex(), loaded(&r.body))).collect()
  };
  let before = strip(&global(&engine));
  fs::remove_dir_all(fx.index_dir()).unwrap();
  Index::shared(fx.index_dir()).resident().clear();
  let after = global(&engine);
  assert_eq!(strip(&after), before);
  assert_eq!(fx.index_files().len(), 3, "two records and the marker");
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
  assert!(digest.content().unwrap().vocabulary.binary_search("ωmega雪").is_ok());
  let project = sync(&fx.engine(json!({})).index_context(), &Scope::Project, Branches::Active).unwrap();
  assert_eq!(project.coverage.indexed_sessions, 1001);
}

#[test]
fn cleanup_is_bounded_by_its_budget() {
  let fx = fixture();
  fx.write("a", &["text"], 100);
  global(&fx.engine(json!({})));
  for i in 0..3 {
    fs::write(fx.index_dir().join(format!("{i:016x}-gone.jsonl.active.hot")), "PFMIDX06x").unwrap();
  }
  let first = global(&fx.engine(json!({"maxCacheCleanupFiles": 2})));
  assert_eq!(first.coverage.reasons, ["cache_cleanup_budget"]);
  assert_eq!(fx.index_files().len(), 3);
  let second = global(&fx.engine(json!({"maxCacheCleanupFiles": 2})));
  assert!(second.coverage.complete);
  assert_eq!(fx.index_files().len(), 2, "the record and the marker");
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
  use std::os::unix::fs::PermissionsExt;
  fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
}

/// Every file under `dir` (not following links) with its content.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
  let mut out: Vec<(String, Vec<u8>)> = fs::read_dir(dir)
    .unwrap()
    .map(|e| e.unwrap().path())
    .map(|p| {
      let content = if p.is_symlink() {
        fs::read_link(&p).unwrap().into_os_string().into_encoded_bytes()
      } else {
        fs::read(&p).unwrap_or_default()
      };
      (p.file_name().unwrap().to_string_lossy().into_owned(), content)
    })
    .collect();
  out.sort();
  out
}

#[cfg(unix)]
#[test]
fn an_index_dir_with_foreign_files_is_refused_and_left_untouched() {
  let fx = fixture();
  fx.write("a", &["hello"], 100);
  let project = fx.agent.parent().unwrap().join("project");
  fs::create_dir(&project).unwrap();
  fs::write(project.join(".env"), "SECRET=1").unwrap();
  fs::write(project.join("main.rs"), "fn main() {}").unwrap();
  // Named like a record, but not one: a user's file all the same.
  fs::write(project.join("0123456789abcdef-x.jsonl.active.hot"), "mine").unwrap();
  use std::os::unix::fs::PermissionsExt;
  fs::set_permissions(&project, fs::Permissions::from_mode(0o755)).unwrap();
  let before = snapshot(&project);
  let engine = fx.engine(json!({"indexDir": project.to_str().unwrap()}));
  let error = sync(&engine.index_context(), &Scope::Global, Branches::Active).unwrap_err();
  assert_eq!(
    (error.code.as_str(), error.details["reason"].as_str()),
    ("index_dir_refused", Some("foreign_files_without_marker"))
  );
  assert_eq!(snapshot(&project), before);
  assert_eq!(mode(&project), 0o755, "never chmod a dir the index did not create");
}

#[cfg(unix)]
#[test]
fn the_agent_dir_sessions_dir_home_and_root_are_refused() {
  let fx = fixture();
  fx.write("a", &["hello"], 100);
  fs::write(fx.agent.join("auth.json"), "{}").unwrap();
  let linked = fx.agent.parent().unwrap().join("link-to-agent");
  std::os::unix::fs::symlink(&fx.agent, &linked).unwrap();
  let agent_before = snapshot(&fx.agent);
  let cases = [
    (fx.agent.clone(), "agent_dir"),
    (linked, "agent_dir"),
    (fx.agent.join("sessions"), "sessions_dir"),
    (fx.project.clone(), "sessions_dir"),
    (fx.project.join("index"), "sessions_dir"),
    (fx.agent.parent().unwrap().to_path_buf(), "ancestor_of_agent_dir"),
    (PathBuf::from("/"), "root"),
  ];
  for (dir, reason) in cases {
    let engine = fx.engine(json!({"indexDir": dir.to_str().unwrap()}));
    let error = sync(&engine.index_context(), &Scope::Global, Branches::Active).unwrap_err();
    assert_eq!((error.code.as_str(), error.details["reason"].as_str()), ("index_dir_refused", Some(reason)), "{dir:?}");
  }
  let home = fx.engine(json!({"indexDir": "~"}));
  let error = sync(&home.index_context(), &Scope::Global, Branches::Active).unwrap_err();
  assert_eq!(error.details["reason"], "home_dir");
  assert_eq!(snapshot(&fx.agent), agent_before);
  assert!(!fx.project.join("index").exists());
}

#[cfg(unix)]
#[test]
fn an_owned_dir_is_marked_and_only_index_files_are_ever_removed() {
  let fx = fixture();
  let gone = fx.write("gone", &["bye"], 100);
  fx.write("kept", &["hi"], 50);
  let outside = fx.agent.parent().unwrap();
  let created = outside.join("made").join("index");
  let engine = fx.engine(json!({"indexDir": created.to_str().unwrap()}));
  global(&engine);
  assert!(created.join(dir::MARKER).is_file());
  assert_eq!(mode(&created), 0o700, "created by the index");
  // Foreign files inside an owned dir, some named like records, one a
  // symlink out to a file that even carries the record magic.
  let victim = outside.join("victim");
  fs::write(&victim, "PFMIDX06 not yours").unwrap();
  std::os::unix::fs::symlink(&victim, created.join("fedcba9876543210-link.jsonl.active.hot")).unwrap();
  fs::write(created.join("0123456789abcdef-user.jsonl.active.hot"), "user data").unwrap();
  fs::write(created.join("notes.txt"), "keep").unwrap();
  let old_temp = created.join("0123456789abcdef-x.jsonl.active.hot.tmp.1.2");
  fs::write(&old_temp, "PFMI").unwrap();
  set_age(&old_temp, 3600);
  fs::remove_file(&gone).unwrap();
  Index::shared(created.clone()).resident().clear();
  let result = global(&engine);
  assert!(result.coverage.complete, "{:?}", result.coverage);
  let names: Vec<String> = snapshot(&created).into_iter().map(|(n, _)| n).collect();
  let kept = names.iter().find(|n| n.contains("-kept.jsonl.")).unwrap().clone();
  let mut expected = [
    dir::MARKER,
    "0123456789abcdef-user.jsonl.active.hot",
    "fedcba9876543210-link.jsonl.active.hot",
    &kept,
    "notes.txt",
    dir::IndexFile::SESSION_DIRS,
    dir::IndexFile::INDEX_DIR_LISTING,
  ];
  expected.sort();
  assert_eq!(names, expected, "the orphaned record and the crashed writer's temp file went; nothing else");
  assert_eq!(fs::read(&victim).unwrap(), b"PFMIDX06 not yours");
}

#[cfg(unix)]
#[test]
fn an_empty_or_index_only_dir_is_adopted_without_chmod() {
  let fx = fixture();
  fx.write("a", &["hello"], 100);
  let dir = fx.agent.parent().unwrap().join("empty");
  fs::create_dir(&dir).unwrap();
  use std::os::unix::fs::PermissionsExt;
  fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
  let engine = fx.engine(json!({"indexDir": dir.to_str().unwrap()}));
  assert!(global(&engine).coverage.complete);
  assert!(dir.join(dir::MARKER).is_file());
  assert_eq!(mode(&dir), 0o755);
  // An index written before markers existed holds only records: adopted too.
  let default = fx.engine(json!({}));
  global(&default);
  fs::remove_file(fx.index_dir().join(dir::MARKER)).unwrap();
  Index::shared(fx.index_dir()).resident().clear();
  Index::shared(fx.index_dir()).sync_state().forget_last();
  assert!(global(&default).coverage.complete);
  assert!(fx.index_dir().join(dir::MARKER).is_file());
}

/// A fresh process: nothing resident, no reusable synchronization.
fn forget_process(dir: &Path) {
  Index::shared(dir.to_path_buf()).resident().clear();
  Index::shared(dir.to_path_buf()).forget_base_names();
  Index::shared(dir.to_path_buf()).listing().forget_headers();
  Index::shared(dir.to_path_buf()).listing().forget_dirs();
  Index::shared(dir.to_path_buf()).sync_state().forget_last();
  Index::shared(dir.to_path_buf()).bodies().forget();
  Index::shared(dir.to_path_buf()).dir().forget_names();
}

fn recall_hits(engine: &Engine, query: &str) -> crate::ops::recall::RecallPage {
  recall_in(engine, query, "global")
}

fn recall_in(engine: &Engine, query: &str, scope: &str) -> crate::ops::recall::RecallPage {
  let args = json!({"query": query, "scope": scope});
  crate::ops::recall::recall(engine, &crate::ops::recall::RecallRequest::from_json(Some(&args)).unwrap())
}

fn cold_digest(record: &CacheRecord) -> &record::cold::ColdDigest {
  let Body::Cold(digest) = &record.body else { panic!("cold") };
  digest
}

#[test]
fn a_record_edited_in_place_is_detected_and_rebuilt_with_identical_answers() {
  let fx = fixture();
  fx.write("s", &["hello world"], 100);
  let engine = fx.engine(json!({"hotSessions": 0}));
  let clean = loaded(&global(&engine).sessions[0].record.clone().unwrap().body);
  let name = fx.index_files().into_iter().find(|n| n.ends_with(".cold")).unwrap();
  let path = fx.index_dir().join(&name);
  let original = fs::read(&path).unwrap();
  // Rename a term in place (it lives in the body): same length, still valid postcard.
  let mut edited = original.clone();
  let at = edited.windows(5).position(|w| w == b"hello").unwrap();
  edited[at..at + 5].copy_from_slice(b"jello");
  fs::write(&path, &edited).unwrap();
  forget_process(&fx.index_dir());
  // The head is intact, so the sync serves the record; the query that reads
  // its body finds the damage and answers from a rebuild.
  let page = recall_hits(&engine, "hello");
  assert_eq!(page.total, 1, "found through the rebuilt record");
  assert!(page.coverage.complete, "{:?}", page.coverage);
  let on_disk =
    record::CacheRecord::decode(&fs::read(&path).unwrap(), &Alone, MAX_COLD_CACHE_BYTES).expect("rewritten on disk");
  assert_eq!(on_disk.body, clean);
  let result = global(&engine);
  assert_eq!(
    cold_digest(result.sessions[0].record.as_ref().unwrap()).content().unwrap().vocabulary.to_vec(),
    ["hello", "world"]
  );
  assert_eq!(result.sessions[0].record.as_ref().unwrap().body, clean);
}

/// Replaces the hot record of `fx`'s one session with one whose checksums
/// hold (written by the encoder) but whose entries' bytes do not decode;
/// returns its path.
fn damage_hot_entries(fx: &Fixture) -> PathBuf {
  let name = fx.index_files().into_iter().find(|n| n.ends_with(".hot")).unwrap();
  let path = fx.index_dir().join(&name);
  let mut record = record::CacheRecord::decode(&fs::read(&path).unwrap(), &Alone, MAX_COLD_CACHE_BYTES).unwrap();
  let Body::Hot(shard) = &record.body else { panic!("hot") };
  record.body = Body::Hot(Box::new(shard.with_undecodable_entries()));
  fs::write(&path, record.encode(&Alone).unwrap()).unwrap();
  forget_process(&fx.index_dir());
  path
}

#[test]
fn a_hot_record_whose_entries_do_not_decode_answers_in_range_and_is_rebuilt() {
  let fx = fixture();
  fx.write("s", &["hello world"], 100);
  let engine = fx.engine(json!({}));
  let clean = loaded(&global(&engine).sessions[0].record.clone().unwrap().body);
  let path = damage_hot_entries(&fx);
  let page = recall_hits(&engine, "hello");
  assert_eq!(page.total, 1, "the postings still rank it");
  assert!(page.coverage.reasons.contains(&crate::coverage::Reason::IndexRecordUnreadable), "{:?}", page.coverage);
  let page = recall_hits(&engine, "hello");
  assert_eq!((page.total, page.coverage.reasons.clone()), (1, Vec::new()), "rebuilt by the next call's sync");
  assert!(serde_json::to_string(&page.hits[0]).unwrap().contains("hello world"));
  let on_disk =
    record::CacheRecord::decode(&fs::read(&path).unwrap(), &Alone, MAX_COLD_CACHE_BYTES).expect("rewritten on disk");
  assert_eq!(loaded(&on_disk.body), clean);
}

#[test]
fn an_append_to_a_damaged_hot_record_parses_the_whole_session() {
  let fx = fixture();
  fx.write("s", &["hello world"], 100);
  let engine = fx.engine(json!({}));
  global(&engine);
  damage_hot_entries(&fx);
  fx.write("s", &["hello world", "noted", "goodbye moon"], 100);
  let page = recall_hits(&engine, "hello");
  assert_eq!((page.total, page.coverage.reasons.clone()), (1, Vec::new()));
  assert!(serde_json::to_string(&page.hits[0]).unwrap().contains("hello world"), "not extended from empty entries");
  assert_eq!(recall_hits(&engine, "goodbye").total, 1);
}

#[test]
fn a_fresh_process_hashes_each_source_path_once() {
  let fx = fixture();
  let paths = [fx.write("a", &["one"], 300), fx.write("b", &["two"], 200), fx.write("c", &["three"], 100)];
  let engine = fx.engine(json!({"hotSessions": 1}));
  assert!(global(&engine).coverage.complete);
  forget_process(&fx.index_dir());
  let trace = || Index::shared(fx.index_dir()).trace().hashed();
  trace();
  let result = global(&engine);
  assert!(result.sessions.iter().all(|s| s.record.is_some()), "every record loaded from disk");
  let hashed = trace();
  let per_path: Vec<usize> = paths.iter().map(|p| hashed.iter().filter(|h| *h == p).count()).collect();
  // Loading the record, keeping it resident and listing the owners for
  // cleanup all name it.
  assert_eq!(per_path, [1, 1, 1]);
}

/// A source written just before its record was built can only be proven by
/// hashing it; once its stamp is old enough the proof is written back, so a
/// later process trusts the stamp instead of hashing the source again.
#[test]
fn a_content_proof_is_written_back_once_the_stamp_can_vouch() {
  let fx = fixture();
  let written = std::time::Instant::now();
  fx.write("hot", &["fresh words"], 0);
  fx.write("cold", &["older words"], 0);
  // No watch: in a fresh process it is armed after the build, and vouches for nothing.
  let engine = fx.engine(json!({"hotSessions": 1, "watchSessions": false}));
  let built = global(&engine);
  assert!(built.coverage.complete, "{:?}", built.coverage);
  let names: Vec<String> =
    fx.index_files().into_iter().filter(|n| n.ends_with(".hot") || n.ends_with(".cold")).collect();
  assert_eq!(names.len(), 2);
  let on_disk = || {
    let read = |n: &String| {
      record::CacheRecord::decode(&fs::read(fx.index_dir().join(n)).unwrap(), &Alone, MAX_COLD_CACHE_BYTES).unwrap()
    };
    names.iter().map(read).collect::<Vec<_>>()
  };
  // Verified the moment the sources changed, as a build right after Pi's
  // write is (however slow this machine is): only their content can prove them.
  for (name, mut record) in names.iter().zip(on_disk()) {
    record.verified_ns = record.stamp.ctime_ns;
    dir::write_atomic(&fx.index_dir().join(name), &record.encode(&Alone).unwrap()).unwrap();
  }
  let before = on_disk();
  assert!(before.iter().all(|r| !r.stamp.proves_unchanged_since(r.verified_ns)));
  // Proven by content while the stamp still cannot vouch (not yet 2 s old): nothing is written.
  if written.elapsed() < Duration::from_millis(1500) {
    forget_process(&fx.index_dir());
    assert!(global(&engine).sessions.iter().all(|s| s.record.is_some()));
    let verified = |records: &[CacheRecord]| records.iter().map(|r| r.verified_ns).collect::<Vec<_>>();
    assert_eq!(verified(&on_disk()), verified(&before));
  }
  std::thread::sleep(Duration::from_nanos(crate::session::source::RACY_WINDOW_NS as u64 + 200_000_000));
  forget_process(&fx.index_dir());
  let proven = global(&engine);
  assert!(proven.coverage.complete && proven.sessions.iter().all(|s| s.record.is_some()));
  let after = on_disk();
  for (was, now) in before.iter().zip(&after) {
    assert!(now.verified_ns > was.verified_ns && now.stamp.proves_unchanged_since(now.verified_ns));
    assert_eq!((&now.stamp, &now.source_hash, loaded(&now.body)), (&was.stamp, &was.source_hash, loaded(&was.body)));
  }
  // A process that holds the old records still reads them, and answers alike.
  assert_eq!(recall_hits(&engine, "older").total, 1);
  assert_eq!(recall_hits(&engine, "fresh").total, 1);
}

#[test]
fn a_cold_record_is_read_up_to_its_head_until_a_query_needs_its_content() {
  let fx = fixture();
  fx.write("s", &["hello world"], 100);
  let engine = fx.engine(json!({"hotSessions": 0}));
  let built = global(&engine).sessions[0].record.clone().unwrap();
  assert!(!cold_digest(&built).content.is_resident(), "dropped from memory once written");
  assert_eq!(cold_digest(&built).content().unwrap().vocabulary.to_vec(), ["hello", "world"], "read back");
  forget_process(&fx.index_dir());
  let synced = global(&engine);
  let record = synced.sessions[0].record.clone().unwrap();
  assert!(!cold_digest(&record).content.is_resident(), "the sync read only the head");
  assert_eq!(recall_hits(&engine, "").total, 1, "browsing needs no content");
  assert!(!cold_digest(&record).content.is_resident());
  assert_eq!(recall_hits(&engine, "world").total, 1);
  assert!(cold_digest(&record).content.is_resident(), "a term query read it");
}

#[test]
fn a_cold_record_whose_content_is_gone_is_rebuilt_by_the_next_sync() {
  let fx = fixture();
  fx.write("s", &["hello world"], 100);
  let engine = fx.engine(json!({"hotSessions": 0}));
  let clean = loaded(&global(&engine).sessions[0].record.clone().unwrap().body);
  forget_process(&fx.index_dir());
  let record = global(&engine).sessions[0].record.clone().unwrap();
  let name = fx.index_files().into_iter().find(|n| n.ends_with(".cold")).unwrap();
  fs::remove_file(fx.index_dir().join(&name)).unwrap();
  assert!(cold_digest(&record).content().is_err(), "its file is gone");
  assert!(record.content_unreadable());
  Index::shared(fx.index_dir()).sync_state().forget_last();
  let result = global(&engine);
  let rebuilt = result.sessions[0].record.as_ref().unwrap();
  assert!(!Arc::ptr_eq(rebuilt, &record), "not the unreadable record");
  assert_eq!(rebuilt.body, clean);
  assert!(fx.index_dir().join(&name).is_file(), "written again");
}

#[cfg(unix)]
#[test]
fn records_that_are_fifos_devices_or_huge_are_rebuilt_without_hanging() {
  let fx = fixture();
  for (i, id) in ["a", "b", "c"].iter().enumerate() {
    fx.write(id, &[&format!("text of {id}")], 100 + i as u64);
  }
  let engine = fx.engine(json!({"hotSessions": 0}));
  let clean: Vec<Body> = global(&engine).sessions.iter().map(|s| loaded(&s.record.as_ref().unwrap().body)).collect();
  let record_of = |id: &str| {
    fx.index_dir().join(fx.index_files().into_iter().find(|n| n.contains(&format!("-{id}.jsonl."))).unwrap())
  };
  let (fifo, zero, huge) = (record_of("a"), record_of("b"), record_of("c"));
  for path in [&fifo, &zero, &huge] {
    fs::remove_file(path).unwrap();
  }
  crate::testing::mkfifo(&fifo);
  std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
  fs::File::create(&huge).unwrap().set_len(3 << 30).unwrap();
  Index::shared(fx.index_dir()).resident().clear();
  Index::shared(fx.index_dir()).sync_state().forget_last();
  let result = crate::testing::within(20, move || global(&engine));
  assert!(result.coverage.complete, "{:?}", result.coverage);
  let rebuilt: Vec<Body> = result.sessions.iter().map(|s| s.record.as_ref().unwrap().body.clone()).collect();
  assert_eq!(rebuilt, clean);
  for path in [&fifo, &zero, &huge] {
    let bytes = fs::read(path).unwrap();
    assert!(
      record::CacheRecord::decode(&bytes, &Alone, MAX_COLD_CACHE_BYTES).is_some(),
      "{path:?} rewritten as a record"
    );
  }
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

/// A small deterministic PRNG (xorshift64*): the suites print their seed.
struct Rng(u64);

impl Rng {
  fn next(&mut self) -> u64 {
    self.0 ^= self.0 >> 12;
    self.0 ^= self.0 << 25;
    self.0 ^= self.0 >> 27;
    self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
  }

  fn below(&mut self, n: usize) -> usize {
    (self.next() % n.max(1) as u64) as usize
  }
}

/// Runs of the fault suites: CI-sized by default, `PFM_FAULT_RUNS=1000` for
/// the full scale.
fn fault_runs(default: usize) -> usize {
  std::env::var("PFM_FAULT_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
fn random_record_corruptions_are_detected_and_rebuilt_with_identical_answers() {
  let fx = fixture();
  for i in 0..6 {
    let texts: Vec<String> = (0..4).map(|j| format!("session {i} says word{j} and more{}", i * j)).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    fx.write(&format!("s{i}"), &refs, 100 + i as u64);
  }
  let engine = fx.engine(json!({"hotSessions": 3}));
  // As a query sees them: a cold body that cannot be read back when it is
  // needed is rebuilt from source then.
  let bodies = |r: &Snapshot| -> Vec<(PathBuf, Body)> {
    let body = |s: &Synced| {
      let record = s.record.clone().unwrap();
      match &record.body {
        Body::Cold(digest) if digest.content().is_err() => {
          rebuild_cold(&engine.index_context(), s.path, Branches::Active).expect("rebuilt").body.clone()
        }
        body => body.clone(),
      }
    };
    r.sessions.iter().map(|s| (s.path.to_path_buf(), body(s))).collect()
  };
  let clean = bodies(&global(&engine));
  let dir = fx.index_dir();
  let names: Vec<String> = fx.index_files().into_iter().filter(|n| n != dir::MARKER).collect();
  let originals: Vec<Vec<u8>> = names.iter().map(|n| fs::read(dir.join(n)).unwrap()).collect();
  let seed = std::env::var("PFM_FAULT_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x9E37_79B9_7F4A_7C15u64);
  let mut rng = Rng(seed);
  for run in 0..fault_runs(60) {
    let victim = rng.below(names.len());
    let mut bytes = originals[victim].clone();
    let kind = rng.below(4);
    match kind {
      0 => {
        let at = rng.below(bytes.len());
        bytes[at] ^= 1 << rng.below(8);
      }
      1 => bytes.truncate(rng.below(bytes.len())),
      2 => bytes = originals[(victim + 1 + rng.below(names.len() - 1)) % names.len()].clone(),
      _ => {
        // A same-length edit of a run of payload bytes.
        let at = 16 + rng.below(bytes.len() - 16);
        let len = (1 + rng.below(8)).min(bytes.len() - at);
        for b in &mut bytes[at..at + len] {
          *b = b.wrapping_add(1 + rng.below(250) as u8);
        }
      }
    }
    fs::write(dir.join(&names[victim]), &bytes).unwrap();
    forget_process(&dir);
    let result = global(&engine);
    assert!(result.coverage.complete, "seed {seed} run {run} kind {kind}: {:?}", result.coverage);
    assert_eq!(bodies(&result), clean, "seed {seed} run {run} kind {kind}: answers differ");
    let on_disk = fs::read(dir.join(&names[victim])).unwrap();
    assert!(
      record::CacheRecord::decode(&on_disk, &Alone, MAX_COLD_CACHE_BYTES).is_some(),
      "seed {seed} run {run}: record rewritten"
    );
  }
}

#[test]
fn a_session_first_seen_before_its_header_line_is_indexed_once_it_lands() {
  use std::io::Write;
  let fx = fixture();
  let path = fx.project.join("s.jsonl");
  let text = session_text("s", &["hello there"]);
  let (head, rest) = text.split_at(10);
  fs::write(&path, head).unwrap();
  let engine = fx.engine(json!({}));
  assert_eq!(global(&engine).sessions.len(), 0, "not a session yet");
  fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(rest.as_bytes()).unwrap();
  assert_eq!(global(&engine).sessions.len(), 1, "its header landed");
}

#[test]
fn many_files_without_records_keep_their_order_and_only_sessions_are_eligible() {
  // More unproven files than the header readers: their headers are read side by side.
  let fx = fixture();
  let mut expected = Vec::new();
  for i in 0..40u64 {
    let path = match i % 3 {
      0 => {
        let path = fx.project.join(format!("other-{i:02}.jsonl"));
        let first_line = if i % 2 == 0 { "{\"type\":\"message\"}\n" } else { "not json\n" };
        fs::write(&path, first_line).unwrap();
        set_age(&path, 100 + i);
        continue;
      }
      _ => fx.write(&format!("s{i:02}"), &["hello there"], 100 + i),
    };
    expected.push(path.file_stem().unwrap().to_string_lossy().into_owned());
  }
  let engine = fx.engine(json!({}));
  for scope in [Scope::Global, Scope::Project, Scope::Global] {
    forget_process(&fx.index_dir());
    let listed = sync(&engine.index_context(), &scope, Branches::Active).unwrap();
    let stems: Vec<String> = tiers(&listed).into_iter().map(|(stem, _)| stem).collect();
    assert_eq!(stems, expected, "{scope:?}: newest first, sessions only");
    assert!(listed.coverage.complete, "{scope:?}: {:?}", listed.coverage);
  }
}

/// Cold records the index of `dir` opened since the last call.
fn cold_opens(dir: &Path) -> usize {
  let opened = Index::shared(dir.to_path_buf()).trace().opened();
  opened.iter().filter(|p| p.to_string_lossy().ends_with(".cold")).count()
}

fn pack_files(fx: &Fixture) -> Vec<String> {
  fs::read_dir(fx.index_dir())
    .unwrap()
    .map(|e| e.unwrap().file_name().into_string().unwrap())
    .filter(|n| matches!(dir::IndexFile::parse(n), Some(dir::IndexFile::HeadsPack { .. })))
    .collect()
}

/// A fresh process with the pack's threshold at one cold record.
fn packing(fx: &Fixture, sessions: usize) -> Engine {
  Index::shared(fx.index_dir()).trace().set_min_packed(1);
  for i in 0..sessions {
    fx.write(&format!("s{i}"), &[&format!("hello term{i}"), "reply"], 100 + i as u64);
  }
  fx.engine(json!({"hotSessions": 1}))
}

fn forget_all(dir: &Path) {
  forget_process(dir);
  Index::shared(dir.to_path_buf()).packs().forget();
}

/// A fresh process's global sync, and how many cold records it opened.
fn fresh_global(engine: &Engine, dir: &Path) -> (Snapshot, usize) {
  forget_all(dir);
  cold_opens(dir);
  let result = global(engine);
  (result, cold_opens(dir))
}

fn answers(engine: &Engine, queries: &[&str]) -> Vec<(usize, bool)> {
  queries.iter().map(|q| recall_hits(engine, q)).map(|page| (page.total, page.coverage.complete)).collect()
}

#[test]
fn a_fresh_process_reads_cold_heads_from_the_pack_and_answers_the_same() {
  let fx = fixture();
  let engine = packing(&fx, 8);
  let dir = fx.index_dir();
  let first = global(&engine);
  assert_eq!(first.sessions.iter().filter(|s| s.tier == Tier::Cold).count(), 7);
  assert!(!pack_files(&fx).is_empty(), "a global sync packs the cold heads");
  let queries = ["term3", "term7", "hello", "nowhere"];
  let expected = answers(&engine, &queries);
  assert_eq!(expected[0], (1, true));
  let (again, opened) = fresh_global(&engine, &dir);
  assert_eq!(opened, 0, "no cold record opened: every head came from the pack");
  let heads = |r: &Snapshot| r.sessions.iter().map(|s| s.record.as_ref().map(|r| r.head_bytes())).collect::<Vec<_>>();
  assert_eq!(heads(&again), heads(&first));
  // Their details are read from the pack's pages when first asked, also
  // once a synchronization has renamed a new pack over the one they came from.
  for name in pack_files(&fx) {
    dir::write_atomic(&dir.join(&name), b"replaced").unwrap();
  }
  let details = |r: &Snapshot| {
    let detail = |r: &CacheRecord| (r.session_id().to_string(), r.cwd().to_string(), r.titles().clone());
    r.records()
      .map(|(tier, r)| {
        let cold = (tier == Tier::Cold).then(|| (cold_digest(r).kinds().clone(), cold_digest(r).tip().cloned()));
        (tier, detail(r), cold)
      })
      .collect::<Vec<_>>()
  };
  assert_eq!(details(&again), details(&first));
  assert!(details(&again).iter().all(|(_, (id, _, titles), _)| !id.is_empty() && titles.first_prompt.is_some()));
  forget_all(&dir);
  global(&engine);
  // Keyed by the listing's own copy of each path, not one per head.
  let resident = |path: &'static Path| Index::shared(dir.clone()).resident().key(path);
  assert!(again.sessions.iter().all(|s| resident(s.path).is_some_and(|key| std::ptr::eq(key, s.path.as_os_str()))));
  // The bodies are read from the records the packed heads stand for.
  assert_eq!(answers(&engine, &queries), expected);
  // Nothing changed: the same synchronization writes no shard again.
  let stamps = |fx: &Fixture| {
    pack_files(fx)
      .into_iter()
      .map(|n| fs::metadata(fx.index_dir().join(n)).unwrap().modified().unwrap())
      .collect::<Vec<_>>()
  };
  let before = stamps(&fx);
  forget_all(&dir);
  global(&engine);
  assert_eq!(stamps(&fx), before);
}

#[test]
fn a_pack_older_than_its_records_never_changes_an_answer() {
  let fx = fixture();
  let engine = packing(&fx, 6);
  let dir = fx.index_dir();
  global(&engine);
  let saved: Vec<(String, Vec<u8>)> =
    pack_files(&fx).into_iter().map(|n| (n.clone(), fs::read(dir.join(n)).unwrap())).collect();
  // A cold session rewritten (a new record), and another's record
  // re-verified (same source, another head): the old pack is put back.
  fx.write("s3", &["changed words", "reply"], 103);
  global(&engine);
  let name = fx.index_files().into_iter().find(|n| n.contains("-s4.jsonl") && n.ends_with(".cold")).unwrap();
  let mut record = CacheRecord::decode(&fs::read(dir.join(&name)).unwrap(), &Alone, MAX_COLD_CACHE_BYTES).unwrap();
  record.verified_ns += 1;
  dir::write_atomic(&dir.join(&name), &record.encode(&Alone).unwrap()).unwrap();
  for (name, bytes) in &saved {
    fs::write(dir.join(name), bytes).unwrap();
  }
  forget_all(&dir);
  assert_eq!(answers(&engine, &["changed", "term3", "term4"]), [(1, true), (0, true), (1, true)]);
  // Both heads were not the records': the pack is written again.
  assert_eq!(fresh_global(&engine, &dir).1, 0, "the rewritten pack holds every current head");
}

#[test]
fn a_damaged_pack_is_not_used_and_is_written_again() {
  let fx = fixture();
  let engine = packing(&fx, 5);
  let dir = fx.index_dir();
  global(&engine);
  for name in pack_files(&fx) {
    let mut bytes = fs::read(dir.join(&name)).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    fs::write(dir.join(&name), bytes).unwrap();
  }
  let (result, opened) = fresh_global(&engine, &dir);
  assert!(result.coverage.complete);
  assert_eq!(opened, 4, "every cold record read from its own file");
  assert_eq!(fresh_global(&engine, &dir).1, 0, "then packed again");
}

#[test]
fn the_pack_follows_the_cold_records_and_goes_below_its_threshold() {
  let fx = fixture();
  let engine = packing(&fx, 5);
  global(&engine);
  let entries = |fx: &Fixture| -> usize {
    pack_files(fx).iter().map(|n| heads_in(&fs::read(fx.index_dir().join(n)).unwrap())).sum()
  };
  assert_eq!(entries(&fx), 4);
  // A fresh process finds a packed head whose session is gone and one
  // whose record file is gone.
  fs::remove_file(fx.project.join("s2.jsonl")).unwrap();
  let record = fx.index_files().into_iter().find(|n| n.contains("-s3.jsonl") && n.ends_with(".cold")).unwrap();
  fs::remove_file(fx.index_dir().join(&record)).unwrap();
  forget_all(&fx.index_dir());
  let result = global(&engine);
  assert!(result.coverage.complete);
  assert_eq!((result.coverage.eligible_sessions, result.coverage.indexed_sessions), (4, 4));
  assert!(fx.index_dir().join(&record).is_file(), "the missing record is built again");
  assert_eq!(answers(&engine, &["term3", "term2"]), [(1, true), (0, true)]);
  assert_eq!(entries(&fx), 3, "a deleted session's head leaves the pack");
  Index::shared(fx.index_dir()).trace().set_min_packed(4);
  global(&fx.engine(json!({"hotSessions": 2})));
  assert!(pack_files(&fx).is_empty(), "below the threshold there is no pack");
}

/// How many heads a shard file holds.
fn heads_in(bytes: &[u8]) -> usize {
  heads::entry_count(bytes).expect("an intact shard")
}

#[test]
fn a_project_call_reads_no_other_projects_headers() {
  let fx = fixture();
  fx.write("mine", &["hello"], 100);
  let other = fx.agent.join("sessions").join(crate::session::discover::encode_cwd("/home/u/other"));
  fs::create_dir_all(&other).unwrap();
  let theirs = other.join("theirs.jsonl");
  fs::write(&theirs, session_text("theirs", &["hello"]).replace(CWD, "/home/u/other")).unwrap();
  let engine = fx.engine(json!({}));
  let project = sync(&engine.index_context(), &Scope::Project, Branches::Active).unwrap();
  assert_eq!(tiers(&project), [("mine".to_string(), "hot")]);
  let cached = |path: &Path| Index::shared(fx.index_dir()).listing().header_proven(path).is_some();
  assert!(!cached(&theirs), "another project's session header is not read");
  assert!(!cached(&fx.project.join("mine.jsonl")), "a built session's header is dropped: its record answers for it");
  assert_eq!(global(&engine).coverage.eligible_sessions, 2);
  assert!(!cached(&theirs), "nor once the global call built it");
}

#[test]
fn a_fresh_process_project_call_reads_its_heads_from_the_pack_and_proves_membership_by_them() {
  let fx = fixture();
  let engine = packing(&fx, 6);
  // Another project's cold sessions share the pack, and one session in
  // this project's dir was recorded for another cwd (moved here, or a cwd
  // whose dir name collides): the directory decides, as Pi lists it.
  let other = fx.agent.join("sessions").join(crate::session::discover::encode_cwd("/home/u/other"));
  fs::create_dir_all(&other).unwrap();
  for i in 0..3 {
    let path = other.join(format!("o{i}.jsonl"));
    fs::write(&path, session_text(&format!("o{i}"), &["hello theirs"]).replace(CWD, "/home/u/other")).unwrap();
    set_age(&path, 200 + i);
  }
  let stray = fx.project.join("stray.jsonl");
  fs::write(&stray, session_text("stray", &["hello stray"]).replace(CWD, "/home/u/else")).unwrap();
  set_age(&stray, 300);
  let dir = fx.index_dir();
  let project = |engine: &Engine| sync(&engine.index_context(), &Scope::Project, Branches::Active).unwrap();
  let first = project(&engine);
  assert_eq!(first.coverage.eligible_sessions, 7, "the stray session in this project's dir is this project's");
  global(&engine);
  let queries = ["term2", "hello", "theirs", "stray"];
  let in_project = |engine: &Engine| -> Vec<(usize, bool)> {
    queries.iter().map(|q| recall_in(engine, q, "project")).map(|p| (p.total, p.coverage.complete)).collect()
  };
  let expected = in_project(&engine);
  assert_eq!(expected, [(1, true), (7, true), (0, true), (1, true)]);
  // A shard written again is a new file (written beside, then renamed).
  let stamps = || {
    use std::os::unix::fs::MetadataExt;
    pack_files(&fx).into_iter().map(|n| fs::metadata(dir.join(n)).unwrap().ino()).collect::<Vec<_>>()
  };
  let packed = stamps();

  forget_all(&dir);
  cold_opens(&dir);
  let theirs: Vec<PathBuf> = (0..3).map(|i| other.join(format!("o{i}.jsonl"))).collect();
  let hashed = || Index::shared(dir.clone()).trace().hashed().iter().filter(|p| theirs.contains(p)).count();
  hashed();
  let again = project(&engine);
  assert_eq!(cold_opens(&dir), 0, "no cold record opened: every head came from the pack");
  assert_eq!(hashed(), 0, "cleanup named the other project's records by the pack, unhashed");
  assert!(Index::shared(dir.clone()).listing().cached_headers() == 0, "membership proven by the fresh records' cwd");
  assert_eq!(tiers(&again), tiers(&first));
  // Its 7 candidates (the hot one read from its record), not the 3 others.
  assert_eq!(Index::shared(dir.clone()).resident().len(), 7, "only this project's heads were decoded");
  assert_eq!(in_project(&engine), expected);
  // A global call then decodes the rest, and finds the pack current.
  let all = global(&engine);
  assert_eq!((all.coverage.eligible_sessions, cold_opens(&dir)), (10, 0));
  assert!(stamps() == packed, "nothing changed: no shard written again");
}

/// A probe that raced a same-size rewrite (truncated, then written back)
/// read a torn file: its "not a session" must not outlive the stat it was
/// made against, or the session stays out of every listing.
#[test]
fn a_header_probe_that_raced_a_rewrite_is_not_remembered() {
  let fx = fixture();
  let path = fx.project.join("raced.jsonl");
  let text = session_text("raced", &["hello raced"]);
  fs::write(&path, &text).unwrap();
  let before = crate::session::source::StatStamp::of(&fs::metadata(&path).unwrap());
  let index = Index::shared(fx.index_dir());
  // Mid-rewrite: the file is empty when the probe reads it.
  fs::write(&path, "").unwrap();
  assert_eq!(index.listing().probe(&path, &before), Ok(None));
  // The rewrite completes at the same size.
  std::thread::sleep(std::time::Duration::from_millis(5));
  fs::write(&path, &text).unwrap();
  let after = crate::session::source::StatStamp::of(&fs::metadata(&path).unwrap());
  assert_eq!(after.size, before.size);
  let probed = index.listing().probe(&path, &after).expect("readable");
  assert_eq!(probed.map(|header| header.id), Some("raced".to_string()), "the session is one again");
  // A probe against a stat that still holds is remembered.
  assert_eq!(index.listing().header_proven(&path), Some(after));
}

/// `n` cold sessions sharing most of their words, each with one of its
/// own ([`owned_word`]).
fn cold_sessions(fx: &Fixture, n: usize) {
  for i in 0..n {
    fx.write(&format!("s{i:03}"), &[&shared_words(i), "noted"], 100 + i as u64);
  }
}

/// Cold bodies share a dictionary trained on the first of them; a fresh
/// process reads them with it; when it is gone the bodies that need it are
/// unreadable for one call, then rebuilt.
#[test]
fn cold_bodies_share_a_dictionary_and_are_rebuilt_when_it_is_gone() {
  let fx = fixture();
  cold_sessions(&fx, 80);
  let engine = fx.engine(json!({"hotSessions": 0}));
  assert!(global(&engine).coverage.complete);
  let dictionaries: Vec<String> = fx.index_files().into_iter().filter(|n| n.starts_with("cold-bodies.")).collect();
  assert_eq!(dictionaries.len(), 1, "{:?}", fx.index_files());
  let named: Vec<usize> = (0..80)
    .filter(|&i| {
      let name = fx.index_files().into_iter().find(|n| n.contains(&format!("s{i:03}.jsonl.active.cold"))).unwrap();
      record::body_dictionary(&fs::read(fx.index_dir().join(name)).unwrap()).is_some()
    })
    .collect();
  // The first bodies are compressed alone, and so are those other threads encode while it trains.
  assert!((1..80).contains(&named.len()), "bodies after the training use it: {}", named.len());
  forget_process(&fx.index_dir());
  for i in 0..80 {
    let page = recall_hits(&engine, &owned_word(i));
    assert_eq!((page.total, page.coverage.reasons.len()), (1, 0), "{i}: {:?}", page.coverage);
  }
  fs::remove_file(fx.index_dir().join(&dictionaries[0])).unwrap();
  // Without the term dictionary's shards, which answer for the bodies they were built from.
  for name in fx.index_files().into_iter().filter(|n| n.starts_with("cold-terms.")) {
    fs::remove_file(fx.index_dir().join(name)).unwrap();
  }
  forget_process(&fx.index_dir());
  // The next sync rebuilds the term dictionary from the bodies: those it cannot read are rebuilt from source.
  for &i in &named {
    let page = recall_hits(&engine, &owned_word(i));
    assert_eq!((page.total, page.coverage.reasons.len()), (1, 0), "{i} rebuilt: {:?}", page.coverage);
  }
  let files = fx.index_files();
  for name in files.iter().filter(|n| n.ends_with(".cold")) {
    let id = record::body_dictionary(&fs::read(fx.index_dir().join(name)).unwrap());
    let named = id.map(|id| dir::IndexFile::BodyDictionary { version: record::CACHE_VERSION, id }.to_string());
    assert!(named.is_none_or(|n| files.contains(&n)), "{name} names a dictionary that is gone");
  }
}

/// Dictionaries of another cache version are the cleanup's; a foreign file
/// under a dictionary's name is not (this version's intact dictionary stays:
/// `cold_bodies_share_a_dictionary_and_are_rebuilt_when_it_is_gone`).
#[test]
fn the_cleanup_removes_body_dictionaries_of_other_versions() {
  let fx = fixture();
  fx.write("s", &["hello world"], 100);
  let engine = fx.engine(json!({}));
  global(&engine);
  let other = dir::IndexFile::BodyDictionary { version: record::CACHE_VERSION - 1, id: 0x0123_4567 }.to_string();
  let foreign = dir::IndexFile::BodyDictionary { version: record::CACHE_VERSION - 2, id: 0x0123_4567 }.to_string();
  fs::write(fx.index_dir().join(&other), b"PFMIDXZD old").unwrap();
  fs::write(fx.index_dir().join(&foreign), b"someone else's").unwrap();
  fx.write("t", &["another session"], 100);
  forget_process(&fx.index_dir());
  global(&engine);
  let files = fx.index_files();
  assert!(!files.contains(&other) && files.contains(&foreign), "{files:?}");
}

/// A base name is remembered under its interned path's bytes: a path that
/// is a view of the start of those bytes (its parent) or a copy of them
/// elsewhere is told its own hash, never another's.
#[test]
fn base_names_are_told_by_the_whole_path() {
  let dir = tempfile::tempdir().unwrap();
  let index = Index::shared(dir.path().to_path_buf());
  let file = sources::interned(Path::new("/sessions/--p--/2026-01-01T00-00-00_a.jsonl"));
  assert_eq!(index.base_hash(file), record::base_hash(file));
  let parent = file.parent().unwrap();
  assert_eq!(index.base_hash(parent), record::base_hash(parent));
  let copy = file.to_path_buf();
  assert_eq!(index.base_hash(&copy), record::base_hash(file));
  assert_ne!(record::base_hash(parent), record::base_hash(file));
}

/// The index dir's own listing persists in it, written in place (a rename
/// would change the dir it is proven by): a fresh process that finds the
/// dir unchanged since takes its names from the file, a changed dir is read
/// again, and dropping the file's names (a forget) leaves the dir as it was.
/// Unwatched, so every call lists (as the CLI does).
#[test]
fn a_fresh_process_reads_the_unchanged_index_dir_from_its_persisted_listing() {
  let fx = fixture();
  fx.write("a", &["alpha words"], 100);
  let unwatched = || fx.engine(json!({"watchSessions": false}));
  let index = || Index::shared(fx.index_dir());
  // As if each listing were made beyond the racy window of its dir's last change.
  let later = |name: &str| dir::listing::tests::listed_later(&fx.index_dir().join(name), 2 * RACY_WINDOW_NS);
  global(&unwatched());
  assert!(fx.index_dir().join(dir::IndexFile::INDEX_DIR_LISTING).is_file(), "made with the dir, empty");
  later(dir::IndexFile::SESSION_DIRS);
  forget_process(&fx.index_dir());
  // Reads the index dir, writes nothing into it: its listing is saved.
  let stamp = || StatStamp::of(&fs::metadata(fx.index_dir()).unwrap());
  let before = stamp();
  global(&unwatched());
  assert!(index().dir().disk_reads() >= 1);
  assert_eq!(stamp(), before, "saved in place: the dir as it was");
  later(dir::IndexFile::INDEX_DIR_LISTING);
  forget_process(&fx.index_dir());
  let result = global(&unwatched());
  assert_eq!(result.sessions.len(), 1);
  assert_eq!(index().dir().disk_reads(), 0, "the index dir's names, from the file");
  // A forget empties the file in place: the dir's listing still holds, and names nothing.
  index().dir().drop_persisted_names();
  assert_eq!(stamp(), before);
  forget_process(&fx.index_dir());
  global(&unwatched());
  assert!(index().dir().disk_reads() >= 1, "read again");
  // A new session: its record changes the dir after the file's listing, so
  // the next process reads the dir from disk.
  later(dir::IndexFile::INDEX_DIR_LISTING);
  fx.write("b", &["beta words"], 10);
  forget_process(&fx.index_dir());
  assert_eq!(global(&unwatched()).sessions.len(), 2);
  later(dir::IndexFile::INDEX_DIR_LISTING);
  forget_process(&fx.index_dir());
  assert_eq!(global(&unwatched()).sessions.len(), 2);
  assert!(index().dir().disk_reads() >= 1, "changed since the file's listing");
}

/// A fresh process takes the session dirs' names from the persisted listing
/// while the dirs are unchanged (and the listing was made after their last
/// change, beyond the racy window), and lists a dir that changed since.
/// Unwatched, so every call lists (as the CLI does).
#[test]
fn a_fresh_process_reads_unchanged_session_dirs_from_the_persisted_listing() {
  let fx = fixture();
  fx.write("a", &["alpha words"], 100);
  global(&fx.engine(json!({"watchSessions": false})));
  let file = fx.index_dir().join(dir::IndexFile::SESSION_DIRS);
  dir::listing::tests::listed_later(&file, 2 * crate::session::source::RACY_WINDOW_NS);
  let listing = || Index::shared(fx.index_dir());
  forget_process(&fx.index_dir());
  let result = global(&fx.engine(json!({"watchSessions": false})));
  assert_eq!(result.sessions.len(), 1);
  assert_eq!(listing().listing().dir_reads(), 0, "the sessions dir and its project dir, from the file");
  // A new session changes its dir: listed from disk, and found.
  fx.write("b", &["beta words"], 10);
  forget_process(&fx.index_dir());
  let result = global(&fx.engine(json!({"watchSessions": false})));
  assert_eq!(result.sessions.len(), 2);
  assert_eq!(listing().listing().dir_reads(), 1, "the project dir");
}

/// A lookup by id (a pinned follow call, an expansion, a pack's pins)
/// answers from the listing and the resident records: no header is read
/// for a session whose record is fresh, a record of an older content is not
/// trusted, and a session made after the last listing is found.
#[test]
fn a_lookup_by_id_answers_from_fresh_records_and_reads_the_header_of_a_changed_file() {
  let fx = fixture();
  let id = |n: u32| format!("019e9a22-a7d6-700{n}-8000-000000000000");
  let write = |name: &str, n: u32| {
    let path = fx.project.join(format!("{name}.jsonl"));
    fs::write(&path, session_text(&id(n), &["words"])).unwrap();
    set_age(&path, 100);
    path
  };
  let (a, b) = (write("a", 1), write("b", 2));
  let engine = fx.engine(json!({}));
  let cx = engine.index_context();
  global(&engine);
  let index = Index::shared(cx.dir());
  index.listing().forget_headers();
  let found = |target: &str| find_session(&cx, target).map(|s| s.path).map_err(|e| e.code.as_str());
  assert_eq!(found(&id(2)), Ok(b.clone()));
  assert_eq!(found(&id(1)[..18]), Ok(a.clone()));
  let shared = find_session(&cx, "019e9a22-a7d6").unwrap_err();
  assert_eq!(shared.details["candidates"], json!([a.to_string_lossy(), b.to_string_lossy()]));
  assert_eq!(index.listing().cached_headers(), 0, "every id came from a resident record");
  // Rewritten in place with another id: the record no longer names it.
  write("b", 3);
  assert_eq!(found(&id(3)), Ok(b.clone()));
  assert_eq!(found(&id(2)), Err("session_not_found"));
  assert_eq!(index.listing().cached_headers(), 1, "the changed file's header was read");
  // Made after the last listing: found all the same.
  let c = write("c", 4);
  assert_eq!(found(&id(4)), Ok(c));
  // A file stem names its session too.
  assert_eq!(found("a"), Ok(a));
}

/// A fresh process names sessions by id from the packed heads, as its first
/// synchronization would read them, not by reading every header; an index
/// dir not marked as ours is not read.
#[test]
fn a_fresh_process_looks_up_ids_in_the_packed_heads() {
  let fx = fixture();
  let engine = packing(&fx, 6);
  let cx = engine.index_context();
  global(&engine);
  let dir = fx.index_dir();
  let index = Index::shared(dir.clone());
  let lookup = || {
    forget_all(&dir);
    let found = find_session(&cx, "s3").map(|s| s.path);
    (found, index.resident().len(), index.listing().cached_headers())
  };
  // Five cold heads packed; the hot session's header is read.
  assert_eq!(lookup(), (Ok(fx.project.join("s3.jsonl")), 5, 1));
  assert!(heads::preloaded(&index, Branches::Active));
  assert!(global(&engine).coverage.complete, "the synchronization after it uses the heads");
  fs::remove_file(dir.join(dir::MARKER)).unwrap();
  index.dir().forget_names();
  assert_eq!(lookup(), (Ok(fx.project.join("s3.jsonl")), 0, 6), "no marker: every header read");
}

/// A lookup brings the listing up to date beside synchronizations that do
/// too: the changes the watch reports are taken once, so a lookup that
/// found them taken by a synchronization still mid-restat must wait for the
/// listing that holds them, never answer from the one before.
#[test]
fn a_session_made_before_a_lookup_is_found_while_synchronizations_run() {
  let fx = fixture();
  for i in 0..20 {
    fx.write(&format!("old{i}"), &["words"], 100);
  }
  let engine = fx.engine(json!({}));
  global(&engine);
  let stop = std::sync::atomic::AtomicBool::new(false);
  let missed = std::thread::scope(|scope| {
    scope.spawn(|| {
      while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        global(&engine);
      }
    });
    let cx = engine.index_context();
    let missed: Vec<usize> = (0..150)
      .filter(|i| {
        let id = format!("new-{i}");
        let path = fx.write(&id, &["fresh"], 0);
        find_session(&cx, &id).map(|s| s.path) != Ok(path)
      })
      .collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    missed
  });
  assert_eq!(missed, Vec::<usize>::new(), "sessions a lookup did not find");
}

/// A query's rebuild of a damaged cold record runs on a rayon job, and a
/// synchronization holds the sync lock across rayon work: the rebuild waits
/// a bounded time, then leaves the record to the next call.
#[test]
fn a_query_rebuild_waits_a_bounded_time_for_the_sync_lock() {
  let fx = fixture();
  let cold = fx.write("a", &["hello"], 100);
  fx.write("b", &["newer"], 50);
  let engine = fx.engine(json!({"hotSessions": 1}));
  global(&engine);
  let cx = engine.index_context();
  let index = Index::shared(cx.dir());
  let held = index.sync_state().lock();
  assert!(sync::rebuild_cold(&cx, &cold, Branches::Active).is_none(), "gave up while the lock was held");
  drop(held);
  assert!(sync::rebuild_cold(&cx, &cold, Branches::Active).is_some());
}

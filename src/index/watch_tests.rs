//! The watched listing against the stat-every-file listing: the same answers
//! after every kind of change, and no listing at all while nothing changed.

use super::*;
use crate::engine::Engine;
use crate::ops::recall::recall;
use crate::ops::recall::RecallRequest;
use crate::testing::{AgentDir, CWD};
use serde_json::{json, Value};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub(super) fn session(id: &str, text: &str) -> String {
  let header = json!({"type": "session", "version": 3, "id": id, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": CWD});
  let entry = json!({"type": "message", "id": format!("{id}-0"), "parentId": null, "timestamp": "2026-01-01T00:00:01.000Z",
    "message": {"role": "user", "content": text}});
  format!("{header}\n{entry}\n")
}

pub(super) fn write(fx: &AgentDir, id: &str, text: &str, age_secs: u64) -> PathBuf {
  let path = fx.project.join(format!("{id}.jsonl"));
  fs::write(&path, session(id, text)).unwrap();
  let when = SystemTime::now() - Duration::from_secs(age_secs);
  fs::File::options().write(true).open(&path).unwrap().set_modified(when).unwrap();
  path
}

/// Appends an entry after `parent` (so it extends the active branch).
fn append(path: &Path, id: &str, parent: &str, text: &str) {
  let entry = json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:02.000Z",
    "message": {"role": "user", "content": text}});
  fs::OpenOptions::new().append(true).open(path).unwrap().write_all(format!("{entry}\n").as_bytes()).unwrap();
}

/// The page for `query`, global, with the fixture's own directory masked.
fn answer(fx: &AgentDir, engine: &Engine, query: &str) -> String {
  let page = recall(engine, &RecallRequest::from_json(Some(&json!({"query": query, "scope": "global"}))).unwrap());
  let text = serde_json::to_value(&page).unwrap().to_string();
  text.replace(fx.agent.to_str().unwrap(), "<agent>")
}

fn total(page: &str) -> u64 {
  serde_json::from_str::<Value>(page).unwrap()["total"].as_u64().unwrap()
}

/// An agent dir, and a dir beside its sessions (for links made elsewhere).
fn with_outside_dir() -> (AgentDir, PathBuf) {
  let fx = AgentDir::new();
  let outside = fx.agent.join("outside");
  fs::create_dir(&outside).unwrap();
  (fx, outside)
}

/// Every kind of change, each checked by the very next call.
fn changes(watch: bool) -> Vec<String> {
  let fx = AgentDir::new();
  let engine = fx.engine(json!({"watchSessions": watch, "hotSessions": 1}));
  let a = write(&fx, "a", "alpha words", 300);
  let b = write(&fx, "b", "bravo words", 200);
  let mut answers = vec![answer(&fx, &engine, "alpha"), answer(&fx, &engine, "bravo")];
  append(&a, "a-1", "a-0", "appended zulu");
  answers.push(answer(&fx, &engine, "zulu"));
  append(&a, "a-2", "a-1", "appended yankee");
  answers.push(answer(&fx, &engine, "yankee"));
  write(&fx, "c", "charlie new", 100);
  answers.push(answer(&fx, &engine, "charlie"));
  fs::rename(fx.project.join("c.jsonl"), fx.project.join("d.jsonl")).unwrap();
  answers.push(answer(&fx, &engine, "charlie"));
  fs::remove_file(&b).unwrap();
  answers.push(answer(&fx, &engine, "bravo"));
  // A same-size rewrite that restores the mtime, right after a call.
  let before = fs::metadata(&a).unwrap().modified().unwrap();
  let text = fs::read_to_string(&a).unwrap().replace("zulu", "xray");
  fs::write(&a, text).unwrap();
  fs::File::options().write(true).open(&a).unwrap().set_modified(before).unwrap();
  answers.push(answer(&fx, &engine, "xray"));
  answers.push(answer(&fx, &engine, "zulu"));
  answers
}

#[test]
fn every_change_is_seen_by_the_next_call_and_answers_match_the_stat_path() {
  let watched = changes(true);
  let totals: Vec<u64> = watched.iter().map(|p| total(p)).collect();
  // alpha, bravo, appended zulu, appended yankee, new file, renamed, deleted, rewritten (xray in, zulu out)
  assert_eq!(totals, [1, 1, 1, 1, 1, 1, 0, 1, 0]);
  assert!(watched[5].contains("d.jsonl") && !watched[5].contains("c.jsonl"), "{}", watched[5]);
  assert_eq!(watched, changes(false), "identical answers with and without the watcher");
}

#[cfg(target_os = "linux")]
#[test]
fn a_quiet_watch_reuses_the_listing_and_an_overflow_lists_again() {
  let fx = AgentDir::new();
  let a = write(&fx, "a", "alpha words", 300);
  let engine = fx.engine(json!({}));
  let index = Index::shared(engine.index_dir());
  let first = index.listing().sources(&engine.index_context());
  assert!(first.iter().all(|s| s.quiet_since != watch::NEVER_QUIET), "a local dir is watched");
  let lost = watch::LOST_EVENTS.load(std::sync::atomic::Ordering::Relaxed);
  let again = index.listing().sources(&engine.index_context());
  // An overflow of the queue the tests share lists again, rightly.
  let overflowed = watch::LOST_EVENTS.load(std::sync::atomic::Ordering::Relaxed) > lost;
  assert!(Arc::ptr_eq(&first, &again) || overflowed, "nothing changed: no stat, no listing");
  append(&a, "a-1", "a-0", "appended zulu");
  let appended = index.listing().sources(&engine.index_context());
  assert!(!Arc::ptr_eq(&first, &appended), "the append is seen");
  assert_eq!(appended[0].stamp.size, fs::metadata(&a).unwrap().len());
  // An overflow loses events: everything is listed and stat'ed again.
  append(&a, "a-2", "a-1", "appended yankee");
  index.listing().watcher().overflow_next.store(true, std::sync::atomic::Ordering::Relaxed);
  let relisted = index.listing().sources(&engine.index_context());
  assert_eq!(relisted[0].stamp.size, fs::metadata(&a).unwrap().len());
  assert!(total(&answer(&fx, &engine, "yankee")) == 1);
  // Off: every call lists and stats.
  let off = fx.engine(json!({"watchSessions": false}));
  assert!(!Arc::ptr_eq(&index.listing().sources(&off.index_context()), &index.listing().sources(&off.index_context())));
}

/// A dir watch sees writes made through its own dir only: a file with a
/// second hard link elsewhere, or a symlink, is stat'ed on every call.
#[cfg(target_os = "linux")]
#[test]
fn hard_links_and_symlinks_are_never_vouched_for() {
  let (fx, outside) = with_outside_dir();
  let linked = write(&fx, "a", "alpha words", 300);
  fs::hard_link(&linked, outside.join("a.jsonl")).unwrap();
  let target = outside.join("b-target.jsonl");
  fs::write(&target, session("b", "bravo words")).unwrap();
  std::os::unix::fs::symlink(&target, fx.project.join("b.jsonl")).unwrap();
  let engine = fx.engine(json!({}));
  let index = Index::shared(engine.index_dir());
  assert_eq!(total(&answer(&fx, &engine, "zulu")), 0);
  assert!(index.listing().sources(&engine.index_context()).iter().all(|s| s.quiet_since == watch::NEVER_QUIET));
  append(&outside.join("a.jsonl"), "a-1", "a-0", "appended zulu");
  append(&target, "b-1", "b-0", "appended yankee");
  assert_eq!(total(&answer(&fx, &engine, "zulu")), 1, "written through the other hard link");
  assert_eq!(total(&answer(&fx, &engine, "yankee")), 1, "written through the symlink's target");
}

/// link(2) reports to the file's own inode only, not to its dir's watch: a
/// link made after the listing is armed turns the file unvouched, so writes
/// through it are seen; removing the link again is seen too.
#[cfg(target_os = "linux")]
#[test]
fn a_hard_link_made_after_arming_is_seen_and_writes_through_it_are_too() {
  let (fx, outside) = with_outside_dir();
  let a = write(&fx, "a", "alpha words", 300);
  let engine = fx.engine(json!({}));
  let index = Index::shared(engine.index_dir());
  assert_eq!(total(&answer(&fx, &engine, "alpha")), 1);
  assert!(
    index.listing().sources(&engine.index_context()).iter().all(|s| s.quiet_since != watch::NEVER_QUIET),
    "armed"
  );
  let link = outside.join("a.jsonl");
  fs::hard_link(&a, &link).unwrap();
  append(&link, "a-1", "a-0", "appended zulu");
  assert_eq!(total(&answer(&fx, &engine, "zulu")), 1, "appended through the new link");
  // A same-size rewrite through the link that restores the mtime.
  let before = fs::metadata(&link).unwrap().modified().unwrap();
  let text = fs::read_to_string(&link).unwrap().replace("zulu", "xray");
  fs::OpenOptions::new().write(true).open(&link).unwrap().write_all(text.as_bytes()).unwrap();
  fs::File::options().write(true).open(&link).unwrap().set_modified(before).unwrap();
  assert_eq!((total(&answer(&fx, &engine, "xray")), total(&answer(&fx, &engine, "zulu"))), (1, 0));
  assert!(
    index.listing().sources(&engine.index_context()).iter().all(|s| s.quiet_since == watch::NEVER_QUIET),
    "stat'ed on every call"
  );
  // The link removed: the next full listing (a new project dir makes one)
  // vouches for the file again.
  fs::remove_file(&link).unwrap();
  fs::create_dir(fx.project.with_file_name("--elsewhere--")).unwrap();
  write(&fx, "b", "bravo words", 200);
  assert_eq!(total(&answer(&fx, &engine, "bravo")), 1);
  assert!(
    index.listing().sources(&engine.index_context()).iter().all(|s| s.quiet_since != watch::NEVER_QUIET),
    "{:?}",
    index.listing().sources(&engine.index_context())
  );
}

/// A session file created after the listing is found by the next call
/// without listing every session again: stat'ed, vouched for by its dir's
/// watch, and given its own inode watch as the listed files have theirs,
/// so a hard link made to it later is seen too.
#[cfg(target_os = "linux")]
#[test]
fn a_new_session_file_is_listed_without_a_full_listing() {
  let (fx, outside) = with_outside_dir();
  write(&fx, "a", "alpha words", 300);
  let engine = fx.engine(json!({}));
  let index = Index::shared(engine.index_dir());
  let lost = watch::LOST_EVENTS.load(std::sync::atomic::Ordering::Relaxed);
  assert_eq!(total(&answer(&fx, &engine, "alpha")), 1);
  let listings = index.listing().full_listings();
  let b = write(&fx, "b", "bravo words", 200);
  assert_eq!(total(&answer(&fx, &engine, "bravo")), 1, "the new session is found");
  let link = outside.join("b.jsonl");
  fs::hard_link(&b, &link).unwrap();
  append(&link, "b-1", "b-0", "appended zulu");
  assert_eq!(total(&answer(&fx, &engine, "zulu")), 1, "appended through a link made to the new file");
  let listed = index.listing().sources(&engine.index_context());
  assert_eq!(listed.len(), 2);
  // An overflow of the queue the tests share lists again, rightly.
  if watch::LOST_EVENTS.load(std::sync::atomic::Ordering::Relaxed) == lost {
    assert_eq!(index.listing().full_listings(), listings, "no session dir listed again");
  }
}

/// Above the file watch budget no session file gets an inode watch (one per
/// file at 100,000 sessions took the user's inotify watches from every
/// other process): its dir's watch vouches for it alone, so a hard link
/// made after arming goes unseen until the next full listing, which finds
/// the second link and stops vouching.
#[cfg(target_os = "linux")]
#[test]
fn above_the_file_watch_budget_the_dir_watches_vouch_alone() {
  let (fx, outside) = with_outside_dir();
  let a = write(&fx, "a", "alpha words", 300);
  let engine = fx.engine(json!({}));
  let index = Index::shared(engine.index_dir());
  index.listing().watcher().file_budget.store(0, std::sync::atomic::Ordering::Relaxed);
  assert_eq!(total(&answer(&fx, &engine, "alpha")), 1);
  let listed = index.listing().sources(&engine.index_context());
  assert!(listed.iter().all(|s| s.quiet_since != watch::NEVER_QUIET), "vouched for by the dir watch");
  let lost = watch::LOST_EVENTS.load(std::sync::atomic::Ordering::Relaxed);
  let link = outside.join("a.jsonl");
  fs::hard_link(&a, &link).unwrap();
  append(&link, "a-1", "a-0", "appended zulu");
  let late = total(&answer(&fx, &engine, "zulu"));
  // An overflow of the queue the tests share lists again, rightly.
  if watch::LOST_EVENTS.load(std::sync::atomic::Ordering::Relaxed) == lost {
    assert_eq!(late, 0, "no inode watch: the late link is not reported");
  }
  // A new project dir makes the next call list again: the second link is found.
  fs::create_dir(fx.project.with_file_name("--elsewhere--")).unwrap();
  assert_eq!(total(&answer(&fx, &engine, "zulu")), 1, "seen at the next full listing");
  let relisted = index.listing().sources(&engine.index_context());
  let linked = relisted.iter().find(|s| *s.path == *a).unwrap();
  assert_eq!(linked.quiet_since, watch::NEVER_QUIET, "a file with two links is stat'ed on every call");
}

/// A listing restated from the last one with the order held (an append to
/// the newest session) says which positions it restated, so a caller
/// comparing the two reads those, not every file; one whose order changed
/// says nothing.
#[cfg(target_os = "linux")]
#[test]
fn a_restated_listing_names_the_positions_that_can_differ() {
  let fx = AgentDir::new();
  let a = write(&fx, "a", "alpha words", 100);
  let b = write(&fx, "b", "bravo words", 200);
  let engine = fx.engine(json!({}));
  let index = Index::shared(engine.index_dir());
  let listing = index.listing();
  let lost = watch::LOST_EVENTS.load(std::sync::atomic::Ordering::Relaxed);
  let first = listing.sources(&engine.index_context());
  append(&a, "a-1", "a-0", "appended zulu");
  let second = listing.sources(&engine.index_context());
  let kept_order = listing.delta(&first, &second);
  append(&b, "b-1", "b-0", "appended yankee");
  // Newer than a for sure (both appends may fall in one tick of the file clock).
  fs::File::options().write(true).open(&b).unwrap().set_modified(SystemTime::now() + Duration::from_secs(5)).unwrap();
  let third = listing.sources(&engine.index_context());
  // An overflow of the queue the tests share lists again, rightly.
  if watch::LOST_EVENTS.load(std::sync::atomic::Ordering::Relaxed) == lost {
    assert_eq!(kept_order, Some(vec![0]), "a is still the newest");
    assert_eq!(listing.delta(&second, &third), None, "b moved first: everything is compared");
    assert_eq!(listing.delta(&first, &second), None, "only the current listing's own parent");
  }
  assert_eq!(
    (third[0].path, third[1].path),
    (crate::index::sources::interned(&b), crate::index::sources::interned(&a))
  );
}

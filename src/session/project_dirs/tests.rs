//! The project scope by identity, through recall: sessions of every checkout
//! of one repository, and only of it, written where Pi writes them.

use crate::engine::Engine;
use crate::ops::recall::{recall, Hit, RecallRequest};
use crate::project::fixtures::{repo, worktree};
use crate::session::discover::encode_cwd;
use serde_json::json;
use std::fs;
use std::path::Path;

struct World {
  _tmp: tempfile::TempDir,
  root: std::path::PathBuf,
  agent: std::path::PathBuf,
}

impl World {
  fn new() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    let agent = root.join("agent");
    World { _tmp: tmp, root, agent }
  }

  /// A session of `cwd` (in Pi's dir for it) whose answer is `text`.
  fn session(&self, cwd: &Path, id: &str, text: &str) {
    let dir = self.agent.join("sessions").join(encode_cwd(&cwd.to_string_lossy()));
    fs::create_dir_all(&dir).unwrap();
    let header = json!({"type": "session", "version": 3, "id": id, "cwd": cwd});
    let entry = json!({"type": "message", "id": format!("{id}-0"), "parentId": null,
      "timestamp": "2026-01-01T00:00:00.000Z", "message": {"role": "user", "content": text}});
    fs::write(dir.join(format!("{id}.jsonl")), format!("{header}\n{entry}\n")).unwrap();
  }

  fn engine(&self, cwd: &Path, config: serde_json::Value) -> Engine {
    let config = crate::config::Config::from_json(Some(&config)).unwrap();
    Engine::new(Some(self.agent.to_str().unwrap()), Some(cwd.to_str().unwrap()), config).unwrap()
  }
}

/// The session ids a project recall of `query` from `cwd` finds, sorted.
fn project_hits(engine: &Engine, query: &str) -> Vec<String> {
  let request = RecallRequest::from_json(Some(&json!({"query": query, "scope": "project", "pageSize": 50}))).unwrap();
  let page = recall(engine, &request);
  assert!(page.error.is_none(), "{:?}", page.error);
  let mut ids: Vec<String> = page
    .hits
    .iter()
    .map(|h| match h {
      Hit::Entry(hit) => hit.session_id.clone(),
      Hit::Session(hit) => hit.session_id.clone(),
    })
    .collect();
  ids.sort();
  ids.dedup();
  ids
}

#[test]
fn a_main_checkout_and_its_worktree_find_each_others_sessions() {
  let w = World::new();
  let main = repo(&w.root.join("src/app"), &[]);
  let wt = worktree(&main.join(".git"), &w.root.join("wt/app-feature"), "app-feature");
  w.session(&main, "s-main", "the gannet cache is warm");
  w.session(&wt, "s-wt", "the gannet flag ships");
  let other = repo(&w.root.join("src/other"), &[]);
  w.session(&other, "s-other", "gannet elsewhere");
  assert_eq!(project_hits(&w.engine(&main, json!({})), "gannet"), ["s-main", "s-wt"]);
  assert_eq!(project_hits(&w.engine(&wt, json!({})), "gannet"), ["s-main", "s-wt"]);
  assert_eq!(project_hits(&w.engine(&other, json!({})), "gannet"), ["s-other"]);
}

#[test]
fn clones_by_remote_are_one_project_and_a_similar_name_stays_apart() {
  let w = World::new();
  let a = repo(&w.root.join("a/repo"), &[("origin", "git@github.com:org/repo.git")]);
  let b = repo(&w.root.join("b/repo-clone"), &[("origin", "https://github.com/org/repo")]);
  let c = repo(&w.root.join("c/repo"), &[("origin", "git@github.com:org/repo2.git")]);
  let d = repo(&w.root.join("d/repo"), &[("origin", "git@github.com:other/repo.git")]);
  for (dir, id) in [(&a, "s-a"), (&b, "s-b"), (&c, "s-c"), (&d, "s-d")] {
    w.session(dir, id, "the petrel migration");
  }
  assert_eq!(project_hits(&w.engine(&a, json!({})), "petrel"), ["s-a", "s-b"]);
  assert_eq!(project_hits(&w.engine(&c, json!({})), "petrel"), ["s-c"]);
  assert_eq!(project_hits(&w.engine(&d, json!({})), "petrel"), ["s-d"]);
}

#[test]
fn other_checkouts_are_admitted_before_any_candidate_budget() {
  let w = World::new();
  let main = repo(&w.root.join("app"), &[("origin", "git@example.com:team/app.git")]);
  let wt = worktree(&main.join(".git"), &w.root.join("app-wt"), "app-wt");
  // Polluters: many sessions of other projects with the word, newer than the worktree's.
  for n in 0..30 {
    let noise = w.root.join(format!("noise{n}"));
    fs::create_dir_all(&noise).unwrap();
    w.session(&noise, &format!("noise-{n:02}"), "the albatross report");
  }
  w.session(&wt, "s-wt", "the albatross report for the app");
  let engine = w.engine(&main, json!({"maxSyncSessions": 2}));
  assert_eq!(project_hits(&engine, "albatross"), ["s-wt"]);
}

#[test]
fn a_folder_without_git_and_malformed_git_metadata_are_their_own_project() {
  let w = World::new();
  let plain = w.root.join("plain");
  fs::create_dir_all(&plain).unwrap();
  let broken = w.root.join("broken");
  fs::create_dir_all(&broken).unwrap();
  fs::write(broken.join(".git"), "not a gitdir line\n").unwrap();
  let main = repo(&w.root.join("main"), &[]);
  for (dir, id) in [(&plain, "s-plain"), (&broken, "s-broken"), (&main, "s-main")] {
    w.session(dir, id, "the kestrel note");
  }
  assert_eq!(project_hits(&w.engine(&plain, json!({})), "kestrel"), ["s-plain"]);
  let engine = w.engine(&broken, json!({}));
  assert_eq!(project_hits(&engine, "kestrel"), ["s-broken"]);
  let dirs = engine.discovery().project_dirs();
  assert_eq!(dirs.identity.fallback.map(|f| f.as_str()), Some("git_file_malformed"));
  assert!(!dirs.spans_checkouts() && dirs.dirs.is_empty());
}

/// (session id, project) of every hit of a global recall, sorted.
fn global_hit_projects(engine: &Engine, query: &str) -> (Vec<(String, Option<String>)>, serde_json::Value) {
  let request = RecallRequest::from_json(Some(&json!({"query": query, "scope": "global", "pageSize": 50}))).unwrap();
  let page = recall(engine, &request);
  assert!(page.error.is_none(), "{:?}", page.error);
  let mut named: Vec<(String, Option<String>)> = page
    .hits
    .iter()
    .map(|h| match h {
      Hit::Entry(hit) => (hit.session_id.clone(), hit.project.clone()),
      Hit::Session(hit) => (hit.session_id.clone(), hit.project.clone()),
    })
    .collect();
  named.sort();
  named.dedup();
  (named, serde_json::to_value(&page.coverage).unwrap())
}

#[test]
fn global_hits_and_session_rows_name_their_project() {
  let w = World::new();
  let app = repo(&w.root.join("checkouts/app-main"), &[("origin", "git@github.com:org/App.git")]);
  let tools = repo(&w.root.join("tools"), &[]);
  let notes = w.root.join("Notes Folder");
  fs::create_dir_all(&notes).unwrap();
  for (dir, id) in [(&app, "s-app"), (&tools, "s-tools"), (&notes, "s-notes")] {
    w.session(dir, id, "the ibis ledger");
  }
  let some = |s: &str| Some(s.to_string());
  let engine = w.engine(&app, json!({}));
  let (named, coverage) = global_hit_projects(&engine, "ibis");
  assert_eq!(
    named,
    [("s-app".into(), some("app")), ("s-notes".into(), some("notes-folder")), ("s-tools".into(), some("tools"))]
  );
  assert_eq!(coverage["project"], json!({"name": "app", "source": "remote"}));
  let request = crate::ops::sessions::SessionsRequest::from_json(Some(&json!({"scope": "global"}))).unwrap();
  let page = crate::ops::sessions::sessions(&engine, &request);
  let mut rows: Vec<(String, Option<String>)> =
    page.sessions.iter().map(|r| (r.id.clone(), r.project.clone())).collect();
  rows.sort();
  assert_eq!(
    rows,
    [("s-app".into(), some("app")), ("s-notes".into(), some("notes-folder")), ("s-tools".into(), some("tools"))]
  );
  let coverage = serde_json::to_value(&page.coverage).unwrap();
  assert_eq!(coverage["project"], json!({"name": "app", "source": "remote"}));
  let session_scope = RecallRequest::from_json(Some(&json!({"query": "ibis", "scope": "session"}))).unwrap();
  assert_eq!(serde_json::to_value(recall(&engine, &session_scope).coverage).unwrap().get("project"), None);
}

#[test]
fn ambiguity_falls_back_and_says_so() {
  let w = World::new();
  let broken = w.root.join("broken");
  fs::create_dir_all(&broken).unwrap();
  fs::write(broken.join(".git"), "not a gitdir line\n").unwrap();
  w.session(&broken, "s-broken", "the plover note");
  let engine = w.engine(&broken, json!({}));
  let request = RecallRequest::from_json(Some(&json!({"query": "plover", "scope": "project"}))).unwrap();
  let coverage = serde_json::to_value(recall(&engine, &request).coverage).unwrap();
  assert_eq!(coverage["project"], json!({"name": "broken", "source": "cwd", "fallback": "git_file_malformed"}));
  assert_eq!(coverage["complete"], json!(true), "the folder's own sessions are all of what project means here");
  let plain = w.root.join("plain");
  fs::create_dir_all(&plain).unwrap();
  let coverage = serde_json::to_value(recall(&w.engine(&plain, json!({})), &request).coverage).unwrap();
  assert_eq!(coverage["project"], json!({"name": "plain", "source": "cwd"}), "no git at all is no ambiguity");
}

#[test]
fn a_moved_folder_keeps_its_identity() {
  let w = World::new();
  let old = repo(&w.root.join("old/app"), &[("origin", "git@github.com:org/app.git")]);
  w.session(&old, "s-old", "the curlew decision");
  // Seen while the folder is there (its own Pi's call records its identity).
  assert_eq!(project_hits(&w.engine(&old, json!({})), "curlew"), ["s-old"]);
  fs::rename(w.root.join("old"), w.root.join("renamed")).unwrap();
  crate::project::known::forget_resolved();
  let clone = repo(&w.root.join("new/app"), &[("origin", "https://github.com/org/app")]);
  w.session(&clone, "s-new", "the curlew follow-up");
  assert_eq!(project_hits(&w.engine(&clone, json!({})), "curlew"), ["s-new", "s-old"]);
}

#[test]
fn an_unreadable_map_of_identities_is_ignored_with_a_coverage_note() {
  let w = World::new();
  let app = repo(&w.root.join("app"), &[("origin", "git@github.com:org/app.git")]);
  w.session(&app, "s-app", "the avocet note");
  let map = w.agent.join("fabric").join(crate::project::known::FILE_NAME);
  fs::create_dir_all(map.parent().unwrap()).unwrap();
  fs::write(&map, "[1, 2").unwrap();
  let engine = w.engine(&app, json!({}));
  let request = RecallRequest::from_json(Some(&json!({"query": "avocet", "scope": "project"}))).unwrap();
  let page = recall(&engine, &request);
  assert_eq!(page.hits.len(), 1);
  let coverage = serde_json::to_value(&page.coverage).unwrap();
  assert_eq!(coverage["project"], json!({"name": "app", "source": "remote", "identitiesUnreadable": true}));
  assert_eq!(fs::read_to_string(&map).unwrap(), "[1, 2", "never overwritten");
}

#[test]
fn an_explicit_key_joins_two_repos() {
  let w = World::new();
  let a = repo(&w.root.join("a"), &[("origin", "git@github.com:org/a.git")]);
  let b = repo(&w.root.join("b"), &[]);
  let c = repo(&w.root.join("c"), &[("origin", "git@github.com:org/c.git")]);
  for (dir, id) in [(&a, "s-a"), (&b, "s-b"), (&c, "s-c")] {
    w.session(dir, id, "the godwit plan");
  }
  let keyed = json!({"projectKey": "Team Monorepo"});
  assert_eq!(project_hits(&w.engine(&a, keyed.clone()), "godwit"), ["s-a"], "b has not run under the key yet");
  let from_b = w.engine(&b, keyed.clone());
  assert_eq!(project_hits(&from_b, "godwit"), ["s-a", "s-b"]);
  assert_eq!(project_hits(&w.engine(&a, keyed), "godwit"), ["s-a", "s-b"]);
  assert_eq!(project_hits(&w.engine(&c, json!({})), "godwit"), ["s-c"], "a repo without the key stays apart");
  let request = RecallRequest::from_json(Some(&json!({"query": "godwit", "scope": "global"}))).unwrap();
  let coverage = serde_json::to_value(recall(&from_b, &request).coverage).unwrap();
  assert_eq!(coverage["project"], json!({"name": "team-monorepo", "source": "explicit"}));
  let (named, _) = global_hit_projects(&from_b, "godwit");
  let team = Some("team-monorepo".to_string());
  assert_eq!(named, [("s-a".into(), team.clone()), ("s-b".into(), team), ("s-c".into(), Some("c".to_string()))]);
}

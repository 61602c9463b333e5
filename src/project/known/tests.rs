//! The map of identities seen: what it records, what it answers for a cwd
//! that is gone, and what it does with a file it cannot read.

use super::*;
use crate::project::fixtures::repo;

fn entries(agent: &Path) -> Vec<(String, String, Source)> {
  let ledger: Ledger = serde_json::from_slice(&fs::read(path(agent)).unwrap()).unwrap();
  ledger.projects.into_iter().map(|s| (s.cwd, s.name, s.source)).collect()
}

#[test]
fn identities_from_evidence_are_recorded_and_outlive_their_folder() {
  let tmp = tempfile::tempdir().unwrap();
  let (agent, root) = (tmp.path().join("agent"), fs::canonicalize(tmp.path()).unwrap());
  fs::create_dir_all(&agent).unwrap();
  let app = repo(&root.join("app"), &[("origin", "git@github.com:org/app.git")]);
  let plain = root.join("plain");
  fs::create_dir_all(&plain).unwrap();
  let cwd = app.to_string_lossy().into_owned();
  let known = Known::open(&agent);
  let seen = known.of(&cwd);
  assert_eq!((seen.name.as_str(), seen.source), ("app", Source::Remote));
  assert_eq!(known.of(&plain.to_string_lossy()).source, Source::Cwd);
  known.save();
  assert_eq!(entries(&agent), [(cwd.clone(), "app".to_string(), Source::Remote)], "a plain folder is not recorded");

  let moved = root.join("moved-away");
  fs::rename(&app, &moved).unwrap();
  forget_resolved();
  let after = Known::open(&agent).of(&cwd);
  assert_eq!((after.key.as_str(), after.source, after.fallback), (seen.key.as_str(), Source::Remote, None));
  let unknown = Known::open(&agent).of(&root.join("never-seen").to_string_lossy());
  assert_eq!(unknown.fallback, Some(Fallback::CwdMissing), "nothing recorded: the cwd rule, saying why");
}

#[test]
fn an_explicit_key_recorded_for_a_cwd_wins_over_its_evidence_until_it_is_resolved_without_one() {
  let tmp = tempfile::tempdir().unwrap();
  let (agent, root) = (tmp.path().join("agent"), fs::canonicalize(tmp.path()).unwrap());
  fs::create_dir_all(&agent).unwrap();
  let app = repo(&root.join("app"), &[("origin", "git@github.com:org/app.git")]);
  let cwd = app.to_string_lossy().into_owned();
  let known = Known::open(&agent);
  assert_eq!(known.current(&app, Some("team")).source, Source::Explicit);
  known.save();
  let other = Known::open(&agent);
  assert_eq!((other.of(&cwd).source, other.of(&cwd).name.as_str()), (Source::Explicit, "team"));
  other.save();
  assert_eq!(entries(&agent), [(cwd.clone(), "team".to_string(), Source::Explicit)], "a keyless lookup keeps the key");
  let unkeyed = Known::open(&agent);
  assert_eq!(unkeyed.current(&app, None).source, Source::Remote, "the cwd's own call without a key");
  unkeyed.save();
  assert_eq!(entries(&agent), [(cwd, "app".to_string(), Source::Remote)]);
}

#[test]
fn an_unreadable_map_is_ignored_and_left_as_it_is() {
  let tmp = tempfile::tempdir().unwrap();
  let (agent, root) = (tmp.path().join("agent"), fs::canonicalize(tmp.path()).unwrap());
  let app = repo(&root.join("app"), &[("origin", "git@github.com:org/app.git")]);
  fs::create_dir_all(agent.join("fabric")).unwrap();
  fs::write(path(&agent), "{not json").unwrap();
  let known = Known::open(&agent);
  assert!(known.unreadable());
  assert_eq!(known.of(&app.to_string_lossy()).source, Source::Remote, "lookups still resolve evidence");
  known.save();
  assert_eq!(fs::read_to_string(path(&agent)).unwrap(), "{not json");
}

#[test]
fn the_map_keeps_the_most_recently_seen_entries() {
  let tmp = tempfile::tempdir().unwrap();
  let (agent, root) = (tmp.path().join("agent"), fs::canonicalize(tmp.path()).unwrap());
  let old = |n: usize| Seen {
    cwd: format!("/gone/{n:05}"),
    key: format!("{VERSION}:{:032x}", n),
    name: "gone".into(),
    source: Source::Remote,
    evidence: format!("host/org/{n}"),
    seen_at: 1 + n as u64,
  };
  let ledger = Ledger { version: FILE_VERSION, projects: (0..MAX_ENTRIES).map(old).collect() };
  fs::create_dir_all(agent.join("fabric")).unwrap();
  fs::write(path(&agent), serde_json::to_vec(&ledger).unwrap()).unwrap();
  let app = repo(&root.join("app"), &[("origin", "git@github.com:org/app.git")]);
  let known = Known::open(&agent);
  known.of(&app.to_string_lossy());
  known.save();
  let cwds: Vec<String> = entries(&agent).into_iter().map(|(cwd, _, _)| cwd).collect();
  assert_eq!(cwds.len(), MAX_ENTRIES);
  assert!(cwds.contains(&app.to_string_lossy().into_owned()));
  assert!(!cwds.contains(&"/gone/00000".to_string()), "the least recently seen is dropped");
  assert!(cwds.contains(&"/gone/00001".to_string()));
}

#[test]
fn nothing_is_written_into_an_agent_dir_that_does_not_exist() {
  let tmp = tempfile::tempdir().unwrap();
  let (agent, root) = (tmp.path().join("no-agent"), fs::canonicalize(tmp.path()).unwrap());
  let app = repo(&root.join("app"), &[("origin", "git@github.com:org/app.git")]);
  let known = Known::open(&agent);
  assert_eq!(known.of(&app.to_string_lossy()).source, Source::Remote);
  known.save();
  assert!(!agent.exists());
}

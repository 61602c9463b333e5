use super::*;
use crate::session::discover::SessionFile;
use std::fs;

struct Dir(tempfile::TempDir);

impl Dir {
  fn new() -> Dir {
    Dir(tempfile::tempdir().unwrap())
  }

  fn agent(&self) -> &Path {
    self.0.path()
  }

  /// A session file with header id `id`.
  fn session(&self, name: &str, id: &str) -> SessionFile {
    let dir = self.agent().join("sessions").join("--p--");
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.jsonl"));
    fs::write(&path, format!("{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"cwd\":\"/p\"}}\n")).unwrap();
    SessionFile::open(&path).unwrap()
  }
}

#[test]
fn a_missing_list_forgets_nothing_and_a_forget_covers_the_id_and_the_file() {
  let dir = Dir::new();
  let a = dir.session("a", "0190aaaa-0000-7000-8000-00000000000a");
  assert!(load(dir.agent()).unwrap().is_empty());
  let change = forget(dir.agent(), &a, None).unwrap();
  assert_eq!(change.changed.len(), 1);
  assert_eq!(change.changed[0].session_id, a.header.id);
  let list = load(dir.agent()).unwrap();
  assert!(list.covers(Some(&a.header.id), &a.path));
  // A copy under the same id elsewhere, and the same file under another id (rewritten), stay forgotten.
  assert!(list.covers(Some(&a.header.id), Path::new("/elsewhere/copy.jsonl")));
  assert!(list.covers(Some("another-id"), &a.path));
  assert!(list.covers(None, &a.path));
  assert!(!list.covers(Some("another-id"), Path::new("/elsewhere/b.jsonl")));
  // Forgetting again changes nothing and writes nothing.
  let before = fs::metadata(path(dir.agent())).unwrap().modified().unwrap();
  assert!(forget(dir.agent(), &a, None).unwrap().changed.is_empty());
  assert_eq!(fs::metadata(path(dir.agent())).unwrap().modified().unwrap(), before);
  assert_eq!(load(dir.agent()).unwrap().sessions.len(), 1);
}

#[test]
fn unforget_takes_back_by_id_prefix_or_file_and_names_what_it_cannot() {
  let dir = Dir::new();
  let a = dir.session("a", "0190aaaa-0000-7000-8000-00000000000a");
  let b = dir.session("b", "0190aaaa-0000-7000-8000-00000000000b");
  let c = dir.session("c", "0190cccc-0000-7000-8000-00000000000c");
  for s in [&a, &b, &c] {
    forget(dir.agent(), s, None).unwrap();
  }
  let ambiguous = unforget(dir.agent(), "0190aaaa-0000", None).unwrap_err();
  assert_eq!(ambiguous.code, ErrorCode::AmbiguousSession);
  assert_eq!(unforget(dir.agent(), "nothing-like-it", None).unwrap_err().code, ErrorCode::SessionNotFound);
  let by_prefix = unforget(dir.agent(), "0190cccc", None).unwrap();
  assert_eq!(by_prefix.changed.iter().map(|s| s.session_id.as_str()).collect::<Vec<_>>(), [c.header.id.as_str()]);
  let by_file = unforget(dir.agent(), &a.path.to_string_lossy(), None).unwrap();
  assert_eq!(by_file.changed[0].session_id, a.header.id);
  let list = load(dir.agent()).unwrap();
  assert_eq!(list.sessions.iter().map(|s| s.session_id.as_str()).collect::<Vec<_>>(), [b.header.id.as_str()]);
  assert!(!list.covers(Some(&a.header.id), &a.path));
  assert!(list.covers(Some(&b.header.id), &b.path));
}

#[test]
fn another_process_write_is_seen_by_the_next_load() {
  let dir = Dir::new();
  let a = dir.session("a", "id-a");
  assert!(load(dir.agent()).unwrap().is_empty());
  // Another process's write: the file replaced by rename, as write_atomic does.
  let other = format!(
    "{{\"version\":1,\"sessions\":[{{\"sessionId\":\"id-a\",\"file\":{},\"forgottenAt\":1}}]}}\n",
    serde_json::to_string(&a.path.to_string_lossy()).unwrap()
  );
  fs::create_dir_all(path(dir.agent()).parent().unwrap()).unwrap();
  crate::store::file::write_atomic(&path(dir.agent()), other.as_bytes()).unwrap();
  assert!(load(dir.agent()).unwrap().covers(Some("id-a"), &a.path));
  fs::remove_file(path(dir.agent())).unwrap();
  assert!(load(dir.agent()).unwrap().is_empty());
}

#[test]
fn an_unreadable_list_fails_closed_and_is_never_overwritten() {
  let dir = Dir::new();
  let a = dir.session("a", "id-a");
  let file = path(dir.agent());
  fs::create_dir_all(file.parent().unwrap()).unwrap();
  for bad in ["not json", "{\"version\":3,\"sessions\":[]}", "{\"version\":1,\"sessions\":[{\"sessionId\":1}]}"] {
    fs::write(&file, bad).unwrap();
    let error = load(dir.agent()).unwrap_err();
    assert_eq!(error.code, ErrorCode::ForgottenUnreadable, "{bad}");
    assert_eq!(forget(dir.agent(), &a, None).unwrap_err().code, ErrorCode::ForgottenUnreadable, "{bad}");
    assert_eq!(fs::read_to_string(&file).unwrap(), bad);
  }
  // Not a regular file: refused unread (a FIFO would otherwise block).
  fs::remove_file(&file).unwrap();
  fs::create_dir(&file).unwrap();
  assert_eq!(load(dir.agent()).unwrap_err().code, ErrorCode::ForgottenUnreadable);
  #[cfg(unix)]
  {
    fs::remove_dir(&file).unwrap();
    let made = std::process::Command::new("mkfifo").arg(&file).status().is_ok_and(|s| s.success());
    if made {
      assert_eq!(load(dir.agent()).unwrap_err().code, ErrorCode::ForgottenUnreadable);
    }
  }
}

#[test]
fn a_held_lock_refuses_a_forget_with_locked() {
  let dir = Dir::new();
  let a = dir.session("a", "id-a");
  let file = path(dir.agent());
  fs::create_dir_all(file.parent().unwrap()).unwrap();
  let held = lock::acquire(&file, &LockOptions::default()).unwrap();
  let options =
    LockOptions { stale: std::time::Duration::from_secs(30), timeout: std::time::Duration::from_millis(50) };
  let error = update_with(dir.agent(), &options, |_| Vec::new()).unwrap_err();
  assert_eq!(error.code, ErrorCode::Locked);
  drop(held);
  assert_eq!(forget(dir.agent(), &a, None).unwrap().changed.len(), 1);
}

#[test]
fn an_old_list_still_reads_and_stays_version_1_until_an_entry_is_forgotten() {
  let dir = Dir::new();
  let a = dir.session("a", "0190aaaa-0000-7000-8000-00000000000a");
  let file = path(dir.agent());
  fs::create_dir_all(file.parent().unwrap()).unwrap();
  let old = r#"{
  "version": 1,
  "sessions": [
    {"sessionId": "0190bbbb-0000-7000-8000-00000000000b", "file": "/gone/b.jsonl", "forgottenAt": 1767225600000}
  ]
}
"#;
  fs::write(&file, old).unwrap();
  let list = load(dir.agent()).unwrap();
  assert_eq!(list.sessions[0].entry_id, None);
  assert!(list.covers(Some("0190bbbb-0000-7000-8000-00000000000b"), Path::new("/x.jsonl")));
  assert!(list.entries.is_empty());
  let version = || serde_json::from_slice::<serde_json::Value>(&fs::read(&file).unwrap()).unwrap()["version"].clone();
  forget(dir.agent(), &a, None).unwrap();
  assert_eq!(version(), 1);
  // An entry forget: version 2, the session itself not forgotten, the entry by (session id, entry id).
  let change = forget(dir.agent(), &a, Some("e1")).unwrap();
  assert_eq!(change.changed[0].entry_id.as_deref(), Some("e1"));
  assert_eq!(version(), 2);
  unforget(dir.agent(), &a.header.id, None).unwrap();
  let list = load(dir.agent()).unwrap();
  assert!(!list.covers(Some(&a.header.id), &a.path));
  assert!(list.covers_entry(&a.header.id, "e1"));
  assert!(!list.covers_entry(&a.header.id, "e2"));
  assert!(!list.covers_entry("0190bbbb-0000-7000-8000-00000000000b", "e1"));
  assert!(forget(dir.agent(), &a, Some("e1")).unwrap().changed.is_empty());
  assert_eq!(unforget(dir.agent(), "0190aaaa", Some("e1")).unwrap().changed.len(), 1);
  assert_eq!(version(), 1);
  assert_eq!(unforget(dir.agent(), "0190aaaa", Some("e1")).unwrap_err().code, ErrorCode::AddressNotFound);
}

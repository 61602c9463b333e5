use super::*;
use std::fs;
use std::io::Write;

fn armed(dir: &Path) -> (Watcher, Roots) {
  armed_on(dir, Watcher::default())
}

fn armed_on(dir: &Path, watcher: Watcher) -> (Watcher, Roots) {
  let roots = Roots { sessions_dir: dir.to_path_buf(), session_dir: None };
  let mut arming = watcher.arm(&roots);
  arming.watch(dir, Watched::Root);
  arming.watch(&dir.join("p"), Watched::Sessions);
  assert!(arming.finish().is_some(), "a tmpfs or local test dir can be watched");
  (watcher, roots)
}

fn changed(drained: Drained) -> Vec<PathBuf> {
  match drained {
    Drained::Files { changed, .. } => changed,
    Drained::Unknown => panic!("expected known changes"),
  }
}

fn project() -> (tempfile::TempDir, PathBuf) {
  let dir = tempfile::tempdir().unwrap();
  let file = dir.path().join("p").join("a.jsonl");
  fs::create_dir(dir.path().join("p")).unwrap();
  fs::write(&file, "{}\n").unwrap();
  (dir, file)
}

#[test]
fn an_append_is_seen_by_the_next_drain_and_only_once() {
  let (dir, file) = project();
  let (watcher, roots) = armed(dir.path());
  assert_eq!(changed(watcher.drain(&roots)), Vec::<PathBuf>::new());
  fs::OpenOptions::new().append(true).open(&file).unwrap().write_all(b"{}\n").unwrap();
  assert_eq!(changed(watcher.drain(&roots)), vec![file.clone()]);
  assert_eq!(changed(watcher.drain(&roots)), Vec::<PathBuf>::new());
  // Metadata alone (utimes, as a copy tool restoring an mtime) counts too.
  fs::File::options().write(true).open(&file).unwrap().set_modified(std::time::SystemTime::UNIX_EPOCH).unwrap();
  assert_eq!(changed(watcher.drain(&roots)), vec![file]);
}

/// A new session file, created or renamed into a project dir (perhaps over
/// a listed one), is reported as a changed file: its stat says the rest.
#[test]
fn a_new_session_file_is_a_changed_file() {
  let (dir, file) = project();
  let (watcher, roots) = armed(dir.path());
  let new = dir.path().join("p").join("b.jsonl");
  fs::write(&new, "{}\n").unwrap();
  assert_eq!(changed(watcher.drain(&roots)), vec![new.clone()]);
  let written = dir.path().join("p").join("c.tmp");
  fs::write(&written, "{}\n").unwrap();
  fs::rename(&written, &file).unwrap();
  assert_eq!(changed(watcher.drain(&roots)), vec![file], "renamed over a listed name: a new inode");
  assert_eq!(changed(watcher.drain(&roots)), Vec::<PathBuf>::new());
}

#[test]
fn removed_and_renamed_files_and_project_dirs_need_a_full_pass() {
  let (dir, file) = project();
  let cases: [&dyn Fn(); 3] = [
    &|| fs::rename(&file, dir.path().join("p").join("c.jsonl")).unwrap(),
    &|| fs::remove_file(dir.path().join("p").join("c.jsonl")).unwrap(),
    &|| fs::create_dir(dir.path().join("q")).unwrap(),
  ];
  for (i, change) in cases.iter().enumerate() {
    let (watcher, roots) = armed(dir.path());
    change();
    assert_eq!(watcher.drain(&roots), Drained::Unknown, "case {i}");
    assert_eq!(watcher.drain(&roots), Drained::Unknown, "case {i}: stays unknown until re-armed");
  }
}

#[test]
fn other_names_do_not_count_and_other_roots_are_unknown() {
  let (dir, _) = project();
  let (watcher, roots) = armed(dir.path());
  fs::write(dir.path().join("p").join("notes.txt"), "x").unwrap();
  assert_eq!(changed(watcher.drain(&roots)), Vec::<PathBuf>::new());
  let other = Roots { sessions_dir: dir.path().join("elsewhere"), session_dir: None };
  assert_eq!(watcher.drain(&other), Drained::Unknown);
}

#[test]
fn a_removed_watched_dir_is_unknown() {
  let (dir, file) = project();
  let (watcher, roots) = armed(dir.path());
  fs::remove_file(file).unwrap();
  let _ = watcher.drain(&roots);
  let (watcher, roots) = armed(dir.path());
  fs::remove_dir(dir.path().join("p")).unwrap();
  assert_eq!(watcher.drain(&roots), Drained::Unknown);
}

/// A real queue overflow: more distinct events than the kernel queues
/// (consecutive identical events merge, so two files alternate).
#[test]
fn an_overflowed_queue_is_unknown() {
  let limit: usize = fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
    .ok()
    .and_then(|s| s.trim().parse().ok())
    .unwrap_or(usize::MAX);
  if limit > 200_000 {
    eprintln!("skipped: max_queued_events is {limit}, too many writes to overflow in a unit test");
    return;
  }
  let (dir, a) = project();
  let b = dir.path().join("p").join("b.jsonl");
  fs::write(&b, "").unwrap();
  let (watcher, roots) = armed(dir.path());
  let mut files =
    [fs::File::options().write(true).open(&a).unwrap(), fs::File::options().write(true).open(&b).unwrap()];
  for i in 0..limit + 10 {
    files[i % 2].write_all(b"x").unwrap();
  }
  assert_eq!(watcher.drain(&roots), Drained::Unknown);
}

#[test]
fn two_watchers_of_one_dir_each_see_every_change() {
  let (dir, file) = project();
  let (first, roots) = armed(dir.path());
  let (second, _) = armed(dir.path());
  fs::OpenOptions::new().append(true).open(&file).unwrap().write_all(b"{}\n").unwrap();
  assert_eq!(changed(first.drain(&roots)), vec![file.clone()]);
  second.disarm();
  fs::OpenOptions::new().append(true).open(&file).unwrap().write_all(b"{}\n").unwrap();
  assert_eq!(changed(first.drain(&roots)), vec![file], "the other's release keeps the shared watch");
  assert_eq!(second.drain(&roots), Drained::Unknown);
}

#[test]
fn a_simulated_overflow_disarms() {
  let (dir, _) = project();
  let (watcher, roots) = armed(dir.path());
  watcher.overflow_next.store(true, std::sync::atomic::Ordering::Relaxed);
  assert_eq!(watcher.drain(&roots), Drained::Unknown);
  assert_eq!(watcher.drain(&roots), Drained::Unknown);
}

#[test]
fn a_watched_file_reports_a_link_made_elsewhere_and_a_pruned_one_does_not() {
  let (dir, file) = project();
  let roots = Roots { sessions_dir: dir.path().to_path_buf(), session_dir: None };
  let watcher = Watcher::default();
  let arm = |files: &[&Path]| {
    let mut arming = watcher.arm(&roots);
    arming.watch(dir.path(), Watched::Root);
    arming.watch(&dir.path().join("p"), Watched::Sessions);
    assert_eq!(arming.watch_files(files), files.len());
    assert!(arming.finish().is_some());
  };
  let elsewhere = tempfile::tempdir_in(dir.path().parent().unwrap()).unwrap();
  let link = elsewhere.path().join("a.jsonl");
  arm(&[&file]);
  fs::hard_link(&file, &link).unwrap();
  assert_eq!(changed(watcher.drain(&roots)), vec![file.clone()], "the dir watch alone never sees it");
  fs::remove_file(&link).unwrap();
  assert_eq!(changed(watcher.drain(&roots)), vec![file.clone()], "nor the link's removal");
  // Re-armed without the file: its watch is pruned, a new link goes unreported.
  arm(&[]);
  fs::hard_link(&file, &link).unwrap();
  assert_eq!(changed(watcher.drain(&roots)), Vec::<PathBuf>::new());
}

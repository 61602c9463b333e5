//! Change notification for the session dirs, so a warm call need not stat
//! every session file to see that nothing changed.
//!
//! On Linux an inotify instance watches the sessions dir, each project dir
//! and Pi's custom session dir. The kernel queues an event inside the write
//! (or truncate, chmod, utimes, rename) system call itself, so once a write
//! has returned, a non-blocking read of the queue at the start of a call
//! sees it: a call that drains an empty queue knows no watched file changed
//! since the previous drain. [`Watcher::drain`] reads the queue without
//! blocking and says which files changed ([`Drained::Files`]) or that
//! nothing can be vouched for ([`Drained::Unknown`]): not armed, a queue
//! overflow, a watched dir removed, moved or unmounted, a file created,
//! removed or renamed. Then the caller lists and stats everything again and
//! re-arms ([`Watcher::arm`]) before it lists.
//!
//! Where no such guarantee exists the watcher never vouches and every call
//! stats every file as before: other systems, `watchSessions: false`, a
//! filesystem whose changes may come from elsewhere (network, FUSE: only the
//! local filesystems in [`local_fs`] are trusted), a dir that could not be
//! watched (e.g. the per-user watch limit), and single files that a dir
//! watch cannot see (symlinks, files with more than one hard link), which
//! [`Source::quiet_since`](super::Source) marks as never quiet.
//! A known limit: inotify does not report writes through a shared memory
//! mapping, so such a change is seen only at the next full listing. Pi (and
//! any JSONL appender) writes with write(2).

use std::path::{Path, PathBuf};

/// What changed since the previous drain.
#[derive(Debug, PartialEq, Eq)]
pub enum Drained {
  /// No guarantee: list and stat every file, then re-arm.
  Unknown,
  /// Exactly these files may have changed (contents or metadata); every
  /// other watched file is as it was. Drained at `at_ns`.
  Files { changed: Vec<PathBuf>, at_ns: i128 },
}

/// A source that no dir watch can vouch for.
pub const NEVER_QUIET: i128 = i128::MAX;

/// One watcher per index, used under its sync lock. All watchers of a
/// process share one inotify instance (the kernel allows 128 per user).
pub struct Watcher {
  #[cfg(target_os = "linux")]
  id: u64,
  #[cfg(target_os = "linux")]
  hub: Option<std::sync::Arc<parking_lot::Mutex<linux::Hub>>>,
  /// The roots the watches cover, once armed.
  #[cfg(target_os = "linux")]
  armed: parking_lot::Mutex<Option<Roots>>,
  /// Test hook: the next drain reads as an overflowed queue.
  #[cfg(test)]
  pub(crate) overflow_next: std::sync::atomic::AtomicBool,
}

impl Default for Watcher {
  fn default() -> Self {
    #[cfg(target_os = "linux")]
    return Watcher::on(linux::Hub::shared());
    #[cfg(not(target_os = "linux"))]
    Watcher {
      #[cfg(test)]
      overflow_next: Default::default(),
    }
  }
}

impl Watcher {
  #[cfg(target_os = "linux")]
  fn on(hub: Option<std::sync::Arc<parking_lot::Mutex<linux::Hub>>>) -> Watcher {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    Watcher {
      id: NEXT.fetch_add(1, Ordering::Relaxed),
      hub,
      armed: Default::default(),
      #[cfg(test)]
      overflow_next: Default::default(),
    }
  }

  /// Reads every queued event without blocking.
  pub fn drain(&self, roots: &Roots) -> Drained {
    #[cfg(test)]
    if self.overflow_next.swap(false, std::sync::atomic::Ordering::Relaxed) {
      self.disarm();
      return Drained::Unknown;
    }
    #[cfg(target_os = "linux")]
    {
      let mut armed = self.armed.lock();
      let drained = match (&self.hub, armed.as_ref()) {
        (Some(hub), Some(covered)) if covered == roots => hub.lock().drain(self.id),
        _ => Drained::Unknown,
      };
      if drained == Drained::Unknown {
        *armed = None;
        self.release();
      }
      drained
    }
    #[cfg(not(target_os = "linux"))]
    {
      let _ = roots;
      Drained::Unknown
    }
  }

  /// Starts a fresh arming for `roots`: watches are added with [`Arming::watch`]
  /// before each dir is listed, and [`Arming::finish`] says from when on the
  /// watch vouches for its files (`None`: it never does).
  pub fn arm(&self, roots: &Roots) -> Arming<'_> {
    self.disarm();
    Arming { watcher: self, roots: roots.clone(), ok: cfg!(target_os = "linux") }
  }

  pub fn disarm(&self) {
    #[cfg(target_os = "linux")]
    {
      *self.armed.lock() = None;
      self.release();
    }
  }

  #[cfg(target_os = "linux")]
  fn release(&self) {
    if let Some(hub) = &self.hub {
      hub.lock().release(self.id);
    }
  }
}

/// The dirs a listing reads: the sessions dir and Pi's custom session dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
  pub sessions_dir: PathBuf,
  pub session_dir: Option<PathBuf>,
}

/// A watcher being armed during a full listing.
pub struct Arming<'w> {
  watcher: &'w Watcher,
  roots: Roots,
  ok: bool,
}

impl Arming<'_> {
  /// Watches `dir` (call before listing it); `root` marks the sessions dir,
  /// whose project dirs come and go.
  pub fn watch(&mut self, dir: &Path, root: bool) {
    #[cfg(target_os = "linux")]
    {
      let watcher = self.watcher;
      self.ok = self.ok && watcher.hub.as_ref().is_some_and(|hub| hub.lock().watch(watcher.id, dir, root));
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (dir, root);
  }

  /// Every dir is watched: from the returned time on (taken after the last
  /// watch was added), every change to a watched file is queued.
  pub fn finish(self) -> Option<i128> {
    if !self.ok {
      self.watcher.disarm();
      return None;
    }
    #[cfg(target_os = "linux")]
    {
      let at = crate::session::source::now_ns();
      *self.watcher.armed.lock() = Some(self.roots);
      Some(at)
    }
    #[cfg(not(target_os = "linux"))]
    {
      let _ = self.roots;
      None
    }
  }
}

/// Filesystems whose every change goes through this kernel, so inotify sees
/// it (statfs magic numbers, linux/magic.h). Network and FUSE filesystems
/// are not here: their files change without this kernel knowing.
#[cfg(target_os = "linux")]
fn local_fs(magic: i64) -> bool {
  const LOCAL: &[i64] = &[
    0xEF53,              // ext2/3/4
    0x5846_5342,         // xfs
    0x9123_683E,         // btrfs
    0x0102_1994,         // tmpfs
    0x794C_7630,         // overlayfs
    0x2FC1_2FC1,         // zfs
    0xF2F5_2010u32 as _, // f2fs
    0xCA45_1A4E,         // bcachefs
    0x3153_464A,         // jfs
    0x5265_4973,         // reiserfs
  ];
  LOCAL.contains(&magic)
}

#[cfg(target_os = "linux")]
mod linux {
  use super::{local_fs, Drained};
  use crate::session::source::now_ns;
  use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};
  use parking_lot::Mutex;
  use std::collections::HashMap;
  use std::ffi::OsStr;
  use std::io;
  use std::path::{Path, PathBuf};
  use std::sync::{Arc, OnceLock};

  /// More changed files than this pending for one watcher (one that stopped
  /// draining): it is told Unknown instead.
  const MAX_PENDING: usize = 10_000;

  /// The process's inotify instance: each watch's owners, and what each
  /// watcher has not drained yet.
  pub struct Hub {
    inotify: Inotify,
    /// A dir watched by several indexes has one descriptor: (watcher, dir as
    /// that watcher named it, is it the sessions dir).
    owners: HashMap<WatchDescriptor, Vec<(u64, PathBuf, bool)>>,
    pending: HashMap<u64, Pending>,
    buffer: Vec<u8>,
  }

  #[derive(Default)]
  struct Pending {
    changed: Vec<PathBuf>,
    unknown: bool,
  }

  /// Contents, metadata, and the dir's own entries; the watched dir itself
  /// going away is reported as IN_DELETE_SELF / IN_MOVE_SELF / IN_IGNORED.
  fn mask() -> WatchMask {
    WatchMask::MODIFY
      | WatchMask::ATTRIB
      | WatchMask::CLOSE_WRITE
      | WatchMask::CREATE
      | WatchMask::DELETE
      | WatchMask::MOVED_FROM
      | WatchMask::MOVED_TO
      | WatchMask::DELETE_SELF
      | WatchMask::MOVE_SELF
      | WatchMask::ONLYDIR
  }

  fn is_local(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else { return false };
    // SAFETY: statfs is plain old data; all-zero is a valid value.
    let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and an out-parameter of the right type.
    let ok = unsafe { libc::statfs(path.as_ptr(), &mut stat) } == 0;
    ok && local_fs(stat.f_type as i64)
  }

  impl Hub {
    pub fn new() -> Option<Arc<Mutex<Hub>>> {
      let inotify = Inotify::init().ok()?;
      let hub = Hub { inotify, owners: HashMap::new(), pending: HashMap::new(), buffer: vec![0; 64 * 1024] };
      Some(Arc::new(Mutex::new(hub)))
    }

    pub fn shared() -> Option<Arc<Mutex<Hub>>> {
      static HUB: OnceLock<Option<Arc<Mutex<Hub>>>> = OnceLock::new();
      HUB.get_or_init(Hub::new).clone()
    }

    pub fn watch(&mut self, id: u64, dir: &Path, root: bool) -> bool {
      if !is_local(dir) {
        return false;
      }
      match self.inotify.watches().add(dir, mask()) {
        Ok(wd) => {
          self.owners.entry(wd).or_default().push((id, dir.to_path_buf(), root));
          self.pending.entry(id).or_default();
          true
        }
        Err(_) => false,
      }
    }

    /// Drops `id`'s watches (a descriptor no one else owns is removed) and
    /// whatever it had not drained.
    pub fn release(&mut self, id: u64) {
      let mut unused = Vec::new();
      for (wd, owners) in self.owners.iter_mut() {
        owners.retain(|(owner, _, _)| *owner != id);
        if owners.is_empty() {
          unused.push(wd.clone());
        }
      }
      for wd in unused {
        self.owners.remove(&wd);
        let _ = self.inotify.watches().remove(wd);
      }
      self.pending.remove(&id);
    }

    /// Reads the queue dry, files every event with its watchers, and hands
    /// `id` what it has not drained yet.
    pub fn drain(&mut self, id: u64) -> Drained {
      loop {
        let events = match self.inotify.read_events(&mut self.buffer) {
          Ok(events) => events,
          Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
          Err(_) => {
            self.pending.values_mut().for_each(|p| p.unknown = true);
            break;
          }
        };
        for event in events {
          if event.mask.contains(EventMask::Q_OVERFLOW) {
            self.pending.values_mut().for_each(|p| p.unknown = true);
            continue;
          }
          // Events of a removed watch (IN_IGNORED after release) have no owner left.
          for (owner, dir, root) in self.owners.get(&event.wd).into_iter().flatten() {
            let pending = self.pending.entry(*owner).or_default();
            match classify(dir, *root, event.mask, event.name) {
              Change::None => {}
              Change::File(path) if pending.changed.last() == Some(&path) => {}
              Change::File(path) if pending.changed.len() < MAX_PENDING => pending.changed.push(path),
              Change::File(_) | Change::Unknown => pending.unknown = true,
            }
          }
        }
      }
      let at_ns = now_ns();
      let Some(pending) = self.pending.get_mut(&id) else { return Drained::Unknown };
      let Pending { mut changed, unknown } = std::mem::take(pending);
      if unknown {
        return Drained::Unknown;
      }
      changed.sort();
      changed.dedup();
      Drained::Files { changed, at_ns }
    }
  }

  enum Change {
    None,
    File(PathBuf),
    Unknown,
  }

  fn classify(dir: &Path, root: bool, mask: EventMask, name: Option<&OsStr>) -> Change {
    let gone = EventMask::DELETE_SELF | EventMask::MOVE_SELF | EventMask::IGNORED | EventMask::UNMOUNT;
    if mask.intersects(gone) {
      return Change::Unknown;
    }
    let entries = EventMask::CREATE | EventMask::DELETE | EventMask::MOVED_FROM | EventMask::MOVED_TO;
    // The sessions dir lists project dirs (or links to them): any entry change re-lists.
    if root {
      return if mask.intersects(entries) { Change::Unknown } else { Change::None };
    }
    let Some(name) = name.filter(|n| Path::new(n).extension() == Some(OsStr::new("jsonl"))) else {
      return Change::None;
    };
    if mask.contains(EventMask::ISDIR) {
      Change::None
    } else if mask.intersects(entries) {
      Change::Unknown
    } else {
      Change::File(dir.join(name))
    }
  }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
  use super::*;
  use std::fs;
  use std::io::Write;

  fn armed(dir: &Path) -> (Watcher, Roots) {
    armed_on(dir, Watcher::default())
  }

  fn armed_on(dir: &Path, watcher: Watcher) -> (Watcher, Roots) {
    let roots = Roots { sessions_dir: dir.to_path_buf(), session_dir: None };
    let mut arming = watcher.arm(&roots);
    arming.watch(dir, true);
    arming.watch(&dir.join("p"), false);
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

  #[test]
  fn new_removed_and_renamed_files_and_project_dirs_need_a_full_pass() {
    let (dir, file) = project();
    let cases: [&dyn Fn(); 4] = [
      &|| fs::write(dir.path().join("p").join("b.jsonl"), "{}\n").unwrap(),
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
}

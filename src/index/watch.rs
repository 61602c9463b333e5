//! Change notification for the session dirs, so a warm call need not stat
//! every session file to see that nothing changed.
//!
//! On Linux an inotify instance watches the sessions dir, each project dir
//! and Pi's custom session dir. The kernel queues an event inside the write
//! (or truncate, chmod, utimes, rename) system call itself, so once a write
//! has returned, a non-blocking read of the queue at the start of a call
//! sees it: a call that drains an empty queue knows no watched file changed
//! since the previous drain. [`Watcher::drain`] reads the queue without
//! blocking and says which files changed ([`Drained::Files`]: written,
//! or new: a session file created or renamed into a session dir) or that
//! nothing can be vouched for ([`Drained::Unknown`]): not armed, a queue
//! overflow, a watched dir removed, moved or unmounted, a session file
//! removed or renamed away, a project dir come or gone. Then the caller
//! lists and stats everything again and re-arms ([`Watcher::arm`]) before
//! it lists. A new file is stat'ed and added to the listing (after its own
//! inode watch, when the listing's files have theirs), not a listing of
//! every session.
//!
//! Where no such guarantee exists the watcher never vouches and every call
//! stats every file as before: other systems, `watchSessions: false`, a
//! filesystem whose changes may come from elsewhere (network, FUSE: only the
//! local filesystems in [`is_local_fs`](crate::fsread::is_local_fs) are trusted), a dir that could not be
//! watched (e.g. the per-user watch limit), and single files that a dir
//! watch cannot see (symlinks, files with more than one hard link), which
//! [`Source::quiet_since`](super::Source) marks as never quiet. A link made
//! later is reported only to the file's own inode (link(2) has no event for
//! the dir of the file's first name), so each listed file also gets an
//! inode watch ([`Watched::File`], IN_ATTRIB) before it is stat'ed, while
//! the listing is within [`file_watch_budget`]. Watches are a per-user
//! resource (`fs.inotify.max_user_watches`, 8,192 before Linux 5.11): one
//! per file at 100,000 sessions left another Pi process, or a build, unable
//! to arm its own dir watches. Above the budget, or where a file's watch
//! cannot be added, a single-link file is vouched for by its dir's watch
//! alone: a hard link made to it later is then seen at the next full
//! listing, not at once (Pi never links its session files).
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
  /// Test hook: a file watch budget other than the machine's.
  #[cfg(test)]
  pub(crate) file_budget: std::sync::atomic::AtomicUsize,
}

/// How many session files may each get an inode watch: a sixteenth of the
/// user's inotify watches (`fs.inotify.max_user_watches`; 8,192, the old
/// kernels' default, when it cannot be read), so the files of one index
/// never take the watches other processes of the same user need.
pub fn file_watch_budget() -> usize {
  static BUDGET: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
  *BUDGET.get_or_init(|| {
    let max = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches").ok();
    max.and_then(|m| m.trim().parse::<usize>().ok()).unwrap_or(8_192) / 16
  })
}

impl Default for Watcher {
  fn default() -> Self {
    #[cfg(target_os = "linux")]
    return Watcher::on(linux::Hub::shared());
    #[cfg(not(target_os = "linux"))]
    Watcher {
      #[cfg(test)]
      overflow_next: Default::default(),
      #[cfg(test)]
      file_budget: usize::MAX.into(),
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
      #[cfg(test)]
      file_budget: usize::MAX.into(),
    }
  }

  /// Tests: a watcher on its own inotify instance, whose queue no other
  /// test's writes can overflow (the shared one then tells every watcher
  /// Unknown, which is right but makes reuse untestable).
  #[cfg(all(test, target_os = "linux"))]
  pub(crate) fn private() -> Watcher {
    Watcher::on(linux::Hub::new())
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
        self.release(true);
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
    #[cfg(target_os = "linux")]
    {
      *self.armed.lock() = None;
      self.release(true);
    }
    Arming {
      watcher: self,
      roots: roots.clone(),
      ok: cfg!(target_os = "linux"),
      #[cfg(target_os = "linux")]
      files: Default::default(),
    }
  }

  /// Watches the inode of `file`, a session file that appeared in a
  /// watched dir since the listing (as [`Arming::watch_files`] does for each
  /// listed one; call before its stat). One that cannot be watched is
  /// vouched for by its dir's watch alone, as above the file watch budget.
  pub fn watch_new_file(&self, file: &Path) {
    #[cfg(target_os = "linux")]
    if let Some(hub) = &self.hub {
      hub.lock().watch_file(self.id, file);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
  }

  pub fn disarm(&self) {
    #[cfg(target_os = "linux")]
    {
      *self.armed.lock() = None;
      self.release(false);
    }
  }

  #[cfg(target_os = "linux")]
  fn release(&self, keep_files: bool) {
    if let Some(hub) = &self.hub {
      hub.lock().release(self.id, keep_files);
    }
  }
}

impl Drop for Watcher {
  fn drop(&mut self) {
    self.disarm();
  }
}

/// What a dir is watched for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watched {
  /// The sessions dir: its entries are project dirs, any change re-lists.
  Root,
  /// A dir of session files: their contents; a file that comes or goes re-lists.
  Sessions,
  /// Only which names exist (the index dir): every name whose entry came,
  /// went or was renamed over is reported as changed, contents are not.
  Entries,
  /// One session file's inode, for what its dir's watch cannot see: a hard
  /// link made to it elsewhere (the file is then stat'ed on every call).
  File,
}

/// The dirs a listing reads: the sessions dir and Pi's custom session dir
/// (for an [`Watched::Entries`] watcher, the one dir it watches).
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
  /// The file watches this listing holds (the rest are pruned at finish).
  #[cfg(target_os = "linux")]
  files: parking_lot::Mutex<std::collections::HashSet<inotify::WatchDescriptor>>,
}

impl Arming<'_> {
  /// Watches `dir` for `kind` of change (call before listing it).
  pub fn watch(&mut self, dir: &Path, kind: Watched) {
    #[cfg(target_os = "linux")]
    {
      let watcher = self.watcher;
      self.ok = self.ok && watcher.hub.as_ref().is_some_and(|hub| hub.lock().watch(watcher.id, dir, kind));
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (dir, kind);
  }

  /// Do `files` session files each get an inode watch ([`file_watch_budget`])?
  pub fn watches_files(&self, files: usize) -> bool {
    #[cfg(test)]
    {
      let budget = self.watcher.file_budget.load(std::sync::atomic::Ordering::Relaxed);
      if budget != usize::MAX {
        return files <= budget;
      }
    }
    files <= file_watch_budget()
  }

  /// Watches each of `files`' own inodes (call before their stats, so a
  /// link made after a stat is reported), under one lock of the shared
  /// queue: a lock per file had the two listing threads wait on each other
  /// (a fresh process's listing of 5,000 files: 40.7 → 36.8 ms; 18 without
  /// file watches, whose system calls the lock still orders). How many got
  /// one; a file that cannot be watched (the per-user watch limit, say) is
  /// vouched for by its dir's watch alone.
  pub fn watch_files(&self, files: &[&Path]) -> usize {
    #[cfg(target_os = "linux")]
    {
      let watcher = self.watcher;
      let Some(hub) = watcher.hub.as_ref() else { return 0 };
      let watched: Vec<inotify::WatchDescriptor> = {
        let mut hub = hub.lock();
        files.iter().filter_map(|file| hub.watch_file(watcher.id, file)).collect()
      };
      let count = watched.len();
      self.files.lock().extend(watched);
      count
    }
    #[cfg(not(target_os = "linux"))]
    {
      let _ = files;
      0
    }
  }

  /// Whether some listed file got its own inode watch.
  pub fn watched_files(&self) -> bool {
    #[cfg(target_os = "linux")]
    return !self.files.lock().is_empty();
    #[cfg(not(target_os = "linux"))]
    false
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
      if let Some(hub) = &self.watcher.hub {
        hub.lock().prune_files(self.watcher.id, &self.files.lock());
      }
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

#[cfg(target_os = "linux")]
mod linux;
#[cfg(all(test, target_os = "linux"))]
pub(crate) use linux::LOST as LOST_EVENTS;

#[cfg(all(test, target_os = "linux"))]
mod tests;

//! A cross-process lock compatible with `proper-lockfile`, the lock the
//! TypeScript original takes, so both can share one `memories/` directory.
//!
//! The protocol: the lock is the directory `<realpath of file>.lock`, created
//! with an atomic `mkdir`. Its holder refreshes the directory's mtime every
//! `update` (15 s) while it holds it; a lock whose mtime is older than `stale`
//! (30 s) is abandoned and may be removed and taken over. A holder that finds
//! its mtime changed has been taken over ("compromised") and must not write.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime};

#[derive(Debug, Clone, Copy)]
pub struct LockOptions {
  /// A lock older than this is abandoned (proper-lockfile's `stale`).
  pub stale: Duration,
  /// How long to keep retrying a held lock before giving up.
  pub timeout: Duration,
}

impl Default for LockOptions {
  fn default() -> Self {
    LockOptions { stale: Duration::from_secs(30), timeout: Duration::from_secs(10) }
  }
}

impl LockOptions {
  /// proper-lockfile refreshes at `stale / 2`, never more often than 1 s.
  fn update(&self) -> Duration {
    (self.stale / 2).max(Duration::from_secs(1))
  }
}

#[derive(Debug)]
pub enum LockError {
  /// Another writer held the lock for the whole timeout.
  Locked(PathBuf),
  Io(PathBuf, io::Error),
}

/// The lock directory for `file` (which should already be a canonical path).
pub fn lock_path(file: &Path) -> PathBuf {
  let mut name = file.as_os_str().to_owned();
  name.push(".lock");
  PathBuf::from(name)
}

/// A held lock; released (the directory removed) on drop unless it was
/// taken over by someone else meanwhile.
pub struct FileLock {
  path: PathBuf,
  mtime: Arc<Mutex<SystemTime>>,
  stop: Option<Sender<()>>,
  refresher: Option<JoinHandle<()>>,
}

enum Attempt {
  Acquired,
  Busy,
}

/// Sets the lock directory's mtime to now and returns what the filesystem
/// recorded (its precision may be coarser than the clock's).
fn touch(path: &Path) -> io::Result<SystemTime> {
  File::open(path)?.set_modified(SystemTime::now())?;
  fs::metadata(path)?.modified()
}

fn attempt(path: &Path, stale: Duration) -> io::Result<Attempt> {
  // A stale or vanished lock is retried at once, as proper-lockfile does; the
  // bound keeps two processes that keep clearing each other's locks finite.
  for _ in 0..3 {
    match fs::create_dir(path) {
      Ok(()) => return Ok(Attempt::Acquired),
      Err(error) if error.kind() != io::ErrorKind::AlreadyExists => return Err(error),
      Err(_) => {}
    }
    let modified = match fs::metadata(path).and_then(|m| m.modified()) {
      Ok(modified) => modified,
      Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
      Err(error) => return Err(error),
    };
    let age = SystemTime::now().duration_since(modified).unwrap_or_default();
    if age <= stale {
      return Ok(Attempt::Busy);
    }
    match fs::remove_dir(path) {
      Ok(()) => {}
      Err(error) if error.kind() == io::ErrorKind::NotFound => {}
      Err(error) => return Err(error),
    }
  }
  Ok(Attempt::Busy)
}

/// A little jitter so waiting processes do not retry in lockstep.
fn jitter(max: Duration) -> Duration {
  let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
  let seed = nanos ^ std::process::id().wrapping_mul(2_654_435_761);
  max.mul_f64((seed % 1000) as f64 / 1000.0)
}

/// Takes the lock on `file`, retrying with capped exponential back-off until
/// `options.timeout` has passed.
pub fn acquire(file: &Path, options: &LockOptions) -> Result<FileLock, LockError> {
  let path = lock_path(file);
  let deadline = Instant::now() + options.timeout;
  let mut delay = Duration::from_millis(5);
  loop {
    match attempt(&path, options.stale) {
      Ok(Attempt::Acquired) => return FileLock::start(path, options.update()),
      Ok(Attempt::Busy) => {}
      Err(error) => return Err(LockError::Io(path, error)),
    }
    let now = Instant::now();
    if now >= deadline {
      return Err(LockError::Locked(path));
    }
    thread::sleep((delay + jitter(delay / 2)).min(deadline - now));
    delay = (delay * 3 / 2).min(Duration::from_millis(100));
  }
}

impl FileLock {
  fn start(path: PathBuf, update: Duration) -> Result<FileLock, LockError> {
    let mtime = match touch(&path) {
      Ok(mtime) => Arc::new(Mutex::new(mtime)),
      Err(error) => {
        let _ = fs::remove_dir(&path);
        return Err(LockError::Io(path, error));
      }
    };
    let (stop, stopped) = mpsc::channel::<()>();
    let (refresh_path, refresh_mtime) = (path.clone(), mtime.clone());
    let refresher = thread::spawn(move || loop {
      match stopped.recv_timeout(update) {
        Err(RecvTimeoutError::Timeout) => {
          let mut recorded = refresh_mtime.lock().unwrap_or_else(|e| e.into_inner());
          // Refresh only a lock that is still ours; a taken-over lock stays theirs.
          if fs::metadata(&refresh_path).and_then(|m| m.modified()).ok() != Some(*recorded) {
            return;
          }
          if let Ok(now) = touch(&refresh_path) {
            *recorded = now;
          }
        }
        _ => return,
      }
    });
    Ok(FileLock { path, mtime, stop: Some(stop), refresher: Some(refresher) })
  }

  /// True while the lock directory still carries our last mtime.
  pub fn still_held(&self) -> bool {
    let recorded = self.mtime.lock().unwrap_or_else(|e| e.into_inner());
    fs::metadata(&self.path).and_then(|m| m.modified()).ok() == Some(*recorded)
  }

  pub fn path(&self) -> &Path {
    &self.path
  }
}

impl Drop for FileLock {
  fn drop(&mut self) {
    drop(self.stop.take());
    if let Some(refresher) = self.refresher.take() {
      let _ = refresher.join();
    }
    if self.still_held() {
      let _ = fs::remove_dir(&self.path);
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn quick(timeout_ms: u64) -> LockOptions {
    LockOptions { stale: Duration::from_secs(30), timeout: Duration::from_millis(timeout_ms) }
  }

  #[test]
  fn a_held_lock_times_out_and_is_released_on_drop() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("MEMORY.md");
    let held = acquire(&file, &quick(0)).unwrap();
    assert!(dir.path().join("MEMORY.md.lock").is_dir());
    assert!(matches!(acquire(&file, &quick(50)), Err(LockError::Locked(_))));
    drop(held);
    assert!(!dir.path().join("MEMORY.md.lock").exists());
    assert!(acquire(&file, &quick(0)).is_ok());
  }

  #[test]
  fn a_waiter_gets_the_lock_once_it_is_released() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("MEMORY.md");
    let held = acquire(&file, &quick(0)).unwrap();
    let waiter = {
      let file = file.clone();
      thread::spawn(move || acquire(&file, &quick(5_000)).map(|_| ()).is_ok())
    };
    thread::sleep(Duration::from_millis(100));
    drop(held);
    assert!(waiter.join().unwrap());
  }

  #[test]
  fn a_stale_lock_is_taken_over_and_its_old_holder_sees_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("MEMORY.md");
    let old = acquire(&file, &quick(0)).unwrap();
    let past = SystemTime::now() - Duration::from_secs(60);
    File::open(old.path()).unwrap().set_modified(past).unwrap();
    let new = acquire(&file, &quick(0)).expect("stale lock taken over");
    assert!(new.still_held());
    assert!(!old.still_held(), "the old holder must notice the takeover");
    drop(old);
    assert!(new.path().is_dir(), "a compromised holder leaves the new lock alone");
  }

  #[test]
  fn the_refresher_keeps_a_long_hold_fresh() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("MEMORY.md");
    let options = LockOptions { stale: Duration::from_secs(2), timeout: Duration::ZERO };
    let held = acquire(&file, &options).unwrap();
    let first = fs::metadata(held.path()).unwrap().modified().unwrap();
    thread::sleep(Duration::from_millis(1_900));
    let later = fs::metadata(held.path()).unwrap().modified().unwrap();
    assert!(later > first, "mtime refreshed after stale/2");
    assert!(held.still_held());
  }
}

//! The inotify side of the watcher: one instance per process, its watches
//! shared by every index, events filed per watcher until it drains them.

use super::{Drained, Watched};
use crate::session::source::now_ns;
use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
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
  /// A dir (or file) watched by several indexes has one descriptor:
  /// (watcher, the path as that watcher named it, what it watches it for).
  owners: HashMap<WatchDescriptor, Vec<(u64, PathBuf, Watched)>>,
  pending: HashMap<u64, Pending>,
  buffer: Vec<u8>,
}

#[derive(Default)]
struct Pending {
  changed: Vec<PathBuf>,
  unknown: bool,
}

/// The dir's own entries, and for session dirs also contents and metadata;
/// the watched dir itself going away is reported as IN_DELETE_SELF /
/// IN_MOVE_SELF / IN_IGNORED. An entries watch leaves out content events:
/// a cold build writes a record per session without draining, and fewer
/// events keep the queue from overflowing. MASK_ADD: a dir watched for both
/// keeps the union.
fn mask(kind: Watched) -> WatchMask {
  let entries = WatchMask::CREATE
    | WatchMask::DELETE
    | WatchMask::MOVED_FROM
    | WatchMask::MOVED_TO
    | WatchMask::DELETE_SELF
    | WatchMask::MOVE_SELF
    | WatchMask::ONLYDIR
    | WatchMask::MASK_ADD;
  match kind {
    Watched::Entries => entries,
    Watched::Sessions | Watched::Root => entries | WatchMask::MODIFY | WatchMask::ATTRIB | WatchMask::CLOSE_WRITE,
    // link(2) reports IN_ATTRIB on the inode only (its new name is in a dir
    // no one watches), so the file's own watch is what sees a second link.
    Watched::File => WatchMask::ATTRIB | WatchMask::DONT_FOLLOW | WatchMask::MASK_ADD,
  }
}

fn is_local(dir: &Path) -> bool {
  use std::os::unix::ffi::OsStrExt;
  let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else { return false };
  // SAFETY: statfs is plain old data; all-zero is a valid value.
  let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
  // SAFETY: a NUL-terminated path and an out-parameter of the right type.
  let ok = unsafe { libc::statfs(path.as_ptr(), &mut stat) } == 0;
  ok && crate::fsread::is_local_fs(stat.f_type as i64)
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

  pub fn watch(&mut self, id: u64, dir: &Path, kind: Watched) -> bool {
    is_local(dir) && self.add(id, dir, kind).is_some()
  }

  /// Watches one file's inode (its dir is watched, so it is local). A file
  /// watched again keeps its descriptor: the kernel hands back the same one
  /// while the inode is the same.
  pub fn watch_file(&mut self, id: u64, file: &Path) -> Option<WatchDescriptor> {
    self.add(id, file, Watched::File)
  }

  fn add(&mut self, id: u64, path: &Path, kind: Watched) -> Option<WatchDescriptor> {
    let wd = self.inotify.watches().add(path, mask(kind)).ok()?;
    let owners = self.owners.entry(wd.clone()).or_default();
    if !owners.iter().any(|(owner, p, k)| *owner == id && *k == kind && p == path) {
      owners.push((id, path.to_path_buf(), kind));
    }
    self.pending.entry(id).or_default();
    Some(wd)
  }

  /// Drops `id`'s watches (a descriptor no one else owns is removed) and
  /// whatever it had not drained. `keep_files`: its file watches stay, so a
  /// re-arming need not remove and add one per session file again.
  pub fn release(&mut self, id: u64, keep_files: bool) {
    self.drop_owned(id, |kind, _| !(keep_files && kind == Watched::File));
    self.pending.remove(&id);
  }

  /// Drops `id`'s file watches other than `kept` (files gone or replaced
  /// since the previous listing).
  pub fn prune_files(&mut self, id: u64, kept: &HashSet<WatchDescriptor>) {
    self.drop_owned(id, |kind, wd| kind == Watched::File && !kept.contains(wd));
  }

  fn drop_owned(&mut self, id: u64, drop: impl Fn(Watched, &WatchDescriptor) -> bool) {
    let mut unused = Vec::new();
    for (wd, owners) in self.owners.iter_mut() {
      owners.retain(|(owner, _, kind)| *owner != id || !drop(*kind, wd));
      if owners.is_empty() {
        unused.push(wd.clone());
      }
    }
    for wd in unused {
      self.owners.remove(&wd);
      let _ = self.inotify.watches().remove(wd);
    }
  }

  /// Reads the queue dry, files every event with its watchers, and hands
  /// `id` what it has not drained yet.
  pub fn drain(&mut self, id: u64) -> Drained {
    loop {
      let events = match self.inotify.read_events(&mut self.buffer) {
        Ok(events) => events,
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
        Err(_) => {
          lost_events();
          self.pending.values_mut().for_each(|p| p.unknown = true);
          break;
        }
      };
      for event in events {
        if event.mask.contains(EventMask::Q_OVERFLOW) {
          lost_events();
          self.pending.values_mut().for_each(|p| p.unknown = true);
          continue;
        }
        // Events of a removed watch (IN_IGNORED after release) have no owner left.
        for (owner, dir, kind) in self.owners.get(&event.wd).into_iter().flatten() {
          let pending = self.pending.entry(*owner).or_default();
          match classify(dir, *kind, event.mask, event.name) {
            Change::None => {}
            Change::File(path) if pending.changed.last() == Some(&path) => {}
            Change::File(path) if pending.changed.len() < MAX_PENDING => pending.changed.push(path),
            Change::File(_) | Change::Unknown => pending.unknown = true,
          }
        }
        if event.mask.contains(EventMask::IGNORED) {
          // The kernel dropped the watch (its inode is gone): so do its owners.
          self.owners.remove(&event.wd);
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

fn classify(dir: &Path, kind: Watched, mask: EventMask, name: Option<&OsStr>) -> Change {
  if mask.contains(EventMask::UNMOUNT) {
    return Change::Unknown;
  }
  let gone = EventMask::DELETE_SELF | EventMask::MOVE_SELF | EventMask::IGNORED;
  let entries = EventMask::CREATE | EventMask::DELETE | EventMask::MOVED_FROM | EventMask::MOVED_TO;
  match kind {
    // A new link, a chmod or the inode's end: stat the file again (a file
    // gone makes that stat ask for a full listing).
    Watched::File => return Change::File(dir.to_path_buf()),
    _ if mask.intersects(gone) => return Change::Unknown,
    // The sessions dir lists project dirs (or links to them): any entry change re-lists.
    Watched::Root => return if mask.intersects(entries) { Change::Unknown } else { Change::None },
    // Every name whose entry came, went or was renamed over.
    Watched::Entries => {
      return match name {
        Some(name) if mask.intersects(entries) => Change::File(dir.join(name)),
        _ => Change::None,
      }
    }
    Watched::Sessions => {}
  }
  let Some(name) = name.filter(|n| Path::new(n).extension() == Some(OsStr::new("jsonl"))) else {
    return Change::None;
  };
  if mask.contains(EventMask::ISDIR) {
    Change::None
  } else if mask.intersects(EventMask::DELETE | EventMask::MOVED_FROM) {
    // A name gone: only a listing says what remains.
    Change::Unknown
  } else {
    // Written, or a new name (created, or renamed into the dir, perhaps
    // over a listed one): stat'ed again, and listed when it is a file.
    Change::File(dir.join(name))
  }
}

/// How often the shared queue lost events (an overflow, a failed read), in
/// tests: every watcher of the process is then told Unknown and lists again,
/// which tests that expect a reused listing must allow for.
#[cfg(test)]
pub static LOST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn lost_events() {
  #[cfg(test)]
  LOST.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

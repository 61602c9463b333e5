//! The session files of an index: every `sessions/*/*.jsonl` and the flat
//! custom dir's `*.jsonl`, each with its stat stamp and how long the dir
//! watch has vouched for it, newest first.

use super::dictionary::placement::Placement;
use super::dir::listing::DirCache;
use super::record::CacheRecord;
use super::{watch, Address, PathMap};
use crate::error::ContractError;
use crate::forgotten;
use crate::index::Context;
use crate::session::discover::{try_read_header, Discovery};
use crate::session::parse::Header;
use crate::session::source::StatStamp;
use parking_lot::Mutex;
use rayon::prelude::*;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A session file with its stat stamp.
#[derive(Debug, Clone)]
pub struct Source {
  /// Interned ([`interned`]): a listing is copied whole when one file
  /// changes (100,000 paths at scale), and copying an interned path touches
  /// nothing behind it, where a string copy or a shared count cost a cache
  /// miss per file (most of an append's cost at 100,000 sessions).
  pub path: &'static Path,
  pub stamp: StatStamp,
  /// From when on the dir watch vouches that the file did not change (the
  /// arming, or the drain that last reported it); [`watch::NEVER_QUIET`]
  /// when no watch covers it.
  pub quiet_since: i128,
}

impl Source {
  pub(super) fn of(path: &Path, metadata: &fs::Metadata) -> Source {
    Source::stamped(path, StatStamp::of(metadata))
  }

  fn stamped(path: &Path, stamp: StatStamp) -> Source {
    Source { stamp, path: interned(path), quiet_since: watch::NEVER_QUIET }
  }

  /// Do `a` and `b` name the same file? Listings share their paths, so
  /// mostly by address; else by bytes (`Path`'s own equality walks
  /// components, and this is asked of every file, 100,000 per append).
  pub(super) fn same_path(a: &Source, b: &Source) -> bool {
    same_file(a.path, b.path)
  }

  /// Does the watch vouch that the file is as it was at `verified_ns`?
  pub(super) fn quiet_since(&self, verified_ns: i128) -> bool {
    self.quiet_since <= verified_ns
  }
}

use super::interned::known_path as known;
/// A path stored once for the process's life ([`super::interned::path`]).
pub use super::interned::path as interned;

/// Do `a` and `b` name the same file? Mostly by address (listed paths are
/// interned, see [`Source::same_path`]), else by bytes.
pub(super) fn same_file(a: &Path, b: &Path) -> bool {
  std::ptr::eq(a, b) || a.as_os_str() == b.as_os_str()
}

use super::listed_stat::{self, DirHandles};

fn newest_first(sources: &mut [Source]) {
  sources.sort_by(newer);
}

fn newer(a: &Source, b: &Source) -> std::cmp::Ordering {
  b.stamp.mtime_ns.cmp(&a.stamp.mtime_ns).then_with(|| a.path.cmp(b.path))
}

/// Every `sessions/*/*.jsonl`, plus the `*.jsonl` of Pi's flat custom
/// session dir, with its stamp, newest first (then by path): the order tiers
/// are assigned in. Listings come from `dirs` while the directories are
/// unchanged; every file is stat'ed (appends change no directory). `arming`
/// watches each dir before it is listed, so no change after the listing
/// goes unseen.
pub fn list_sources(dirs: &DirCache, roots: &watch::Roots, mut arming: Option<&mut watch::Arming<'_>>) -> Vec<Source> {
  let mut arm = |dir: &Path, watched: watch::Watched| {
    if let Some(arming) = arming.as_deref_mut() {
      arming.watch(dir, watched);
    }
  };
  let sessions_dir = &roots.sessions_dir;
  // A missing sessions dir cannot be watched: arming fails, and every call lists again.
  arm(sessions_dir, watch::Watched::Root);
  let mut session_dirs: Vec<PathBuf> =
    dirs.names(sessions_dir).iter().map(|n| sessions_dir.join(n)).filter(|p| p.is_dir()).collect();
  session_dirs.extend(roots.session_dir.clone());
  // Every dir's watch before any listing, then the dirs listed in parallel:
  // at 100,000 sessions a project dir's readdir is tens of ms of one core.
  for dir in &session_dirs {
    arm(dir, watch::Watched::Sessions);
  }
  // Interned as they are listed, a dir at a time: a joined path per file,
  // then its interned copy, was two allocations and two hash lookups per
  // file (100,000 at scale).
  let mut files: Vec<&'static Path> = session_dirs
    .par_iter()
    .flat_map_iter(|dir| {
      let names = dirs.names(dir);
      let jsonl: Vec<&str> = names.iter().filter(|n| n.ends_with(".jsonl")).collect();
      super::interned::paths_in(dir, jsonl.into_iter())
    })
    .collect();
  if roots.session_dir.is_some() {
    // The custom dir may be one of the default layout's.
    files.sort();
    files.dedup();
  }
  let arming = arming.as_deref();
  let file_watches = arming.filter(|arming| arming.watches_files(files.len()));
  let handles = DirHandles::open(session_dirs.iter().map(PathBuf::as_path));
  let mut sources: Vec<Source> = files
    .par_chunks(64)
    .flat_map_iter(|chunk| {
      // The files' own watches come first: a link made after a stat is then queued.
      if let Some(arming) = file_watches {
        arming.watch_files(chunk);
      }
      chunk.iter().filter_map(|&path| {
        let (stamp, watchable) = handles.stat(path)?;
        let mut source = Source { path, stamp, quiet_since: watch::NEVER_QUIET };
        // Vouched for once arming finishes (see `Index::sources`).
        source.quiet_since = if watchable && arming.is_some() { i128::MIN } else { watch::NEVER_QUIET };
        Some(source)
      })
    })
    .collect();
  newest_first(&mut sources);
  sources
}

/// (dev, inode): which file a cached header was read from.
type FileId = (u64, u64);

/// A probed header with the file it was read from and the stat it was
/// proven against.
type ProbedHeader = (FileId, StatStamp, Option<Header>);

/// The session files as this process knows them: the dirs' listings, the
/// watch that keeps the last listing current, and the header cache.
#[derive(Default)]
pub(crate) struct Listing {
  dirs: DirCache,
  watcher: watch::Watcher,
  listed: Mutex<Option<Listed>>,
  /// Held while the listing is brought up to date: a lookup by id does so
  /// beside a synchronization, and the changes the watch reports are taken
  /// once, so a second caller must wait for the listing that holds them.
  refreshing: Mutex<()>,
  /// Headers by path, with the (dev, inode) and size they were read at (see `probe`).
  headers: Mutex<PathMap<ProbedHeader>>,
  /// The last listing without the forgotten files.
  unforgotten: Mutex<Option<Unforgotten>>,
  /// Which shard each cold session lies in, from the count of each dir's
  /// files in the last listing that added or removed some.
  placement: Mutex<Arc<Placement>>,
  /// Tests: how many full listings were made.
  #[cfg(test)]
  full_listings: std::sync::atomic::AtomicUsize,
}

/// The last full listing of `roots`, updated from the watcher's changes.
struct Listed {
  roots: watch::Roots,
  sources: Arc<Vec<Source>>,
  /// Some source has no watch covering it: each drain stats it again.
  unwatched: bool,
  /// The full listing gave each file its own inode watch (see `watch`):
  /// a file that appears later gets one too.
  file_watches: bool,
  /// The listing this one was restated from, and the positions restated
  /// (the order held): every other entry is that listing's, as it was.
  restated_from: Option<(std::sync::Weak<Vec<Source>>, Vec<usize>)>,
}

impl Listed {
  fn new(roots: watch::Roots, sources: Arc<Vec<Source>>, file_watches: bool) -> Listed {
    let unwatched = sources.iter().any(|s| s.quiet_since == watch::NEVER_QUIET);
    Listed { roots, sources, unwatched, file_watches, restated_from: None }
  }

  /// `sources`, restated from `parent` at `positions` with the order held:
  /// every unwatched source is among them (a restat stats each again).
  fn restated(
    roots: watch::Roots,
    sources: Arc<Vec<Source>>,
    parent: &Arc<Vec<Source>>,
    positions: Vec<usize>,
    file_watches: bool,
  ) -> Listed {
    let unwatched = positions.iter().any(|&at| sources[at].quiet_since == watch::NEVER_QUIET);
    Listed { roots, sources, unwatched, file_watches, restated_from: Some((Arc::downgrade(parent), positions)) }
  }
}

impl Listing {
  /// The listing of an index whose dir is `index_dir`: its session dirs'
  /// listings persist there (see [`Listing::save_dirs`]).
  pub(super) fn new(index_dir: &Path) -> Listing {
    let file = index_dir.join(super::dir::IndexFile::SESSION_DIRS);
    Listing { dirs: DirCache::persisted(file), ..Default::default() }
  }

  /// Persists the session dirs' listings when this process read some dir
  /// from disk: a fresh process then reads one file, not every dir. A dir
  /// holding a forgotten session is left out (no index file names one), so
  /// it is read from disk until the session is unforgotten. Call only after
  /// the index dir's ownership check.
  pub(super) fn save_dirs(&self, cx: &Context<'_>) {
    let Ok(list) = forgotten::load(&cx.discovery.agent_dir) else { return };
    let forgotten: rustc_hash::FxHashSet<&std::ffi::OsStr> =
      list.sessions.iter().filter(|f| f.entry_id.is_none()).filter_map(|f| Path::new(&f.file).file_name()).collect();
    self.dirs.save(|names| !names.iter().any(|name| forgotten.contains(std::ffi::OsStr::new(name))));
  }

  /// Removes the persisted listings (a session was forgotten: they may name it).
  pub(super) fn drop_persisted_dirs(&self) {
    self.dirs.drop_persisted();
  }

  /// Tests: how many session dirs were read from disk.
  #[cfg(test)]
  pub(super) fn dir_reads(&self) -> usize {
    self.dirs.disk_reads()
  }

  /// Tests: the session dirs' listings as a fresh process knows them.
  #[cfg(test)]
  pub(super) fn forget_dirs(&self) {
    self.dirs.forget();
  }

  /// The session files now: from the watcher's changes when it vouches for
  /// the last listing (only changed and unwatchable files are stat'ed), else
  /// a full listing that re-arms it.
  pub(super) fn sources(&self, cx: &Context<'_>) -> Arc<Vec<Source>> {
    let _refreshing = self.refreshing.lock();
    let roots =
      watch::Roots { sessions_dir: cx.discovery.sessions_dir(), session_dir: cx.discovery.session_dir.clone() };
    let watching = cx.config.watch_sessions;
    if watching {
      let listed = self.listed.lock().as_ref().filter(|l| l.roots == roots).map(|l| {
        let Listed { sources, unwatched, file_watches, .. } = l;
        (sources.clone(), *unwatched, *file_watches)
      });
      if let Some((listed, unwatched, file_watches)) = listed {
        if let watch::Drained::Files { changed, at_ns } = self.watcher.drain(&roots) {
          if !unwatched && changed.is_empty() {
            return listed;
          }
          let watch_file = |file: &Path| {
            if file_watches {
              self.watcher.watch_new_file(file);
            }
          };
          if let Some(Restated { sources, in_place, added }) = restat(&listed, &changed, at_ns, &watch_file) {
            if !added.is_empty() {
              let placement = self.placement().with_added(added.into_iter());
              *self.placement.lock() = placement;
            }
            *self.listed.lock() = Some(match in_place {
              Some(positions) => Listed::restated(roots, sources.clone(), &listed, positions, file_watches),
              None => Listed::new(roots, sources.clone(), file_watches),
            });
            return sources;
          }
        }
      }
    }
    #[cfg(test)]
    self.full_listings.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut arming = watching.then(|| self.watcher.arm(&roots));
    let mut sources = list_sources(&self.dirs, &roots, arming.as_mut());
    let file_watches = arming.as_ref().is_some_and(watch::Arming::watched_files);
    let armed_ns = arming.and_then(watch::Arming::finish);
    for source in &mut sources {
      if source.quiet_since == i128::MIN {
        source.quiet_since = armed_ns.unwrap_or(watch::NEVER_QUIET);
      }
    }
    let sources = Arc::new(sources);
    self.place(&sources);
    *self.listed.lock() = armed_ns.map(|_| Listed::new(roots, sources.clone(), file_watches));
    if !watching {
      self.watcher.disarm();
    }
    sources
  }

  /// Which shard each cold session lies in, as the last listing that
  /// added or removed files says.
  pub(super) fn placement(&self) -> Arc<Placement> {
    self.placement.lock().clone()
  }

  /// Places the cold sessions by `sources`' count of each dir's files.
  fn place(&self, sources: &[Source]) {
    let previous = self.placement();
    *self.placement.lock() = Placement::of(sources.iter().map(|s| s.path), &previous);
  }

  /// Whether a watch vouches for every file of the last listing: the next
  /// one then stats only what it reports.
  pub(super) fn watched(&self) -> bool {
    self.listed.lock().as_ref().is_some_and(|listed| !listed.unwatched)
  }

  /// The positions at which `to` differs from `from`, when `to` is the
  /// current listing and was restated from `from` with the order held
  /// (an append): a caller comparing the two need not compare 100,000
  /// entries. `None`: compare them all.
  pub(super) fn delta(&self, from: &Arc<Vec<Source>>, to: &Arc<Vec<Source>>) -> Option<Vec<usize>> {
    let listed = self.listed.lock();
    let listed = listed.as_ref().filter(|l| Arc::ptr_eq(&l.sources, to))?;
    let (parent, positions) = listed.restated_from.as_ref()?;
    std::ptr::eq(parent.as_ptr(), Arc::as_ptr(from)).then(|| positions.clone())
  }

  /// [`Listing::sources`] without the forgotten files (`forgotten`), or the
  /// list's error: an unreadable list answers nothing.
  pub(super) fn remembered(&self, cx: &Context<'_>) -> Result<Arc<Vec<Source>>, ContractError> {
    let list = forgotten::load(&cx.discovery.agent_dir)?;
    Ok(without_forgotten(&self.unforgotten, self.sources(cx), &list))
  }

  /// The listing `remembered` ([`Listing::remembered`]'s) was filtered
  /// from, forgotten files included; `None` when nothing was left out.
  pub(super) fn with_forgotten(&self, remembered: &[Source]) -> Option<Arc<Vec<Source>>> {
    let unforgotten = self.unforgotten.lock();
    let filtered = unforgotten.as_ref().filter(|u| std::ptr::eq(u.kept.as_slice(), remembered));
    filtered.map(|u| u.all.clone())
  }
}

/// A restated listing.
struct Restated {
  sources: Arc<Vec<Source>>,
  /// The positions restated, when the order held.
  in_place: Option<Vec<usize>>,
  /// The files it lists that the listing before did not.
  added: Vec<&'static Path>,
}

/// `listed` with the `changed` files (reported at `at_ns`) and the files no
/// watch covers stat'ed again, and the changed files it did not list (new
/// session files) added; the same listing when nothing changed. `None` when
/// a listed file is gone or no longer a file: only a full listing can say.
/// With it, the positions restated when the order held, and the files added.
/// `watch_file` watches a changed file's inode before its stat (a new file
/// has no watch yet; one renamed over a listed name is a new inode).
fn restat(listed: &Arc<Vec<Source>>, changed: &[PathBuf], at_ns: i128, watch_file: &dyn Fn(&Path)) -> Option<Restated> {
  let unwatched = |s: &Source| s.quiet_since == watch::NEVER_QUIET;
  // By address: every listed path is interned, and this is asked of every
  // listed file (100,000 per append at scale); a path never listed is in no
  // listing.
  let changed: Vec<(&PathBuf, Option<&'static Path>)> = changed.iter().map(|path| (path, known(path))).collect();
  let changed_known: rustc_hash::FxHashSet<Address> =
    changed.iter().filter_map(|(_, k)| Some(Address::of((*k)?))).collect();
  let is_changed = |path: &Path| changed_known.contains(&Address::of(path));
  let mut sources = (**listed).clone();
  let mut restated = Vec::new();
  for (at, source) in sources.iter_mut().enumerate().filter(|(_, s)| unwatched(s) || is_changed(s.path)) {
    if is_changed(source.path) {
      watch_file(source.path);
    }
    let (stamp, watchable) = listed_stat::by_path(source.path)?;
    let quiet_since = if !watchable || unwatched(source) { watch::NEVER_QUIET } else { at_ns };
    *source = Source { quiet_since, ..Source::stamped(source.path, stamp) };
    restated.push(at);
  }
  let listed_paths: rustc_hash::FxHashSet<Address> = restated.iter().map(|&at| Address::of(sources[at].path)).collect();
  let mut added = Vec::new();
  for (path, _) in
    changed.iter().filter(|(_, known)| known.is_none_or(|known| !listed_paths.contains(&Address::of(known))))
  {
    watch_file(path);
    // Gone again, or not a file: not listed, as a listing now would not.
    let Some((stamp, watchable)) = listed_stat::by_path(path) else { continue };
    let quiet_since = if watchable { at_ns } else { watch::NEVER_QUIET };
    let source = Source { quiet_since, ..Source::stamped(path, stamp) };
    added.push(source.path);
    sources.push(source);
  }
  // Only the restated files moved: the order holds unless one of them left
  // its place (an append to the newest session keeps it first).
  let in_place = |at: usize| {
    let after = |a: usize, b: usize| newer(&sources[a], &sources[b]) != std::cmp::Ordering::Greater;
    (at == 0 || after(at - 1, at)) && (at + 1 == sources.len() || after(at, at + 1))
  };
  let in_place = (added.is_empty() && restated.iter().all(|&at| in_place(at))).then_some(restated);
  if in_place.is_none() {
    newest_first(&mut sources);
  }
  Some(Restated { sources: Arc::new(sources), in_place, added })
}

/// The header cache: which listed files are sessions, and their cwd.
impl Listing {
  /// The header of `path` (cached while the file is the same: appends never
  /// change a header; "not a session" only while its whole stat is the same
  /// too, since a file seen mid-write may become one); `Err` when it cannot
  /// be read at all, which is never cached. A probe is remembered only when
  /// the file's stat after the read is still `stamp`: one that raced a
  /// rewrite (truncate, then write back to the same size) read a torn file,
  /// and remembering its "not a session" hid the session until its size
  /// changed.
  pub(super) fn probe(&self, path: &Path, stamp: &StatStamp) -> Result<Option<Header>, ()> {
    let file = (stamp.dev, stamp.ino);
    if let Some((seen, proven, header)) = self.headers.lock().get(path.as_os_str()) {
      if *seen == file && (header.is_some() || proven == stamp) {
        return Ok(header.clone());
      }
    }
    let header = try_read_header(path).map_err(|_| ())?;
    let unchanged = fs::metadata(path).is_ok_and(|after| StatStamp::of(&after) == *stamp);
    if unchanged {
      self.headers.lock().insert(super::path_key(path), (file, *stamp, header.clone()));
    }
    Ok(header)
  }
  /// Forgets `path`'s header once its record is resident: the record, built
  /// from that content, answers what the header did (it is a session, and
  /// its cwd), and 100,000 cached headers held ~50 MB through a cold build.
  pub(super) fn forget_header(&self, path: &Path) {
    self.headers.lock().remove(path.as_os_str());
  }
  /// A Pi session, or a file that cannot be read: it is eligible and
  /// reported `source_unavailable`, never silently left out.
  fn may_be_session(&self, path: &Path, stamp: &StatStamp) -> bool {
    self.probe(path, stamp).map_or(true, |h| h.is_some())
  }

  /// Tests: the stat a cached header of `path` was proven against.
  #[cfg(test)]
  pub(super) fn header_proven(&self, path: &Path) -> Option<StatStamp> {
    self.headers.lock().get(path.as_os_str()).map(|(_, proven, _)| *proven)
  }

  /// Tests: how many headers are cached.
  #[cfg(test)]
  pub(super) fn cached_headers(&self) -> usize {
    self.headers.lock().len()
  }

  /// Tests: what a fresh process knows of headers.
  #[cfg(test)]
  pub(super) fn forget_headers(&self) {
    self.headers.lock().clear();
  }

  #[cfg(test)]
  pub(super) fn watcher(&self) -> &watch::Watcher {
    &self.watcher
  }

  /// Tests: how many full listings were made.
  #[cfg(test)]
  pub(super) fn full_listings(&self) -> usize {
    self.full_listings.load(std::sync::atomic::Ordering::Relaxed)
  }
}

/// The session an explicit scope's `target` names, or the current one
/// (`None`): from `all` (the listing without the forgotten files) when
/// listed. A forgotten one named is `session_forgotten`; a forgotten
/// current session is no session.
pub(super) fn named(
  index: &super::Index,
  discovery: &Discovery,
  all: &[Source],
  target: Option<&str>,
) -> Result<Vec<Source>, ContractError> {
  let pick = |path: &Path| {
    all.iter().find(|s| s.path == path).cloned().or_else(|| fs::metadata(path).ok().map(|m| Source::of(path, &m)))
  };
  let session = match target {
    None => match discovery.current() {
      Some(current) if forgotten::refuse(&discovery.agent_dir, &current.header.id, &current.path).is_ok() => current,
      _ => return Ok(Vec::new()),
    },
    Some(target) => {
      let found = match discovery.open_path(target) {
        Some(at_path) => at_path,
        None => {
          let with_forgotten = index.listing().with_forgotten(all);
          let listed = with_forgotten.as_deref().map_or(all, Vec::as_slice);
          super::session_ids::find_in(index, discovery, listed, target)
        }
      };
      let session = found?;
      forgotten::refuse(&discovery.agent_dir, &session.header.id, &session.path)?;
      session
    }
  };
  Ok(pick(&session.path).into_iter().collect())
}

/// `all` without the forgotten files: the same `Arc` while nothing is
/// forgotten, and one filtered copy per (listing, list) pair, so a warm
/// call still finds its last synchronization unchanged by identity.
pub(super) fn without_forgotten(
  cache: &Mutex<Option<Unforgotten>>,
  all: Arc<Vec<Source>>,
  list: &Arc<forgotten::List>,
) -> Arc<Vec<Source>> {
  if list.is_empty() {
    return all;
  }
  let mut cache = cache.lock();
  if let Some(known) = cache.as_ref().filter(|k| Arc::ptr_eq(&k.all, &all) && Arc::ptr_eq(&k.list, list)) {
    return known.kept.clone();
  }
  let kept: Arc<Vec<Source>> = Arc::new(all.iter().filter(|s| !list.covers_file(s.path, &s.stamp)).cloned().collect());
  *cache = Some(Unforgotten { all, list: list.clone(), kept: kept.clone() });
  kept
}

/// The last listing filtered by [`without_forgotten`].
pub(crate) struct Unforgotten {
  all: Arc<Vec<Source>>,
  list: Arc<forgotten::List>,
  kept: Arc<Vec<Source>>,
}

/// Does the global scope (`project: None`) or the project scope of
/// `project` (the project's own dir) hold `source`?
pub(super) fn in_scope(listing: &Listing, discovery: &Discovery, project: Option<&Path>, source: &Source) -> bool {
  match project {
    None => listing.may_be_session(source.path, &source.stamp),
    // Another project's session: its header is not read (at 100,000
    // sessions a project call read every session's first line).
    Some(dir) if !discovery.may_hold(dir, source.path) => false,
    Some(dir) => match listing.probe(source.path, &source.stamp) {
      Ok(header) => header.is_some_and(|h| discovery.in_project(dir, source.path, || &h.cwd)),
      // Unreadable in this project's own dir: counted as unavailable.
      Err(()) => source.path.parent() == Some(dir),
    },
  }
}

/// [`in_scope_proven`] of each of `sources` with its fresh record, in order.
/// The headers of the files without a fresh record are read side by side on
/// [`header_readers`]: a first build reads each of them, and where their
/// pages are not cached each read waits on the disk (at 100,000 sessions,
/// one after another, ~10–20 s before the build began).
pub(super) fn in_scope_each(
  listing: &Listing,
  discovery: &Discovery,
  project: Option<&Path>,
  sources: &[Source],
  fresh: &[Option<Arc<CacheRecord>>],
) -> Vec<bool> {
  let kept = |at: usize| in_scope_proven(listing, discovery, project, &sources[at], fresh[at].as_deref());
  let unproven = fresh.iter().filter(|record| record.is_none()).count();
  if unproven < HEADER_READERS {
    return (0..sources.len()).map(kept).collect();
  }
  let each = || (0..sources.len()).into_par_iter().with_max_len(64).map(kept).collect();
  match header_readers() {
    Some(readers) => readers.install(each),
    // No threads to be had: the call's own pool.
    None => each(),
  }
}

/// How many header reads [`in_scope_each`] keeps in flight.
pub(super) const HEADER_READERS: usize = 16;

/// Threads for reads that wait on the disk, not the CPU (the global pool
/// has a thread per core, which would leave the disk one read per core),
/// made on first need.
pub(super) fn header_readers() -> Option<&'static rayon::ThreadPool> {
  static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
  let pool = POOL.get_or_init(|| {
    let builder = rayon::ThreadPoolBuilder::new().num_threads(HEADER_READERS);
    builder.thread_name(|n| format!("pfm-header-{n}")).build().ok()
  });
  pool.as_ref()
}

/// [`in_scope`], told by the source's fresh record when it has one: built
/// from that very content, it proves the source a session and names its
/// header's cwd, so only the files without one have their header read.
fn in_scope_proven(
  listing: &Listing,
  discovery: &Discovery,
  project: Option<&Path>,
  source: &Source,
  fresh: Option<&CacheRecord>,
) -> bool {
  match (fresh, project) {
    (Some(_), None) => true,
    (Some(record), Some(dir)) => discovery.in_project(dir, source.path, || record.cwd()),
    (None, _) => in_scope(listing, discovery, project, source),
  }
}

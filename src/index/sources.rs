//! The session files of an index: every `sessions/*/*.jsonl` and the flat
//! custom dir's `*.jsonl`, each with its stat stamp and how long the dir
//! watch has vouched for it, newest first.

use super::{dir_cache, watch, Index, Listed};
use crate::engine::Engine;
use crate::session::source::StatStamp;
use rayon::prelude::*;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A session file with its stat stamp.
#[derive(Debug, Clone)]
pub struct Source {
  pub path: PathBuf,
  pub stamp: StatStamp,
  /// From when on the dir watch vouches that the file did not change (the
  /// arming, or the drain that last reported it); [`watch::NEVER_QUIET`]
  /// when no watch covers it.
  pub quiet_since: i128,
}

impl Source {
  pub(super) fn of(path: PathBuf, metadata: &fs::Metadata) -> Source {
    Source { stamp: StatStamp::of(metadata), path, quiet_since: watch::NEVER_QUIET }
  }

  /// Does the watch vouch that the file is as it was at `verified_ns`?
  pub(super) fn quiet_since(&self, verified_ns: i128) -> bool {
    self.quiet_since <= verified_ns
  }
}

/// The stat of a listed file, and whether a watch on its dir sees every change
/// to it: not through a symlink, and not through another hard link elsewhere.
fn stat_listed(path: &Path) -> Option<(fs::Metadata, bool)> {
  let own = fs::symlink_metadata(path).ok()?;
  if own.file_type().is_symlink() {
    return fs::metadata(path).ok().filter(|m| m.is_file()).map(|m| (m, false));
  }
  #[cfg(unix)]
  let single = std::os::unix::fs::MetadataExt::nlink(&own) == 1;
  #[cfg(not(unix))]
  let single = false;
  own.is_file().then_some((own, single))
}

fn newest_first(sources: &mut [Source]) {
  sources.sort_by(|a, b| b.stamp.mtime_ns.cmp(&a.stamp.mtime_ns).then_with(|| a.path.cmp(&b.path)));
}

/// Every `sessions/*/*.jsonl`, plus the `*.jsonl` of Pi's flat custom
/// session dir, with its stamp, newest first (then by path): the order tiers
/// are assigned in. Listings come from `dirs` while the directories are
/// unchanged; every file is stat'ed (appends change no directory). `arming`
/// watches each dir before it is listed, so no change after the listing
/// goes unseen.
pub fn list_sources(
  dirs: &dir_cache::DirCache,
  roots: &watch::Roots,
  mut arming: Option<&mut watch::Arming<'_>>,
) -> Vec<Source> {
  let mut jsonl_in = |dir: PathBuf, root: bool| {
    if let Some(arming) = arming.as_deref_mut() {
      arming.watch(&dir, if root { watch::Kind::Root } else { watch::Kind::Sessions });
    }
    let names = dirs.names(&dir);
    names.iter().filter(|n| root || n.ends_with(".jsonl")).map(|n| dir.join(n)).collect::<Vec<_>>()
  };
  let sessions_dir = &roots.sessions_dir;
  // A missing sessions dir cannot be watched: arming fails, and every call lists again.
  let projects = jsonl_in(sessions_dir.clone(), true);
  let mut files: Vec<PathBuf> =
    projects.into_iter().filter(|p| p.is_dir()).flat_map(|dir| jsonl_in(dir, false)).collect();
  if let Some(dir) = &roots.session_dir {
    files.extend(jsonl_in(dir.clone(), false));
    // The custom dir may be one of the default layout's.
    files.sort();
    files.dedup();
  }
  let arming = arming.as_deref();
  let mut sources: Vec<Source> = files
    .into_par_iter()
    .with_min_len(64)
    .filter_map(|path| {
      // The file's own watch comes first: a link made after the stat is then queued.
      let watched = arming.is_some_and(|arming| arming.watch_file(&path));
      let (metadata, watchable) = stat_listed(&path)?;
      let mut source = Source::of(path, &metadata);
      // Vouched for once arming finishes (see `Index::sources`).
      source.quiet_since = if watchable && watched { i128::MIN } else { watch::NEVER_QUIET };
      Some(source)
    })
    .collect();
  newest_first(&mut sources);
  sources
}

impl Index {
  /// The session files now: from the watcher's changes when it vouches for
  /// the last listing (only changed and unwatchable files are stat'ed), else
  /// a full listing that re-arms it.
  pub(super) fn sources(&self, engine: &Engine) -> Arc<Vec<Source>> {
    let roots =
      watch::Roots { sessions_dir: engine.discovery().sessions_dir(), session_dir: engine.session_dir.clone() };
    let watching = engine.config.watch_sessions;
    if watching {
      let listed = self.listed.lock().as_ref().filter(|l| l.roots == roots).map(|l| (l.sources.clone(), l.unwatched));
      if let Some((listed, unwatched)) = listed {
        if let watch::Drained::Files { changed, at_ns } = self.watcher.drain(&roots) {
          if !unwatched && changed.is_empty() {
            return listed;
          }
          if let Some(sources) = restat(&listed, &changed, at_ns) {
            *self.listed.lock() = Some(Listed::new(roots, sources.clone()));
            return sources;
          }
        }
      }
    }
    let mut arming = watching.then(|| self.watcher.arm(&roots));
    let mut sources = list_sources(&self.dirs, &roots, arming.as_mut());
    let armed_ns = arming.and_then(watch::Arming::finish);
    for source in &mut sources {
      if source.quiet_since == i128::MIN {
        source.quiet_since = armed_ns.unwrap_or(watch::NEVER_QUIET);
      }
    }
    let sources = Arc::new(sources);
    *self.listed.lock() = armed_ns.map(|_| Listed::new(roots, sources.clone()));
    if !watching {
      self.watcher.disarm();
    }
    sources
  }
}

/// `listed` with the `changed` files (reported at `at_ns`) and the files no
/// watch covers stat'ed again; the same listing when nothing changed. `None`
/// when a file is gone or no longer a file: only a full listing can say.
fn restat(listed: &Arc<Vec<Source>>, changed: &[PathBuf], at_ns: i128) -> Option<Arc<Vec<Source>>> {
  let unwatched = |s: &Source| s.quiet_since == watch::NEVER_QUIET;
  let mut sources = (**listed).clone();
  for source in sources.iter_mut().filter(|s| unwatched(s) || changed.binary_search(&s.path).is_ok()) {
    let (metadata, watchable) = stat_listed(&source.path)?;
    let quiet_since = if !watchable || unwatched(source) { watch::NEVER_QUIET } else { at_ns };
    *source = Source { quiet_since, ..Source::of(source.path.clone(), &metadata) };
  }
  newest_first(&mut sources);
  Some(Arc::new(sources))
}

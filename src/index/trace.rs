//! The index's test seam: what one index did, noted as it happens, and the
//! one setting its tests turn. Each [`Index`](super::Index) owns its own
//! trace, so a test reads the events of its own index and parallel tests
//! never see each other's. Outside tests the trace holds nothing and noting
//! an event compiles to nothing (the event is never made).

use super::build::Made;
use crate::session::lineage::Branches;
use std::path::PathBuf;

/// Which synchronization a call ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
  Full,
  Patched,
}

/// One thing the index did that its answers do not show.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))] // read by tests only
pub(crate) enum Event {
  /// A synchronization ran this pass (none: the last one was reused).
  Pass(Pass),
  /// A record file was looked for on disk, found or not (a packed head
  /// stands for its record unread).
  Opened(PathBuf),
  /// A source's record was built, and how.
  Built(PathBuf, Made),
  /// A source path was hashed to name its records.
  Hashed(PathBuf),
  /// A shard of the cold term dictionary was built.
  DictionaryBuilt(Branches, usize),
  /// A query was served by the cold term dictionary.
  DictionaryServed,
}

#[derive(Default)]
pub(crate) struct Trace {
  #[cfg(test)]
  events: parking_lot::Mutex<Vec<Event>>,
  /// Tests pack small indexes: the packed heads' threshold, 0 when unset.
  #[cfg(test)]
  min_packed: std::sync::atomic::AtomicUsize,
}

impl Trace {
  /// Notes the event `event` makes (in tests only).
  #[inline]
  pub(crate) fn note(&self, event: impl FnOnce() -> Event) {
    #[cfg(test)]
    self.events.lock().push(event());
    #[cfg(not(test))]
    let _ = event;
  }

  /// The fewest cold records the packed heads are written for.
  pub(crate) fn min_packed(&self) -> usize {
    #[cfg(test)]
    if let min @ 1.. = self.min_packed.load(std::sync::atomic::Ordering::Relaxed) {
      return min;
    }
    super::heads::MIN_RECORDS
  }
}

#[cfg(test)]
impl Trace {
  pub(crate) fn set_min_packed(&self, min: usize) {
    self.min_packed.store(min, std::sync::atomic::Ordering::Relaxed);
  }

  /// Removes the events `pick` selects and returns what it made of them, in
  /// order; the other events stay.
  pub(crate) fn take<T>(&self, mut pick: impl FnMut(&Event) -> Option<T>) -> Vec<T> {
    let mut taken = Vec::new();
    self.events.lock().retain(|event| match pick(event) {
      Some(made) => {
        taken.push(made);
        false
      }
      None => true,
    });
    taken
  }

  /// The passes run since the last call.
  pub(crate) fn passes(&self) -> Vec<Pass> {
    self.take(|event| match event {
      Event::Pass(pass) => Some(*pass),
      _ => None,
    })
  }

  /// The record files looked for since the last call.
  pub(crate) fn opened(&self) -> Vec<PathBuf> {
    self.take(|event| match event {
      Event::Opened(path) => Some(path.clone()),
      _ => None,
    })
  }

  /// The records built since the last call: each source, and how.
  pub(crate) fn built(&self) -> Vec<(PathBuf, Made)> {
    self.take(|event| match event {
      Event::Built(path, made) => Some((path.clone(), *made)),
      _ => None,
    })
  }

  /// The sources whose builds resumed since the last call (other builds
  /// are taken too).
  pub(crate) fn resumed(&self) -> Vec<PathBuf> {
    self.built().into_iter().filter(|(_, made)| *made == Made::Resumed).map(|(path, _)| path).collect()
  }

  /// How many dictionary shards were built since the last call.
  pub(crate) fn shards_built(&self) -> usize {
    self.take(|event| matches!(event, Event::DictionaryBuilt(..)).then_some(())).len()
  }

  /// How many queries the dictionary served since the last call.
  pub(crate) fn dictionary_served(&self) -> usize {
    self.take(|event| matches!(event, Event::DictionaryServed).then_some(())).len()
  }

  /// The source paths hashed since the last call.
  pub(crate) fn hashed(&self) -> Vec<PathBuf> {
    self.take(|event| match event {
      Event::Hashed(path) => Some(path.clone()),
      _ => None,
    })
  }
}

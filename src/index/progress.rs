//! Progress of one synchronization's indexing work, for a caller that shows
//! it (the CLI's progress bar). Builds run on rayon workers, so counts are
//! atomics and the sink is called from whichever thread finished a build.

use serde::Serialize;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One report: the sessions and source bytes this call plans to index
/// (fresh records cost nothing) and how much of it is done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncProgress {
  pub eligible_sessions: u64,
  /// Sessions whose records were already current when the call started.
  pub fresh_sessions: u64,
  pub sessions_to_index: u64,
  pub sessions_indexed: u64,
  pub bytes_to_index: u64,
  pub bytes_indexed: u64,
}

/// Where reports go; must be cheap (it runs on indexing threads).
#[derive(Clone)]
pub struct ProgressSink(pub Arc<dyn Fn(SyncProgress) + Send + Sync>);

impl fmt::Debug for ProgressSink {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str("ProgressSink")
  }
}

/// Counts the builds of one call and reports each step to the sink.
pub struct Tracker<'s> {
  sink: Option<&'s ProgressSink>,
  plan: SyncProgress,
  sessions: AtomicU64,
  bytes: AtomicU64,
}

impl<'s> Tracker<'s> {
  /// Reports the plan (nothing done yet) and starts counting.
  pub fn start(sink: Option<&'s ProgressSink>, plan: SyncProgress) -> Tracker<'s> {
    if let Some(sink) = sink {
      (sink.0)(plan);
    }
    Tracker { sink, plan, sessions: AtomicU64::new(0), bytes: AtomicU64::new(0) }
  }

  /// One build finished (successfully or not) after parsing `bytes`.
  pub fn built(&self, bytes: u64) {
    let Some(sink) = self.sink else { return };
    let sessions_indexed = self.sessions.fetch_add(1, Ordering::Relaxed) + 1;
    let bytes_indexed = self.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
    (sink.0)(SyncProgress { sessions_indexed, bytes_indexed, ..self.plan });
  }
}

//! Indexing progress handed to a JavaScript callback.

use crate::index::progress::{ProgressSink, SyncProgress};
use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use std::sync::Arc;

/// Indexing progress of one call: the sessions and source bytes it plans to
/// index (current records cost nothing) and how much of that is done.
#[napi(object)]
#[derive(Clone, Copy)]
pub struct IndexProgress {
  pub eligible_sessions: f64,
  /// Sessions whose records were already current when the call started.
  pub fresh_sessions: f64,
  pub sessions_to_index: f64,
  pub sessions_indexed: f64,
  pub bytes_to_index: f64,
  pub bytes_indexed: f64,
}

impl From<SyncProgress> for IndexProgress {
  fn from(p: SyncProgress) -> Self {
    IndexProgress {
      eligible_sessions: p.eligible_sessions as f64,
      fresh_sessions: p.fresh_sessions as f64,
      sessions_to_index: p.sessions_to_index as f64,
      sessions_indexed: p.sessions_indexed as f64,
      bytes_to_index: p.bytes_to_index as f64,
      bytes_indexed: p.bytes_indexed as f64,
    }
  }
}

/// A JS progress callback: called without waiting for it (non-blocking, so
/// a slow renderer never stalls indexing) and weak (it never keeps Node alive).
pub(super) type ProgressCallback =
  ThreadsafeFunction<IndexProgress, Unknown<'static>, IndexProgress, Status, false, true>;

pub(super) fn progress_sink(callback: ProgressCallback) -> ProgressSink {
  ProgressSink(Arc::new(move |p: SyncProgress| {
    callback.call(p.into(), ThreadsafeFunctionCallMode::NonBlocking);
  }))
}

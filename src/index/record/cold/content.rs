//! A cold digest's bulk (vocabulary, frequency classes, addresses, files
//! touched, tool histogram) and its loader: resident once read, read from
//! the record file on first use otherwise.

use super::derived::{Lazy, LazyFilter, TermFilter};
use super::Address;
use crate::index::record::vocabulary::Vocabulary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The bulk of a digest: sorted unique canonical terms and the structural
/// addresses, and the per-session lists no query reads (files touched, the
/// tool histogram), which in the head stayed resident for every cold
/// session (~850 bytes each; 85 MB at 100,000).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ColdContent {
  pub vocabulary: Vocabulary,
  /// Per vocabulary term, the session's frequency class of it
  /// (`score::frequency_class`).
  pub frequencies: Vec<u8>,
  #[serde(with = "super::packed")]
  pub addresses: Vec<Address>,
  pub files_touched: Vec<String>,
  pub tool_histogram: BTreeMap<String, u64>,
  /// Built on first use in memory, never persisted: lets a query skip the
  /// vocabulary search of most digests that lack a term.
  #[serde(skip)]
  pub(super) filter: LazyFilter,
}

impl ColdContent {
  pub fn new(vocabulary: Vocabulary, frequencies: Vec<u8>, addresses: Vec<Address>) -> ColdContent {
    let (files_touched, tool_histogram) = Default::default();
    ColdContent { vocabulary, frequencies, addresses, files_touched, tool_histogram, filter: Lazy::default() }
  }

  /// xxh3-128 of the terms and their frequency classes: what the cold term
  /// dictionary's postings hold of this digest. A session whose new turns
  /// only repeat its words keeps its terms but not their classes, and the
  /// dictionary must not answer for it with the old ones.
  pub fn fingerprint(&self) -> u128 {
    let text = self.vocabulary.text().as_bytes();
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(&(text.len() as u64).to_le_bytes());
    hasher.update(text);
    hasher.update(&self.frequencies);
    hasher.digest128()
  }

  /// Exact vocabulary membership, checking the Bloom filter first.
  pub fn contains(&self, term: &str) -> bool {
    self.frequency(term).is_some()
  }

  /// The session's frequency class of `term`, when its vocabulary holds it
  /// (the Bloom filter first). A digest without classes (a test's) says 1.
  pub fn frequency(&self, term: &str) -> Option<u8> {
    if !self.filter.get_or_init(|| TermFilter::build(self.vocabulary.iter())).may_contain(term) {
      return None;
    }
    let at = self.vocabulary.binary_search(term).ok()?;
    Some(self.frequencies.get(at).copied().unwrap_or(1))
  }
}

/// The record holding a digest's content could not be read back intact
/// (removed, replaced by a newer record, or damaged since its head was read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unreadable;

/// A digest's content: in memory (built here, or read once), or read on
/// first use by a loader that checks it belongs to the head it came with.
/// Clones share what was read. One allocation holds the content's cell and
/// its loader (a fresh process makes one per cold head, 100,000 at scale);
/// none until there is content or a loader.
#[derive(Clone, Default)]
pub struct LazyContent(Option<std::sync::Arc<dyn Load>>);

type Loaded = std::sync::OnceLock<Result<std::sync::Arc<ColdContent>, Unreadable>>;

/// Whether any content of this process was found unreadable (set before
/// the cell that holds the failure is readable by others).
static FOUND_UNREADABLE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The cell and the loader that fills it.
struct Deferred<F> {
  cell: Loaded,
  load: F,
}

trait Load: Send + Sync {
  fn cell(&self) -> &Loaded;
  fn load(&self) -> Result<ColdContent, Unreadable>;
}

impl<F: Fn() -> Result<ColdContent, Unreadable> + Send + Sync> Load for Deferred<F> {
  fn cell(&self) -> &Loaded {
    &self.cell
  }

  fn load(&self) -> Result<ColdContent, Unreadable> {
    (self.load)()
  }
}

impl LazyContent {
  pub fn loaded(content: ColdContent) -> LazyContent {
    let cell = std::sync::OnceLock::from(Ok(std::sync::Arc::new(content)));
    LazyContent(Some(std::sync::Arc::new(Deferred { cell, load: || Err(Unreadable) })))
  }

  pub fn deferred(load: impl Fn() -> Result<ColdContent, Unreadable> + Send + Sync + 'static) -> LazyContent {
    LazyContent(Some(std::sync::Arc::new(Deferred { cell: Default::default(), load })))
  }

  pub fn get(&self) -> Result<&ColdContent, Unreadable> {
    let lazy = self.0.as_ref().ok_or(Unreadable)?;
    let loaded = lazy.cell().get_or_init(|| {
      let loaded = lazy.load().map(std::sync::Arc::new);
      if loaded.is_err() {
        FOUND_UNREADABLE.store(true, std::sync::atomic::Ordering::Release);
      }
      loaded
    });
    loaded.as_deref().map_err(|e| *e)
  }

  /// Was this content read and found unreadable? Asks the content only once
  /// some content of this process was: the check over a fresh process's
  /// 100,000 records then reads none of them (their loaders lie apart in
  /// memory, a cache miss each: two thirds of refreshing the packed heads).
  pub fn found_unreadable(&self) -> bool {
    FOUND_UNREADABLE.load(std::sync::atomic::Ordering::Acquire) && self.is_resident() && self.get().is_err()
  }

  /// The content without keeping it: what is resident, or a read that is
  /// dropped with the result (the dictionary build reads every digest once).
  pub fn read(&self) -> Result<std::borrow::Cow<'_, ColdContent>, Unreadable> {
    let lazy = self.0.as_ref().ok_or(Unreadable)?;
    match lazy.cell().get() {
      Some(loaded) => loaded.as_deref().map(std::borrow::Cow::Borrowed).map_err(|e| *e),
      None => lazy.load().map(std::borrow::Cow::Owned),
    }
  }

  /// Has the content been read (or found unreadable)?
  pub fn is_resident(&self) -> bool {
    self.0.as_ref().is_some_and(|lazy| lazy.cell().get().is_some())
  }

  fn resident(&self) -> Option<&Result<std::sync::Arc<ColdContent>, Unreadable>> {
    self.0.as_ref()?.cell().get()
  }
}

impl std::fmt::Debug for LazyContent {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    match self.resident() {
      Some(content) => content.fmt(f),
      None => f.write_str("LazyContent(not read)"),
    }
  }
}

/// Equal when the contents are (reading both).
impl PartialEq for LazyContent {
  fn eq(&self, other: &Self) -> bool {
    self.get() == other.get()
  }
}

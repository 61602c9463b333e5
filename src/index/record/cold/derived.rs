//! What a cold digest works out on first use and never persists: where the
//! cold term dictionary placed it, and a Bloom filter over its vocabulary.

/// A digest's shard and its member in one dictionary shard, kept between
/// queries so a warm query does not hash every cold candidate's file again.
/// A digest belongs to one record file and its vocabulary never changes, so
/// its shard is a function of the placement's generation, and its member of
/// the shard's identity. Clones start empty.
#[derive(Debug)]
pub struct DictionaryMatch {
  /// `generation << 32 | shard` of the placement it was placed by (`u64::MAX`: none).
  shard: std::sync::atomic::AtomicU64,
  /// `generation << 32 | member` of the last shard it was matched in (0: none).
  member: std::sync::atomic::AtomicU64,
}

impl Default for DictionaryMatch {
  fn default() -> Self {
    DictionaryMatch { shard: std::sync::atomic::AtomicU64::new(u64::MAX), member: Default::default() }
  }
}

impl Clone for DictionaryMatch {
  fn clone(&self) -> Self {
    DictionaryMatch::default()
  }
}

impl PartialEq for DictionaryMatch {
  fn eq(&self, _: &Self) -> bool {
    true
  }
}

impl DictionaryMatch {
  /// The shard the placement of `generation` puts it in.
  pub fn shard(&self, generation: u32, compute: impl FnOnce() -> usize) -> usize {
    use std::sync::atomic::Ordering::Relaxed;
    let cached = self.shard.load(Relaxed);
    if cached != u64::MAX && cached >> 32 == u64::from(generation) {
      return cached as u32 as usize;
    }
    let shard = compute();
    self.shard.store(u64::from(generation) << 32 | shard as u64, Relaxed);
    shard
  }

  /// The member in the shard of `generation` (never 0), `None` when it is not one.
  pub fn member(&self, generation: u32, compute: impl FnOnce() -> Option<u32>) -> Option<u32> {
    use std::sync::atomic::Ordering::Relaxed;
    let cached = self.member.load(Relaxed);
    let member = if cached >> 32 == u64::from(generation) {
      cached as u32
    } else {
      let member = compute().unwrap_or(u32::MAX);
      self.member.store(u64::from(generation) << 32 | u64::from(member), Relaxed);
      member
    };
    (member != u32::MAX).then_some(member)
  }
}

/// A Bloom filter over a vocabulary: no false negatives, about 1% false
/// positives at 10 bits per term, one cache line touched per probe set.
#[derive(Debug, Default)]
pub struct TermFilter {
  bits: Vec<u64>,
}

fn term_hash(term: &str) -> u64 {
  use std::hash::Hasher;
  let mut hasher = rustc_hash::FxHasher::default();
  hasher.write(term.as_bytes());
  // FxHash mixes weakly in its low bits; a final avalanche spreads them.
  let mut h = hasher.finish();
  h ^= h >> 33;
  h = h.wrapping_mul(0xff51afd7ed558ccd);
  h ^ (h >> 33)
}

/// A derived cache, not part of the digest's value: equal, cloned and
/// shown as empty (a record shown before and after a query shows the same).
#[derive(Default)]
pub struct Lazy<T>(std::sync::OnceLock<T>);

impl<T> std::fmt::Debug for Lazy<T> {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.write_str("Lazy")
  }
}

impl<T> Lazy<T> {
  pub fn get_or_init(&self, init: impl FnOnce() -> T) -> &T {
    self.0.get_or_init(init)
  }
}

impl<T> Clone for Lazy<T> {
  fn clone(&self) -> Self {
    Lazy(std::sync::OnceLock::new())
  }
}

impl<T> PartialEq for Lazy<T> {
  fn eq(&self, _: &Self) -> bool {
    true
  }
}

pub type LazyFilter = Lazy<TermFilter>;

impl TermFilter {
  const PROBES: u32 = 4;

  pub fn build<'t>(terms: impl Iterator<Item = &'t str> + Clone) -> TermFilter {
    let words = (terms.clone().count() * 10 / 64 + 1).next_power_of_two();
    let mut filter = TermFilter { bits: vec![0; words] };
    for term in terms {
      let hash = term_hash(term);
      let (word, bits) = filter.locate(hash);
      filter.bits[word] |= bits;
    }
    filter
  }

  /// The word a term lives in (blocked: all probes in one u64) and its bits.
  fn locate(&self, hash: u64) -> (usize, u64) {
    let word = (hash as usize) & (self.bits.len() - 1);
    let mut bits = 0u64;
    for probe in 0..Self::PROBES {
      bits |= 1 << ((hash >> (20 + probe * 6)) & 63);
    }
    (word, bits)
  }

  pub fn may_contain(&self, term: &str) -> bool {
    let (word, bits) = self.locate(term_hash(term));
    self.bits[word] & bits == bits
  }
}

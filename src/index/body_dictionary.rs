//! The index dir's shared dictionary for cold bodies (the frames of
//! `record::compression`): trained once from the first cold bodies an index
//! encodes, kept as a file of the dir, found again by the id a frame names.
//!
//! Why: a cold body is ~50 KB of postcard, mostly its vocabulary, and one
//! user's sessions share most of their terms, which a frame compressed alone
//! cannot refer to. A 128 KB dictionary trained on `medium`'s first 64 cold
//! bodies (fastCover with fixed parameters, ~50 ms; zstd's default trainer
//! tries eight parameter sets for the same size) made its cold bodies 19%
//! smaller (bench/RESULTS.md).
//!
//! The file, `cold-bodies.<cacheVersion>.<id>.zdict` ([`IndexFile::BodyDictionary`]),
//! is written before any record that uses it and never replaced; an index
//! uses the one it finds, for [`USES`] bodies, then trains the next one on
//! the bodies that follow (a dictionary per generation of ~4,000 records). A record whose dictionary is missing or
//! damaged is unreadable, and rebuilt like any other; a damaged file is
//! removed, and a process whose dictionary is gone trains another. Two
//! processes building one new index at once may each train one: both stay,
//! each used by the records its writer wrote. Files of another cache version
//! are removed by the cleanup (`dir::gc`).
//!
//! A dictionary holds pieces of the bodies it was trained on, so its file
//! lists the sessions they came from. Forgetting one of them retires it
//! ([`BodyDictionaries::retire`], from `index::drop_session`): its records
//! are compressed again without it and the file is removed, so nothing of a
//! forgotten session stays in the index dir. A training leaves out samples
//! of sessions the forgotten list names, and reads the list again once its
//! file is written: another process may have forgotten one meanwhile, and
//! then either its retire finds the file or this check does.

use super::dir::{self as files, IndexFile, Names};
use super::record::compression::{Dictionaries, LEVEL};
use super::record::{self, CACHE_VERSION};
use crate::fsread::{self, Links, ReadError};
use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use zstd::dict::{DecoderDictionary, EncoderDictionary};

/// Bodies a dictionary is trained on: 64 of `medium` trained one as good as
/// 300 did (measured: 19.6 vs 19.3 MB over its 950 cold bodies) in a sixth
/// of the time.
const SAMPLES: usize = 64;
/// Training starts early when the samples hold this much (bodies are at
/// most `maxColdCacheBytes`): the memory a sampling index holds.
const MAX_SAMPLE_BYTES: usize = 8 << 20;
/// The dictionary's size: 64 and 96 KB left `medium` 11% larger, 256 KB 3%.
const CAPACITY: usize = 128 * 1024;
/// Bodies a process compresses with one dictionary before it trains the
/// next on the bodies after them: what retiring one costs is bounded (a forget
/// compresses again the records that used it; at `huge` one dictionary for
/// all 100,000 made that forget take 27.5 s, one per 4,096 bodies 5.1 s),
/// and so is what a lost dictionary file makes rebuilt. Each dictionary's
/// first bodies are compressed alone: `huge`'s digests stayed 0.159.
const USES: usize = 4096;
/// A smaller dictionary than this is not worth a file (samples too small).
const MIN_CAPACITY: usize = 4 * 1024;
/// `PFMIDX` (what `dir::is_ours` asks of a file the index may remove), `ZD`.
const MAGIC: &[u8; 8] = b"PFMIDXZD";
/// Far above any file written here ([`CAPACITY`] plus its sample list).
const MAX_FILE_BYTES: u64 = 4 << 20;

/// One index dir's dictionaries, as this process knows them.
pub struct BodyDictionaries {
  dir: PathBuf,
  /// Read (or trained) by this process, by id.
  decoders: RwLock<FxHashMap<u32, Arc<DecoderDictionary<'static>>>>,
  state: Mutex<State>,
}

#[derive(Default)]
struct State {
  encoder: Encoder,
  /// The agent dir whose forgotten list a training checks.
  agent_dir: Option<PathBuf>,
}

/// What new cold bodies are compressed with.
#[derive(Default)]
enum Encoder {
  /// Not yet told what the dir holds ([`BodyDictionaries::adopt`]): alone.
  #[default]
  Unknown,
  /// The dir has this dictionary: read when a body is first compressed (a
  /// process that compresses none, most of them, never reads it).
  Found(u32),
  /// No dictionary yet: bodies are compressed alone and kept to train one.
  Sampling(Samples),
  /// One thread trains: bodies meanwhile are compressed alone.
  Training,
  /// `left`: bodies this process still compresses with it ([`USES`]).
  Ready { id: u32, dictionary: Arc<EncoderDictionary<'static>>, left: usize },
  /// A training failed: alone, for the rest of this process.
  Off,
}

#[derive(Default)]
struct Samples {
  bytes: Vec<u8>,
  sizes: Vec<usize>,
  sources: Vec<(PathBuf, String)>,
}

impl Samples {
  fn push(&mut self, plain: &[u8], source: &Path, session_id: &str) {
    self.bytes.extend_from_slice(plain);
    self.sizes.push(plain.len());
    self.sources.push((source.to_path_buf(), session_id.to_string()));
  }

  fn full(&self) -> bool {
    self.sizes.len() >= SAMPLES || self.bytes.len() >= MAX_SAMPLE_BYTES
  }

  /// The samples whose session `drop` does not name.
  fn without(self, drop: impl Fn(&Path, &str) -> bool) -> Samples {
    let mut kept = Samples::default();
    let mut at = 0;
    for ((source, session_id), size) in self.sources.iter().zip(&self.sizes) {
      if !drop(source, session_id) {
        kept.push(&self.bytes[at..at + size], source, session_id);
      }
      at += size;
    }
    kept
  }
}

/// A dictionary file's content.
struct Stored {
  /// The [`record::base_hash`] of each session a sample came from.
  sources: Vec<u64>,
  dictionary: Vec<u8>,
}

impl Stored {
  /// `MAGIC`, xxh3-64 of the rest, the sample count (u32 LE), each sample's
  /// source hash (u64 LE), the zstd dictionary.
  fn encode(&self) -> Vec<u8> {
    let mut rest = (self.sources.len() as u32).to_le_bytes().to_vec();
    for source in &self.sources {
      rest.extend_from_slice(&source.to_le_bytes());
    }
    rest.extend_from_slice(&self.dictionary);
    super::record::sealed(MAGIC, &rest)
  }

  /// `None` for anything but an intact file of the dictionary `id`.
  fn decode(bytes: &[u8], id: u32) -> Option<Stored> {
    let rest = super::record::unsealed(MAGIC, bytes)?;
    let (count, rest) = rest.split_at_checked(4)?;
    let count = u32::from_le_bytes(count.try_into().ok()?) as usize;
    let (sources, dictionary) = rest.split_at_checked(count.checked_mul(8)?)?;
    let sources = sources.chunks_exact(8).map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes"))).collect();
    (zstd::zstd_safe::get_dict_id_from_dict(dictionary).map(|d| d.get()) == Some(id))
      .then(|| Stored { sources, dictionary: dictionary.to_vec() })
  }
}

fn file_name(id: u32) -> String {
  IndexFile::BodyDictionary { version: CACHE_VERSION, id }.to_string()
}

/// The ids of this version's dictionary files among `names` (sorted).
fn ids_in(names: &Names) -> impl Iterator<Item = u32> + '_ {
  const PREFIX: &str = IndexFile::BODY_DICTIONARY_PREFIX;
  let start = names.partition_point(|name| name < PREFIX);
  names.iter_from(start).take_while(|name| name.starts_with(PREFIX)).filter_map(|name| match IndexFile::parse(name) {
    Some(IndexFile::BodyDictionary { version: CACHE_VERSION, id }) => Some(id),
    _ => None,
  })
}

impl BodyDictionaries {
  pub fn new(dir: PathBuf) -> BodyDictionaries {
    BodyDictionaries { dir, decoders: RwLock::default(), state: Mutex::default() }
  }

  /// Told at each synchronization what the index dir holds (`names`,
  /// sorted) and whose forgotten list applies: the first time, an index
  /// with a dictionary of this version will use it (read when first needed)
  /// and one without starts sampling; later, one whose dictionary file is
  /// gone trains another.
  pub fn adopt(&self, names: &Names, agent_dir: &Path) {
    let mut state = self.state.lock();
    if state.agent_dir.as_deref() != Some(agent_dir) {
      state.agent_dir = Some(agent_dir.to_path_buf());
    }
    let gone = |id: u32| !names.contains(&file_name(id));
    state.encoder = match std::mem::take(&mut state.encoder) {
      Encoder::Unknown => match ids_in(names).next() {
        Some(id) => Encoder::Found(id),
        None => Encoder::Sampling(Samples::default()),
      },
      Encoder::Found(id) | Encoder::Ready { id, .. } if gone(id) => Encoder::Sampling(Samples::default()),
      kept => kept,
    };
  }

  /// A found dictionary read, ready to compress with (or, when it no longer
  /// reads, sampling to train another).
  fn resolve(&self, encoder: &mut Encoder) {
    if let Encoder::Found(id) = *encoder {
      *encoder = match self.read(id) {
        Some(stored) => self.ready(id, &stored.dictionary),
        None => Encoder::Sampling(Samples::default()),
      };
    }
  }

  /// The dictionary file `id`, if intact; a damaged one is removed (it is
  /// ours, and every record that names it is unreadable until rebuilt).
  fn read(&self, id: u32) -> Option<Stored> {
    let name = file_name(id);
    let bytes = match fsread::read_regular(&self.dir.join(&name), MAX_FILE_BYTES, Links::Refuse) {
      Ok((bytes, _)) => bytes,
      Err(ReadError::TooLarge { .. }) => Vec::new(),
      Err(_) => return None,
    };
    let stored = Stored::decode(&bytes, id);
    if stored.is_none() {
      files::remove_ours(&self.dir, &name);
    }
    stored
  }

  /// Compresses with `dictionary` (of id `id`) from now on, and reads with it.
  fn ready(&self, id: u32, dictionary: &[u8]) -> Encoder {
    self.decoders.write().entry(id).or_insert_with(|| Arc::new(DecoderDictionary::copy(dictionary)));
    Encoder::Ready { id, dictionary: Arc::new(EncoderDictionary::copy(dictionary, LEVEL)), left: USES }
  }

  /// Trains a dictionary on `samples` (less those the forgotten list names)
  /// and writes its file; its id and bytes. `None`: too little to train on,
  /// a training or a write that failed, or a sample forgotten meanwhile.
  fn train(&self, samples: Samples, agent_dir: Option<&Path>) -> Option<(u32, Vec<u8>)> {
    let forgotten = |agent_dir: &Path| crate::forgotten::load(agent_dir).ok();
    let list = match agent_dir {
      Some(agent_dir) => Some(forgotten(agent_dir)?),
      None => None,
    };
    let names = |list: &crate::forgotten::List, source: &Path, session_id: &str| {
      list.covers(Some(session_id), source) || list.entries.contains_key(session_id)
    };
    let samples = match &list {
      Some(list) => samples.without(|source, id| names(list, source, id)),
      None => samples,
    };
    let dictionary = train_fast_cover(&samples)?;
    let id = zstd::zstd_safe::get_dict_id_from_dict(&dictionary)?.get();
    let sources = samples.sources.iter().map(|(source, _)| record::base_hash(source)).collect();
    let name = file_name(id);
    // Never replaced: an id already taken (the same samples, or zstd's 31-bit
    // ids colliding) trains nothing here.
    if self.dir.join(&name).exists() {
      return None;
    }
    super::ownership::ensure_dir(&self.dir).ok()?;
    let stored = Stored { sources, dictionary };
    files::write_atomic(&self.dir.join(&name), &stored.encode()).ok()?;
    let forgotten_meanwhile = agent_dir
      .map(|agent_dir| {
        forgotten(agent_dir).is_none_or(|list| samples.sources.iter().any(|(s, id)| names(&list, s, id)))
      })
      .unwrap_or(false);
    if forgotten_meanwhile {
      files::remove_ours(&self.dir, &name);
      return None;
    }
    Some((id, stored.dictionary))
  }

  /// Retires every dictionary of this version among `names` trained on a
  /// body of `source`, and drops its bodies from the samples: new bodies
  /// are compressed without them. Their ids: the caller compresses their
  /// records again, then removes them ([`BodyDictionaries::remove`]).
  pub fn retire(&self, names: &Names, source: &Path) -> Vec<u32> {
    let hash = record::base_hash(source);
    let retired: Vec<u32> =
      ids_in(names).filter(|&id| self.read(id).is_some_and(|stored| stored.sources.contains(&hash))).collect();
    let mut state = self.state.lock();
    state.encoder = match std::mem::take(&mut state.encoder) {
      Encoder::Sampling(samples) => Encoder::Sampling(samples.without(|s, _| s == source)),
      Encoder::Found(id) | Encoder::Ready { id, .. } if retired.contains(&id) => Encoder::Sampling(Samples::default()),
      // A training under way finds its state changed and keeps nothing.
      Encoder::Training => Encoder::Sampling(Samples::default()),
      kept => kept,
    };
    retired
  }

  /// Tests: what a fresh process knows (nothing).
  #[cfg(test)]
  pub fn forget(&self) {
    self.decoders.write().clear();
    *self.state.lock() = State::default();
  }

  /// Removes the retired dictionaries `ids`: their files, and this process's copies.
  pub fn remove(&self, ids: &[u32]) {
    for &id in ids {
      self.decoders.write().remove(&id);
      files::remove_ours(&self.dir, &file_name(id));
    }
  }

  /// Takes the samples for a training when `plain` fills them.
  fn sample(&self, plain: &[u8], source: &Path, session_id: &str) -> Option<(Samples, Option<PathBuf>)> {
    let mut state = self.state.lock();
    let Encoder::Sampling(samples) = &mut state.encoder else { return None };
    samples.push(plain, source, session_id);
    if !samples.full() {
      return None;
    }
    let Encoder::Sampling(samples) = std::mem::replace(&mut state.encoder, Encoder::Training) else {
      unreachable!("sampling")
    };
    Some((samples, state.agent_dir.clone()))
  }
}

impl Dictionaries for BodyDictionaries {
  fn for_encoding(&self, plain: &[u8], source: &Path, session_id: &str) -> Option<Arc<EncoderDictionary<'static>>> {
    {
      let mut state = self.state.lock();
      self.resolve(&mut state.encoder);
      if let Some(dictionary) = take_use(&mut state.encoder) {
        return Some(dictionary);
      }
    }
    let (samples, agent_dir) = self.sample(plain, source, session_id)?;
    let trained = self.train(samples, agent_dir.as_deref());
    let mut state = self.state.lock();
    if !matches!(state.encoder, Encoder::Training) {
      // Retired or adopted meanwhile: what was trained is not kept.
      if let Some((id, _)) = trained {
        files::remove_ours(&self.dir, &file_name(id));
      }
      return None;
    }
    state.encoder = match trained {
      Some((id, dictionary)) => self.ready(id, &dictionary),
      None => Encoder::Off,
    };
    take_use(&mut state.encoder)
  }

  fn for_decoding(&self, id: u32) -> Option<Arc<DecoderDictionary<'static>>> {
    if let Some(found) = self.decoders.read().get(&id) {
      return Some(found.clone());
    }
    let stored = self.read(id)?;
    Some(
      self.decoders.write().entry(id).or_insert_with(|| Arc::new(DecoderDictionary::copy(&stored.dictionary))).clone(),
    )
  }
}

/// The dictionary a ready encoder compresses one more body with; after its
/// last use it samples again, so the next bodies train the next dictionary.
fn take_use(encoder: &mut Encoder) -> Option<Arc<EncoderDictionary<'static>>> {
  let Encoder::Ready { dictionary, left, .. } = encoder else { return None };
  let dictionary = dictionary.clone();
  *left -= 1;
  if *left == 0 {
    *encoder = Encoder::Sampling(Samples::default());
  }
  Some(dictionary)
}

/// zstd's fastCover trainer with one parameter set (k 200, d 8, f 20,
/// accel 5: on `medium` as good as the default search, which tries eight):
/// a dictionary of up to [`CAPACITY`] bytes, a quarter of the samples at
/// most (`huge`'s 64 bodies hold 880 KB: a cap at an eighth, 105 KB, left its
/// bodies 9% larger than 128 KB did); `None` when the samples are too small
/// or the training fails.
fn train_fast_cover(samples: &Samples) -> Option<Vec<u8>> {
  let capacity = CAPACITY.min(samples.bytes.len() / 4);
  if capacity < MIN_CAPACITY {
    return None;
  }
  let mut dictionary = vec![0u8; capacity];
  let parameters = zstd_sys::ZDICT_fastCover_params_t {
    k: 200,
    d: 8,
    f: 20,
    steps: 1,
    nbThreads: 1,
    splitPoint: 1.0,
    accel: 5,
    shrinkDict: 0,
    shrinkDictMaxRegression: 0,
    zParams: zstd_sys::ZDICT_params_t { compressionLevel: LEVEL, notificationLevel: 0, dictID: 0 },
  };
  // SAFETY: the buffers are valid for the lengths given: `dictionary` for
  // `capacity` bytes, `samples.bytes` holds the sum of `samples.sizes`
  // (`Samples::push` keeps them together), and the trainer reads and writes
  // nothing else.
  let written = unsafe {
    zstd_sys::ZDICT_trainFromBuffer_fastCover(
      dictionary.as_mut_ptr().cast(),
      capacity,
      samples.bytes.as_ptr().cast(),
      samples.sizes.as_ptr(),
      samples.sizes.len() as u32,
      parameters,
    )
  };
  // SAFETY: a plain function of the code it is given.
  if unsafe { zstd_sys::ZDICT_isError(written) } != 0 {
    return None;
  }
  dictionary.truncate(written);
  Some(dictionary)
}

#[cfg(test)]
mod tests;

use super::*;
use crate::index::dir::Names;
use crate::index::record::compression::{self, Alone};

/// A body like a cold vocabulary: sorted words, most from a pool every
/// session draws on (what a dictionary learns), some its own.
fn body(n: usize) -> Vec<u8> {
  let word = |seed: u64| {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..4 + seed % 8)
      .map(|_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        char::from(b'a' + (x % 26) as u8)
      })
      .collect::<String>()
  };
  let mut words: Vec<String> = (0..400).map(|i| word(((i * 7 + n * 13) % 2_000) as u64)).collect();
  words.extend((0..40).map(|i| word(1_000_000 + (n * 40 + i) as u64)));
  words.sort();
  words.dedup();
  words.join("\n").into_bytes()
}

fn source(n: usize) -> PathBuf {
  PathBuf::from(format!("/sessions/--p--/s{n}.jsonl"))
}

/// Feeds bodies 0, 1, … until one is compressed with a dictionary; that
/// dictionary's id and how many bodies it took.
fn train(dictionaries: &BodyDictionaries) -> (u32, usize) {
  train_from(dictionaries, 0)
}

/// As [`train`], from body `start` on.
fn train_from(dictionaries: &BodyDictionaries, start: usize) -> (u32, usize) {
  for n in start..start + SAMPLES * 2 {
    let plain = body(n);
    if let Some(dictionary) = dictionaries.for_encoding(&plain, &source(n), &format!("id{n}")) {
      let frame = compression::compress(&plain, Some(&dictionary));
      return (compression::dictionary_of(&frame).expect("the frame names its dictionary"), n + 1 - start);
    }
  }
  panic!("never trained");
}

fn names(dir: &Path) -> Names {
  Names::sorted(std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect())
}

/// The dictionary files in `dir`.
fn files_in(dir: &Path) -> Vec<String> {
  names(dir).iter().filter(|name| name.starts_with(IndexFile::BODY_DICTIONARY_PREFIX)).map(String::from).collect()
}

fn adopted(dir: &Path, agent: &Path) -> BodyDictionaries {
  let dictionaries = BodyDictionaries::new(dir.to_path_buf());
  dictionaries.adopt(&names(dir), agent);
  dictionaries
}

/// The first [`SAMPLES`] bodies train a dictionary, written under its id
/// before any body uses it; a frame compressed with it is smaller and is
/// read back by another process that only knows the dir.
#[test]
fn the_first_bodies_train_a_dictionary_another_process_reads_by_its_id() {
  let (dir, agent) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
  let dictionaries = adopted(dir.path(), agent.path());
  let (id, fed) = train(&dictionaries);
  assert_eq!(fed, SAMPLES, "trained on the body that filled the samples");
  assert_eq!(files_in(dir.path()), [file_name(id)]);
  let plain = body(1_000);
  let with = dictionaries.for_encoding(&plain, &source(1_000), "id").expect("ready");
  let frame = compression::compress(&plain, Some(&with));
  let alone = compression::compress(&plain, None);
  assert!(frame.len() * 2 < alone.len(), "{} bytes with the dictionary, {} alone", frame.len(), alone.len());
  let other = BodyDictionaries::new(dir.path().to_path_buf());
  assert_eq!(compression::decompress(&frame, &other, MAX).unwrap(), plain);
  assert!(compression::decompress(&frame, &Alone, MAX).is_err(), "a frame that names a dictionary needs it");
  assert_eq!(compression::decompress(&alone, &other, MAX).unwrap(), plain);
}

/// A process that finds a dictionary uses it at once and trains none; one
/// told nothing yet about the dir compresses alone and keeps no sample.
#[test]
fn a_process_uses_the_dictionary_it_finds() {
  let (dir, agent) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
  let (id, _) = train(&adopted(dir.path(), agent.path()));
  let later = adopted(dir.path(), agent.path());
  assert!(later.decoders.read().is_empty(), "nothing read until a body is compressed");
  let dictionary = later.for_encoding(&body(0), &source(0), "id0").expect("the dir's dictionary");
  let frame = compression::compress(&body(0), Some(&dictionary));
  assert_eq!(compression::dictionary_of(&frame), Some(id));
  assert_eq!(files_in(dir.path()), [file_name(id)], "nothing trained");
  let untold = BodyDictionaries::new(tempfile::tempdir().unwrap().path().to_path_buf());
  assert!((0..SAMPLES * 2).all(|n| untold.for_encoding(&body(n), &source(n), "id").is_none()));
}

/// A damaged dictionary file is removed and reads nothing (its bodies are
/// unreadable, so their records are rebuilt); a process whose dictionary is
/// gone trains another.
#[test]
fn a_damaged_or_missing_dictionary_is_replaced_by_a_new_one() {
  let (dir, agent) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
  let dictionaries = adopted(dir.path(), agent.path());
  let (id, _) = train(&dictionaries);
  let path = dir.path().join(file_name(id));
  let mut bytes = std::fs::read(&path).unwrap();
  let last = bytes.len() - 1;
  bytes[last] ^= 1;
  std::fs::write(&path, &bytes).unwrap();
  assert!(BodyDictionaries::new(dir.path().to_path_buf()).for_decoding(id).is_none());
  assert!(!path.exists(), "a damaged dictionary is removed");
  dictionaries.adopt(&names(dir.path()), agent.path());
  assert!(dictionaries.for_encoding(&body(0), &source(0), "id0").is_none(), "sampling again");
  let (again, _) = train(&dictionaries);
  assert!(dir.path().join(file_name(again)).is_file());
}

/// A foreign file under a dictionary's name is neither read nor removed.
#[test]
fn a_foreign_file_named_like_a_dictionary_is_left_alone() {
  let (dir, agent) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
  let name = file_name(0x1234_5678);
  std::fs::write(dir.path().join(&name), b"not ours").unwrap();
  let dictionaries = adopted(dir.path(), agent.path());
  assert!(dictionaries.for_decoding(0x1234_5678).is_none());
  assert_eq!(std::fs::read(dir.path().join(&name)).unwrap(), b"not ours");
}

/// Retiring by a sample's session names the dictionary and starts sampling
/// again; a session it was not trained on retires nothing. Samples of a
/// retired session are not trained on.
#[test]
fn a_dictionary_is_retired_by_the_sessions_it_was_trained_on() {
  let (dir, agent) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
  let dictionaries = adopted(dir.path(), agent.path());
  let (id, _) = train(&dictionaries);
  let listed = names(dir.path());
  assert!(dictionaries.retire(&listed, &source(SAMPLES + 5)).is_empty());
  assert_eq!(dictionaries.retire(&listed, &source(3)), [id]);
  dictionaries.remove(&[id]);
  assert!(files_in(dir.path()).is_empty());
  assert!(dictionaries.for_decoding(id).is_none());
  // Sampling again: a retire drops that session's samples before they train.
  let feed = |n: usize| dictionaries.for_encoding(&body(n), &source(n), "id");
  assert!((100..100 + SAMPLES / 2).all(|n| feed(n).is_none()));
  assert!(dictionaries.retire(&Names::default(), &source(101)).is_empty());
  let trained = (200..200 + SAMPLES).find_map(|n| feed(n).map(|_| n)).expect("trained");
  assert_eq!(trained, 200 + SAMPLES / 2, "the retired session's sample was dropped");
  let again = compression::dictionary_of(&compression::compress(&body(0), feed(0).as_deref())).unwrap();
  let stored = dictionaries.read(again).unwrap();
  assert!(!stored.sources.contains(&record::base_hash(&source(101))));
  assert!(stored.sources.contains(&record::base_hash(&source(100))));
}

/// A training leaves out the samples of sessions the forgotten list names
/// (whole, or one of their entries).
#[test]
fn forgotten_sessions_are_not_trained_on() {
  let (dir, agent) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
  let fabric = agent.path().join("fabric");
  std::fs::create_dir_all(&fabric).unwrap();
  let list = serde_json::json!({"version": 2, "sessions": [
    {"sessionId": "id-whole", "file": source(2).to_string_lossy(), "forgottenAt": 1},
    {"sessionId": "id5", "file": source(5).to_string_lossy(), "entryId": "e1", "forgottenAt": 1},
  ]});
  std::fs::write(fabric.join(crate::forgotten::FILE_NAME), list.to_string()).unwrap();
  let dictionaries = adopted(dir.path(), agent.path());
  let (id, _) = train(&dictionaries);
  let stored = dictionaries.read(id).unwrap();
  assert_eq!(stored.sources.len(), SAMPLES - 2);
  for (n, kept) in [(2, false), (5, false), (4, true)] {
    assert_eq!(stored.sources.contains(&record::base_hash(&source(n))), kept, "session {n}");
  }
}

/// Dictionary files are parsed back exactly and refused when cut or edited.
#[test]
fn a_dictionary_file_reads_back_only_when_intact() {
  let samples = (0..SAMPLES).fold(Samples::default(), |mut samples, n| {
    samples.push(&body(n), &source(n), "id");
    samples
  });
  let dictionary = train_fast_cover(&samples).expect("trained");
  let id = zstd::zstd_safe::get_dict_id_from_dict(&dictionary).unwrap().get();
  let bytes = Stored { sources: vec![7, 9], dictionary: dictionary.clone() }.encode();
  let stored = Stored::decode(&bytes, id).expect("intact");
  assert_eq!((stored.sources, stored.dictionary), (vec![7, 9], dictionary));
  assert!(Stored::decode(&bytes, id ^ 1).is_none(), "another id");
  for cut in [0, 8, 16, 20, bytes.len() - 1] {
    assert!(Stored::decode(&bytes[..cut], id).is_none(), "cut at {cut}");
  }
  let mut edited = bytes.clone();
  edited[20] ^= 0x40;
  assert!(Stored::decode(&edited, id).is_none());
  let tiny = (0..SAMPLES).fold(Samples::default(), |mut samples, n| {
    samples.push(format!("w{n}").as_bytes(), &source(n), "id");
    samples
  });
  assert!(train_fast_cover(&tiny).is_none(), "too little to train on");
}

/// A dictionary compresses [`USES`] bodies in a process; the bodies after
/// them train the next one, so a retire rewrites a bounded number of records.
#[test]
fn each_dictionary_compresses_a_bounded_generation_of_bodies() {
  let (dir, agent) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
  let dictionaries = adopted(dir.path(), agent.path());
  let (first, _) = train(&dictionaries);
  let uses = (1..USES).filter(|&n| dictionaries.for_encoding(&body(n), &source(n), "id").is_some()).count();
  assert_eq!(uses + 1, USES, "the body that trained it was the first use");
  let (second, fed) = train_from(&dictionaries, USES);
  assert_eq!(fed, SAMPLES);
  assert_ne!(first, second);
  assert_eq!(files_in(dir.path()).len(), 2);
  let later = BodyDictionaries::new(dir.path().to_path_buf());
  assert!(later.for_decoding(first).is_some() && later.for_decoding(second).is_some());
}

const MAX: u64 = crate::config::MAX_COLD_CACHE_BYTES;

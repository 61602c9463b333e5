use super::read::COLD_HEAD_READ;
use super::*;
use crate::config::MAX_COLD_CACHE_BYTES;
use crate::index::dir::IndexFile;
use crate::index::IndexCoverage;
use crate::session::entry::Normalized;
use compression::Alone;
use std::fs;
use std::path::{Path, PathBuf};

fn record() -> CacheRecord {
  CacheRecord {
    cache_version: CACHE_VERSION,
    file: "/a/b.jsonl".into(),
    branches: Branches::Active,
    lineage_fingerprint: Hash256::from_hex(&"f".repeat(64)).unwrap(),
    policy: "p".into(),
    source_hash: Hash256::default(),
    mtime: 1.0,
    size: 1000,
    stamp: StatStamp { dev: 1, ino: 2, size: 1000, mtime_ns: 3, ctime_ns: 4 },
    verified_ns: 5,
    cache_bytes: 0,
    cache_source_ratio: 0.0,
    details: Deferred::new(Details { session_id: "s".into(), cwd: "/a".into(), titles: Default::default() }),
    body: Body::Hot(Box::new(HotShard::build(Normalized::default(), None))),
  }
}

#[test]
fn a_hot_record_whose_entries_do_not_decode_is_unreadable() {
  let mut entry = crate::session::entry::Entry { text: "kept".into(), ..Default::default() };
  entry.typed.role = Some("user".into());
  let shard = HotShard::build(Normalized { entries: vec![entry], ..Normalized::default() }, None);
  let read = CacheRecord { body: Body::Hot(Box::new(shard.with_undecodable_entries())), ..record() };
  assert!(!read.content_unreadable(), "not known before the entries are needed");
  let Body::Hot(shard) = &read.body else { unreachable!() };
  assert_eq!(shard.entries().len(), 1);
  assert!(read.content_unreadable(), "rebuilt by the next synchronization");
}

#[test]
fn encoding_round_trips_and_knows_its_size() {
  let mut original = record();
  let bytes = original.encode(&Alone).unwrap();
  assert_eq!(original.cache_bytes, bytes.len() as u64);
  assert_eq!(original.cache_source_ratio, (bytes.len() as f64 / 1000.0 * 1e6).round() / 1e6);
  assert_eq!(CacheRecord::decode(&bytes, &Alone, MAX_COLD_CACHE_BYTES), Some(original.clone()));
  assert_eq!(
    CacheRecord { cache_bytes: 0, cache_source_ratio: 0.0, ..original.clone() }.encode_shared(&Alone).unwrap(),
    bytes
  );
  assert_eq!(CacheRecord::decode(&bytes[..bytes.len() - 1], &Alone, MAX_COLD_CACHE_BYTES), None, "torn");
  assert_eq!(CacheRecord::decode(b"{\"cacheVersion\":5}", &Alone, MAX_COLD_CACHE_BYTES), None, "foreign");
  let _ = IndexCoverage::default();
}

#[test]
fn a_heads_source_file_is_read_from_its_first_fields() {
  let head = record().head_bytes();
  assert_eq!(file_of_head(&head), Some("/a/b.jsonl"));
  let other = CacheRecord { cache_version: CACHE_VERSION + 1, ..record() }.head_bytes();
  assert_eq!(file_of_head(&other), None, "another version's layout is not read");
  assert_eq!(file_of_head(&head[..3]), None);
}

#[test]
fn a_cold_head_longer_than_the_first_read_is_read_whole() {
  let entries = (0..3)
    .map(|i| crate::session::entry::Entry {
      index: i,
      text: ["alpha", "beta", "gamma"][i].into(),
      ..Default::default()
    })
    .collect();
  let mut digest =
    ColdDigest::build(&Normalized { entries, ..Default::default() }, 1 << 20, crate::index::record::cold::Echoes::Kept);
  let long =
    |i: usize| crate::session::entry::Typed { tool: Some(format!("{}{i}", "deep".repeat(40))), ..Default::default() };
  let kinds: Vec<_> = (0..50).map(|i| (crate::index::record::kind::Kind::intern(long(i)), 1)).collect();
  let tip = digest.tip().cloned();
  digest.details = Deferred::new(cold::ColdDetails { kinds: crate::index::record::kind::HeadKinds::of(&kinds), tip });
  let mut original = CacheRecord { body: Body::Cold(digest), ..record() };
  let bytes = original.encode(&Alone).unwrap();
  let head_len = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as u64;
  assert!(head_len > COLD_HEAD_READ, "the head ({head_len} bytes) needs the second read");
  let dir = tempfile::tempdir().unwrap();
  let path = dir.path().join("r.cold");
  fs::write(&path, &bytes).unwrap();
  let opened = open(&path, Tier::Cold, 1 << 20, &alone()).unwrap().expect("an intact record");
  let (Body::Cold(read), Body::Cold(written)) = (&opened.body, &original.body) else { panic!("cold") };
  assert_eq!(read.kinds(), written.kinds());
  assert_eq!(read.content().unwrap().vocabulary.to_vec(), ["alpha", "beta", "gamma"]);
  // Cut inside the head: neither read gives an intact head.
  fs::write(&path, &bytes[..head_len as usize]).unwrap();
  assert!(open(&path, Tier::Cold, 1 << 20, &alone()).unwrap().is_none());
}

#[test]
fn every_single_bit_flip_is_detected() {
  let mut original = record();
  let bytes = original.encode(&Alone).unwrap();
  for position in 0..bytes.len() {
    for bit in 0..8 {
      let mut flipped = bytes.clone();
      flipped[position] ^= 1 << bit;
      assert_eq!(CacheRecord::decode(&flipped, &Alone, MAX_COLD_CACHE_BYTES), None, "bit {bit} of byte {position}");
    }
  }
  // A same-length edit of a string field (what postcard alone accepts).
  let mut same_length = bytes.clone();
  let at = bytes.windows(10).position(|w| w == b"/a/b.jsonl").unwrap();
  same_length[at..at + 10].copy_from_slice(b"/a/c.jsonl");
  assert_eq!(CacheRecord::decode(&same_length, &Alone, MAX_COLD_CACHE_BYTES), None);
}

#[test]
fn names_identify_source_mode_and_tier() {
  let name = file_name(Path::new("/x/2026 a:b.jsonl"), Branches::All, Tier::Cold);
  assert!(name.ends_with("-2026_a_b.jsonl.all.cold"), "{name}");
  let base = base_name(Path::new("/x/2026 a:b.jsonl"));
  assert_eq!(IndexFile::record_base(&name, Branches::All, Tier::Cold), Some(base.as_str()));
  assert_eq!(IndexFile::parse(&name).and_then(|f| f.record_hash()), Some(&base[..16]));
}

/// Slots are named from the source path, a record from its `file`: the
/// same name as long as `file` is the path's lossy spelling, as built
/// records carry it, even for a path that is not UTF-8.
#[test]
fn a_path_and_its_lossy_spelling_name_the_same_record() {
  let mut paths = vec![PathBuf::from("/x/2026 a:b.jsonl"), PathBuf::from("/d/é ü\u{fffd}/s ß.jsonl")];
  #[cfg(unix)]
  {
    use std::os::unix::ffi::OsStrExt;
    paths.push(PathBuf::from(std::ffi::OsStr::from_bytes(b"/d\xff\xfe/s\xc3x\xff\xffy.jsonl")));
  }
  for path in &paths {
    let lossy = path.to_string_lossy().into_owned();
    for (branches, tier) in [(Branches::Active, Tier::Hot), (Branches::All, Tier::Cold)] {
      assert_eq!(file_name(Path::new(&lossy), branches, tier), file_name(path, branches, tier), "{path:?}");
    }
  }
}

/// A cold digest over `words` repeated `times` (a body that compresses well).
fn cold_record(words: usize, times: usize) -> CacheRecord {
  let text = (0..words).map(|w| format!("term{w}")).collect::<Vec<_>>().join(" ");
  let entries =
    (0..times).map(|i| crate::session::entry::Entry { index: i, text: text.clone(), ..Default::default() }).collect();
  let echoes = crate::index::record::cold::Echoes::Kept;
  let digest = ColdDigest::build(&Normalized { entries, ..Default::default() }, 1 << 20, echoes);
  CacheRecord { body: Body::Cold(digest), ..record() }
}

/// A cold body is stored as one zstd frame: smaller than its plain length
/// (what `maxColdCacheBytes` caps), decoded back to the same content, and a
/// head-first read loads the same content from the file.
#[test]
fn a_cold_body_is_compressed_and_reads_back_the_same() {
  let mut original = cold_record(2_000, 40);
  let plain = original.plain_len().unwrap();
  let bytes = original.encode(&Alone).unwrap();
  assert!((bytes.len() as u64) * 2 < plain, "{} bytes compressed, {plain} plain", bytes.len());
  let decoded = CacheRecord::decode(&bytes, &Alone, MAX_COLD_CACHE_BYTES).expect("an intact record");
  let (Body::Cold(read), Body::Cold(written)) = (&decoded.body, &original.body) else { panic!("cold") };
  assert_eq!(read.content().unwrap(), written.content().unwrap());
  let dir = tempfile::tempdir().unwrap();
  let path = dir.path().join("r.cold");
  fs::write(&path, &bytes).unwrap();
  let opened = open(&path, Tier::Cold, bytes.len() as u64, &alone()).unwrap().expect("an intact record");
  let Body::Cold(lazy) = &opened.body else { panic!("cold") };
  assert_eq!(lazy.content().unwrap(), written.content().unwrap());
  let plain_body = postcard::to_allocvec(written.content().unwrap()).unwrap();
  assert!(readable_bytes(&bytes, &Alone).ends_with(&plain_body), "tests can look into it");
}

/// A frame that declares more than the largest `maxColdCacheBytes` is
/// refused before anything is allocated for it; a damaged frame is
/// unreadable, never a panic.
#[test]
fn a_cold_body_never_decompresses_past_the_largest_setting() {
  let huge = vec![0u8; (crate::config::MAX_COLD_CACHE_BYTES + 1) as usize];
  let frame = zstd::bulk::compress(&huge, 1).unwrap();
  drop(huge);
  assert_eq!(frame::decode_cold_body(&frame, &Alone), Err(crate::index::record::cold::Unreadable));
  let content = cold_record(10, 1);
  let Body::Cold(digest) = &content.body else { panic!("cold") };
  let plain = postcard::to_allocvec(digest.content().unwrap()).unwrap();
  let good = zstd::bulk::compress(&plain, 1).unwrap();
  assert_eq!(&frame::decode_cold_body(&good, &Alone).unwrap(), digest.content().unwrap());
  for cut in [0, 4, good.len() / 2, good.len() - 1] {
    assert!(frame::decode_cold_body(&good[..cut], &Alone).is_err(), "cut at {cut}");
  }
}

/// No dictionary, as records read it.
fn alone() -> std::sync::Arc<Alone> {
  std::sync::Arc::new(Alone)
}

/// A hot record's entries (and its posting lists) are one zstd frame each:
/// the record is smaller than its plain entries, reads back to the same
/// shard, and is refused (rebuilt) when its entries would decompress to
/// more than its file may take.
#[test]
fn hot_entries_are_compressed_and_bounded_by_the_read_limit() {
  let text = "the deploy failed on the staging cluster because the migration lock was held ".repeat(20);
  let entries: Vec<crate::session::entry::Entry> = (0..200)
    .map(|i| crate::session::entry::Entry { index: i, text: format!("{text} {i}"), ..Default::default() })
    .collect();
  let shard = HotShard::build(Normalized { entries, ..Normalized::default() }, None);
  let entries_len = postcard::to_allocvec(shard.entries()).unwrap().len() as u64;
  let mut original = CacheRecord { body: Body::Hot(Box::new(shard)), ..record() };
  let bytes = original.encode(&Alone).unwrap();
  assert!((bytes.len() as u64) * 4 < entries_len, "{} bytes, {entries_len} of entries", bytes.len());
  let decoded = CacheRecord::decode(&bytes, &Alone, entries_len).expect("within its limit");
  assert_eq!(decoded, original);
  assert_eq!(CacheRecord::decode(&bytes, &Alone, entries_len - 1), None, "past its limit");
  let dir = tempfile::tempdir().unwrap();
  let path = dir.path().join("r.hot");
  fs::write(&path, &bytes).unwrap();
  let opened = open(&path, Tier::Hot, entries_len, &alone()).unwrap().expect("an intact record");
  assert_eq!(opened, original);
  assert_eq!(open(&path, Tier::Hot, bytes.len() as u64, &alone()).unwrap(), None, "its entries are larger than that");
  let Body::Hot(written) = &original.body else { unreachable!() };
  let readable = readable_bytes(&bytes, &Alone);
  assert!(readable.ends_with(&postcard::to_allocvec(written.entries()).unwrap()), "tests can look into it");
}

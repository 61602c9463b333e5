//! The builder alone: records from bytes in memory, no file, no index.

use super::*;
use crate::session::lineage::Branches;
use crate::session::source::{sha256_hex, StatStamp};
use crate::testing::CWD;
use serde_json::json;
use std::path::PathBuf;

/// A session of `texts`, user and assistant in turn, each the child of the last.
fn session(id: &str, texts: &[&str]) -> String {
  let header = json!({"type": "session", "version": 3, "id": id, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": CWD});
  let mut out = format!("{header}\n");
  for (i, text) in texts.iter().enumerate() {
    out.push_str(&entry(id, i, text));
  }
  out
}

fn entry(id: &str, i: usize, text: &str) -> String {
  let parent = (i > 0).then(|| format!("{id}-{}", i - 1));
  let role = if i.is_multiple_of(2) { "user" } else { "assistant" };
  let entry = json!({"type": "message", "id": format!("{id}-{i}"), "parentId": parent,
    "timestamp": "2026-01-01T00:00:01.000Z", "message": {"role": role, "content": text}});
  format!("{entry}\n")
}

/// `bytes` as a read of one file (inode 7) at `read_ns`, changed at `ctime_ns`.
fn read(bytes: &str, ctime_ns: i128, read_ns: i128) -> SourceFile {
  let bytes = bytes.as_bytes().to_vec();
  let stamp = StatStamp { dev: 1, ino: 7, size: bytes.len() as u64, mtime_ns: ctime_ns, ctime_ns };
  let sha256 = sha256_hex(&bytes);
  SourceFile { path: PathBuf::from("/s/a.jsonl"), bytes, stamp, sha256, prefix_sha256: None, read_ns }
}

fn config(memory: serde_json::Value) -> Config {
  Config::from_json(Some(&memory)).unwrap()
}

fn recipe(config: &Config, tier: Tier) -> Recipe<'_> {
  Recipe { config, tier, branches: Branches::Active, live: None, forgotten: Box::leak(Box::default()) }
}

fn hot(record: &CacheRecord) -> &HotShard {
  match &record.body {
    Body::Hot(shard) => shard,
    Body::Cold(_) => panic!("a cold record"),
  }
}

fn texts(record: &CacheRecord) -> Vec<&str> {
  hot(record).entries().iter().map(|e| e.text.as_str()).collect()
}

#[test]
fn a_hot_record_is_parsed_from_the_whole_source() {
  let config = config(json!({}));
  let text = session("s", &["hello world", "hi there"]);
  let built = build(&recipe(&config, Tier::Hot), &read(&text, 10, 20), None).unwrap();
  assert_eq!((built.made, built.fits), (Made::Parsed, true));
  let record = &built.record;
  assert_eq!((record.session_id(), record.cwd(), record.file.as_str()), ("s", CWD, "/s/a.jsonl"));
  assert_eq!((record.size, record.verified_ns, record.cache_version), (text.len() as u64, 20, CACHE_VERSION));
  assert_eq!(record.source_hash, sha256_hex(text.as_bytes()));
  assert_eq!(record.policy, policy(&config, Tier::Hot, Branches::Active));
  assert_eq!(texts(record), ["hello world", "hi there"]);
  assert_eq!(hot(record).postings.get("hello"), &[(0, 1)]);
  assert_eq!(hot(record).resume.as_ref().unwrap().complete_len, text.len() as u64);
  assert_eq!(resume_offset(Some(record), Tier::Hot), Some(text.len()));
  assert_eq!(resume_offset(Some(record), Tier::Cold), None);
}

#[test]
fn an_append_resumes_the_prior_hot_record_and_equals_a_full_parse() {
  let config = config(json!({}));
  let first = session("s", &["hello world"]);
  let prior = build(&recipe(&config, Tier::Hot), &read(&first, 10, 20), None).unwrap().record;
  let grown = format!("{first}{}", entry("s", 1, "appended words"));
  let resumed = build(&recipe(&config, Tier::Hot), &read(&grown, 30, 40), Some(&prior)).unwrap();
  assert_eq!(resumed.made, Made::Resumed);
  assert_eq!(texts(&resumed.record), ["hello world", "appended words"]);
  let whole = build(&recipe(&config, Tier::Hot), &read(&grown, 30, 40), None).unwrap();
  assert_eq!(whole.made, Made::Parsed);
  assert_eq!(resumed.record, whole.record, "the same record as a parse of the whole file");
}

#[test]
fn an_append_to_another_file_or_tier_or_policy_is_parsed_in_full() {
  let hot_config = config(json!({}));
  let first = session("s", &["hello world"]);
  let prior = build(&recipe(&hot_config, Tier::Hot), &read(&first, 10, 20), None).unwrap().record;
  let grown = read(&format!("{first}{}", entry("s", 1, "more")), 30, 40);
  // Another inode at the same path: a replaced file, not an append.
  let replaced = SourceFile { stamp: StatStamp { ino: 8, ..grown.stamp }, ..grown.clone() };
  assert_eq!(build(&recipe(&hot_config, Tier::Hot), &replaced, Some(&prior)).unwrap().made, Made::Parsed);
  // Another entry cut: another policy.
  let cut = config(json!({"maxEntryChars": 100}));
  assert_eq!(build(&recipe(&cut, Tier::Hot), &grown, Some(&prior)).unwrap().made, Made::Parsed);
  // The session moved to the cold tier.
  let cold = build(&recipe(&hot_config, Tier::Cold), &grown, Some(&prior)).unwrap();
  assert_eq!((cold.made, cold.record.tier()), (Made::Parsed, Tier::Cold));
  // The prefix was rewritten under the same inode.
  let edited = read(&format!("{}{}", session("s", &["jello world"]), entry("s", 1, "more")), 30, 40);
  assert_eq!(build(&recipe(&hot_config, Tier::Hot), &edited, Some(&prior)).unwrap().made, Made::Parsed);
}

#[test]
fn the_same_bytes_under_a_new_stamp_are_restamped_unless_the_session_is_live() {
  let config = config(json!({}));
  let text = session("s", &["hello world"]);
  let prior = build(&recipe(&config, Tier::Cold), &read(&text, 10, 20), None).unwrap().record;
  let touched = read(&text, 50, 60);
  let restamped = build(&recipe(&config, Tier::Cold), &touched, Some(&prior)).unwrap();
  assert_eq!(restamped.made, Made::Restamped);
  assert_eq!((restamped.record.stamp, restamped.record.verified_ns), (touched.stamp, 60));
  assert_eq!(restamped.record.body, prior.body);
  assert_eq!(CacheRecord { stamp: prior.stamp, verified_ns: 20, mtime: prior.mtime, ..restamped.record }, prior);
  // Pi's live branch may select other entries from the same bytes.
  let branch = LiveBranch { leaf_id: Some("s-0".into()), ids: vec!["s-0".into()] };
  let live = Recipe { live: Some(&branch), ..recipe(&config, Tier::Cold) };
  assert_eq!(build(&live, &touched, Some(&prior)).unwrap().made, Made::Parsed);
}

#[test]
fn a_cold_digest_holds_the_vocabulary_and_one_over_the_cap_must_not_be_written() {
  let text = session("s", &["hello world", "hi"]);
  let roomy = config(json!({}));
  let built = build(&recipe(&roomy, Tier::Cold), &read(&text, 10, 20), None).unwrap();
  let Body::Cold(digest) = &built.record.body else { panic!("cold") };
  assert_eq!(digest.content().unwrap().vocabulary.to_vec(), ["hello", "hi", "world"]);
  assert_eq!((built.made, built.fits, digest.entry_count), (Made::Parsed, true, 2));
  // Below what settings allow (512): the builder takes any cap.
  let tiny = Config { max_cold_cache_bytes: 1, ..roomy.clone() };
  let over = build(&recipe(&tiny, Tier::Cold), &read(&text, 10, 20), None).unwrap();
  assert!(!over.fits, "not even the empty digest fits one byte");
  assert_eq!(over.record.session_id(), "s", "it still answers");
}

#[test]
fn a_cold_digest_that_fits_as_built_comes_with_the_body_it_is_written_from() {
  use crate::index::record::compression::Alone;
  let text = session("s", &["hello world", "hi", "and a third entry"]);
  let roomy = config(json!({}));
  let built = build(&recipe(&roomy, Tier::Cold), &read(&text, 10, 20), None).unwrap();
  let plain = built.plain.clone().expect("it fit as built");
  assert_eq!(plain, built.record.plain_body().unwrap());
  let (mut encoded, mut reused) = (built.record.clone(), built.record.clone());
  assert_eq!(reused.encode_plain(plain, &Alone), encoded.encode(&Alone).unwrap());
  // Cut to fit: the fit check's bytes were the uncut body's, not the one written.
  // (The cap is in the record's policy: a smaller one shortens the head by a few bytes.)
  let cap = built.record.clone().plain_len().unwrap() - 30;
  let cut =
    build(&recipe(&Config { max_cold_cache_bytes: cap, ..roomy.clone() }, Tier::Cold), &read(&text, 10, 20), None);
  let cut = cut.unwrap();
  assert!(cut.fits && cut.plain.is_none());
  assert!(cut.record.clone().plain_len().unwrap() <= cap);
  let hot = build(&recipe(&roomy, Tier::Hot), &read(&text, 10, 20), None).unwrap();
  assert!(hot.plain.is_none(), "a hot body has no fit check");
}

#[test]
fn bytes_that_are_no_session_are_unavailable() {
  let config = config(json!({}));
  let built = build(&recipe(&config, Tier::Hot), &read("not json\n", 10, 20), None);
  assert_eq!(built.map(|b| b.made).unwrap_err(), Reason::SourceUnavailable);
}

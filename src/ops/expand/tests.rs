use super::*;
use crate::config::Config;
use crate::ops::contract::MAX_ENVELOPE_CHARS;
use crate::text::{json_len, utf16_len};
use serde_json::json;
use std::fs;
use std::path::PathBuf;

struct Fixture {
  _dir: tempfile::TempDir,
  engine: Engine,
  project: PathBuf,
}

const CWD: &str = "/home/u/proj";

fn header(id: &str) -> String {
  format!("{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"{CWD}\"}}\n")
}

fn user(id: &str, parent: Option<&str>, text: &str) -> String {
  let parent = parent.map(|p| format!("\"{p}\"")).unwrap_or("null".into());
  let message = json!({"role": "user", "content": text, "timestamp": 1});
  format!("{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":{message}}}\n")
}

fn fixture() -> Fixture {
  let dir = tempfile::tempdir().unwrap();
  let agent = dir.path().join("agent");
  let project = agent.join("sessions").join(crate::session::discover::encode_cwd(CWD));
  fs::create_dir_all(&project).unwrap();
  let engine = Engine::new(Some(agent.to_str().unwrap()), Some(CWD), Config::default()).unwrap();
  Fixture { _dir: dir, engine, project }
}

impl Fixture {
  fn write(&self, name: &str, text: &str) -> String {
    let path = self.project.join(name);
    fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
  }

  fn expand(&self, args: serde_json::Value) -> ExpandPage {
    expand(&self.engine, &ExpandRequest::from_json(Some(&args)).unwrap())
  }

  /// Follows `next` to the end; returns every page.
  fn walk(&self, args: serde_json::Value) -> Vec<ExpandPage> {
    let mut pages = vec![self.expand(args)];
    while let Some(next) = pages.last().unwrap().next.clone() {
      assert!(pages.len() < 1000, "runaway paging");
      pages.push(self.expand(next.args));
    }
    pages
  }
}

/// Reassembles every entry's text from its chunks, checking continuity.
fn reassemble(pages: &[ExpandPage]) -> Vec<(usize, String)> {
  let mut out: Vec<(usize, String, usize)> = Vec::new();
  for page in pages {
    assert!(page.error.is_none(), "{:?}", page.error);
    assert!(json_len(page) <= MAX_ENVELOPE_CHARS, "page of {} chars", json_len(page));
    for chunk in &page.entries {
      let range = &chunk.text_range;
      match out.last_mut() {
        Some((index, text, end)) if *index == chunk.meta.index && range.start > 0 => {
          assert_eq!(range.start, *end, "chunks are contiguous");
          text.push_str(&chunk.text);
          *end = range.end;
        }
        _ => {
          assert_eq!(range.start, 0);
          out.push((chunk.meta.index, chunk.text.clone(), range.end));
        }
      }
    }
  }
  out.into_iter().map(|(index, text, _)| (index, text)).collect()
}

#[test]
fn no_selector_binds_integrity_only() {
  let fx = fixture();
  let file = fx.write("a_s1.jsonl", &(header("s1") + &user("u1", None, "hello")));
  let page = fx.expand(json!({"session": "s1"}));
  assert_eq!(page.session.as_deref(), Some(file.as_str()));
  assert_eq!(page.entry_count, Some(1));
  assert!(page.entries.is_empty() && page.next.is_none());
  assert_eq!(page.source_hash.as_ref().unwrap().len(), 64);
  assert_eq!(page.lineage_fingerprint.as_ref().unwrap().len(), 64);
}

#[test]
fn sessions_resolve_by_id_stem_and_path() {
  let fx = fixture();
  let file = fx.write("2026_s1.jsonl", &(header("s1") + &user("u1", None, "hello")));
  for target in ["s1", "2026_s1", file.as_str()] {
    let page = fx.expand(json!({"session": target, "indices": [0]}));
    assert_eq!(page.entries[0].text, "hello", "{target}");
    assert_eq!(page.entries[0].text_range, TextRange { start: 0, end: 5, total: 5, complete: true });
  }
  let missing = fx.expand(json!({"session": "nope"}));
  assert_eq!(missing.error.unwrap().code, "session_not_found");
}

#[test]
fn duplicate_session_ids_are_ambiguous() {
  let fx = fixture();
  fx.write("a_dup.jsonl", &(header("dup") + &user("u1", None, "one")));
  fx.write("b_dup.jsonl", &(header("dup") + &user("u1", None, "two")));
  let error = fx.expand(json!({"session": "dup"})).error.unwrap();
  assert_eq!(error.code, "ambiguous_session");
  assert_eq!(error.details["candidates"].as_array().unwrap().len(), 2);
}

#[test]
fn a_unique_id_prefix_names_its_session_and_a_shared_one_is_ambiguous() {
  let fx = fixture();
  fx.write("a.jsonl", &(header("019e9a22-a7d6-7000-8000-000000000001") + &user("u1", None, "one")));
  fx.write("b.jsonl", &(header("019e9a22-a7d6-7000-8000-000000000002") + &user("u1", None, "two")));
  fx.write("c.jsonl", &(header("019e9b00-0000-7000-8000-000000000003") + &user("u1", None, "three")));
  assert_eq!(fx.expand(json!({"session": "019e9b00", "indices": [0]})).entries[0].text, "three");
  assert_eq!(
    fx.expand(json!({"session": "019e9a22-a7d6-7000-8000-000000000002", "indices": [0]})).entries[0].text,
    "two"
  );
  let shared = fx.expand(json!({"session": "019e9a22-a7d6"})).error.unwrap();
  assert_eq!(shared.code, "ambiguous_session");
  assert_eq!(shared.details["candidates"].as_array().unwrap().len(), 2);
  // Below the minimum a prefix names nothing, even a unique one.
  assert_eq!(fx.expand(json!({"session": "019e9b0"})).error.unwrap().code, "session_not_found");
}

/// Issue 33, bug 6: paging through a huge entry cost a scan of the whole
/// text per page (threat flags and UTF-16 offsets counted from the start),
/// so a 50 MB entry took ~50 s a page. Each long entry is scanned once per
/// view now, and its pages reassemble exactly.
#[test]
fn a_huge_entry_is_scanned_once_however_many_pages_it_takes() {
  use crate::threat::flags::SCANNED_BYTES;
  use std::sync::atomic::Ordering;
  let fx = fixture();
  let unit = "a😀b雪 word ";
  let long = unit.repeat(crate::session::LONG_TEXT_BYTES / unit.len() * 2);
  fx.write("huge.jsonl", &(header("huge") + &user("u1", None, &long)));
  let before = SCANNED_BYTES.load(Ordering::Relaxed);
  let pages = fx.walk(json!({"session": "huge", "indices": [0], "maxChars": 24000}));
  let scanned = SCANNED_BYTES.load(Ordering::Relaxed) - before;
  assert!(pages.len() > 50, "{} pages", pages.len());
  // Other tests scan concurrently (hence the margin); a scan per page would be 50+ texts' worth.
  assert!(
    scanned < 10 * long.len(),
    "scanned {scanned} bytes for a {}-byte entry over {} pages",
    long.len(),
    pages.len()
  );
  assert_eq!(reassemble(&pages), vec![(0, long)]);
}

#[test]
fn long_entries_reassemble_exactly_within_the_envelope() {
  let fx = fixture();
  let long: String = (0..55_000)
    .map(|i| {
      if i % 97 == 0 {
        '😀'
      } else if i % 89 == 0 {
        '雪'
      } else {
        'a'
      }
    })
    .collect();
  fx.write(
    "a_s1.jsonl",
    &(header("s1") + &user("u0", None, "before") + &user("u1", Some("u0"), &long) + &user("u2", Some("u1"), "after")),
  );
  let pages = fx.walk(json!({"session": "s1", "entryIds": ["u1"], "before": 1, "after": 1}));
  assert!(pages.len() >= 3);
  let texts = reassemble(&pages);
  assert_eq!(texts, vec![(0, "before".to_string()), (1, long.clone()), (2, "after".to_string())]);
  let anchors: Vec<_> =
    pages.iter().flat_map(|p| &p.entries).filter(|c| c.anchor == Some(true)).map(|c| c.meta.index).collect();
  assert!(anchors.len() >= 2 && anchors.iter().all(|&i| i == 1));
  let small = fx.walk(json!({"session": "s1", "indices": [1], "maxChars": 256}));
  assert!(small.iter().all(|p| p.entries.iter().all(|c| utf16_len(&c.text) <= 256)));
  assert_eq!(reassemble(&small), vec![(1, long)]);
}

#[test]
fn metadata_heavy_entries_stay_within_the_envelope() {
  let fx = fixture();
  let paths: Vec<String> = (0..20).map(|i| format!("/{}/{i}.ts", "d".repeat(1000))).collect();
  let args: serde_json::Map<_, _> = paths.iter().enumerate().map(|(i, p)| (format!("file{i}"), json!(p))).collect();
  let message = json!({"role": "assistant", "content": [{"type": "text", "text": "x".repeat(25_000)}, {"type": "toolCall", "id": "t", "name": "multi", "arguments": args}]});
  let line = format!("{{\"type\":\"message\",\"id\":\"a1\",\"parentId\":null,\"message\":{message}}}\n");
  fx.write("a_s1.jsonl", &(header("s1") + &line));
  let pages = fx.walk(json!({"session": "s1", "indices": [0]}));
  let texts = reassemble(&pages);
  assert_eq!(texts.len(), 1);
  assert!(texts[0].1.starts_with(&"x".repeat(25_000)));
}

#[test]
fn many_entries_page_by_max_entries() {
  let fx = fixture();
  let mut text = header("s1");
  let mut parent: Option<String> = None;
  for i in 0..45 {
    text += &user(&format!("u{i}"), parent.as_deref(), &format!("message number {i}"));
    parent = Some(format!("u{i}"));
  }
  fx.write("a_s1.jsonl", &text);
  let pages = fx.walk(json!({"session": "s1", "entryRange": {"first": 0, "last": 44}}));
  assert_eq!(pages.len(), 5);
  let texts = reassemble(&pages);
  assert_eq!(texts.len(), 45);
  assert_eq!(texts[44].1, "message number 44");
  let next = pages[0].next.as_ref().unwrap();
  assert_eq!(next.args["entryRange"], json!({"first": 0, "last": 44}));
  assert_eq!(next.args["entryOffset"], json!(10));
}

#[test]
fn an_append_between_pages_keeps_the_continuation_and_a_rewrite_is_stale() {
  let fx = fixture();
  let long = "z".repeat(50_000);
  let file = fx.write("a_s1.jsonl", &(header("s1") + &user("u1", None, &long)));
  let first = fx.expand(json!({"session": "s1", "indices": [0]}));
  let next = first.next.clone().unwrap();
  assert_eq!(next.args["expectedSourceBytes"], json!(fs::metadata(&file).unwrap().len()));
  assert_eq!(next.args["expectedLineageLeafId"], json!("u1"));
  let original = fs::read_to_string(&file).unwrap();
  fs::write(&file, original.clone() + &user("u2", Some("u1"), "appended")).unwrap();
  let mut pages = vec![first];
  pages.extend(fx.walk(next.args.clone()));
  assert_eq!(reassemble(&pages), vec![(0, long.clone())], "the append did not shift the chunks");
  // A same-size rewrite of a bound byte: no content.
  fs::write(&file, original.replacen("zzz", "zzy", 1) + &user("u2", Some("u1"), "appended")).unwrap();
  let stale = fx.expand(next.args);
  let error = stale.error.unwrap();
  assert_eq!(error.code, "stale_pointer");
  assert_eq!(error.message, "Session source changed after the pointer was issued.");
  assert!(stale.entries.is_empty());
}

#[test]
fn address_errors_are_data() {
  let fx = fixture();
  let text = header("s1") + &user("a", None, "one") + &user("b", Some("a"), "two") + &user("c", Some("a"), "three");
  fx.write("a_s1.jsonl", &text);
  let off_lineage = fx.expand(json!({"session": "s1", "entryIds": ["b"]}));
  assert_eq!(off_lineage.error.unwrap().code, "address_not_found");
  let all = fx.expand(json!({"session": "s1", "entryIds": ["b"], "branches": "all"}));
  assert_eq!(all.entries[0].text, "two");
  let negative = fx.expand(json!({"session": "s1", "indices": [-1]})).error.unwrap();
  assert_eq!((negative.code.as_str(), negative.details["entryCount"].clone()), ("index_out_of_bounds", json!(2)));
  let range = fx.expand(json!({"session": "s1", "entryRange": {"first": 1, "last": 2}})).error.unwrap();
  assert_eq!(range.code, "index_out_of_bounds");
  let offset = fx.expand(json!({"session": "s1", "indices": [0], "textOffset": 99})).error.unwrap();
  assert_eq!(offset.code, "text_offset_out_of_bounds");
}

#[test]
fn duplicate_entry_ids_are_ambiguous_addresses() {
  let fx = fixture();
  fx.write("a_s1.jsonl", &(header("s1") + &user("a", None, "one") + &user("a", None, "two")));
  let error = fx.expand(json!({"session": "s1", "entryIds": ["a"], "branches": "all"})).error.unwrap();
  assert_eq!(error.code, "ambiguous_address");
  assert_eq!(error.details["matches"], json!(2));
}

#[test]
fn malformed_arguments_throw() {
  for bad in [
    json!({"indices": [0, 1], "before": 1}),
    json!({"indices": (0..101).collect::<Vec<_>>()}),
    json!({"indices": [0.5]}),
    json!({"branches": "some"}),
    json!({"maxChars": 10}),
    json!({"entryRange": {"first": 0}}),
    json!({"entryRange": {"first": 0, "last": 1}, "indices": [0]}),
    json!({"colour": "blue"}),
    json!("session"),
  ] {
    let error = ExpandRequest::from_json(Some(&bad)).unwrap_err();
    assert_eq!(error.code(), "invalid_argument", "{bad}");
  }
}

#[test]
fn live_branch_navigation_changes_the_view_and_the_fingerprint() {
  let fx = fixture();
  let file = fx.write(
    "a_s1.jsonl",
    &(header("s1") + &user("a", None, "one") + &user("b", Some("a"), "two") + &user("c", Some("a"), "three")),
  );
  let persisted = fx.expand(json!({"session": "s1", "entryRange": {"first": 0, "last": 1}}));
  assert_eq!(persisted.entries[1].text, "three");
  let live = crate::engine::Live {
    file: PathBuf::from(&file),
    branch: crate::session::lineage::LiveBranch { leaf_id: Some("b".into()), ids: vec!["a".into(), "b".into()] },
  };
  let navigated = fx.engine.with_live(Some(live));
  let request =
    ExpandRequest::from_json(Some(&json!({"session": "s1", "entryRange": {"first": 0, "last": 1}}))).unwrap();
  let page = expand(&navigated, &request);
  assert_eq!(page.entries[1].text, "two");
  assert_ne!(page.lineage_fingerprint, persisted.lineage_fingerprint);
  let bound = json!({"session": "s1", "indices": [0], "expectedLineageFingerprint": persisted.lineage_fingerprint});
  let stale = expand(&navigated, &ExpandRequest::from_json(Some(&bound)).unwrap()).error.unwrap();
  assert_eq!(stale.message, "Session active lineage changed after the pointer was issued.");
}

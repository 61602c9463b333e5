//! Expand selectors (indices, entryIds, operationAddresses, entryRange,
//! before/after, entryOffset/textOffset, maxChars/maxEntries) from any JSON
//! object against a real session: never panics; every page fits the
//! envelope, every textRange is in bounds, and following `next` advances
//! and ends.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pi_fabric_memory::config::Config;
use pi_fabric_memory::engine::Engine;
use pi_fabric_memory::ops::envelope::bounded;
use pi_fabric_memory::ops::contract::MAX_ENVELOPE_CHARS;
use pi_fabric_memory::ops::expand::{expand, ExpandRequest};
use pi_fabric_memory::text::json_len;
use serde_json::{json, Value};
use std::sync::OnceLock;

const CWD: &str = "/fuzz/proj";

/// One session with short, long (several pages), multi-byte and tool-call
/// entries, written once per process under the temp dir.
fn fixture() -> &'static (Engine, String) {
  static FIXTURE: OnceLock<(Engine, String)> = OnceLock::new();
  FIXTURE.get_or_init(|| {
    let agent = std::env::temp_dir().join(format!("pfm-fuzz-expand-{}", std::process::id()));
    let dir = agent.join("sessions").join("--fuzz-proj--");
    std::fs::create_dir_all(&dir).unwrap();
    let mut lines = vec![json!({"type":"session","version":3,"id":"fz","timestamp":"2026-01-01T00:00:00.000Z","cwd":CWD})];
    let texts = ["short", &"long words 👩‍💻 é ".repeat(3_000), "x", &"ü".repeat(70_000), "last"];
    let mut parent = Value::Null;
    for (i, text) in texts.iter().enumerate() {
      let id = format!("e{i}");
      lines.push(json!({"type":"message","id":id,"parentId":parent,"timestamp":"2026-01-01T00:00:01.000Z",
        "message":{"role":"user","content":text,"timestamp":1}}));
      parent = json!(id);
    }
    lines.push(json!({"type":"message","id":"t","parentId":parent,"timestamp":"2026-01-01T00:00:02.000Z",
      "message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.rs"}}],"timestamp":2}}));
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let path = dir.join("fz.jsonl");
    std::fs::write(&path, text).unwrap();
    let engine = Engine::new(Some(agent.to_str().unwrap()), Some(CWD), Config::default()).unwrap();
    (engine, path.to_string_lossy().into_owned())
  })
}

fuzz_target!(|data: &[u8]| {
  let Ok(Value::Object(mut args)) = serde_json::from_slice::<Value>(data) else { return };
  let (engine, path) = fixture();
  args.insert("session".into(), json!(path));
  let mut args = Value::Object(args);
  // A bounded walk: 64 pages reach past every entry boundary of the fixture.
  for _ in 0..64 {
    let Ok(request) = ExpandRequest::from_json(Some(&args)) else { return };
    let page = expand(engine, &request);
    assert!(json_len(&bounded(&page).unwrap()) <= MAX_ENVELOPE_CHARS, "page fits the envelope");
    for chunk in &page.entries {
      let range = &chunk.text_range;
      assert!(range.start <= range.end && range.end <= range.total, "{range:?}");
      assert_eq!(range.complete, range.end == range.total, "{range:?}");
    }
    let Some(next) = page.next else { return };
    assert!(page.error.is_none() && !page.entries.is_empty(), "a page with `next` made progress");
    assert_ne!(next.args, args, "`next` advances");
    args = next.args;
  }
});

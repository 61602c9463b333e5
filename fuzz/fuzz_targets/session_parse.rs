//! Session JSONL → decode (as Pi) → parse → lineage (both modes) →
//! normalize: never panics; entries are dense and every text is in bounds.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pi_fabric_memory::session::lineage::{select, Branches};
use pi_fabric_memory::session::entry::Policy;
use pi_fabric_memory::session::normalize::normalize;
use pi_fabric_memory::session::{decode::decode, parse::parse};

fuzz_target!(|data: &[u8]| {
  let decoded = decode(data);
  assert!(std::str::from_utf8(&decoded.bytes).is_ok(), "decoded text is UTF-8");
  let Ok(parsed) = parse(&decoded.bytes) else { return };
  for branches in [Branches::Active, Branches::All] {
    let lineage = select(&parsed.records, branches, None);
    let policy = Policy { index_thinking: true, index_tool_output: true, max_entry_chars: Some(200), index_own_results: true };
    let normalized = normalize(&parsed, &lineage, &policy, None);
    for (i, entry) in normalized.entries.iter().enumerate() {
      assert_eq!(entry.index, i, "entry indices are dense");
      assert!(entry.text.chars().count() <= 200 || !entry.truncated);
    }
  }
});

//! MEMORY.md parse/serialize: storable entries round-trip exactly, and a
//! file the drift check accepts is rewritten without losing content.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pi_fabric_memory::store::entries::{is_storable, js_trim, parse, serialize};
use pi_fabric_memory::store::file::is_drift;

fuzz_target!(|text: &str| {
  let entries = parse(text);
  if entries.iter().all(|e| is_storable(e)) {
    assert_eq!(parse(&serialize(&entries)), entries, "storable entries round-trip");
  }
  if !is_drift(text, usize::MAX) {
    assert_eq!(serialize(&entries), js_trim(text), "a non-drift file is exactly its entries");
  }
});

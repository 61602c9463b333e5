//! Threat scan: never panics, is bounded, and is deterministic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pi_fabric_memory::threat::{scan, Scope};

fuzz_target!(|text: &str| {
  let strict = scan(text, Scope::Strict);
  assert_eq!(scan(text, Scope::Strict), strict);
  // Scopes are cumulative: what `all` finds, `strict` finds.
  for finding in scan(text, Scope::All) {
    assert!(strict.contains(&finding));
  }
});

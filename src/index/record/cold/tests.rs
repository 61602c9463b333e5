use super::derived::TermFilter;
use super::*;

fn entry(index: usize, text: &str, tool: Option<&str>, is_error: bool) -> Entry {
  Entry {
    index,
    text: text.into(),
    typed: Typed { tool: tool.map(str::to_string), ..Typed::default() },
    is_error,
    entry_id: Some(format!("e{index}")),
    ..Entry::default()
  }
}

fn normalized(entries: Vec<Entry>) -> Normalized {
  Normalized { entries, ..Default::default() }
}

#[test]
fn folds_counts_terms_and_addresses() {
  let mut read = entry(1, "Tool: read(src/auth.ts)", Some("read"), false);
  read.files_touched = vec!["src/auth.ts".into()];
  read.typed.timestamp = Some(20);
  let mut user = entry(0, "Fix the Auth bug", None, false);
  user.typed.timestamp = Some(10);
  let digest = ColdDigest::build(
    &normalized(vec![user, read, entry(2, "boom", Some("bash"), true), entry(3, "x", Some("read"), false)]),
    1 << 20,
    Echoes::Kept,
  );
  assert_eq!(
    digest.content().unwrap().vocabulary.to_vec(),
    ["auth", "boom", "bug", "fix", "read", "src", "the", "tool", "ts", "x"]
  );
  assert!(digest.contains("boom") && !digest.contains("bo") && !digest.contains("zzz"));
  let content = digest.content().unwrap();
  assert_eq!(content.files_touched, ["src/auth.ts"]);
  assert_eq!(content.tool_histogram, BTreeMap::from([("bash".into(), 1), ("read".into(), 2)]));
  assert_eq!((digest.error_count, digest.entry_count, digest.first_ts, digest.last_ts), (1, 4, Some(10), Some(20)));
  assert_eq!(digest.content().unwrap().addresses[1].entry_id.as_deref(), Some("e1"));
  assert!(digest.index_coverage.complete);
}

#[test]
fn vocabulary_stops_at_its_byte_cap() {
  let digest = ColdDigest::build(&normalized(vec![entry(0, "alpha beta gamma", None, false)]), 2 + 8 + 7, Echoes::Kept);
  assert_eq!(digest.content().unwrap().vocabulary.to_vec(), ["alpha", "beta"]);
  assert!(!digest.index_coverage.complete);
  assert_eq!(digest.index_coverage.reasons, ["max_cold_vocabulary_bytes"]);
}

#[test]
fn the_filter_never_misses_a_term() {
  let terms: Vec<String> = (0..5000).map(|i| format!("term{i}")).collect();
  let filter = TermFilter::build(terms.iter().map(String::as_str));
  assert!(terms.iter().all(|t| filter.may_contain(t)));
  let false_positives = (0..10_000).filter(|i| filter.may_contain(&format!("absent{i}"))).count();
  assert!(false_positives < 1000, "{false_positives} false positives in 10,000");
}

#[test]
fn fitting_keeps_exact_prefixes() {
  // Letters only: `term7` would add the parts `term` and `7`.
  let word = |i: usize| format!("term{}{}", (b'a' + (i / 26) as u8) as char, (b'a' + (i % 26) as u8) as char);
  let entries = (0..100).map(|i| entry(i, &word(i), None, false)).collect();
  let mut digest = ColdDigest::build(&normalized(entries), 1 << 20, Echoes::Kept);
  assert!(digest.fit(|d| d.content().unwrap().addresses.len() <= 40));
  assert_eq!(digest.content().unwrap().addresses.len(), 40);
  assert_eq!(digest.content().unwrap().vocabulary.len(), 100);
  assert_eq!(
    digest.kinds().decode().unwrap(),
    [(Kind::intern(Typed::default()), 40)],
    "kinds count the kept addresses"
  );
  assert_eq!(digest.index_coverage.reasons, ["max_cold_cache_bytes"]);
  assert!(digest.fit(|d| d.content().unwrap().addresses.is_empty() && d.content().unwrap().vocabulary.len() <= 7));
  assert_eq!(digest.content().unwrap().vocabulary.len(), 7);
  let content = digest.content().unwrap();
  let seven =
    ColdContent::new(Vocabulary::from_sorted(&content.vocabulary.to_vec()), content.frequencies.clone(), Vec::new());
  assert_eq!(digest.vocabulary_fingerprint(), seven.fingerprint());
  assert!(!digest.fit(|_| false));
}

#[test]
fn term_sums_tell_terms_apart_past_their_first_8_bytes_and_sort_by_bytes() {
  let mut sums = term_sums::TermSums::default();
  let terms = ["parsesessionheader", "parsesessionhead", "parse", "pars", "parsesessionheader", "a", "parse", "zz"];
  for (at, term) in terms.into_iter().enumerate() {
    sums.add(term, at as u64 + 1, |term| term != "zz");
  }
  let sorted: Vec<(&str, u64)> = sums.sorted().collect();
  assert_eq!(sorted, [("a", 6), ("pars", 4), ("parse", 3 + 7), ("parsesessionhead", 2), ("parsesessionheader", 1 + 5)]);
}

proptest::proptest! {
  #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
  /// Against a sorted map: terms around the 8-byte key (shared prefixes,
  /// lengths 7 to 10, one a prefix of another) and a cap that refuses some.
  #[test]
  fn term_sums_are_a_sorted_map_of_sums(
    terms in proptest::collection::vec(("[ab]{0,3}", "[ab\\x01]{0,7}", 1u64..5), 1..400),
    refused in "[ab]{0,2}",
  ) {
    let mut sums = term_sums::TermSums::default();
    let mut model = std::collections::BTreeMap::<String, u64>::new();
    for (head, tail, units) in &terms {
      let term = format!("abcdefg{head}{tail}");
      let admit = |term: &str| !term.ends_with(&format!("g{refused}"));
      if model.contains_key(&term) || admit(&term) {
        *model.entry(term.clone()).or_default() += units;
      }
      sums.add(&term, *units, admit);
    }
    let sorted: Vec<(String, u64)> = sums.sorted().map(|(t, s)| (t.to_string(), s)).collect();
    proptest::prop_assert_eq!(sorted, model.into_iter().collect::<Vec<_>>());
  }
}

#[test]
fn lazy_content_is_read_once_shared_by_clones_and_unreadable_without_a_loader() {
  use std::sync::atomic::{AtomicUsize, Ordering};
  let reads = std::sync::Arc::new(AtomicUsize::new(0));
  let counted = reads.clone();
  let lazy = LazyContent::deferred(move || {
    counted.fetch_add(1, Ordering::Relaxed);
    Ok(ColdContent::new(super::Vocabulary::from_sorted(&["alpha".to_string()]), vec![1], Vec::new()))
  });
  let clone = lazy.clone();
  assert!(!lazy.is_resident());
  // A read that keeps nothing, then the first use, which keeps it for every clone.
  assert!(lazy.read().unwrap().contains("alpha"));
  assert!(!clone.is_resident());
  assert!(clone.get().unwrap().contains("alpha"));
  assert!(lazy.is_resident() && lazy.get().is_ok());
  assert_eq!(reads.load(Ordering::Relaxed), 2, "the read kept nothing; the first use read once for both");
  let loaded = LazyContent::loaded(ColdContent::new(Default::default(), Vec::new(), Vec::new()));
  assert!(loaded.is_resident() && loaded.get().is_ok());
  let failing = LazyContent::deferred(|| Err(Unreadable));
  assert_eq!(failing.get().err(), Some(Unreadable));
  assert!(failing.is_resident(), "found unreadable: the record no longer answers");
  assert_eq!(LazyContent::default().get().err(), Some(Unreadable));
  assert!(!LazyContent::default().is_resident());
}

//! A directory's entry names, sorted, in one buffer.
//!
//! At 100,000 sessions a listing is 100,000 names: as a `Vec<String>` that
//! was an allocation each (and the heap's growth under them), and decoding a
//! persisted listing took ~35 ms of one core, most of it those allocations.
//! One text with the end of each name costs two.

use rayon::prelude::*;
use serde::ser::{Serialize, SerializeSeq, Serializer};
use std::collections::BTreeMap;
use std::ops::Range;

/// Sorted names, each once (a directory holds no name twice).
#[derive(Default, Clone, PartialEq, Eq)]
pub struct Names {
  text: String,
  /// Where each name ends in `text` (it starts where the one before ends).
  ends: Vec<usize>,
}

impl Names {
  /// `names` in order.
  pub fn sorted(mut names: Vec<String>) -> Names {
    names.sort_unstable();
    names.dedup();
    Names::of_ordered(names.iter().map(String::as_str))
  }

  /// `names`, already ascending and each once; `None` when they are not.
  /// One pass, each name compared with the one before as it is copied (a
  /// fresh process reads 100,000 names of the index dir this way).
  pub fn of_ascending<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> Option<Names> {
    let mut built = Names { text: String::new(), ends: Vec::with_capacity(names.len()) };
    for name in names {
      if built.ends.last().is_some_and(|_| built.get(built.len() - 1) >= name) {
        return None;
      }
      built.push(name);
    }
    Some(built)
  }

  /// Could every name be a file's in a dir: none empty, `.` or `..`, and
  /// none holding a NUL or a separator (one scan of the whole text)?
  pub fn all_plain(&self) -> bool {
    let text = self.text.as_bytes();
    #[cfg(windows)]
    let separator = memchr::memchr3(0, b'/', b'\\', text);
    #[cfg(not(windows))]
    let separator = memchr::memchr2(0, b'/', text);
    separator.is_none() && (0..self.len()).all(|at| !matches!(self.get(at), "" | "." | ".."))
  }

  /// `names` as given, in or out of order (tests: a damaged file's).
  #[cfg(test)]
  pub fn in_given_order(names: &[&str]) -> Names {
    Names::of_ordered(names.iter().copied())
  }

  fn of_ordered<'a>(names: impl ExactSizeIterator<Item = &'a str> + Clone) -> Names {
    let mut text = String::with_capacity(names.clone().map(str::len).sum());
    let mut ends = Vec::with_capacity(names.len());
    for name in names {
      text.push_str(name);
      ends.push(text.len());
    }
    Names { text, ends }
  }

  pub fn len(&self) -> usize {
    self.ends.len()
  }

  pub fn is_empty(&self) -> bool {
    self.ends.is_empty()
  }

  fn range(&self, at: usize) -> Range<usize> {
    let start = if at == 0 { 0 } else { self.ends[at - 1] };
    start..self.ends[at]
  }

  /// The name at `at` (in order); panics past the end, as a slice does.
  pub fn get(&self, at: usize) -> &str {
    &self.text[self.range(at)]
  }

  /// Every name, in order.
  pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + DoubleEndedIterator + Clone + '_ {
    self.iter_from(0)
  }

  /// The names from the one at `start` on, in order (`iter().skip(start)`
  /// would look at each name before it).
  pub fn iter_from(&self, start: usize) -> impl ExactSizeIterator<Item = &str> + DoubleEndedIterator + Clone + '_ {
    (start.min(self.len())..self.len()).map(|at| self.get(at))
  }

  /// The same names on the pool's threads.
  pub fn par_iter(&self) -> impl IndexedParallelIterator<Item = &str> + '_ {
    (0..self.len()).into_par_iter().map(|at| self.get(at))
  }

  /// How many names lead for which `before` holds (it holds for a prefix).
  pub fn partition_point(&self, before: impl Fn(&str) -> bool) -> usize {
    let (mut low, mut high) = (0, self.len());
    while low < high {
      let middle = low + (high - low) / 2;
      match before(self.get(middle)) {
        true => low = middle + 1,
        false => high = middle,
      }
    }
    low
  }

  /// Where `name` is, or where it would go.
  pub fn search(&self, name: &str) -> Result<usize, usize> {
    let at = self.partition_point(|known| known < name);
    match at < self.len() && self.get(at) == name {
      true => Ok(at),
      false => Err(at),
    }
  }

  pub fn contains(&self, name: &str) -> bool {
    self.search(name).is_ok()
  }

  /// These names with each of `edits` present (`true`) or absent. The runs
  /// of names between two edits are copied whole, text and ends, each edit
  /// found by a binary search: a new session at 100,000 adds one name to
  /// the index dir's listing, and a pass comparing every name with the
  /// edits was ~6 ms of it (a build in a warm process adds thousands).
  pub fn edited(&self, edits: &BTreeMap<&str, bool>) -> Names {
    let added: usize = edits.iter().filter(|(_, &present)| present).map(|(name, _)| name.len()).sum();
    let mut edited = Names { text: String::with_capacity(self.text.len() + added), ends: Vec::new() };
    edited.ends.reserve(self.len() + edits.len());
    // The position of the first name not yet copied.
    let mut from = 0;
    for (name, &present) in edits {
      // A present name is copied with the run before it; an absent one is skipped.
      match self.search(name) {
        Ok(at) => {
          edited.copy(self, from..at + usize::from(present));
          from = at + 1;
        }
        Err(at) => {
          edited.copy(self, from..at);
          if present {
            edited.push(name);
          }
          from = at;
        }
      }
    }
    edited.copy(self, from..self.len());
    edited
  }

  /// Appends the names of `from` at `positions`, text and ends in one copy each.
  fn copy(&mut self, from: &Names, positions: Range<usize>) {
    if positions.is_empty() {
      return;
    }
    let (start, end) = (from.range(positions.start).start, from.ends[positions.end - 1]);
    let shift = self.text.len();
    self.text.push_str(&from.text[start..end]);
    self.ends.extend(from.ends[positions].iter().map(|&ends| ends - start + shift));
  }

  fn push(&mut self, name: &str) {
    self.text.push_str(name);
    self.ends.push(self.text.len());
  }
}

impl std::fmt::Debug for Names {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.debug_list().entries(self.iter()).finish()
  }
}

impl<const N: usize> PartialEq<[&str; N]> for Names {
  fn eq(&self, other: &[&str; N]) -> bool {
    self.iter().eq(other.iter().copied())
  }
}

/// As a sequence of strings: what a `Vec<String>` of the same names writes.
impl Serialize for Names {
  fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    let mut seq = serializer.serialize_seq(Some(self.len()))?;
    for name in self.iter() {
      seq.serialize_element(name)?;
    }
    seq.end()
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn names(list: &[&str]) -> Names {
    Names::sorted(list.iter().map(|s| s.to_string()).collect())
  }

  #[test]
  fn names_are_kept_in_order_once_each_and_found() {
    let names = names(&["b", "a", "ccc", "a", ""]);
    assert_eq!(names, ["", "a", "b", "ccc"]);
    assert_eq!(names.len(), 4);
    assert_eq!(names.get(3), "ccc");
    assert_eq!(names.search("b"), Ok(2));
    assert_eq!(names.search("bb"), Err(3));
    assert_eq!(names.search("d"), Err(4));
    assert!(names.contains("") && !names.contains("c"));
    assert_eq!(names.iter().next_back(), Some("ccc"));
    assert!(names.iter_from(2).eq(["b", "ccc"]) && names.iter_from(9).next().is_none());
    assert!(Names::default().is_empty() && Names::default().search("a") == Err(0));
  }

  #[test]
  fn only_plain_names_are_plain() {
    assert!(names(&["a", "b.jsonl", "..."]).all_plain() && Names::default().all_plain());
    for bad in ["", ".", "..", "a/b", "nul\0"] {
      assert!(!names(&["a", bad, "z"]).all_plain(), "{bad:?}");
    }
  }

  #[test]
  fn only_ascending_names_are_taken_as_such() {
    let of = |list: &[&str]| Names::of_ascending(list.iter().copied());
    assert_eq!(of(&["a", "b", "c"]).unwrap(), ["a", "b", "c"]);
    assert!(of(&["b", "a"]).is_none());
    assert!(of(&["a", "a"]).is_none());
    assert!(of(&[]).unwrap().is_empty());
  }

  #[test]
  fn names_added_or_removed_keep_the_order() {
    let names = names(&["a", "c", "e"]);
    let edited = |edits: &[(&'static str, bool)]| names.edited(&edits.iter().copied().collect());
    assert_eq!(edited(&[("b", true)]), ["a", "b", "c", "e"]);
    assert_eq!(edited(&[("f", true), ("0", true)]), ["0", "a", "c", "e", "f"]);
    assert_eq!(edited(&[("a", false), ("e", false)]), ["c"]);
    assert_eq!(edited(&[("c", false), ("d", true), ("b", true)]), ["a", "b", "d", "e"]);
    assert_eq!(edited(&[("a", true), ("b", false)]), ["a", "c", "e"], "no change");
    assert_eq!(edited(&[]), ["a", "c", "e"]);
  }

  proptest::proptest! {
    #[test]
    fn edits_give_the_names_a_set_would_hold(
      names in proptest::collection::btree_set("[a-e]{0,3}", 0..12),
      edits in proptest::collection::btree_map("[a-e]{0,3}", proptest::bool::ANY, 0..8),
    ) {
      let edited = Names::sorted(names.iter().cloned().collect())
        .edited(&edits.iter().map(|(name, &present)| (name.as_str(), present)).collect());
      let mut expected = names.clone();
      for (name, &present) in &edits {
        if present { expected.insert(name.clone()); } else { expected.remove(name); }
      }
      proptest::prop_assert!(edited.iter().eq(expected.iter().map(String::as_str)), "{edited:?} != {expected:?}");
    }
  }

  #[test]
  fn names_are_written_as_a_list_of_strings() {
    let list = vec!["a".to_string(), "bc".to_string()];
    let bytes = postcard::to_allocvec(&Names::sorted(list.clone())).unwrap();
    assert_eq!(bytes, postcard::to_allocvec(&list).unwrap());
  }
}

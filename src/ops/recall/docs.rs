//! The candidate entries of one hot session. Without filters they are one
//! contiguous range (the entry range, cut at the live turn), so a query
//! touches only the postings it reads instead of listing every hot entry
//! first; nothing is materialized, so no budget applies. With filters the
//! passing entries are listed, newest first, within the entry budget: in a
//! long live session the newest entries are what a user asks about.

use crate::coverage::Reason;
use crate::index::snapshot::EntryKinds;
use crate::query::plan::Filters;
use crate::session::entry::Entry;
use std::collections::BTreeSet;
use std::ops::Range;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Docs {
  /// Every entry in the range is a candidate.
  Range(Range<usize>),
  /// The filter-passing entries, ascending.
  Listed(Vec<usize>),
}

/// The candidates of one session's `entries` inside `window`; listed ones
/// (with filters) are charged to `budget` newest first, and
/// `CandidateEntryBudget` is set once a candidate finds the budget spent.
pub(super) fn candidates<'a>(
  entries: impl FnOnce() -> &'a [Entry],
  kinds: impl FnOnce() -> &'a EntryKinds,
  window: Range<usize>,
  filters: &Filters,
  budget: &mut usize,
  reasons: &mut BTreeSet<Reason>,
) -> Docs {
  if filters.is_empty() {
    return Docs::Range(window);
  }
  // Each distinct kind tested once; an entry is then an index lookup.
  let (entries, kinds) = (entries(), kinds());
  let passing: Vec<bool> = kinds.distinct.iter().map(|kind| filters.matches_kind(kind)).collect();
  let passes = |at: usize| passing[kinds.of[at] as usize] && filters.matches_time(entries[at].typed.timestamp);
  let mut listed = Vec::new();
  for entry in window.rev().filter(|&at| passes(at)).map(|at| &entries[at]) {
    if *budget == 0 {
      reasons.insert(Reason::CandidateEntryBudget);
      break;
    }
    *budget -= 1;
    listed.push(entry.index);
  }
  listed.reverse();
  Docs::Listed(listed)
}

/// The entries `[0, end)` inside the request's inclusive entry range.
pub(super) fn window(entry_range: Option<(i64, i64)>, end: usize) -> Range<usize> {
  let Some((first, last)) = entry_range else { return 0..end };
  let clamp = |index: i64| index.clamp(0, end as i64) as usize;
  let (start, stop) = (clamp(first), clamp(last.saturating_add(1)));
  start..stop.max(start)
}

impl Docs {
  pub(super) fn len(&self) -> usize {
    match self {
      Docs::Range(range) => range.len(),
      Docs::Listed(docs) => docs.len(),
    }
  }

  pub(super) fn is_empty(&self) -> bool {
    self.len() == 0
  }

  pub(super) fn iter(&self) -> DocIter<'_> {
    match self {
      Docs::Range(range) => DocIter::Range(range.clone()),
      Docs::Listed(docs) => DocIter::Listed(docs.iter()),
    }
  }

  /// The entries of a posting list (sorted by entry) that are candidates.
  pub(super) fn restrict<'a>(&'a self, list: &'a [(u32, u32)]) -> impl Iterator<Item = (usize, u32)> + 'a {
    let (slice, mut listed) = match self {
      Docs::Range(range) => {
        let at = |bound: usize| list.partition_point(|&(doc, _)| (doc as usize) < bound);
        (&list[at(range.start)..at(range.end)], None)
      }
      Docs::Listed(docs) => (list, Some(docs.iter().peekable())),
    };
    slice.iter().map(|&(doc, tf)| (doc as usize, tf)).filter(move |&(doc, _)| match listed.as_mut() {
      None => true,
      Some(candidates) => {
        while candidates.next_if(|&&c| c < doc).is_some() {}
        candidates.peek() == Some(&&doc)
      }
    })
  }

  /// The sum of `lengths` over the candidates.
  pub(super) fn length_sum(&self, lengths: &[u32]) -> u64 {
    match self {
      Docs::Range(range) => lengths[range.clone()].iter().map(|&l| u64::from(l)).sum(),
      Docs::Listed(docs) => docs.iter().map(|&doc| u64::from(lengths[doc])).sum(),
    }
  }
}

pub(super) enum DocIter<'a> {
  Range(Range<usize>),
  Listed(std::slice::Iter<'a, usize>),
}

impl Iterator for DocIter<'_> {
  type Item = usize;

  fn next(&mut self) -> Option<usize> {
    match self {
      DocIter::Range(range) => range.next(),
      DocIter::Listed(docs) => docs.next().copied(),
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::session::entry::Typed;
  use crate::testing::proptest_config;
  use proptest::prelude::*;

  fn entries(count: usize) -> Vec<Entry> {
    let mut entries: Vec<Entry> = (0..count).map(|index| Entry { index, ..Entry::default() }).collect();
    entries.iter_mut().for_each(|e| e.typed.timestamp = Some(0));
    entries
  }

  proptest! {
    #![proptest_config(proptest_config(256))]

    /// The range (no filter) and the list (a filter every entry passes) are
    /// the same candidates while the budget allows; past it the list keeps
    /// the newest entries, and the range, which materializes nothing, is
    /// never cut.
    #[test]
    fn a_range_equals_the_list_a_pass_all_filter_makes(
      count in 0..40usize,
      end in 0..45usize,
      range in proptest::option::of((-3..45i64, -3..45i64)),
      budget in 0..50usize,
      list in proptest::collection::btree_map(0..45u32, 1..4u32, 0..30),
      lengths in proptest::collection::vec(1..9u32, 40),
    ) {
      let entries = entries(count);
      let window = window(range, end.min(count));
      let everything = Filters { since: Some(i64::MIN), ..Filters::default() };
      let (mut fast_budget, mut listed_budget) = (budget, budget);
      let (mut fast_reasons, mut listed_reasons) = (BTreeSet::new(), BTreeSet::new());
      let kinds = EntryKinds::of(&entries);
      let fast = candidates(|| &entries, || &kinds, window.clone(), &Filters::default(), &mut fast_budget, &mut fast_reasons);
      let listed = candidates(|| &entries, || &kinds, window, &everything, &mut listed_budget, &mut listed_reasons);
      prop_assert!(matches!(fast, Docs::Range(_)) && matches!(listed, Docs::Listed(_)));
      let in_request = |i: usize| range.is_none_or(|(first, last)| i as i64 >= first && i as i64 <= last);
      let inside: Vec<usize> = (0..end.min(count)).filter(|&i| in_request(i)).collect();
      prop_assert_eq!(fast.iter().collect::<Vec<_>>(), inside.clone());
      prop_assert_eq!((fast_budget, fast_reasons.is_empty()), (budget, true));
      let newest = inside[inside.len().saturating_sub(budget)..].to_vec();
      prop_assert_eq!(listed.iter().collect::<Vec<_>>(), newest.clone());
      prop_assert_eq!(listed_budget, budget - newest.len());
      prop_assert_eq!(listed_reasons.contains(&Reason::CandidateEntryBudget), newest.len() < inside.len());
      if newest.len() == inside.len() {
        prop_assert_eq!(fast.length_sum(&lengths), listed.length_sum(&lengths));
        let postings: Vec<(u32, u32)> = list.into_iter().collect();
        prop_assert_eq!(fast.restrict(&postings).collect::<Vec<_>>(), listed.restrict(&postings).collect::<Vec<_>>());
      }
    }

    /// Testing each distinct kind once lists what testing every entry does.
    #[test]
    fn the_kind_table_lists_what_every_entrys_fields_would(
      fields in proptest::collection::vec((0..3usize, 0..3usize, 0..3usize, proptest::option::of(0..4i64)), 0..40),
      want in (0..4usize, 0..4usize, 0..4usize, proptest::option::of(0..4i64), proptest::option::of(0..4i64)),
    ) {
      let names = ["a", "b", "c"];
      let pick = |at: usize| names.get(at).map(|n| n.to_string());
      let entries: Vec<Entry> = fields
        .iter()
        .enumerate()
        .map(|(index, &(role, tool, reference, timestamp))| {
          let mut entry = Entry { index, ..Entry::default() };
          (entry.typed.role, entry.typed.tool, entry.typed.reference) = (pick(role), pick(tool), pick(reference));
          entry.typed.timestamp = timestamp;
          entry
        })
        .collect();
      // 3 names or no filter on that field.
      let typed = Typed { role: pick(want.0), tool: pick(want.1), reference: pick(want.2), ..Typed::default() };
      let filters = Filters { typed, since: want.3, until: want.4 };
      prop_assume!(!filters.is_empty());
      let kinds = EntryKinds::of(&entries);
      let (mut budget, mut reasons) = (usize::MAX, BTreeSet::new());
      let listed = candidates(|| &entries, || &kinds, 0..entries.len(), &filters, &mut budget, &mut reasons);
      let expected: Vec<usize> = entries.iter().filter(|e| filters.matches(&e.typed)).map(|e| e.index).collect();
      prop_assert_eq!(listed.iter().collect::<Vec<_>>(), expected);
    }
  }

  #[test]
  fn the_budget_keeps_the_newest_listed_entries_and_never_cuts_a_range() {
    let entries: Vec<Entry> = (0..10)
      .map(|index| {
        let mut entry = Entry { index, ..Entry::default() };
        entry.typed.role = Some(if index % 2 == 0 { "user" } else { "assistant" }.into());
        entry
      })
      .collect();
    let kinds = EntryKinds::of(&entries);
    let users = Filters { typed: Typed { role: Some("user".into()), ..Typed::default() }, ..Filters::default() };
    let (mut budget, mut reasons) = (3, BTreeSet::new());
    let listed = candidates(|| &entries, || &kinds, 0..10, &users, &mut budget, &mut reasons);
    assert_eq!(listed, Docs::Listed(vec![4, 6, 8]), "the newest three");
    assert!(reasons.contains(&Reason::CandidateEntryBudget));
    let (mut budget, mut reasons) = (3, BTreeSet::new());
    let range = candidates(|| &entries, || &kinds, 2..10, &Filters::default(), &mut budget, &mut reasons);
    assert_eq!((range, budget), (Docs::Range(2..10), 3), "a range materializes nothing");
    assert!(reasons.is_empty());
  }
}

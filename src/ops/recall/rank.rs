//! The deterministic ranking of the item stream.

use super::search::{Item, Search};
use std::cmp::Ordering;

/// (score, session mtime, entry 0 / session 1, index, session slot).
type RankKey = (f64, f64, u8, usize, usize);

/// The best items of a ranked stream in order, as many as the request's
/// page can reach, and how long the whole stream is.
pub(super) struct Ranked {
  pub best: Vec<Item>,
  pub total: usize,
}

impl Ranked {
  /// The items from `offset`, at most `count` of them.
  pub fn page(&self, offset: usize, count: usize) -> &[Item] {
    let start = offset.min(self.best.len());
    &self.best[start..(start + count).min(self.best.len())]
  }
}

impl Item {
  fn score(&self) -> f64 {
    match self {
      Item::Entry { score, .. } | Item::Session { score, .. } => *score,
    }
  }
}

/// Descending, as items rank.
fn by_score(a: &f64, b: &f64) -> Ordering {
  b.total_cmp(a)
}

impl Search<'_> {
  /// The first `exact` of `items` (of which the stream keeps at most `keep`)
  /// ordered by score desc, session mtime desc, entries before sessions,
  /// index, file: identical calls give identical bytes. The rest are only
  /// counted, never shown.
  pub(super) fn rank(&self, mut items: Vec<Item>, keep: usize, exact: usize) -> Ranked {
    let total = keep.min(items.len());
    let exact = exact.min(total);
    // Nothing scoring below the `exact`-th best score can rank among the
    // first `exact`, so only those at or above it get the full key (a
    // session's mtime is a lookup per item: over 8,000 items of a common
    // word that and the comparisons were most of the ranking).
    let mut scores: Vec<f64> = items.iter().map(Item::score).collect();
    let floor = match exact.checked_sub(1) {
      Some(last) => *scores.select_nth_unstable_by(last, by_score).1,
      None => f64::INFINITY,
    };
    let mut keyed: Vec<(RankKey, u32)> = items
      .iter()
      .enumerate()
      .filter(|(_, item)| by_score(&item.score(), &floor).is_le())
      .map(|(at, item)| (self.key(item), at as u32))
      .collect();
    let order = |a: &(RankKey, u32), b: &(RankKey, u32)| {
      let ((sa, ma, ka, ia, fa), (sb, mb, kb, ib, fb)) = (&a.0, &b.0);
      by_score(sa, sb)
        .then(mb.total_cmp(ma))
        .then(ka.cmp(kb))
        .then(ia.cmp(ib))
        .then_with(|| self.sessions.at(*fa).file().cmp(self.sessions.at(*fb).file()))
    };
    if keyed.len() > exact {
      keyed.select_nth_unstable_by(exact, order);
      keyed.truncate(exact);
    }
    keyed.sort_unstable_by(order);
    let taken = || Item::Entry { session: 0, doc: 0, score: 0.0 };
    let best = keyed.into_iter().map(|(_, at)| std::mem::replace(&mut items[at as usize], taken())).collect();
    Ranked { best, total }
  }

  fn key(&self, item: &Item) -> RankKey {
    match item {
      // An entry's index is its position in the shard.
      Item::Entry { session, doc, score } => (*score, self.sessions.at(*session).mtime(), 0, *doc, *session),
      Item::Session { session, score, .. } => (*score, self.sessions.at(*session).mtime(), 1, 0, *session),
    }
  }
}

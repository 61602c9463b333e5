//! The deterministic ranking of the item stream.

use super::search::{Item, Search};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

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

  fn session(&self) -> usize {
    match self {
      Item::Entry { session, .. } | Item::Session { session, .. } => *session,
    }
  }
}

/// `score` as an integer that orders as [`f64::total_cmp`] orders scores.
fn total_key(score: f64) -> u64 {
  let bits = score.to_bits();
  if bits >> 63 == 1 {
    !bits
  } else {
    bits | 1 << 63
  }
}

/// The `exact`-th best of `keys` (`None` for none): the least of the best
/// `exact`, kept in a heap. Selecting it in a copy of every score was slow
/// when they tie, as a browse's all do.
fn floor<K: Ord + Copy>(keys: impl Iterator<Item = K>, exact: usize) -> Option<K> {
  let mut best: BinaryHeap<Reverse<K>> = BinaryHeap::with_capacity(exact + 1);
  for key in keys {
    match best.peek() {
      _ if best.len() < exact => best.push(Reverse(key)),
      Some(&Reverse(least)) if key > least => {
        best.pop();
        best.push(Reverse(key));
      }
      _ => {}
    }
  }
  best.peek().map(|&Reverse(least)| least)
}

/// Items tied at the page's last score past this many times the page take
/// their sessions' mtimes (the tie chain's next link) into the floor.
const TIED: usize = 4;

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
    let keyed = self.reaching(&items, exact).into_iter();
    let mut keyed: Vec<(RankKey, u32)> = keyed.map(|at| (self.key(&items[at as usize]), at)).collect();
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

  /// The positions of the items that may rank among the first `exact`:
  /// nothing scoring below the `exact`-th best score can, so only those at
  /// or above it get the full key (a session's mtime is a lookup per item:
  /// over 8,000 items of a common word that and the comparisons were most
  /// of the ranking). Many ties at that score (a browse's items all score
  /// 0) are cut by their sessions' mtimes too, each looked up once.
  fn reaching(&self, items: &[Item], exact: usize) -> Vec<u32> {
    let score_key = |item: &Item| total_key(item.score());
    let Some(least) = floor(items.iter().map(score_key), exact) else { return Vec::new() };
    let mut reaching: Vec<u32> =
      (0..items.len() as u32).filter(|&at| score_key(&items[at as usize]) >= least).collect();
    if reaching.len() <= TIED * exact {
      return reaching;
    }
    let mut mtimes: Vec<Option<u64>> = vec![None; self.sessions.len()];
    let mut pair = |at: &u32| {
      let item = &items[*at as usize];
      let slot = item.session();
      (score_key(item), *mtimes[slot].get_or_insert_with(|| total_key(self.sessions.at(slot).mtime())))
    };
    let Some(least) = floor(reaching.iter().map(&mut pair), exact) else { return Vec::new() };
    reaching.retain(|at| pair(at) >= least);
    reaching
  }

  fn key(&self, item: &Item) -> RankKey {
    match item {
      // An entry's index is its position in the shard.
      Item::Entry { session, doc, score } => (*score, self.sessions.at(*session).mtime(), 0, *doc, *session),
      Item::Session { session, score, .. } => (*score, self.sessions.at(*session).mtime(), 1, 0, *session),
    }
  }
}

#[cfg(test)]
mod tests {
  use super::{floor, total_key};

  #[test]
  fn the_floor_is_the_exact_th_best_score() {
    let scores = [3.0, 1.0, 2.0, 2.0, 0.5];
    assert_eq!(floor(scores.into_iter().map(total_key), 1), Some(total_key(3.0)));
    assert_eq!(floor(scores.into_iter().map(total_key), 3), Some(total_key(2.0)), "ties count once each");
    assert_eq!(floor(scores.into_iter().map(total_key), 4), Some(total_key(1.0)));
    assert_eq!(floor(scores.into_iter().map(total_key), 0), None, "nothing reaches an empty page");
    assert_eq!(floor([0.0; 9].into_iter().map(total_key), 4), Some(total_key(0.0)));
    let ordered = [f64::NEG_INFINITY, -2.5, -0.0, 0.0, 1e-300, 7.0, f64::INFINITY];
    assert!(ordered.windows(2).all(|pair| total_key(pair[0]) < total_key(pair[1])), "keys order as total_cmp");
  }
}

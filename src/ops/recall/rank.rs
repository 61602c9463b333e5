//! The deterministic ranking of the item stream.

use super::search::{Item, Search};

/// (score, session mtime, entry 0 / session 1, index, session slot).
type RankKey = (f64, f64, u8, usize, usize);

impl Search<'_> {
  /// Orders `items` by score desc, session mtime desc, entries before
  /// sessions, index, file (identical calls give identical bytes), keeping
  /// the best `keep`; only the first `exact` need their exact order, so the
  /// rest is partitioned, not sorted.
  pub(super) fn rank(&self, mut items: Vec<Item>, keep: usize, exact: usize) -> Vec<Item> {
    // Keys with the item's position, ordered; the items are moved once, into
    // the result (ordering the items themselves moved 100 bytes per swap).
    let mut keyed: Vec<(RankKey, u32)> = items
      .iter()
      .enumerate()
      .map(|(at, item)| {
        let key = match item {
          Item::Entry { session, doc, score } => {
            // An entry's index is its position in the shard.
            (*score, self.sessions.at(*session).mtime(), 0, *doc, *session)
          }
          Item::Session { session, score, .. } => (*score, self.sessions.at(*session).mtime(), 1, 0, *session),
        };
        (key, at as u32)
      })
      .collect();
    let order = |a: &(RankKey, u32), b: &(RankKey, u32)| {
      let ((sa, ma, ka, ia, fa), (sb, mb, kb, ib, fb)) = (&a.0, &b.0);
      sb.total_cmp(sa)
        .then(mb.total_cmp(ma))
        .then(ka.cmp(kb))
        .then(ia.cmp(ib))
        .then_with(|| self.sessions.at(*fa).file().cmp(self.sessions.at(*fb).file()))
    };
    if keyed.len() > keep {
      keyed.select_nth_unstable_by(keep, order);
      keyed.truncate(keep);
    }
    let exact = exact.min(keyed.len());
    if exact < keyed.len() {
      keyed.select_nth_unstable_by(exact, order);
    }
    keyed[..exact].sort_unstable_by(order);
    let taken = || Item::Entry { session: 0, doc: 0, score: 0.0 };
    keyed.into_iter().map(|(_, at)| std::mem::replace(&mut items[at as usize], taken())).collect()
  }
}

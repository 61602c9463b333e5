//! The typed kinds of many cold digests at once (a synchronization's), for
//! structural filters: interned, so a filter is tested once per distinct
//! kind instead of once per kind of every digest (~50 each).

use super::ColdDigest;
use crate::index::record::kind::Kind;
use crate::session::entry::Typed;
use rayon::prelude::*;
use std::collections::HashMap;

/// The typed kinds of a sequence of cold digests, interned.
pub struct ColdKinds {
  distinct: Vec<Kind>,
  /// Per digest (in the order given), where its kinds start in `counts`,
  /// and one past the last.
  starts: Vec<u32>,
  /// (distinct kind, address count) of each digest, one digest after another.
  counts: Vec<(u32, u64)>,
}

impl ColdKinds {
  pub fn of<'d>(digests: impl Iterator<Item = &'d ColdDigest>) -> ColdKinds {
    // Decoded here, once per snapshot that filters (heads keep their
    // bytes), on every core: 1.2M kinds at `huge`.
    let digests: Vec<&ColdDigest> = digests.collect();
    let decoded: Vec<Vec<(Kind, u64)>> =
      digests.par_iter().with_min_len(256).map(|digest| digest.kinds().decode().unwrap_or_default()).collect();
    // Interned kinds: equal exactly when they are the same value (`Kind::id`).
    let mut ids: HashMap<usize, u32> = HashMap::new();
    let (mut distinct, mut starts) = (Vec::new(), Vec::with_capacity(decoded.len() + 1));
    let mut counts = Vec::with_capacity(decoded.iter().map(Vec::len).sum());
    starts.push(0);
    for kinds in decoded {
      for (kind, count) in kinds {
        let id = *ids.entry(kind.id()).or_insert_with(|| {
          distinct.push(kind);
          distinct.len() as u32 - 1
        });
        counts.push((id, count));
      }
      starts.push(counts.len() as u32);
    }
    ColdKinds { distinct, starts, counts }
  }

  /// Per digest (in the order given), how many of its addresses have a kind
  /// `matches` accepts.
  pub fn matching(&self, matches: impl Fn(&Typed) -> bool) -> impl Iterator<Item = usize> + '_ {
    let accepted: Vec<bool> = self.distinct.iter().map(|kind| matches(kind)).collect();
    self.starts.windows(2).map(move |run| {
      let kinds = &self.counts[run[0] as usize..run[1] as usize];
      kinds.iter().filter(|(id, _)| accepted[*id as usize]).map(|(_, count)| *count as usize).sum()
    })
  }
}

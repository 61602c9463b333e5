//! A session's distinct terms, each with a running sum: the terms live in
//! one arena string and a table of slot numbers, so an occurrence costs one
//! hash and (on a hit) one comparison, and a new term no allocation of its
//! own. A map keyed by `String` hashed twice per new term and allocated
//! each; per-term allocations and frees were ~8% of a cold build.

use crate::index::record::vocabulary::TermLookup;
use hashbrown::HashTable;

#[derive(Default)]
pub(super) struct TermSums {
  arena: String,
  slots: Vec<Slot>,
  /// Indexes into `slots`, by the slot's term hash.
  table: HashTable<u32>,
}

struct Slot {
  /// The term's first 8 bytes, big-endian, zero-padded: a term of at most
  /// 8 bytes is found equal (and most terms are ordered) without reading
  /// the arena, whose reads were a cache miss per occurrence.
  key: u64,
  start: u32,
  len: u32,
  hash: u64,
  sum: u64,
}

impl TermSums {
  fn term(&self, slot: &Slot) -> &str {
    &self.arena[slot.start as usize..(slot.start + slot.len) as usize]
  }

  /// Adds `units` to `term`'s sum. A term not yet here is added only when
  /// `admit` agrees (it is asked once per refused occurrence).
  pub(super) fn add(&mut self, term: &str, units: u64, admit: impl FnOnce(&str) -> bool) {
    let lookup = TermLookup::new(term);
    let TermSums { arena, slots, table } = self;
    let found = table.find(lookup.hash, |&at| {
      let slot = &slots[at as usize];
      lookup.is(slot.key, slot.len as usize, || &arena.as_bytes()[slot.start as usize..][..slot.len as usize])
    });
    if let Some(&at) = found {
      slots[at as usize].sum += units;
      return;
    }
    if !admit(term) {
      return;
    }
    let at = slots.len() as u32;
    let (key, hash) = (lookup.key, lookup.hash);
    slots.push(Slot { key, start: arena.len() as u32, len: term.len() as u32, hash, sum: units });
    arena.push_str(term);
    table.insert_unique(hash, at, |&at| slots[at as usize].hash);
  }

  /// The terms in byte order with their sums.
  pub(super) fn sorted(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
    // The keys decide most comparisons without reading the arena; equal
    // keys fall back to the terms (a zero-padded key ties only where one
    // term extends the other, and then the terms' own order is the answer).
    let mut order: Vec<(u64, u32)> = self.slots.iter().enumerate().map(|(at, slot)| (slot.key, at as u32)).collect();
    order.sort_unstable_by(|(a_key, a), (b_key, b)| {
      a_key.cmp(b_key).then_with(|| self.term(&self.slots[*a as usize]).cmp(self.term(&self.slots[*b as usize])))
    });
    order.into_iter().map(|(_, at)| {
      let slot = &self.slots[at as usize];
      (self.term(slot), slot.sum)
    })
  }
}

//! A shard's posting list for one term: the members holding it, ascending,
//! each with the session's frequency class of the term. Written sparse or
//! dense, whichever takes fewer bytes.
//!
//! Sparse: per member a varint of its gap from the member before (the first
//! from -1, so every gap is at least 1) shifted left by two bits that code
//! the class. The three commonest classes ride in those bits, so most
//! postings are one byte where they were two: over a `medium` index's
//! postings, classes 1, 4 and 2 (a quarter, one and half an occurrence) are
//! 46 %, 15 % and 14 %; this took its shards' postings 11.2 → 7.6 MB, and
//! `huge`'s 304 → 208 MB. Any other class follows as a byte of its own.
//!
//! Dense, for a term most of a shard's members hold: a zero byte (no sparse
//! list starts with one: its first gap is at least 1), a bitmap of the
//! shard's members (bit `m % 8` of byte `m / 8`), the members' class codes
//! two bits each in member order (four to a byte, low bits first), then the
//! escaped classes' bytes in member order. Over `medium`'s shards grouped by
//! project, lists took 6.17 → 4.53 MB.

use crate::index::varint;

/// The classes a code stands for; the last code says a byte follows.
const CODED: [u8; 3] = [1, 2, 4];
const ESCAPE: u64 = CODED.len() as u64;
const CODE_BITS: u32 = 2;
/// A dense list's first byte.
const DENSE: u8 = 0;

fn code_of(class: u8) -> u64 {
  CODED.iter().position(|&coded| coded == class).map_or(ESCAPE, |code| code as u64)
}

fn varint_len(value: u64) -> usize {
  (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

/// Each posting's sparse varint (its gap from the member before, the first
/// from -1, with the class code in the low bits) and its class.
fn sparse_values(postings: &[(u32, u8)]) -> impl Iterator<Item = (u64, u8)> + '_ {
  let mut previous = -1i64;
  postings.iter().map(move |&(member, class)| {
    let gap = (i64::from(member) - std::mem::replace(&mut previous, i64::from(member))) as u64;
    (gap << CODE_BITS | code_of(class), class)
  })
}

/// Writes the list of `postings` (members ascending, unique, each below
/// `members`) in whichever form is smaller.
pub(super) fn put_list(out: &mut Vec<u8>, postings: &[(u32, u8)], members: u32) {
  let escapes = postings.iter().filter(|&&(_, class)| code_of(class) == ESCAPE).count();
  let sparse = sparse_values(postings).map(|(value, _)| varint_len(value)).sum::<usize>() + escapes;
  let dense = 1 + (members as usize).div_ceil(8) + postings.len().div_ceil(4) + escapes;
  if dense < sparse {
    put_dense(out, postings, members);
  } else {
    put_sparse(out, postings);
  }
}

fn put_sparse(out: &mut Vec<u8>, postings: &[(u32, u8)]) {
  for (value, class) in sparse_values(postings) {
    varint::put(out, value);
    if value & ESCAPE == ESCAPE {
      out.push(class);
    }
  }
}

fn put_dense(out: &mut Vec<u8>, postings: &[(u32, u8)], members: u32) {
  out.push(DENSE);
  let bitmap = out.len();
  out.resize(bitmap + (members as usize).div_ceil(8), 0);
  for &(member, _) in postings {
    out[bitmap + member as usize / 8] |= 1 << (member % 8);
  }
  let codes = out.len();
  out.resize(codes + postings.len().div_ceil(4), 0);
  for (at, &(_, class)) in postings.iter().enumerate() {
    out[codes + at / 4] |= (code_of(class) as u8) << (CODE_BITS as usize * (at % 4));
  }
  out.extend(postings.iter().map(|&(_, class)| class).filter(|&class| code_of(class) == ESCAPE));
}

/// The postings of one list of a shard of `members` members, as written by
/// [`put_list`]. A list cut short or otherwise malformed ends early; a dense
/// one names no member past `members`.
pub(super) fn read(list: &[u8], members: u32) -> Postings<'_> {
  match list.split_first() {
    Some((&DENSE, rest)) => {
      let bitmap = rest.get(..(members as usize).div_ceil(8)).unwrap_or_default();
      let tail = &rest[bitmap.len()..];
      let count = bitmap.iter().map(|byte| byte.count_ones() as usize).sum::<usize>();
      let (codes, escapes) = tail.split_at(count.div_ceil(4).min(tail.len()));
      Postings::Dense { bitmap, codes, escapes, members, member: 0, at: 0 }
    }
    _ => Postings::Sparse { list, at: 0, member: -1 },
  }
}

/// An iterator over one list's (member, class).
pub(super) enum Postings<'a> {
  Sparse { list: &'a [u8], at: usize, member: i64 },
  Dense { bitmap: &'a [u8], codes: &'a [u8], escapes: &'a [u8], members: u32, member: u32, at: usize },
}

impl Iterator for Postings<'_> {
  type Item = (u32, u8);

  #[inline]
  fn next(&mut self) -> Option<(u32, u8)> {
    match self {
      Postings::Sparse { list, at, member } => {
        let value = varint::take(list, at)?;
        let gap = i64::try_from(value >> CODE_BITS).ok().filter(|&gap| gap > 0)?;
        *member = u32::try_from(*member + gap).ok().map(i64::from)?;
        let class = class_of(value & ESCAPE, list, at)?;
        Some((*member as u32, class))
      }
      Postings::Dense { bitmap, codes, escapes, members, member, at } => {
        // The next set bit at or after `member`, skipping clear bytes whole.
        let found = loop {
          if *member >= *members {
            return None;
          }
          let byte = bitmap.get(*member as usize / 8)? >> (*member % 8);
          match byte {
            0 => *member = (*member / 8 + 1) * 8,
            _ => break *member + byte.trailing_zeros(),
          }
        };
        if found >= *members {
          return None;
        }
        *member = found + 1;
        let code = (codes.get(*at / 4)? >> (CODE_BITS as usize * (*at % 4))) & 3;
        *at += 1;
        let class = match CODED.get(code as usize) {
          Some(&class) => class,
          None => {
            let (&class, rest) = escapes.split_first()?;
            *escapes = rest;
            class
          }
        };
        Some((found, class))
      }
    }
  }
}

/// The class a sparse posting's `code` stands for, reading its escaped byte at `*at`.
#[inline]
fn class_of(code: u64, list: &[u8], at: &mut usize) -> Option<u8> {
  match CODED.get(code as usize) {
    Some(&class) => Some(class),
    None => {
      let class = *list.get(*at)?;
      *at += 1;
      Some(class)
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use proptest::prelude::*;

  /// Ascending unique members below `members`, each with a class.
  fn list() -> impl Strategy<Value = (Vec<(u32, u8)>, u32)> {
    (1u32..300).prop_flat_map(|members| {
      let postings = proptest::collection::btree_map(
        0..members,
        prop_oneof![Just(1u8), Just(2), Just(4), any::<u8>()],
        0..members as usize,
      );
      (postings.prop_map(|map| map.into_iter().collect::<Vec<_>>()), Just(members))
    })
  }

  proptest! {
    #![proptest_config(crate::testing::proptest_config(256))]

    /// Either form reads back what was written, and the smaller one is written.
    #[test]
    fn any_list_reads_back_in_its_smaller_form((postings, members) in list()) {
      let (mut written, mut sparse, mut dense) = (Vec::new(), Vec::new(), Vec::new());
      put_list(&mut written, &postings, members);
      put_sparse(&mut sparse, &postings);
      put_dense(&mut dense, &postings, members);
      prop_assert_eq!(written.len(), sparse.len().min(dense.len()));
      for form in [&written, &sparse, &dense] {
        prop_assert_eq!(read(form, members).collect::<Vec<_>>(), postings.clone());
      }
      // Cut short, any form reads a prefix of its postings, never more.
      for cut in 0..written.len() {
        let read: Vec<(u32, u8)> = read(&written[..cut], members).collect();
        prop_assert!(read.len() <= postings.len() && read.iter().all(|p| postings.contains(p)), "cut at {}", cut);
      }
    }
  }

  #[test]
  fn a_list_most_members_hold_is_dense_and_a_few_sparse() {
    let all: Vec<(u32, u8)> = (0..64).map(|m| (m, 1)).collect();
    let mut out = Vec::new();
    put_list(&mut out, &all, 64);
    assert_eq!((out[0], out.len()), (DENSE, 1 + 8 + 16));
    let few = [(0, 1), (31, 2), (32, 200)];
    let mut out = Vec::new();
    put_list(&mut out, &few, 64);
    assert_eq!(out, [1 << 2, 31 << 2 | 1, 1 << 2 | 3, 200]);
    assert_eq!(read(&out, 64).collect::<Vec<_>>(), few);
  }

  #[test]
  fn every_class_and_gap_reads_back_and_the_coded_ones_take_a_byte() {
    for class in 0..=255u8 {
      let postings = [(0, class), (31, class), (63, class), (u32::MAX - 1, class)];
      let mut out = Vec::new();
      put_sparse(&mut out, &postings);
      assert_eq!(read(&out, u32::MAX).collect::<Vec<_>>(), postings);
      let mut one = Vec::new();
      put_sparse(&mut one, &[(30, class)]);
      assert_eq!(one.len(), if [1, 2, 4].contains(&class) { 1 } else { 2 }, "class {class}");
    }
  }

  #[test]
  fn a_malformed_list_ends_early() {
    let mut out = Vec::new();
    put_sparse(&mut out, &[(7, 200)]);
    assert_eq!(read(&out[..1], 8).count(), 0, "the escaped class is missing");
    let mut big = Vec::new();
    varint::put(&mut big, (u64::from(u32::MAX) + 2) << CODE_BITS);
    assert_eq!(read(&big, u32::MAX).count(), 0, "past the last member ordinal");
    let mut zero_gap = Vec::new();
    put_sparse(&mut zero_gap, &[(3, 1)]);
    varint::put(&mut zero_gap, 0 << CODE_BITS | 1);
    assert_eq!(read(&zero_gap, 8).collect::<Vec<_>>(), [(3, 1)], "a repeated member ends it");
    // A dense bitmap naming members past the shard's: none read.
    assert_eq!(read(&[DENSE, 0xff, 0x00], 3).map(|(m, _)| m).collect::<Vec<_>>(), [0, 1, 2]);
  }
}

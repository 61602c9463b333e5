//! LEB128 varints: what the index's own binary layouts (dictionary shards,
//! hot postings) write small integers as. Most values there (deltas,
//! counts, term frequencies) take one byte.

pub(crate) fn put(out: &mut Vec<u8>, mut value: u64) {
  while value >= 0x80 {
    out.push(value as u8 | 0x80);
    value >>= 7;
  }
  out.push(value as u8);
}

/// The varint at `*at`, moving `at` past it; `None` when the bytes end
/// first or it overflows 64 bits.
#[inline]
pub(crate) fn take(bytes: &[u8], at: &mut usize) -> Option<u64> {
  let first = *bytes.get(*at)?;
  *at += 1;
  if first < 0x80 {
    return Some(u64::from(first));
  }
  let mut value = u64::from(first & 0x7f);
  let mut shift = 7;
  while shift < 64 {
    let byte = *bytes.get(*at)?;
    *at += 1;
    value |= u64::from(byte & 0x7f) << shift;
    if byte < 0x80 {
      return Some(value);
    }
    shift += 7;
  }
  None
}

/// [`take`] of a value that must fit a `u32`.
#[inline]
pub(crate) fn take_u32(bytes: &[u8], at: &mut usize) -> Option<u32> {
  take(bytes, at).and_then(|value| u32::try_from(value).ok())
}

#[cfg(test)]
mod tests {
  use super::*;

  proptest::proptest! {
    #[test]
    fn any_value_round_trips(values in proptest::collection::vec(proptest::num::u64::ANY, 0..20)) {
      let mut bytes = Vec::new();
      values.iter().for_each(|&v| put(&mut bytes, v));
      let mut at = 0;
      let back: Vec<u64> = values.iter().map(|_| take(&bytes, &mut at).unwrap()).collect();
      proptest::prop_assert_eq!(back, values);
      proptest::prop_assert_eq!(at, bytes.len());
      proptest::prop_assert_eq!(take(&bytes, &mut at), None);
    }
  }

  #[test]
  fn an_overlong_varint_is_refused() {
    let mut at = 0;
    assert_eq!(take(&[0xff; 11], &mut at), None);
    let mut at = 0;
    assert_eq!(take_u32(&[0x80, 0x80, 0x80, 0x80, 0x10], &mut at), None);
  }
}

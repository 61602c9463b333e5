//! A cold record's addresses as stored: the typed fields of most entries
//! repeat (a session has a few dozen combinations of role, tool, reference,
//! provider, action and outcome), so each combination is written once and an
//! address names it by number; entry indices and timestamps are deltas from
//! the address before (small varints). The addresses decode back exactly;
//! JSON (diagnostics) shows them as they are.

use super::super::kind::{key_of_typed, Key};
use super::Address;
use crate::session::entry::Typed;
use rustc_hash::FxHashMap;
use serde::{de::Error as _, Deserialize, Deserializer, Serialize, Serializer};

#[derive(Serialize, Deserialize)]
struct Packed {
  /// The distinct typed fields (timestamps cleared), in first-use order.
  kinds: Vec<Typed>,
  rows: Vec<Row>,
}

#[derive(Serialize, Deserialize)]
struct Row {
  /// The entry index minus the previous address's (the first's minus 0).
  index: i64,
  entry_id: Option<String>,
  operation_address: Option<String>,
  /// Its typed fields: an index into [`Packed::kinds`].
  kind: u32,
  /// The timestamp minus the last timestamp before it (0 before the first),
  /// wrapping: any pair of `i64` round-trips.
  timestamp: Option<i64>,
}

fn pack(addresses: &[Address]) -> Packed {
  // Keyed by the borrowed fields: a combination's strings are cloned once,
  // not once per address.
  let mut numbers: FxHashMap<Key<'_>, u32> = FxHashMap::default();
  let mut kinds = Vec::new();
  let (mut index, mut timestamp) = (0i64, 0i64);
  let rows = addresses
    .iter()
    .map(|address| {
      let mut fields = key_of_typed(&address.typed);
      fields.6 = None; // the timestamp: a row's own
      let kind = *numbers.entry(fields).or_insert_with(|| {
        kinds.push(Typed { timestamp: None, ..address.typed.clone() });
        kinds.len() as u32 - 1
      });
      let row = Row {
        index: i64::from(address.index) - index,
        entry_id: address.entry_id.clone(),
        operation_address: address.operation_address.clone(),
        kind,
        timestamp: address.typed.timestamp.map(|at| at.wrapping_sub(timestamp)),
      };
      index = i64::from(address.index);
      timestamp = address.typed.timestamp.unwrap_or(timestamp);
      row
    })
    .collect();
  Packed { kinds, rows }
}

/// `None` for rows that name no kind or no `u32` entry index.
fn unpack(packed: Packed) -> Option<Vec<Address>> {
  let (mut index, mut timestamp) = (0i64, 0i64);
  packed
    .rows
    .into_iter()
    .map(|row| {
      index = index.checked_add(row.index)?;
      let at = row.timestamp.map(|delta| timestamp.wrapping_add(delta));
      timestamp = at.unwrap_or(timestamp);
      let typed = Typed { timestamp: at, ..packed.kinds.get(row.kind as usize)?.clone() };
      let (entry_id, operation_address) = (row.entry_id, row.operation_address);
      Some(Address { index: u32::try_from(index).ok()?, entry_id, operation_address, typed })
    })
    .collect()
}

pub fn serialize<S: Serializer>(addresses: &[Address], serializer: S) -> Result<S::Ok, S::Error> {
  if serializer.is_human_readable() {
    return addresses.serialize(serializer);
  }
  pack(addresses).serialize(serializer)
}

pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Address>, D::Error> {
  if deserializer.is_human_readable() {
    return Vec::<Address>::deserialize(deserializer);
  }
  unpack(Packed::deserialize(deserializer)?).ok_or_else(|| D::Error::custom("malformed packed addresses"))
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::session::entry::Outcome;
  use proptest::prelude::*;

  #[derive(Debug, PartialEq, Serialize, Deserialize)]
  struct Holder(#[serde(with = "super")] Vec<Address>);

  fn address(index: u32, tool: Option<&str>, outcome: Option<Outcome>, timestamp: Option<i64>) -> Address {
    let typed =
      Typed { role: Some("toolResult".into()), tool: tool.map(Into::into), outcome, timestamp, ..Typed::default() };
    Address { index, entry_id: Some(format!("{index:08x}")), operation_address: None, typed }
  }

  #[test]
  fn repeated_typed_fields_are_stored_once_and_decode_exactly() {
    let addresses: Vec<Address> = (0..100)
      .map(|i| {
        address(
          i * 2,
          Some(["read", "bash"][i as usize % 2]),
          Some(Outcome::Succeeded),
          Some(1_784_456_544_980 + i64::from(i) * 900),
        )
      })
      .collect();
    let packed = pack(&addresses);
    assert_eq!(packed.kinds.len(), 2);
    let bytes = postcard::to_allocvec(&Holder(addresses.clone())).unwrap();
    let plain = postcard::to_allocvec(&addresses).unwrap();
    assert!(bytes.len() * 2 < plain.len(), "{} packed against {} plain bytes", bytes.len(), plain.len());
    assert_eq!(postcard::from_bytes::<Holder>(&bytes).unwrap().0, addresses);
    let json = serde_json::to_value(Holder(addresses[..1].to_vec())).unwrap();
    assert_eq!(json[0]["typed"]["tool"], "read", "JSON shows addresses as they are");
  }

  #[test]
  fn rows_that_name_no_kind_or_index_are_an_error() {
    let kinds = vec![Typed::default()];
    let row = |index, kind| Row { index, entry_id: None, operation_address: None, kind, timestamp: None };
    assert!(unpack(Packed { kinds: kinds.clone(), rows: vec![row(0, 1)] }).is_none());
    assert!(unpack(Packed { kinds: kinds.clone(), rows: vec![row(-1, 0)] }).is_none());
    assert!(unpack(Packed { kinds, rows: vec![row(i64::from(u32::MAX) + 1, 0)] }).is_none());
  }

  fn any_address() -> impl Strategy<Value = Address> {
    let tool = proptest::option::of(prop_oneof![Just("read".to_string()), Just("bash".to_string()), "[a-z]{1,4}"]);
    let outcome = proptest::option::of(prop_oneof![Just(Outcome::Succeeded), Just(Outcome::Failed)]);
    (any::<u32>(), proptest::option::of("[0-9a-f]{8}"), tool, outcome, proptest::option::of(any::<i64>())).prop_map(
      |(index, entry_id, tool, outcome, timestamp)| Address {
        index,
        entry_id,
        operation_address: None,
        typed: Typed { tool, outcome, timestamp, ..Typed::default() },
      },
    )
  }

  proptest! {
    #[test]
    fn any_addresses_decode_to_themselves(addresses in proptest::collection::vec(any_address(), 0..30)) {
      let bytes = postcard::to_allocvec(&Holder(addresses.clone())).unwrap();
      prop_assert_eq!(postcard::from_bytes::<Holder>(&bytes).unwrap().0, addresses);
    }
  }
}

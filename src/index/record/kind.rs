//! Interned typed kinds: the distinct typed-field combinations of a cold
//! digest's addresses (timestamps cleared), shared across every digest of
//! the process.
//!
//! A cold head keeps ~12 kinds of ~5 strings each. Owned, they were over
//! half of a resident head's memory (at 100,000 cold sessions ~400 MB of
//! the warm process's RSS) and most of a fresh process's allocations while
//! decoding heads, yet a whole history has only a few hundred distinct
//! kinds. A [`Kind`] is one pointer to the process's single copy of its
//! value; decoding looks the borrowed fields up before allocating anything.
//!
//! Kinds are never freed: their timestamps are cleared, so a process meets
//! only as many as its sessions have distinct roles, tools, references,
//! providers, actions and outcomes (a few hundred in a whole history). A
//! reference count instead had both threads decoding 100,000 heads
//! increment and decrement the same few hundred shared counters ~1.2
//! million times.

use crate::session::entry::{Outcome, Typed};
use parking_lot::Mutex;
use rustc_hash::{FxBuildHasher, FxHashMap};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::hash::{Hash, Hasher};

/// A typed-field combination, one allocation per distinct value in the
/// process's life: two kinds are equal exactly when they are the same
/// pointer (every kind is in the table, so an equal value interned later
/// finds it).
#[derive(Clone, Copy)]
pub struct Kind(&'static Typed);

/// The typed fields as a decoder holds them: borrowed from its input
/// where it can (postcard always can), owned otherwise.
#[derive(Deserialize)]
struct Fields<'a> {
  #[serde(borrow)]
  role: Option<Text<'a>>,
  #[serde(borrow)]
  tool: Option<Text<'a>>,
  #[serde(borrow)]
  reference: Option<Text<'a>>,
  #[serde(borrow)]
  provider: Option<Text<'a>>,
  #[serde(borrow)]
  action: Option<Text<'a>>,
  outcome: Option<Outcome>,
  timestamp: Option<i64>,
}

/// A string field that borrows from the decoder's input when it can
/// (serde's own `Cow` borrows nothing inside an `Option`).
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
  fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Text<'a>, D::Error> {
    struct Visit;
    impl<'de> serde::de::Visitor<'de> for Visit {
      type Value = Text<'de>;
      fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string")
      }
      fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Borrowed(text)))
      }
      fn visit_str<E>(self, text: &str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Owned(text.to_string())))
      }
      fn visit_string<E>(self, text: String) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Owned(text)))
      }
    }
    deserializer.deserialize_str(Visit)
  }
}

/// A typed-field combination's fields, borrowed: what equal combinations
/// share, looked up without cloning their strings.
pub(crate) type Key<'a> =
  (Option<&'a str>, Option<&'a str>, Option<&'a str>, Option<&'a str>, Option<&'a str>, Option<Outcome>, Option<i64>);

pub(crate) fn key_of_typed(t: &Typed) -> Key<'_> {
  (
    t.role.as_deref(),
    t.tool.as_deref(),
    t.reference.as_deref(),
    t.provider.as_deref(),
    t.action.as_deref(),
    t.outcome,
    t.timestamp,
  )
}

impl Fields<'_> {
  fn key(&self) -> Key<'_> {
    (
      self.role.as_ref().map(|t| &*t.0),
      self.tool.as_ref().map(|t| &*t.0),
      self.reference.as_ref().map(|t| &*t.0),
      self.provider.as_ref().map(|t| &*t.0),
      self.action.as_ref().map(|t| &*t.0),
      self.outcome,
      self.timestamp,
    )
  }
}

/// The kind `key` names, owned (when it is first interned).
fn typed_of(key: Key<'_>) -> Typed {
  let own = |field: Option<&str>| field.map(str::to_string);
  Typed {
    role: own(key.0),
    tool: own(key.1),
    reference: own(key.2),
    provider: own(key.3),
    action: own(key.4),
    outcome: key.5,
    timestamp: key.6,
  }
}

fn hash(key: &Key<'_>) -> u64 {
  let mut hasher = rustc_hash::FxHasher::default();
  key.hash(&mut hasher);
  hasher.finish()
}

/// Every kind by the hash of its fields.
static TABLE: Mutex<FxHashMap<u64, Vec<&'static Typed>>> =
  parking_lot::const_mutex(FxHashMap::with_hasher(FxBuildHasher));

fn find(table: &FxHashMap<u64, Vec<&'static Typed>>, hashed: u64, key: &Key<'_>) -> Option<&'static Typed> {
  table.get(&hashed)?.iter().find(|t| key_of_typed(t) == *key).copied()
}

fn insert(table: &mut FxHashMap<u64, Vec<&'static Typed>>, hashed: u64, typed: Typed) -> &'static Typed {
  let made: &'static Typed = Box::leak(Box::new(typed));
  table.entry(hashed).or_default().push(made);
  made
}

thread_local! {
  /// The kinds this thread interned, by hash, asked before the table: two
  /// threads decoding 100,000 heads took turns on the table's lock 1.2
  /// million times.
  static RECENT: std::cell::RefCell<FxHashMap<u64, &'static Typed>> = Default::default();
}

impl Kind {
  pub fn intern(typed: Typed) -> Kind {
    let key = key_of_typed(&typed);
    let hashed = hash(&key);
    let mut table = TABLE.lock();
    match find(&table, hashed, &key) {
      Some(found) => Kind(found),
      None => Kind(insert(&mut table, hashed, typed)),
    }
  }

  /// Looks the borrowed fields up first, in this thread's recent kinds and
  /// then in the table: a known kind allocates nothing.
  fn intern_key(key: Key<'_>) -> Kind {
    let hashed = hash(&key);
    let recent = RECENT.with(|recent| recent.borrow().get(&hashed).copied());
    if let Some(found) = recent.filter(|t| key_of_typed(t) == key) {
      return Kind(found);
    }
    let kind = {
      let mut table = TABLE.lock();
      match find(&table, hashed, &key) {
        Some(found) => Kind(found),
        None => Kind(insert(&mut table, hashed, typed_of(key))),
      }
    };
    RECENT.with(|recent| recent.borrow_mut().insert(hashed, kind.0));
    kind
  }

  /// Identity of the interned value: equal for equal kinds.
  pub fn id(&self) -> usize {
    std::ptr::from_ref(self.0) as usize
  }
}

impl std::ops::Deref for Kind {
  type Target = Typed;

  fn deref(&self) -> &Typed {
    self.0
  }
}

impl std::fmt::Debug for Kind {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    self.0.fmt(f)
  }
}

impl PartialEq for Kind {
  fn eq(&self, other: &Kind) -> bool {
    std::ptr::eq(self.0, other.0) || self.0 == other.0
  }
}

impl Eq for Kind {}

impl Serialize for Kind {
  fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    self.0.serialize(serializer)
  }
}

impl<'de> Deserialize<'de> for Kind {
  fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Kind, D::Error> {
    Fields::deserialize(deserializer).map(|fields| Kind::intern_key(fields.key()))
  }
}

/// A cold head's kinds as its record holds them (the [`table`]'s postcard
/// bytes), decoded when a structural filter first asks. A fresh process
/// decodes every cold head of its index and most queries filter nothing:
/// the kinds were a quarter of a head's bytes at `huge` (20 of 83 MB of
/// packed heads) and their interning much of what decoding a head cost.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct HeadKinds(Box<[u8]>);

impl HeadKinds {
  pub fn of(kinds: &[(Kind, u64)]) -> HeadKinds {
    HeadKinds(table::encode(kinds).into())
  }

  /// The kinds with their address counts; `None` for bytes that are not a
  /// table (a record's checksum vouches for them: a bug).
  pub fn decode(&self) -> Option<Vec<(Kind, u64)>> {
    table::decode(&self.0)
  }
}

impl std::fmt::Debug for HeadKinds {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.debug_tuple("HeadKinds").field(&self.decode()).finish()
  }
}

/// Postcard: the table's bytes. JSON (`inspectCacheRecord`): the kinds
/// themselves, as before.
impl Serialize for HeadKinds {
  fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    match serializer.is_human_readable() {
      true => self.decode().unwrap_or_default().serialize(serializer),
      false => serializer.serialize_bytes(&self.0),
    }
  }
}

impl<'de> Deserialize<'de> for HeadKinds {
  fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<HeadKinds, D::Error> {
    if deserializer.is_human_readable() {
      return Vec::<(Kind, u64)>::deserialize(deserializer).map(|kinds| HeadKinds::of(&kinds));
    }
    crate::byte_string::read(deserializer, "a kinds table's bytes", |bytes| Some(HeadKinds(bytes.into())))
  }
}

/// The bytes of a [`HeadKinds`] (postcard): each distinct string once and
/// each kind as indices into them (a head's ~12 kinds spell `assistant`,
/// `toolResult` and each tool's names again and again: a third of a head at
/// `huge`).
mod table {
  use super::{Key, Kind, Text};
  use crate::session::entry::Outcome;
  use serde::{Deserialize, Serialize};

  /// One kind: its five string fields as 1 + their index in the strings
  /// (0: none), its outcome and timestamp, its address count.
  #[derive(Serialize, Deserialize)]
  struct Row {
    fields: [u32; 5],
    outcome: Option<Outcome>,
    timestamp: Option<i64>,
    count: u64,
  }

  #[derive(Serialize)]
  struct Written<'a> {
    strings: Vec<&'a str>,
    rows: Vec<Row>,
  }

  #[derive(Deserialize)]
  struct Read<'a> {
    #[serde(borrow)]
    strings: Vec<Text<'a>>,
    rows: Vec<Row>,
  }

  pub(super) fn encode(kinds: &[(Kind, u64)]) -> Vec<u8> {
    let mut strings: Vec<&'static str> = Vec::new();
    let mut index = |field: &'static Option<String>| match field.as_deref() {
      None => 0,
      Some(text) => {
        1 + strings.iter().position(|s| *s == text).unwrap_or_else(|| {
          strings.push(text);
          strings.len() - 1
        }) as u32
      }
    };
    let rows = kinds
      .iter()
      .map(|(kind, count)| {
        let typed = kind.0;
        let fields = [&typed.role, &typed.tool, &typed.reference, &typed.provider, &typed.action].map(&mut index);
        Row { fields, outcome: typed.outcome, timestamp: typed.timestamp, count: *count }
      })
      .collect();
    postcard::to_allocvec(&Written { strings, rows }).unwrap_or_default()
  }

  /// `None` for bytes that are not a table, or a row naming a string it lacks.
  pub(super) fn decode(bytes: &[u8]) -> Option<Vec<(Kind, u64)>> {
    let Read { strings, rows } = postcard::from_bytes(bytes).ok()?;
    let field = |at: u32| match at {
      0 => Some(None),
      at => strings.get(at as usize - 1).map(|text| Some(&*text.0)),
    };
    // Exactly as long as the rows: a caller may keep this vector.
    let mut kinds = Vec::with_capacity(rows.len());
    for row in rows {
      let [role, tool, reference, provider, action] = row.fields;
      let key: Key<'_> =
        (field(role)?, field(tool)?, field(reference)?, field(provider)?, field(action)?, row.outcome, row.timestamp);
      kinds.push((Kind::intern_key(key), row.count));
    }
    Some(kinds)
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn tool(name: &str) -> Typed {
    Typed {
      role: Some("toolResult".into()),
      tool: Some(name.into()),
      outcome: Some(Outcome::Failed),
      ..Typed::default()
    }
  }

  #[test]
  fn equal_kinds_share_one_value_however_they_were_made() {
    let made = Kind::intern(tool("kind-test-grep"));
    let bytes = postcard::to_allocvec(&made).unwrap();
    let decoded: Kind = postcard::from_bytes(&bytes).unwrap();
    let from_json: Kind = serde_json::from_str(&serde_json::to_string(&made).unwrap()).unwrap();
    assert_eq!((decoded.id(), from_json.id()), (made.id(), made.id()));
    assert_eq!(*decoded, tool("kind-test-grep"));
    // The wire form is the typed fields' own: records need no new version.
    assert_eq!(bytes, postcard::to_allocvec(&tool("kind-test-grep")).unwrap());
    assert_ne!(Kind::intern(tool("kind-test-read")).id(), made.id());
  }

  #[test]
  fn a_recently_decoded_kind_is_the_same_value_on_every_thread() {
    let bytes = postcard::to_allocvec(&tool("kind-test-recent")).unwrap();
    let first: Kind = postcard::from_bytes(&bytes).unwrap();
    let second: Kind = postcard::from_bytes(&bytes).unwrap();
    let elsewhere = std::thread::spawn(move || postcard::from_bytes::<Kind>(&bytes).unwrap().id()).join().unwrap();
    assert_eq!((second.id(), elsewhere), (first.id(), first.id()));
    assert_eq!(Kind::intern(tool("kind-test-recent")).id(), first.id());
    assert_eq!(*first, tool("kind-test-recent"));
  }

  /// A head holds its kinds' strings once, as bytes it decodes when asked;
  /// they decode to the same interned kinds, and JSON still shows the kinds
  /// themselves.
  #[test]
  fn a_head_s_kinds_keep_each_string_once() {
    #[derive(serde::Serialize, serde::Deserialize)]
    struct Head {
      kinds: HeadKinds,
      after: u8,
    }
    let reading = Typed { role: Some("assistant".into()), tool: Some("kind-test-table".into()), ..Typed::default() };
    let kinds =
      vec![(Kind::intern(tool("kind-test-table")), 3), (Kind::intern(reading), 5), (Kind::intern(Typed::default()), 1)];
    let ids = |kinds: &[(Kind, u64)]| kinds.iter().map(|(k, n)| (k.id(), *n)).collect::<Vec<_>>();
    let bytes = postcard::to_allocvec(&Head { kinds: HeadKinds::of(&kinds), after: 7 }).unwrap();
    let count = |word: &[u8]| bytes.windows(word.len()).filter(|w| *w == word).count();
    assert_eq!((count(b"kind-test-table"), count(b"toolResult"), count(b"assistant")), (1, 1, 1));
    let decoded: Head = postcard::from_bytes(&bytes).unwrap();
    assert_eq!((ids(&decoded.kinds.decode().unwrap()), decoded.after), (ids(&kinds), 7));
    let json = serde_json::to_value(Head { kinds: HeadKinds::of(&kinds), after: 7 }).unwrap();
    assert_eq!(json["kinds"][0][0]["tool"], "kind-test-table");
    let back: Head = serde_json::from_value(json).unwrap();
    assert_eq!(ids(&back.kinds.decode().unwrap()), ids(&kinds));
    // No strings, one row naming string 5: an error, never a panic.
    assert_eq!(HeadKinds(Box::new([0u8, 1, 5, 0, 0, 0, 0, 0, 0, 1])).decode(), None);
    let none = HeadKinds(Box::new([0u8, 1, 0, 0, 0, 0, 0, 0, 0, 1])).decode().unwrap();
    assert_eq!(ids(&none), [(Kind::intern(Typed::default()).id(), 1)], "the same row naming none reads");
    assert_eq!(HeadKinds::default().decode(), None, "no bytes: no table");
  }
}

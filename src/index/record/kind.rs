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

  fn into_typed(self) -> Typed {
    let own = |field: Option<Text<'_>>| field.map(|t| t.0.into_owned());
    Typed {
      role: own(self.role),
      tool: own(self.tool),
      reference: own(self.reference),
      provider: own(self.provider),
      action: own(self.action),
      outcome: self.outcome,
      timestamp: self.timestamp,
    }
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
  fn intern_fields(fields: Fields<'_>) -> Kind {
    let key = fields.key();
    let hashed = hash(&key);
    let recent = RECENT.with(|recent| recent.borrow().get(&hashed).copied());
    if let Some(found) = recent.filter(|t| key_of_typed(t) == key) {
      return Kind(found);
    }
    let kind = {
      let mut table = TABLE.lock();
      match find(&table, hashed, &key) {
        Some(found) => Kind(found),
        None => Kind(insert(&mut table, hashed, fields.into_typed())),
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
    Fields::deserialize(deserializer).map(Kind::intern_fields)
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
}

//! A part of a record's head that few readers need, kept as its postcard
//! bytes until one does ([`FirstUse`]). A fresh process reads every cold
//! head (100,000 at scale) for what a synchronization checks and a query
//! ranks with (stamp, policy, tier, length, fingerprint); decoding each
//! head's session id, working dir, titles, kinds and tip as well was a
//! quarter of that decoding's CPU and five allocations a head, for fields
//! that only a hit, a filter or a session list reads. In a record the part
//! is one postcard byte string, so reading a head skips it with one length;
//! in JSON it is the value itself. Heads read from a mapped file keep their
//! parts as ranges of its pages ([`backed_by`]), not as copies.

use super::first_use::FirstUse;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cell::RefCell;
use std::sync::Arc;

#[derive(Clone)]
pub struct Deferred<T> {
  /// The encoded value, as read (`None`: built in this process).
  bytes: Option<Encoded>,
  /// Boxed: a resident head holds two, mostly never decoded, and inline
  /// they were a quarter of its size.
  value: FirstUse<Box<T>>,
}

/// Bytes that outlive their decoding: a mapped file's pages stay in the
/// page cache, not in the process (see [`backed_by`]).
pub type Backing = Arc<dyn AsRef<[u8]> + Send + Sync>;

#[derive(Clone)]
enum Encoded {
  Owned(Box<[u8]>),
  Shared { backing: Backing, at: u32, len: u32 },
}

impl std::ops::Deref for Encoded {
  type Target = [u8];

  fn deref(&self) -> &[u8] {
    match self {
      Encoded::Owned(bytes) => bytes,
      Encoded::Shared { backing, at, len } => &(**backing).as_ref()[*at as usize..][..*len as usize],
    }
  }
}

thread_local! {
  static BACKING: RefCell<Option<Backing>> = const { RefCell::new(None) };
}

/// Runs `decode` (on this thread) with the parts it reads from `backing`
/// kept as ranges of it instead of copies: copied, the parts of 100,000
/// packed heads were ~40 MB more heap, grown a page at a time.
pub fn backed_by<R>(backing: &Backing, decode: impl FnOnce() -> R) -> R {
  /// Puts the previous backing back, also when `decode` unwinds.
  struct Restore(Option<Backing>);
  impl Drop for Restore {
    fn drop(&mut self) {
      BACKING.with(|b| *b.borrow_mut() = self.0.take());
    }
  }
  let _restore = Restore(BACKING.with(|b| b.replace(Some(backing.clone()))));
  decode()
}

/// `bytes` as a range of the current backing when they lie in it.
fn encoded(bytes: &[u8]) -> Encoded {
  let shared = BACKING.with(|b| {
    let backing = b.borrow();
    let backing = backing.as_ref()?;
    let whole = (**backing).as_ref();
    let at = (bytes.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    let len = u32::try_from(bytes.len()).ok()?;
    let inside = at.checked_add(bytes.len())? <= whole.len();
    inside.then_some(Encoded::Shared { at: u32::try_from(at).ok()?, len, backing: backing.clone() })
  });
  shared.unwrap_or_else(|| Encoded::Owned(bytes.into()))
}

impl<T: DeserializeOwned + Default> Deferred<T> {
  pub fn new(value: T) -> Deferred<T> {
    Deferred { bytes: None, value: FirstUse::of(Box::new(value)) }
  }

  /// The value, decoded on first use (the default when its bytes do not
  /// decode: see [`Deferred::damaged`]).
  pub fn get(&self) -> &T {
    let decode = || postcard::from_bytes(self.bytes.as_deref()?).ok().map(Box::new);
    self.value.get(decode, Box::default)
  }

  /// Decoded, and found not to decode: a damaged record, rebuilt by the
  /// next synchronization.
  pub fn damaged(&self) -> bool {
    self.value.damaged()
  }
}

impl<T: DeserializeOwned + Default + PartialEq> PartialEq for Deferred<T> {
  fn eq(&self, other: &Self) -> bool {
    self.get() == other.get()
  }
}

impl<T: DeserializeOwned + Default + std::fmt::Debug> std::fmt::Debug for Deferred<T> {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    self.get().fmt(f)
  }
}

impl<T: Serialize + DeserializeOwned + Default> Serialize for Deferred<T> {
  fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    match (serializer.is_human_readable(), &self.bytes) {
      (true, _) => self.get().serialize(serializer),
      (false, Some(bytes)) => serializer.serialize_bytes(bytes),
      (false, None) => {
        let bytes = postcard::to_allocvec(self.get()).map_err(serde::ser::Error::custom)?;
        serializer.serialize_bytes(&bytes)
      }
    }
  }
}

impl<'de, T: DeserializeOwned + Default> Deserialize<'de> for Deferred<T> {
  fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Deferred<T>, D::Error> {
    if deserializer.is_human_readable() {
      return T::deserialize(deserializer).map(Deferred::new);
    }
    // Bytes a decoder copied first never lie in a backing: `encoded` copies them.
    let bytes = crate::byte_string::read(deserializer, "an encoded part of a record's head", |b| Some(encoded(b)))?;
    Ok(Deferred { bytes: Some(bytes), value: FirstUse::pending() })
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
  struct Part {
    name: String,
    count: u64,
  }

  #[derive(Debug, PartialEq, Serialize, Deserialize)]
  struct Holder {
    before: u32,
    part: Deferred<Part>,
    after: u32,
  }

  fn holder(name: &str) -> Holder {
    Holder { before: 7, part: Deferred::new(Part { name: name.into(), count: 3 }), after: 9 }
  }

  #[test]
  fn a_part_read_back_encodes_to_the_same_bytes_and_decodes_on_first_use() {
    let bytes = postcard::to_allocvec(&holder("titles")).unwrap();
    let read: Holder = postcard::from_bytes(&bytes).unwrap();
    assert_eq!((read.before, read.after), (7, 9), "the fields after the part are read past it");
    assert_eq!(postcard::to_allocvec(&read).unwrap(), bytes, "re-encoded from its bytes, undecoded");
    assert_eq!(read.part.get(), &Part { name: "titles".into(), count: 3 });
    assert!(!read.part.damaged());
    assert_eq!(read, holder("titles"));
    assert_ne!(read, holder("other"));
  }

  #[test]
  fn a_part_read_under_a_backing_is_a_range_of_it() {
    let bytes = postcard::to_allocvec(&holder("shared")).unwrap();
    let backing: Backing = Arc::new(bytes.clone());
    let read: Holder = backed_by(&backing, || postcard::from_bytes((*backing).as_ref()).unwrap());
    assert!(matches!(read.part.bytes, Some(Encoded::Shared { .. })));
    assert_eq!(Arc::strong_count(&backing), 2, "the part holds the backing, the thread no longer does");
    // Bytes that are not the backing's are copied, under it or not.
    let copied: Holder = backed_by(&backing, || postcard::from_bytes(&bytes).unwrap());
    assert!(matches!(copied.part.bytes, Some(Encoded::Owned(_))));
    drop(backing);
    assert_eq!(read.part.get(), &Part { name: "shared".into(), count: 3 });
    assert_eq!(postcard::to_allocvec(&read).unwrap(), bytes);
  }

  #[test]
  fn json_shows_the_value_and_reads_it_back() {
    let json = serde_json::to_value(holder("x")).unwrap();
    assert_eq!(json["part"], serde_json::json!({ "name": "x", "count": 3 }));
    let back: Holder = serde_json::from_value(json).unwrap();
    assert_eq!(back, holder("x"));
  }

  #[test]
  fn bytes_that_do_not_decode_give_the_default_and_say_so() {
    let mut bytes = postcard::to_allocvec(&holder("abc")).unwrap();
    // The part's string length (after `before` and the part's own length) now runs past the part.
    bytes[2] = 0x7f;
    let read: Holder = postcard::from_bytes(&bytes).unwrap();
    assert!(!read.part.damaged(), "not decoded yet");
    assert_eq!(read.part.get(), &Part::default());
    assert!(read.part.damaged());
  }
}

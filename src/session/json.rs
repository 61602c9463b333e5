//! Lenient readers for raw JSON fields.
//!
//! Session files come from many writers; a field of an unexpected type must
//! never lose the record. Each reader returns `None` for the wrong type.

use serde_json::value::RawValue;
use serde_json::Value;

pub fn string(raw: Option<&RawValue>) -> Option<String> {
  let raw = raw?;
  if !raw.get().starts_with('"') {
    return None;
  }
  serde_json::from_str(raw.get()).ok()
}

pub fn boolean(raw: Option<&RawValue>) -> Option<bool> {
  match raw?.get() {
    "true" => Some(true),
    "false" => Some(false),
    _ => None,
  }
}

pub fn number(raw: Option<&RawValue>) -> Option<f64> {
  let text = raw?.get();
  if text.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
    serde_json::from_str::<f64>(text).ok().filter(|n| n.is_finite())
  } else {
    None
  }
}

pub fn value(raw: Option<&RawValue>) -> Option<Value> {
  serde_json::from_str(raw?.get()).ok()
}

/// Compact JSON text of a raw value, equal to `JSON.stringify(JSON.parse(raw))`
/// for input that JSON.stringify wrote (Pi's case): whitespace outside
/// strings is removed, everything else is kept byte for byte.
pub fn compact(raw: &str) -> String {
  let mut out = String::with_capacity(raw.len());
  let mut in_string = false;
  let mut escaped = false;
  for ch in raw.chars() {
    if in_string {
      out.push(ch);
      if escaped {
        escaped = false;
      } else if ch == '\\' {
        escaped = true;
      } else if ch == '"' {
        in_string = false;
      }
    } else if ch == '"' {
      in_string = true;
      out.push(ch);
    } else if !ch.is_ascii_whitespace() {
      out.push(ch);
    }
  }
  out
}

/// UTF-8 byte length of `JSON.stringify(value)`.
pub fn serialized_bytes(value: &Value) -> usize {
  serde_json::to_string(value).map(|s| s.len()).unwrap_or(usize::MAX)
}

/// A string borrowed from the input when it has no escapes (what
/// `#[serde(borrow)] Cow<str>` does in derived impls).
pub struct CowStr<'a>(pub std::borrow::Cow<'a, str>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for CowStr<'a> {
  fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
    struct Visit<'a>(std::marker::PhantomData<&'a ()>);
    impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
      type Value = CowStr<'a>;
      fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string")
      }
      fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(CowStr(std::borrow::Cow::Borrowed(v)))
      }
      fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(CowStr(std::borrow::Cow::Owned(v.to_owned())))
      }
    }
    deserializer.deserialize_str(Visit(std::marker::PhantomData))
  }
}

/// `Deserialize` for a struct of optional borrowed fields with
/// `JSON.parse` semantics: a duplicated key keeps its last value (derived
/// impls reject the whole object), unknown keys are skipped. `cow` fields
/// are `Option<Cow<'a, str>>`, `raw` fields any `Option<T>`.
macro_rules! last_wins {
  ($name:ident { cow { $($cow:ident: $cow_key:literal),* $(,)? } raw { $($raw:ident: $raw_key:literal),* $(,)? } }) => {
    impl<'de: 'a, 'a> serde::Deserialize<'de> for $name<'a> {
      fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
          type Value = $name<'a>;
          fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
          }
          fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
            use $crate::session::json::CowStr;
            let mut out = $name::default();
            while let Some(CowStr(key)) = map.next_key::<CowStr<'de>>()? {
              match key.as_ref() {
                $($cow_key => out.$cow = map.next_value::<Option<CowStr<'de>>>()?.map(|s| s.0),)*
                $($raw_key => out.$raw = map.next_value()?,)*
                _ => {
                  map.next_value::<serde::de::IgnoredAny>()?;
                }
              }
            }
            Ok(out)
          }
        }
        deserializer.deserialize_map(Visit(std::marker::PhantomData))
      }
    }
  };
}
pub(crate) use last_wins;

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn compact_keeps_strings_verbatim() {
    assert_eq!(compact("{ \"a b\" : [1, 2],\n \"c\":\"x\\\" y\" }"), "{\"a b\":[1,2],\"c\":\"x\\\" y\"}");
  }

  #[test]
  fn readers_reject_wrong_types() {
    let raw: Box<RawValue> = serde_json::from_str("12").unwrap();
    assert_eq!(string(Some(&raw)), None);
    assert_eq!(number(Some(&raw)), Some(12.0));
    assert_eq!(boolean(Some(&raw)), None);
  }
}

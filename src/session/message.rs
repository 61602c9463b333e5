//! A message record's `message` and its content, parsed with the line
//! that holds it: the content blocks and text fields decoded in that one
//! pass. Each used to stay raw JSON that the next step scanned again (the
//! message, then its content, then each block, then each block's text: a
//! tool result's text was scanned five times; skipping strings was ~8 % of
//! a cold build's samples).
//!
//! Every type here never fails on valid JSON: a value of another type reads
//! as absent (as `session::json`'s raw readers read it), so no field's type
//! can make its line a bad line. Strings are decoded, so a lone surrogate
//! escape would fail its line: `session::decode` replaces them before any
//! parse.

use super::json;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// What a lenient value makes of each JSON shape: a string, null, an array
/// or an object goes to `string`, `null`, `seq` or `map` (each `other`
/// unless overridden; arrays and objects skipped), every other value to
/// `other`. Never an error on valid JSON.
trait Shape<'de>: Sized {
  fn other() -> Self;
  fn string(_: Cow<'de, str>) -> Self {
    Self::other()
  }
  fn null() -> Self {
    Self::other()
  }
  fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(Self::other())
  }
  fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(Self::other())
  }
}

struct ShapeVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Shape<'de>> Visitor<'de> for ShapeVisitor<T> {
  type Value = T;

  fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str("any JSON value")
  }
  fn visit_borrowed_str<E>(self, v: &'de str) -> Result<T, E> {
    Ok(T::string(Cow::Borrowed(v)))
  }
  fn visit_str<E>(self, v: &str) -> Result<T, E> {
    Ok(T::string(Cow::Owned(v.to_owned())))
  }
  fn visit_string<E>(self, v: String) -> Result<T, E> {
    Ok(T::string(Cow::Owned(v)))
  }
  fn visit_unit<E>(self) -> Result<T, E> {
    Ok(T::null())
  }
  fn visit_none<E>(self) -> Result<T, E> {
    Ok(T::null())
  }
  fn visit_bool<E>(self, _: bool) -> Result<T, E> {
    Ok(T::other())
  }
  fn visit_i64<E>(self, _: i64) -> Result<T, E> {
    Ok(T::other())
  }
  fn visit_u64<E>(self, _: u64) -> Result<T, E> {
    Ok(T::other())
  }
  fn visit_f64<E>(self, _: f64) -> Result<T, E> {
    Ok(T::other())
  }
  fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
    T::seq(seq)
  }
  fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
    T::map(map)
  }
}

/// `Deserialize` for a [`Shape`].
macro_rules! deserialize_shape {
  ($name:ident) => {
    impl<'de> Deserialize<'de> for $name<'de> {
      fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ShapeVisitor(std::marker::PhantomData))
      }
    }
  };
}

/// [`Shape`] and `Deserialize` for a struct of lenient fields read from a
/// JSON object: a duplicated key keeps its last value (as in `JSON.parse`),
/// unknown keys are skipped, and the struct reads as its default when the
/// value is not an object or its `kind` field (`type`, `role`) is neither a
/// string nor null, as when each was parsed on its own and a failed parse
/// gave the default.
macro_rules! lenient_object {
  ($name:ident { kind $kind:ident: $kind_key:literal, $($field:ident: $key:literal),* $(,)? }) => {
    impl<'de> Shape<'de> for $name<'de> {
      fn other() -> Self {
        $name::default()
      }
      fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let (mut out, mut typed) = ($name::default(), true);
        while let Some(json::CowStr(key)) = map.next_key::<json::CowStr<'de>>()? {
          match key.as_ref() {
            $kind_key => match map.next_value::<Scalar<'de>>()? {
              Scalar::Str(kind) => out.$kind = Some(kind),
              Scalar::Null => out.$kind = None,
              Scalar::Other => typed = false,
            },
            $($key => out.$field = map.next_value()?,)*
            _ => {
              map.next_value::<IgnoredAny>()?;
            }
          }
        }
        Ok(if typed { out } else { $name::default() })
      }
    }
    deserialize_shape!($name);
  };
}

/// One JSON value read as a string or not.
enum Scalar<'a> {
  Str(Cow<'a, str>),
  Null,
  Other,
}

impl<'de> Shape<'de> for Scalar<'de> {
  fn other() -> Self {
    Scalar::Other
  }
  fn string(text: Cow<'de, str>) -> Self {
    Scalar::Str(text)
  }
  fn null() -> Self {
    Scalar::Null
  }
}
deserialize_shape!(Scalar);

/// A string field's text, decoded; absent for a value of any other type
/// (what [`json::string`] reads from a raw value).
#[derive(Debug, Default)]
pub struct Text<'a>(pub Option<Cow<'a, str>>);

impl<'de> Shape<'de> for Text<'de> {
  fn other() -> Self {
    Text(None)
  }
  fn string(text: Cow<'de, str>) -> Self {
    Text(Some(text))
  }
}
deserialize_shape!(Text);

/// The text of an optional [`Text`] field.
pub fn text<'t>(field: &'t Option<Text<'_>>) -> Option<&'t str> {
  field.as_ref().and_then(|text| text.0.as_deref())
}

/// A message's `content`: a string, an array of blocks, or anything else
/// (read as empty).
#[derive(Debug)]
pub enum Content<'a> {
  Text(Cow<'a, str>),
  Blocks(Vec<Block<'a>>),
  Other,
}

impl<'de> Shape<'de> for Content<'de> {
  fn other() -> Self {
    Content::Other
  }
  fn string(text: Cow<'de, str>) -> Self {
    Content::Text(text)
  }
  fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
    let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(0));
    while let Some(block) = seq.next_element::<Block<'de>>()? {
      blocks.push(block);
    }
    Ok(Content::Blocks(blocks))
  }
}
deserialize_shape!(Content);

/// One content block. A block whose `type` is not a string (or that is not
/// an object) reads as a block with no fields, as it did when each block was
/// parsed on its own and a failed parse gave the default.
#[derive(Debug, Default)]
pub struct Block<'a> {
  pub kind: Option<Cow<'a, str>>,
  pub text: Option<Text<'a>>,
  pub thinking: Option<Text<'a>>,
  pub name: Option<Text<'a>>,
  pub arguments: Option<&'a RawValue>,
}

lenient_object!(Block {
  kind kind: "type",
  text: "text", thinking: "thinking", name: "name", arguments: "arguments",
});

/// A message record's `message`, as normalization reads it. Every field
/// is lenient: a value of another type reads as absent, and a message whose
/// `role` is not a string (or that is not an object) reads as an empty one,
/// as when it was parsed on its own and a failed parse gave the default.
#[derive(Debug, Default)]
pub struct Message<'a> {
  pub role: Option<Cow<'a, str>>,
  pub content: Option<Content<'a>>,
  pub tool_name: Option<&'a RawValue>,
  pub is_error: Option<&'a RawValue>,
  pub error_message: Option<&'a RawValue>,
  pub command: Option<Text<'a>>,
  pub output: Option<Text<'a>>,
  pub exit_code: Option<&'a RawValue>,
  pub cancelled: Option<&'a RawValue>,
  pub custom_type: Option<&'a RawValue>,
  pub summary: Option<&'a RawValue>,
  pub details: Option<&'a RawValue>,
  pub from_id: Option<&'a RawValue>,
  pub timestamp: Option<&'a RawValue>,
}

lenient_object!(Message {
  kind role: "role",
  content: "content", tool_name: "toolName", is_error: "isError", error_message: "errorMessage",
  command: "command", output: "output", exit_code: "exitCode", cancelled: "cancelled",
  custom_type: "customType", summary: "summary", details: "details", from_id: "fromId", timestamp: "timestamp",
});

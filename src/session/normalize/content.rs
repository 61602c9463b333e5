//! The JSON of a message record's content: the message fields normalization
//! reads, content blocks, their plain text, tool calls as entry text and the
//! paths named in tool arguments. Borrowed from the record's raw JSON.
//!
//! The message is parsed once, its content and text fields decoded in that
//! pass ([`Content`], [`Text`]); each used to stay raw JSON that the next
//! step scanned again (content, then each block, then each block's text: a
//! tool result's text was scanned five times, ~9 % of a cold build). Those
//! types never fail on valid JSON: a value of another type reads as absent,
//! as the raw readers in `session::json` read it.

use crate::session::json;
use crate::text::truncate_scalars;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// Tool-call argument JSON is cut to this many scalars in entry text.
const TOOL_ARGS_SCALARS: usize = 400;

#[derive(Default)]
pub(super) struct Message<'a> {
  pub(super) role: Option<Cow<'a, str>>,
  pub(super) content: Option<Content<'a>>,
  pub(super) tool_name: Option<&'a RawValue>,
  pub(super) is_error: Option<&'a RawValue>,
  pub(super) error_message: Option<&'a RawValue>,
  pub(super) command: Option<Text<'a>>,
  pub(super) output: Option<Text<'a>>,
  pub(super) exit_code: Option<&'a RawValue>,
  pub(super) cancelled: Option<&'a RawValue>,
  pub(super) custom_type: Option<&'a RawValue>,
  pub(super) summary: Option<&'a RawValue>,
  pub(super) details: Option<&'a RawValue>,
  pub(super) from_id: Option<&'a RawValue>,
  pub(super) timestamp: Option<&'a RawValue>,
}

json::last_wins!(Message {
  cow { role: "role" }
  raw {
    content: "content", tool_name: "toolName", is_error: "isError", error_message: "errorMessage",
    command: "command", output: "output", exit_code: "exitCode", cancelled: "cancelled",
    custom_type: "customType", summary: "summary", details: "details", from_id: "fromId", timestamp: "timestamp",
  }
});

/// What a lenient value makes of each JSON shape: a string is kept, an
/// array or object goes to `seq` / `map` (skipped unless overridden), null
/// and every other value are `null` / `other`. Never an error on valid JSON.
trait Shape<'de>: Sized {
  fn string(text: Cow<'de, str>) -> Self;
  fn null() -> Self;
  fn other() -> Self;
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

/// One JSON value read as a string or not.
enum Scalar<'a> {
  Str(Cow<'a, str>),
  Null,
  Other,
}

impl<'de> Shape<'de> for Scalar<'de> {
  fn string(text: Cow<'de, str>) -> Self {
    Scalar::Str(text)
  }
  fn null() -> Self {
    Scalar::Null
  }
  fn other() -> Self {
    Scalar::Other
  }
}
deserialize_shape!(Scalar);

/// A string field's text, decoded; absent for a value of any other type
/// (what [`json::string`] reads from a raw value).
#[derive(Default)]
pub(super) struct Text<'a>(Option<Cow<'a, str>>);

impl<'de> Shape<'de> for Text<'de> {
  fn string(text: Cow<'de, str>) -> Self {
    Text(Some(text))
  }
  fn null() -> Self {
    Text(None)
  }
  fn other() -> Self {
    Text(None)
  }
}
deserialize_shape!(Text);

/// The text of an optional [`Text`] field.
pub(super) fn text<'t>(field: &'t Option<Text<'_>>) -> Option<&'t str> {
  field.as_ref().and_then(|text| text.0.as_deref())
}

/// A message's `content`: a string, an array of blocks, or anything else
/// (read as empty).
pub(super) enum Content<'a> {
  Text(Cow<'a, str>),
  Blocks(Vec<Block<'a>>),
  Other,
}

impl<'de> Shape<'de> for Content<'de> {
  fn string(text: Cow<'de, str>) -> Self {
    Content::Text(text)
  }
  fn null() -> Self {
    Content::Other
  }
  fn other() -> Self {
    Content::Other
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
#[derive(Default)]
pub(super) struct Block<'a> {
  pub(super) kind: Option<Cow<'a, str>>,
  pub(super) text: Option<Cow<'a, str>>,
  pub(super) thinking: Option<Cow<'a, str>>,
  pub(super) name: Option<Cow<'a, str>>,
  pub(super) arguments: Option<&'a RawValue>,
}

impl<'de> Shape<'de> for Block<'de> {
  fn string(_: Cow<'de, str>) -> Self {
    Block::default()
  }
  fn null() -> Self {
    Block::default()
  }
  fn other() -> Self {
    Block::default()
  }
  // Duplicate keys: the last wins, as in `JSON.parse`.
  fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
    let mut block = Block::default();
    let mut typed = true;
    while let Some(json::CowStr(key)) = map.next_key::<json::CowStr<'de>>()? {
      match key.as_ref() {
        "type" => match map.next_value::<Scalar<'de>>()? {
          Scalar::Str(kind) => block.kind = Some(kind),
          Scalar::Null => block.kind = None,
          Scalar::Other => typed = false,
        },
        "text" => block.text = map.next_value::<Text<'de>>()?.0,
        "thinking" => block.thinking = map.next_value::<Text<'de>>()?.0,
        "name" => block.name = map.next_value::<Text<'de>>()?.0,
        "arguments" => block.arguments = map.next_value()?,
        _ => {
          map.next_value::<IgnoredAny>()?;
        }
      }
    }
    Ok(if typed { block } else { Block::default() })
  }
}
deserialize_shape!(Block);

/// Content as its string, or its blocks; anything else is empty.
pub(super) fn blocks<'c, 'a>(content: &'c Option<Content<'a>>) -> (Option<&'c str>, &'c [Block<'a>]) {
  match content {
    Some(Content::Text(text)) => (Some(text), &[]),
    Some(Content::Blocks(blocks)) => (None, blocks),
    Some(Content::Other) | None => (None, &[]),
  }
}

/// Text of `string | (TextContent | ImageContent)[]` content; images dropped.
pub(super) fn plain_text(content: &Option<Content<'_>>) -> String {
  let (text, parts) = blocks(content);
  if let Some(text) = text {
    return text.to_string();
  }
  let texts: Vec<&str> =
    parts.iter().filter(|b| b.kind.as_deref() == Some("text")).filter_map(|b| b.text.as_deref()).collect();
  texts.join("\n")
}

/// [`plain_text`] of a record's raw content field (custom messages, context
/// edits: rare, parsed when read).
pub(super) fn raw_plain_text(raw: Option<&RawValue>) -> String {
  plain_text(&raw.and_then(|raw| serde_json::from_str(raw.get()).ok()))
}

/// `JSON.stringify(args)` cut to 400 scalars with `…`.
pub(super) fn tool_call_text(name: &str, arguments: Option<&RawValue>) -> String {
  let args = arguments.map(|raw| json::compact(raw.get())).unwrap_or_else(|| "{}".into());
  let (kept, cut) = truncate_scalars(&args, TOOL_ARGS_SCALARS);
  format!("Tool: {name}({kept}{})", if cut { "…" } else { "" })
}

fn is_path_key(key: &str) -> bool {
  let key = key.to_ascii_lowercase();
  ["file", "files", "path", "paths"].iter().any(|suffix| key.ends_with(suffix))
}

/// Paths from tool arguments: every non-empty string whose nearest key ends
/// in file(s)/path(s), array items inheriting their key; deduplicated in order.
pub fn argument_paths(value: &Value, out: &mut Vec<String>) {
  fn walk(value: &Value, key: Option<&str>, out: &mut Vec<String>) {
    match value {
      Value::String(text) => {
        let trimmed = text.trim();
        if key.is_some_and(is_path_key) && !trimmed.is_empty() && !out.iter().any(|p| p == trimmed) {
          out.push(trimmed.to_string());
        }
      }
      Value::Array(items) => items.iter().for_each(|item| walk(item, key, out)),
      Value::Object(map) => map.iter().for_each(|(k, v)| walk(v, Some(k), out)),
      _ => {}
    }
  }
  walk(value, None, out);
}

//! A message's content as entry text: content blocks, their plain text,
//! tool calls as entry text and the paths named in tool arguments (the
//! parsed shapes are `session::message`'s).

use crate::session::json;
use crate::session::message::{text, Block, Content};
use crate::text::truncate_scalars;
use serde_json::value::RawValue;
use serde_json::Value;

/// Tool-call argument JSON is cut to this many scalars in entry text.
const TOOL_ARGS_SCALARS: usize = 400;

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
  let (whole, parts) = blocks(content);
  if let Some(whole) = whole {
    return whole.to_string();
  }
  let texts: Vec<&str> =
    parts.iter().filter(|b| b.kind.as_deref() == Some("text")).filter_map(|b| text(&b.text)).collect();
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

//! The JSON of a message record's content: the message fields normalization
//! reads, content blocks, their plain text, tool calls as entry text and the
//! paths named in tool arguments. Borrowed from the record's raw JSON.

use crate::session::json;
use crate::text::truncate_scalars;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;

/// Tool-call argument JSON is cut to this many scalars in entry text.
const TOOL_ARGS_SCALARS: usize = 400;

#[derive(Default)]
pub(super) struct Message<'a> {
  pub(super) role: Option<Cow<'a, str>>,
  pub(super) content: Option<&'a RawValue>,
  pub(super) tool_name: Option<&'a RawValue>,
  pub(super) is_error: Option<&'a RawValue>,
  pub(super) error_message: Option<&'a RawValue>,
  pub(super) command: Option<&'a RawValue>,
  pub(super) output: Option<&'a RawValue>,
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

#[derive(Default)]
pub(super) struct Block<'a> {
  pub(super) kind: Option<Cow<'a, str>>,
  pub(super) text: Option<&'a RawValue>,
  pub(super) thinking: Option<&'a RawValue>,
  pub(super) name: Option<&'a RawValue>,
  pub(super) arguments: Option<&'a RawValue>,
}

json::last_wins!(Block {
  cow { kind: "type" }
  raw { text: "text", thinking: "thinking", name: "name", arguments: "arguments" }
});

/// Content as a string or an array of blocks; anything else is empty.
pub(super) fn blocks(raw: Option<&RawValue>) -> (Option<String>, Vec<Block<'_>>) {
  let Some(raw) = raw else { return (None, Vec::new()) };
  if let Some(text) = json::string(Some(raw)) {
    return (Some(text), Vec::new());
  }
  let items: Vec<&RawValue> = serde_json::from_str(raw.get()).unwrap_or_default();
  let parsed = items.into_iter().map(|item| serde_json::from_str(item.get()).unwrap_or_default()).collect();
  (None, parsed)
}

/// Text of `string | (TextContent | ImageContent)[]` content; images dropped.
pub(super) fn plain_text(raw: Option<&RawValue>) -> String {
  let (text, parts) = blocks(raw);
  if let Some(text) = text {
    return text;
  }
  parts
    .iter()
    .filter(|b| b.kind.as_deref() == Some("text"))
    .filter_map(|b| json::string(b.text))
    .collect::<Vec<_>>()
    .join("\n")
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

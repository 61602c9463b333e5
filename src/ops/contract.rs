//! What the three operations share: the `{ref, tool, args}` call tokens a
//! page hands back (`follow`, `next`), the 30,000-character JSON envelope
//! every result fits, and the context-edit facts both hits and chunks print. A token's binding to the
//! bytes and lineage it was cut from is `session::binding`.

use crate::session::entry::{ContextEdit, Entry, Outcome};
use crate::text::{cap_with_ellipsis, meta, META_CHARS};
use serde::Serialize;
use serde_json::Value;

/// The most JSON characters (UTF-16 units) any result may take.
pub const MAX_ENVELOPE_CHARS: usize = 30_000;

/// A `{ref, tool, args}` call token. `tool` is the Pi tool that serves `ref`
/// (`memory.expand` → `memory_expand`), so a guest dispatches it without
/// guessing names; it is derived, never stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
  pub reference: &'static str,
  pub args: Value,
}

impl Call {
  /// The Pi tool name for this call's `ref`.
  pub fn tool(&self) -> String {
    self.reference.replace('.', "_")
  }
}

impl Serialize for Call {
  fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    let mut call = serializer.serialize_struct("Call", 3)?;
    call.serialize_field("ref", self.reference)?;
    call.serialize_field("tool", &self.tool())?;
    call.serialize_field("args", &self.args)?;
    call.end()
  }
}

/// Context-edit facts of an entry (Pi ≥ 0.87), present only when set.
/// What a recall hit and an expansion chunk both say about their entry:
/// identity, type and the typed fields, each string capped at
/// [`META_CHARS`]. Flattened into both JSON shapes.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryMeta {
  pub index: usize,
  pub entry_id: Option<String>,
  pub parent_id: Option<String>,
  pub operation_address: Option<String>,
  #[serde(rename = "type")]
  pub kind: String,
  pub role: Option<String>,
  pub tool: Option<String>,
  #[serde(rename = "ref")]
  pub reference: Option<String>,
  pub provider: Option<String>,
  pub action: Option<String>,
  pub outcome: Option<Outcome>,
  pub timestamp: Option<i64>,
  pub is_error: bool,
}

impl EntryMeta {
  pub fn of(entry: &Entry) -> EntryMeta {
    EntryMeta {
      index: entry.index,
      entry_id: meta(&entry.entry_id),
      parent_id: meta(&entry.parent_id),
      operation_address: meta(&entry.operation_address),
      kind: cap_with_ellipsis(&entry.kind, META_CHARS),
      role: meta(&entry.typed.role),
      tool: meta(&entry.typed.tool),
      reference: meta(&entry.typed.reference),
      provider: meta(&entry.typed.provider),
      action: meta(&entry.typed.action),
      outcome: entry.typed.outcome,
      timestamp: entry.typed.timestamp,
      is_error: entry.is_error,
    }
  }
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EditFields {
  #[serde(skip_serializing_if = "Option::is_none")]
  pub target_id: Option<String>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub context_edit: Option<ContextEdit>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub context_edit_id: Option<String>,
}

impl EditFields {
  pub fn of(entry: &Entry) -> EditFields {
    EditFields {
      target_id: meta(&entry.target_id),
      context_edit: entry.context_edit,
      context_edit_id: meta(&entry.context_edit_id),
    }
  }
}

#[cfg(test)]
mod tests {
  use super::Call;
  use serde_json::json;

  #[test]
  fn a_call_names_the_pi_tool_that_serves_it() {
    let call = Call { reference: "memory.expand", args: json!({"indices": [3]}) };
    let text = serde_json::to_string(&call).unwrap();
    assert_eq!(text, r#"{"ref":"memory.expand","tool":"memory_expand","args":{"indices":[3]}}"#);
    assert_eq!(Call { reference: "memory.recall", args: json!({}) }.tool(), "memory_recall");
  }
}

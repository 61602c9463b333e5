//! What a session list shows for a session besides its id: Pi's session
//! name (`/name`, a `session_info` record) and its first prompt.

use super::entry::Normalized;
use super::parse::Record;
use crate::text::cap_with_ellipsis;
use serde::{Deserialize, Serialize};

/// The longest first prompt kept (UTF-16 units, as every capped string in
/// results); longer ones end in `…`.
pub const FIRST_PROMPT_CHARS: usize = 120;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Titles {
  /// The name of the last `session_info` record (an empty one clears it, as in Pi 0.80 and later).
  pub name: Option<String>,
  /// The first user message of the selected entries, one line, at most [`FIRST_PROMPT_CHARS`].
  pub first_prompt: Option<String>,
}

impl Titles {
  /// The titles of a whole session.
  pub fn of(records: &[Record<'_>], normalized: &Normalized) -> Titles {
    Titles { name: named(records).flatten(), first_prompt: first_prompt(normalized) }
  }

  /// The titles after `appended` records (normalized as `tail`) joined a
  /// session whose titles were `self`.
  pub fn appended(&self, records: &[Record<'_>], tail: &Normalized) -> Titles {
    Titles {
      name: named(records).unwrap_or_else(|| self.name.clone()),
      first_prompt: self.first_prompt.clone().or_else(|| first_prompt(tail)),
    }
  }
}

/// `Some(name)` when `records` hold a `session_info` record: the last one's
/// name, `None` inside when it is empty or missing (a clear).
fn named(records: &[Record<'_>]) -> Option<Option<String>> {
  let last = records.iter().rev().find(|r| r.kind == "session_info")?;
  let name = last.fields.name.and_then(|raw| serde_json::from_str::<String>(raw.get()).ok());
  Some(name.map(|n| one_line(&n)).filter(|n| !n.is_empty()))
}

/// The first user message, one line, capped: a session's title in lists and packs.
pub fn first_prompt(normalized: &Normalized) -> Option<String> {
  let entry = normalized.entries.iter().find(|e| e.typed.role.as_deref() == Some("user"))?;
  Some(cap_with_ellipsis(&one_line(&entry.text), FIRST_PROMPT_CHARS)).filter(|p| !p.is_empty())
}

/// Whitespace runs as one space, trimmed.
fn one_line(text: &str) -> String {
  text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::session::entry::Policy;
  use crate::session::normalize::{normalize_selected, Normalizer};

  fn session(lines: &[serde_json::Value]) -> String {
    let header = serde_json::json!({"type": "session", "version": 3, "id": "s", "cwd": "/p"});
    std::iter::once(&header).chain(lines).map(|l| l.to_string() + "\n").collect()
  }

  fn titles(text: &str) -> Titles {
    let parsed = crate::session::parse::parse(text.as_bytes()).unwrap();
    let nodes = crate::session::lineage::nodes(&parsed.records);
    let lineage = crate::session::lineage::select_nodes(&nodes, crate::session::lineage::Branches::Active, None);
    let policy =
      Policy { index_thinking: false, index_tool_output: true, max_entry_chars: None, index_own_results: false };
    let normalized = normalize_selected(Normalizer::new(&policy), parsed.records.iter(), &lineage);
    Titles::of(&parsed.records, &normalized)
  }

  fn user(id: &str, parent: Option<&str>, text: &str) -> serde_json::Value {
    serde_json::json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
      "message": {"role": "user", "content": [{"type": "text", "text": text}]}})
  }

  fn info(id: &str, parent: &str, name: &str) -> serde_json::Value {
    serde_json::json!({"type": "session_info", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z", "name": name})
  }

  #[test]
  fn the_last_session_info_names_the_session_and_an_empty_one_clears_it() {
    let named = titles(&session(&[
      user("u1", None, "  fix the\n flaky   test "),
      info("i1", "u1", "first"),
      info("i2", "i1", "Flaky test"),
    ]));
    assert_eq!(named, Titles { name: Some("Flaky test".into()), first_prompt: Some("fix the flaky test".into()) });
    let cleared = titles(&session(&[user("u1", None, "hi"), info("i1", "u1", "first"), info("i2", "i1", "")]));
    assert_eq!(cleared.name, None);
    assert_eq!(titles(&session(&[])), Titles::default());
  }

  #[test]
  fn a_long_first_prompt_is_cut_and_an_append_keeps_what_it_does_not_change() {
    let long = "word ".repeat(60);
    let first = titles(&session(&[user("u1", None, &long)]));
    let prompt = first.first_prompt.clone().unwrap();
    assert_eq!(prompt.chars().count(), FIRST_PROMPT_CHARS);
    assert!(prompt.ends_with('…'));
    let empty = Normalized::default();
    assert_eq!(first.appended(&[], &empty), first);
    let text = session(&[info("i9", "u1", "Later name")]);
    let renamed = crate::session::parse::parse(text.as_bytes()).unwrap();
    assert_eq!(first.appended(&renamed.records, &empty).name.as_deref(), Some("Later name"));
  }
}

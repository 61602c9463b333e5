//! Echoes: this package's own recall traffic inside a session. A user
//! prompt that only asked to recall ("recall bluefinch": its turn called this
//! package's tools and no other tool) and the calls of this package's tools
//! repeat a query's words without being evidence of them; left in, four
//! "recall bluefinch" prompts outrank the one entry that says what a
//! bluefinch is. They stay entries (structurally findable, expandable); only
//! lexical matching passes over them, unless `indexOwnToolResults` is set.

use super::entry::{is_memory_tool, Entry};

/// Per entry, whether it is an echo. Turns run from one user entry to the
/// next, in entry order.
pub fn echoes(entries: &[Entry]) -> Vec<bool> {
  let mut out: Vec<bool> = entries.iter().map(is_own_call).collect();
  let mut start = 0;
  while start < entries.len() {
    let end = (start + 1..entries.len()).find(|&at| is_user(&entries[at])).unwrap_or(entries.len());
    if is_user(&entries[start]) && only_recalls(&entries[start + 1..end]) {
      out[start] = true;
    }
    start = end;
  }
  out
}

fn is_user(entry: &Entry) -> bool {
  entry.typed.role.as_deref() == Some("user")
}

/// An assistant entry calling one of this package's tools.
fn is_own_call(entry: &Entry) -> bool {
  entry.typed.role.as_deref() == Some("assistant") && entry.typed.tool.as_deref().is_some_and(is_memory_tool)
}

/// Did a turn use this package's tools and no other? (An assistant entry
/// names its first call; every call's result names its own tool.)
fn only_recalls(turn: &[Entry]) -> bool {
  let mut tools = turn.iter().filter_map(|entry| entry.typed.tool.as_deref()).peekable();
  tools.peek().is_some() && tools.all(is_memory_tool)
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::session::entry::Typed;

  fn entry(role: &str, tool: Option<&str>) -> Entry {
    Entry {
      typed: Typed { role: Some(role.into()), tool: tool.map(Into::into), ..Typed::default() },
      ..Entry::default()
    }
  }

  #[test]
  fn a_recall_request_and_own_calls_are_echoes_and_work_is_not() {
    let entries = [
      entry("user", None),                        // 0: a fact
      entry("assistant", None),                   // 1
      entry("user", None),                        // 2: "recall bluefinch"
      entry("assistant", Some("memory_recall")),  // 3
      entry("toolResult", Some("memory_recall")), // 4
      entry("assistant", None),                   // 5: the answer stays evidence
      entry("user", None),                        // 6: "fix it, as we did before"
      entry("assistant", Some("memory_recall")),  // 7
      entry("toolResult", Some("memory_recall")), // 8
      entry("assistant", Some("edit")),           // 9: real work: the prompt is evidence
      entry("toolResult", Some("edit")),          // 10
      entry("user", None),                        // 11: a prompt answered without tools
      entry("assistant", None),                   // 12
    ];
    let marked: Vec<usize> = echoes(&entries).iter().enumerate().filter(|(_, e)| **e).map(|(at, _)| at).collect();
    assert_eq!(marked, [2, 3, 7]);
  }
}

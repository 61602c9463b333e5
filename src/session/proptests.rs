//! Random Pi session trees against a plain reference walk of Pi's rules
//! (Pi's session manager, `_buildIndex` + `getBranch()`): the
//! leaf is the last line's id (a harness `leaf` line moves it to its
//! `targetId`), `byId` keeps the last line of an id, and the active branch
//! is the `parentId` walk from the leaf, root first, stopping at `null`, an
//! unknown parent, or (where Pi would loop forever) a revisited id.
//! `__test__/safety.test.mts` checks the same rules against real Pi's
//! `getBranch()` on random trees without cycles.

use super::entry::Policy;
use super::lineage::{select, Branches};
use super::normalize::normalize;
use super::parse::parse;
use crate::testing::proptest_config;
use proptest::prelude::*;
use serde_json::json;
use std::collections::{HashMap, HashSet};

/// Where a message's `parentId` points.
#[derive(Debug, Clone)]
pub(crate) enum Parent {
  /// The last id its writer appended (a chain; two writers interleave).
  Writer(usize),
  /// Any name of the id pool, written before, later or never (orphan,
  /// forward reference, self or longer cycle).
  Pool(usize),
  Null,
}

#[derive(Debug, Clone)]
pub(crate) enum Step {
  /// A message with an id from a small pool (so ids repeat).
  Message { id: usize, parent: Parent, writer: usize, assistant: bool },
  /// A fresh, never-reused id chained to its writer (long plain chains).
  Fresh { writer: usize },
  /// A harness `leaf` line: the leaf moves to a pool id or to nothing.
  Leaf { target: Option<usize> },
}

const POOL: usize = 12;

pub(crate) fn step() -> impl Strategy<Value = Step> {
  let parent = prop_oneof![
    4 => (0..2usize).prop_map(Parent::Writer),
    3 => (0..POOL).prop_map(Parent::Pool),
    1 => Just(Parent::Null),
  ];
  prop_oneof![
    6 => (0..POOL, parent, 0..2usize, any::<bool>())
      .prop_map(|(id, parent, writer, assistant)| Step::Message { id, parent, writer, assistant }),
    4 => (0..2usize).prop_map(|writer| Step::Fresh { writer }),
    1 => proptest::option::of(0..POOL).prop_map(|target| Step::Leaf { target }),
  ]
}

/// One generated line, as the reference sees it.
pub(crate) struct Line {
  id: String,
  parent: Option<String>,
  text: String,
  moves_leaf_to: Option<Option<String>>,
  json: serde_json::Value,
}

pub(crate) fn lines(steps: &[Step]) -> Vec<Line> {
  let mut last = [None::<String>, None];
  let mut out = Vec::new();
  for (n, step) in steps.iter().enumerate() {
    // Non-ASCII, so an append can end inside a character.
    let text = format!("text {n} é");
    let (id, parent, writer, role) = match step {
      Step::Leaf { target } => {
        let target = target.map(|t| format!("p{t}"));
        let id = format!("leaf{n}");
        let json = json!({"type": "leaf", "id": id, "parentId": null, "targetId": target});
        out.push(Line { id, parent: None, text, moves_leaf_to: Some(target), json });
        continue;
      }
      Step::Fresh { writer } => (format!("f{n}"), last[*writer].clone(), *writer, "user"),
      Step::Message { id, parent, writer, assistant } => {
        let parent = match parent {
          Parent::Writer(w) => last[*w].clone(),
          Parent::Pool(p) => Some(format!("p{p}")),
          Parent::Null => None,
        };
        (format!("p{id}"), parent, *writer, if *assistant { "assistant" } else { "user" })
      }
    };
    let content = if role == "user" { json!(text) } else { json!([{"type": "text", "text": text}]) };
    let json = json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
      "message": {"role": role, "content": content, "timestamp": 1}});
    last[writer] = Some(id.clone());
    out.push(Line { id, parent, text, moves_leaf_to: None, json });
  }
  out
}

/// The reference walk: `(id, text)` of the active messages, root first,
/// and whether the walk met a cycle.
fn reference(lines: &[Line]) -> (Vec<(String, String)>, bool) {
  let mut by_id: HashMap<&str, &Line> = HashMap::new();
  let mut leaf: Option<String> = None;
  for line in lines {
    by_id.insert(&line.id, line);
    leaf = match &line.moves_leaf_to {
      Some(target) => target.clone(),
      None => Some(line.id.clone()),
    };
  }
  let mut path = Vec::new();
  let mut seen = HashSet::new();
  let mut current = leaf.as_deref().and_then(|id| by_id.get(id));
  while let Some(line) = current {
    if !seen.insert(line.id.as_str()) {
      path.reverse();
      return (path, true);
    }
    if line.moves_leaf_to.is_none() {
      path.push((line.id.clone(), line.text.clone()));
    }
    current = line.parent.as_deref().and_then(|id| by_id.get(id));
  }
  path.reverse();
  (path, false)
}

pub(crate) fn file(lines: &[Line]) -> Vec<u8> {
  let mut text = String::from("{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"cwd\":\"/p\"}\n");
  for line in lines {
    text.push_str(&line.json.to_string());
    text.push('\n');
  }
  text.into_bytes()
}

fn active(bytes: &[u8]) -> (Vec<(String, String)>, bool) {
  let parsed = parse(bytes).expect("a session");
  let lineage = select(&parsed.records, Branches::Active, None);
  let policy = Policy { index_thinking: true, index_tool_output: true, max_entry_chars: None, index_own_results: true };
  let normalized = normalize(&parsed, &lineage, &policy, None);
  let entries = normalized.entries.iter().map(|e| (e.entry_id.clone().unwrap_or_default(), e.text.clone())).collect();
  (entries, normalized.reasons.contains(&crate::coverage::Reason::InvalidParentGraph))
}

proptest! {
  #![proptest_config(proptest_config(256))]

  /// Every prefix of the file is a state Pi saw while appending: each one's
  /// active entries equal the reference walk.
  #[test]
  fn active_entries_follow_pis_rules_at_every_append(steps in proptest::collection::vec(step(), 0..40)) {
    let lines = lines(&steps);
    for end in 0..=lines.len() {
      let (entries, cycle) = active(&file(&lines[..end]));
      let (expected, expected_cycle) = reference(&lines[..end]);
      prop_assert_eq!(&entries, &expected, "after {} lines", end);
      prop_assert_eq!(cycle, expected_cycle, "cycle flag after {} lines", end);
    }
  }
}

//! Which records a session view contains: the active branch or all of them.
//!
//! Active mode follows Pi 0.80's persisted semantics (its session manager's
//! `_buildIndex` + `getBranch()`): the leaf is the last record with an id (a harness `leaf` record moves
//! it explicitly), duplicate ids resolve to the last record, and the path is
//! the `parentId` walk from the leaf to a root. Pi has no cycle guard; this
//! walk keeps a visited set and reports `invalid_parent_graph`. For the live
//! session the extension passes the branch ids it read from Pi itself.

use super::parse::Record;
use super::source::sha256_hex;
use serde::Serialize;
use std::collections::{HashMap, HashSet};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Branches {
  Active,
  All,
}

impl Branches {
  pub fn as_str(self) -> &'static str {
    match self {
      Branches::Active => "active",
      Branches::All => "all",
    }
  }

  pub fn parse(text: &str) -> Option<Self> {
    match text {
      "active" => Some(Branches::Active),
      "all" => Some(Branches::All),
      _ => None,
    }
  }
}

/// The live branch of the session Pi is running, read on every call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveBranch {
  pub leaf_id: Option<String>,
  /// Root-to-leaf ids, as `getBranch().map(e => e.id)`.
  pub ids: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Lineage {
  pub branches: Branches,
  /// Per record ordinal: is it part of this view?
  pub selected: Vec<bool>,
  /// The selected ordinals in view order: root first in active mode (as
  /// Pi's `getBranch()`, which differs from file order when a parent's id
  /// is written after its child), file order in all mode.
  pub order: Vec<usize>,
  pub fingerprint: String,
  /// Root-to-leaf ids the fingerprint covers (active mode; empty for all).
  pub path: Vec<String>,
  /// Id of the last selected record: where the on-disk part of the path ends.
  pub tip: Option<String>,
  pub invalid_parent_graph: bool,
}

impl Lineage {
  pub fn contains(&self, ordinal: usize) -> bool {
    self.selected.get(ordinal).copied().unwrap_or(false)
  }
}

#[derive(Serialize)]
struct FingerprintInput<'a, S> {
  branches: &'static str,
  #[serde(rename = "leafId")]
  leaf_id: Option<&'a str>,
  ids: &'a [S],
}

/// SHA-256 over `JSON.stringify({branches, leafId, ids})`, as the reference
/// computes it, so fingerprints stay comparable across implementations.
pub fn fingerprint<S: AsRef<str> + Serialize>(branches: Branches, leaf_id: Option<&str>, ids: &[S]) -> String {
  let input = FingerprintInput { branches: branches.as_str(), leaf_id, ids };
  sha256_hex(serde_json::to_string(&input).expect("fingerprint input serializes").as_bytes())
}

/// What lineage needs of a record: its id, its parent, and (for a harness
/// `leaf` record) where it moves the leaf. Kept by the index so an append can
/// recompute lineage without re-parsing the prefix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Node {
  pub id: Option<String>,
  pub parent_id: Option<String>,
  pub moves_leaf_to: Option<Option<String>>,
}

pub fn nodes(records: &[Record<'_>]) -> Vec<Node> {
  records
    .iter()
    .map(|record| Node {
      id: record.id.clone(),
      parent_id: record.parent_id.clone(),
      moves_leaf_to: (record.kind == "leaf")
        .then(|| record.fields.target_id.map(|t| serde_json::from_str::<Option<String>>(t.get()).ok().flatten()))
        .flatten(),
    })
    .collect()
}

pub fn all(nodes: &[Node]) -> Lineage {
  Lineage {
    branches: Branches::All,
    selected: vec![true; nodes.len()],
    order: (0..nodes.len()).collect(),
    fingerprint: fingerprint::<String>(Branches::All, None, &[]),
    path: Vec::new(),
    tip: nodes.iter().rev().find_map(|n| n.id.clone()),
    invalid_parent_graph: false,
  }
}

fn tip(nodes: &[Node], selected: &[bool]) -> Option<String> {
  (0..nodes.len()).rev().find(|&o| selected[o]).and_then(|o| nodes[o].id.clone())
}

/// The persisted leaf: the last record with an id, or the target of a later
/// harness `leaf` record.
fn persisted_leaf(nodes: &[Node]) -> Option<String> {
  let mut leaf = None;
  for node in nodes {
    if let Some(target) = &node.moves_leaf_to {
      leaf = target.clone();
    } else if let Some(id) = &node.id {
      leaf = Some(id.clone());
    }
  }
  leaf
}

fn last_by_id(nodes: &[Node]) -> HashMap<&str, usize> {
  let mut by_id = HashMap::with_capacity(nodes.len());
  for (ordinal, node) in nodes.iter().enumerate() {
    if let Some(id) = &node.id {
      by_id.insert(id.as_str(), ordinal);
    }
  }
  by_id
}

pub fn persisted_active(nodes: &[Node]) -> Lineage {
  walk_from(nodes, persisted_leaf(nodes))
}

/// The active lineage as it was when `leaf` was the leaf: a pinned view of a
/// source prefix whose live leaf is no longer known otherwise.
pub fn active_from(nodes: &[Node], leaf: &str) -> Lineage {
  walk_from(nodes, Some(leaf.to_string()))
}

fn walk_from(nodes: &[Node], leaf: Option<String>) -> Lineage {
  let by_id = last_by_id(nodes);
  let mut selected = vec![false; nodes.len()];
  let mut path = Vec::new();
  let mut order = Vec::new();
  let mut visited = HashSet::new();
  let mut invalid = false;
  let mut cursor = leaf.as_deref();
  while let Some(id) = cursor {
    let Some(&ordinal) = by_id.get(id) else { break };
    if !visited.insert(id) {
      invalid = true;
      break;
    }
    selected[ordinal] = true;
    order.push(ordinal);
    path.push(id.to_string());
    cursor = nodes[ordinal].parent_id.as_deref();
  }
  path.reverse();
  order.reverse();
  Lineage {
    branches: Branches::Active,
    fingerprint: fingerprint(Branches::Active, leaf.as_deref(), &path),
    tip: tip(nodes, &selected),
    selected,
    order,
    path,
    invalid_parent_graph: invalid,
  }
}

/// The live branch: its ids, in order, are the path. Ids not yet on disk
/// select nothing but still count in the fingerprint.
pub fn live_active(nodes: &[Node], live: &LiveBranch) -> Lineage {
  let by_id = last_by_id(nodes);
  let mut selected = vec![false; nodes.len()];
  let mut order = Vec::new();
  for id in &live.ids {
    if let Some(&ordinal) = by_id.get(id.as_str()) {
      if !std::mem::replace(&mut selected[ordinal], true) {
        order.push(ordinal);
      }
    }
  }
  Lineage {
    branches: Branches::Active,
    fingerprint: fingerprint(Branches::Active, live.leaf_id.as_deref(), &live.ids),
    tip: tip(nodes, &selected),
    selected,
    order,
    path: live.ids.clone(),
    invalid_parent_graph: false,
  }
}

/// The root-to-tip ids of selected records (ordinals, ascending) when they
/// form one parent chain in file order, as every Pi-written active branch
/// does; `None` otherwise (the caller then binds the whole lineage).
pub fn chain(nodes: &[Node], selected: &[u32]) -> Option<Vec<String>> {
  let mut path: Vec<String> = Vec::with_capacity(selected.len());
  for &ordinal in selected {
    let node = nodes.get(ordinal as usize)?;
    if path.last().is_some_and(|parent| node.parent_id.as_deref() != Some(parent.as_str())) {
      return None;
    }
    path.push(node.id.clone()?);
  }
  Some(path)
}

/// The fingerprint of the path from the root to `tip`, the lineage a pointer
/// to an entry of `tip` depends on; equals the whole-path fingerprint when
/// `tip` is the leaf. `None` when `tip` is not on `path`.
pub fn tip_fingerprint<S: AsRef<str> + Serialize>(path: &[S], tip: &str) -> Option<String> {
  let end = path.iter().position(|id| id.as_ref() == tip)?;
  Some(fingerprint(Branches::Active, Some(tip), &path[..=end]))
}

pub fn select_nodes(nodes: &[Node], branches: Branches, live: Option<&LiveBranch>) -> Lineage {
  match (branches, live) {
    (Branches::All, _) => all(nodes),
    (Branches::Active, Some(live)) => live_active(nodes, live),
    (Branches::Active, None) => persisted_active(nodes),
  }
}

pub fn select(records: &[Record<'_>], branches: Branches, live: Option<&LiveBranch>) -> Lineage {
  select_nodes(&nodes(records), branches, live)
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::session::parse::parse;

  fn session(lines: &[&str]) -> Vec<u8> {
    let mut text = String::from("{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"cwd\":\"/p\"}\n");
    for line in lines {
      text.push_str(line);
      text.push('\n');
    }
    text.into_bytes()
  }

  fn rec(id: &str, parent: Option<&str>) -> String {
    match parent {
      Some(p) => format!("{{\"type\":\"custom\",\"id\":\"{id}\",\"parentId\":\"{p}\"}}"),
      None => format!("{{\"type\":\"custom\",\"id\":\"{id}\",\"parentId\":null}}"),
    }
  }

  #[test]
  fn active_path_ends_at_last_record() {
    let bytes = session(&[&rec("a", None), &rec("b", Some("a")), &rec("c", Some("a"))]);
    let parsed = parse(&bytes).unwrap();
    let lineage = persisted_active(&nodes(&parsed.records));
    assert_eq!(lineage.selected, vec![true, false, true]);
    assert_eq!(lineage.fingerprint, fingerprint(Branches::Active, Some("c"), &["a", "c"]));
  }

  #[test]
  fn the_active_order_is_root_first_even_when_a_parent_is_written_after_its_child() {
    // b's parent a is written later (a duplicate id or a hand edit): Pi's
    // getBranch() gives a, b, c; file order would give b, a, c.
    let bytes = session(&[&rec("b", Some("a")), &rec("a", None), &rec("c", Some("b"))]);
    let parsed = parse(&bytes).unwrap();
    assert_eq!(persisted_active(&nodes(&parsed.records)).order, vec![1, 0, 2]);
  }

  #[test]
  fn cycles_stop_the_walk() {
    let bytes = session(&[&rec("a", Some("b")), &rec("b", Some("a"))]);
    let parsed = parse(&bytes).unwrap();
    let lineage = persisted_active(&nodes(&parsed.records));
    assert!(lineage.invalid_parent_graph);
    assert_eq!(lineage.selected, vec![true, true]);
  }

  #[test]
  fn duplicate_ids_resolve_to_the_last_record() {
    let bytes = session(&[&rec("a", None), &rec("b", Some("a")), &rec("b", Some("a"))]);
    let parsed = parse(&bytes).unwrap();
    assert_eq!(persisted_active(&nodes(&parsed.records)).selected, vec![true, false, true]);
  }

  #[test]
  fn harness_leaf_records_move_the_leaf() {
    let leaf = "{\"type\":\"leaf\",\"id\":\"l\",\"parentId\":\"b\",\"targetId\":\"a\"}";
    let bytes = session(&[&rec("a", None), &rec("b", Some("a")), leaf]);
    let parsed = parse(&bytes).unwrap();
    assert_eq!(persisted_active(&nodes(&parsed.records)).selected, vec![true, false, false]);
  }

  #[test]
  fn all_mode_fingerprint_is_constant() {
    assert_eq!(
      fingerprint::<String>(Branches::All, None, &[]),
      sha256_hex(br#"{"branches":"all","leafId":null,"ids":[]}"#)
    );
  }

  #[test]
  fn live_branch_selects_its_ids() {
    let bytes = session(&[&rec("a", None), &rec("b", Some("a")), &rec("c", Some("a"))]);
    let parsed = parse(&bytes).unwrap();
    let live = LiveBranch { leaf_id: Some("b".into()), ids: vec!["a".into(), "b".into(), "zz".into()] };
    assert_eq!(live_active(&nodes(&parsed.records), &live).selected, vec![true, true, false]);
  }
}

//! Fabric child records: operations of `FabricExecutionTraceV1` traces and
//! facts of `FabricBranchSummaryDetailsV1/V2` envelopes.
//!
//! Children come only from envelopes that pass strict validation (known keys,
//! typed values, size bounds); anything else stays non-semantic. They are
//! placed right after their carrier entry and never reconstructed from prose.

use super::entry::{Entry, Outcome, Policy, Typed};
use super::json;
use super::normalize::argument_paths;
use crate::coverage::Reason;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashSet};

const TRACE_KIND: &str = "pi-fabric.execution";
const TRACE_MAX_BYTES: usize = 512 * 1024;
const TRACE_MAX_DEPTH: usize = 14;
const BRANCH_KIND: &str = "pi-fabric.branch-summary";
const BRANCH_MAX_BYTES: usize = 128 * 1024;
const BRANCH_MAX_FACTS: usize = 256;
const BRANCH_MAX_JSON_NODES: usize = 4096;
const BRANCH_MAX_COLLECTION: usize = 256;
const BRANCH_MAX_DEPTH: usize = 16;
const RUN_NAME_MAX_BYTES: usize = 256;
const RUN_DESCRIPTION_MAX_BYTES: usize = 1024;
/// A trace operation's result is dropped from the bounded operation above this.
const OPERATION_RESULT_MAX_BYTES: usize = 96 * 1024;
const PI_PATH_REFS: [&str; 6] = ["pi.read", "pi.grep", "pi.find", "pi.ls", "pi.edit", "pi.write"];
const FAILURE_STAGES: [&str; 6] = ["resolve", "prepare", "validate", "approve", "invoke", "guard"];

fn has_only_keys(map: &Map<String, Value>, keys: &[&str]) -> bool {
  map.keys().all(|key| keys.contains(&key.as_str()))
}

fn is_outcome(value: Option<&Value>) -> bool {
  value.and_then(Value::as_str).and_then(Outcome::parse).is_some()
}

fn optional_string(value: Option<&Value>) -> bool {
  value.is_none_or(Value::is_string)
}

fn is_safe_uint(value: Option<&Value>) -> bool {
  value.and_then(Value::as_u64).is_some_and(|n| n < (1u64 << 53))
}

/// Depth-bounded JSON check (values parsed from JSON are always finite and
/// acyclic; depth and, for branch details, node and collection counts bind).
struct JsonBudget {
  nodes: usize,
  max_nodes: usize,
  max_collection: usize,
  max_depth: usize,
}

impl JsonBudget {
  fn check(&mut self, value: &Value, depth: usize) -> bool {
    self.nodes += 1;
    if self.nodes > self.max_nodes || depth > self.max_depth && (value.is_array() || value.is_object()) {
      return false;
    }
    match value {
      Value::Array(items) => items.len() <= self.max_collection && items.iter().all(|v| self.check(v, depth + 1)),
      Value::Object(map) => map.len() <= self.max_collection && map.values().all(|v| self.check(v, depth + 1)),
      _ => true,
    }
  }
}

fn trace_budget() -> JsonBudget {
  JsonBudget { nodes: 0, max_nodes: usize::MAX, max_collection: usize::MAX, max_depth: TRACE_MAX_DEPTH }
}

fn valid_trace_operation(op: &Value) -> bool {
  let Some(map) = op.as_object() else { return false };
  let keys = [
    "type",
    "sequence",
    "ref",
    "provider",
    "action",
    "args",
    "outcome",
    "normalization",
    "failureStage",
    "error",
    "result",
    "resultTruncated",
  ];
  has_only_keys(map, &keys)
    && map.get("type").and_then(Value::as_str) == Some("call")
    && is_safe_uint(map.get("sequence"))
    && map.get("ref").is_some_and(Value::is_string)
    && map.get("args").is_some_and(|args| args.is_object() && trace_budget().check(args, 0))
    && is_outcome(map.get("outcome"))
    && optional_string(map.get("provider"))
    && optional_string(map.get("action"))
    && map.get("failureStage").is_none_or(|s| s.as_str().is_some_and(|s| FAILURE_STAGES.contains(&s)))
    && optional_string(map.get("error"))
    && map.get("normalization").is_none_or(Value::is_object)
    && map.get("resultTruncated").is_none_or(Value::is_boolean)
    && map.get("result").is_none_or(|result| trace_budget().check(result, 0))
}

/// Strict `FabricExecutionTraceV1` validation.
pub fn valid_trace(trace: &Value) -> bool {
  let Some(map) = trace.as_object() else { return false };
  let counts = ["droppedValues", "truncatedValues", "redactedValues", "droppedOperations"];
  let ops = map.get("operations").and_then(Value::as_array);
  has_only_keys(map, &["kind", "version", "outcome", "phases", "operations", "counts", "error"])
    && map.get("kind").and_then(Value::as_str) == Some(TRACE_KIND)
    && map.get("version").and_then(Value::as_u64) == Some(1)
    && is_outcome(map.get("outcome"))
    && map.get("phases").and_then(Value::as_array).is_some_and(|p| p.iter().all(Value::is_string))
    && ops.is_some_and(|ops| ops.iter().all(valid_trace_operation))
    && map
      .get("counts")
      .and_then(Value::as_object)
      .is_some_and(|c| has_only_keys(c, &counts) && counts.iter().all(|k| is_safe_uint(c.get(*k))))
    && optional_string(map.get("error"))
    && ops.is_some_and(|ops| ops.windows(2).all(|w| w[0]["sequence"].as_u64() < w[1]["sequence"].as_u64()))
    && json::serialized_bytes(trace) <= TRACE_MAX_BYTES
}

/// `provider`/`action` from the operation, else from splitting `ref` at its
/// first dot.
fn identity(op: &Map<String, Value>, reference: &str) -> (Option<String>, Option<String>) {
  let split = reference.find('.').filter(|&at| at > 0 && at + 1 < reference.len());
  let provider = op.get("provider").and_then(Value::as_str).map(str::to_string);
  let action = op.get("action").and_then(Value::as_str).map(str::to_string);
  (
    provider.or_else(|| split.map(|at| reference[..at].to_string())),
    action.or_else(|| split.map(|at| reference[at + 1..].to_string())),
  )
}

/// The operation kept on the child: `result` only when tool output is
/// indexed and it is small enough.
fn bounded_operation(op: &Map<String, Value>, policy: &Policy) -> Value {
  let mut bounded = op.clone();
  let omit = bounded
    .get("result")
    .is_some_and(|result| !policy.index_tool_output || json::serialized_bytes(result) > OPERATION_RESULT_MAX_BYTES);
  if omit {
    bounded.remove("result");
    bounded.insert("resultOmitted".into(), Value::Bool(true));
  }
  Value::Object(bounded)
}

fn child_of(carrier: &Entry, kind: &str) -> Entry {
  Entry {
    parent_id: carrier.parent_id.clone(),
    parent_entry_id: carrier.entry_id.clone(),
    kind: kind.to_string(),
    typed: Typed { timestamp: carrier.typed.timestamp, ..Typed::default() },
    ..Entry::default()
  }
}

/// One child per operation of a valid trace in `details.trace`.
pub fn trace_children(carrier: &Entry, details: Option<&RawValue>, policy: &Policy, out: &mut Vec<Entry>) {
  let Some(carrier_id) = carrier.entry_id.as_deref() else { return };
  let Some(trace) = json::value(details).and_then(|mut d| d.get_mut("trace").map(Value::take)) else { return };
  if !valid_trace(&trace) {
    return;
  }
  for op in trace["operations"].as_array().into_iter().flatten() {
    let Some(op) = op.as_object() else { continue };
    let reference = op["ref"].as_str().unwrap_or_default().to_string();
    let (provider, action) = identity(op, &reference);
    let tool = match (provider.as_deref(), &action) {
      (Some("pi"), Some(action)) => action.clone(),
      (_, action) => action.clone().unwrap_or_else(|| reference.clone()),
    };
    let outcome = op.get("outcome").and_then(Value::as_str).and_then(Outcome::parse);
    let address = format!("{carrier_id}/{}", op["sequence"].as_u64().unwrap_or(0));
    let operation = bounded_operation(op, policy);
    let mut child = child_of(carrier, "fabric_operation");
    child.entry_id = Some(address.clone());
    child.operation_address = Some(address);
    child.typed.role = Some("fabricOperation".into());
    child.text = format!("Fabric operation {reference}\n{}", operation);
    if PI_PATH_REFS.contains(&reference.as_str()) && reference == format!("pi.{tool}") {
      let args = &op["args"];
      let path = ["path", "file", "dir"].iter().find_map(|key| args.get(*key).and_then(Value::as_str));
      child.files_touched.extend(path.map(str::to_string));
    }
    child.typed.tool = Some(tool);
    child.typed.reference = Some(reference);
    child.typed.provider = provider;
    child.typed.action = action;
    child.is_error = outcome != Some(Outcome::Succeeded);
    child.typed.outcome = outcome;
    child.operation = Some(operation);
    out.push(child);
  }
}

fn valid_fact_base(fact: &Map<String, Value>) -> bool {
  match (fact.get("entryId"), fact.get("subordinal"), fact.get("address")) {
    (Some(Value::String(id)), Some(Value::String(sub)), Some(Value::String(address))) => {
      *address == format!("{id}/{sub}")
    }
    _ => false,
  }
}

fn valid_fact_v1(fact: &Value, budget: &mut JsonBudget) -> bool {
  let Some(map) = fact.as_object() else { return false };
  if !valid_fact_base(map) {
    return false;
  }
  fn with<'k>(extra: &[&'k str]) -> Vec<&'k str> {
    [&["kind", "entryId", "subordinal", "address"][..], extra].concat()
  }
  match map.get("kind").and_then(Value::as_str) {
    Some("user") => has_only_keys(map, &with(&["text"])) && map.get("text").is_some_and(Value::is_string),
    Some("customMessage") => {
      has_only_keys(map, &with(&["customType", "text", "display", "details"]))
        && map.get("customType").is_some_and(Value::is_string)
        && map.get("text").is_some_and(Value::is_string)
        && map.get("display").is_some_and(Value::is_boolean)
        && map.get("details").is_none_or(|d| budget.check(d, 0))
    }
    Some("phase") => has_only_keys(map, &with(&["phase"])) && map.get("phase").is_some_and(Value::is_string),
    Some("operation") => {
      has_only_keys(map, &with(&["ref", "provider", "action", "tool", "args", "outcome", "error", "result"]))
        && map.get("ref").is_some_and(Value::is_string)
        && optional_string(map.get("provider"))
        && optional_string(map.get("action"))
        && map.get("tool").is_some_and(Value::is_string)
        && map.get("args").is_some_and(|a| a.is_object() && budget.check(a, 0))
        && is_outcome(map.get("outcome"))
        && optional_string(map.get("error"))
        && map.get("result").is_none_or(|r| budget.check(r, 0))
    }
    _ => false,
  }
}

fn valid_fact_v2(fact: &Value, budget: &mut JsonBudget) -> bool {
  let Some(map) = fact.as_object() else { return false };
  if map.get("kind").and_then(Value::as_str) != Some("fabricRun") {
    return valid_fact_v1(fact, budget);
  }
  let keys = ["kind", "entryId", "subordinal", "address", "name", "description", "outcome"];
  let sub = map.get("subordinal").and_then(Value::as_str).unwrap_or_default();
  let name = map.get("name").and_then(Value::as_str);
  valid_fact_base(map)
    && sub.starts_with("call:")
    && sub.len() > "call:".len()
    && has_only_keys(map, &keys)
    && name.is_some_and(|n| !n.trim().is_empty() && n.len() <= RUN_NAME_MAX_BYTES)
    && map.get("description").is_none_or(|d| d.as_str().is_some_and(|d| d.len() <= RUN_DESCRIPTION_MAX_BYTES))
    && is_outcome(map.get("outcome"))
}

/// Strict `FabricBranchSummaryDetailsV1/V2` validation.
pub fn valid_branch_details(details: &Value) -> bool {
  let Some(map) = details.as_object() else { return false };
  let version = map.get("version").and_then(Value::as_u64);
  let fact_valid: fn(&Value, &mut JsonBudget) -> bool = match version {
    Some(1) => valid_fact_v1,
    Some(2) => valid_fact_v2,
    _ => return false,
  };
  let mut budget = JsonBudget {
    nodes: 0,
    max_nodes: BRANCH_MAX_JSON_NODES,
    max_collection: BRANCH_MAX_COLLECTION,
    max_depth: BRANCH_MAX_DEPTH,
  };
  let source_ok = map.get("source").and_then(Value::as_object).is_some_and(|s| {
    has_only_keys(s, &["firstEntryId", "lastEntryId", "entryCount", "oldLeafId"])
      && s.get("firstEntryId").is_some_and(Value::is_string)
      && s.get("lastEntryId").is_some_and(Value::is_string)
      && is_safe_uint(s.get("entryCount"))
      && s.get("oldLeafId").is_none_or(|v| v.is_null() || v.is_string())
  });
  let request_ok = map.get("request").and_then(Value::as_object).is_some_and(|r| {
    has_only_keys(r, &["text", "sourceBytes", "truncated"])
      && r.get("text").is_some_and(Value::is_string)
      && r.get("truncated").is_some_and(Value::is_boolean)
      && is_safe_uint(r.get("sourceBytes"))
  });
  let facts = map.get("facts").and_then(Value::as_array);
  has_only_keys(map, &["kind", "version", "source", "facts", "omittedFacts", "sections", "request"])
    && map.get("kind").and_then(Value::as_str) == Some(BRANCH_KIND)
    && source_ok
    && facts.is_some_and(|f| f.len() <= BRANCH_MAX_FACTS && f.iter().all(|fact| fact_valid(fact, &mut budget)))
    && is_safe_uint(map.get("omittedFacts"))
    && map.get("sections").and_then(Value::as_array).is_some_and(|s| s.len() <= 64 && s.iter().all(Value::is_string))
    && request_ok
    && json::serialized_bytes(details) <= BRANCH_MAX_BYTES
}

/// Branch-fact state across carriers: earlier carriers win a fact address.
#[derive(Default)]
pub struct Carriers {
  seen: HashSet<String>,
  pub reasons: BTreeSet<Reason>,
}

impl Carriers {
  /// State after earlier carriers whose facts had these addresses.
  pub fn with_seen(addresses: impl Iterator<Item = String>) -> Carriers {
    Carriers { seen: addresses.collect(), reasons: BTreeSet::new() }
  }

  pub fn branch_facts(
    &mut self,
    carrier: &Entry,
    details: Option<&RawValue>,
    from_id: Option<String>,
    policy: &Policy,
    out: &mut Vec<Entry>,
  ) {
    let Some(details) = json::value(details) else { return };
    if !valid_branch_details(&details) {
      return;
    }
    let facts = details["facts"].as_array().cloned().unwrap_or_default();
    let mut addresses = HashSet::new();
    for fact in &facts {
      let address = fact["address"].as_str().unwrap_or_default();
      if !addresses.insert(address) {
        self.reasons.insert(Reason::DuplicateBranchFactAddress);
        if fact["kind"] == "operation" || fact["kind"] == "fabricRun" {
          self.reasons.insert(Reason::DuplicateOperationAddress);
        }
        return;
      }
    }
    for fact in facts {
      let address = fact["address"].as_str().unwrap_or_default().to_string();
      if self.seen.insert(address.clone()) {
        out.push(fact_child(carrier, fact, address, from_id.clone(), policy));
      }
    }
  }
}

fn str_of(fact: &Value, key: &str) -> String {
  fact.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

fn fact_child(carrier: &Entry, fact: Value, address: String, from_id: Option<String>, policy: &Policy) -> Entry {
  let mut child = child_of(carrier, "fabric_branch_fact");
  child.entry_id = Some(address.clone());
  child.fact_address = Some(address.clone());
  child.carrier_entry_id = carrier.entry_id.clone();
  child.carrier_parent_id = carrier.parent_id.clone();
  child.carrier_from_id = from_id;
  match fact["kind"].as_str().unwrap_or_default() {
    "user" => {
      child.typed.role = Some("branchUser".into());
      child.text = str_of(&fact, "text");
    }
    "customMessage" => {
      child.typed.role = Some("branchCustomMessage".into());
      child.text = format!("[{}] {}", str_of(&fact, "customType"), str_of(&fact, "text"));
    }
    "phase" => {
      child.typed.role = Some("fabricPhase".into());
      child.text = format!("Fabric phase {}", str_of(&fact, "phase"));
    }
    "fabricRun" => {
      let outcome = str_of(&fact, "outcome");
      let description = fact.get("description").and_then(Value::as_str);
      child.typed.role = Some("fabricRun".into());
      child.typed.tool = Some("fabric_exec".into());
      child.typed.reference = Some("fabric_exec".into());
      child.operation_address = Some(address);
      child.text = match description {
        Some(d) => format!("Fabric run {} — {d} → {outcome}", str_of(&fact, "name")),
        None => format!("Fabric run {} → {outcome}", str_of(&fact, "name")),
      };
      child.typed.outcome = Outcome::parse(&outcome);
      child.is_error = child.typed.outcome != Some(Outcome::Succeeded);
    }
    _ => operation_fact(&mut child, &fact, address, policy),
  }
  child.branch_fact = Some(fact);
  child
}

fn operation_fact(child: &mut Entry, fact: &Value, address: String, policy: &Policy) {
  let map = fact.as_object().cloned().unwrap_or_default();
  let reference = str_of(fact, "ref");
  let (provider, action) = identity(&map, &reference);
  let mut op = map;
  for key in ["kind", "entryId", "subordinal", "address"] {
    op.remove(key);
  }
  let operation = bounded_operation(&op, policy);
  argument_paths(&fact["args"], &mut child.files_touched);
  child.typed.role = Some("fabricOperation".into());
  child.typed.tool = Some(str_of(fact, "tool"));
  child.text = format!("Fabric branch operation {reference}\n{operation}");
  child.operation_address = Some(address);
  child.typed.outcome = Outcome::parse(&str_of(fact, "outcome"));
  child.is_error = child.typed.outcome != Some(Outcome::Succeeded);
  child.typed.reference = Some(reference);
  child.typed.provider = provider;
  child.typed.action = action;
  child.operation = Some(operation);
}

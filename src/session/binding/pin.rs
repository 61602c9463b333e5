//! A pin: one short string that carries what a follow or continuation call
//! is bound to (which session, its source prefix and lineage), so a page the
//! model reads states a binding in ~60 characters instead of a session path
//! and two hashes (~250).
//!
//! `<session>~<bytes>~<hash>~<fingerprint>~<leaf>[~all]`: the session by its
//! id (a [`ID_PREFIX`]-character prefix of a longer id: `find` resolves a
//! unique prefix), the bound byte length, the first [`MIN_HASH_PREFIX`] hex
//! digits of the source hash and of the lineage fingerprint, the bound leaf
//! id, and `all` in all-branches mode. Parts holding `~` or `%` are
//! percent-encoded. Nothing is lost but hash digits (a chance match is
//! 2^-64): a rewritten or re-branched session is still `stale_pointer`.
//!
//! The addon owns both directions: request parsers unfold a `pin` argument,
//! `memory.pack` folds its citations' calls, and the shim's model view folds
//! recall and expand calls through the same code.

use super::{ARGS as BOUND, MIN_HASH_PREFIX};
use crate::error::{CoreError, CoreResult};
use crate::pi_path::percent_decode;
use serde_json::{Map, Value};

/// Session ids longer than this are named by their prefix (what the CLI shows).
pub const ID_PREFIX: usize = 13;

/// Where a call names its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
  /// `memory.expand`'s `session`.
  Session,
  /// `memory.recall`'s `scope: "session:<…>"`.
  Scope,
}

const SCOPE_PREFIX: &str = "session:";

impl Slot {
  pub fn parse(name: &str) -> Option<Slot> {
    match name {
      "session" => Some(Slot::Session),
      "scope" => Some(Slot::Scope),
      _ => None,
    }
  }

  fn key(self) -> &'static str {
    match self {
      Slot::Session => "session",
      Slot::Scope => "scope",
    }
  }

  /// The session a call names, without the `session:` of a scope.
  fn session_of(self, args: &Map<String, Value>) -> Option<&str> {
    let named = args.get(self.key())?.as_str()?;
    match self {
      Slot::Session => Some(named),
      Slot::Scope => named.strip_prefix(SCOPE_PREFIX),
    }
  }

  fn naming(self, session: String) -> Value {
    match self {
      Slot::Session => Value::String(session),
      Slot::Scope => Value::String(format!("{SCOPE_PREFIX}{session}")),
    }
  }
}

// `~` separates parts and `%` escapes: both are escaped in a part.
fn encode(part: &str) -> String {
  part.replace('%', "%25").replace('~', "%7E")
}

fn is_hex_hash(value: &str) -> bool {
  (MIN_HASH_PREFIX..=64).contains(&value.len()) && value.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `args` with its session and binding folded into `pin` (first), or `None`
/// when it is not a bound call (no hashes to fold) or names its session in a
/// way a pin cannot (no id). `session_id` is the header id of the session
/// the call names.
pub fn fold(args: &Map<String, Value>, slot: Slot, session_id: Option<&str>) -> Option<Map<String, Value>> {
  slot.session_of(args)?;
  let session_id = session_id.filter(|id| !id.is_empty())?;
  let hash = args.get("expectedSourceHash")?.as_str().filter(|h| is_hex_hash(h))?;
  let fingerprint = args.get("expectedLineageFingerprint")?.as_str().filter(|f| is_hex_hash(f))?;
  let bytes = match args.get("expectedSourceBytes") {
    None => String::new(),
    Some(bytes) => bytes.as_u64()?.to_string(),
  };
  let leaf = args.get("expectedLineageLeafId").and_then(Value::as_str).unwrap_or("");
  let reference: String = session_id.chars().take(ID_PREFIX).collect();
  let mut parts = vec![
    encode(&reference),
    bytes,
    hash[..MIN_HASH_PREFIX].to_string(),
    fingerprint[..MIN_HASH_PREFIX].to_string(),
    encode(leaf),
  ];
  if args.get("branches").and_then(Value::as_str) == Some("all") {
    parts.push("all".into());
  }
  let mut folded = Map::new();
  folded.insert("pin".into(), Value::String(parts.join("~")));
  for (key, value) in args {
    if key != slot.key() && key != "branches" && !BOUND.contains(&key.as_str()) {
      folded.insert(key.clone(), value.clone());
    }
  }
  Some(folded)
}

/// `args` with its `pin` unfolded into the session slot and the binding
/// keys; `None` when it carries no pin. A malformed pin, or a pin beside a
/// key it stands for, is `invalid_argument`.
pub fn unfold(args: &Map<String, Value>, slot: Slot, call: &str) -> CoreResult<Option<Map<String, Value>>> {
  let Some(pin) = args.get("pin").filter(|pin| !pin.is_null()) else { return Ok(None) };
  let Some(pin) = pin.as_str() else { return Err(CoreError::invalid(format!("{call}: pin must be a string"))) };
  let clash: Vec<&str> =
    [slot.key(), "branches"].into_iter().chain(BOUND).filter(|key| args.contains_key(*key)).collect();
  if !clash.is_empty() {
    return Err(CoreError::invalid(format!("{call}: pin already states {}", clash.join(", "))));
  }
  let malformed =
    || CoreError::invalid(format!("{call}: malformed pin {} (pass a hit's pin unchanged)", Value::from(pin)));
  let parts: Vec<&str> = pin.split('~').collect();
  let all = match parts.len() {
    5 => false,
    6 if parts[5] == "all" => true,
    _ => return Err(malformed()),
  };
  let (reference, bytes, hash, fingerprint, leaf) = (parts[0], parts[1], parts[2], parts[3], parts[4]);
  if reference.is_empty()
    || !bytes.bytes().all(|b| b.is_ascii_digit())
    || !is_hex_hash(hash)
    || !is_hex_hash(fingerprint)
  {
    return Err(malformed());
  }
  let session = percent_decode(reference).ok_or_else(malformed)?;
  let leaf = percent_decode(leaf).ok_or_else(malformed)?;
  let mut unfolded: Map<String, Value> =
    args.iter().filter(|(key, _)| *key != "pin").map(|(k, v)| (k.clone(), v.clone())).collect();
  unfolded.insert(slot.key().into(), slot.naming(session));
  unfolded.insert("branches".into(), Value::from(if all { "all" } else { "active" }));
  if !bytes.is_empty() {
    let bytes: u64 = bytes.parse().map_err(|_| malformed())?;
    unfolded.insert("expectedSourceBytes".into(), Value::from(bytes));
  }
  unfolded.insert("expectedSourceHash".into(), Value::from(hash));
  unfolded.insert("expectedLineageFingerprint".into(), Value::from(fingerprint));
  if !leaf.is_empty() {
    unfolded.insert("expectedLineageLeafId".into(), Value::from(leaf));
  }
  Ok(Some(unfolded))
}

/// A call's arguments with its pin unfolded ([`unfold`]); `None` when there
/// is nothing to unfold, so the caller reads `value` as it is.
pub fn unfolded(value: Option<&Value>, slot: Slot, call: &str) -> CoreResult<Option<Value>> {
  match value {
    Some(Value::Object(args)) => Ok(unfold(args, slot, call)?.map(Value::Object)),
    _ => Ok(None),
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_json::json;

  fn map(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
  }

  const HASH: &str = "abababababababababababababababababababababababababababababababab";
  const PRINT: &str = "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd";

  #[test]
  fn a_pin_folds_and_unfolds_with_encoded_parts_and_all_branches() {
    let args = map(json!({"session": "/x/y.jsonl", "branches": "all", "expectedSourceHash": HASH,
      "expectedSourceBytes": 42, "expectedLineageFingerprint": PRINT, "expectedLineageLeafId": "a~b", "indices": [3]}));
    let folded = fold(&args, Slot::Session, Some("odd~id")).unwrap();
    assert_eq!(
      Value::Object(folded.clone()),
      json!({"pin": "odd%7Eid~42~abababababababab~cdcdcdcdcdcdcdcd~a%7Eb~all", "indices": [3]})
    );
    assert_eq!(folded.keys().next().map(String::as_str), Some("pin"));
    assert_eq!(
      Value::Object(unfold(&folded, Slot::Session, "t").unwrap().unwrap()),
      json!({"indices": [3], "session": "odd~id", "branches": "all", "expectedSourceBytes": 42,
        "expectedSourceHash": "abababababababab", "expectedLineageFingerprint": "cdcdcdcdcdcdcdcd",
        "expectedLineageLeafId": "a~b"})
    );
  }

  #[test]
  fn a_scope_pin_names_the_session_by_its_id_prefix() {
    let args = map(json!({"scope": "session:/p", "expectedSourceHash": HASH, "expectedLineageFingerprint": PRINT}));
    let folded = fold(&args, Slot::Scope, Some("019e9a22-a7d6-7000")).unwrap();
    let unfolded = unfold(&folded, Slot::Scope, "t").unwrap().unwrap();
    assert_eq!(unfolded["scope"], json!("session:019e9a22-a7d6"));
    assert_eq!(unfolded["branches"], json!("active"));
    assert!(!unfolded.contains_key("expectedSourceBytes") && !unfolded.contains_key("expectedLineageLeafId"));
  }

  #[test]
  fn unbound_calls_and_unnamed_sessions_are_not_folded() {
    assert_eq!(fold(&map(json!({"scope": "project", "offset": 10})), Slot::Scope, Some("x")), None);
    let bound = map(json!({"session": "/p", "expectedSourceHash": HASH, "expectedLineageFingerprint": PRINT}));
    assert_eq!(fold(&bound, Slot::Session, None), None);
    let short = map(json!({"session": "/p", "expectedSourceHash": "abc", "expectedLineageFingerprint": PRINT}));
    assert_eq!(fold(&short, Slot::Session, Some("x")), None);
    assert_eq!(unfold(&map(json!({"indices": [1]})), Slot::Session, "t").unwrap(), None);
  }

  #[test]
  fn malformed_or_clashing_pins_are_invalid_arguments() {
    let (h, p) = (&HASH[..16], &PRINT[..16]);
    let bad = [
      "a~1~zz~cd~".to_string(),
      format!("a~1~{}~{p}~", &HASH[..15]),
      format!("~1~{h}~{p}~"),
      format!("a~1~{h}~{p}~l~some"),
      format!("a%zz~1~{h}~{p}~"),
      format!("a~x1~{h}~{p}~"),
    ];
    for pin in bad {
      let error = unfold(&map(json!({ "pin": pin })), Slot::Session, "memory.expand").unwrap_err();
      assert!(matches!(error, CoreError::InvalidArgument(_)), "{pin}");
      assert!(error.to_string().contains("malformed pin"), "{pin}: {error}");
    }
    let clash = unfold(&map(json!({"pin": format!("a~1~{h}~{p}~"), "session": "b"})), Slot::Session, "memory.expand");
    assert_eq!(clash.unwrap_err().to_string(), "memory.expand: pin already states session");
    let not_string = unfold(&map(json!({"pin": 3})), Slot::Session, "memory.expand");
    assert_eq!(not_string.unwrap_err().to_string(), "memory.expand: pin must be a string");
  }
}

//! Strict readers for call arguments arriving as JSON objects.
//!
//! Every malformed argument is an `invalid_argument` error that names the
//! key and what it must be; unknown keys are rejected so a typo never turns
//! into a silently ignored filter.

use crate::error::{CoreError, CoreResult};
use crate::session::discover::Scope;
use crate::session::lineage::Branches;
use serde_json::{Map, Value};

pub struct Args<'a> {
  pub call: &'static str,
  map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
  pub fn new(call: &'static str, value: Option<&'a Value>, allowed: &[&str]) -> CoreResult<Args<'a>> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    let map = match value {
      None | Some(Value::Null) => EMPTY.get_or_init(Map::new),
      Some(Value::Object(map)) => map,
      Some(other) => return Err(CoreError::invalid(format!("{call}: arguments must be an object, got {other}"))),
    };
    if let Some(unknown) = map.keys().find(|key| !allowed.contains(&key.as_str())) {
      return Err(CoreError::invalid(format!(
        "{call}: unknown argument \"{unknown}\" (expected one of: {})",
        allowed.join(", ")
      )));
    }
    Ok(Args { call, map })
  }

  fn present(&self, key: &str) -> Option<&'a Value> {
    self.map.get(key).filter(|v| !v.is_null())
  }

  fn fail<T>(&self, key: &str, what: &str, got: &Value) -> CoreResult<T> {
    Err(CoreError::invalid(format!("{}: {key} must be {what}, got {got}", self.call)))
  }

  pub fn string(&self, key: &str) -> CoreResult<Option<String>> {
    match self.present(key) {
      None => Ok(None),
      Some(Value::String(text)) => Ok(Some(text.clone())),
      Some(other) => self.fail(key, "a string", other),
    }
  }

  pub fn integer(&self, key: &str) -> CoreResult<Option<i64>> {
    match self.present(key) {
      None => Ok(None),
      Some(value) => match value.as_f64() {
        Some(n) if n.fract() == 0.0 && n.abs() <= 9_007_199_254_740_991.0 => Ok(Some(n as i64)),
        _ => self.fail(key, "an integer", value),
      },
    }
  }

  /// An integer in `min..=max`, or `default` when absent.
  pub fn bounded(&self, key: &str, min: i64, max: i64, default: i64) -> CoreResult<i64> {
    match self.integer(key)? {
      None => Ok(default),
      Some(n) if (min..=max).contains(&n) => Ok(n),
      Some(n) => self.fail(key, &format!("an integer from {min} to {max}"), &Value::from(n)),
    }
  }

  pub fn strings(&self, key: &str, max_len: usize) -> CoreResult<Option<Vec<String>>> {
    let Some(value) = self.present(key) else { return Ok(None) };
    let Some(items) = value.as_array() else { return self.fail(key, "an array of strings", value) };
    items
      .iter()
      .map(|item| match item {
        Value::String(text) if text.chars().count() <= max_len => Ok(text.clone()),
        other => self.fail(key, &format!("an array of strings of at most {max_len} characters"), other),
      })
      .collect::<CoreResult<Vec<_>>>()
      .map(Some)
  }

  pub fn integers(&self, key: &str) -> CoreResult<Option<Vec<i64>>> {
    let Some(value) = self.present(key) else { return Ok(None) };
    let Some(items) = value.as_array() else { return self.fail(key, "an array of integers", value) };
    items
      .iter()
      .map(|item| match item.as_f64() {
        Some(n) if n.fract() == 0.0 && n.abs() <= 9_007_199_254_740_991.0 => Ok(n as i64),
        _ => self.fail(key, "an array of integers", item),
      })
      .collect::<CoreResult<Vec<_>>>()
      .map(Some)
  }

  pub fn object(&self, key: &str) -> CoreResult<Option<&'a Value>> {
    match self.present(key) {
      None => Ok(None),
      Some(value @ Value::Object(_)) => Ok(Some(value)),
      Some(other) => self.fail(key, "an object", other),
    }
  }

  /// `branches`: "active" (the default) or "all".
  pub fn branches(&self) -> CoreResult<Branches> {
    match self.string("branches")? {
      None => Ok(Branches::Active),
      Some(text) => Branches::parse(&text).ok_or_else(|| {
        CoreError::invalid(format!("{}: branches must be \"active\" or \"all\", got \"{text}\"", self.call))
      }),
    }
  }

  /// `scope`, or `default` when absent.
  pub fn scope(&self, default: Scope) -> CoreResult<Scope> {
    match self.string("scope")? {
      None => Ok(default),
      Some(text) => Scope::parse(&text).ok_or_else(|| {
        CoreError::invalid(format!(
          "{}: scope must be \"session\", \"project\", \"global\" or \"session:<id-or-path>\", got \"{text}\"",
          self.call
        ))
      }),
    }
  }
}

//! The `memory` configuration: defaults, bounds and validation.
//!
//! Keys and defaults are docs/configuration.md (held equal by __test__/docs.test.mts); the bounds are
//! the `integer` rows of `from_json`. A value of the
//! wrong type or out of bounds is an `invalid_argument` error naming the key,
//! never a silent clamp. Unknown keys are ignored so newer settings files
//! keep working with this version.

use crate::error::{CoreError, CoreResult};
use crate::session::entry::Policy;
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
  pub enabled: bool,
  pub index_dir: Option<String>,
  pub max_sessions: u64,
  pub max_entry_chars: u64,
  pub index_thinking: bool,
  pub index_tool_output: bool,
  /// Index the results of this package's own tools (off: they echo).
  pub index_own_tool_results: bool,
  /// Let live-session recall see the turn in progress (off: the prompt that
  /// asked is not evidence about the past).
  pub recall_current_turn: bool,
  pub hot_sessions: u64,
  pub max_cold_vocabulary_bytes: u64,
  pub max_cold_cache_bytes: u64,
  pub max_sync_sessions: u64,
  pub max_sync_source_bytes: u64,
  pub max_cache_cleanup_files: u64,
  pub regex_max_pattern_bytes: u64,
  pub regex_max_haystack_terms: u64,
  pub regex_max_haystack_bytes: u64,
  pub regex_timeout_ms: u64,
  /// Watch the session dirs for changes (Linux inotify) instead of stating
  /// every session file on every call; off: always stat.
  pub watch_sessions: bool,
  /// The explicit project key (`crate::project`): checkouts with the same
  /// key are one project, whatever their remotes or paths.
  pub project_key: Option<String>,
}

impl Default for Config {
  fn default() -> Self {
    Config {
      enabled: true,
      index_dir: None,
      max_sessions: 500,
      max_entry_chars: 2000,
      index_thinking: false,
      index_tool_output: true,
      index_own_tool_results: false,
      recall_current_turn: false,
      hot_sessions: 50,
      max_cold_vocabulary_bytes: 524_288,
      max_cold_cache_bytes: 1_048_576,
      max_sync_sessions: 10_000,
      max_sync_source_bytes: 536_870_912,
      max_cache_cleanup_files: 100_000,
      regex_max_pattern_bytes: 1024,
      regex_max_haystack_terms: 20_000,
      regex_max_haystack_bytes: 2_097_152,
      regex_timeout_ms: 250,
      watch_sessions: true,
      project_key: None,
    }
  }
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;
/// `maxColdCacheBytes`' largest value: also what a cold record's body may
/// decompress to at most, whatever the config that reads it.
pub const MAX_COLD_CACHE_BYTES: u64 = 128 * MIB;

fn integer(map: &Map<String, Value>, key: &str, min: u64, max: u64, slot: &mut u64) -> CoreResult<()> {
  let Some(value) = map.get(key) else { return Ok(()) };
  let number = value.as_f64().filter(|n| n.fract() == 0.0);
  match number {
    Some(n) if n >= min as f64 && n <= max as f64 => {
      *slot = n as u64;
      Ok(())
    }
    _ => Err(CoreError::invalid(format!("memory.{key} must be an integer from {min} to {max}, got {value}"))),
  }
}

fn text(map: &Map<String, Value>, key: &str, slot: &mut Option<String>) -> CoreResult<()> {
  match map.get(key) {
    None | Some(Value::Null) => Ok(()),
    Some(Value::String(value)) => {
      *slot = Some(crate::project::explicit_key(value, &format!("memory.{key}"))?);
      Ok(())
    }
    Some(other) => Err(CoreError::invalid(format!("memory.{key} must be a string, got {other}"))),
  }
}

fn boolean(map: &Map<String, Value>, key: &str, slot: &mut bool) -> CoreResult<()> {
  match map.get(key) {
    None => Ok(()),
    Some(Value::Bool(b)) => {
      *slot = *b;
      Ok(())
    }
    Some(other) => Err(CoreError::invalid(format!("memory.{key} must be a boolean, got {other}"))),
  }
}

impl Config {
  /// Reads the `memory` object of Pi's settings (or of the caller's options).
  pub fn from_json(value: Option<&Value>) -> CoreResult<Config> {
    let mut config = Config::default();
    let Some(value) = value.filter(|v| !v.is_null()) else { return Ok(config) };
    let map = value.as_object().ok_or_else(|| CoreError::invalid("memory config must be an object"))?;
    boolean(map, "enabled", &mut config.enabled)?;
    boolean(map, "indexThinking", &mut config.index_thinking)?;
    boolean(map, "indexToolOutput", &mut config.index_tool_output)?;
    boolean(map, "indexOwnToolResults", &mut config.index_own_tool_results)?;
    boolean(map, "recallCurrentTurn", &mut config.recall_current_turn)?;
    boolean(map, "watchSessions", &mut config.watch_sessions)?;
    text(map, "projectKey", &mut config.project_key)?;
    match map.get("indexDir") {
      None | Some(Value::Null) => {}
      Some(Value::String(dir)) if !dir.is_empty() => config.index_dir = Some(dir.clone()),
      Some(other) => return Err(CoreError::invalid(format!("memory.indexDir must be a path, got {other}"))),
    }
    integer(map, "maxSessions", 1, 100_000, &mut config.max_sessions)?;
    integer(map, "maxEntryChars", 100, 1_000_000, &mut config.max_entry_chars)?;
    integer(map, "hotSessions", 0, 100_000, &mut config.hot_sessions)?;
    integer(map, "maxColdVocabularyBytes", 2, 64 * MIB, &mut config.max_cold_vocabulary_bytes)?;
    integer(map, "maxColdCacheBytes", 512, MAX_COLD_CACHE_BYTES, &mut config.max_cold_cache_bytes)?;
    integer(map, "maxSyncSessions", 1, 1_000_000, &mut config.max_sync_sessions)?;
    integer(map, "maxSyncSourceBytes", KIB, 8 * GIB, &mut config.max_sync_source_bytes)?;
    integer(map, "maxCacheCleanupFiles", 1, 1_000_000, &mut config.max_cache_cleanup_files)?;
    integer(map, "regexMaxPatternBytes", 1, 64 * KIB, &mut config.regex_max_pattern_bytes)?;
    integer(map, "regexMaxHaystackTerms", 1, 1_000_000, &mut config.regex_max_haystack_terms)?;
    integer(map, "regexMaxHaystackBytes", KIB, 128 * MIB, &mut config.regex_max_haystack_bytes)?;
    integer(map, "regexTimeoutMs", 10, 10_000, &mut config.regex_timeout_ms)?;
    Ok(config)
  }

  /// The effective settings as the `memory` object would spell them (for
  /// diagnostics: what is in effect after defaults and validation).
  pub fn to_json(&self) -> Value {
    serde_json::json!({
      "enabled": self.enabled,
      "indexDir": self.index_dir,
      "maxSessions": self.max_sessions,
      "maxEntryChars": self.max_entry_chars,
      "indexThinking": self.index_thinking,
      "indexToolOutput": self.index_tool_output,
      "hotSessions": self.hot_sessions,
      "maxColdVocabularyBytes": self.max_cold_vocabulary_bytes,
      "maxColdCacheBytes": self.max_cold_cache_bytes,
      "maxSyncSessions": self.max_sync_sessions,
      "maxSyncSourceBytes": self.max_sync_source_bytes,
      "maxCacheCleanupFiles": self.max_cache_cleanup_files,
      "regexMaxPatternBytes": self.regex_max_pattern_bytes,
      "regexMaxHaystackTerms": self.regex_max_haystack_terms,
      "regexMaxHaystackBytes": self.regex_max_haystack_bytes,
      "regexTimeoutMs": self.regex_timeout_ms,
      "watchSessions": self.watch_sessions,
      "indexOwnToolResults": self.index_own_tool_results,
      "recallCurrentTurn": self.recall_current_turn,
      "projectKey": self.project_key,
    })
  }

  /// The policy of derived (hot) text: bounded, thinking and tool output as
  /// configured.
  pub fn index_policy(&self) -> Policy {
    Policy {
      index_thinking: self.index_thinking,
      index_tool_output: self.index_tool_output,
      max_entry_chars: Some(self.max_entry_chars as usize),
      index_own_results: self.index_own_tool_results,
    }
  }

  /// The policy of expansion: full text and tool output; thinking only when
  /// the user opted in, so expansion never reveals what indexing hides.
  pub fn expand_policy(&self) -> Policy {
    Policy {
      index_thinking: self.index_thinking,
      index_tool_output: true,
      max_entry_chars: None,
      index_own_results: true,
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_json::json;

  #[test]
  fn defaults_match_the_documented_table() {
    let config = Config::from_json(None).unwrap();
    assert_eq!(config.hot_sessions, 50);
    assert_eq!(config.max_entry_chars, 2000);
    assert_eq!(config.max_cold_vocabulary_bytes, 512 * 1024);
    assert!(!config.index_thinking && config.index_tool_output);
  }

  #[test]
  fn rejects_out_of_range_and_wrong_types() {
    let err = Config::from_json(Some(&json!({"maxEntryChars": 5}))).unwrap_err();
    assert!(err.to_string().contains("memory.maxEntryChars"));
    assert!(Config::from_json(Some(&json!({"hotSessions": -1}))).is_err());
    assert!(Config::from_json(Some(&json!({"indexThinking": "yes"}))).is_err());
    assert!(Config::from_json(Some(&json!({"hotSessions": 1.5}))).is_err());
    assert!(Config::from_json(Some(&json!([]))).is_err());
    for bad in [json!(""), json!(7), json!("a\u{0}b")] {
      let err = Config::from_json(Some(&json!({ "projectKey": bad }))).unwrap_err();
      assert!(err.to_string().starts_with("memory.projectKey must be"), "{err}");
    }
  }

  #[test]
  fn to_json_round_trips_through_from_json() {
    let config = Config::from_json(Some(&json!({"hotSessions": 7, "indexDir": "/x", "regexTimeoutMs": 99,
      "indexOwnToolResults": true, "recallCurrentTurn": true, "projectKey": " team "})))
    .unwrap();
    let json = config.to_json();
    assert_eq!(json["hotSessions"], 7);
    assert_eq!(json["maxSyncSessions"], 10_000, "defaults are filled in");
    assert_eq!(json["projectKey"], "team", "trimmed");
    assert_eq!(Config::from_json(Some(&json)).unwrap(), config);
  }

  #[test]
  fn accepts_valid_values_and_ignores_unknown_keys() {
    let config = Config::from_json(Some(&json!({"hotSessions": 0, "digestTerms": 5, "indexThinking": true}))).unwrap();
    assert_eq!(config.hot_sessions, 0);
    assert!(config.index_thinking);
  }
}

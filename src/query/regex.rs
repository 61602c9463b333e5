//! Bounded regular expressions.
//!
//! The Rust `regex` crate runs in linear time, so no pattern can backtrack
//! catastrophically; the remaining bounds (pattern bytes, haystack count and
//! bytes, a wall-clock deadline checked between haystacks) keep one query's
//! work bounded. Matching is case-insensitive and Unicode-aware, with
//! JavaScript's class semantics (`\w`, `\d`, `\b` ASCII; see `jsregex`).

use crate::config::Config;
use crate::coverage::Reason;
use crate::error::{ContractError, ErrorCode};
use regex::{Regex, RegexBuilder};
use std::time::{Duration, Instant};

/// A compiled pattern with its remaining budget.
pub struct BoundedRegex {
  regex: Regex,
  deadline: Instant,
  items_left: u64,
  bytes_left: u64,
}

/// Why a scan stopped before every haystack was tested.
pub type Stop = Reason;

fn invalid(message: String) -> ContractError {
  ContractError::new(ErrorCode::InvalidRegex, message)
}

impl BoundedRegex {
  pub fn compile(pattern: &str, config: &Config) -> Result<BoundedRegex, ContractError> {
    if pattern.len() as u64 > config.regex_max_pattern_bytes {
      return Err(ContractError::new(
        ErrorCode::RegexPatternTooLarge,
        format!("The pattern has {} UTF-8 bytes; the limit is {}.", pattern.len(), config.regex_max_pattern_bytes),
      ));
    }
    let regex = RegexBuilder::new(&crate::jsregex::translate(pattern))
      .case_insensitive(true)
      .unicode(true)
      .size_limit(8 << 20)
      .dfa_size_limit(8 << 20)
      .build()
      .map_err(|error| {
        let text = error.to_string();
        if text.contains("look-around") || text.contains("backreference") {
          invalid(format!(
            "Invalid regex: it uses JavaScript-only syntax (look-around or backreferences), which the linear-time engine does not support. {text}"
          ))
        } else {
          invalid(format!("Invalid regex: {text}"))
        }
      })?;
    Ok(BoundedRegex {
      regex,
      deadline: Instant::now() + Duration::from_millis(config.regex_timeout_ms),
      items_left: config.regex_max_haystack_terms,
      bytes_left: config.regex_max_haystack_bytes,
    })
  }

  /// Tests one haystack, charging it to the budget first.
  pub fn test(&mut self, haystack: &str) -> Result<bool, Stop> {
    if self.items_left == 0 {
      return Err(Reason::RegexMaxHaystackTerms);
    }
    if (haystack.len() as u64) > self.bytes_left {
      return Err(Reason::RegexMaxHaystackBytes);
    }
    if Instant::now() >= self.deadline {
      return Err(Reason::RegexTimeout);
    }
    self.items_left -= 1;
    self.bytes_left -= haystack.len() as u64;
    Ok(self.regex.is_match(haystack))
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn config() -> Config {
    Config::default()
  }

  #[test]
  fn catastrophic_patterns_run_in_linear_time() {
    let mut regex = BoundedRegex::compile("(a+)+$", &config()).unwrap();
    let haystack = "a".repeat(80_000) + "!";
    let started = Instant::now();
    assert_eq!(regex.test(&haystack), Ok(false));
    assert!(started.elapsed() < Duration::from_secs(5));
  }

  #[test]
  fn matching_is_case_insensitive_and_unicode() {
    let mut regex = BoundedRegex::compile("^rarelexeme_[0-9]{3}$", &config()).unwrap();
    assert_eq!(regex.test("RARELEXEME_042"), Ok(true));
    let mut omega = BoundedRegex::compile("ωmega", &config()).unwrap();
    assert_eq!(omega.test("ΩMEGA雪"), Ok(true));
  }

  #[test]
  fn limits_are_named() {
    let small = Config { regex_max_pattern_bytes: 4, ..config() };
    assert_eq!(BoundedRegex::compile("abcde", &small).err().unwrap().code, "regex_pattern_too_large");
    let one = Config { regex_max_haystack_terms: 1, ..config() };
    let mut regex = BoundedRegex::compile("a", &one).unwrap();
    assert_eq!(regex.test("a"), Ok(true));
    assert_eq!(regex.test("a"), Err(Reason::RegexMaxHaystackTerms));
    let bytes = Config { regex_max_haystack_bytes: 1024, ..config() };
    let mut regex = BoundedRegex::compile("a", &bytes).unwrap();
    assert_eq!(regex.test(&"b".repeat(2000)), Err(Reason::RegexMaxHaystackBytes));
  }

  #[test]
  fn javascript_only_syntax_is_explained() {
    for pattern in ["(?=a)b", "(a)\\1", "(?<!x)y"] {
      let error = BoundedRegex::compile(pattern, &config()).err().unwrap();
      assert_eq!(error.code, "invalid_regex");
      assert!(error.message.contains("JavaScript-only"), "{pattern}: {}", error.message);
    }
    assert!(!BoundedRegex::compile("(", &config()).err().unwrap().message.contains("JavaScript-only"));
  }
}

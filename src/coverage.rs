//! Coverage (README "Coverage"): what a record or a call could search, and
//! a closed set of reasons why not all of it.
//!
//! Reasons travel as [`Reason`] and are spelled once, by the enum; records
//! persist them as their wire strings, so a reason this build does not know
//! fails the record's decode and the record is rebuilt.

use crate::error::{ContractError, ErrorCode};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::collections::BTreeSet;

/// Why a record or a call is not complete. Ordered by wire spelling, so a
/// sorted set of reasons reads alphabetically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::EnumString, strum::EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum Reason {
  // A session's record.
  SourceUnavailable,
  SourceChangedDuringIndex,
  MaxEntryChars,
  DuplicateEntryId,
  DuplicateOperationAddress,
  DuplicateBranchFactAddress,
  InvalidParentGraph,
  InvalidUtf8Replaced,
  LoneSurrogateReplaced,
  MaxColdVocabularyBytes,
  MaxColdCacheBytes,
  MaxFilesTouched,
  // The sync.
  MaxSyncSessions,
  MaxSyncSourceBytes,
  CacheCleanupBudget,
  IndexWriteFailed,
  // The query.
  /// A cold record's content, read when the query needed it, was gone,
  /// replaced or damaged: that session was not searched (rebuilt next
  /// call); or a hot shard's entries or lists did not decode when first
  /// needed (its hits may show empty text; rebuilt next call).
  IndexRecordUnreadable,
  CandidateEntryBudget,
  CandidateDigestBudget,
  CandidateItemBudget,
  ColdAllTermsRequiresHydration,
  ColdPhraseRequiresHydration,
  ColdStructuralFilterRequiresHydration,
  RegexMaxHaystackTerms,
  RegexMaxHaystackBytes,
  RegexTimeout,
  /// The contract error that failed the call before it answered.
  #[strum(disabled)]
  Failed(ErrorCode),
}

impl Reason {
  /// The wire spelling.
  pub fn as_str(self) -> &'static str {
    match self {
      Reason::Failed(code) => code.as_str(),
      reason => reason.into(),
    }
  }

  /// Reasons no recall answer depends on: the digest's `filesTouched` list
  /// is capped, but no query reads it; a record that could not be written
  /// still answered the call that built it.
  pub fn affects_answers(self) -> bool {
    !matches!(self, Reason::MaxFilesTouched | Reason::IndexWriteFailed)
  }

  /// A sync stopped by one of its budgets.
  pub fn is_sync_budget(self) -> bool {
    matches!(self, Reason::MaxSyncSessions | Reason::MaxSyncSourceBytes)
  }
}

impl Ord for Reason {
  fn cmp(&self, other: &Reason) -> Ordering {
    self.as_str().cmp(other.as_str())
  }
}

impl PartialOrd for Reason {
  fn partial_cmp(&self, other: &Reason) -> Option<Ordering> {
    Some(self.cmp(other))
  }
}

/// Tests compare with the wire spelling.
impl PartialEq<&str> for Reason {
  fn eq(&self, other: &&str) -> bool {
    self.as_str() == *other
  }
}

impl Serialize for Reason {
  fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(self.as_str())
  }
}

impl<'de> Deserialize<'de> for Reason {
  fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Reason, D::Error> {
    let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
    text.parse().map_err(|_| serde::de::Error::custom(format!("unknown coverage reason {text:?}")))
  }
}

/// A record's own completeness: `complete` only when `reasons` is empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexCoverage {
  pub complete: bool,
  pub reasons: Vec<Reason>,
  pub vocabulary_bytes: Option<u64>,
}

impl IndexCoverage {
  pub fn from_reasons(reasons: &BTreeSet<Reason>, vocabulary_bytes: Option<u64>) -> IndexCoverage {
    IndexCoverage { complete: reasons.is_empty(), reasons: reasons.iter().copied().collect(), vocabulary_bytes }
  }

  pub fn add_reason(&mut self, reason: Reason) {
    if !self.reasons.contains(&reason) {
      self.reasons.push(reason);
      self.reasons.sort();
    }
    self.complete &= !reason.affects_answers();
  }
}

/// Call-level coverage (README "Coverage"): what the call could search and
/// why not all of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Coverage {
  pub complete: bool,
  pub indexed_sessions: usize,
  pub eligible_sessions: usize,
  pub stale_sessions: usize,
  pub incomplete_sessions: usize,
  /// Eligible sessions that could not be read (`source_unavailable`):
  /// counted, never silently left out.
  pub unavailable_sessions: usize,
  pub reasons: Vec<Reason>,
  /// The cwd's project, what `project` scope means here (calls over the
  /// project and global scopes; hits and rows from it need not name it).
  #[serde(skip_serializing_if = "Option::is_none")]
  pub project: Option<ProjectCoverage>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub error: Option<ContractError>,
}

/// The cwd's project as a call's coverage states it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectCoverage {
  /// Its short name (what hits and rows name their project by).
  pub name: String,
  /// Which rule decided: `explicit`, `remote`, `commonDir` or `cwd`.
  pub source: crate::project::Source,
  /// Why the cwd rule decided on ambiguous git evidence: `project` scope is
  /// this folder's sessions only, not the repository's other checkouts.
  #[serde(skip_serializing_if = "Option::is_none")]
  pub fallback: Option<crate::project::Fallback>,
  /// `<agentDir>/fabric/projects.json` (the identities seen) could not be
  /// read and was ignored: sessions of a moved folder are not known to be
  /// this project's this call.
  #[serde(skip_serializing_if = "std::ops::Not::not")]
  pub identities_unreadable: bool,
}

impl Coverage {
  /// The coverage of a call that failed with `error` before answering: a
  /// named source it could not read counts as one unavailable session.
  pub fn failed(error: &ContractError) -> Coverage {
    Coverage {
      reasons: vec![Reason::Failed(error.code)],
      unavailable_sessions: usize::from(error.code == ErrorCode::SourceUnavailable),
      error: Some(error.clone()),
      ..Coverage::default()
    }
  }
}

#[cfg(test)]
mod tests {
  use super::Reason;
  use strum::IntoEnumIterator;

  #[test]
  fn every_reason_reads_back_from_its_spelling() {
    for reason in Reason::iter() {
      assert_eq!(reason.as_str().parse::<Reason>(), Ok(reason));
      let json = serde_json::to_string(&reason).unwrap();
      assert_eq!(serde_json::from_str::<Reason>(&json).unwrap(), reason);
    }
    assert!("stale_pointer".parse::<Reason>().is_err(), "a failed call's code is not a record reason");
    assert!(serde_json::from_str::<Reason>("\"no_such_reason\"").is_err());
  }

  /// The quoted members of `CoverageReason` in the TypeScript header.
  fn declared_reasons() -> Vec<String> {
    let header = include_str!("napi/header.d.ts");
    let start = header.find("export type CoverageReason =").expect("CoverageReason is declared");
    let body = &header[start..];
    let union = &body[..body.find("\n\n").expect("then a blank line")];
    union.lines().filter_map(|line| line.trim().strip_prefix("| '")?.strip_suffix('\'').map(str::to_string)).collect()
  }

  #[test]
  fn the_typescript_union_is_the_rust_set() {
    let rust: Vec<String> = Reason::iter().map(|r| r.as_str().to_string()).collect();
    assert_eq!(declared_reasons(), rust, "src/napi/header.d.ts CoverageReason in Reason's variant order");
  }
}

//! The one place that proves a record current for its source: the policy
//! a record was built under, and the proofs (stamp, watch, content hash)
//! that its source has not changed since it was verified.

use super::record::{CacheRecord, Tier};
use super::resident::Slot;
use super::Context;
use super::Source;
use crate::config::Config;
use crate::forgotten;
use crate::session::lineage::Branches;
use crate::session::source::same_content;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

/// The policy string of a record: any difference means a rebuild.
pub fn policy(config: &Config, tier: Tier, branches: Branches, fingerprint: &str) -> String {
  let privacy = format!(
    "thinking:{};tool-output:{};own-results:{}",
    config.index_thinking, config.index_tool_output, config.index_own_tool_results
  );
  match tier {
    Tier::Hot => {
      format!("entry:{};branches:{};lineage:{fingerprint};{privacy}", config.max_entry_chars, branches.as_str())
    }
    Tier::Cold => format!(
      "vocab:{};cache:{};branches:{};lineage:{fingerprint};{privacy}",
      config.max_cold_vocabulary_bytes,
      config.max_cold_cache_bytes,
      branches.as_str()
    ),
  }
}

/// What a record's policy ends with when entries of its session were
/// forgotten one by one: a record is current only for the forgotten entries
/// it left out, so one built before a forget (or before an unforget), in
/// any process, is rebuilt rather than reused or written back.
pub fn forgotten_suffix(forgotten: Option<&BTreeSet<String>>) -> String {
  forgotten
    .map(|ids| format!(";forgotten:{}", ids.iter().map(String::as_str).collect::<Vec<_>>().join(",")))
    .unwrap_or_default()
}

/// The policy string a record must carry, split around its lineage
/// fingerprint so it can be checked without formatting a string per record
/// (but for the sessions with forgotten entries).
pub struct PolicyCheck {
  parts: [(String, String); 2],
  forgotten: Arc<forgotten::List>,
}

impl PolicyCheck {
  pub fn new(cx: &Context<'_>, branches: Branches) -> PolicyCheck {
    let split = |tier| {
      let full = policy(cx.config, tier, branches, "\u{0}");
      let (head, tail) = full.split_once('\u{0}').expect("the policy embeds the lineage");
      (head.to_string(), tail.to_string())
    };
    // The sync read the list a moment ago (or failed): an error here is a race, and no entry is left out then.
    let forgotten = forgotten::load(&cx.discovery.agent_dir).unwrap_or_default();
    PolicyCheck { parts: [split(Tier::Hot), split(Tier::Cold)], forgotten }
  }

  pub fn matches(&self, record: &CacheRecord) -> bool {
    let (head, tail) = &self.parts[if record.tier() == Tier::Hot { 0 } else { 1 }];
    let suffix = forgotten_suffix(self.forgotten.entries.get(&record.session_id));
    let Some(policy) = record.policy.strip_suffix(suffix.as_str()) else { return false };
    let fingerprint = &record.lineage_fingerprint;
    policy.len() == head.len() + fingerprint.len() + tail.len()
      && policy.starts_with(head.as_str())
      && policy.ends_with(tail.as_str())
      && &policy[head.len()..head.len() + fingerprint.len()] == fingerprint
  }
}

/// How a record was proven current for its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Proof {
  /// The stamp is unchanged and older than the last verification.
  Stamp,
  /// The dir watch saw no change since the last verification.
  Watch,
  /// The source's bytes hash to the record's: the stamp could not tell.
  Content,
}

/// How `slot` is provably the current record for `source`, if it is.
/// Cheapest checks first.
pub(crate) fn is_fresh(
  cx: &Context<'_>,
  policies: &PolicyCheck,
  slot: &Slot,
  source: &Source,
  tier: Tier,
) -> Option<Proof> {
  let record = &slot.record;
  if record.stamp != source.stamp
    || record.tier() != tier
    || Path::new(&record.file) != source.path
    || !policies.matches(record)
  {
    return None;
  }
  if let Some(live) = cx.live_branch(source.path, record.branches) {
    let expected = crate::session::lineage::fingerprint(record.branches, live.leaf_id.as_deref(), &live.ids);
    if record.lineage_fingerprint != expected {
      return None;
    }
  }
  if record.stamp.proves_unchanged_since(slot.verified_ns()) {
    Some(Proof::Stamp)
  } else if source.quiet_since(slot.verified_ns()) {
    Some(Proof::Watch)
  } else {
    same_content(source.path, record.size, &record.source_hash).then_some(Proof::Content)
  }
}

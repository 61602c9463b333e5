//! The one place that proves a record current for its source: the policy
//! a record was built under, and the proofs (stamp, watch, content hash)
//! that its source has not changed since it was verified.

use super::interned::Interned;
use super::record::{CacheRecord, Tier};
use super::resident::Slot;
use super::Context;
use super::Source;
use crate::config::Config;
use crate::forgotten;
use crate::session::lineage::Branches;
use crate::session::source::same_content;
use std::collections::BTreeSet;
use std::sync::Arc;

/// The policy string of a record: any difference means a rebuild. (The
/// session's lineage is not part of it: the record holds its own
/// fingerprint, so the policy is one string for every record of a
/// configuration, interned.)
pub fn policy(config: &Config, tier: Tier, branches: Branches) -> String {
  let privacy = format!(
    "thinking:{};tool-output:{};own-results:{}",
    config.index_thinking, config.index_tool_output, config.index_own_tool_results
  );
  match tier {
    Tier::Hot => format!("entry:{};branches:{};{privacy}", config.max_entry_chars, branches.as_str()),
    Tier::Cold => format!(
      "vocab:{};cache:{};branches:{};{privacy}",
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

/// The policy of a record: `policy` and the ids of its session's
/// forgotten entries, interned.
pub fn record_policy(policy: &str, forgotten: Option<&BTreeSet<String>>) -> Interned {
  match forgotten {
    None => Interned::new(policy),
    Some(ids) => Interned::new(&(policy.to_string() + &forgotten_suffix(Some(ids)))),
  }
}

/// The policy strings records must carry, interned, so most records are
/// checked by comparing one pointer (all but the sessions with forgotten
/// entries, whose policy is made per record).
pub struct PolicyCheck {
  policies: [Interned; 2],
  forgotten: Arc<forgotten::List>,
}

impl PolicyCheck {
  pub fn new(cx: &Context<'_>, branches: Branches) -> PolicyCheck {
    let interned = |tier| Interned::new(&policy(cx.config, tier, branches));
    // The sync read the list a moment ago (or failed): an error here is a race, and no entry is left out then.
    let forgotten = forgotten::load(&cx.discovery.agent_dir).unwrap_or_default();
    PolicyCheck { policies: [interned(Tier::Hot), interned(Tier::Cold)], forgotten }
  }

  pub fn matches(&self, record: &CacheRecord) -> bool {
    let policy = self.policies[if record.tier() == Tier::Hot { 0 } else { 1 }];
    // Most lists are empty: a record's session id is then not decoded.
    let forgotten = match self.forgotten.entries.is_empty() {
      true => None,
      false => self.forgotten.entries.get(record.session_id()),
    };
    match forgotten {
      None => record.policy == policy,
      // Compared, not interned: a check adds nothing to the process's strings.
      Some(ids) => *record.policy == policy.to_string() + &forgotten_suffix(Some(ids)),
    }
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
    || record.file.as_path().as_os_str() != source.path.as_os_str()
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
    same_content(source.path, record.size, &record.source_hash.hex()).then_some(Proof::Content)
  }
}

//! A session's entries from its source: a full parse, or only the bytes
//! appended since a hot record was built (resuming its parse).

use crate::coverage::Reason;
use crate::index::record::hot::ResumeState;
use crate::index::record::{Body, CacheRecord};
use crate::session::binding::BoundTip;
use crate::session::decode::decode;
use crate::session::entry::{ForgottenEntries, Normalized, Policy};
use crate::session::lineage::{self, Branches, Lineage, LiveBranch, Node};
use crate::session::normalize::{normalize_selected, Normalizer};
use crate::session::parse::{self, ParsedSession, Resume};
use crate::session::source::SourceFile;
use crate::session::titles::Titles;
use std::borrow::Cow;
use std::collections::HashSet;

/// Normalized entries plus what a later append needs.
pub(super) struct Parsed {
  pub normalized: Normalized,
  pub resume: ResumeState,
  pub fingerprint: String,
  pub branches: Branches,
  pub titles: Titles,
}

impl Parsed {
  /// The active path's tip as a pointer binds to it; `None` in all mode.
  pub fn tip(&self) -> Option<BoundTip> {
    let resume = &self.resume;
    let path = (self.branches == Branches::Active).then(|| lineage::chain(&resume.nodes, &resume.selected))??;
    let tip = resume.selected.last().and_then(|&o| resume.nodes.get(o as usize)).and_then(|n| n.id.as_deref());
    BoundTip::of(&path, tip)
  }
}

/// `source` holds the file's own bytes. A file whose decoded text has other
/// offsets (invalid UTF-8 became U+FFFD) gets `complete_len` 0: it cannot
/// resume, every change is a full parse.
fn resume_state(
  parsed: &ParsedSession<'_>,
  nodes: Vec<Node>,
  lineage: &Lineage,
  source: &SourceFile,
  same_offsets: bool,
) -> ResumeState {
  let complete_len = if same_offsets { parsed.complete_len } else { 0 };
  ResumeState {
    complete_len: complete_len as u64,
    // Usually the whole file (it ends with a newline): its hash is known.
    prefix_hash: if complete_len == source.bytes.len() {
      source.sha256.clone()
    } else {
      source.prefix_sha256(complete_len)
    },
    last_line_no: parsed.last_line_no as u64,
    header: parsed.header.clone(),
    nodes,
    selected: (0..lineage.selected.len()).filter(|&o| lineage.selected[o]).map(|o| o as u32).collect(),
  }
}

/// Parses the whole source, leaving out the session's forgotten entries.
pub(super) fn full(
  source: &SourceFile,
  branches: Branches,
  live: Option<&LiveBranch>,
  (policy, forgotten): (&Policy, &ForgottenEntries),
) -> Result<Parsed, Reason> {
  let decoded = decode(&source.bytes);
  let parsed = parse::parse(&decoded.bytes).map_err(|_| Reason::SourceUnavailable)?;
  let nodes = lineage::nodes(&parsed.records);
  let lineage = lineage::select_nodes(&nodes, branches, live);
  let normalizer = Normalizer::new(policy).forgetting(forgotten.get(&parsed.header.id));
  let mut normalized = normalize_selected(normalizer, parsed.records.iter(), &lineage);
  normalized.reasons.extend(decoded.reasons());
  let resume = resume_state(&parsed, nodes, &lineage, source, decoded.same_offsets());
  let titles = Titles::of(&parsed.records, &normalized);
  Ok(Parsed { normalized, resume, fingerprint: lineage.fingerprint, branches, titles })
}

/// Parses only the bytes appended since `stale` was built, when the prefix
/// is byte-identical and the old selection is unchanged by the append.
pub(super) fn incremental(
  stale: &CacheRecord,
  source: &SourceFile,
  live: Option<&LiveBranch>,
  (policy, forgotten): (&Policy, &ForgottenEntries),
) -> Option<Parsed> {
  let Body::Hot(shard) = &stale.body else { return None };
  let old = shard.resume.as_ref()?;
  let prefix = old.complete_len as usize;
  let same_file = stale.stamp.dev == source.stamp.dev && stale.stamp.ino == source.stamp.ino;
  if !same_file || stale.size != old.complete_len || source.bytes.len() <= prefix {
    return None;
  }
  // A damaged shard is no prefix to extend: the full parse rebuilds it.
  if source.prefix_sha256(prefix) != old.prefix_hash || !shard.intact() {
    return None;
  }
  // Only the appended bytes are decoded; a tail that would shift offsets
  // (invalid UTF-8) is parsed in full instead.
  let tail_decoded = decode(&source.bytes[prefix..]);
  if !tail_decoded.same_offsets() {
    return None;
  }
  let fixed: Cow<'_, [u8]> = match &tail_decoded.bytes {
    Cow::Borrowed(_) => Cow::Borrowed(&source.bytes),
    Cow::Owned(tail) => Cow::Owned([&source.bytes[..prefix], tail.as_slice()].concat()),
  };
  let resume = Resume {
    offset: prefix,
    line_no: old.last_line_no as usize,
    ordinal: old.nodes.len(),
    header: old.header.clone(),
    previous_id: old.nodes.last().and_then(|n| n.id.clone()),
  };
  let tail = parse::parse_from(&fixed, Some(&resume)).ok()?;
  let mut nodes = old.nodes.clone();
  nodes.extend(lineage::nodes(&tail.records));
  let lineage = lineage::select_nodes(&nodes, stale.branches, live);
  // Duplicate ids or a broken parent graph: an append can change which
  // record an id names, so only a full parse answers as a rebuild would.
  if lineage.invalid_parent_graph || has_duplicate_ids(&nodes) {
    return None;
  }
  let still_selected: Vec<u32> = old.selected.iter().copied().filter(|&o| lineage.contains(o as usize)).collect();
  let newly_selected_old = (0..old.nodes.len()).filter(|&o| lineage.contains(o)).count();
  // The old entries must stay first in view order (an appended record can
  // become an ancestor of an old one: a full parse then).
  let old_first = lineage.order.iter().take(old.selected.len()).all(|&o| o < old.nodes.len());
  if still_selected.len() != old.selected.len() || newly_selected_old != old.selected.len() || !old_first {
    return None;
  }
  let mut normalized = normalize_selected(
    Normalizer::resume(policy, shard.normalized()).forgetting(forgotten.get(&old.header.id)),
    tail.records.iter(),
    &lineage,
  );
  normalized.reasons.extend(tail_decoded.reasons());
  let mut state = resume_state(&tail, nodes, &lineage, source, true);
  state.header = old.header.clone();
  let titles = stale.titles().appended(&tail.records, &normalized);
  Some(Parsed { normalized, resume: state, fingerprint: lineage.fingerprint, branches: stale.branches, titles })
}

fn has_duplicate_ids(nodes: &[Node]) -> bool {
  let mut seen = HashSet::with_capacity(nodes.len());
  nodes.iter().filter_map(|n| n.id.as_deref()).any(|id| !seen.insert(id))
}

//! The system-prompt snapshot: sanitized entries rendered in the reference's
//! block format, bounded so a very large memory cannot swamp the prompt, and
//! validated again when a saved snapshot is restored from a Pi session.

use super::entries::{self, DELIMITER};
use super::Target;
use crate::text::utf16_len;
use crate::threat::{self, Scope};
use regex::Regex;
use std::sync::OnceLock;

/// Upper bound of the global section (both files), and on its own of the
/// project's block, in UTF-16 units.
pub const MAX_SNAPSHOT_UNITS: usize = 50_000;
const SECTION_GAP: &str = "\n\n";
const RULE: &str = "══════════════════════════════════════════════";

/// A block's label; the project's names the project (its short name,
/// `[a-z0-9._-]`, so the label cannot carry anything but a name).
pub fn label(target: Target, project: Option<&str>) -> String {
  match target {
    Target::Memory => "MEMORY (your personal notes)".into(),
    Target::User => "USER PROFILE (who the user is)".into(),
    Target::Project => format!("PROJECT MEMORY (notes on {})", crate::project::short_name(project.unwrap_or_default())),
  }
}

/// The entry as it may appear in the prompt: a placeholder when it carries a
/// threat or pretends to be one of our placeholders (spoofing), else itself.
pub fn sanitize(entry: &str, target: Target) -> String {
  let findings = threat::scan(entry, Scope::Strict);
  if !findings.is_empty() {
    let ids: Vec<String> = findings.iter().map(threat::Finding::id).collect();
    return format!(
      "[BLOCKED: {} entry contained threat pattern(s): {}. Removed from system prompt; use memory_read to inspect and memory_remove to delete the original.]",
      target.file_name(),
      ids.join(", ")
    );
  }
  if entry.starts_with("[BLOCKED:") {
    return format!(
      "[BLOCKED: {} contained an untrusted blocked-looking entry. Removed from system prompt; use memory_read to inspect the original.]",
      target.file_name()
    );
  }
  entry.to_string()
}

fn header(label: &str, sanitized: &[String], limit: usize) -> String {
  let usage = entries::usage(entries::joined_len(sanitized), limit);
  format!("{RULE}\n{label} [{usage}]\n{RULE}\n")
}

fn omitted_marker(count: usize, units: usize) -> String {
  let noun = if count == 1 { "entry" } else { "entries" };
  format!(
    "[… {count} more {noun} ({} chars) not shown: the memory snapshot in the system prompt is bounded. Use memory_read to see every entry.]",
    crate::text::group_thousands(units)
  )
}

/// One file's block, at most `budget` units when the budget allows at least
/// the header and the marker: whole entries from the top, then a marker
/// naming how many were left out (never a cut inside an entry).
pub fn render(label: &str, sanitized: &[String], limit: usize, budget: usize) -> String {
  if sanitized.is_empty() {
    return String::new();
  }
  let head = header(label, sanitized, limit);
  let full = format!("{head}{}", entries::serialize(sanitized));
  if utf16_len(&full) <= budget {
    return full;
  }
  let lengths: Vec<usize> = sanitized.iter().map(|e| utf16_len(e)).collect();
  let total: usize = lengths.iter().sum();
  let delimiter = utf16_len(DELIMITER);
  let head_units = utf16_len(&head);
  let (mut kept_units, mut best) = (0, 0);
  for (i, len) in lengths.iter().enumerate() {
    kept_units += len;
    let kept = i + 1;
    let marker = omitted_marker(sanitized.len() - kept, total - kept_units);
    if head_units + kept_units + kept * delimiter + utf16_len(&marker) > budget {
      break;
    }
    best = kept;
  }
  let shown = &sanitized[..best];
  let omitted_units: usize = lengths[best..].iter().sum();
  let mut body: Vec<String> = shown.to_vec();
  body.push(omitted_marker(sanitized.len() - best, omitted_units));
  format!("{head}{}", entries::serialize(&body))
}

/// Splits the snapshot budget between two blocks of full sizes `a` and `b`,
/// reserving room for both: a block that fits in half keeps its size and the
/// other gets the rest.
pub fn allot(a: usize, b: usize, total: usize) -> (usize, usize) {
  if a == 0 || b == 0 {
    return (total, total);
  }
  let room = total.saturating_sub(utf16_len(SECTION_GAP));
  if a + b <= room {
    return (a, b);
  }
  let half = room / 2;
  match (a <= half, b <= half) {
    (true, _) => (a, room - a),
    (_, true) => (room - b, b),
    _ => (half, room - half),
  }
}

/// Joins the non-empty blocks, memory first.
pub fn join_blocks(blocks: &[String]) -> String {
  blocks.iter().filter(|b| !b.is_empty()).cloned().collect::<Vec<_>>().join(SECTION_GAP)
}

fn header_regex() -> &'static Regex {
  static HEADER: OnceLock<Regex> = OnceLock::new();
  HEADER.get_or_init(|| {
    Regex::new(&format!(
      r"(?:\A|\n\n){RULE}\n(MEMORY \(your personal notes\)|USER PROFILE \(who the user is\)|PROJECT MEMORY \(notes on [a-z0-9._-]{{1,40}}\)) \[\d{{1,3}}% — [\d,]+/[\d,]+ chars\]\n{RULE}\n"
    ))
    .expect("header regex")
  })
}

fn generated_regex() -> &'static Regex {
  static GENERATED: OnceLock<Regex> = OnceLock::new();
  GENERATED.get_or_init(|| {
    Regex::new(concat!(
      r"\A(?:",
      r"\[BLOCKED: (?:MEMORY|USER)\.md entry contained threat pattern\(s\): [a-z0-9_+A-F, ]+\. Removed from system prompt; use memory_read to inspect and memory_remove to delete the original\.\]",
      r"|\[BLOCKED: (?:MEMORY|USER)\.md contained an untrusted blocked-looking entry\. Removed from system prompt; use memory_read to inspect the original\.\]",
      r"|\[… \d+ more entr(?:y|ies) \([\d,]+ chars\) not shown: the memory snapshot in the system prompt is bounded\. Use memory_read to see every entry\.\]",
      r")\z"
    ))
    .expect("placeholder regex")
  })
}

/// Which block a captured label opens, in snapshot order.
fn rank(label: &str) -> usize {
  if label.starts_with("MEMORY") {
    0
  } else if label.starts_with("USER") {
    1
  } else {
    2
  }
}

/// Could `text` be a snapshot this module rendered, with nothing unsafe in
/// it? Checked when a snapshot saved in a Pi session is restored: the
/// structure must be ours (each of the memory, user and project blocks at
/// most once, in that order; snapshots saved before project memory have no
/// project block), every entry must pass the strict scan or be one of our
/// placeholders, and each section must be within its bound.
pub fn is_valid(text: &str) -> bool {
  if text.is_empty() {
    return true;
  }
  if utf16_len(text) > 2 * MAX_SNAPSHOT_UNITS + utf16_len(SECTION_GAP) {
    return false;
  }
  let headers: Vec<_> = header_regex().captures_iter(text).collect();
  let ranks: Vec<usize> = headers.iter().map(|c| rank(c.get(1).map_or("", |m| m.as_str()))).collect();
  let ordered = !ranks.is_empty() && ranks.windows(2).all(|pair| pair[0] < pair[1]);
  if !ordered || headers[0].get(0).map(|m| m.start()) != Some(0) {
    return false;
  }
  let bounds: Vec<(usize, usize)> =
    headers.iter().map(|c| c.get(0).map(|m| (m.start(), m.end())).unwrap_or((0, 0))).collect();
  let project_start = ranks.iter().position(|r| *r == 2).map(|i| bounds[i].0);
  let global_units = utf16_len(&text[..project_start.unwrap_or(text.len())]);
  let project_units = project_start.map_or(0, |start| utf16_len(text[start..].trim_start_matches('\n')));
  if global_units > MAX_SNAPSHOT_UNITS || project_units > MAX_SNAPSHOT_UNITS {
    return false;
  }
  bounds.iter().enumerate().all(|(i, (_, body_start))| {
    let body_end = bounds.get(i + 1).map_or(text.len(), |(start, _)| *start);
    text[*body_start..body_end].split(DELIMITER).all(is_safe_piece)
  })
}

fn is_safe_piece(piece: &str) -> bool {
  if generated_regex().is_match(piece) {
    return true;
  }
  !piece.is_empty()
    && entries::js_trim(piece) == piece
    && !piece.starts_with("[BLOCKED:")
    && threat::scan(piece, Scope::Strict).is_empty()
}

#[cfg(test)]
mod tests;

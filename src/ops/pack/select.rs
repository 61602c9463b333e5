//! Selection: the recall stream grouped by session in rank order, the
//! entries a pack may cite from each, the context around a match, and the
//! duplicate test.

use super::omit::Omission;
use crate::engine::Engine;
use crate::error::ContractError;
use crate::ops::recall::{ranked_hits, EntryHit, Hit, RecallRequest};
use crate::session::echo::echoes;
use crate::session::entry::{is_memory_tool, ContextEdit, Entry};
use std::collections::BTreeSet;

/// Entries a session brings: its best few, so one session cannot fill the pack.
pub(super) const PER_SESSION: usize = 3;
/// How far from a match the question, answer or proof is looked for.
const CONTEXT_REACH: usize = 12;

/// One session's hits, best first.
pub(super) struct Group {
  pub file: String,
  pub hits: Vec<EntryHit>,
}

fn file_of(hit: &EntryHit) -> String {
  hit.follow.args.get("session").and_then(|s| s.as_str()).unwrap_or_default().to_string()
}

/// The stream's hits by session, sessions in the order of their best hit.
/// A cold session (one hit for the whole session) is searched on its own
/// through its follow call, as a model would, for its best entries; only as
/// many as a pack could still cite are. Those searches (a parse of the whole
/// source each) run in parallel, and the groups are formed in stream order
/// afterwards, so the result is the sequential one.
pub(super) fn groups(engine: &Engine, hits: Vec<Hit>, wanted: usize) -> Result<Vec<Group>, ContractError> {
  let mut hydrated: Vec<Option<Vec<EntryHit>>> = hydrate_all(engine, &hits, wanted)?;
  let mut groups: Vec<Group> = Vec::new();
  let add = |groups: &mut Vec<Group>, hit: EntryHit| {
    let file = file_of(&hit);
    match groups.iter_mut().find(|g| g.file == file) {
      Some(group) => group.hits.push(hit),
      None => groups.push(Group { file, hits: vec![hit] }),
    }
  };
  for (at, hit) in hits.into_iter().enumerate() {
    match hit {
      Hit::Entry(hit) => add(&mut groups, *hit),
      Hit::Session(session) if groups.len() < wanted => {
        // Planned in parallel unless an earlier cold session found nothing.
        let found = match hydrated[at].take() {
          Some(found) => found,
          None => hydrate(engine, &session.follow.args)?,
        };
        for hit in found {
          add(&mut groups, hit);
        }
      }
      Hit::Session(_) => {}
    }
  }
  Ok(groups)
}

/// The cold sessions [`groups`] will search if each brings a group of its
/// own, searched in parallel, by their position in `hits`.
fn hydrate_all(engine: &Engine, hits: &[Hit], wanted: usize) -> Result<Vec<Option<Vec<EntryHit>>>, ContractError> {
  let mut files: BTreeSet<String> = BTreeSet::new();
  let mut planned = Vec::new();
  for (at, hit) in hits.iter().enumerate() {
    match hit {
      Hit::Entry(hit) => {
        files.insert(file_of(hit));
      }
      Hit::Session(session) if files.len() < wanted => {
        files.insert(format!("cold:{at}"));
        planned.push((at, &session.follow.args));
      }
      Hit::Session(_) => {}
    }
  }
  // Side by side on threads of their own, not the rayon pool's: each takes
  // the index's locks (its synchronization's, the listing's), and a pool
  // thread waiting inside one on its own parallel steps may be handed the
  // next hydration, which would then wait for the lock its own thread holds.
  let found: Vec<Result<(usize, Vec<EntryHit>), ContractError>> = std::thread::scope(|scope| {
    let each: Vec<_> =
      planned.into_iter().map(|(at, args)| scope.spawn(move || hydrate(engine, args).map(|hits| (at, hits)))).collect();
    each.into_iter().map(|thread| thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
  });
  let mut out: Vec<Option<Vec<EntryHit>>> = (0..hits.len()).map(|_| None).collect();
  for result in found {
    let (at, hits) = result?;
    out[at] = Some(hits);
  }
  Ok(out)
}

/// A cold session's best entries, searched through its follow call.
fn hydrate(engine: &Engine, follow: &serde_json::Value) -> Result<Vec<EntryHit>, ContractError> {
  let Ok(mut request) = RecallRequest::from_json(Some(follow)) else { return Ok(Vec::new()) };
  request.page_size = PER_SESSION;
  let (hydrated, _, _) = ranked_hits(engine, &request)?;
  Ok(
    hydrated
      .into_iter()
      .filter_map(|hit| match hit {
        Hit::Entry(hit) => Some(*hit),
        Hit::Session(_) => None,
      })
      .collect(),
  )
}

/// Why an entry may not be cited, if it may not: Pi left it out of the
/// model's context, or it is this package's own traffic (a recall request,
/// a memory tool's call or result), which quotes evidence without being it.
pub(super) fn refused(entries: &[Entry], echo: &[bool], index: usize) -> Option<Omission> {
  let entry = &entries[index];
  if entry.context_edit == Some(ContextEdit::Omitted) {
    return Some(Omission::ContextEdited);
  }
  let own = entry.typed.tool.as_deref().is_some_and(is_memory_tool);
  (own || echo.get(index).copied().unwrap_or(false) || entry.text.trim().is_empty())
    .then_some(Omission::NotAuthoritative)
}

pub(super) fn echo_marks(entries: &[Entry]) -> Vec<bool> {
  echoes(entries)
}

fn role(entry: &Entry) -> Option<&str> {
  entry.typed.role.as_deref()
}

fn is_prose(entry: &Entry, of: &str) -> bool {
  role(entry) == Some(of) && entry.typed.tool.is_none() && !entry.text.trim().is_empty()
}

/// The context of the match at `index`: the user turn that asked (when the
/// match is not the question), the assistant's answer after it (when the
/// match is not the answer), and the tool result an answering match rests on.
pub(super) fn context(entries: &[Entry], index: usize) -> Vec<(super::cite::Part, usize)> {
  use super::cite::Part;
  let matched = &entries[index];
  let back = (index.saturating_sub(CONTEXT_REACH)..index).rev();
  let mut out = Vec::new();
  if role(matched) != Some("user") {
    if let Some(asked) = back.clone().find(|&at| role(&entries[at]) == Some("user")) {
      out.push((Part::Question, asked));
    }
  }
  if is_prose(matched, "assistant") {
    let turn = back.take_while(|&at| role(&entries[at]) != Some("user"));
    if let Some(proof) = turn.into_iter().find(|&at| role(&entries[at]) == Some("toolResult")) {
      out.push((Part::Proof, proof));
    }
  } else {
    let ahead =
      (index + 1..entries.len().min(index + 1 + CONTEXT_REACH)).take_while(|&at| role(&entries[at]) != Some("user"));
    if let Some(answer) = ahead.into_iter().find(|&at| is_prose(&entries[at], "assistant")) {
      out.push((Part::Answer, answer));
    }
  }
  out
}

/// The words of an excerpt, lowercased: what the duplicate test compares.
pub(super) fn words(text: &str) -> BTreeSet<String> {
  text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// The same words, or nearly (Jaccard similarity of at least 0.8 when both
/// have a few): a repeated paste, a re-run's identical output.
pub(super) fn duplicate(a: &BTreeSet<String>, b: &BTreeSet<String>) -> bool {
  if a == b {
    return true;
  }
  if a.len() < 5 || b.len() < 5 {
    return false;
  }
  let shared = a.intersection(b).count();
  shared * 5 >= (a.len() + b.len() - shared) * 4
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn near_duplicates_share_most_words() {
    let a = words("The CEF browser runs stage one of the build pipeline today");
    let b = words("the cef browser runs stage one of the build pipeline, today!");
    let c = words("The CEF browser failed stage two of a different pipeline");
    assert!(duplicate(&a, &b));
    assert!(!duplicate(&a, &c));
    assert!(!duplicate(&words("yes"), &words("no")));
  }
}

//! The page: hits built only for the page's items, each with its follow
//! call, dropped from the end until the JSON fits the envelope.

use super::rank::Ranked;
use super::search::{Item, Matched, Search};
use super::searched::Searched;
use crate::error::ContractError;
use crate::index::record::Tier;
use crate::index::Coverage;
use crate::ops::contract::{Call, EditFields, EntryMeta, MAX_ENVELOPE_CHARS};
use crate::project::known::Known;
use crate::query::snippet::snippet;
use crate::session::binding::record_id;
use crate::session::entry::Entry;
use crate::session::lineage::LiveBranch;
use crate::session::project_dirs::project_name;
use crate::text::{cap_with_ellipsis, json_len};
use serde::Serialize;
use serde_json::{json, Map, Value};

const CWD_CHARS: usize = 2048;
const MATCHED_TERMS_SHOWN: usize = 50;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryHit {
  pub session_id: String,
  /// The short name of its session's project (`repo`); absent for a header without a cwd.
  #[serde(skip_serializing_if = "Option::is_none")]
  pub project: Option<String>,
  pub tier: Tier,
  #[serde(flatten)]
  pub meta: EntryMeta,
  pub score: f64,
  pub snippet: String,
  pub truncated: bool,
  #[serde(flatten)]
  pub edit: EditFields,
  /// Threat-pattern ids the entry's text matches (untrusted evidence; text unchanged).
  #[serde(skip_serializing_if = "Option::is_none")]
  pub threats: Option<Vec<String>>,
  pub follow: Call,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHit {
  pub session_id: String,
  pub tier: Tier,
  pub cwd: String,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub project: Option<String>,
  pub last_timestamp: Option<i64>,
  pub score: f64,
  pub matched_terms: Vec<String>,
  pub matched_structural_entries: usize,
  pub follow: Call,
}

/// A hit's `kind` is its variant: an entry of a hot (or hydrated) session,
/// or a cold session as a whole.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Hit {
  Entry(Box<EntryHit>),
  Session(Box<SessionHit>),
}

#[derive(Debug, Clone, Serialize)]
pub struct RecallPage {
  pub total: usize,
  pub hits: Vec<Hit>,
  pub next: Option<Call>,
  pub coverage: Coverage,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub error: Option<ContractError>,
}

impl RecallPage {
  pub(super) fn failed(error: ContractError) -> RecallPage {
    let coverage = Coverage::failed(&error);
    RecallPage { total: 0, hits: Vec::new(), next: None, coverage, error: Some(error) }
  }
}

fn rounded(score: f64) -> f64 {
  (score * 1e6).round() / 1e6
}

impl Search<'_> {
  fn entry_hit(&self, known: &Known, slot: usize, doc: usize, score: f64) -> Hit {
    let session = self.sessions.at(slot);
    let entry = self.entry(slot, doc);
    let (snippet, cut) = snippet(&entry.text, self.request.query.terms(), self.request.snippet_chars);
    Hit::Entry(Box::new(EntryHit {
      session_id: session.session_id().to_string(),
      project: project_name(known, session.cwd()),
      tier: session.tier(),
      meta: EntryMeta::of(entry),
      score: rounded(score),
      snippet,
      truncated: cut || entry.truncated,
      edit: EditFields::of(entry),
      threats: crate::threat::flags::field(&entry.text),
      follow: self.follow(session, entry),
    }))
  }

  /// Pi's live branch, when `session` is the live session.
  pub(super) fn live_branch(&self, session: Searched<'_>) -> Option<&LiveBranch> {
    self.live.filter(|live| live.file.as_os_str() == session.file()).map(|live| &live.branch)
  }

  /// `memory.expand` of one entry, bound to the prefix and lineage it came from.
  fn follow(&self, session: Searched<'_>, entry: &Entry) -> Call {
    let mut args = Map::new();
    args.insert("session".into(), json!(session.file()));
    let issuer = session.issuer(self.request.branches, self.live_branch(session));
    issuer.bind(record_id(entry)).insert_into(&mut args);
    args.insert("branches".into(), json!(self.request.branches.as_str()));
    args.insert("indices".into(), json!([entry.index]));
    Call { reference: "memory.expand", args: Value::Object(args) }
  }

  /// The first terms of `matched` the hit shows.
  fn matched_terms(&self, matched: &Matched) -> Vec<String> {
    match matched {
      Matched::Query(run) => {
        let terms = self.request.query.terms();
        let at = |hit: u64| hit as u32 as usize;
        self.cold_hits[run.clone()].iter().take(MATCHED_TERMS_SHOWN).map(|&hit| terms[at(hit)].clone()).collect()
      }
      Matched::Vocabulary(terms) => terms.iter().take(MATCHED_TERMS_SHOWN).cloned().collect(),
    }
  }

  fn session_hit(&self, known: &Known, slot: usize, score: f64, matched: &Matched, structural: usize) -> Hit {
    let session = self.sessions.at(slot);
    let digest = self.sessions.cold(slot).digest;
    Hit::Session(Box::new(SessionHit {
      session_id: session.session_id().to_string(),
      tier: Tier::Cold,
      cwd: cap_with_ellipsis(session.cwd(), CWD_CHARS),
      project: project_name(known, session.cwd()),
      last_timestamp: digest.last_ts,
      score: rounded(score),
      matched_terms: self.matched_terms(matched),
      matched_structural_entries: structural,
      follow: Call { reference: "memory.recall", args: Value::Object(self.bound_args(session, true)) },
    }))
  }

  /// The request's arguments pinned to one session as it is now: its
  /// source prefix and its lineage up to the last record on disk.
  fn bound_args(&self, session: Searched<'_>, fresh_start: bool) -> Map<String, Value> {
    let mut args = self.request.args.clone();
    if fresh_start {
      args.remove("offset");
      args.remove("entryRange");
    }
    args.insert("scope".into(), json!(format!("session:{}", session.file())));
    args.insert("branches".into(), json!(self.request.branches.as_str()));
    let live = self.live_branch(session);
    let tip = session.lineage(live).1;
    session.issuer(self.request.branches, live).bind(tip).insert_into(&mut args);
    args
  }

  fn hit(&self, known: &Known, item: &Item) -> Hit {
    match item {
      Item::Entry { session, doc, score } => self.entry_hit(known, *session, *doc, *score),
      Item::Session { session, score, matched, structural } => {
        self.session_hit(known, *session, *score, matched, *structural)
      }
    }
  }

  fn next_call(&self, offset: usize) -> Call {
    let mut args = match self.sessions.only() {
      // A single-session continuation is bound to that session's bytes.
      Some(only) => self.bound_args(only, false),
      None => self.request.args.clone(),
    };
    args.insert("offset".into(), json!(offset));
    Call { reference: "memory.recall", args: Value::Object(args) }
  }

  /// The hits of the request's page, before any envelope fit.
  pub(super) fn hits(&self, items: &Ranked) -> Vec<Hit> {
    // Each hit names its project: the identities its sessions' cwds had (seen ones recorded).
    let known = Known::open(&self.engine.agent_dir);
    let page = items.page(self.request.offset, self.request.page_size);
    let hits = page.iter().map(|item| self.hit(&known, item)).collect();
    known.save();
    hits
  }

  /// The page at the request's offset, shrunk until its JSON fits.
  pub(super) fn page(&self, items: &Ranked, coverage: Coverage) -> RecallPage {
    let start = self.request.offset.min(items.total);
    let hits = self.hits(items);
    let end = start + hits.len();
    let mut page = RecallPage {
      total: items.total,
      hits,
      next: (end < items.total).then(|| self.next_call(end)),
      coverage,
      error: None,
    };
    while page.hits.len() > 1 && json_len(&page) > MAX_ENVELOPE_CHARS {
      page.hits.pop();
      page.next = Some(self.next_call(start + page.hits.len()));
    }
    page
  }
}

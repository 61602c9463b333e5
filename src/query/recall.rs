use super::plan::{Query, RecallRequest};
use super::regex::BoundedRegex;
use super::score::{bm25, idf, provenance_weight};
use super::snippet::snippet;
use crate::engine::Engine;
use crate::error::ContractError;
use crate::expand::{Call, EditFields, MAX_ENVELOPE_CHARS};
use crate::index::cold::ColdDigest;
use crate::index::dictionary;
use crate::index::hot::HotShard;
use crate::index::record::{Body, CacheRecord, Tier};
use crate::index::{self, Coverage};
use crate::session::binding::{record_id, Issuer};
use crate::session::discover::Scope;
use crate::session::lineage::{self, Branches, LiveBranch};
use crate::session::normalize::Entry;
use crate::session::SessionView;
use crate::text::{cap_with_ellipsis, json_len, meta, META_CHARS};
use crate::tokenize::nfkc;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

const MAX_ENTRY_CANDIDATES: usize = 50_000;
pub const MAX_DIGEST_CANDIDATES: usize = 10_000;
const MAX_ITEM_CANDIDATES: usize = 10_000;
const CWD_CHARS: usize = 2048;
const MATCHED_TERMS_SHOWN: usize = 50;

/// What the query reads of one session.
enum Content {
  Hot(Arc<CacheRecord>),
  /// An explicitly scoped session, re-read from source (never persisted).
  Hydrated(Box<HotShard>),
  Cold(Arc<CacheRecord>),
}

struct Searched {
  file: String,
  session_id: String,
  cwd: String,
  mtime: f64,
  tier: Tier,
  source_len: u64,
  source_hash: String,
  lineage_fingerprint: String,
  /// The active lineage's root-to-leaf ids and last on-disk record, worked
  /// out only for sessions with a hit on the page.
  lineage: std::cell::OnceCell<(Option<Vec<String>>, Option<String>)>,
  content: Content,
}

impl Searched {
  fn shard(&self) -> Option<&HotShard> {
    match &self.content {
      Content::Hot(record) => match &record.body {
        Body::Hot(shard) => Some(shard),
        Body::Cold(_) => None,
      },
      Content::Hydrated(shard) => Some(shard),
      Content::Cold(_) => None,
    }
  }

  fn digest(&self) -> Option<&ColdDigest> {
    match &self.content {
      Content::Cold(record) => match &record.body {
        Body::Cold(digest) => Some(digest),
        Body::Hot(_) => None,
      },
      _ => None,
    }
  }

  fn from_record(tier: Tier, record: Arc<CacheRecord>) -> Searched {
    Searched {
      file: record.file.clone(),
      session_id: record.session_id.clone(),
      cwd: record.cwd.clone(),
      mtime: record.mtime,
      tier,
      source_len: record.size,
      source_hash: record.source_hash.clone(),
      lineage_fingerprint: record.lineage_fingerprint.clone(),
      lineage: std::cell::OnceCell::new(),
      content: if tier == Tier::Hot { Content::Hot(record.clone()) } else { Content::Cold(record) },
    }
  }

  fn hydrated(tier: Tier, view: &SessionView) -> Searched {
    Searched {
      file: view.file(),
      session_id: view.header.id.clone(),
      cwd: view.header.cwd.clone(),
      mtime: view.stamp.mtime_ms(),
      tier,
      source_len: view.source_len,
      source_hash: view.source_hash.clone(),
      lineage_fingerprint: view.lineage_fingerprint.clone(),
      lineage: std::cell::OnceCell::from((Some(view.lineage_path.clone()), view.lineage_tip.clone())),
      content: Content::Hydrated(Box::new(HotShard::build(view.normalized.clone(), None))),
    }
  }
}

impl Searched {
  /// The active lineage (root-to-leaf ids, last on-disk record) of a hot
  /// session: Pi's live branch, or the record's selection when it is one
  /// parent chain.
  fn lineage(&self, live: Option<&LiveBranch>) -> &(Option<Vec<String>>, Option<String>) {
    self.lineage.get_or_init(|| {
      let Some(resume) = self.shard().and_then(|shard| shard.resume.as_ref()) else {
        return (None, self.digest().and_then(|d| d.tip.as_ref()).map(|tip| tip.id.clone()));
      };
      let tip = resume.selected.last().and_then(|&o| resume.nodes.get(o as usize)).and_then(|n| n.id.clone());
      let path = match live {
        Some(live) => Some(live.ids.clone()),
        None => lineage::chain(&resume.nodes, &resume.selected),
      };
      (path, tip)
    })
  }

  fn issuer(&self, branches: Branches, live: Option<&LiveBranch>) -> Issuer<'_, String> {
    Issuer {
      source_len: self.source_len,
      source_hash: &self.source_hash,
      branches,
      fingerprint: &self.lineage_fingerprint,
      path: match branches {
        Branches::Active => self.lineage(live).0.as_deref(),
        Branches::All => None,
      },
      tip: self.digest().and_then(|d| d.tip.as_ref()),
    }
  }
}

/// The index of the last user message on Pi's live branch: where the turn
/// that is asking begins.
fn turn_start(entries: &[Entry], live: &LiveBranch) -> Option<usize> {
  let on_branch = |id: &str| live.ids.iter().rev().any(|live_id| live_id == id);
  entries.iter().rposition(|e| e.role.as_deref() == Some("user") && e.entry_id.as_deref().is_some_and(on_branch))
}

/// (score, session mtime, entry 0 / session 1, index, session slot).
type RankKey = (f64, f64, u8, usize, usize);

/// One ranked candidate.
#[derive(Debug, Clone)]
enum Item {
  Entry { session: usize, doc: usize, score: f64 },
  Session { session: usize, score: f64, matched_terms: Vec<String>, structural: usize },
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryHit {
  pub kind: &'static str,
  pub session_id: String,
  pub tier: &'static str,
  pub index: usize,
  pub entry_id: Option<String>,
  pub parent_id: Option<String>,
  pub operation_address: Option<String>,
  #[serde(rename = "type")]
  pub kind_of_entry: String,
  pub role: Option<String>,
  pub tool: Option<String>,
  #[serde(rename = "ref")]
  pub reference: Option<String>,
  pub provider: Option<String>,
  pub action: Option<String>,
  pub outcome: Option<&'static str>,
  pub timestamp: Option<i64>,
  pub is_error: bool,
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
  pub kind: &'static str,
  pub session_id: String,
  pub tier: &'static str,
  pub cwd: String,
  pub last_timestamp: Option<i64>,
  pub score: f64,
  pub matched_terms: Vec<String>,
  pub matched_structural_entries: usize,
  pub follow: Call,
}

#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
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
  fn failed(error: ContractError) -> RecallPage {
    let coverage = Coverage::failed(&error);
    RecallPage { total: 0, hits: Vec::new(), next: None, coverage, error: Some(error) }
  }
}

fn rounded(score: f64) -> f64 {
  (score * 1e6).round() / 1e6
}

/// Query state shared by the scoring passes.
struct Search<'r> {
  request: &'r RecallRequest,
  config: &'r crate::config::Config,
  live: Option<&'r crate::engine::Live>,
  sessions: Vec<Searched>,
  /// Filter-passing entry indices per hot session.
  hot: Vec<Vec<usize>>,
  /// Cold sessions passing the filters, with their matching address count.
  cold: Vec<(usize, usize)>,
  /// Cold candidates past the digest budget: searched only when the cold
  /// term dictionary serves the query.
  cold_beyond: Vec<(usize, usize)>,
  cold_terms: Option<dictionary::Served>,
  index_dir: std::path::PathBuf,
  reasons: BTreeSet<&'static str>,
}

impl<'r> Search<'r> {
  fn new(request: &'r RecallRequest, engine: &'r Engine, sessions: Vec<Searched>) -> Search<'r> {
    let mut search = Search {
      request,
      config: &engine.config,
      live: engine.live.as_ref(),
      hot: vec![Vec::new(); sessions.len()],
      cold: Vec::new(),
      cold_beyond: Vec::new(),
      cold_terms: None,
      index_dir: index::index_dir(engine),
      sessions,
      reasons: BTreeSet::new(),
    };
    search.collect_candidates();
    search
  }

  fn in_range(&self, index: usize) -> bool {
    self.request.entry_range.is_none_or(|(first, last)| index as i64 >= first && index as i64 <= last)
  }

  /// Per session, where the entries recall may see end: the live session
  /// stops before the turn in progress, which is not evidence about the past.
  fn visible_ends(&self) -> Vec<usize> {
    let live = |session: &Searched| self.live_branch(session).filter(|_| !self.config.recall_current_turn);
    let end = |session: &Searched| {
      let shard = session.shard()?;
      turn_start(&shard.entries, live(session)?)
    };
    self.sessions.iter().map(|session| end(session).unwrap_or(usize::MAX)).collect()
  }

  fn collect_candidates(&mut self) {
    let filters = &self.request.filters;
    let mut budget = MAX_ENTRY_CANDIDATES;
    let ends = self.visible_ends();
    for (slot, session) in self.sessions.iter().enumerate() {
      if let Some(shard) = session.shard() {
        for entry in &shard.entries[..ends[slot].min(shard.entries.len())] {
          if filters.matches(entry) && self.in_range(entry.index) {
            if budget == 0 {
              self.reasons.insert("candidate_entry_budget");
              break;
            }
            budget -= 1;
            self.hot[slot].push(entry.index);
          }
        }
      } else if let Some(digest) = session.digest() {
        let structural = if filters.is_empty() {
          0
        } else if filters.since.is_none() && filters.until.is_none() {
          digest.kinds().iter().filter(|(kind, _)| filters.matches(kind)).map(|(_, count)| count).sum()
        } else {
          digest.addresses.iter().filter(|a| filters.matches(*a)).count()
        };
        if filters.is_empty() || structural > 0 {
          if self.cold.len() == MAX_DIGEST_CANDIDATES {
            self.cold_beyond.push((slot, structural));
            continue;
          }
          self.cold.push((slot, structural));
        }
      }
    }
  }

  fn entry(&self, slot: usize, doc: usize) -> &Entry {
    &self.sessions[slot].shard().expect("hot session").entries[doc]
  }

  fn weight(&self, slot: usize, doc: usize) -> f64 {
    provenance_weight(self.entry(slot, doc), &self.request.filters)
  }

  fn documents(&self) -> usize {
    self.hot.iter().map(Vec::len).sum::<usize>() + self.cold.len()
  }

  /// Hot postings of `term` restricted to the candidates: (slot, doc, tf).
  fn hot_postings(&self, term: &str) -> Vec<(usize, usize, u32)> {
    let mut out = Vec::new();
    for (slot, docs) in self.hot.iter().enumerate() {
      let Some(shard) = self.sessions[slot].shard() else { continue };
      let list = shard.postings.get(term);
      let mut candidates = docs.iter().peekable();
      for &(doc, tf) in list {
        while candidates.next_if(|&&c| c < doc as usize).is_some() {}
        if candidates.peek() == Some(&&(doc as usize)) {
          out.push((slot, doc as usize, tf));
        }
      }
    }
    out
  }

  fn cold_has(&self, slot: usize, term: &str) -> bool {
    self.sessions[slot].digest().is_some_and(|d| d.contains(term))
  }

  /// Lexical queries over many cold digests are served by the cold term
  /// dictionary: then every cold candidate is searched, past the digest
  /// budget too (the budget bounds matched sessions instead).
  fn serve_cold_terms(&mut self) {
    if matches!(self.request.query, Query::Literal { .. } | Query::Phrase { .. }) {
      let candidates: Vec<dictionary::Candidate<'_>> = (self.cold.iter().chain(&self.cold_beyond))
        .map(|&(slot, _)| (slot, self.sessions[slot].file.as_str(), self.sessions[slot].digest().expect("cold")))
        .collect();
      let (dir, max_record) = (&self.index_dir, self.config.max_cold_cache_bytes);
      self.cold_terms = dictionary::serve(dir, self.request.branches, &candidates, max_record);
    }
    if self.cold_terms.is_some() {
      self.cold.append(&mut self.cold_beyond);
    } else if !self.cold_beyond.is_empty() {
      self.reasons.insert("candidate_digest_budget");
    }
  }

  /// BM25 over hot candidates and IDF sums over cold ones, on one scale.
  fn lexical(&mut self, terms: &[String], all: bool, cold_needs_all: bool) -> Vec<Item> {
    let documents = self.documents();
    let lengths: Vec<f64> = self
      .hot
      .iter()
      .enumerate()
      .flat_map(|(slot, docs)| docs.iter().map(move |&d| (slot, d)))
      .map(|(slot, doc)| self.sessions[slot].shard().expect("hot").postings.doc_lengths[doc] as f64)
      .collect();
    let average = if lengths.is_empty() { 1.0 } else { lengths.iter().sum::<f64>() / lengths.len() as f64 };
    let mut hot: HashMap<(usize, usize), (f64, usize)> = HashMap::new();
    let mut cold: HashMap<usize, Vec<String>> = HashMap::new();
    let mut idfs = HashMap::new();
    for term in terms {
      let postings = self.hot_postings(term);
      let cold_hits: Vec<usize> = match &self.cold_terms {
        Some(served) => served.holding(term, |slot| self.cold_has(slot, term)),
        None => self.cold.iter().map(|&(slot, _)| slot).filter(|&slot| self.cold_has(slot, term)).collect(),
      };
      let weight = idf(documents, postings.len() + cold_hits.len());
      idfs.insert(term.clone(), weight);
      for (slot, doc, tf) in postings {
        let length = self.sessions[slot].shard().expect("hot").postings.doc_lengths[doc];
        let score = hot.entry((slot, doc)).or_default();
        score.0 += bm25(weight, tf, length, average);
        score.1 += 1;
      }
      for slot in cold_hits {
        cold.entry(slot).or_default().push(term.clone());
      }
    }
    let mut items: Vec<Item> = hot
      .into_iter()
      .filter(|(_, (_, matched))| !all || *matched == terms.len())
      .map(|((slot, doc), (score, _))| Item::Entry { session: slot, doc, score: score * self.weight(slot, doc) })
      .collect();
    let needs_all = all || cold_needs_all;
    let mut cold_items = 0;
    for &(slot, structural) in &self.cold {
      let Some(matched) = cold.remove(&slot) else { continue };
      if needs_all && matched.len() < terms.len() {
        continue;
      }
      if cold_items == MAX_DIGEST_CANDIDATES {
        self.reasons.insert("candidate_digest_budget");
        break;
      }
      cold_items += 1;
      let score = matched.iter().map(|t| idfs[t]).sum();
      items.push(Item::Session { session: slot, score, matched_terms: matched, structural });
    }
    items
  }

  fn phrase(&mut self, phrase: &str, terms: &[String]) -> Vec<Item> {
    let mut items = self.lexical(terms, !terms.is_empty(), true);
    items.retain_mut(|item| match item {
      Item::Entry { session, doc, score } => {
        let entry = self.entry(*session, *doc);
        *score = provenance_weight(entry, &self.request.filters);
        nfkc(&entry.text).to_lowercase().contains(phrase)
      }
      Item::Session { .. } => true,
    });
    if terms.is_empty() {
      // Punctuation-only phrases have no terms to prefilter by.
      for (slot, docs) in self.hot.iter().enumerate() {
        for &doc in docs {
          let entry = self.entry(slot, doc);
          if nfkc(&entry.text).to_lowercase().contains(phrase) {
            items.push(Item::Entry { session: slot, doc, score: provenance_weight(entry, &self.request.filters) });
          }
        }
      }
    }
    items
  }

  fn regex(&mut self, regex: &mut BoundedRegex) -> Vec<Item> {
    let mut items = Vec::new();
    for (slot, docs) in self.hot.iter().enumerate() {
      for &doc in docs {
        let entry = self.entry(slot, doc);
        match regex.test(&entry.text) {
          Ok(true) => {
            items.push(Item::Entry { session: slot, doc, score: provenance_weight(entry, &self.request.filters) })
          }
          Ok(false) => {}
          Err(stop) => {
            self.reasons.insert(stop);
            return items;
          }
        }
      }
    }
    for &(slot, structural) in &self.cold {
      let mut matched = Vec::new();
      for term in self.sessions[slot].digest().expect("cold").vocabulary.iter() {
        match regex.test(term) {
          Ok(true) => matched.push(term.to_string()),
          Ok(false) => {}
          Err(stop) => {
            self.reasons.insert(stop);
            return items;
          }
        }
      }
      if !matched.is_empty() {
        items.push(Item::Session { session: slot, score: 1.0, matched_terms: matched, structural });
      }
    }
    items
  }

  fn browse(&self) -> Vec<Item> {
    let entries = self
      .hot
      .iter()
      .enumerate()
      .flat_map(|(slot, docs)| docs.iter().map(move |&doc| Item::Entry { session: slot, doc, score: 0.0 }));
    let sessions = self.cold.iter().map(|&(slot, structural)| Item::Session {
      session: slot,
      score: 0.0,
      matched_terms: Vec::new(),
      structural,
    });
    entries.chain(sessions).collect()
  }

  fn run(&mut self) -> Result<Vec<Item>, ContractError> {
    let request = self.request;
    self.serve_cold_terms();
    let items = match &request.query {
      Query::Browse => self.browse(),
      Query::Literal { terms, all } => self.lexical(terms, *all, false),
      Query::Phrase { phrase, terms } => self.phrase(phrase, terms),
      Query::Regex { pattern } => {
        let mut regex = BoundedRegex::compile(pattern, self.config)?;
        self.regex(&mut regex)
      }
    };
    let cold_hit = items.iter().any(|i| matches!(i, Item::Session { .. }));
    if cold_hit {
      match &request.query {
        Query::Literal { terms, all: true } if terms.len() > 1 => {
          self.reasons.insert("cold_all_terms_requires_hydration");
        }
        Query::Phrase { .. } => {
          self.reasons.insert("cold_phrase_requires_hydration");
        }
        _ => {}
      }
      if !request.filters.is_empty() && request.query != Query::Browse {
        self.reasons.insert("cold_structural_filter_requires_hydration");
      }
    }
    if items.len() > MAX_ITEM_CANDIDATES {
      self.reasons.insert("candidate_item_budget");
    }
    let need = (request.offset + request.page_size).min(MAX_ITEM_CANDIDATES);
    let items = self.rank(items, MAX_ITEM_CANDIDATES, need);
    Ok(items)
  }
}

impl Search<'_> {
  /// Orders `items` by score desc, session mtime desc, entries before
  /// sessions, index, file (identical calls give identical bytes), keeping
  /// the best `keep`; only the first `exact` need their exact order, so the
  /// rest is partitioned, not sorted.
  fn rank(&self, items: Vec<Item>, keep: usize, exact: usize) -> Vec<Item> {
    let mut keyed: Vec<(RankKey, Item)> = items
      .into_iter()
      .map(|item| {
        let key = match &item {
          Item::Entry { session, doc, score } => {
            (*score, self.sessions[*session].mtime, 0, self.entry(*session, *doc).index, *session)
          }
          Item::Session { session, score, .. } => (*score, self.sessions[*session].mtime, 1, 0, *session),
        };
        (key, item)
      })
      .collect();
    let order = |a: &(RankKey, Item), b: &(RankKey, Item)| {
      let ((sa, ma, ka, ia, fa), (sb, mb, kb, ib, fb)) = (&a.0, &b.0);
      sb.total_cmp(sa)
        .then(mb.total_cmp(ma))
        .then(ka.cmp(kb))
        .then(ia.cmp(ib))
        .then_with(|| self.sessions[*fa].file.cmp(&self.sessions[*fb].file))
    };
    if keyed.len() > keep {
      keyed.select_nth_unstable_by(keep, order);
      keyed.truncate(keep);
    }
    let exact = exact.min(keyed.len());
    if exact < keyed.len() {
      keyed.select_nth_unstable_by(exact, order);
    }
    keyed[..exact].sort_unstable_by(order);
    keyed.into_iter().map(|(_, item)| item).collect()
  }

  fn entry_hit(&self, slot: usize, doc: usize, score: f64) -> Hit {
    let session = &self.sessions[slot];
    let entry = self.entry(slot, doc);
    let (snippet, cut) = snippet(&entry.text, self.request.query.terms(), self.request.snippet_chars);
    Hit::Entry(Box::new(EntryHit {
      kind: "entry",
      session_id: session.session_id.clone(),
      tier: session.tier.as_str(),
      index: entry.index,
      entry_id: meta(&entry.entry_id),
      parent_id: meta(&entry.parent_id),
      operation_address: meta(&entry.operation_address),
      kind_of_entry: cap_with_ellipsis(&entry.kind, META_CHARS),
      role: meta(&entry.role),
      tool: meta(&entry.tool),
      reference: meta(&entry.reference),
      provider: meta(&entry.provider),
      action: meta(&entry.action),
      outcome: entry.outcome.map(|o| o.as_str()),
      timestamp: entry.timestamp,
      is_error: entry.is_error,
      score: rounded(score),
      snippet,
      truncated: cut || entry.truncated,
      edit: EditFields::of(entry),
      threats: crate::store::threat::flags::field(&entry.text),
      follow: self.follow(session, entry),
    }))
  }

  /// Pi's live branch, when `session` is the live session.
  fn live_branch(&self, session: &Searched) -> Option<&LiveBranch> {
    self.live.filter(|live| live.file.as_os_str() == session.file.as_str()).map(|live| &live.branch)
  }

  /// `memory.expand` of one entry, bound to the prefix and lineage it came from.
  fn follow(&self, session: &Searched, entry: &Entry) -> Call {
    let mut args = Map::new();
    args.insert("session".into(), json!(session.file));
    let issuer = session.issuer(self.request.branches, self.live_branch(session));
    issuer.bind(record_id(entry)).insert_into(&mut args);
    args.insert("branches".into(), json!(self.request.branches.as_str()));
    args.insert("indices".into(), json!([entry.index]));
    Call { reference: "memory.expand", args: Value::Object(args) }
  }

  fn session_hit(&self, slot: usize, score: f64, matched: &[String], structural: usize) -> Hit {
    let session = &self.sessions[slot];
    let digest = session.digest().expect("cold session");
    Hit::Session(Box::new(SessionHit {
      kind: "session",
      session_id: session.session_id.clone(),
      tier: "cold",
      cwd: cap_with_ellipsis(&session.cwd, CWD_CHARS),
      last_timestamp: digest.last_ts,
      score: rounded(score),
      matched_terms: matched.iter().take(MATCHED_TERMS_SHOWN).cloned().collect(),
      matched_structural_entries: structural,
      follow: Call { reference: "memory.recall", args: Value::Object(self.bound_args(session, true)) },
    }))
  }

  /// The request's arguments pinned to one session as it is now: its
  /// source prefix and its lineage up to the last record on disk.
  fn bound_args(&self, session: &Searched, fresh_start: bool) -> Map<String, Value> {
    let mut args = self.request.args.clone();
    if fresh_start {
      args.remove("offset");
      args.remove("entryRange");
    }
    args.insert("scope".into(), json!(format!("session:{}", session.file)));
    args.insert("branches".into(), json!(self.request.branches.as_str()));
    let live = self.live_branch(session);
    let tip = session.lineage(live).1.clone();
    session.issuer(self.request.branches, live).bind(tip.as_deref()).insert_into(&mut args);
    args
  }

  fn hit(&self, item: &Item) -> Hit {
    match item {
      Item::Entry { session, doc, score } => self.entry_hit(*session, *doc, *score),
      Item::Session { session, score, matched_terms, structural } => {
        self.session_hit(*session, *score, matched_terms, *structural)
      }
    }
  }

  fn next_call(&self, offset: usize) -> Call {
    let mut args = match self.sessions.as_slice() {
      // A single-session continuation is bound to that session's bytes.
      [only] => self.bound_args(only, false),
      _ => self.request.args.clone(),
    };
    args.insert("offset".into(), json!(offset));
    Call { reference: "memory.recall", args: Value::Object(args) }
  }

  /// The page at the request's offset, shrunk until its JSON fits.
  fn page(&self, items: &[Item], coverage: Coverage) -> RecallPage {
    let start = self.request.offset.min(items.len());
    let end = (start + self.request.page_size).min(items.len());
    let mut page = RecallPage {
      total: items.len(),
      hits: items[start..end].iter().map(|item| self.hit(item)).collect(),
      next: (end < items.len()).then(|| self.next_call(end)),
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

fn out_of_bounds(first: i64, last: i64, count: usize) -> ContractError {
  ContractError::new("index_out_of_bounds", format!("Range {first}..{last} is outside the session's {count} entries."))
    .with("entryCount", count)
}

/// Loads the sessions to search: index records, or for an explicit
/// `session:` scope the source itself (hydration, never promoted).
fn searched(engine: &Engine, request: &RecallRequest) -> Result<(Vec<Searched>, Coverage), ContractError> {
  let synced = index::sync(engine, &request.scope, request.branches)?;
  let mut coverage = synced.coverage;
  if let Scope::Explicit(_) = request.scope {
    let Some(session) = synced.sessions.first() else { return Ok((Vec::new(), coverage)) };
    let view = engine.load_bound(&session.path, request.branches, &engine.config.index_policy(), &request.binding)?;
    if let Some((first, last)) = request.entry_range {
      let count = view.normalized.entries.len();
      if first < 0 || last < first || last as usize >= count {
        return Err(out_of_bounds(first, last, count));
      }
    }
    if session.record.is_none() {
      // Hydration read the source even though the index could not keep it.
      coverage.indexed_sessions += 1;
      coverage.stale_sessions -= 1;
      coverage.complete = coverage.reasons.is_empty() && coverage.stale_sessions == 0;
    }
    return Ok((vec![Searched::hydrated(session.tier, &view)], coverage));
  }
  let sessions =
    synced.sessions.into_iter().filter_map(|s| s.record.map(|record| Searched::from_record(s.tier, record))).collect();
  Ok((sessions, coverage))
}

pub fn recall(engine: &Engine, request: &RecallRequest) -> RecallPage {
  let (sessions, mut coverage) = match searched(engine, request) {
    Ok(loaded) => loaded,
    Err(error) => return RecallPage::failed(error),
  };
  let mut search = Search::new(request, engine, sessions);
  let items = match search.run() {
    Ok(items) => items,
    Err(error) => return RecallPage::failed(error),
  };
  let mut reasons: BTreeSet<String> = coverage.reasons.drain(..).collect();
  reasons.extend(search.reasons.iter().map(|r| r.to_string()));
  coverage.complete = coverage.complete && search.reasons.is_empty();
  coverage.reasons = reasons.into_iter().collect();
  search.page(&items, coverage)
}

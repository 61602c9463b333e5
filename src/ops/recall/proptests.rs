//! Paging over random corpora: following `next` from offset 0 to the end
//! yields every hit of the unpaged ranking exactly once, in order, for
//! several page sizes (ties in score and mtime included; cold sessions give
//! session hits).

use super::recall;
use crate::ops::recall::RecallRequest;
use crate::testing::{proptest_config, AgentDir, CWD};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::fs;
use std::time::{Duration, SystemTime};

const WORDS: [&str; 6] = ["alpha", "beta", "gamma", "delta", "eps", "zeta"];

#[derive(Debug, Clone)]
struct Session {
  /// Per entry: word indices (repeats raise a term's score) and role.
  entries: Vec<(Vec<usize>, bool)>,
  /// Few distinct ages, so mtimes tie.
  age: u64,
}

fn session() -> impl Strategy<Value = Session> {
  let entry = (proptest::collection::vec(0..WORDS.len(), 1..8), any::<bool>());
  (proptest::collection::vec(entry, 0..12), 0..3u64).prop_map(|(entries, age)| Session { entries, age })
}

fn query() -> impl Strategy<Value = Value> {
  let word = || (0..WORDS.len()).prop_map(|w| WORDS[w]);
  prop_oneof![
    word().prop_map(|w| json!({"query": w})),
    (word(), word()).prop_map(|(a, b)| json!({"query": format!("{a} {b}")})),
    (word(), word()).prop_map(|(a, b)| json!({"query": format!("{a} {b}"), "queryMatch": "all"})),
    (word(), word()).prop_map(|(a, b)| json!({"query": format!("{a} {b}"), "queryMode": "phrase"})),
    Just(json!({})),
  ]
}

fn write(fx: &AgentDir, index: usize, session: &Session) -> std::path::PathBuf {
  let mut text = format!("{{\"type\":\"session\",\"version\":3,\"id\":\"s{index}\",\"cwd\":\"{CWD}\"}}\n");
  for (n, (words, assistant)) in session.entries.iter().enumerate() {
    let body: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
    let message = if *assistant {
      json!({"role": "assistant", "content": [{"type": "text", "text": body.join(" ")}]})
    } else {
      json!({"role": "user", "content": body.join(" ")})
    };
    let parent = (n > 0).then(|| format!("e{}", n - 1));
    let line = json!({"type": "message", "id": format!("e{n}"), "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z", "message": message});
    text += &(line.to_string() + "\n");
  }
  let path = fx.project.join(format!("s{index}.jsonl"));
  fs::write(&path, text).unwrap();
  let when = SystemTime::now() - Duration::from_secs(1_000 * (1 + session.age));
  fs::File::options().write(true).open(&path).unwrap().set_modified(when).unwrap();
  path
}

/// A hit as JSON, without the page size its `follow` call echoes.
fn hit_json(hit: &super::Hit) -> Value {
  let mut value = serde_json::to_value(hit).unwrap();
  value["follow"]["args"].as_object_mut().unwrap().remove("pageSize");
  value
}

fn call(engine: &crate::engine::Engine, args: &Value) -> super::RecallPage {
  recall(engine, &RecallRequest::from_json(Some(args)).unwrap())
}

/// Following `next` at page sizes 1, 2, 3 and 7 yields the ranking that
/// pages of 50 give, each hit once, in order.
fn follows_the_ranking_once(
  engine: &crate::engine::Engine,
  with: &dyn Fn(Value) -> Value,
) -> Result<(), TestCaseError> {
  // The ranking as pages of 50 give it: most corpora fit one, but a page
  // also ends at the envelope's 30,000 characters (4 sessions of 11 long
  // entries hold 44 hits of ~780 characters), and then `next` goes on.
  let unpaged = call(engine, &with(json!({"pageSize": 50})));
  prop_assert!(unpaged.error.is_none(), "{:?}", unpaged.error);
  let mut expected: Vec<Value> = unpaged.hits.iter().map(hit_json).collect();
  let mut next = unpaged.next.clone();
  while let Some(call_next) = next {
    let page = call(engine, &call_next.args);
    prop_assert!(page.error.is_none() && page.total == unpaged.total, "{:?}", page.error);
    prop_assert!(!page.hits.is_empty() && expected.len() + page.hits.len() <= unpaged.total, "runaway paging");
    expected.extend(page.hits.iter().map(hit_json));
    next = page.next;
  }
  prop_assert_eq!(expected.len(), unpaged.total, "every hit once");
  for size in [1, 2, 3, 7] {
    let mut page = call(engine, &with(json!({"pageSize": size})));
    let mut seen = Vec::new();
    loop {
      prop_assert!(page.error.is_none(), "{:?}", page.error);
      prop_assert_eq!(page.total, unpaged.total);
      prop_assert!(page.hits.len() <= size as usize);
      prop_assert!(!page.hits.is_empty() || page.next.is_none(), "an empty page goes on");
      seen.extend(page.hits.iter().map(hit_json));
      let Some(next) = page.next.take() else { break };
      prop_assert!(seen.len() <= expected.len(), "runaway paging");
      page = call(engine, &next.args);
    }
    prop_assert_eq!(&seen, &expected, "page size {}", size);
  }
  Ok(())
}

proptest! {
  #![proptest_config(proptest_config(48))]

  #[test]
  fn following_next_yields_the_unpaged_ranking_exactly_once(
    sessions in proptest::collection::vec(session(), 1..5),
    query in query(),
    hot in 1..5i64,
  ) {
    let fx = AgentDir::new();
    for (i, session) in sessions.iter().enumerate() {
      write(&fx, i, session);
    }
    let engine = fx.engine(json!({"hotSessions": hot}));
    let with = |extra: Value| {
      let mut args = query.clone();
      args["scope"] = json!("project");
      args.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
      args
    };
    follows_the_ranking_once(&engine, &with)?;
  }
}

/// `engine` with session `live` (when it exists and has entries) as Pi's
/// live session, its whole chain the live branch.
fn with_live(engine: crate::engine::Engine, live: Option<(&std::path::Path, &Session)>) -> crate::engine::Engine {
  let Some((file, session)) = live.filter(|(_, s)| !s.entries.is_empty()) else { return engine };
  let ids: Vec<String> = (0..session.entries.len()).map(|n| format!("e{n}")).collect();
  let branch = crate::session::lineage::LiveBranch { leaf_id: ids.last().cloned(), ids };
  engine.with_live(Some(crate::engine::Live { file: file.to_path_buf(), branch }))
}

proptest! {
  #![proptest_config(proptest_config(48))]

  /// Without filters, hot candidates are entry ranges; through a filter
  /// every entry passes (`since: 0`), they are listed one by one. Both give
  /// the same page: entry ranges, the live turn cut and all query kinds.
  #[test]
  fn unfiltered_pages_equal_pages_through_a_pass_all_filter(
    sessions in proptest::collection::vec(session(), 1..4),
    query in query(),
    range in proptest::option::of((-1..13i64, -1..13i64)),
    live in proptest::option::of(0..4usize),
  ) {
    let fx = AgentDir::new();
    let paths: Vec<_> = sessions.iter().enumerate().map(|(i, session)| write(&fx, i, session)).collect();
    let live = live.filter(|&i| i < sessions.len()).map(|i| (paths[i].as_path(), &sessions[i]));
    let engine = with_live(fx.engine(json!({"hotSessions": 10})), live);
    let mut args = query.clone();
    args["pageSize"] = json!(50);
    match range {
      Some((first, last)) => {
        args["scope"] = json!(format!("session:{}", paths[0].display()));
        args["entryRange"] = json!({"first": first, "last": last});
      }
      None => args["scope"] = json!("project"),
    }
    let fast = call(&engine, &args);
    args["since"] = json!(0);
    let listed = call(&engine, &args);
    prop_assert_eq!(format!("{:?}", fast.error), format!("{:?}", listed.error));
    prop_assert_eq!(fast.total, listed.total);
    let hits = |page: &super::RecallPage| page.hits.iter().map(hit_json).collect::<Vec<_>>();
    prop_assert_eq!(hits(&fast), hits(&listed));
  }
}

/// The sessions of a page's hits in the order they first appear.
fn session_order(page: &super::RecallPage) -> Vec<String> {
  let mut order: Vec<String> = Vec::new();
  for hit in &page.hits {
    let id = match hit {
      super::Hit::Entry(entry) => &entry.session_id,
      super::Hit::Session(session) => &session.session_id,
    };
    if !order.contains(id) {
      order.push(id.clone());
    }
  }
  order
}

proptest! {
  #![proptest_config(proptest_config(32))]

  /// A session's rank does not depend on its tier: every session hot, every
  /// one cold, or some of each, a literal query orders the sessions alike
  /// (distinct ages, so no tie falls to the entry-before-session rule).
  #[test]
  fn sessions_rank_alike_hot_cold_or_mixed(
    sessions in proptest::collection::vec(session(), 1..6),
    words in (0..WORDS.len(), 0..WORDS.len()),
    mixed in 1..5i64,
  ) {
    let fx = AgentDir::new();
    for (i, session) in sessions.iter().enumerate() {
      write(&fx, i, &Session { age: i as u64, ..session.clone() });
    }
    let query = json!({"query": format!("{} {}", WORDS[words.0], WORDS[words.1]), "scope": "project", "pageSize": 50});
    let order = |hot: i64| {
      let page = call(&fx.engine(json!({"hotSessions": hot})), &query);
      assert!(page.next.is_none(), "the corpus fits one page");
      session_order(&page)
    };
    let cold = order(0);
    prop_assert_eq!(&order(mixed), &cold, "{} hot", mixed);
    prop_assert_eq!(&order(10), &cold, "every session hot");
  }
}

/// 4 sessions of 11 long entries: 44 hits of ~780 characters each do not fit
/// one 30,000-character page, and `next` goes on from where the page ended.
#[test]
fn a_ranking_longer_than_a_page_s_characters_is_followed_once() {
  let fx = AgentDir::new();
  let long = Session { entries: (0..11).map(|_| (vec![0, 1, 2, 3, 4, 5, 0], true)).collect(), age: 0 };
  for i in 0..4 {
    write(&fx, i, &long);
  }
  let engine = fx.engine(json!({"hotSessions": 4}));
  let with = |extra: Value| {
    let mut args = json!({"query": "alpha", "scope": "project"});
    args.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    args
  };
  let first = call(&engine, &with(json!({"pageSize": 50})));
  assert!(first.next.is_some() && first.hits.len() < first.total, "{} of {}", first.hits.len(), first.total);
  follows_the_ranking_once(&engine, &with).unwrap();
}

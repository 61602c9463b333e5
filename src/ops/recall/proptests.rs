//! Paging over random corpora: following `next` from offset 0 to the end
//! yields every hit of the unpaged ranking exactly once, in order, for
//! several page sizes (ties in score and mtime included; cold sessions give
//! session hits).

use super::recall;
use crate::query::plan::RecallRequest;
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

fn write(fx: &AgentDir, index: usize, session: &Session) {
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
    let unpaged = call(&engine, &with(json!({"pageSize": 50})));
    prop_assert!(unpaged.error.is_none(), "{:?}", unpaged.error);
    prop_assert!(unpaged.next.is_none() && unpaged.total == unpaged.hits.len(), "the corpus fits one page");
    let expected: Vec<Value> = unpaged.hits.iter().map(hit_json).collect();
    for size in [1, 2, 3, 7] {
      let mut page = call(&engine, &with(json!({"pageSize": size})));
      let mut seen = Vec::new();
      loop {
        prop_assert!(page.error.is_none(), "{:?}", page.error);
        prop_assert_eq!(page.total, unpaged.total);
        prop_assert!(page.hits.len() <= size as usize);
        seen.extend(page.hits.iter().map(hit_json));
        let Some(next) = page.next.take() else { break };
        prop_assert!(seen.len() <= expected.len(), "runaway paging");
        page = call(&engine, &next.args);
      }
      prop_assert_eq!(&seen, &expected, "page size {}", size);
    }
  }
}

use super::*;
use crate::coverage::Reason;
use crate::session::lineage::{self, Branches};
use crate::session::parse::parse;

const SAMPLE: &str = include_str!("../../../__test__/fixtures/pi-sample-v3.jsonl");

fn policy() -> Policy {
  Policy { index_thinking: false, index_tool_output: true, max_entry_chars: None, index_own_results: true }
}

fn run(text: &str, branches: Branches, policy: &Policy) -> Normalized {
  let parsed = parse(text.as_bytes()).unwrap();
  let lineage = lineage::select(&parsed.records, branches, None);
  normalize(&parsed, &lineage, policy, None)
}

#[test]
fn sample_active_path_keeps_only_the_leaf_branch() {
  let out = run(SAMPLE, Branches::Active, &policy());
  let ids: Vec<_> = out.entries.iter().map(|e| e.entry_id.as_deref().unwrap()).collect();
  assert_eq!(ids, ["fac9ad57", "6e35b082", "1cd3714e"]);
  assert_eq!(out.entries[0].text, "fix the bug in src/a.ts");
  assert_eq!(out.entries[1].typed.role.as_deref(), Some("branchSummary"));
  assert_eq!(out.entries[1].text, "", "branch-summary prose is never indexed");
  assert_eq!(out.entries[2].text, "compaction: summary text");
  assert!(out.reasons.is_empty());
}

#[test]
fn sample_all_mode_normalizes_every_content_record() {
  let out = run(SAMPLE, Branches::All, &policy());
  let texts: Vec<_> = out.entries.iter().map(|e| e.text.as_str()).collect();
  assert_eq!(
    texts,
    [
      "fix the bug in src/a.ts",
      "Tool: edit({\"path\":\"src/a.ts\",\"edits\":[{\"oldText\":\"a\",\"newText\":\"b\"}]})",
      "toolResult(edit): Successfully replaced 1 block(s) in src/a.ts.",
      "bash$ ls [exit 0]\na.ts\n",
      "[my-ext] injected",
      "",
      "compaction: summary text",
    ]
  );
  let indices: Vec<_> = out.entries.iter().map(|e| e.index).collect();
  assert_eq!(indices, [0, 1, 2, 3, 4, 5, 6]);
  let edit = &out.entries[1];
  assert_eq!((edit.typed.role.as_deref(), edit.typed.tool.as_deref()), (Some("assistant"), Some("edit")));
  assert_eq!(edit.files_touched, ["src/a.ts"]);
  assert_eq!(edit.typed.reference.as_deref(), Some("pi.edit"));
  assert_eq!(edit.typed.outcome, None);
  let result = &out.entries[2];
  assert_eq!((result.typed.provider.as_deref(), result.typed.action.as_deref()), (Some("pi"), Some("edit")));
  assert_eq!(result.typed.outcome, Some(Outcome::Succeeded));
  assert_eq!(out.entries[3].typed.outcome, Some(Outcome::Succeeded));
  assert_eq!(out.entries[0].typed.timestamp, Some(1_796_050_585_741));
}

#[test]
fn thinking_and_tool_output_follow_the_policy() {
  let thinking =
    Policy { index_thinking: true, index_tool_output: false, max_entry_chars: None, index_own_results: true };
  let out = run(SAMPLE, Branches::All, &thinking);
  assert!(out.entries[1].text.starts_with("look\nTool: edit("));
  assert_eq!(out.entries[2].text, "toolResult(edit)");
  assert_eq!(out.entries[3].text, "bash$ ls [exit 0]");
  assert_eq!(out.entries.len(), 7, "the policy never changes which entries exist");
}

#[test]
fn truncation_counts_scalars_and_reports_the_reason() {
  let header = "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"cwd\":\"/p\"}\n";
  let text = format!(
    "{header}{{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{{\"role\":\"user\",\"content\":\"a😀b\"}}}}\n"
  );
  let bounded = Policy { max_entry_chars: Some(2), ..policy() };
  let out = run(&text, Branches::Active, &bounded);
  assert_eq!(out.entries[0].text, "a😀");
  assert!(out.entries[0].truncated);
  assert_eq!(out.uncut, [(0, "a😀b".to_string())], "the whole text is kept for the postings");
  assert!(!out.reasons.contains(&Reason::MaxEntryChars), "a cut is no gap in the postings");
}

fn session(lines: &[&str]) -> String {
  let mut text = String::from("{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"cwd\":\"/p\"}\n");
  for line in lines {
    text.push_str(line);
    text.push('\n');
  }
  text
}

#[test]
fn bash_outcomes_come_from_exit_code_and_cancellation() {
  let text = session(&[
    r#"{"type":"message","id":"a","parentId":null,"message":{"role":"bashExecution","command":"make","output":"boom","exitCode":2,"cancelled":false,"truncated":false}}"#,
    r#"{"type":"message","id":"b","parentId":"a","message":{"role":"bashExecution","command":"sleep 9","output":"","cancelled":true,"truncated":false}}"#,
  ]);
  let out = run(&text, Branches::Active, &policy());
  assert_eq!(out.entries[0].typed.outcome, Some(Outcome::Failed));
  assert!(out.entries[0].is_error);
  assert_eq!(out.entries[0].text, "bash$ make [exit 2]\nboom");
  assert_eq!(out.entries[1].typed.outcome, Some(Outcome::Aborted));
  assert_eq!(out.entries[1].typed.reference.as_deref(), Some("pi.bash"));
}

#[test]
fn unknown_types_and_roles_are_kept_as_tree_nodes() {
  let text = session(&[
    r#"{"type":"message","id":"sys","parentId":null,"message":{"role":"system","content":"You are Pi"}}"#,
    r#"{"type":"usage","id":"u","parentId":"sys","kind":"x"}"#,
    r#"{"type":"message","id":"a","parentId":"u","message":{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image","data":"AAAA","mimeType":"image/png"}]}}"#,
    r#"{"type":"message","id":"h","parentId":"a","message":{"role":"hookMessage","customType":"hook","content":"said"}}"#,
    r#"{"type":"message","id":"x","parentId":"h","message":{"role":"robot","content":"beep"}}"#,
  ]);
  let out = run(&text, Branches::Active, &policy());
  let summary: Vec<_> =
    out.entries.iter().map(|e| (e.typed.role.clone().unwrap_or_default(), e.text.clone())).collect();
  assert_eq!(
    summary,
    [
      ("user".to_string(), "hi".to_string()),
      ("custom".to_string(), "[hook] said".to_string()),
      ("robot".to_string(), "beep".to_string())
    ]
  );
}

#[test]
fn wrong_field_types_never_lose_the_record() {
  let text = session(&[
    r#"{"type":"message","id":"a","parentId":null,"message":{"role":"toolResult","toolName":7,"isError":"yes","content":"x"}}"#,
    r#"{"type":"message","id":"b","parentId":"a","message":"not an object"}"#,
    r#"{"type":"compaction","id":"c","parentId":"b","summary":{"deep":1}}"#,
  ]);
  let out = run(&text, Branches::Active, &policy());
  assert_eq!(out.entries.len(), 3);
  assert_eq!(out.entries[0].text, "toolResult(): x");
  assert_eq!(out.entries[2].text, "compaction: ");
}

#[test]
fn content_of_any_shape_never_loses_the_record_or_its_other_blocks() {
  let text = session(&[
    r#"{"type":"message","id":"a","parentId":null,"message":{"role":"assistant","content":["item",5,null,[1],{"type":7,"text":"untyped"},{"type":"text","text":5},{"type":"text","text":"first","text":"last"},{"type":"text","text":"esc\n\"q\" \u00e9"},{"type":null,"text":"no kind"},{"type":"toolCall","name":3,"arguments":{"path":"p"}},{"type":"thinking","thinking":"deep"}]}}"#,
    r#"{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":{"an":"object"}}}"#,
    r#"{"type":"message","id":"c","parentId":"b","message":{"role":"bashExecution","command":["x"],"output":5,"exitCode":0}}"#,
    r#"{"type":"message","id":"d","parentId":"c","message":{"role":"user","content":"first","content":[{"type":"text","text":"second"},{"type":"image","data":"AAAA"},{"type":"text","text":"third"}]}}"#,
    r#"{"type":"message","id":"e","parentId":"d","message":{"role":"toolResult","toolName":"read","content":[{"type":"text","text":"out"}],"content":null}}"#,
    r#"{"type":"custom_message","id":"f","parentId":"e","customType":"note","content":[{"type":"text","text":"custom"}]}"#,
  ]);
  let thinking = Policy { index_thinking: true, ..policy() };
  let texts: Vec<String> = run(&text, Branches::Active, &thinking).entries.into_iter().map(|e| e.text).collect();
  assert_eq!(
    texts,
    [
      "last\nesc\n\"q\" é\nTool: ({\"path\":\"p\"})\ndeep",
      "",
      "bash$  [exit 0]",
      "second\nthird",
      "toolResult(read)",
      "[note] custom",
    ]
  );
}

#[test]
fn argument_paths_follow_file_and_path_keys() {
  let args = serde_json::json!({"path": " src/a.ts ", "files": ["b.ts", "", "b.ts"], "nested": {"filePath": "c.ts"}, "other": "d.ts"});
  let mut out = Vec::new();
  argument_paths(&args, &mut out);
  assert_eq!(out, ["src/a.ts", "b.ts", "c.ts"]);
}

#[test]
fn tool_call_arguments_are_cut_at_400_scalars() {
  let long = "x".repeat(500);
  let line = format!(
    r#"{{"type":"message","id":"a","parentId":null,"message":{{"role":"assistant","content":[{{"type":"toolCall","id":"t","name":"write","arguments":{{"path":"a","content":"{long}"}}}}]}}}}"#
  );
  let out = run(&session(&[&line]), Branches::Active, &policy());
  let text = &out.entries[0].text;
  assert!(text.ends_with("…)"));
  assert_eq!(text.chars().count(), "Tool: write(".len() + 400 + 2);
}

#[test]
fn duplicate_ids_are_reported_in_all_mode() {
  let text = session(&[
    r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"one"}}"#,
    r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"two"}}"#,
  ]);
  assert!(run(&text, Branches::All, &policy()).reasons.contains(&Reason::DuplicateEntryId));
  let active = run(&text, Branches::Active, &policy());
  assert_eq!(active.entries.len(), 1);
  assert_eq!(active.entries[0].text, "two");
}

#[test]
fn cycles_mark_invalid_parent_graph() {
  let text = session(&[
    r#"{"type":"message","id":"a","parentId":"b","message":{"role":"user","content":"one"}}"#,
    r#"{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"two"}}"#,
  ]);
  let out = run(&text, Branches::Active, &policy());
  assert!(out.reasons.contains(&Reason::InvalidParentGraph));
  assert_eq!(out.entries.len(), 2);
}

fn trace(ops: &str) -> String {
  format!(
    r#"{{"kind":"pi-fabric.execution","version":1,"outcome":"failed","phases":["run"],"operations":[{ops}],"counts":{{"droppedValues":0,"truncatedValues":0,"redactedValues":0,"droppedOperations":0}}}}"#
  )
}

fn fabric_session(trace: &str) -> String {
  let carrier = format!(
    r#"{{"type":"message","id":"e2","parentId":"e1","message":{{"role":"toolResult","toolCallId":"c","toolName":"fabric_exec","content":[{{"type":"text","text":"done"}}],"details":{{"trace":{trace}}},"isError":false}}}}"#
  );
  session(&[
    r#"{"type":"message","id":"e1","parentId":null,"message":{"role":"user","content":"run it"}}"#,
    &carrier,
    r#"{"type":"message","id":"e3","parentId":"e2","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]}}"#,
  ])
}

const READ_OP: &str = r#"{"type":"call","sequence":0,"ref":"pi.read","provider":"pi","action":"read","args":{"path":"src/read.ts"},"outcome":"succeeded","result":{"text":"body"}}"#;
const RUN_OP: &str = r#"{"type":"call","sequence":3,"ref":"agents.run","args":{"task":"review"},"outcome":"failed","failureStage":"invoke","error":"Call failed during invoke"}"#;

#[test]
fn valid_traces_emit_children_right_after_the_carrier() {
  let text = fabric_session(&trace(&format!("{READ_OP},{RUN_OP}")));
  let out = run(&text, Branches::Active, &policy());
  let ids: Vec<_> = out.entries.iter().map(|e| e.entry_id.clone().unwrap()).collect();
  assert_eq!(ids, ["e1", "e2", "e2/0", "e2/3", "e3"]);
  let read = &out.entries[2];
  assert_eq!(read.operation_address.as_deref(), Some("e2/0"));
  assert_eq!(read.parent_entry_id.as_deref(), Some("e2"));
  assert_eq!(read.parent_id.as_deref(), Some("e1"));
  assert_eq!((read.typed.tool.as_deref(), read.typed.reference.as_deref()), (Some("read"), Some("pi.read")));
  assert_eq!(read.files_touched, ["src/read.ts"]);
  assert!(read.text.starts_with("Fabric operation pi.read\n{"));
  assert!(read.text.contains("\"result\""));
  let agents = &out.entries[3];
  assert_eq!(
    (agents.typed.provider.as_deref(), agents.typed.action.as_deref(), agents.typed.tool.as_deref()),
    (Some("agents"), Some("run"), Some("run"))
  );
  assert_eq!(agents.typed.outcome, Some(Outcome::Failed));
  assert!(agents.is_error);
}

#[test]
fn trace_results_are_omitted_without_tool_output() {
  let text = fabric_session(&trace(READ_OP));
  let quiet = Policy { index_tool_output: false, ..policy() };
  let out = run(&text, Branches::Active, &quiet);
  assert!(out.entries[2].text.contains("\"resultOmitted\":true"));
  assert!(!out.entries[2].text.contains("body"));
}

#[test]
fn invalid_traces_emit_no_children() {
  for bad in [
    trace(&READ_OP.replace("\"type\":\"call\"", "\"type\":\"cast\"")),
    trace(&format!("{RUN_OP},{READ_OP}")),
    trace(&READ_OP.replace("\"outcome\":\"succeeded\"", "\"outcome\":\"ok\"")),
    trace(READ_OP).replace("\"version\":1", "\"version\":2"),
    trace(READ_OP).replace("\"phases\"", "\"extra\":1,\"phases\""),
  ] {
    let out = run(&fabric_session(&bad), Branches::Active, &policy());
    assert_eq!(out.entries.len(), 3, "{bad}");
  }
}

fn branch_details(facts: &str) -> String {
  format!(
    r#"{{"kind":"pi-fabric.branch-summary","version":2,"source":{{"firstEntryId":"s1","lastEntryId":"s2","entryCount":2,"oldLeafId":null}},"facts":[{facts}],"omittedFacts":0,"sections":["[Fabric Activity]"],"request":{{"text":"","sourceBytes":0,"truncated":false}}}}"#
  )
}

const FACTS: &str = r#"{"kind":"user","entryId":"s1","subordinal":"0","address":"s1/0","text":"user fact"},{"kind":"phase","entryId":"s2","subordinal":"1","address":"s2/1","phase":"run"},{"kind":"operation","entryId":"s2","subordinal":"2","address":"s2/2","ref":"pi.grep","provider":"pi","action":"grep","tool":"grep","args":{"pattern":"x","path":"src/grep.ts"},"outcome":"succeeded"},{"kind":"fabricRun","entryId":"s2","subordinal":"call:1","address":"s2/call:1","name":"review","description":"checks","outcome":"failed"},{"kind":"customMessage","entryId":"s3","subordinal":"0","address":"s3/0","customType":"note","text":"hello","display":true}"#;

fn summary_session(details: &str, twice: bool) -> String {
  let carrier = |id: &str, parent: &str| {
    format!(
      r#"{{"type":"branch_summary","id":"{id}","parentId":"{parent}","fromId":"{parent}","summary":"prose","details":{details}}}"#
    )
  };
  let first = carrier("b1", "u1");
  let second = carrier("b2", "b1");
  let mut lines =
    vec![r#"{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"go"}}"#, first.as_str()];
  if twice {
    lines.push(second.as_str());
  }
  session(&lines)
}

#[test]
fn branch_facts_become_typed_children() {
  let out = run(&summary_session(&branch_details(FACTS), false), Branches::Active, &policy());
  let rows: Vec<_> =
    out.entries.iter().map(|e| (e.entry_id.clone().unwrap(), e.typed.role.clone().unwrap(), e.text.clone())).collect();
  assert_eq!(rows[1], ("b1".into(), "branchSummary".into(), "".into()));
  assert_eq!(rows[2], ("s1/0".into(), "branchUser".into(), "user fact".into()));
  assert_eq!(rows[3], ("s2/1".into(), "fabricPhase".into(), "Fabric phase run".into()));
  assert_eq!(rows[4].1, "fabricOperation");
  assert!(rows[4].2.starts_with("Fabric branch operation pi.grep\n"));
  assert_eq!(rows[5], ("s2/call:1".into(), "fabricRun".into(), "Fabric run review — checks → failed".into()));
  assert_eq!(rows[6], ("s3/0".into(), "branchCustomMessage".into(), "[note] hello".into()));
  let op = &out.entries[4];
  assert_eq!(op.files_touched, ["src/grep.ts"]);
  assert_eq!(op.operation_address.as_deref(), Some("s2/2"));
  assert_eq!(op.carrier_entry_id.as_deref(), Some("b1"));
  assert_eq!(op.carrier_from_id.as_deref(), Some("u1"));
  let fabric_run = &out.entries[5];
  assert_eq!(
    (fabric_run.typed.tool.as_deref(), fabric_run.typed.reference.as_deref()),
    (Some("fabric_exec"), Some("fabric_exec"))
  );
  assert!(out.reasons.is_empty());
}

#[test]
fn repeated_summaries_keep_the_earliest_carrier() {
  let out = run(&summary_session(&branch_details(FACTS), true), Branches::Active, &policy());
  let facts: Vec<_> = out.entries.iter().filter(|e| e.fact_address.is_some()).collect();
  assert_eq!(facts.len(), 5);
  assert!(facts.iter().all(|f| f.carrier_entry_id.as_deref() == Some("b1")));
  assert!(out.reasons.is_empty());
}

#[test]
fn duplicate_fact_addresses_drop_the_envelope() {
  let dup = format!(
    "{FACTS},{}",
    r#"{"kind":"operation","entryId":"s2","subordinal":"2","address":"s2/2","ref":"pi.read","tool":"read","args":{},"outcome":"succeeded"}"#
  );
  let out = run(&summary_session(&branch_details(&dup), false), Branches::Active, &policy());
  assert_eq!(out.entries.len(), 2);
  assert!(out.reasons.contains(&Reason::DuplicateBranchFactAddress));
  assert!(out.reasons.contains(&Reason::DuplicateOperationAddress));
}

#[test]
fn malformed_branch_details_stay_non_semantic() {
  let bad = branch_details(FACTS).replace("\"address\":\"s1/0\"", "\"address\":\"s1/9\"");
  let out = run(&summary_session(&bad, false), Branches::Active, &policy());
  assert_eq!(out.entries.len(), 2);
}

/// Pi ≥ 0.87 records on one branch, plus an edit on an abandoned sibling.
fn pi_1x_session() -> String {
  let system = r#"{"type":"message","id":"s0","parentId":null,"message":{"role":"system","content":"","sections":{"preamble":"zebrafinch prompt"},"toolsAdded":[{"name":"read","description":"zebrafinch tool","parameters":{}}],"timestamp":1}}"#;
  let usage = r#"{"type":"usage","id":"g1","parentId":"a1","kind":"cache_warm","provider":"p","model":"m","usage":{"totalTokens":5}}"#;
  let patch = r#"{"type":"message","id":"s1","parentId":"g1","message":{"role":"system","content":"","sections":{"skills":null},"toolsRemoved":[{"name":"zebrafinch"}]}}"#;
  let omit = r#"{"type":"context_edit","id":"x1","parentId":"u2","targetId":"u1","replacement":null}"#;
  let replace = r#"{"type":"context_edit","id":"x2","parentId":"x1","targetId":"a1","replacement":{"content":[{"type":"text","text":"pelican instead"}]}}"#;
  let off_branch =
    r#"{"type":"context_edit","id":"x3","parentId":"u2","targetId":"u2","replacement":{"content":"heron"}}"#;
  let compaction = r#"{"type":"compaction","id":"c1","parentId":"x2","summary":"sum","firstKeptEntryId":"u2","tokensBefore":9,"systemMessage":{"role":"system","content":"zebrafinch system","toolsAdded":[]}}"#;
  let user = |id: &str, parent: &str, text: &str| {
    format!(r#"{{"type":"message","id":"{id}","parentId":"{parent}","message":{{"role":"user","content":"{text}"}}}}"#)
  };
  let assistant = r#"{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[{"type":"text","text":"egret answer"}]}}"#;
  session(&[
    system,
    &user("u1", "s0", "egret question"),
    assistant,
    usage,
    patch,
    &user("u2", "s1", "second"),
    off_branch,
    omit,
    replace,
    compaction,
    &user("u3", "c1", "after"),
  ])
}

#[test]
fn system_messages_and_usage_emit_nothing_but_keep_the_chain() {
  let text = pi_1x_session();
  let parsed = parse(text.as_bytes()).unwrap();
  assert_eq!(parsed.records.len(), 11, "every record takes an ordinal");
  let out = run(&text, Branches::Active, &policy());
  let ids: Vec<_> = out.entries.iter().map(|e| e.entry_id.as_deref().unwrap()).collect();
  assert_eq!(ids, ["u1", "a1", "u2", "x1", "x2", "c1", "u3"], "the branch runs through usage and system records");
  assert!(out.entries.iter().all(|e| !e.text.contains("zebrafinch")), "no prompt or tool declaration is prose");
  assert_eq!(out.entries[5].text, "compaction: sum");
  assert!(out.reasons.is_empty());
}

#[test]
fn context_edits_mark_their_targets_on_the_selected_branch() {
  let out = run(&pi_1x_session(), Branches::Active, &policy());
  let edit = |i: usize| (out.entries[i].context_edit, out.entries[i].context_edit_id.as_deref());
  assert_eq!(out.entries[0].text, "egret question", "history stays history");
  assert_eq!(edit(0), (Some(ContextEdit::Omitted), Some("x1")));
  assert_eq!(edit(1), (Some(ContextEdit::Replaced), Some("x2")));
  assert_eq!(edit(2), (None, None), "x3 is on another branch");
  assert_eq!((out.entries[4].text.as_str(), out.entries[4].target_id.as_deref()), ("pelican instead", Some("a1")));
  assert_eq!((out.entries[3].text.as_str(), out.entries[3].context_edit), ("", Some(ContextEdit::Omitted)));
  let all = run(&pi_1x_session(), Branches::All, &policy());
  let u2 = all.entries.iter().find(|e| e.entry_id.as_deref() == Some("u2")).unwrap();
  assert_eq!((u2.context_edit, u2.context_edit_id.as_deref()), (Some(ContextEdit::Replaced), Some("x3")));
}

#[test]
fn a_later_edit_marks_an_entry_normalized_before_it() {
  let text = pi_1x_session();
  let parsed = parse(text.as_bytes()).unwrap();
  let lineage = lineage::select(&parsed.records, Branches::All, None);
  let (head, tail) = parsed.records.split_at(7);
  let first = normalize_selected(Normalizer::new(&policy()), head.iter(), &lineage);
  assert_eq!(first.entries[0].context_edit, None);
  let resumed = normalize_selected(Normalizer::resume(&policy(), first), tail.iter(), &lineage);
  assert_eq!(resumed.entries[0].context_edit, Some(ContextEdit::Omitted));
}

//! Parsing a session file into its header and records.
//!
//! Follows Pi's own session loader: lines split on `\n`
//! with no length limit, a trailing `\r` tolerated, blank and malformed lines
//! skipped and counted, and the file accepted only when the first parsed JSON
//! value is a `{type:"session", id:string}` header. Records are parsed into
//! typed borrowed fields; a message is parsed with its line (one pass over
//! its text), other payload subtrees stay raw JSON until normalization asks
//! for them. Version 1 files get stable synthesized ids and a linear
//! parent chain, because Pi's own migration assigns random ones.

use super::message::Message;
use serde_json::value::RawValue;
use std::borrow::Cow;

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Header {
  pub id: String,
  pub cwd: String,
  pub timestamp: Option<String>,
  pub version: u32,
  pub parent_session: Option<String>,
}

/// One non-header record. `ordinal` counts parsed object records in file
/// order and joins lineage to normalization.
#[derive(Debug)]
pub struct Record<'a> {
  pub ordinal: usize,
  pub line_no: usize,
  /// Byte offset of the record's line in the file.
  pub offset: usize,
  pub kind: Cow<'a, str>,
  pub id: Option<String>,
  pub parent_id: Option<String>,
  pub fields: Fields<'a>,
}

/// The typed fields normalization may need, each kept as raw JSON. (One
/// struct for the whole line: serde's `flatten` cannot carry `RawValue`.)
#[derive(Debug, Default)]
pub struct Fields<'a> {
  kind: Option<Cow<'a, str>>,
  id: Option<&'a RawValue>,
  parent_id: Option<&'a RawValue>,
  pub timestamp: Option<&'a RawValue>,
  /// Parsed with the line (see `session::message`).
  pub message: Option<Message<'a>>,
  pub summary: Option<&'a RawValue>,
  pub custom_type: Option<&'a RawValue>,
  pub content: Option<&'a RawValue>,
  pub details: Option<&'a RawValue>,
  pub from_id: Option<&'a RawValue>,
  pub target_id: Option<&'a RawValue>,
  pub from_hook: Option<&'a RawValue>,
  pub replacement: Option<&'a RawValue>,
  /// A `session_info` record's session name.
  pub name: Option<&'a RawValue>,
}

super::json::last_wins!(Fields {
  cow { kind: "type" }
  raw {
    id: "id", parent_id: "parentId", timestamp: "timestamp", message: "message", summary: "summary",
    custom_type: "customType", content: "content", details: "details", from_id: "fromId", target_id: "targetId",
    from_hook: "fromHook", replacement: "replacement", name: "name",
  }
});

#[derive(Debug)]
pub struct ParsedSession<'a> {
  pub header: Header,
  pub records: Vec<Record<'a>>,
  /// Lines that were not JSON objects (malformed, invalid UTF-8, non-object).
  pub bad_lines: usize,
  /// Later `type:"session"` lines, ignored as Pi ignores them.
  pub extra_headers: usize,
  /// Length of the newline-terminated prefix: where an incremental parse of
  /// appended bytes resumes.
  pub complete_len: usize,
  /// The last line number seen (for resuming).
  pub last_line_no: usize,
}

/// Where a parse of appended bytes resumes: the state after the prefix.
#[derive(Debug, Clone, PartialEq)]
pub struct Resume {
  pub offset: usize,
  pub line_no: usize,
  pub ordinal: usize,
  pub header: Header,
  /// The last record's id, which a version 1 file chains onto.
  pub previous_id: Option<String>,
}

static PARSED_BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Bytes scanned by [`parse`] and [`parse_from`] in this process: lets tests
/// prove an append was indexed by parsing only the new bytes.
pub fn parsed_bytes() -> u64 {
  PARSED_BYTES.load(std::sync::atomic::Ordering::Relaxed)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotASession {
  Empty,
  InvalidHeader,
}

/// Iterates lines without a length limit, stripping one trailing `\r`;
/// yields (1-based line number, byte offset, bytes).
pub fn lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
  lines_from(bytes, 0, 0).map(|(line_no, _, line)| (line_no, line))
}

fn lines_from(bytes: &[u8], offset: usize, line_base: usize) -> impl Iterator<Item = (usize, usize, &[u8])> {
  let mut start = offset;
  let mut line_no = line_base;
  let mut ends = memchr::memchr_iter(b'\n', &bytes[offset.min(bytes.len())..]).map(move |end| end + offset);
  std::iter::from_fn(move || {
    if start >= bytes.len() {
      return None;
    }
    let end = ends.next().unwrap_or(bytes.len());
    let mut line = &bytes[start..end];
    let at = start;
    start = end + 1;
    line_no += 1;
    if line.last() == Some(&b'\r') {
      line = &line[..line.len() - 1];
    }
    Some((line_no, at, line))
  })
}

fn is_blank(line: &[u8]) -> bool {
  line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

fn raw_string(raw: Option<&RawValue>) -> Option<String> {
  raw.and_then(|value| serde_json::from_str::<String>(value.get()).ok())
}

fn json_string(value: Option<serde_json::Value>) -> Option<String> {
  match value {
    Some(serde_json::Value::String(text)) => Some(text),
    _ => None,
  }
}

fn parse_header(line: &str) -> Option<Header> {
  // A map, not a derived struct: a duplicated key keeps its last value.
  let mut raw: serde_json::Map<String, serde_json::Value> = serde_json::from_str(line).ok()?;
  let id = json_string(raw.remove("id"))?;
  let version = match raw.get("version") {
    Some(serde_json::Value::Number(n)) => n.as_u64().unwrap_or(1) as u32,
    _ => 1,
  };
  Some(Header {
    id,
    cwd: json_string(raw.remove("cwd")).unwrap_or_default(),
    timestamp: json_string(raw.remove("timestamp")),
    version,
    parent_session: json_string(raw.remove("parentSession")),
  })
}

/// Reads only the header of a session file from its leading bytes.
pub fn parse_header_prefix(bytes: &[u8]) -> Option<Header> {
  for (_, line) in lines(bytes) {
    if is_blank(line) {
      continue;
    }
    // Decoded as Pi decodes the file (invalid bytes as U+FFFD, lone
    // surrogates as U+FFFD): a header with either is still a header.
    let decoded = super::decode::decode(line);
    let text = std::str::from_utf8(&decoded.bytes).ok()?;
    match serde_json::from_str::<serde_json::Value>(text) {
      Ok(value) => {
        if value.get("type").and_then(|t| t.as_str()) != Some("session") {
          return None;
        }
        return parse_header(text);
      }
      Err(_) => continue,
    }
  }
  None
}

pub fn parse(bytes: &[u8]) -> Result<ParsedSession<'_>, NotASession> {
  parse_from(bytes, None)
}

/// Parses `bytes`, or with `resume` only the bytes after `resume.offset`
/// (an append to a prefix that was parsed before).
pub fn parse_from<'a>(bytes: &'a [u8], resume: Option<&Resume>) -> Result<ParsedSession<'a>, NotASession> {
  let offset = resume.map_or(0, |r| r.offset);
  PARSED_BYTES.fetch_add(bytes.len().saturating_sub(offset) as u64, std::sync::atomic::Ordering::Relaxed);
  let mut header: Option<Header> = resume.map(|r| r.header.clone());
  let mut records = Vec::new();
  let ordinal_base = resume.map_or(0, |r| r.ordinal);
  let mut bad_lines = 0;
  let mut extra_headers = 0;
  let mut saw_any_line = resume.is_some();
  let mut last_line_no = resume.map_or(0, |r| r.line_no);
  for (line_no, at, raw) in lines_from(bytes, offset, last_line_no) {
    last_line_no = line_no;
    if is_blank(raw) {
      continue;
    }
    saw_any_line = true;
    let Ok(text) = std::str::from_utf8(raw) else {
      bad_lines += 1;
      continue;
    };
    let mut line: Fields<'_> = match serde_json::from_str(text) {
      Ok(line) => line,
      Err(_) => {
        // Pi's entries[0] is the first *parsed* JSON value of any kind: a
        // non-object value there makes the file invalid, later it is skipped.
        let is_json = serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
        if header.is_none() && is_json {
          return Err(NotASession::InvalidHeader);
        }
        bad_lines += 1;
        continue;
      }
    };
    let kind = line.kind.take().unwrap_or(Cow::Borrowed(""));
    if kind == "session" {
      if header.is_none() {
        header = Some(parse_header(text).ok_or(NotASession::InvalidHeader)?);
      } else {
        extra_headers += 1;
      }
      continue;
    }
    if header.is_none() {
      return Err(NotASession::InvalidHeader);
    }
    records.push(Record {
      ordinal: ordinal_base + records.len(),
      line_no,
      offset: at,
      kind,
      id: raw_string(line.id.take()),
      parent_id: raw_string(line.parent_id.take()),
      fields: line,
    });
  }
  let Some(header) = header else {
    return Err(if saw_any_line { NotASession::InvalidHeader } else { NotASession::Empty });
  };
  if header.version < 2 {
    synthesize_v1_ids(&mut records, resume.and_then(|r| r.previous_id.clone()));
  }
  let complete_len = memchr::memrchr(b'\n', bytes).map_or(0, |at| at + 1).max(offset);
  Ok(ParsedSession { header, records, bad_lines, extra_headers, complete_len, last_line_no })
}

/// Version 1 files have no ids: give each record a stable id from its line
/// number and chain them linearly, as Pi's v1→v2 migration does (with random
/// ids, which is why they cannot be Pi's).
fn synthesize_v1_ids(records: &mut [Record<'_>], mut previous: Option<String>) {
  for record in records.iter_mut() {
    let id = format!("v1:{}", record.line_no);
    record.parent_id = previous.take();
    record.id = Some(id.clone());
    previous = Some(id);
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  const HEADER: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;

  #[test]
  fn splits_lines_with_crlf_and_no_trailing_newline() {
    let got: Vec<_> = lines(b"a\r\nb\n\nc").map(|(n, l)| (n, l.to_vec())).collect();
    assert_eq!(got, vec![(1, b"a".to_vec()), (2, b"b".to_vec()), (3, b"".to_vec()), (4, b"c".to_vec())]);
  }

  #[test]
  fn counts_bad_lines_and_keeps_records() {
    let text = format!(
      "{HEADER}\r\n{{bad json\n\n{}\n\"str\"\n{{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}}\n",
      "\u{0}"
    );
    let mut bytes = text.into_bytes();
    bytes.extend_from_slice(b"{\"type\":\"x\",\"id\":\"\xff\xfe\"}\n");
    let parsed = parse(&bytes).unwrap();
    assert_eq!(parsed.header.id, "s1");
    assert_eq!(parsed.records.len(), 1);
    assert_eq!(parsed.bad_lines, 4);
  }

  /// A message is parsed with its line, and no value in it, of whatever
  /// type, makes the line a bad line (only invalid JSON does).
  #[test]
  fn no_message_shape_makes_a_bad_line() {
    let odd = [
      r#"{"role":5,"content":"x"}"#,
      r#"{"role":"user","content":{"a":[1,{"b":null}]},"command":[true],"output":{"o":1}}"#,
      r#"{"role":"assistant","content":[1,"s",null,[[]],{"type":{"t":1},"text":2},{"type":"toolCall","name":[],"arguments":"a"}]}"#,
      r#""just text""#,
      r#"[{"role":"user"}]"#,
      r#"null"#,
      r#"{"role":"user","role":null,"content":"\u00e9\n\"","content":-1.5e3}"#,
    ];
    let mut text = format!("{HEADER}\n");
    for (n, message) in odd.iter().enumerate() {
      text.push_str(&format!("{{\"type\":\"message\",\"id\":\"m{n}\",\"parentId\":null,\"message\":{message}}}\n"));
    }
    text.push_str("{\"type\":\"message\",\"id\":\"bad\",\"message\":{\"role\":\"user\",}}\n");
    let parsed = parse(text.as_bytes()).unwrap();
    assert_eq!(parsed.records.len(), odd.len());
    assert_eq!(parsed.bad_lines, 1, "only the line that is not JSON");
    let roles: Vec<Option<&str>> =
      parsed.records.iter().map(|r| r.fields.message.as_ref().and_then(|m| m.role.as_deref())).collect();
    assert_eq!(roles, [None, Some("user"), Some("assistant"), None, None, None, None]);
  }

  #[test]
  fn rejects_files_that_are_not_sessions() {
    assert_eq!(parse(b"").unwrap_err(), NotASession::Empty);
    assert_eq!(parse(b"\n\n").unwrap_err(), NotASession::Empty);
    assert_eq!(parse(b"{\"type\":\"message\",\"id\":\"a\"}\n").unwrap_err(), NotASession::InvalidHeader);
    assert_eq!(parse(b"[1,2]\n").unwrap_err(), NotASession::InvalidHeader);
    assert_eq!(parse(b"{\"type\":\"session\"}\n").unwrap_err(), NotASession::InvalidHeader);
    assert_eq!(parse(b"hello world\n").unwrap_err(), NotASession::InvalidHeader);
  }

  #[test]
  fn v1_files_get_stable_linear_ids() {
    let text = "{\"type\":\"session\",\"id\":\"old\",\"timestamp\":\"t\"}\n\
      {\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n\
      {\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":[]}}\n";
    let parsed = parse(text.as_bytes()).unwrap();
    assert_eq!(parsed.header.version, 1);
    assert_eq!(parsed.records[0].id.as_deref(), Some("v1:2"));
    assert_eq!(parsed.records[0].parent_id, None);
    assert_eq!(parsed.records[1].parent_id.as_deref(), Some("v1:2"));
  }

  #[test]
  fn later_session_lines_are_ignored() {
    let text = format!("{HEADER}\n{HEADER}\n{{\"type\":\"label\",\"id\":\"l\",\"parentId\":null}}\n");
    let parsed = parse(text.as_bytes()).unwrap();
    assert_eq!(parsed.extra_headers, 1);
    assert_eq!(parsed.records.len(), 1);
  }

  #[test]
  fn resumes_after_a_prefix() {
    let first = format!("{HEADER}\n{{\"type\":\"label\",\"id\":\"a\",\"parentId\":null}}\n");
    let grown = format!("{first}{{\"type\":\"label\",\"id\":\"b\",\"parentId\":\"a\"}}\n");
    let prefix = parse(first.as_bytes()).unwrap();
    assert_eq!(prefix.complete_len, first.len());
    let resume = Resume {
      offset: prefix.complete_len,
      line_no: prefix.last_line_no,
      ordinal: prefix.records.len(),
      header: prefix.header.clone(),
      previous_id: prefix.records.last().and_then(|r| r.id.clone()),
    };
    let before = parsed_bytes();
    let tail = parse_from(grown.as_bytes(), Some(&resume)).unwrap();
    assert!(parsed_bytes() - before >= (grown.len() - first.len()) as u64);
    assert_eq!(tail.records.len(), 1);
    assert_eq!((tail.records[0].ordinal, tail.records[0].line_no), (1, 3));
    assert_eq!(tail.records[0].offset, first.len());
    assert_eq!(tail.complete_len, grown.len());
  }
}

//! The remotes of a git `config` file: `[remote "name"]` sections and their
//! `url` values, in file order. Only as much of git's syntax as those need
//! is read (sections, subsections, quoting, escapes, comments, continuation
//! lines); anything git itself would reject is `None`: a repository whose
//! config git cannot read is no evidence. `include` and `url.*.insteadOf`
//! are not followed (the evidence stays this one bounded file).

/// (remote name, its urls), in the order the file names them.
pub type Remotes = Vec<(String, Vec<String>)>;

pub fn remotes(text: &str) -> Option<Remotes> {
  let mut remotes: Remotes = Vec::new();
  let mut section: Option<(String, Option<String>)> = None;
  let mut lines = text.lines();
  while let Some(raw) = lines.next() {
    let mut line = raw.trim_start().to_string();
    if line.starts_with('[') {
      let (header, rest) = header(&line)?;
      section = Some(header);
      line = rest.trim_start().to_string();
    }
    if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
      continue;
    }
    while line.trim_end().ends_with('\\') && !line.trim_end().ends_with("\\\\") {
      let cut = line.trim_end().len() - 1;
      line.truncate(cut);
      line.push_str(lines.next()?);
    }
    let (key, value) = entry(&line)?;
    let Some((name, Some(remote))) = &section else { continue };
    if name == "remote" && key == "url" {
      match remotes.iter_mut().find(|(n, _)| n == remote) {
        Some((_, urls)) => urls.push(value),
        None => remotes.push((remote.clone(), vec![value])),
      }
    }
  }
  Some(remotes)
}

/// `[section]`, `[section "subsection"]` or the old `[section.subsection]`,
/// and what follows the `]` on the line. Section names are case-insensitive;
/// a quoted subsection is case-sensitive, an old-style one is lowercased (as git does).
fn header(line: &str) -> Option<((String, Option<String>), &str)> {
  let inner = &line[1..];
  let close = inner.find(']');
  if let Some(quote) = inner.find('"').filter(|q| close.is_none_or(|c| *q < c)) {
    let name = inner[..quote].trim();
    let mut sub = String::new();
    let mut chars = inner[quote + 1..].char_indices();
    loop {
      match chars.next()? {
        (_, '\\') => sub.push(chars.next()?.1),
        (at, '"') => {
          let after = &inner[quote + 1 + at + 1..];
          let rest = after.trim_start().strip_prefix(']')?;
          return valid_name(name).then(|| ((name.to_ascii_lowercase(), Some(sub)), rest));
        }
        (_, c) => sub.push(c),
      }
    }
  }
  let close = close?;
  let full = inner[..close].trim();
  let (name, sub) = match full.split_once('.') {
    Some((name, sub)) => (name, Some(sub.to_ascii_lowercase())),
    None => (full, None),
  };
  valid_name(name).then(|| ((name.to_ascii_lowercase(), sub), &inner[close + 1..]))
}

fn valid_name(name: &str) -> bool {
  !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
}

/// `key = value` (or a bare `key`, a boolean): the key lowercased, the value
/// unquoted and unescaped, an unquoted `#` or `;` ending it.
fn entry(line: &str) -> Option<(String, String)> {
  let (key, raw) = line.split_once('=').unwrap_or((line, ""));
  let key = key.trim();
  if key.is_empty()
    || !key.chars().next()?.is_ascii_alphabetic()
    || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
  {
    return None;
  }
  Some((key.to_ascii_lowercase(), value(raw)?))
}

fn value(raw: &str) -> Option<String> {
  let mut out = String::new();
  let (mut quoted, mut pending_space) = (false, String::new());
  let mut chars = raw.trim_start().chars();
  while let Some(c) = chars.next() {
    match c {
      '"' => quoted = !quoted,
      '\\' => {
        out.push_str(&std::mem::take(&mut pending_space));
        out.push(match chars.next()? {
          'n' => '\n',
          't' => '\t',
          'b' => '\u{8}',
          c @ ('"' | '\\') => c,
          _ => return None,
        });
        continue;
      }
      '#' | ';' if !quoted => break,
      c if c.is_whitespace() && !quoted => pending_space.push(c),
      c => {
        out.push_str(&std::mem::take(&mut pending_space));
        out.push(c);
      }
    }
  }
  (!quoted).then_some(out)
}

#[cfg(test)]
mod tests {
  use super::*;

  fn urls(text: &str) -> Vec<(String, Vec<String>)> {
    remotes(text).expect("parses")
  }

  #[test]
  fn reads_remotes_in_file_order_with_their_urls() {
    let text = "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = git@github.com:org/repo.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n[Remote \"Upstream\"]\n\tURL = \"https://github.com/up/repo\" # the fork's parent\n\turl = https://mirror/up/repo\n";
    assert_eq!(
      urls(text),
      vec![
        ("origin".into(), vec!["git@github.com:org/repo.git".into()]),
        ("Upstream".into(), vec!["https://github.com/up/repo".into(), "https://mirror/up/repo".into()]),
      ]
    );
  }

  #[test]
  fn old_style_subsections_comments_and_continuations() {
    let text =
      "; comment\n# another\n[remote.Origin]\nurl = https://host/org/\\\nrepo.git\n[remote \"a\\\"b\"] url = x\n";
    assert_eq!(
      urls(text),
      vec![("origin".into(), vec!["https://host/org/repo.git".into()]), ("a\"b".into(), vec!["x".into()])]
    );
  }

  #[test]
  fn what_git_rejects_is_none() {
    for text in [
      "[remote \"origin\"\nurl = x\n",
      "[remote \"origin\"]\nurl = \"x\n",
      "[remote \"o\"]\n= x\n",
      "[re mote]\n",
      "[remote \"o\"]\nurl = a\\qb\n",
    ] {
      assert_eq!(remotes(text), None, "{text:?}");
    }
  }
}

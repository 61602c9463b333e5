//! Which curated file: the global `MEMORY.md` or `USER.md`, or the current
//! project's `MEMORY.md` (`projects/<identity dir>/MEMORY.md`, only in a
//! store opened for a project).

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
  Memory,
  User,
  Project,
}

impl Target {
  pub fn parse(text: &str) -> Option<Target> {
    match text {
      "memory" => Some(Target::Memory),
      "user" => Some(Target::User),
      "project" => Some(Target::Project),
      _ => None,
    }
  }

  pub fn name(self) -> &'static str {
    match self {
      Target::Memory => "memory",
      Target::User => "user",
      Target::Project => "project",
    }
  }

  pub fn file_name(self) -> &'static str {
    match self {
      Target::Memory | Target::Project => "MEMORY.md",
      Target::User => "USER.md",
    }
  }

  pub(super) fn index(self) -> usize {
    self as usize
  }
}

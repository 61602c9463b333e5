//! Which curated file: `MEMORY.md` or `USER.md`.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
  Memory,
  User,
}

impl Target {
  pub const ALL: [Target; 2] = [Target::Memory, Target::User];

  pub fn parse(text: &str) -> Option<Target> {
    match text {
      "memory" => Some(Target::Memory),
      "user" => Some(Target::User),
      _ => None,
    }
  }

  pub fn name(self) -> &'static str {
    match self {
      Target::Memory => "memory",
      Target::User => "user",
    }
  }

  pub fn file_name(self) -> &'static str {
    match self {
      Target::Memory => "MEMORY.md",
      Target::User => "USER.md",
    }
  }

  pub(super) fn index(self) -> usize {
    self as usize
  }
}

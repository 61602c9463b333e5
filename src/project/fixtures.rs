//! Repositories written file by file, as git lays them out (tests).

use std::fs;
use std::path::{Path, PathBuf};

/// A main checkout at `dir`: `.git/HEAD` and a config with these remotes.
pub(crate) fn repo(dir: &Path, remotes: &[(&str, &str)]) -> PathBuf {
  let git = dir.join(".git");
  fs::create_dir_all(&git).unwrap();
  fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
  let mut config = String::from("[core]\n\trepositoryformatversion = 0\n\tbare = false\n");
  for (name, url) in remotes {
    config.push_str(&format!("[remote \"{name}\"]\n\turl = {url}\n\tfetch = +refs/heads/*:refs/remotes/{name}/*\n"));
  }
  fs::write(git.join("config"), config).unwrap();
  dir.to_path_buf()
}

/// A linked worktree at `dir` of the repository whose common dir is
/// `common`, laid out as `git worktree add` does.
pub(crate) fn worktree(common: &Path, dir: &Path, name: &str) -> PathBuf {
  let admin = common.join("worktrees").join(name);
  fs::create_dir_all(&admin).unwrap();
  fs::write(admin.join("HEAD"), "ref: refs/heads/feature\n").unwrap();
  fs::write(admin.join("commondir"), "../..\n").unwrap();
  fs::write(admin.join("gitdir"), format!("{}\n", dir.join(".git").display())).unwrap();
  fs::create_dir_all(dir).unwrap();
  fs::write(dir.join(".git"), format!("gitdir: {}\n", admin.display())).unwrap();
  dir.to_path_buf()
}

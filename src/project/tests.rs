//! The identity cases, on repositories written file by file in temp dirs
//! (as git lays them out), and once with the real `git` binary.

use super::*;
use std::fs;
use std::path::{Path, PathBuf};

/// A main checkout at `dir`: `.git/HEAD` and a config with these remotes.
fn repo(dir: &Path, remotes: &[(&str, &str)]) -> PathBuf {
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
fn worktree(common: &Path, dir: &Path, name: &str) -> PathBuf {
  let admin = common.join("worktrees").join(name);
  fs::create_dir_all(&admin).unwrap();
  fs::write(admin.join("HEAD"), "ref: refs/heads/feature\n").unwrap();
  fs::write(admin.join("commondir"), "../..\n").unwrap();
  fs::write(admin.join("gitdir"), format!("{}\n", dir.join(".git").display())).unwrap();
  fs::create_dir_all(dir).unwrap();
  fs::write(dir.join(".git"), format!("gitdir: {}\n", admin.display())).unwrap();
  dir.to_path_buf()
}

fn cwd_key(cwd: &Path) -> String {
  Identity::new(Source::Cwd, cwd.to_string_lossy().into_owned(), "", None).key
}

#[test]
fn a_worktree_and_its_main_checkout_share_a_key() {
  let tmp = tempfile::tempdir().unwrap();
  let main = repo(&tmp.path().join("repo"), &[]);
  let wt = worktree(&main.join(".git"), &tmp.path().join("elsewhere/repo-feature"), "repo-feature");
  fs::create_dir_all(wt.join("src")).unwrap();
  let (a, b) = (resolve(&main, None), resolve(&wt.join("src"), None));
  assert_eq!(a, b);
  assert_eq!((a.source, a.name.as_str(), a.fallback), (Source::CommonDir, "repo", None));
  assert_eq!(a.evidence, fs::canonicalize(main.join(".git")).unwrap().to_string_lossy());
}

#[test]
fn a_worktree_of_a_remote_repository_shares_its_remote_key() {
  let tmp = tempfile::tempdir().unwrap();
  let main = repo(&tmp.path().join("repo"), &[("origin", "git@github.com:org/repo.git")]);
  let wt = worktree(&main.join(".git"), &tmp.path().join("wt"), "wt");
  let (a, b) = (resolve(&main, None), resolve(&wt, None));
  assert_eq!(a, b);
  assert_eq!((a.source, a.evidence.as_str(), a.name.as_str()), (Source::Remote, "github.com/org/repo", "repo"));
}

#[test]
fn checkouts_of_a_bare_repository_share_its_key() {
  let tmp = tempfile::tempdir().unwrap();
  let bare = tmp.path().join("Repo.git");
  fs::create_dir_all(&bare).unwrap();
  fs::write(bare.join("HEAD"), "ref: refs/heads/main\n").unwrap();
  fs::write(bare.join("config"), "[core]\n\tbare = true\n").unwrap();
  let one = worktree(&bare, &tmp.path().join("one"), "one");
  let two = worktree(&bare, &tmp.path().join("two"), "two");
  let (a, b) = (resolve(&one, None), resolve(&two, None));
  assert_eq!(a, b);
  assert_eq!((a.source, a.name.as_str()), (Source::CommonDir, "repo"));
}

#[test]
fn equivalent_clones_by_remote_share_a_key() {
  let tmp = tempfile::tempdir().unwrap();
  let urls = ["https://github.com/Org/Repo.git", "ssh://git@github.com:22/org/repo", "git@github.com:org/repo.git"];
  let keys: Vec<Identity> = urls
    .iter()
    .enumerate()
    .map(|(i, url)| resolve(&repo(&tmp.path().join(format!("c{i}")), &[("origin", url)]), None))
    .collect();
  assert!(keys.iter().all(|k| *k == keys[0]), "{keys:#?}");
  assert_eq!(keys[0].source, Source::Remote);
  assert_eq!(keys[0].dir_name(), format!("repo-{}", &keys[0].key[3..19]));
}

#[test]
fn upstream_wins_over_origin_and_origin_over_the_first() {
  let tmp = tempfile::tempdir().unwrap();
  let both =
    repo(&tmp.path().join("a"), &[("mine", "git@h:me/x"), ("origin", "git@h:org/x"), ("upstream", "git@h:up/x")]);
  assert_eq!(resolve(&both, None).evidence, "h/up/x");
  let origin = repo(&tmp.path().join("b"), &[("mine", "git@h:me/x"), ("origin", "git@h:org/x")]);
  assert_eq!(resolve(&origin, None).evidence, "h/org/x");
  let first = repo(&tmp.path().join("c"), &[("mine", "git@h:me/x"), ("fork", "git@h:fork/x")]);
  assert_eq!(resolve(&first, None).evidence, "h/me/x");
}

#[test]
fn an_explicit_key_joins_two_repositories() {
  let tmp = tempfile::tempdir().unwrap();
  let a = repo(&tmp.path().join("a"), &[("origin", "git@github.com:org/a.git")]);
  let b = repo(&tmp.path().join("b"), &[]);
  let key = explicit_key("  Team Monorepo ", "memory.projectKey").unwrap();
  let (x, y) = (resolve(&a, Some(&key)), resolve(&b, Some(&key)));
  assert_eq!(x, y);
  assert_eq!((x.source, x.name.as_str(), x.evidence.as_str()), (Source::Explicit, "team-monorepo", "Team Monorepo"));
  assert_ne!(x.key, resolve(&a, None).key);
}

#[test]
fn a_similar_named_repository_stays_apart() {
  let tmp = tempfile::tempdir().unwrap();
  let keys: Vec<String> =
    ["git@github.com:org/repo.git", "git@github.com:org/repo2.git", "git@github.com:other/repo.git"]
      .iter()
      .enumerate()
      .map(|(i, url)| resolve(&repo(&tmp.path().join(format!("r{i}")), &[("origin", url)]), None).key)
      .collect();
  assert!(keys[0] != keys[1] && keys[0] != keys[2] && keys[1] != keys[2]);
  // Two unrelated repositories without remotes, both named "repo".
  let a = resolve(&repo(&tmp.path().join("x/repo"), &[]), None);
  let b = resolve(&repo(&tmp.path().join("y/repo"), &[]), None);
  assert_eq!((a.name.as_str(), b.name.as_str()), ("repo", "repo"));
  assert_ne!(a.key, b.key);
  assert_ne!(a.dir_name(), b.dir_name());
}

#[test]
fn a_moved_folder_with_the_same_remote_keeps_its_key() {
  let tmp = tempfile::tempdir().unwrap();
  let before = repo(&tmp.path().join("old/place"), &[("origin", "https://gitlab.com/group/sub/tool.git")]);
  let key = resolve(&before, None);
  let after = tmp.path().join("new-place");
  fs::rename(&before, &after).unwrap();
  assert_eq!(resolve(&after, None), key);
  assert_eq!(key.evidence, "gitlab.com/group/sub/tool");
}

#[test]
fn malformed_metadata_falls_back_to_the_cwd_and_says_so() {
  let tmp = tempfile::tempdir().unwrap();
  let case = |name: &str, setup: &dyn Fn(&Path)| {
    let dir = tmp.path().join(name);
    fs::create_dir_all(&dir).unwrap();
    setup(&dir);
    let identity = resolve(&dir, None);
    assert_eq!((identity.source, identity.key.clone()), (Source::Cwd, cwd_key(&dir)), "{name}");
    identity.fallback
  };
  let git_file = |text: &'static str| move |dir: &Path| fs::write(dir.join(".git"), text).unwrap();
  assert_eq!(case("garbage", &git_file("not a pointer\n")), Some(Fallback::GitFileMalformed));
  assert_eq!(case("empty-gitdir", &git_file("gitdir:   \n")), Some(Fallback::GitFileMalformed));
  assert_eq!(case("dangling", &git_file("gitdir: /nonexistent/x/.git/worktrees/y\n")), Some(Fallback::GitDirMissing));
  assert_eq!(
    case("no-head", &|dir: &Path| fs::create_dir_all(dir.join(".git")).unwrap()),
    Some(Fallback::GitDirInvalid)
  );
  let with_config = |config: &'static str| {
    move |dir: &Path| {
      repo(dir, &[]);
      fs::write(dir.join(".git/config"), config).unwrap();
    }
  };
  assert_eq!(case("bad-config", &with_config("[remote \"origin\"\n\turl = x\n")), Some(Fallback::ConfigMalformed));
  assert_eq!(case("bad-url", &with_config("[remote \"origin\"]\n\turl = https://\n")), Some(Fallback::RemoteMalformed));
  let conflict = "[remote \"origin\"]\n\turl = git@h:org/a\n\turl = git@h:org/b\n";
  assert_eq!(case("conflict", &with_config(conflict)), Some(Fallback::RemotesConflict));
  let bad_common = |dir: &Path| {
    let admin = dir.join("admin");
    fs::create_dir_all(&admin).unwrap();
    fs::write(admin.join("HEAD"), "ref: refs/heads/x\n").unwrap();
    fs::write(admin.join("commondir"), "../nowhere\n").unwrap();
    fs::write(dir.join(".git"), "gitdir: admin\n").unwrap();
  };
  assert_eq!(case("bad-commondir", &bad_common), Some(Fallback::CommonDirMalformed));
  let huge = |dir: &Path| {
    repo(dir, &[]);
    fs::write(dir.join(".git/config"), vec![b'#'; 2 * 1024 * 1024]).unwrap();
  };
  assert_eq!(case("huge-config", &huge), Some(Fallback::ConfigUnreadable));
  let gone = tmp.path().join("gone");
  let identity = resolve(&gone, None);
  assert_eq!(
    (identity.source, identity.fallback, identity.key.clone()),
    (Source::Cwd, Some(Fallback::CwdMissing), cwd_key(&gone))
  );
}

#[test]
fn a_directory_outside_any_repository_is_its_own_project() {
  let tmp = tempfile::tempdir().unwrap();
  let dir = tmp.path().join("Scratch Notes");
  fs::create_dir_all(&dir).unwrap();
  let identity = resolve(&dir, None);
  assert_eq!((identity.source, identity.fallback, identity.name.as_str()), (Source::Cwd, None, "scratch-notes"));
  assert_eq!(identity.key, cwd_key(&dir));
}

#[test]
fn a_local_path_remote_is_no_evidence_so_the_common_dir_decides() {
  let tmp = tempfile::tempdir().unwrap();
  let dir = repo(&tmp.path().join("mirror"), &[("origin", "/srv/git/tool.git")]);
  let identity = resolve(&dir, None);
  assert_eq!((identity.source, identity.name.as_str()), (Source::CommonDir, "mirror"));
}

#[test]
fn keys_are_versioned_and_dir_names_safe() {
  let tmp = tempfile::tempdir().unwrap();
  let identity = resolve(&repo(&tmp.path().join("r"), &[("origin", "git@h:Org/My.Tool.git")]), None);
  assert!(identity.key.starts_with("v1:") && identity.key.len() == 35, "{}", identity.key);
  assert_eq!(identity.dir_name(), format!("my.tool-{}", &identity.key[3..19]));
  assert_eq!(dir_name("v2:0123456789abcdef0123456789abcdef", "x"), None);
  assert_eq!(dir_name("v1:0123", "x"), None);
  assert_eq!(short_name("../..//"), "project");
  assert_eq!(short_name(".hidden"), "hidden");
  assert_eq!(short_name(&"a".repeat(60)).len(), 40);
  assert_eq!(short_name("Ünïcode Repo"), "n-code-repo");
  for bad in ["", "   ", "a\nb", &"k".repeat(257)] {
    assert!(explicit_key(bad, "memory.projectKey").is_err(), "{bad:?}");
  }
}

/// The real `git` binary (on PATH here and on CI): `git init`, a commit,
/// `git worktree add`, then a remote.
#[test]
fn real_git_worktrees_share_the_key() {
  let git = |dir: &Path, args: &[&str]| {
    std::process::Command::new("git")
      .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"])
      .args(args)
      .current_dir(dir)
      .output()
  };
  let tmp = tempfile::tempdir().unwrap();
  let main = tmp.path().join("proj");
  fs::create_dir_all(&main).unwrap();
  if git(&main, &["init", "-q"]).map(|o| !o.status.success()).unwrap_or(true) {
    eprintln!("git is not on PATH: real_git_worktrees_share_the_key skipped");
    return;
  }
  let run = |dir: &Path, args: &[&str]| assert!(git(dir, args).unwrap().status.success(), "git {args:?}");
  run(&main, &["commit", "-q", "--allow-empty", "-m", "init"]);
  run(&main, &["worktree", "add", "-q", "-b", "feature", "../proj-feature"]);
  let wt = tmp.path().join("proj-feature");
  let (a, b) = (resolve(&main, None), resolve(&wt, None));
  assert_eq!(a, b);
  assert_eq!((a.source, a.name.as_str()), (Source::CommonDir, "proj"));
  run(&main, &["remote", "add", "origin", "https://github.com/acme/proj.git"]);
  let (a, b) = (resolve(&main, None), resolve(&wt, None));
  assert_eq!(a, b);
  assert_eq!((a.source, a.evidence.as_str()), (Source::Remote, "github.com/acme/proj"));
}

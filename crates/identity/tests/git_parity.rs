//! Every answer the library reads from a repository is compared with what the real `git`
//! prints for the same folder.

mod common;

use std::path::{Path, PathBuf};

use common::{git, git_answer, git_says, init_repo, reference_identity, resolver, s, tempdir};
use transcope_identity::{git_facts, live_branch, Env, ProjectIdentity, ProjectResolver};

/// The library's facts, printed the way git prints them.
fn library_says(dir: &Path) -> common::GitSays {
    let facts = git_facts(dir);
    common::GitSays {
        common_dir: facts
            .as_ref()
            .map(|f| f.common_dir.to_string_lossy().into_owned())
            .unwrap_or_default(),
        toplevel: facts
            .as_ref()
            .and_then(|f| f.toplevel.as_ref())
            .map(|t| t.to_string_lossy().into_owned())
            .unwrap_or_default(),
        origin: facts
            .as_ref()
            .and_then(|f| f.origin_url.clone())
            .unwrap_or_default(),
    }
}

fn git_branch(dir: &Path) -> String {
    git_answer(dir, &["rev-parse", "--abbrev-ref", "HEAD"])
}

/// Asserts the library agrees with git on all four questions for `dir`, and that the
/// resolver's identity equals the reference's; returns the identity.
#[track_caller]
fn assert_parity(dir: &Path) -> Option<ProjectIdentity> {
    assert_eq!(
        library_says(dir),
        git_says(dir),
        "git facts for {}",
        dir.display()
    );
    assert_eq!(
        live_branch(dir),
        git_branch(dir),
        "branch for {}",
        dir.display()
    );
    // A home that contains none of these folders, so the scratchpad rule cannot apply.
    let identity = resolver(Path::new("/nonexistent-home"))
        .resolve(dir.to_str().unwrap(), &Env::new())
        .unwrap();
    let resolved = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    assert_eq!(
        identity,
        reference_identity(&resolved),
        "identity of {}",
        dir.display()
    );
    identity
}

#[test]
fn main_checkout_subdirectory_and_linked_worktree() {
    let (_tmp, root) = tempdir();
    let main = root.join("alpha");
    init_repo(&main, "main", true);
    git(
        &main,
        &[
            "remote",
            "add",
            "origin",
            "https://github.com/Fixture/Alpha.git",
        ],
    );
    std::fs::create_dir_all(main.join("src/deep")).unwrap();
    git(&main, &["worktree", "add", "-q", "-b", "one", "../one"]);
    let one = root.join("one");
    std::fs::create_dir_all(one.join("pkg")).unwrap();

    let id = assert_parity(&main).unwrap();
    assert_eq!(
        (
            id.project.as_str(),
            id.worktree.as_str(),
            id.remote.as_str(),
            id.project_id.as_str()
        ),
        ("alpha", "", "fixture/alpha", "github.com/fixture/alpha")
    );
    assert_eq!(live_branch(&main), "main");

    let id = assert_parity(&main.join("src/deep")).unwrap();
    assert_eq!(id.worktree, "");
    assert_eq!(id.cwd, main.join("src/deep").to_str().unwrap());

    let id = assert_parity(&one).unwrap();
    assert_eq!(
        (id.project.as_str(), id.worktree.as_str()),
        ("alpha", "one")
    );
    assert_eq!(
        live_branch(&one),
        "one",
        "a linked worktree has its own HEAD"
    );
    let id = assert_parity(&one.join("pkg")).unwrap();
    assert_eq!(id.worktree, "one");

    // A worktree nested inside the main checkout (as agents often place them).
    git(
        &main,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "nested",
            ".claude/worktrees/nested",
        ],
    );
    let nested = main.join(".claude/worktrees/nested");
    std::fs::create_dir_all(nested.join("a/b")).unwrap();
    let id = assert_parity(&nested.join("a/b")).unwrap();
    assert_eq!(
        (id.project.as_str(), id.worktree.as_str()),
        ("alpha", "nested")
    );
    assert_eq!(live_branch(&nested.join("a/b")), "nested");
    // The folder between the checkout and the worktree belongs to the main checkout.
    let id = assert_parity(&main.join(".claude/worktrees")).unwrap();
    assert_eq!(id.worktree, "");

    // An independent repository inside the checkout is its own project.
    init_repo(&main.join("vendor/inner"), "trunk", true);
    let id = assert_parity(&main.join("vendor/inner")).unwrap();
    assert_eq!(
        (id.project.as_str(), id.project_id.as_str()),
        ("inner", "unknown")
    );
    assert_eq!(live_branch(&main.join("vendor/inner")), "trunk");

    // Inside the git directories git has no work tree: worktree is "".
    for inside in [
        main.join(".git"),
        main.join(".git/objects"),
        main.join(".git/worktrees/one"),
    ] {
        let id = assert_parity(&inside).unwrap();
        assert_eq!(id.worktree, "", "{}", inside.display());
    }
}

#[test]
fn symlinked_folder_resolves_to_the_real_path() {
    let (_tmp, root) = tempdir();
    let main = root.join("real");
    init_repo(&main, "main", true);
    std::os::unix::fs::symlink(&main, root.join("link")).unwrap();
    let id = resolver(&root)
        .resolve(root.join("link").to_str().unwrap(), &Env::new())
        .unwrap()
        .unwrap();
    assert_eq!(id.cwd, main.to_str().unwrap());
    assert_eq!(id.project, "real");
    assert_eq!(
        live_branch(&root.join("link")),
        git_branch(&root.join("link"))
    );
}

#[test]
fn no_remote_gives_unknown_and_no_slug() {
    let (_tmp, root) = tempdir();
    let repo = root.join("lonely");
    init_repo(&repo, "main", true);
    let id = assert_parity(&repo).unwrap();
    assert_eq!(
        (id.project_id.as_str(), id.remote.as_str()),
        ("unknown", "")
    );
}

#[test]
fn remote_url_shapes_match_git_and_canonicalise() {
    let (_tmp, root) = tempdir();
    let repo = root.join("remotes");
    init_repo(&repo, "main", true);
    git(
        &repo,
        &["remote", "add", "origin", "https://example.com/a/b"],
    );
    let cases = [
        ("https://github.com/Owner/Repo.git", "github.com/owner/repo"),
        (
            "ssh://git@gitlab.example.com/Team/App.git",
            "gitlab.example.com/Team/App",
        ),
        (
            "ssh://gitlab.example.com/team/app",
            "gitlab.example.com/team/app",
        ),
        ("git@github.com:Owner/Repo.git", "github.com/owner/repo"),
        ("https://user:tok@github.com/o/r", "unknown"),
        ("https://github.com:443/o/r", "unknown"),
        ("ssh://git@example.com:22/o/r", "unknown"),
        ("http://github.com/o/r", "unknown"),
        ("https://GITHUB.COM/Some/Thing/", "github.com/some/thing"),
        (
            "https://Code.Example.ORG/Keep/Case",
            "code.example.org/Keep/Case",
        ),
        ("/srv/git/local.git", "unknown"),
    ];
    for (url, expected) in cases {
        git(&repo, &["remote", "set-url", "origin", url]);
        assert_eq!(git_facts(&repo).unwrap().origin_url.as_deref(), Some(url));
        let id = assert_parity(&repo).unwrap();
        assert_eq!(id.project_id, expected, "{url}");
        let slug = expected.split_once('/').map(|(_, s)| s).unwrap_or("");
        assert_eq!(id.remote, slug, "{url}");
    }
}

#[test]
fn remote_config_edge_cases_match_git() {
    let (_tmp, root) = tempdir();
    let repo = root.join("edges");
    init_repo(&repo, "main", true);

    // Several URLs: the first one; an empty value clears the ones before it.
    git(
        &repo,
        &[
            "config",
            "--add",
            "remote.origin.url",
            "https://one.example.com/a/b",
        ],
    );
    git(
        &repo,
        &[
            "config",
            "--add",
            "remote.origin.url",
            "https://two.example.com/a/b",
        ],
    );
    assert_parity(&repo);
    assert_eq!(library_says(&repo).origin, "https://one.example.com/a/b");
    git(&repo, &["config", "--add", "remote.origin.url", ""]);
    git(
        &repo,
        &[
            "config",
            "--add",
            "remote.origin.url",
            "https://three.example.com/a/b",
        ],
    );
    assert_parity(&repo);
    assert_eq!(library_says(&repo).origin, "https://three.example.com/a/b");

    // insteadOf: the longest matching prefix wins.
    git(
        &repo,
        &[
            "config",
            "url.https://rewritten.example.com/.insteadOf",
            "https://three.example.com/",
        ],
    );
    git(
        &repo,
        &[
            "config",
            "url.https://longer.example.com/x/.insteadOf",
            "https://three.example.com/a/",
        ],
    );
    assert_parity(&repo);
    assert_eq!(library_says(&repo).origin, "https://longer.example.com/x/b");

    // A remote with no URL left prints its own name.
    git(&repo, &["config", "--unset-all", "remote.origin.url"]);
    git(
        &repo,
        &[
            "config",
            "remote.origin.fetch",
            "+refs/heads/*:refs/remotes/origin/*",
        ],
    );
    assert_parity(&repo);
    assert_eq!(library_says(&repo).origin, "origin");

    // No origin at all (only another remote).
    git(&repo, &["remote", "remove", "origin"]);
    git(
        &repo,
        &["remote", "add", "upstream", "https://github.com/u/p"],
    );
    let id = assert_parity(&repo).unwrap();
    assert_eq!(id.project_id, "unknown");
}

#[test]
fn submodule_answers_like_git() {
    let (_tmp, root) = tempdir();
    let lib = root.join("libsrc");
    init_repo(&lib, "main", true);
    let sup = root.join("super");
    init_repo(&sup, "main", true);
    git(
        &sup,
        &["remote", "add", "origin", "https://example.com/team/super"],
    );
    git(
        &sup,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            lib.to_str().unwrap(),
            "vendor/lib",
        ],
    );
    let sub = sup.join("vendor/lib");
    assert!(
        sub.join(".git").is_file(),
        "a submodule checkout has a gitfile"
    );

    let id = assert_parity(&sub).unwrap();
    // git's common dir is <super>/.git/modules/vendor/lib, so the root is .../modules/vendor.
    assert_eq!(
        git_facts(&sub).unwrap().common_dir,
        sup.join(".git/modules/vendor/lib")
    );
    assert_eq!(id.project, "vendor");
    assert_eq!(id.worktree, "lib");
    // `submodule add` from a local path makes that path the submodule's origin.
    assert_eq!(library_says(&sub).origin, lib.to_str().unwrap());
    assert_eq!(id.project_id, "unknown");
    // The submodule's own git dir has core.worktree, so git does name a top level there.
    let id = assert_parity(&sup.join(".git/modules/vendor/lib")).unwrap();
    assert_eq!(id.worktree, "lib");
    // The superproject is untouched.
    let id = assert_parity(&sup).unwrap();
    assert_eq!((id.project.as_str(), id.worktree.as_str()), ("super", ""));
}

#[test]
fn branches_detached_unborn_and_ambiguous() {
    let (_tmp, root) = tempdir();

    // git init -b feature, no commit: unborn → "".
    let unborn = root.join("unborn");
    init_repo(&unborn, "feature", false);
    assert_parity(&unborn);
    assert_eq!(live_branch(&unborn), "");
    // ... unless a file named HEAD sits in the folder: git then echoes the argument.
    std::fs::write(unborn.join("HEAD"), "").unwrap();
    assert_eq!(live_branch(&unborn), "HEAD");
    assert_eq!(git_branch(&unborn), "HEAD");
    std::fs::remove_file(unborn.join("HEAD")).unwrap();

    // One empty commit → "feature".
    git(&unborn, &["commit", "-q", "--allow-empty", "-m", "first"]);
    assert_eq!(live_branch(&unborn), "feature");
    assert_parity(&unborn);

    // Detached.
    git(&unborn, &["checkout", "-q", "--detach"]);
    assert_eq!(live_branch(&unborn), "HEAD");
    assert_parity(&unborn);

    // A tag with the branch's name makes git say heads/<branch>.
    git(&unborn, &["checkout", "-q", "feature"]);
    git(&unborn, &["tag", "feature"]);
    assert_eq!(live_branch(&unborn), "heads/feature");
    assert_parity(&unborn);
    git(&unborn, &["config", "core.warnAmbiguousRefs", "false"]);
    assert_parity(&unborn);
    // A remote-tracking ref of the same name only counts in strict mode.
    git(&unborn, &["tag", "-d", "feature"]);
    git(&unborn, &["update-ref", "refs/remotes/feature", "HEAD"]);
    assert_eq!(live_branch(&unborn), "feature");
    assert_parity(&unborn);
    git(&unborn, &["config", "core.warnAmbiguousRefs", "true"]);
    assert_eq!(live_branch(&unborn), "heads/feature");
    assert_parity(&unborn);

    // Packed refs are read too.
    git(&unborn, &["update-ref", "-d", "refs/remotes/feature"]);
    git(&unborn, &["checkout", "-q", "-b", "packed/branch"]);
    git(&unborn, &["pack-refs", "--all"]);
    assert_eq!(live_branch(&unborn), "packed/branch");
    assert_parity(&unborn);
}

#[test]
fn bare_repositories() {
    let (_tmp, root) = tempdir();
    let bare = root.join("store.git");
    std::fs::create_dir(&bare).unwrap();
    git(&bare, &["init", "-q", "--bare", "-b", "main"]);
    // Unborn bare repository: git prints "HEAD" at its top (the HEAD file), "" below it.
    assert_parity(&bare);
    assert_eq!(live_branch(&bare), "HEAD");
    assert_parity(&bare.join("refs"));
    assert_eq!(live_branch(&bare.join("refs")), "");
    let id = assert_parity(&bare).unwrap();
    assert_eq!(
        (id.project.as_str(), id.worktree.as_str()),
        (root.file_name().unwrap().to_str().unwrap(), "")
    );

    // A born bare repository and a worktree of it.
    let seed = root.join("seed");
    init_repo(&seed, "main", true);
    git(&seed, &["push", "-q", bare.to_str().unwrap(), "main"]);
    assert_eq!(live_branch(&bare), "main");
    assert_parity(&bare.join("refs"));
    git(&bare, &["worktree", "add", "-q", "../bw", "main"]);
    let id = assert_parity(&root.join("bw")).unwrap();
    assert_eq!(id.worktree, "bw");
    assert_eq!(live_branch(&root.join("bw")), "main");
}

#[test]
fn folders_git_rejects() {
    let (_tmp, root) = tempdir();
    let plain = root.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    assert_eq!(assert_parity(&plain), None);
    assert_eq!(live_branch(&plain), "");
    assert_eq!(live_branch(Path::new("")), "");

    // A folder that no longer exists, and a file, even inside a repository.
    let repo = root.join("repo");
    init_repo(&repo, "main", true);
    let gone: PathBuf = repo.join("deleted/dir");
    assert!(git_facts(&gone).is_none());
    assert_eq!(live_branch(&gone), git_branch(&gone));
    std::fs::write(repo.join("file.txt"), "x").unwrap();
    assert!(git_facts(&repo.join("file.txt")).is_none());
    assert_eq!(live_branch(&repo.join("file.txt")), "");
    assert_eq!(git_branch(&repo.join("file.txt")), "");

    // A gitfile pointing nowhere is fatal for git, even inside another repository.
    let broken = repo.join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join(".git"), "gitdir: /nonexistent/worktrees/x\n").unwrap();
    assert_parity(&broken);
    assert_eq!(live_branch(&broken), "");
}

/// A resolver that has already opened a work tree answers folders below it without
/// opening the repository again, and must still answer exactly as git does wherever git
/// would stop earlier: a nested repository, a submodule-style `.git` file, a bare
/// repository, a folder inside `.git`, a linked worktree inside the work tree.
#[test]
fn a_warm_resolver_answers_nested_folders_as_git_does() {
    let (_tmp, home) = tempdir();
    let outer = home.join("outer");
    init_repo(&outer, "main", true);
    git(
        &outer,
        &["remote", "add", "origin", "https://github.com/o/outer"],
    );
    let plain = outer.join("src/deep/er");
    std::fs::create_dir_all(&plain).unwrap();
    let nested = outer.join("vendor/nested");
    init_repo(&nested, "dev", true);
    git(
        &nested,
        &["remote", "add", "origin", "https://github.com/o/nested"],
    );
    std::fs::create_dir_all(nested.join("lib")).unwrap();
    // A `.git` file pointing at a separate git directory (what submodules use).
    let linked = outer.join("mods/linked");
    std::fs::create_dir_all(linked.join("inner")).unwrap();
    let separate = home.join("separate.git");
    git(
        &home,
        &["init", "-q", "--separate-git-dir", s(&separate), s(&linked)],
    );
    let bare = outer.join("store/bare.git");
    std::fs::create_dir_all(&bare).unwrap();
    git(&bare, &["init", "-q", "--bare"]);
    let worktree = outer.join("trees/feature");
    git(
        &outer,
        &["worktree", "add", "-q", "-b", "feature", s(&worktree)],
    );
    std::fs::create_dir_all(worktree.join("pkg")).unwrap();
    let folders = [
        outer.join("src"),
        plain.clone(),
        nested.clone(),
        nested.join("lib"),
        linked.clone(),
        linked.join("inner"),
        bare.clone(),
        bare.join("refs"),
        outer.join(".git"),
        outer.join(".git/refs/heads"),
        worktree.clone(),
        worktree.join("pkg"),
    ];
    let r = resolver(&home);
    r.resolve_shared(s(&outer), &Env::new()).unwrap();
    for folder in &folders {
        let warm = r.resolve_shared(s(folder), &Env::new()).unwrap();
        let cold = resolver(&home)
            .resolve_shared(s(folder), &Env::new())
            .unwrap();
        assert_eq!(warm, cold, "{}", folder.display());
        assert_eq!(warm, reference_identity(folder), "{}", folder.display());
    }
    // The plain subfolders did not open the repository again.
    let before = r.probes();
    let other = outer.join("src/other");
    std::fs::create_dir_all(&other).unwrap();
    r.resolve_shared(s(&other), &Env::new()).unwrap();
    assert_eq!(r.probes(), before);
}

//! Issue 13, item 3: a deep `cwd` cost the square of its depth (every prefix joined and
//! `lstat`ed afresh). Resolution is linear now, and a folder that does not exist has no
//! repository whichever folder of the same work tree was resolved before it, as `git -C`
//! (which cannot enter it) answers.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{git, git_raw, init_repo, resolver, s, tempdir};
use transcope_identity::{Env, ProjectResolver};

/// `base` followed by `depth` components `e`.
fn deep(base: &Path, depth: usize) -> PathBuf {
    let mut p = base.as_os_str().to_owned();
    for _ in 0..depth {
        p.push("/e");
    }
    PathBuf::from(p)
}

#[test]
fn a_missing_folder_in_a_work_tree_has_no_repository_in_either_order() {
    let (_tmp, home) = tempdir();
    let repo = home.join("alpha");
    init_repo(&repo, "main", true);
    git(
        &repo,
        &["remote", "add", "origin", "https://github.com/o/alpha"],
    );
    let missing = repo.join("not-made/below");
    // git cannot enter it: no repository.
    assert!(!git_raw(&missing, &["rev-parse", "--show-toplevel"])
        .status
        .success());
    let real = repo.join("src");
    std::fs::create_dir(&real).unwrap();

    // Asked first, and asked after its work tree was opened: the same answer.
    let first = resolver(&home).resolve(s(&missing), &Env::new()).unwrap();
    let mut warm = resolver(&home);
    assert!(warm.resolve(s(&repo), &Env::new()).unwrap().is_some());
    let after = warm.resolve(s(&missing), &Env::new()).unwrap();
    assert_eq!(first, None);
    assert_eq!(
        after, None,
        "a missing folder borrowed its work tree's identity"
    );
    // A real folder below it still takes the shortcut (no second probe) and the project.
    let probes = warm.probes();
    let src = warm.resolve(s(&real), &Env::new()).unwrap().unwrap();
    assert_eq!(src.project_id, "github.com/o/alpha");
    assert_eq!(warm.probes(), probes);
}

/// The inputs: `'/' + 'e/' * 131072` (3.5 s in a release build before), and a
/// megabyte of path below a work tree already opened (each ancestor was `lstat`ed twice
/// for `.git` and `HEAD`, each a copy of the whole path). Unoptimised, both now take
/// milliseconds; the bound leaves room for a loaded machine.
#[test]
fn deep_folders_resolve_in_time_linear_in_their_depth() {
    let (_tmp, home) = tempdir();
    let repo = home.join("alpha");
    init_repo(&repo, "main", true);
    let mut r = resolver(&home);
    assert!(r.resolve(s(&repo), &Env::new()).unwrap().is_some());
    for (base, depth) in [(PathBuf::from("/"), 131_072), (repo.clone(), 524_288)] {
        let folder = deep(&base, depth);
        let started = Instant::now();
        let identity = r.resolve(s(&folder), &Env::new()).unwrap();
        let took = started.elapsed();
        assert_eq!(identity, None, "{depth} below {}", base.display());
        assert!(
            took < Duration::from_secs(3),
            "{depth} components below {} took {took:?}",
            base.display()
        );
    }
}

//! scope-log.md §3.3 rules beyond plain git: scratchpad, registered id, swarm, aliases,
//! caching, and the `canonical_remote` table.

mod common;

use std::path::{Path, PathBuf};

use common::{env, git, init_repo, resolver, s, tempdir};
use transcope_identity::{
    canonical_remote, AliasMap, Env, GitResolver, ProjectIdentity, ProjectResolver, ResolveError,
    ResolverConfig,
};

#[test]
fn canonical_remote_table() {
    let cases = [
        // accepted prefixes
        ("https://github.com/o/r", "github.com/o/r"),
        ("ssh://github.com/o/r", "github.com/o/r"),
        ("ssh://git@github.com/o/r", "github.com/o/r"),
        ("git@github.com:o/r", "github.com/o/r"),
        // rejected prefixes
        ("http://github.com/o/r", "unknown"),
        ("git://github.com/o/r", "unknown"),
        ("ftp://github.com/o/r", "unknown"),
        ("github.com/o/r", "unknown"),
        ("HTTPS://github.com/o/r", "unknown"),
        ("", "unknown"),
        // separator must be ':' exactly for git@, '/' otherwise
        ("git@github.com/o/r", "unknown"),
        ("https://github.com:o/r", "unknown"),
        ("ssh://git@github.com:o/r", "unknown"),
        // credentials and ports
        ("https://user:tok@github.com/o/r", "unknown"),
        ("https://user@github.com/o/r", "unknown"),
        ("https://github.com:443/o/r", "unknown"),
        ("ssh://git@github.com:22/o/r", "unknown"),
        ("git@github.com:22/o/r", "unknown"),
        // host shape
        ("https://localhost/o/r", "unknown"),
        ("https://a..b.com/o/r", "unknown"),
        ("https://-a.com/o/r", "unknown"),
        ("https://a.com-/o/r", "unknown"),
        ("https://.a.com/o/r", "unknown"),
        ("https://a_b.com/o/r", "unknown"),
        ("https://a-b.c-d.com/o/r", "a-b.c-d.com/o/r"),
        ("https://10.0.0.1/o/r", "10.0.0.1/o/r"),
        // owner / repo shape
        ("https://github.com/o", "unknown"),
        ("https://github.com/o/r/x", "unknown"),
        ("https://github.com/o/r//", "unknown"),
        ("https://github.com//r", "unknown"),
        ("https://github.com/o/r%20x", "unknown"),
        ("https://github.com/o/r/", "github.com/o/r"),
        (
            "https://gitlab.com/my.org/my_repo-1",
            "gitlab.com/my.org/my_repo-1",
        ),
        // .git suffix: once, and the rest must remain a valid repo
        ("https://github.com/o/r.git", "github.com/o/r"),
        ("https://github.com/o/r.git/", "github.com/o/r"),
        ("https://github.com/o/r.git.git", "github.com/o/r.git"),
        ("https://github.com/o/.git", "unknown"),
        ("https://github.com/o/..git", "unknown"),
        ("https://github.com/o/...git", "unknown"),
        ("https://github.com/./r", "unknown"),
        ("https://github.com/../r", "unknown"),
        ("https://github.com/o/.", "unknown"),
        ("https://github.com/o/..", "unknown"),
        ("https://github.com/.../r", "github.com/.../r"),
        // case: host always lowercased, the whole id only for github.com
        ("https://GitHub.COM/Owner/Repo", "github.com/owner/repo"),
        ("git@GITHUB.com:Owner/Repo.git", "github.com/owner/repo"),
        (
            "https://GitLab.Example.COM/Owner/Repo",
            "gitlab.example.com/Owner/Repo",
        ),
        (
            "https://www.github.com/Owner/Repo",
            "www.github.com/Owner/Repo",
        ),
        // whole-string match
        (" https://github.com/o/r", "unknown"),
        ("https://github.com/o/r ", "unknown"),
        ("https://github.com/o/r\n", "unknown"),
    ];
    for (url, expected) in cases {
        assert_eq!(canonical_remote(url), expected, "{url:?}");
    }
}

#[test]
fn scratchpad_rule_needs_a_name_and_something_below_it() {
    let (_tmp, home) = tempdir();
    std::fs::create_dir_all(home.join("scratchpad/demo/notes")).unwrap();
    let mut r = resolver(&home);
    let id = r
        .resolve("~/scratchpad/demo/notes", &Env::new())
        .unwrap()
        .unwrap();
    let mut expected = ProjectIdentity::new("demo", "demo");
    expected.cwd = s(&home.join("scratchpad/demo/notes")).to_owned();
    assert_eq!(id, expected);

    // Only the name: no identity.
    assert_eq!(r.resolve("~/scratchpad/demo", &Env::new()).unwrap(), None);
    // A folder that no longer exists still resolves (Path.resolve is not strict).
    let id = r
        .resolve(s(&home.join("scratchpad/gone/a/b")), &Env::new())
        .unwrap()
        .unwrap();
    assert_eq!(
        (id.project.as_str(), id.cwd.as_str()),
        ("gone", s(&home.join("scratchpad/gone/a/b")))
    );
    // Outside the scratchpad and outside git: nothing, never a basename project.
    std::fs::create_dir_all(home.join("elsewhere/x")).unwrap();
    assert_eq!(
        r.resolve(s(&home.join("elsewhere/x")), &Env::new())
            .unwrap(),
        None
    );
    assert_eq!(r.resolve("", &Env::new()).unwrap(), None);
    // A repository inside the scratchpad is a repository first.
    init_repo(&home.join("scratchpad/demo/repo"), "main", true);
    let id = r
        .resolve("~/scratchpad/demo/repo", &Env::new())
        .unwrap()
        .unwrap();
    assert_eq!(
        (id.project.as_str(), id.project_id.as_str()),
        ("repo", "unknown")
    );
}

#[test]
fn registered_project_id_applies_outside_git_only() {
    let (_tmp, home) = tempdir();
    let plain = home.join("plain-folder");
    std::fs::create_dir_all(&plain).unwrap();
    let repo = home.join("gitrepo");
    init_repo(&repo, "main", true);
    git(
        &repo,
        &["remote", "add", "origin", "git@github.com:o/gitrepo.git"],
    );
    let mut r = resolver(&home);

    let good = env(&[("AGENTIHOOKS_PROJECT_ID", "local:my-proj.1")]);
    let id = r.resolve(s(&plain), &good).unwrap().unwrap();
    let mut expected = ProjectIdentity::new("plain-folder", "plain-folder");
    expected.cwd = s(&plain).to_owned();
    expected.project_id = "local:my-proj.1".into();
    assert_eq!(id, expected);

    // Inside git the registered id is ignored, even an invalid one.
    let bad = env(&[("AGENTIHOOKS_PROJECT_ID", "not-local")]);
    let id = r.resolve(s(&repo), &bad).unwrap().unwrap();
    assert_eq!(id.project_id, "github.com/o/gitrepo");

    // Outside git an invalid id is an error.
    for invalid in [
        "not-local",
        "local:",
        "local:-x",
        "local:a/b",
        &format!("local:{}", "a".repeat(129)),
    ] {
        let err = r
            .resolve(s(&plain), &env(&[("AGENTIHOOKS_PROJECT_ID", invalid)]))
            .unwrap_err();
        assert!(
            matches!(&err, ResolveError::InvalidProjectId { id } if id == invalid),
            "{invalid}: {err}"
        );
    }
    // An empty value is unset; an empty folder never registers.
    assert_eq!(
        r.resolve(s(&plain), &env(&[("AGENTIHOOKS_PROJECT_ID", "")]))
            .unwrap(),
        None
    );
    assert_eq!(r.resolve("", &bad).unwrap(), None);

    // A scratchpad identity keeps its project and takes the registered id.
    std::fs::create_dir_all(home.join("scratchpad/pad/x")).unwrap();
    let id = r.resolve("~/scratchpad/pad/x", &good).unwrap().unwrap();
    assert_eq!(
        (id.project.as_str(), id.project_id.as_str()),
        ("pad", "local:my-proj.1")
    );
    // A folder that does not exist registers under its basename.
    let id = r
        .resolve(s(&home.join("missing/leaf")), &good)
        .unwrap()
        .unwrap();
    assert_eq!(
        (id.project.as_str(), id.cwd.as_str()),
        ("leaf", s(&home.join("missing/leaf")))
    );
}

/// A main checkout with origin, a linked worktree, and an unrelated repository.
struct SwarmFixture {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    main: PathBuf,
    worktree: PathBuf,
    other: PathBuf,
}

fn swarm_fixture(config_json: impl FnOnce(&Path) -> String) -> SwarmFixture {
    let (tmp, home) = tempdir();
    let main = home.join("alpha");
    init_repo(&main, "main", true);
    git(
        &main,
        &[
            "remote",
            "add",
            "origin",
            "https://github.com/fixture/alpha",
        ],
    );
    git(&main, &["worktree", "add", "-q", "-b", "one", "../one"]);
    let other = home.join("beta");
    init_repo(&other, "main", true);
    git(
        &other,
        &["remote", "add", "origin", "https://github.com/fixture/beta"],
    );
    let config = home.join(".agentihooks/swarm/fixture/config.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, config_json(&main)).unwrap();
    SwarmFixture {
        _tmp: tmp,
        worktree: home.join("one"),
        home,
        main,
        other,
    }
}

#[test]
fn swarm_repo_decides_the_project() {
    let f = swarm_fixture(|main| format!(r#"{{"repo": "{}"}}"#, main.display()));
    let mut r = resolver(&f.home);
    let swarm = env(&[("AGENTIHOOKS_SWARM", "fixture")]);

    // Working in a worktree of the swarm's repo: that worktree, cwd as given.
    let raw = format!("{}/", f.worktree.display());
    let id = r.resolve(&raw, &swarm).unwrap().unwrap();
    assert_eq!(
        id,
        ProjectIdentity {
            project: "alpha".into(),
            repo: "alpha".into(),
            worktree: "one".into(),
            cwd: raw.clone(),
            remote: "fixture/alpha".into(),
            project_id: "github.com/fixture/alpha".into(),
        }
    );

    // Working in an unrelated repository: the swarm repo's identity and worktree.
    let id = r.resolve(s(&f.other), &swarm).unwrap().unwrap();
    assert_eq!((id.project.as_str(), id.worktree.as_str()), ("alpha", ""));
    assert_eq!(id.cwd, s(&f.other));

    // No working folder: cwd is the repo path.
    let id = r.resolve("", &swarm).unwrap().unwrap();
    assert_eq!(id.cwd, s(&f.main));

    // Without the swarm variable, or with an unknown swarm, the folder decides.
    let id = r.resolve(s(&f.other), &Env::new()).unwrap().unwrap();
    assert_eq!(id.project, "beta");
    let id = r
        .resolve(s(&f.other), &env(&[("AGENTIHOOKS_SWARM", "nope")]))
        .unwrap()
        .unwrap();
    assert_eq!(id.project, "beta");
}

#[test]
fn unusable_swarm_configs_fall_through() {
    for config in [
        "not json".to_owned(),
        "[1, 2]".to_owned(),
        r#"{"repo": 5}"#.to_owned(),
        r#"{"repo": ""}"#.to_owned(),
        r#"{"other": "x"}"#.to_owned(),
        // a repo path with no identity (not git, not scratchpad)
        r#"{"repo": "/nonexistent/path"}"#.to_owned(),
    ] {
        let f = swarm_fixture(|_| config.clone());
        let mut r = resolver(&f.home);
        let id = r
            .resolve(s(&f.other), &env(&[("AGENTIHOOKS_SWARM", "fixture")]))
            .unwrap()
            .unwrap();
        assert_eq!(id.project, "beta", "{config}");
    }
}

#[test]
fn swarm_repo_outside_git_uses_registration_and_path_containment() {
    let (_tmp, home) = tempdir();
    let repo = home.join("docs-site");
    std::fs::create_dir_all(repo.join("pages")).unwrap();
    let config = home.join(".agentihooks/swarm/s/config.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, r#"{"repo": "~/docs-site"}"#).unwrap();
    let mut r = resolver(&home);

    // Not git, not scratchpad, not registered: no swarm identity, and the folder has none.
    let e = env(&[("AGENTIHOOKS_SWARM", "s")]);
    assert_eq!(r.resolve(s(&repo.join("pages")), &e).unwrap(), None);

    // Registered: the repo's basename identity, cwd as given.
    let e = env(&[
        ("AGENTIHOOKS_SWARM", "s"),
        ("AGENTIHOOKS_PROJECT_ID", "local:docs"),
    ]);
    let id = r.resolve(s(&repo.join("pages")), &e).unwrap().unwrap();
    assert_eq!(
        (
            id.project.as_str(),
            id.project_id.as_str(),
            id.cwd.as_str(),
            id.worktree.as_str()
        ),
        ("docs-site", "local:docs", s(&repo.join("pages")), "")
    );
    // An invalid registration raises through the swarm path too.
    let e = env(&[
        ("AGENTIHOOKS_SWARM", "s"),
        ("AGENTIHOOKS_PROJECT_ID", "bad"),
    ]);
    assert!(matches!(
        r.resolve(s(&repo.join("pages")), &e),
        Err(ResolveError::InvalidProjectId { .. })
    ));
}

#[test]
fn resolutions_are_cached_per_folder_and_shared_by_clones() {
    let (_tmp, home) = tempdir();
    let repo = home.join("cached");
    init_repo(&repo, "main", true);
    git(
        &repo,
        &["remote", "add", "origin", "https://github.com/o/cached"],
    );
    let mut r = resolver(&home);
    assert_eq!(r.probes(), 0);
    let first = r.resolve(s(&repo), &Env::new()).unwrap();
    assert_eq!(r.probes(), 1);

    // The origin changes on disk, but this run keeps its answer and opens nothing.
    git(
        &repo,
        &[
            "remote",
            "set-url",
            "origin",
            "https://github.com/o/changed",
        ],
    );
    let second = r.resolve(s(&repo), &Env::new()).unwrap();
    assert_eq!(second, first);
    assert_eq!(r.probes(), 1);
    // Another env for the same folder is answered from the same cache.
    let third = r
        .resolve(s(&repo), &env(&[("AGENTIHOOKS_PROJECT_ID", "local:x")]))
        .unwrap();
    assert_eq!(third, first);
    assert_eq!(r.probes(), 1);

    // A clone shares the cache, also from another thread.
    let clone = r.clone();
    let repo2 = repo.clone();
    let from_thread =
        std::thread::spawn(move || clone.resolve_shared(s(&repo2), &Env::new()).unwrap())
            .join()
            .unwrap();
    assert_eq!(from_thread, first);
    assert_eq!(r.probes(), 1);

    // A new run sees the change.
    r.clear_cache();
    let fresh = r.resolve(s(&repo), &Env::new()).unwrap().unwrap();
    assert_eq!(fresh.project_id, "github.com/o/changed");
    assert_eq!(r.probes(), 2);
}

const CHAIN: &str = r#"{"schema_version": "2.0", "aliases": {
    "github.com/o/old": "github.com/o/mid",
    "github.com/o/mid": "github.com/o/new"
}}"#;

#[test]
fn aliases_rewrite_project_ids_transitively() {
    let (_tmp, home) = tempdir();
    let repo = home.join("old");
    init_repo(&repo, "main", true);
    git(
        &repo,
        &["remote", "add", "origin", "git@github.com:O/Old.git"],
    );
    let config = ResolverConfig::new(&home, home.join(".agentihooks"))
        .with_aliases(AliasMap::from_json_str(CHAIN).unwrap());
    let mut r = GitResolver::new(config);
    let id = r.resolve(s(&repo), &Env::new()).unwrap().unwrap();
    assert_eq!(id.project_id, "github.com/o/new");
    assert_eq!(id.remote, "o/old", "remote keeps the origin's slug");

    let map = AliasMap::from_json_str(CHAIN).unwrap();
    assert_eq!(map.rewrite("github.com/o/mid"), "github.com/o/new");
    assert_eq!(map.rewrite("github.com/o/new"), "github.com/o/new");
    assert_eq!(map.rewrite("unknown"), "unknown");
    assert_eq!(map.len(), 2);
}

#[test]
fn alias_cycles_are_rejected() {
    for doc in [
        r#"{"schema_version": "2.0", "aliases": {"github.com/a/a": "github.com/a/a"}}"#,
        r#"{"schema_version": "2.0", "aliases": {"github.com/a/a": "github.com/b/b", "github.com/b/b": "github.com/a/a"}}"#,
        r#"{"schema_version": "2.0", "aliases": {"x.org/a/a": "x.org/b/b", "x.org/b/b": "x.org/c/c", "x.org/c/c": "x.org/b/b"}}"#,
    ] {
        let err = AliasMap::from_json_str(doc).unwrap_err();
        assert!(
            matches!(err, ResolveError::AliasCycle { .. }),
            "{doc}: {err}"
        );
    }
}

#[test]
fn alias_documents_are_validated_strictly() {
    let ok = r#"{"schema_version": "2.0", "aliases": {}}"#;
    assert!(AliasMap::from_json_str(ok).unwrap().is_empty());
    for doc in [
        r#"{"schema_version": 2.0, "aliases": {}}"#,
        r#"{"schema_version": "1.0", "aliases": {}}"#,
        r#"{"aliases": {}}"#,
        r#"{"schema_version": "2.0"}"#,
        r#"{"schema_version": "2.0", "aliases": {}, "extra": 1}"#,
        r#"{"schema_version": "2.0", "aliases": []}"#,
        r#"{"schema_version": "2.0", "aliases": {"github.com/a/a": 1}}"#,
        r#"{"schema_version": "2.0", "aliases": {"unknown": "github.com/a/a"}}"#,
        r#"{"schema_version": "2.0", "aliases": {"github.com/a/a": "unknown"}}"#,
        r#"{"schema_version": "2.0", "aliases": {"github.com/A/a": "github.com/b/b"}}"#,
        r#"{"schema_version": "2.0", "aliases": {"github.com/a/a.git": "github.com/b/b"}}"#,
        r#"{"schema_version": "2.0", "aliases": {"local:a": "github.com/b/b"}}"#,
        r#"{"schema_version": "2.0", "aliases": {"github.com/a/a": "https://github.com/b/b"}}"#,
        r#"["schema_version"]"#,
        "not json",
    ] {
        let err = AliasMap::from_json_str(doc).unwrap_err();
        assert!(
            matches!(err, ResolveError::InvalidAliasMap { .. }),
            "{doc}: {err}"
        );
    }
    // Hosts other than github.com keep their case.
    assert!(AliasMap::from_json_str(
        r#"{"schema_version": "2.0", "aliases": {"gitlab.com/A/b": "gitlab.com/C/d"}}"#
    )
    .is_ok());
}

#[test]
fn config_from_env_finds_homes_and_the_alias_file() {
    let (_tmp, home) = tempdir();
    let e = env(&[("HOME", s(&home))]);
    let config = ResolverConfig::from_env(&e).unwrap();
    assert_eq!(config.agentihooks_home, home.join(".agentihooks"));
    assert_eq!(config.aliases, None);

    let e = env(&[("HOME", s(&home)), ("AGENTIHOOKS_HOME", "~/ah")]);
    let config = ResolverConfig::from_env(&e).unwrap();
    assert_eq!(config.agentihooks_home, home.join("ah"));
    assert_eq!(
        config.swarm_config_path("s"),
        home.join("ah/swarm/s/config.json")
    );

    std::fs::create_dir_all(home.join("ah")).unwrap();
    std::fs::write(home.join("ah/project-aliases.json"), CHAIN).unwrap();
    let config = ResolverConfig::from_env(&e).unwrap();
    assert_eq!(
        config.aliases.unwrap().rewrite("github.com/o/old"),
        "github.com/o/new"
    );

    std::fs::write(
        home.join("ah/project-aliases.json"),
        r#"{"schema_version": "2.0"}"#,
    )
    .unwrap();
    assert!(matches!(
        ResolverConfig::from_env(&e),
        Err(ResolveError::InvalidAliasMap { .. })
    ));
    assert!(matches!(
        ResolverConfig::from_env(&Env::new()),
        Err(ResolveError::NoHome)
    ));
}

//! Shards: every layout names its file's family root (a sub-agent's parent session, a
//! Codex fork's source), and a file goes to its root's shard, never to its own key's.

use std::path::{Path, PathBuf};

use transcope_backfill::{backfill, discover, family, Options, Shard};

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// The sample archive, the Gemini CLI sessions and a Codex family (written under
/// `dir`): a sub-agent of every layout.
fn archive(dir: &Path) -> Vec<PathBuf> {
    let codex = dir.join("codex/sessions");
    transcope_testkit::codex_family(&codex).unwrap();
    vec![
        testdata().join("sample-archive"),
        testdata().join("public/gemini/home/.gemini/tmp"),
        codex,
    ]
}

#[test]
fn every_layout_names_its_familys_root() {
    let dir = tempfile::tempdir().unwrap();
    let (jobs, problems) = discover(&archive(dir.path()), &transcope_testkit::engine::adapters());
    assert!(problems.is_empty(), "{problems:?}");
    let registry = transcope_testkit::engine::adapters();
    let mut children = Vec::new();
    for job in &jobs {
        let Ok((key, root)) = family(&registry, &job.path) else {
            continue;
        };
        if key != root {
            children.push((key, root));
        }
    }
    children.sort();
    let [source, fork, child] = transcope_testkit::CODEX_FAMILY;
    let want = [
        // A Codex fork goes with its source, a sub-agent thread with its parent.
        (fork, source),
        (child, source),
        // Claude Code: `<sid>/subagents/agent-<aid>.jsonl` (the session from the
        // folder)…
        (
            "29ccd257-68b1-427f-ae5f-6524b7cb6f20.a2271d1",
            "29ccd257-68b1-427f-ae5f-6524b7cb6f20",
        ),
        // Gemini CLI: `chats/<parent>/<id>.jsonl`.
        (
            "5f1c9a2e-6b7d-4c1e-9a0b-3d2e1f000001.0c9d8e7f-0000-4000-8000-00000000a001",
            "5f1c9a2e-6b7d-4c1e-9a0b-3d2e1f000001",
        ),
        // … and a flat `agent-<aid>.jsonl` (the session from its first sessionId).
        (
            "7864f562-717b-4d70-a1cb-b588f7826a1a.3ea04571",
            "7864f562-717b-4d70-a1cb-b588f7826a1a",
        ),
        (
            "ef958aa1-0e93-49f0-bb71-150f63befcd1.a36efb2a1231c41e2",
            "ef958aa1-0e93-49f0-bb71-150f63befcd1",
        ),
        (
            "ef958aa1-0e93-49f0-bb71-150f63befcd1.a4ca7529859c158c2",
            "ef958aa1-0e93-49f0-bb71-150f63befcd1",
        ),
    ]
    .map(|(k, r)| (k.to_owned(), r.to_owned()));
    assert_eq!(children, want);
}

/// A sub-agent whose own key hashes elsewhere is read by its root's shard: its log is
/// written there, and the shard its key would pick counts it among the other shards'.
#[test]
fn a_sub_agent_goes_to_its_roots_shard_not_its_keys() {
    let dir = tempfile::tempdir().unwrap();
    let paths = archive(dir.path());
    let root = "ef958aa1-0e93-49f0-bb71-150f63befcd1";
    let sub = format!("{root}.a4ca7529859c158c2");
    let [source, fork, _] = transcope_testkit::CODEX_FAMILY;
    for (root, child) in [(root, sub.as_str()), (source, fork)] {
        let count = (2..64)
            .find(|&n| Shard::of(root, n) != Shard::of(child, n))
            .expect("some count splits the two keys");
        let log = |home: &Path| home.join(format!("brain/session-scopes/{child}.jsonl"));
        for (index, has) in [
            (Shard::of(root, count), true),
            (Shard::of(child, count), false),
        ] {
            let home = dir.path().join(format!("home-{child}-{index}-of-{count}"));
            let (jobs, _) = discover(&paths, &transcope_testkit::engine::adapters());
            let total = jobs.len() as u64;
            let mut o = Options::new(&home, transcope_testkit::engine::pipeline(&home));
            o.shard = Shard::new(index, count);
            let s = backfill(jobs, &o, &|_, _| {});
            assert!(s.errors.is_empty(), "{:?}", s.errors);
            assert_eq!(s.files + s.other_shards, total);
            assert_eq!(
                log(&home).is_file(),
                has,
                "{child} in shard {index}/{count}"
            );
            let root_log = home.join(format!("brain/session-scopes/{root}.jsonl"));
            assert_eq!(root_log.is_file(), has, "{root} in shard {index}/{count}");
        }
    }
}

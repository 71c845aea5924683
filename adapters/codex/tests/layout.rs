//! The Codex layout on its own: the keys of the test transcripts it names agree with
//! the batch rules as they were before the move (`adapters/claude/tests/golden/
//! scope_keys.tsv`; the registry of both formats is tested in
//! `adapters/claude/tests/layout.rs`), its roots and claims, and the edges.

use std::path::{Path, PathBuf};

use transcope_adapter_codex::layout::CodexLayout;
use transcope_adapter_codex::CodexFactory;
use transcope_core::adapter::{AdapterFactory, Confidence, Layout};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn codex_keys_of_the_test_transcripts_equal_the_golden_ones() {
    let golden =
        std::fs::read_to_string(testdata().join("adapters/claude/tests/golden/scope_keys.tsv"))
            .unwrap();
    let mut named = 0;
    for row in golden.lines() {
        let (rel, want) = row.split_once('\t').unwrap();
        let path = testdata().join(rel);
        let stem = path.file_stem().unwrap().to_str().unwrap();
        match CodexLayout.scope_key(&path) {
            Some((Confidence::Certain, key)) => {
                named += 1;
                let got = key.unwrap_or_else(|why| format!("error: {why}"));
                // A Claude sub-agent keeps the Claude rule on a tie.
                if !stem.starts_with("agent-") {
                    assert_eq!(got, want, "{rel}");
                }
            }
            Some((Confidence::Fallback, _)) => panic!("{rel}: Codex is never a fallback"),
            // Not Codex's: the Claude layout names it (a root session by its stem).
            None if stem.starts_with("agent-") => {}
            None => assert_eq!(want, stem, "{rel}"),
        }
    }
    assert_eq!(named, 13);
}

/// (file name, contents, the key or error, `None` when the file is not Codex's)
type Case<'a> = (&'a str, &'a str, Option<Result<&'a str, &'a str>>);

#[test]
fn edges() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[Case<'_>] = &[
        (
            "rollout-2025-01-01T00-00-00-0a1b2c3d-0000-4000-8000-00000000abcd.jsonl",
            "garbage {\n",
            Some(Ok("0a1b2c3d-0000-4000-8000-00000000abcd")),
        ),
        (
            "rollout-nouuid.jsonl",
            "garbage {\n",
            Some(Err("legacy Codex file has no id")),
        ),
        (
            "legacy.jsonl",
            "{\"id\":\"hdr-1\",\"timestamp\":\"t\"}\n",
            Some(Ok("hdr-1")),
        ),
        (
            "header-0a1b2c3d-0000-4000-8000-00000000abcd.jsonl",
            "{\"id\":5}\n",
            Some(Ok("0a1b2c3d-0000-4000-8000-00000000abcd")),
        ),
        (
            "bad.jsonl",
            "{\"id\":\"a/b\"}\n",
            Some(Err("\"a/b\" is not a valid scope-log key")),
        ),
        (
            "meta.jsonl",
            "{\"type\":\"session_meta\",\"payload\":{\"id\":\"m-1\"}}\n",
            Some(Ok("m-1")),
        ),
        (
            "no-id.jsonl",
            "{\"type\":\"turn_context\",\"payload\":{}}\n",
            Some(Err(
                "Codex rollout has no session_meta id and no UUID in its name",
            )),
        ),
        (
            "claude.jsonl",
            "{\"type\":\"user\",\"sessionId\":\"s\"}\n",
            None,
        ),
        (
            "header-with-session.jsonl",
            "{\"id\":\"x\",\"sessionId\":\"s\"}\n",
            None,
        ),
        ("empty.jsonl", "", None),
    ];
    for (name, text, want) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let want = want.map(|k| {
            (
                Confidence::Certain,
                k.map(str::to_owned).map_err(str::to_owned),
            )
        });
        assert_eq!(CodexLayout.scope_key(&path), want, "{name}");
    }
    // Nothing past the first 1 MiB is read for the first object.
    let path = dir.path().join("late.jsonl");
    let blank = " ".repeat(1023) + "\n";
    std::fs::write(
        &path,
        blank.repeat(1024) + "{\"type\":\"session_meta\",\"payload\":{\"id\":\"m\"}}\n",
    )
    .unwrap();
    assert_eq!(CodexLayout.scope_key(&path), None);
}

#[test]
fn roots_claims_and_no_parent() {
    let l = CodexFactory
        .layout()
        .expect("the Codex factory has a layout");
    let home = Path::new("/home/u");
    assert_eq!(
        l.default_roots(&|_| None, home),
        [PathBuf::from("/home/u/.codex/sessions")]
    );
    let env = |name: &str| (name == "CODEX_HOME").then(|| "/ch".to_owned());
    assert_eq!(l.default_roots(&env, home), [PathBuf::from("/ch/sessions")]);
    let empty = |name: &str| (name == "CODEX_HOME").then(String::new);
    assert_eq!(
        l.default_roots(&empty, home),
        [PathBuf::from("/home/u/.codex/sessions")]
    );
    assert!(l.claims(Path::new("/s/2025/01/01/rollout-x.jsonl")));
    assert!(!l.claims(Path::new("/s/rollout-x.json")));
    assert_eq!(l.parent("019b88e5-a2e4-7b90-8953-38fce393c653"), None);
    assert!(CodexFactory::with_options(Default::default())
        .layout()
        .is_some());
}

/// A fork belongs to its source's family and a sub-agent to its parent thread's: the
/// origin a batch split into shards keeps them with.
#[test]
fn the_origin_of_a_fork_or_a_sub_agent_is_in_its_session_meta() {
    use transcope_core::head::Head;
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, Option<&str>)] = &[
        (
            r#"{"type":"session_meta","payload":{"id":"f","forked_from_id":"s"}}"#,
            Some("s"),
        ),
        (
            r#"{"type":"session_meta","payload":{"id":"f","forked_from_id":"s","parent_thread_id":"p"}}"#,
            Some("s"),
        ),
        (
            r#"{"type":"session_meta","payload":{"id":"c","parent_thread_id":"p"}}"#,
            Some("p"),
        ),
        (
            r#"{"type":"session_meta","payload":{"id":"c","source":{"subagent":{"thread_spawn":{"parent_thread_id":"p"}}}}}"#,
            Some("p"),
        ),
        // Not a key: no origin, the rollout is its own family's root.
        (
            r#"{"type":"session_meta","payload":{"id":"f","forked_from_id":"a/b"}}"#,
            None,
        ),
        (
            r#"{"type":"session_meta","payload":{"id":"f","forked_from_id":7}}"#,
            None,
        ),
        (r#"{"type":"session_meta","payload":{"id":"r"}}"#, None),
        (
            r#"{"type":"turn_context","payload":{"forked_from_id":"s"}}"#,
            None,
        ),
        (r#"{"id":"legacy","forked_from_id":"s"}"#, None),
    ];
    for (i, (first, want)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("r{i}.jsonl"));
        std::fs::write(&path, format!("{first}\n")).unwrap();
        let got = CodexLayout.origin(&Head::new(&path));
        assert_eq!(got.as_deref(), *want, "{first}");
    }
}

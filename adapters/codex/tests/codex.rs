//! Codex adapter behaviour: envelope kinds, session ids, turn_context folders of the
//! public rollouts, marker texts (assistant messages joined by `\n`, task_complete),
//! the legacy layout with and without the `<environment_context>` extension.

use std::path::{Path, PathBuf};

use transcope_adapter_codex::{CodexAdapter, CodexFactory, CodexOptions};
use transcope_core::adapter::{Adapter, AdapterFactory, Framing, Skip};
use transcope_core::{EntryKind, TimeValue};
use transcope_testkit::decode::{decode_bytes, Decoded};

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(rel)
}

/// Decode `data` line by line, as the framing layer cuts it.
fn decode_all(adapter: &mut dyn Adapter, data: &[u8]) -> Decoded {
    decode_bytes(adapter, Framing::Lines, data)
}

fn decode_file(rel: &str, options: CodexOptions) -> Decoded {
    let data = std::fs::read(testdata(rel)).unwrap();
    decode_all(&mut CodexAdapter::with_options(options), &data)
}

fn lines(ls: &[&str]) -> Decoded {
    decode_all(&mut CodexAdapter::new(), ls.join("\n").as_bytes())
}

#[test]
fn public_rollouts_turn_context_cwds_and_session_ids() {
    let cases: &[(&str, &[&str], &str)] = &[
        ("lanegrid__agtrace__rollout-2025-12-10T04-55-16-019b04ae-b1c6-7c72-a134-a4c2de66058c.jsonl", &["/Users/zawakin/agent-sample"; 7], "019b04ae-b1c6-7c72-a134-a4c2de66058c"),
        ("lanegrid__agtrace__rollout-2025-11-20-basic.jsonl", &["/Users/testuser/projects/test-project"; 2], "019a1234-5678-7890-abcd-ef1234567890"),
        ("lanegrid__agtrace__rollout-parent-019b88e0.jsonl", &["/test/project"], "019b88e0-0b0f-7bb0-a9ba-5cc2d8dffde9"),
        ("lanegrid__agtrace__rollout-subagent-019b88e5.jsonl", &[], "019b88e5-a2e4-7b90-8953-38fce393c653"),
        ("simonw__claude-code-transcripts__sample_codex_session.jsonl", &["/Users/macmini/Code/homelab-migration"; 6], "019b64e5-57fa-7463-b644-fba7e456f905"),
        ("daaain__claude-code-log__rollout-66666666-6666-4666-8666-666666666666.jsonl", &[], "66666666-6666-4666-8666-666666666666"),
    ];
    for (file, cwds, sid) in cases {
        let (entries, _) = decode_file(&format!("public/codex/{file}"), CodexOptions::default());
        let got: Vec<&str> = entries
            .iter()
            .filter(|e| e.kind == Some(EntryKind::Context))
            .map(|e| e.cwd.as_deref().unwrap())
            .collect();
        assert_eq!(&got, cwds, "{file}");
        // Only turn_context entries carry a folder; session_meta.payload.cwd is not used.
        assert!(entries
            .iter()
            .all(|e| e.cwd.is_none() || e.kind == Some(EntryKind::Context)));
        let meta = &entries[0];
        assert_eq!(
            (meta.kind, meta.session_id.as_deref(), meta.line),
            (Some(EntryKind::Meta), Some(*sid), 1)
        );
        assert!(
            meta.cwd.is_none() && meta.branch.is_none(),
            "git.branch is not a gitBranch"
        );
        assert!(
            entries.iter().all(|e| matches!(e.time, TimeValue::Str(_))),
            "every envelope line is stamped"
        );
    }
    let (entries, skips) = decode_file(
        "public/codex/daaain__claude-code-log__rollout-66666666-6666-4666-8666-666666666666.jsonl",
        CodexOptions::default(),
    );
    assert_eq!((entries.len(), skips), (2, vec![(3, Skip::InvalidJson)]));
}

#[test]
fn curated_catalog_kinds() {
    let (entries, skips) = decode_file(
        "public/codex/jazzyalex__agent-sessions__small.jsonl",
        CodexOptions::default(),
    );
    assert!(skips.is_empty());
    let count = |k: EntryKind| entries.iter().filter(|e| e.kind == Some(k)).count();
    assert_eq!(count(EntryKind::Meta), 7);
    assert_eq!(count(EntryKind::Context), 9);
    assert!(count(EntryKind::User) > 0 && count(EntryKind::Assistant) > 0);
    assert!(count(EntryKind::Tool) > 0 && count(EntryKind::Event) > 0);
    assert_eq!(entries.len(), 118);
}

#[test]
fn assistant_message_blocks_are_joined_and_task_complete_is_a_text() {
    let (e, _) = lines(&[
        r#"{"timestamp":"t0","type":"session_meta","payload":{"id":"s"}}"#,
        r#"{"timestamp":"t1","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"first"},{"type":"input_image","image_url":"data:"},{"type":"text","text":"second"},{"type":"input_text","text":"third"}]}}"#,
        r#"{"timestamp":"t2","type":"event_msg","payload":{"type":"task_complete","last_agent_message":"done <!-- @signal -->s<!-- @/signal -->"}}"#,
        r#"{"timestamp":"t3","type":"event_msg","payload":{"type":"task_complete","last_agent_message":null}}"#,
        r#"{"timestamp":"t4","type":"event_msg","payload":{"type":"agent_message","message":"not scanned"}}"#,
        r#"{"timestamp":"t5","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"not scanned"}]}}"#,
        r#"{"timestamp":"t6","type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"not scanned"}]}}"#,
        r#"{"timestamp":"t7","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"big"}}"#,
        r#"{"timestamp":"t8","type":"response_item","payload":{"content":[{"type":"output_text","text":"x"}],"role":"assistant","type":"message"}}"#,
        r#"{"timestamp":"t9","type":"assistant","message":{"content":"Claude-shaped lines are not Codex records"}}"#,
        r#"{"timestamp":"t10","type":"event_msg","payload":"not an object"}"#,
    ]);
    let kinds: Vec<EntryKind> = e.iter().map(|e| e.kind.unwrap()).collect();
    use EntryKind::*;
    assert_eq!(
        kinds,
        [Meta, Assistant, Event, Event, Event, User, Tool, Tool, Assistant, Assistant, Event]
    );
    let texts: Vec<(&str, &str)> = e
        .iter()
        .flat_map(|e| {
            e.texts
                .iter()
                .map(move |t| (e.time.as_str().unwrap(), &**t))
        })
        .collect();
    assert_eq!(
        texts,
        [
            ("t1", "first\nsecond\nthird"),
            ("t2", "done <!-- @signal -->s<!-- @/signal -->"),
            ("t8", "x")
        ]
    );
}

#[test]
fn legacy_default_equals_the_reference_reading() {
    let (e, skips) = decode_file(
        "codex-legacy/rollout-2025-06-01T10-00-00-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl",
        CodexOptions::default(),
    );
    assert_eq!(
        skips,
        [
            (2, Skip::Ignored),
            (6, Skip::Ignored),
            (10, Skip::Ignored),
            (12, Skip::Ignored)
        ]
    );
    let head = &e[0];
    assert_eq!(head.kind, Some(EntryKind::Meta));
    assert_eq!(
        head.session_id.as_deref(),
        Some("5973b6c0-94b8-487b-a530-2aeb6098ae0e")
    );
    assert_eq!(head.time, TimeValue::Str("2025-06-01T10:00:00.123Z".into()));
    assert_eq!((head.cwd.as_deref(), head.branch.as_deref()), (None, None));
    // Items carry no time and no folder; legacy assistant messages are not marker texts
    // (the reference reads this file as Claude and scans only `type == "assistant"`).
    assert!(e[1..]
        .iter()
        .all(|e| e.time == TimeValue::Missing && e.cwd.is_none() && e.texts.is_empty()));
    use EntryKind::*;
    let kinds: Vec<EntryKind> = e.iter().map(|e| e.kind.unwrap()).collect();
    assert_eq!(kinds, [Meta, User, User, User, Tool, Tool, Tool, Assistant]);

    let (e, _) = decode_file(
        "codex-legacy/rollout-2025-08-20T09-15-00-1b7c2e44-0d1f-4e55-9a8b-6c2f0e3d4a5b.jsonl",
        CodexOptions::default(),
    );
    assert_eq!(
        e[0].cwd.as_deref(),
        Some("/srv/app"),
        "a header's top-level cwd counts like any record's"
    );
    assert_eq!(e.iter().filter(|e| e.cwd.is_some()).count(), 1);

    let (e, _) = decode_file(
        "public/codex/daaain__claude-code-log__rollout-44444444-4444-4444-8444-444444444444.jsonl",
        CodexOptions::default(),
    );
    assert_eq!(e.len(), 3);
    assert!(e.iter().all(|e| e.texts.is_empty()));
}

#[test]
fn legacy_claude_shaped_assistant_lines_are_scanned_as_the_reference_does() {
    let (e, _) = lines(&[
        r#"{"id":"x","timestamp":"t"}"#,
        r#"{"type":"assistant","timestamp":"t2","message":{"content":[{"type":"text","text":"scanned"}]}}"#,
        r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"not scanned"}]}"#,
        r#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"not scanned"}]}}"#,
    ]);
    let texts: Vec<&str> = e
        .iter()
        .flat_map(|e| e.texts.iter().map(|t| &**t))
        .collect();
    assert_eq!(texts, ["scanned"]);
}

#[test]
fn legacy_environment_context_extension() {
    let opts = CodexOptions {
        legacy_env_cwd: true,
    };
    let (e, _) = decode_file(
        "codex-legacy/rollout-2025-06-01T10-00-00-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl",
        opts,
    );
    let with_cwd: Vec<(u64, &str, &TimeValue<'_>)> = e
        .iter()
        .filter_map(|e| e.cwd.as_deref().map(|c| (e.line, c, &e.time)))
        .collect();
    assert_eq!(
        with_cwd,
        [(
            4,
            "/Users/dev/legacy-proj",
            &TimeValue::Str("2025-06-01T10:00:00.123Z".into())
        )]
    );
    assert_eq!(e[3].kind, Some(EntryKind::User));

    // A header with its own cwd wins; the extension does not apply.
    let (e, _) = decode_file(
        "codex-legacy/rollout-2025-08-20T09-15-00-1b7c2e44-0d1f-4e55-9a8b-6c2f0e3d4a5b.jsonl",
        opts,
    );
    let cwds: Vec<&str> = e.iter().filter_map(|e| e.cwd.as_deref()).collect();
    assert_eq!(cwds, ["/srv/app"]);

    // Envelope files are unaffected.
    let (a, _) = decode_file(
        "public/codex/lanegrid__agtrace__rollout-2025-11-20-basic.jsonl",
        opts,
    );
    let (b, _) = decode_file(
        "public/codex/lanegrid__agtrace__rollout-2025-11-20-basic.jsonl",
        CodexOptions::default(),
    );
    assert_eq!(a, b);
}

#[test]
fn mode_is_per_file_and_reset_clears_it() {
    let mut a = CodexAdapter::new();
    let legacy = std::fs::read(testdata(
        "public/codex/daaain__claude-code-log__rollout-44444444-4444-4444-8444-444444444444.jsonl",
    ))
    .unwrap();
    decode_all(&mut a, &legacy);
    assert!(a.is_legacy());
    a.reset();
    let (e, _) = decode_all(
        &mut a,
        br#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x"}]}}"#,
    );
    assert!(!a.is_legacy());
    assert_eq!(e[0].texts, ["x"]);
    // A blank or broken first line does not decide the mode.
    let mut a = CodexAdapter::new();
    let (_, skips) = decode_all(&mut a, b"\n{oops\n{\"id\":\"h\",\"timestamp\":\"t\"}");
    assert_eq!(skips, [(1, Skip::Blank), (2, Skip::InvalidJson)]);
    assert!(a.is_legacy());
}

#[test]
fn factory() {
    assert_eq!(CodexFactory.name(), "codex");
    let f = CodexFactory::with_options(CodexOptions {
        legacy_env_cwd: true,
    });
    assert_eq!(f.name(), "codex");
    assert_eq!(
        f.sniff(
            std::path::Path::new("x.jsonl"),
            br#"{"id":"x","timestamp":"t"}"#
        ),
        Some(transcope_core::adapter::Confidence::Certain)
    );
    let mut a = f.build();
    let data = b"{\"id\":\"x\",\"timestamp\":\"t\"}\n{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"<environment_context><cwd>/e</cwd></environment_context>\"}]}";
    let (e, _) = decode_all(&mut *a, data);
    assert_eq!(e[1].cwd.as_deref(), Some("/e"));
}

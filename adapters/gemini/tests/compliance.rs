//! The adapter compliance kit on every Gemini CLI fixture, both forms: logs read in
//! appended pieces (re-records, `$set`, `$rewindTo` and `$set.messages` checkpoints
//! across the cut) and documents rewritten as they grow give the entries of one pass.

use std::path::PathBuf;

use transcope_testkit::compliance::{AdapterKit, Check, Fixture};

fn gemini(rel: &str) -> PathBuf {
    transcope_testkit::testdata("public/gemini").join(rel)
}

fn kit() -> AdapterKit<'static> {
    AdapterKit::new("gemini", transcope_testkit::engine::adapters)
}

/// The fixtures under `home/` are read inside a copy of it, so the adapter finds each
/// session's folder (`.project_root`, `projects.json`) as it does in the original.
fn in_home(rel: &str) -> PathBuf {
    gemini("home").join(rel)
}

#[test]
fn gemini_logs_in_pieces_give_one_pass() {
    let home = gemini("home");
    let report = kit()
        .check(&[
            Fixture::lines(in_home(
                ".gemini/tmp/demo-app/chats/session-2026-05-01T10-00-5f1c9a2e.jsonl",
            ))
            .within(&home),
            Fixture::lines(in_home(
                ".gemini/tmp/demo-app/chats/5f1c9a2e-6b7d-4c1e-9a0b-3d2e1f000001/0c9d8e7f-0000-4000-8000-00000000a001.jsonl",
            ))
            .within(&home),
            Fixture::lines(gemini("jazzyalex__agent-sessions__jsonl_v040.jsonl")),
            Fixture::lines(gemini("synthetic__agtrace-migrated.jsonl")),
        ])
        .unwrap();
    assert_eq!(report.fixtures, 4);
    assert!(report.entries >= 11 + 4 + 11, "{report:?}");
}

#[test]
fn gemini_documents_growing_give_one_pass() {
    let home = gemini("home");
    let named = |f: &str| {
        Fixture::document(gemini(f), "messages").at("chats/session-2026-01-01T00-00-0000abcd.json")
    };
    let report = kit()
        .check(&[
            named("lanegrid__agtrace__gemini_session.json"),
            named("jazzyalex__agent-sessions__small.json"),
            named("jazzyalex__agent-sessions__large.json"),
            Fixture::document(
                in_home(".gemini/tmp/registry-only/chats/session-2026-04-01T08-00-77aa88bb.json"),
                "messages",
            )
            .within(&home),
            Fixture::document(
                in_home(".gemini/tmp/5e8115772b18753c9c913235eabcaecda099d6e5f7490f15adc6a455c1b88456/chats/session-2025-11-20T09-30-0a1b2c3d.json"),
                "messages",
            )
            .within(&home),
        ])
        .unwrap();
    assert_eq!(report.fixtures, 5);
}

/// The kit can fail: a log declared as a document is caught by its framing.
#[test]
fn the_kit_catches_a_misdeclared_framing() {
    let err = kit()
        .check(&[Fixture::document(
            gemini("jazzyalex__agent-sessions__jsonl_v040.jsonl"),
            "messages",
        )])
        .unwrap_err();
    assert_eq!(err.check, Check::Framing, "{err}");
}

/// Every update shape a log has, so that every cut falls between an update and what
/// it changes: a `$set` of the session id (entries after it carry the new id), re-records
/// of a message seen before (skipped), a rewind (the id is new again after it), a
/// `$set.messages` checkpoint (only its new and changed messages are entries).
#[test]
fn gemini_log_updates_across_every_cut_give_one_pass() {
    let m = |id: &str, ty: &str, text: &str| {
        format!(
            r#"{{"id":"{id}","timestamp":"2026-05-01T10:00:0{}.000Z","type":"{ty}","content":"{text}"}}"#,
            id.len()
        )
    };
    let lines = [
        r#"{"sessionId":"s1","projectHash":"00","startTime":"2026-05-01T10:00:00.000Z","lastUpdated":"2026-05-01T10:00:00.000Z","kind":"main"}"#.to_owned(),
        m("u1", "user", "go"),
        m("g1", "gemini", "A <!-- @lesson -->one<!-- @/lesson -->"),
        r#"{"$set":{"sessionId":"s2"}}"#.to_owned(),
        m("g1", "gemini", "A <!-- @lesson -->one<!-- @/lesson -->"),
        m("g2", "gemini", "two"),
        r#"{"$rewindTo":"g2"}"#.to_owned(),
        m("g2", "gemini", "two"),
        format!(
            r#"{{"$set":{{"messages":[{},{},{}]}}}}"#,
            m("u1", "user", "go"),
            m("g1", "gemini", "A revised"),
            m("g3", "gemini", "three")
        ),
        m("g1", "gemini", "A revised"),
        m("g3", "gemini", "three"),
        m("u4", "user", "done"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let chats = dir.path().join("tmp/p/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let path = chats.join("session-2026-05-01T10-00-0000aaaa.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let report = kit()
        .cuts(64)
        .check(&[Fixture::lines(&path).within(dir.path())])
        .unwrap();
    // Meta, u1, g1, g2, g2 again, g1 revised and g3 (the checkpoint), u4.
    assert_eq!(report.entries, 8);
}

//! Every fixture under `testdata/public/gemini` decodes to the entries it should: count,
//! kinds, times, marker texts, folder, ids and positions.

mod common;

use common::{decode_file, fixture, summary};
use transcope_core::adapter::Skip;
use transcope_core::EntryKind;

const HOME: &str = "home/.gemini/tmp";
const MARK: &str = "Done. <!-- @lesson topic=x -->Cache it.<!-- @/lesson -->";

fn kinds(entries: &[transcope_core::Entry<'_>]) -> Vec<EntryKind> {
    entries.iter().map(|e| e.kind.unwrap()).collect()
}

#[test]
fn real_document_agtrace() {
    let (entries, skips) = decode_file(&fixture("lanegrid__agtrace__gemini_session.json"));
    assert!(skips.is_empty());
    use EntryKind::*;
    assert_eq!(
        kinds(&entries),
        [
            Meta, User, Assistant, Assistant, Assistant, Assistant, User, Assistant, Assistant,
            Assistant
        ]
    );
    let sid = "f0a689a6-b0ac-407f-afcc-4fafa9e14e8a";
    assert!(entries.iter().all(|e| e.session_id.as_deref() == Some(sid)));
    // Not under a CLI folder: no project record, so no folder (never guessed).
    assert!(entries
        .iter()
        .all(|e| e.cwd.is_none() && e.branch.is_none()));
    assert_eq!(entries[0].time.as_str(), Some("2025-12-09T19:51:29.418Z"));
    assert_eq!((entries[0].offset, entries[0].line), (0, 0));
    assert_eq!(entries[9].time.as_str(), Some("2025-12-09T19:54:21.715Z"));
    assert_eq!(
        entries[9].texts,
        ["`python3 hoge.py` executed, outputting \"2\". Request complete."]
    );
    // User messages and thoughts carry no marker text; each message is one text.
    assert!(entries[1].texts.is_empty() && entries[6].texts.is_empty());
    assert!(entries[2..6].iter().all(|e| e.texts.len() == 1));
    // Offsets point at each message object; lines count messages from 1.
    let data = std::fs::read(fixture("lanegrid__agtrace__gemini_session.json")).unwrap();
    for (i, e) in entries.iter().enumerate().skip(1) {
        assert_eq!(e.line, i as u64);
        let at = &data[e.offset as usize..];
        assert!(
            at.starts_with(b"{\n      \"id\": \""),
            "message {i} at {}",
            e.offset
        );
        let id = e.uuid.as_deref().unwrap();
        assert!(at[..80].windows(id.len()).any(|w| w == id.as_bytes()));
    }
}

#[test]
fn curated_jsonl_v040() {
    let (entries, skips) = decode_file(&fixture("jazzyalex__agent-sessions__jsonl_v040.jsonl"));
    assert_eq!(skips, [(3, Skip::Ignored)]); // {"$set":{"lastUpdated":…}}
    let s = summary(&entries);
    assert_eq!(s.len(), 4);
    assert_eq!(s[0].0, "Meta");
    assert_eq!(s[0].1, "2026-04-29T21:39:22.319Z");
    assert_eq!(
        (s[1].0.as_str(), s[1].1.as_str()),
        ("User", "2026-04-29T21:39:33.155Z")
    );
    // A tool-call-only reply: content "" gives no text.
    assert_eq!((s[2].0.as_str(), s[2].2.as_str()), ("Assistant", ""));
    assert_eq!(
        (s[3].0.as_str(), s[3].2.as_str()),
        ("Assistant", "Hello! I listed the files.")
    );
    assert_eq!(
        entries.iter().map(|e| e.line).collect::<Vec<_>>(),
        [1, 2, 4, 5]
    );
    assert!(entries
        .iter()
        .all(|e| e.session_id.as_deref() == Some("gemini_stage0_jsonl")));
}

#[test]
fn curated_documents() {
    let (small, skips) = decode_file(&fixture("jazzyalex__agent-sessions__small.json"));
    assert!(skips.is_empty());
    assert_eq!(
        kinds(&small),
        [EntryKind::Meta, EntryKind::User, EntryKind::Assistant]
    );
    assert_eq!(small[2].texts, ["Hi!"]);
    assert_eq!(small[2].time.as_str(), Some("2026-01-16T18:34:02.000Z"));

    // Schema-drift catalog: `info` and the non-CLI `model` type are Other, no text.
    let (large, skips) = decode_file(&fixture("jazzyalex__agent-sessions__large.json"));
    assert!(skips.is_empty());
    use EntryKind::*;
    assert_eq!(
        kinds(&large),
        [Meta, User, Assistant, Assistant, Other, Other, User, Other]
    );
    assert!(large.iter().all(|e| e.texts.is_empty()));
}

#[test]
fn synthetic_marker_document_with_project_registry() {
    let path = fixture(&format!(
        "{HOME}/registry-only/chats/session-2026-04-01T08-00-77aa88bb.json"
    ));
    let (entries, skips) = decode_file(&path);
    assert!(skips.is_empty());
    let s = summary(&entries);
    let cwd = Some("/work/registry-only".to_owned());
    assert!(
        s.iter().all(|e| e.3 == cwd),
        "the folder projects.json maps to this short id"
    );
    let got: Vec<(&str, &str)> = s.iter().map(|e| (e.0.as_str(), e.2.as_str())).collect();
    assert_eq!(
        got,
        [
            ("Meta", ""),
            ("User", ""),
            ("Assistant", MARK),
            ("Other", ""),
            // A thought part between two text parts is left out; no separator added.
            (
                "Assistant",
                "Plan: <!-- @lesson topic=split -->First half, "
            ),
            // The closing half of the split marker; the tool call's marker is not text.
            ("Assistant", "second half.<!-- @/lesson --> Next."),
            ("Other", ""),
            ("Assistant", ""),
            ("Other", ""),
        ]
    );
    assert_eq!(s[2].1, "2026-04-01T08:00:05.000Z");
}

#[test]
fn synthetic_marker_log_with_project_root() {
    let path = fixture(&format!(
        "{HOME}/demo-app/chats/session-2026-05-01T10-00-5f1c9a2e.jsonl"
    ));
    let (entries, skips) = decode_file(&path);
    let s = summary(&entries);
    let cwd = Some("/work/demo-app".to_owned());
    assert!(
        s.iter().all(|e| e.3 == cwd),
        "the folder .project_root records"
    );
    assert!(entries
        .iter()
        .all(|e| e.session_id.as_deref() == Some("5f1c9a2e-6b7d-4c1e-9a0b-3d2e1f000001")));
    let got: Vec<(u64, &str, Option<&str>, &str)> = entries
        .iter()
        .zip(&s)
        .map(|(e, x)| (e.line, x.0.as_str(), x.4.as_deref(), x.2.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (1, "Meta", None, ""),
            (2, "User", Some("u1"), ""),
            (4, "Assistant", Some("g1"), MARK),
            // Line 4 wrote g1 before its tokens were known; line 6 adds them: an entry
            // with the usage alone (line 7 repeats it: nothing).
            (6, "Assistant", Some("g1"), ""),
            (8, "User", Some("u2"), ""),
            // Emitted before the rewind at line 10, and kept.
            (9, "Assistant", Some("g2"), "Wrong path. <!-- @lesson topic=rewound -->Written before the rewind.<!-- @/lesson -->"),
            (11, "User", Some("u3"), ""),
            (12, "Assistant", Some("g3"), "Plan: <!-- @lesson topic=split -->First half, "),
            (13, "Assistant", Some("g4"), "second half.<!-- @/lesson --> Next."),
            // A re-record with a changed text: a revision with the full new text.
            (14, "Assistant", Some("g4"), "second half.<!-- @/lesson --> Next. <!-- @decision id=d1 -->Use an LRU.<!-- @/decision -->"),
            // The checkpoint's one new message; the others are unchanged.
            (15, "User", Some("h1"), ""),
            (16, "Other", Some("i1"), ""),
        ]
    );
    // The repeated re-record of g1, $set updates and the rewind give no entry.
    assert_eq!(
        skips.iter().map(|s| s.0).collect::<Vec<_>>(),
        [3, 5, 7, 10, 17]
    );
    assert!(skips.iter().all(|s| s.1 == Skip::Ignored));
}

#[test]
fn synthetic_sub_agent_log() {
    let path = fixture(&format!(
        "{HOME}/demo-app/chats/5f1c9a2e-6b7d-4c1e-9a0b-3d2e1f000001/0c9d8e7f-0000-4000-8000-00000000a001.jsonl"
    ));
    let (entries, skips) = decode_file(&path);
    assert_eq!(skips, [(4, Skip::Ignored)]);
    assert_eq!(
        kinds(&entries),
        [EntryKind::Meta, EntryKind::User, EntryKind::Assistant]
    );
    assert!(entries
        .iter()
        .all(|e| e.cwd.as_deref() == Some("/work/demo-app")));
    assert!(entries
        .iter()
        .all(|e| e.session_id.as_deref() == Some("0c9d8e7f-0000-4000-8000-00000000a001")));
    assert_eq!(
        entries[2].texts,
        ["Found it. <!-- @lesson topic=sub -->Loader lives in io.py.<!-- @/lesson -->"]
    );
}

#[test]
fn pre_029_hash_folder() {
    // Named by the folder's SHA-256; projects.json lists a folder with that hash.
    let legacy = fixture(&format!(
        "{HOME}/5e8115772b18753c9c913235eabcaecda099d6e5f7490f15adc6a455c1b88456/chats/session-2025-11-20T09-30-0a1b2c3d.json"
    ));
    let (entries, skips) = decode_file(&legacy);
    assert!(skips.is_empty());
    assert_eq!(entries.len(), 3);
    assert!(entries
        .iter()
        .all(|e| e.cwd.as_deref() == Some("/work/legacy-app")));
    assert_eq!(
        entries[2].texts,
        ["Hi. <!-- @lesson topic=legacy -->Old layout.<!-- @/lesson -->"]
    );

    // No record names the folder of this hash: no folder.
    let unknown = fixture(&format!(
        "{HOME}/6c0d57d8a98acdde9213e79a626ef64cecf6557d04f2f59d7dd975dc889fc244/chats/session-2025-10-01T12-00-deadbeef.json"
    ));
    let (entries, _) = decode_file(&unknown);
    assert_eq!(entries.len(), 3);
    assert!(entries.iter().all(|e| e.cwd.is_none()));
    assert_eq!(entries[2].texts, ["Hello."]);
}

#[test]
fn project_hash_is_sha256_of_the_folder() {
    use transcope_adapter_gemini::project_hash;
    assert_eq!(
        project_hash("/work/demo-app"),
        "827f466c2f6ca4206817a60dff4401bbc51133f68b2130200b0a3bcf6971d661"
    );
    // The fixture's own projectHash is that of its recorded folder.
    let line = std::fs::read_to_string(fixture(&format!(
        "{HOME}/demo-app/chats/session-2026-05-01T10-00-5f1c9a2e.jsonl"
    )))
    .unwrap();
    assert!(line
        .lines()
        .next()
        .unwrap()
        .contains(&project_hash("/work/demo-app")));
}

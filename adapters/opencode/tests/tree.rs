//! The legacy JSON tree (`storage/session/<project>/<id>.json` and the message and part
//! files beside it) is a second layout of the same adapter: each session file is a
//! container of one session, read into the entries the database gives for it.

use std::path::Path;

use transcope_adapter_opencode::write::{export_tree, sample};
use transcope_adapter_opencode::{decode_session, OpenCodeFactory};
use transcope_core::adapter::{AdapterFactory, Confidence};
use transcope_core::records::{RecordPos, RecordSource};

/// Every entry of `key` in the container at `path`, as debug text, and the read's
/// parent.
fn read(path: &Path, key: &str) -> (Vec<String>, Option<String>) {
    let mut source = OpenCodeFactory.records(path).unwrap();
    let mut out = Vec::new();
    let read = decode_session(source.as_mut(), key, |e| out.push(format!("{e:?}"))).unwrap();
    (out, read.parent)
}

#[test]
fn a_legacy_session_file_reads_as_its_session_does_in_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("opencode");
    let s = sample(&data, &dir.path().join("repo"), "/srv/elsewhere").unwrap();
    let storage = data.join("storage");
    export_tree(&s.db, &storage).unwrap();
    for key in [s.main, s.child, s.rooted] {
        let project = if key == s.rooted { "p_else" } else { "p_repo" };
        let file = storage.join(format!("session/{project}/{key}.json"));
        assert!(OpenCodeFactory.layout().unwrap().claims(&file));
        assert_eq!(
            OpenCodeFactory.sniff(&file, b"{"),
            Some(Confidence::Certain)
        );
        let mut source = OpenCodeFactory.records(&file).unwrap();
        let held = source.sessions().unwrap();
        assert_eq!(held.len(), 1);
        assert_eq!(held[0].key, key);
        let (tree, parent) = read(&file, key);
        let (db, db_parent) = read(&s.db, key);
        assert!(!tree.is_empty());
        assert_eq!(tree, db, "{key}");
        assert_eq!(parent, db_parent);
    }
    let child = storage.join(format!("session/p_repo/{}.json", s.child));
    assert_eq!(
        OpenCodeFactory.records(&child).unwrap().sessions().unwrap()[0].root,
        s.main
    );
}

#[test]
fn a_legacy_session_changes_its_marker_when_a_message_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("opencode");
    let s = sample(&data, &dir.path().join("repo"), "/x").unwrap();
    let storage = data.join("storage");
    export_tree(&s.db, &storage).unwrap();
    let file = storage.join(format!("session/p_else/{}.json", s.rooted));
    let mut source = OpenCodeFactory.records(&file).unwrap();
    let before = source.marker(s.rooted).unwrap().unwrap();
    assert_eq!(source.marker("ses_other").unwrap(), None);
    let end = source
        .read(s.rooted, &RecordPos::START, &mut |_: u64, _: &[u8]| true)
        .unwrap()
        .end;
    assert_eq!(end.ordinal, 2);
    std::fs::write(
        storage.join(format!("message/{}/msg_99.json", s.rooted)),
        r#"{"id":"msg_99","sessionID":"ses_rooted","role":"user","time":{"created":1777640000000}}"#,
    )
    .unwrap();
    assert_ne!(source.marker(s.rooted).unwrap().unwrap(), before);
    assert!(source.holds(s.rooted, &end).unwrap());
    let mut n = 0;
    source
        .read(s.rooted, &end, &mut |_: u64, _: &[u8]| {
            n += 1;
            true
        })
        .unwrap();
    assert_eq!(n, 1);
}

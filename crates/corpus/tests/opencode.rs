//! The OpenCode sessions of a corpus (`CorpusSpec::opencode_share`): a database where
//! OpenCode keeps it, whose sessions read back through the adapter as
//! `opencode/sessions.json` says (folders in order, messages, the five counts summed),
//! and none at all by default.

use transcope_adapter_opencode::db::DbSource;
use transcope_adapter_opencode::decode_session;
use transcope_core::records::RecordSource;
use transcope_corpus::{generate, CorpusSpec, OpenCodeExpected};

#[test]
fn opencode_sessions_read_back_as_expected() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = CorpusSpec::new(11, 1_500_000);
    // Three OpenCode sessions to every other one.
    spec.opencode_share = 3.0;
    let m = generate(&spec, dir.path()).unwrap();
    let home = dir.path().join("opencode");
    let expected: Vec<OpenCodeExpected> =
        serde_json::from_slice(&std::fs::read(home.join("sessions.json")).unwrap()).unwrap();
    assert_eq!(expected.len() as u64, 3 * m.sessions);
    assert!(expected.iter().any(|e| e.parent.is_some()));
    assert!(expected.iter().any(|e| e.cwds.len() > 1));
    let db = home.join(".local/share/opencode/opencode.db");
    let mut source = DbSource::open(&db).unwrap();
    assert_eq!(source.sessions().unwrap().len(), expected.len());
    for e in &expected {
        let (mut cwds, mut tokens, mut n) = (Vec::<String>::new(), 0, 0);
        let read = decode_session(&mut source, &e.session, |x| {
            n += 1;
            let c = x.cwd.as_deref().unwrap_or("").to_owned();
            if cwds.last() != Some(&c) {
                cwds.push(c);
            }
            tokens += x
                .usage
                .as_ref()
                .and_then(|u| u.tokens)
                .map_or(0, |t| t.total());
        })
        .unwrap();
        assert_eq!(read.parent.is_some(), e.parent.is_some(), "{}", e.session);
        assert_eq!(
            (cwds.clone(), n, tokens),
            (e.cwds.clone(), e.messages, e.tokens),
            "{}",
            e.session
        );
    }
}

#[test]
fn no_opencode_share_writes_no_database() {
    let dir = tempfile::tempdir().unwrap();
    generate(&CorpusSpec::new(11, 200_000), dir.path()).unwrap();
    assert!(!dir.path().join("opencode").exists());
}

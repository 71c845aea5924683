//! Request keys: every copy of a request shares its key, and only its copies do.

use transcope_core::adapter::EntrySink;
use transcope_core::agent::{RequestKey, UsageShape};
use transcope_core::digest::request_key;
use transcope_core::{Entry, FileContext, Stage, Tokens, Usage};
use transcope_usage::UsageStage;

fn entry(message: Option<&str>, request: Option<&str>, offset: u64) -> Entry<'static> {
    let tokens = Tokens {
        input: 1,
        output: offset + 1,
        ..Tokens::default()
    };
    Entry {
        usage: Some(Usage {
            message_id: message.map(|m| m.to_owned().into()),
            request_id: request.map(|r| r.to_owned().into()),
            tokens: Some(tokens),
            ..Usage::default()
        }),
        offset,
        ..Entry::default()
    }
}

fn begin(s: &mut UsageStage, adapter: &'static str) {
    begin_shaped(s, adapter, UsageShape::default());
}

fn begin_shaped(s: &mut UsageStage, adapter: &'static str, usage: UsageShape) {
    s.begin(&FileContext {
        path: std::path::Path::new("t"),
        key: Some("s1"),
        adapter,
        usage,
        resumed: false,
    });
}

#[test]
fn each_copy_is_keyed_by_its_own_ids() {
    let mut s = UsageStage::default();
    begin(&mut s, "claude");
    let lines = [
        (Some("m1"), Some("r1")),
        (Some("m1"), Some("r1")),
        (Some("m1"), Some("r2")),
        (Some("m1"), None),
        (Some("m1"), None),
        (Some("m2"), None),
        (Some("m1"), Some("r1")),
        (None, Some("r1")),
        (Some("m1"), Some("r1")),
    ];
    for (i, (m, r)) in lines.iter().enumerate() {
        s.entry(&entry(*m, *r, i as u64));
    }
    let keys: Vec<(u128, u64)> = s.take().iter().map(|x| (x.key, x.copies)).collect();
    let each: Vec<u128> = lines
        .iter()
        .enumerate()
        .map(|(i, (m, r))| match (m, r) {
            (Some(m), Some(r)) => request_key(&["claude", ":", m, ":", r]),
            (Some(m), None) => request_key(&["claude", ":", m]),
            (None, _) => request_key(&["claude", ":", "s1", "#", &i.to_string()]),
        })
        .collect();
    // Copies that follow one another are handed on as one.
    let mut want: Vec<(u128, u64)> = Vec::new();
    for k in each {
        match want.last_mut() {
            Some((last, n)) if *last == k => *n += 1,
            _ => want.push((k, 1)),
        }
    }
    assert_eq!(want.len(), 7);
    assert_eq!(keys, want);
    // The next file may be another format's: the same ids, another key.
    begin(&mut s, "codex");
    s.entry(&entry(Some("m1"), Some("r1"), 0));
    assert_eq!(
        s.take()[0].key,
        request_key(&["codex", ":", "m1", ":", "r1"])
    );
}

#[test]
fn copies_that_follow_merge_as_the_index_merges_them() {
    let at = |s: &str| transcope_core::timestamp::parse(s);
    let line = |time: &'static str, model: Option<&'static str>, output: u64| Entry {
        time: transcope_core::TimeValue::Str(time.into()),
        usage: Some(Usage {
            message_id: Some("m1".into()),
            request_id: Some("r1".into()),
            model: model.map(Into::into),
            tokens: Some(Tokens {
                input: 4,
                output,
                ..Tokens::default()
            }),
            cumulative: false,
        }),
        ..Entry::default()
    };
    let mut s = UsageStage::default();
    begin(&mut s, "claude");
    s.entry(&line("2026-01-01T00:00:05Z", Some("m-a"), 7));
    // Earlier, with a larger count: its time is kept, and the larger count.
    s.entry(&line("2026-01-01T00:00:03Z", Some("m-a"), 9));
    s.entry(&line("2026-01-01T00:00:03Z", Some("m-a"), 2));
    s.entry(&line("2026-01-01T00:00:04Z", Some("m-a"), 1));
    // Another model: not merged here (the index decides which model it keeps).
    s.entry(&line("2026-01-01T00:00:01Z", Some("m-b"), 1));
    let spent = s.take();
    assert_eq!(spent.len(), 2);
    assert_eq!(spent[0].copies, 4);
    assert_eq!(spent[0].at, at("2026-01-01T00:00:03Z"));
    assert_eq!((spent[0].tokens.input, spent[0].tokens.output), (4, 9));
    assert_eq!(spent[0].model.as_deref(), Some("m-a"));
    assert_eq!(spent[1].copies, 1);
    assert_eq!(spent[1].at, at("2026-01-01T00:00:01Z"));
    assert_eq!(spent[0].key, spent[1].key);
}

/// An agent that declares its message ids the session's own has its requests keyed by
/// the session too, whatever the agent is called: the declaration decides, not the
/// name.
#[test]
fn a_declared_session_scope_keys_by_the_session() {
    let scoped = UsageShape {
        key: RequestKey::SessionMessage,
        ..UsageShape::default()
    };
    let mut s = UsageStage::default();
    begin_shaped(&mut s, "toy", scoped);
    s.entry(&entry(Some("m1"), Some("r1"), 0));
    let mut in_session = entry(Some("m1"), None, 1);
    in_session.session_id = Some("other".into());
    s.entry(&in_session);
    let keys: Vec<u128> = s.take().iter().map(|x| x.key).collect();
    assert_eq!(
        keys,
        [
            request_key(&["toy", ":", "s1", ":", "m1"]),
            request_key(&["toy", ":", "other", ":", "m1"])
        ]
    );
    // The same ids, undeclared: keyed by the message and request alone.
    begin(&mut s, "toy");
    s.entry(&entry(Some("m1"), Some("r1"), 0));
    assert_eq!(s.take()[0].key, request_key(&["toy", ":", "m1", ":", "r1"]));
}

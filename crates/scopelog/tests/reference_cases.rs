//! The reference test cases of scope-log.md §7.2 that concern `record_scope`,
//! `transitions`, `scope_at` and `attribute`, the §2.2 edge-case table, the §1.6
//! vectors, the §7.4 acceptance scenarios A–C (attribution part) and byte-exact golden
//! logs. Case numbers refer to §7.2.

mod common;

use common::{project, worktrees, Fixture};
use serde_json::{json, Map, Value};
use transcope_core::scope::unattributed_total;
use transcope_core::{Grant, Label, Scope, ScopeField};
use transcope_scopelog::{Event, Refusal, ScopeLog};

fn home() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn attributed(fx: &Fixture, log: &ScopeLog) -> Vec<Value> {
    log.attribute(&fx.marker_events(), Some(&fx.grant()))
        .iter()
        .map(project)
        .collect()
}

#[test]
fn case01_task_and_worktree_changes_keep_event_time_scope() {
    let fx = Fixture::load();
    let h = home();
    let log = ScopeLog::open(h.path(), "first");
    assert_eq!(
        fx.record_all(&log),
        vec![Some(0), Some(1), Some(2), Some(3)]
    );
    assert_eq!(attributed(&fx, &log), fx.expected());
    let results = log.attribute(&fx.marker_events(), Some(&fx.grant()));
    assert_eq!(unattributed_total(&results), 1);
}

#[test]
fn case02_a_second_independent_fixture_gives_the_same_attribution() {
    let fx = Fixture::load();
    let h = home();
    let first = ScopeLog::open(h.path(), "first");
    let second = ScopeLog::open(h.path(), "second");
    fx.record_all(&first);
    fx.record_all(&second);
    assert_eq!(attributed(&fx, &second), fx.expected());
    assert_eq!(first.transitions().len(), 4);
    assert_eq!(second.transitions().len(), 4);
}

#[test]
fn case03_scope_at_reads_the_transition_in_force() {
    let fx = Fixture::load();
    let h = home();
    let log = ScopeLog::open(h.path(), "first");
    fx.record_all(&log);
    assert!(log.scope_at("2026-10-08T09:00:00Z").is_none());
    assert_eq!(
        log.scope_at("2026-10-08T10:10:00Z")
            .unwrap()
            .get(ScopeField::Worktree),
        "two"
    );
    assert_eq!(
        log.scope_at("2026-10-08T10:19:59+00:00")
            .unwrap()
            .get(ScopeField::Task),
        "first"
    );
    assert_eq!(
        log.scope_at("2026-10-08T12:20:00+02:00")
            .unwrap()
            .get(ScopeField::Task),
        "second"
    );
    assert!(log.scope_at("not a time").is_none());
}

#[test]
fn case04_unchanged_scope_records_nothing() {
    let fx = Fixture::load();
    let h = home();
    let log = ScopeLog::open(h.path(), "first");
    let (at, s) = fx.transition(0);
    assert!(log.record(&s, &at, None).unwrap().is_some());
    assert!(log
        .record(&s, "2026-10-08T10:01:00+00:00", None)
        .unwrap()
        .is_none());
    assert_eq!(log.transitions().len(), 1);
}

#[test]
fn case06_explicit_marker_identity_wins_when_granted() {
    let fx = Fixture::load();
    let h = home();
    let log = ScopeLog::open(h.path(), "first");
    fx.record_all(&log);
    let attrs = json!({"project_id": "github.com/fixture/beta", "project": "beta"});
    let e = Event::at("2026-10-08T10:05:00Z").with_attrs(attrs.as_object().unwrap().clone());
    let r = &log.attribute(&[e], Some(&fx.grant()))[0];
    assert_eq!(r.label, Label::Explicit);
    assert_eq!(
        r.get(ScopeField::ProjectId),
        Some("github.com/fixture/beta")
    );
    assert_eq!(r.get(ScopeField::Task), Some("first"));
}

#[test]
fn case07_project_outside_the_grant_is_refused_without_writing() {
    let fx = Fixture::load();
    let h = home();
    let log = ScopeLog::open(h.path(), "first");
    fx.record_all(&log);
    let before = std::fs::read(log.path().unwrap()).unwrap();
    let mut outside = fx.outside_grant();
    let local = h.path().join("gamma");
    std::fs::create_dir(&local).unwrap();
    outside.set(ScopeField::Cwd, local.to_str().unwrap());
    let err = log
        .record(&outside, "2026-10-08T11:00:00+00:00", Some(&fx.grant()))
        .unwrap_err();
    assert_eq!(err.refusal(), Some(Refusal::OutsideGrant));
    assert!(!err.to_string().contains("gamma"));
    assert_eq!(std::fs::read(log.path().unwrap()).unwrap(), before);
    let fresh = ScopeLog::open(h.path(), "fresh");
    assert!(fresh
        .record(&outside, "2026-10-08T11:00:00+00:00", Some(&fx.grant()))
        .is_err());
    assert!(!fresh.path().unwrap().exists());
}

#[test]
fn case08_explicit_marker_project_outside_the_grant_is_refused() {
    let fx = Fixture::load();
    let h = home();
    let log = ScopeLog::open(h.path(), "first");
    fx.record_all(&log);
    let attrs = json!({"project_id": "github.com/fixture/gamma"});
    let e = Event::at("2026-10-08T10:05:00Z").with_attrs(attrs.as_object().unwrap().clone());
    let r = log.attribute(&[e], Some(&fx.grant()));
    assert_eq!(
        r.iter().map(|a| a.to_python_json()).collect::<Vec<_>>(),
        [r#"{"attribution": "refused"}"#]
    );
    assert_eq!(unattributed_total(&r), 1);
}

#[test]
fn case09_unknown_project_is_not_a_grant_claim() {
    let fx = Fixture::load();
    let h = home();
    let log = ScopeLog::open(h.path(), "first");
    let s = Scope::default().with(ScopeField::Cwd, "/scratch");
    let row = log
        .record(&s, "2026-10-08T10:00:00+00:00", Some(&fx.grant()))
        .unwrap()
        .unwrap();
    assert!(row.line.contains(r#""project_id": """#));
    let r = &log.attribute(&[Event::at("2026-10-08T10:01:00Z")], Some(&fx.grant()))[0];
    assert_eq!(
        r.to_python_json(),
        r#"{"attribution": "unknown", "cwd": "/scratch"}"#
    );
}

#[test]
fn case10_an_older_transition_cannot_overwrite_a_newer_one() {
    let fx = Fixture::load();
    let h = home();
    let log = ScopeLog::open(h.path(), "first");
    fx.record_all(&log);
    let e = log
        .record(&fx.outside_grant(), "2026-10-08T10:05:00+00:00", None)
        .unwrap_err();
    assert_eq!(e.refusal(), Some(Refusal::Older));
    let late = Scope::default().with(ScopeField::Task, "late");
    let e = log.record(&late, "not a time", None).unwrap_err();
    assert_eq!(e.refusal(), Some(Refusal::NotATimestamp));
    assert_eq!(log.transitions().len(), 4);
}

#[test]
fn case11_replay_reconstructs_the_same_attribution_without_duplicates() {
    let fx = Fixture::load();
    let h = home();
    let log = ScopeLog::open(h.path(), "first");
    fx.record_all(&log);
    let before = std::fs::read(log.path().unwrap()).unwrap();
    assert_eq!(fx.record_all(&log), vec![None; 4]);
    assert_eq!(std::fs::read(log.path().unwrap()).unwrap(), before);
    assert_eq!(attributed(&fx, &log), fx.expected());
}

#[test]
fn case12_an_interrupted_write_leaves_accepted_transitions_readable() {
    use std::io::Write;
    let fx = Fixture::load();
    let h = home();
    let log = ScopeLog::open(h.path(), "first");
    let (at0, s0) = fx.transition(0);
    log.record(&s0, &at0, None).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(log.path().unwrap())
        .unwrap();
    f.write_all(br#"{"session_id": "first", "sequ"#).unwrap();
    assert_eq!(log.transitions().len(), 1);
    let (at1, s1) = fx.transition(1);
    assert_eq!(log.record(&s1, &at1, None).unwrap().unwrap().sequence, 1);
    assert_eq!(worktrees(&log), ["one", "two"]);
    // The partial line is skipped and never replaced; the new row starts on a fresh line.
    let text = std::fs::read_to_string(log.path().unwrap()).unwrap();
    assert!(text.contains("\"sequ\n{\"session_id\": \"first\", \"sequence\": 1"));
}

#[test]
fn case13_unsafe_session_ids_are_never_stored() {
    let fx = Fixture::load();
    let h = home();
    let (at, s) = fx.transition(0);
    for bad in [
        "../escape",
        "-lead",
        "",
        &"a".repeat(129),
        "a/b",
        "a\\b",
        "a\0b",
        "é",
    ] {
        let log = ScopeLog::open(h.path(), bad);
        assert!(log.path().is_none());
        assert!(log.record(&s, &at, None).unwrap().is_none());
        assert!(log.transitions().is_empty());
    }
    assert!(!h.path().join("state").exists());
    assert!(!h.path().join("brain").exists(), "no directory is created");
    // The time check comes before the session-id check, and the grant check before
    // both (§2.1 steps 2–4; issue 33: the CLI had put the id first).
    let log = ScopeLog::open(h.path(), "../escape");
    assert_eq!(
        log.record(&s, "not a time", None).unwrap_err().refusal(),
        Some(Refusal::NotATimestamp)
    );
    let (outside, grant) = (fx.outside_grant(), fx.grant());
    for t in ["not a time", at.as_str()] {
        assert_eq!(
            log.record(&outside, t, Some(&grant)).unwrap_err().refusal(),
            Some(Refusal::OutsideGrant),
            "{t}"
        );
    }
    assert!(
        !h.path().join("brain").exists(),
        "a refusal creates nothing"
    );
}

#[test]
fn case20_refusals_name_their_reason() {
    let fx = Fixture::load();
    let h = home();
    let log = ScopeLog::open(h.path(), "first");
    fx.record_all(&log);
    let msgs = [
        log.record(
            &fx.outside_grant(),
            "2026-10-08T11:00:00+00:00",
            Some(&fx.grant()),
        ),
        log.record(&fx.transition(0).1, "bad time", None),
        log.record(&fx.transition(0).1, "2026-10-08T09:00:00+00:00", None),
        log.record(
            &fx.transition(3).1.with(ScopeField::TaskRevision, "1"),
            "2026-10-08T11:00:00+00:00",
            None,
        ),
    ]
    .map(|r| r.unwrap_err().to_string());
    assert_eq!(
        msgs,
        [
            "project is outside the session grant",
            "transition time is not an ISO 8601 timestamp",
            "transition is older than the latest accepted one",
            "task revision is older than the latest accepted one",
        ]
    );
}

#[test]
fn case21_the_scope_log_is_locked_and_written_one_line_per_transition() {
    let fx = Fixture::load();
    let h = home();
    let log = ScopeLog::open(h.path(), "first");
    fx.record_all(&log);
    let text = std::fs::read_to_string(log.path().unwrap()).unwrap();
    assert!(text.starts_with('{'));
    assert!(text.ends_with("}\n"));
    assert!(!text.contains("\n\n"));
    let mut lock = log.path().unwrap().as_os_str().to_owned();
    lock.push(".lock");
    assert!(std::path::Path::new(&lock).exists());
    assert!(ScopeLog::open(h.path(), "").path().is_none());
}

#[test]
fn case26_scope_log_location_time_zones_and_transition_identity() {
    let h = home();
    assert_eq!(
        ScopeLog::open(h.path(), "a.b_c-1").path().unwrap(),
        h.path().join("brain/session-scopes/a.b_c-1.jsonl")
    );
    assert!(ScopeLog::open(h.path(), "a".repeat(129)).path().is_none());
    assert!(ScopeLog::open(h.path(), "-lead").path().is_none());
    let log = ScopeLog::open(h.path(), "tz");
    let s = Scope::default().with(ScopeField::Task, "naive");
    let row = log
        .record(&s, "2026-10-08T10:00:00", None)
        .unwrap()
        .unwrap();
    assert!(row.transition_id.starts_with("dc3ed915"));
    assert!(row.transition_id.ends_with("9792bf"));
    assert!(log.scope_at("2026-10-08T10:00:00+00:00").is_some());
    assert!(log.scope_at("2026-10-08T09:59:59Z").is_none());
    assert!(log.scope_at("2026-10-08T11:59:59+02:00").is_none());
    // Key order of the caller's mapping does not matter.
    let mut m1 = Map::new();
    m1.insert("task".into(), "x".into());
    m1.insert("cwd".into(), "/y".into());
    let mut m2 = Map::new();
    m2.insert("cwd".into(), "/y".into());
    m2.insert("task".into(), "x".into());
    assert_eq!(
        Scope::from_json_map(&m1).transition_id("s", "t"),
        Scope::from_json_map(&m2).transition_id("s", "t")
    );
    // session_id and at are stored verbatim.
    let rows = log.transitions();
    assert_eq!(rows[0]["session_id"], "tz");
    assert_eq!(rows[0]["at"], "2026-10-08T10:00:00");
}

#[test]
fn case27_a_second_fixture_with_other_times_and_projects_attributes_independently() {
    let text = std::fs::read_to_string(common::testdata().join("fixtures/session-scope.json"))
        .unwrap()
        .replace("2026-10-08", "2026-10-09")
        .replace("alpha", "\u{1}")
        .replace("beta", "alpha")
        .replace('\u{1}', "beta")
        .replace("first", "\u{1}")
        .replace("third", "first")
        .replace('\u{1}', "third");
    let variant = Fixture::from_text(&text);
    let default_home = home();
    let h = home();
    let log = ScopeLog::open(h.path(), "first");
    variant.record_all(&log);
    let got: Vec<Value> = log
        .attribute(&variant.marker_events(), None)
        .iter()
        .map(project)
        .collect();
    assert_eq!(got, variant.expected());
    assert_eq!(got[1]["project_id"], "github.com/fixture/beta");
    assert_eq!(got[1]["task"], "third");
    assert!(std::fs::read_dir(default_home.path())
        .unwrap()
        .next()
        .is_none());
}

#[test]
fn case29_explicit_identity_covers_only_the_project() {
    let fx = Fixture::load();
    let h = home();
    let log = ScopeLog::open(h.path(), "first");
    fx.record_all(&log);
    let attrs = json!({"project_id": "github.com/fixture/beta", "task": "second", "task_revision": 9, "worktree": "x"});
    let e = Event::at("2026-10-08T10:05:00Z").with_attrs(attrs.as_object().unwrap().clone());
    let r = &log.attribute(&[e], Some(&fx.grant()))[0];
    assert_eq!(
        (
            r.get(ScopeField::ProjectId),
            r.get(ScopeField::Task),
            r.get(ScopeField::TaskRevision),
            r.get(ScopeField::Worktree)
        ),
        (
            Some("github.com/fixture/beta"),
            Some("first"),
            Some("1"),
            Some("one")
        )
    );
    assert_eq!(r.get(ScopeField::Repo), None);
    // The exact §4.2 example line.
    assert_eq!(
        r.to_python_json(),
        r#"{"attribution": "explicit", "worktree": "one", "cwd": "/work/alpha/one", "branch": "one", "swarm": "fixture", "task": "first", "task_revision": "1", "lane": "eng", "project_id": "github.com/fixture/beta"}"#
    );
}

#[test]
fn case35_worker_written_scope_fields_never_override_event_time() {
    let fx = Fixture::load();
    let h = home();
    let log = ScopeLog::open(h.path(), "first");
    fx.record_all(&log);
    let base = json!({"task": "second", "lane": "ci", "worktree": "two", "task_revision": 9});
    let mut claim = base.as_object().unwrap().clone();
    claim.insert("project_id".into(), "github.com/fixture/beta".into());
    claim.insert("project".into(), "beta".into());
    for (attrs, claimed) in [(base.as_object().unwrap().clone(), false), (claim, true)] {
        let e = Event::at("2026-10-08T10:05:00Z").with_attrs(attrs);
        let r = &log.attribute(&[e], Some(&fx.grant()))[0];
        assert_eq!(r.get(ScopeField::Task), Some("first"));
        assert_eq!(r.get(ScopeField::Lane), Some("eng"));
        assert_eq!(r.get(ScopeField::Worktree), Some("one"));
        assert_eq!(r.get(ScopeField::TaskRevision), Some("1"));
        if claimed {
            assert_eq!(
                r.get(ScopeField::ProjectId),
                Some("github.com/fixture/beta")
            );
            assert_eq!(r.get(ScopeField::Project), Some("beta"));
            assert_eq!(r.get(ScopeField::Repo), None);
        } else {
            assert_eq!(r.label, Label::Scoped);
        }
    }
}

#[test]
fn case36_an_older_task_revision_cannot_replace_a_newer_one() {
    let fx = Fixture::load();
    let h = home();
    let log = ScopeLog::open(h.path(), "first");
    fx.record_all(&log);
    let t3 = fx.transition(3).1;
    let at = "2026-10-08T11:00:00+00:00";
    assert_eq!(
        log.record(&t3.clone().with(ScopeField::TaskRevision, "1"), at, None)
            .unwrap_err()
            .refusal(),
        Some(Refusal::OlderTaskRevision)
    );
    let row = log
        .record(&t3.clone().with(ScopeField::TaskRevision, "3"), at, None)
        .unwrap()
        .unwrap();
    assert_eq!(row.sequence, 4);
    let fourth = t3
        .with(ScopeField::Task, "fourth")
        .with(ScopeField::TaskRevision, "1");
    assert!(log
        .record(&fourth, "2026-10-08T11:01:00+00:00", None)
        .unwrap()
        .is_some());
}

#[test]
fn task_revision_rule_uses_ascii_digits_and_numbers_only() {
    let h = home();
    let log = ScopeLog::open(h.path(), "rev");
    let s = |rev: &str, w: &str| {
        Scope::default()
            .with(ScopeField::Swarm, "s")
            .with(ScopeField::Task, "t")
            .with(ScopeField::TaskRevision, rev)
            .with(ScopeField::Worktree, w)
    };
    log.record(&s("10", "a"), "2026-10-08T10:00:00Z", None)
        .unwrap();
    // 9 < 10 numerically (a string compare would say "9" > "10").
    assert!(log
        .record(&s("9", "b"), "2026-10-08T10:01:00Z", None)
        .is_err());
    // Leading zeros are fine: 010 == 10 is not older.
    assert!(log
        .record(&s("010", "c"), "2026-10-08T10:02:00Z", None)
        .unwrap()
        .is_some());
    // Non-ASCII digits are not digits: no check.
    assert!(log
        .record(&s("٣", "d"), "2026-10-08T10:03:00Z", None)
        .unwrap()
        .is_some());
    assert!(log
        .record(&s("", "e"), "2026-10-08T10:04:00Z", None)
        .unwrap()
        .is_some());
    // A different swarm resets the rule.
    let other = s("1", "f").with(ScopeField::Swarm, "other");
    assert!(log
        .record(&other, "2026-10-08T10:05:00Z", None)
        .unwrap()
        .is_some());
}

#[test]
fn case40_an_undecodable_scope_log_stays_readable() {
    use std::io::Write;
    let fx = Fixture::load();
    let h = home();
    let log = ScopeLog::open(h.path(), "first");
    let (at, s) = fx.transition(0);
    log.record(&s, &at, None).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(log.path().unwrap())
        .unwrap();
    f.write_all(b"\xff\xfe\n").unwrap();
    assert_eq!(worktrees(&log), ["one"]);
}

#[test]
fn acceptance_a_b_c() {
    let fx = Fixture::load();
    // A: each session in its own fresh home projects to `expected`, 4 transitions, total 1.
    for sid in ["first", "second"] {
        let h = home();
        let log = ScopeLog::open(h.path(), sid);
        fx.record_all(&log);
        assert_eq!(log.transitions().len(), 4);
        assert_eq!(attributed(&fx, &log), fx.expected());
        let r = log.attribute(&fx.marker_events(), Some(&fx.grant()));
        assert_eq!(unattributed_total(&r), 1);
    }
    // B: outside the grant is refused, bytes unchanged; an explicit gamma claim is refused.
    let h = home();
    let log = ScopeLog::open(h.path(), "first");
    fx.record_all(&log);
    let before = std::fs::read(log.path().unwrap()).unwrap();
    let mut outside = fx.outside_grant();
    outside.set(ScopeField::Cwd, h.path().to_str().unwrap());
    let err = log
        .record(&outside, "2026-10-08T11:00:00+00:00", Some(&fx.grant()))
        .unwrap_err();
    assert_eq!(err.to_string(), "project is outside the session grant");
    assert_eq!(std::fs::read(log.path().unwrap()).unwrap(), before);
    let attrs = json!({"project_id": "github.com/fixture/gamma"});
    let r = log.attribute(
        &[Event::at("2026-10-08T10:05:00Z").with_attrs(attrs.as_object().unwrap().clone())],
        Some(&fx.grant()),
    );
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].label, Label::Refused);
    assert_eq!(unattributed_total(&r), 1);
    // C: replay is [None]*4, bytes unchanged, attribution unchanged.
    assert_eq!(fx.record_all(&log), vec![None; 4]);
    assert_eq!(std::fs::read(log.path().unwrap()).unwrap(), before);
    assert_eq!(attributed(&fx, &log), fx.expected());
}

#[test]
fn golden_logs_are_byte_exact() {
    let fx = Fixture::load();
    for sid in ["first", "second"] {
        let h = home();
        let log = ScopeLog::open(h.path(), sid);
        fx.record_all(&log);
        let want =
            std::fs::read(common::testdata().join(format!("golden/{sid}.scope.jsonl"))).unwrap();
        assert_eq!(
            String::from_utf8(std::fs::read(log.path().unwrap()).unwrap()).unwrap(),
            String::from_utf8(want).unwrap()
        );
    }
}

#[test]
fn section_1_6_transition_id_vectors() {
    let fx = Fixture::load();
    let want = [
        (
            "first",
            [
                "57b3be01736418e687f789f0d85a366f75db1a956f8aaeb6a6eeef2985eba18f",
                "76214acc69d7229b9592291410c32798598e3d2cfe634d91271c78c0b264ac45",
                "51b2dff9a9ff2d4c90535ede19e61813101b0eca49d6d9c159e3dd01f2fe00b4",
                "c282990604da4b541c8060fc9c311651e614e2e86c36b83918b510d01dd2b482",
            ],
        ),
        (
            "second",
            [
                "7c7c43076b7afcfcb995885f5a3bdba61afb1667cffbb0d18f21eebda315d957",
                "a1e7f9fb142c9a4a7378705f2d66e142d0d0c39e26f50c13855d7f837efbf4e3",
                "a48b67f672dd5f34e25532577012e142bc8344dbc7a763269a6cc888692f3fa0",
                "da827858ec0bbed328a2eb630752c84af597fca124fb5c0005635028ed77abed",
            ],
        ),
    ];
    for (sid, ids) in want {
        for (i, id) in ids.iter().enumerate() {
            let (at, s) = fx.transition(i);
            assert_eq!(&s.transition_id(sid, &at), id, "{sid} t{i}");
        }
    }
    // Exact hashed bytes for first/t0.
    let (at, s) = fx.transition(0);
    assert_eq!(
        s.transition_id_input("first", &at),
        r#"["first", "2026-10-08T10:00:00+00:00", {"branch": "one", "cwd": "/work/alpha/one", "lane": "eng", "project": "alpha", "project_id": "github.com/fixture/alpha", "remote": "", "repo": "fixture/alpha", "swarm": "fixture", "task": "first", "task_revision": "1", "worktree": "one"}]"#
    );
    // `Z` and `+00:00` spellings of one instant hash differently.
    assert!(s
        .transition_id("first", "2026-10-08T10:00:00Z")
        .starts_with("5f4dcb3f"));
    // `order` t0, `live`, and the non-ASCII check.
    assert!(s.transition_id("order", &at).starts_with("0b0bebf1"));
    assert!(s.transition_id("order", &at).ends_with("80bccd9"));
    let live = Scope::default()
        .with(ScopeField::Cwd, "/scratch")
        .with(ScopeField::Swarm, "fixture")
        .with(ScopeField::Task, "first")
        .with(ScopeField::Lane, "eng");
    let id = live.transition_id("live", "2026-10-08T09:59:00Z");
    assert!(
        id.starts_with("09573c1b") && id.ends_with("ac7d56577"),
        "{id}"
    );
    let u = Scope::default().with(ScopeField::Task, "café 😀");
    assert!(u
        .transition_id_input("u", "2026-10-08T10:00:00Z")
        .contains(r#""caf\u00e9 \ud83d\ude00""#));
    assert_eq!(
        u.transition_id("u", "2026-10-08T10:00:00Z"),
        "03d2921f62e82dc59c62750c73f0e99a10a88f589d65b6475f8fe9e06ec1891e"
    );
}

#[test]
fn section_2_2_edge_cases() {
    let h = home();
    let log = ScopeLog::open(h.path(), "edge");
    let s = Scope::default().with(ScopeField::Worktree, "one");
    // First ever transition: sequence 0.
    assert_eq!(
        log.record(&s, "2026-10-08T10:00:00+00:00", None)
            .unwrap()
            .unwrap()
            .sequence,
        0
    );
    // Same scope, same instant, different spelling: different id, unchanged → nothing.
    assert!(log
        .record(&s, "2026-10-08T10:00:00Z", None)
        .unwrap()
        .is_none());
    // Different scope, equal time: written.
    let two = Scope::default().with(ScopeField::Worktree, "two");
    assert!(log
        .record(&two, "2026-10-08T10:00:00Z", None)
        .unwrap()
        .is_some());
    // Earlier transition replayed with a different spelling while newer rows exist: older.
    let later = Scope::default().with(ScopeField::Worktree, "later");
    assert!(log
        .record(&later, "2026-10-08T10:00:30Z", None)
        .unwrap()
        .is_some());
    assert_eq!(
        log.record(&s, "2026-10-08T10:00:00.000+00:00", None)
            .unwrap_err()
            .refusal(),
        Some(Refusal::Older)
    );
    // Same (session, at, scope) as an older row: silent no-op even though older.
    assert!(log
        .record(&s, "2026-10-08T10:00:00+00:00", None)
        .unwrap()
        .is_none());
    // Grant with "" and "unknown" project ids: admitted.
    let g = Grant::new(["p"]);
    let unk = Scope::default()
        .with(ScopeField::ProjectId, "unknown")
        .with(ScopeField::Worktree, "three");
    assert!(log
        .record(&unk, "2026-10-08T10:01:00Z", Some(&g))
        .unwrap()
        .is_some());
    let none = Scope::default().with(ScopeField::Worktree, "none");
    assert!(log
        .record(&none, "2026-10-08T10:01:30Z", Some(&g))
        .unwrap()
        .is_some());
    // A `{}` row counts: it is the latest and shifts the sequence.
    std::fs::OpenOptions::new()
        .append(true)
        .open(log.path().unwrap())
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"{}\n"))
        .unwrap();
    let four = Scope::default().with(ScopeField::Worktree, "four");
    assert_eq!(
        log.record(&four, "2026-10-08T10:02:00Z", None)
            .unwrap()
            .unwrap()
            .sequence,
        6
    );
}

#[test]
fn log_directory_that_is_a_file_is_an_io_error() {
    let h = home();
    std::fs::create_dir_all(h.path().join("brain")).unwrap();
    std::fs::write(h.path().join("brain/session-scopes"), b"x").unwrap();
    let log = ScopeLog::open(h.path(), "s");
    let err = log
        .record(&Scope::default(), "2026-10-08T10:00:00Z", None)
        .unwrap_err();
    assert!(err.refusal().is_none());
    assert!(log.transitions().is_empty());
}

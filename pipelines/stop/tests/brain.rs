//! The §7 marker, attribution, outbox, replay, fleet, explicit, grant, rollback and
//! Stop cases, through the real Stop composition (`run_stop`) with a stub resolver and
//! a recording sink; and the HTTP sink against a real server on 127.0.0.1.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use transcope_brain::body::{build_body, marker_scope, BodyContext};
use transcope_brain::BrainConfig;
use transcope_brain::{
    drain, BrainClient, Delivery, HttpSink, MarkerRecord, OutboxSink, Sink, SinkError,
};
use transcope_change_detect::Env;
use transcope_core::Marker;
use transcope_core::{Grant, Instant, Label, Scope, ScopeField};
use transcope_identity::{FnResolver, ProjectIdentity};
use transcope_scopelog::ScopeLog;
use transcope_stop::session_start::record_session;
use transcope_stop::stop::{run_stop, StopInput, StopSummary};

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

fn fixture() -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(testdata().join("fixtures/session-scope.json")).unwrap(),
    )
    .unwrap()
}

fn grant() -> Grant {
    Grant::new(["github.com/fixture/alpha", "github.com/fixture/beta"])
}

fn record_all(home: &Path, session: &str, upto: usize) {
    let fx = fixture();
    let log = ScopeLog::open(home, session);
    for t in fx["transitions"].as_array().unwrap().iter().take(upto) {
        let s = Scope::from_json_map(t["scope"].as_object().unwrap());
        log.record(&s, t["at"].as_str().unwrap(), Some(&grant()))
            .unwrap();
    }
}

fn ident(project: &str, worktree: &str, cwd: &str) -> ProjectIdentity {
    let mut p = ProjectIdentity::new(project, format!("fixture/{project}"));
    p.worktree = worktree.into();
    p.cwd = cwd.into();
    p.project_id = format!("github.com/fixture/{project}");
    p
}

fn stub(folder: &str) -> Option<ProjectIdentity> {
    match folder {
        "/work/alpha/one" => Some(ident("alpha", "one", folder)),
        "/work/alpha/two" => Some(ident("alpha", "two", folder)),
        "/work/beta" => Some(ident("beta", "beta", folder)),
        _ => None,
    }
}

#[derive(Default)]
struct Recording(Vec<MarkerRecord>);

impl Sink for Recording {
    fn deliver(&mut self, rec: &MarkerRecord) -> Result<Delivery, SinkError> {
        self.0.push(rec.clone());
        Ok(Delivery::Printed)
    }
}

fn brain(home: &Path) -> BrainConfig {
    let mut env = Env::new();
    env.insert("BRAIN_WRITER_ENABLED".into(), "true".into());
    env.insert("BRAIN_WRITER_MAX_MARKERS".into(), "20".into());
    env.insert("CLAUDE_PROJECT_DIR".into(), "/drain".into());
    BrainConfig::from_env(home, &env)
}

fn stop(
    home: &Path,
    session: Option<&str>,
    transcript: Option<&Path>,
    last: Option<&str>,
    env: &Env,
    calls: &Arc<Mutex<Vec<String>>>,
) -> (StopSummary, Vec<MarkerRecord>) {
    let mut rec = Recording::default();
    let c = calls.clone();
    let resolver = FnResolver(move |f: &str, _: &Env| {
        c.lock().unwrap().push(f.to_owned());
        Ok(stub(f))
    });
    let sum = run_stop(
        home,
        StopInput {
            session,
            transcript,
            last_message: last,
            read_until: None,
        },
        env,
        &brain(home),
        resolver,
        &transcope_testkit::engine::pipeline(home),
        Some(&mut rec),
    );
    (sum, rec.0)
}

fn transcript(home: &Path) -> PathBuf {
    testdata()
        .join("fixtures/session-scope.transcript.jsonl")
        .canonicalize()
        .map(|p| {
            let dst = home.join("t.jsonl");
            std::fs::copy(&p, &dst).unwrap();
            dst
        })
        .unwrap()
}

/// [`stop`] with a transcript, no last message, no environment, calls not watched.
fn stop_plain(
    home: &Path,
    session: Option<&str>,
    transcript: &Path,
) -> (StopSummary, Vec<MarkerRecord>) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    stop(home, session, Some(transcript), None, &Env::new(), &calls)
}

fn attrs(rec: &MarkerRecord) -> &Map<String, Value> {
    rec.body["attrs"].as_object().unwrap()
}

#[test]
fn stop_over_the_fixture_writes_the_spec_bodies() {
    let home = tempfile::tempdir().unwrap();
    record_all(home.path(), "first", 4);
    let t = transcript(home.path());
    let (sum, recs) = stop_plain(home.path(), Some("first"), &t);
    assert_eq!(sum.markers.len(), 6);
    assert_eq!(sum.unattributed, 1);
    // §5.4's example body, byte for byte.
    assert_eq!(
        transcope_core::py::dumps(&recs[1].body),
        r#"{"type": "lesson", "content": "First task in worktree one.", "attrs": {"attribution": "scoped", "project_id": "github.com/fixture/alpha", "project": "alpha", "repo": "fixture/alpha", "worktree": "one", "cwd": "/work/alpha/one", "branch": "one", "swarm": "fixture", "task": "first", "task_revision": "1", "lane": "eng", "session_id": "first", "source": "agent"}}"#
    );
    // The fleet marker: exactly these attrs.
    assert_eq!(
        Value::Object(attrs(&recs[4]).clone()),
        json!({"severity": "warning", "share": "fleet", "attribution": "fleet", "session_id": "first", "source": "agent"})
    );
    // Projections equal `expected`.
    let fx = fixture();
    for (i, r) in recs.iter().enumerate() {
        let a = attrs(r);
        let mut p = Map::new();
        for k in [
            "attribution",
            "project_id",
            "worktree",
            "task",
            "task_revision",
            "lane",
        ] {
            if let Some(v) = a
                .get(k)
                .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
            {
                p.insert(k.into(), v.clone());
            }
        }
        assert_eq!(Value::Object(p), fx["expected"][i], "marker {i}");
    }
    // The SV2-IDN-03 idempotency key (computed by Python's uuid5 for this text).
    assert_eq!(recs[1].idempotency_key, "18fc170dd4b45c1395bb13f054bb266e");
}

#[test]
fn case05_case30_case35_bodies_use_the_scope_at_marker_time() {
    let home = tempfile::tempdir().unwrap();
    record_all(home.path(), "first", 4);
    let fx = fixture();
    let log = ScopeLog::open(home.path(), "first");
    let rows = log.transitions();
    let body = |m: &Marker| {
        let scope = marker_scope(&rows, m, None, false, true);
        build_body(
            m,
            BodyContext {
                session: Some("first"),
                scope: scope.as_ref(),
                live: true,
                lookup: &mut |_| None,
                source: "agent",
            },
        )
    };
    let marker = |at: &str, a: Value| Marker {
        kind: "lesson".into(),
        attrs: a.as_object().unwrap().clone(),
        content: "x".into(),
        at: Some(json!(at)),
    };
    let b = body(&marker("2026-10-08T10:05:00Z", json!({})));
    assert_eq!(b["attrs"]["task"], "first");
    assert_eq!(b["attrs"]["worktree"], "one");
    assert_eq!(b["attrs"]["attribution"], "scoped");
    // #30: a display label never overrides the event-time project.
    let b = body(&marker("2026-10-08T10:05:00Z", json!({"project": "gamma"})));
    assert_eq!(b["attrs"]["project"], "alpha");
    assert_eq!(b["attrs"]["project_id"], "github.com/fixture/alpha");
    // #35 in a body: worker-written scope fields are dropped.
    let b = body(&marker(
        "2026-10-08T10:05:00Z",
        json!({"task": "second", "lane": "ci", "worktree": "two", "task_revision": "9"}),
    ));
    assert_eq!(
        (b["attrs"]["task"].clone(), b["attrs"]["lane"].clone()),
        (json!("first"), json!("eng"))
    );
    // #28: a fleet signal sheds every scope attribute.
    let b = body(&marker(
        "2026-10-08T10:05:00Z",
        json!({"share": "fleet", "project_id": "github.com/fixture/gamma", "task": "t", "cwd": "/c"}),
    ));
    assert_eq!(b["attrs"]["attribution"], "fleet");
    assert!(ScopeField::ALL
        .iter()
        .all(|f| b["attrs"].get(f.key()).is_none()));
    // Model-written attribution and session_id never survive (§8 item 8, fixed).
    let b = body(&marker(
        "2026-10-08T09:00:00Z",
        json!({"attribution": "scoped", "session_id": "someone-else"}),
    ));
    assert_eq!(b["attrs"]["attribution"], "unknown");
    assert_eq!(b["attrs"]["session_id"], "first");
    let _ = fx;
}

#[test]
fn case22_marker_scope_paths() {
    let home = tempfile::tempdir().unwrap();
    let fleet = Marker {
        kind: "signal".into(),
        attrs: json!({"share": "fleet", "project": "p"})
            .as_object()
            .unwrap()
            .clone(),
        content: "f".into(),
        at: None,
    };
    assert_eq!(
        marker_scope(&[], &fleet, None, false, true).unwrap().label,
        Label::Fleet
    );
    assert_eq!(
        marker_scope(&[], &fleet, None, true, true).unwrap().label,
        Label::Fleet
    );
    let scope = marker_scope(&[], &fleet, None, false, true);
    let b = build_body(
        &fleet,
        BodyContext {
            session: Some("nolog"),
            scope: scope.as_ref(),
            live: true,
            lookup: &mut |_| None,
            source: "agent",
        },
    );
    assert_eq!(b["attrs"]["attribution"], "fleet");
    assert!(b["attrs"].get("project").is_none());
    record_all(home.path(), "first", 4);
    let rows = ScopeLog::open(home.path(), "first").transitions();
    let mut timed = fleet.clone();
    timed.attrs = Map::new();
    timed.at = Some(json!("2026-10-08T10:05:00Z"));
    let s = marker_scope(&rows, &timed, None, true, true).unwrap();
    assert_eq!(s.get(ScopeField::Worktree), Some("one"));
    let mut untimed = timed.clone();
    untimed.at = None;
    assert!(marker_scope(&rows, &untimed, None, true, true).is_none());
    let mut claim = timed.clone();
    claim
        .attrs
        .insert("project_id".into(), json!("github.com/fixture/gamma"));
    assert_eq!(
        marker_scope(&rows, &claim, Some(&grant()), false, true)
            .unwrap()
            .label,
        Label::Refused
    );
    // The switch off: nothing.
    assert!(marker_scope(&rows, &timed, None, false, false).is_none());
}

#[test]
fn case16_codex_task_completion_markers_carry_their_time() {
    let home = tempfile::tempdir().unwrap();
    let t = home.path().join("rollout.jsonl");
    std::fs::write(
        &t,
        concat!(
            r#"{"timestamp":"2026-10-08T10:00:00Z","type":"session_meta","payload":{"id":"019b0000-0000-7000-8000-000000000000","cwd":"/w"}}"#,
            "\n",
            r#"{"timestamp":"2026-10-08T10:07:00Z","type":"event_msg","payload":{"type":"task_complete","last_agent_message":"Done <!-- @lesson -->Codex.<!-- @/lesson -->"}}"#,
            "\n"
        ),
    )
    .unwrap();
    let (sum, _) = stop_plain(home.path(), Some("codex"), &t);
    assert_eq!(sum.markers.len(), 1);
    assert_eq!(sum.markers[0].content, "Codex.");
    assert_eq!(sum.markers[0].at, Some(json!("2026-10-08T10:07:00Z")));
}

#[test]
fn case17_marker_times_follow_their_own_record() {
    let home = tempfile::tempdir().unwrap();
    let t = home.path().join("t.jsonl");
    let mut text = String::new();
    let line = |ts: Option<&str>, role: &str, content: &str| {
        let mut v = json!({"type": role, "message": {"role": role, "content": [{"type": "text", "text": content}]}});
        if let Some(ts) = ts {
            v["timestamp"] = json!(ts);
        }
        format!("{v}\n")
    };
    for i in 0..20 {
        text.push_str(&line(
            Some(&format!("2026-10-08T10:{i:02}:00Z")),
            "assistant",
            "a",
        ));
    }
    text.push_str(&line(
        Some("2026-10-08T11:00:00Z"),
        "assistant",
        "<!-- @lesson -->M<!-- @/lesson -->",
    ));
    text.push_str(&line(Some("2026-10-08T12:00:00Z"), "assistant", "b"));
    text.push_str(&line(
        None,
        "assistant",
        "<!-- @lesson -->No time.<!-- @/lesson -->",
    ));
    text.push_str(&line(
        Some("2026-10-08T13:00:00Z"),
        "user",
        "<!-- @lesson -->User.<!-- @/lesson -->",
    ));
    std::fs::write(&t, text).unwrap();
    let (sum, _) = stop_plain(home.path(), Some("times"), &t);
    let got: Vec<(String, Option<Value>)> = sum
        .markers
        .iter()
        .map(|m| (m.content.clone(), m.at.clone()))
        .collect();
    assert_eq!(
        got,
        [
            ("M".to_owned(), Some(json!("2026-10-08T11:00:00Z"))),
            ("No time.".to_owned(), None)
        ]
    );
    assert!(sum.markers[1].to_json().get("at").is_none());
}

#[test]
fn case19_session_start_and_stop_stamp_utc() {
    let home = tempfile::tempdir().unwrap();
    let log = ScopeLog::open(home.path(), "utc");
    let before = Instant::now();
    let r = record_session(
        home.path(),
        &log,
        Some(&ident("alpha", "one", "/work/alpha/one")),
        &Env::new(),
        Instant::now(),
        &mut |_| "one".into(),
    );
    assert!(r.recorded);
    let rows = log.transitions();
    let at = transcope_core::timestamp::parse(rows[0]["at"].as_str().unwrap()).unwrap();
    assert!((at.unix_micros() - before.unix_micros()).abs() < 5 * 60 * 1_000_000);
    assert!(rows[0]["at"].as_str().unwrap().ends_with("+00:00"));
    // t0's scope a minute ago, t3's an hour ahead.
    let fx = fixture();
    let s0 = Scope::from_json_map(fx["transitions"][0]["scope"].as_object().unwrap());
    let s3 = Scope::from_json_map(fx["transitions"][3]["scope"].as_object().unwrap());
    let now = Instant::now().unix_micros();
    log.record(
        &s0,
        &Instant::from_unix_micros(now + 1_000_000).to_python_isoformat(),
        None,
    )
    .unwrap();
    log.record(
        &s3,
        &Instant::from_unix_micros(now + 3_600_000_000).to_python_isoformat(),
        None,
    )
    .unwrap();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let missing = home.path().join("missing.jsonl");
    let (sum, recs) = stop(
        home.path(),
        Some("utc"),
        Some(&missing),
        Some("<!-- @lesson -->Late.<!-- @/lesson -->"),
        &Env::new(),
        &calls,
    );
    assert_eq!(sum.markers.len(), 1);
    assert_eq!(sum.unattributed, 0);
    assert_eq!(attrs(&recs[0])["project_id"], "github.com/fixture/alpha");
}

#[test]
fn case31_case33_case34_unknown_never_takes_the_latest_project() {
    let home = tempfile::tempdir().unwrap();
    record_all(home.path(), "first", 4);
    let log = ScopeLog::open(home.path(), "first");
    // Session start with beta: lookup now says beta.
    record_session(
        home.path(),
        &log,
        Some(&ident("beta", "beta", "/work/beta")),
        &Env::new(),
        Instant::now(),
        &mut |_| "main".into(),
    );
    let rows = log.transitions();
    let lookup_beta = transcope_stop::session_start::lookup(home.path(), "first").unwrap();
    assert_eq!(lookup_beta[0].1, "beta");
    let m = Marker {
        kind: "lesson".into(),
        attrs: json!({"project": "beta"}).as_object().unwrap().clone(),
        content: "early".into(),
        at: Some(json!("2026-10-08T09:59:00Z")),
    };
    let scope = marker_scope(&rows, &m, None, false, true);
    let live = build_body(
        &m,
        BodyContext {
            session: Some("first"),
            scope: scope.as_ref(),
            live: true,
            lookup: &mut |_| Some(lookup_beta.clone()),
            source: "agent",
        },
    );
    assert_eq!(live["attrs"]["attribution"], "unknown");
    assert!(live["attrs"].get("project_id").is_none());
    assert!(live["attrs"].get("project").is_none());
    // #34: no time at all in a scoped session: unknown, no scope fields.
    let mut untimed = m.clone();
    untimed.attrs = Map::new();
    untimed.at = None;
    let s = marker_scope(&rows, &untimed, None, false, true).unwrap();
    assert_eq!(s.label, Label::Unknown);
    assert!(s.fields.is_empty());
    // #33: the replay of an unknown body is identical and never looks up.
    let replay_marker = Marker {
        kind: "lesson".into(),
        attrs: live["attrs"].as_object().unwrap().clone(),
        content: "early".into(),
        at: None,
    };
    let rs = marker_scope(&rows, &replay_marker, None, true, true);
    assert!(rs.is_none());
    let replay = build_body(
        &replay_marker,
        BodyContext {
            session: Some("first"),
            scope: rs.as_ref(),
            live: false,
            lookup: &mut |_| panic!("a replay with attribution never looks up"),
            source: "agent",
        },
    );
    assert_eq!(replay, live);
}

#[test]
fn case32_an_outbox_replay_keeps_the_attributes_computed_when_written() {
    let home = tempfile::tempdir().unwrap();
    record_all(home.path(), "first", 4);
    let t = transcript(home.path());
    let (_, recs) = stop_plain(home.path(), Some("first"), &t);
    let live = &recs[1].body;
    // Write it to the outbox and drain it to a real server: the body POSTed is the
    // live body plus the outbox's `ts`.
    let outbox = home.path().join("outbox");
    let mut ob = OutboxSink::new(&outbox, "agent-x", "");
    ob.deliver(&recs[1]).unwrap();
    let server = Server::start(vec![200]);
    let client = BrainClient::new(&server.url, Duration::from_secs(2));
    let report = drain(&outbox, &client, "agent", &mut |_, _, _| {
        panic!("no lookup on replay")
    });
    assert_eq!(report.sent, 1);
    let got = server.requests();
    let mut posted: Value = serde_json::from_slice(&got[0].1).unwrap();
    assert!(posted["attrs"]
        .as_object_mut()
        .unwrap()
        .shift_remove("ts")
        .is_some());
    assert_eq!(&posted, live);
    assert_eq!(posted["attrs"]["worktree"], "one");
    assert_eq!(got[0].0.as_deref(), Some(recs[1].idempotency_key.as_str()));
    // Only the drain's lock file (a dot name, never drained) remains.
    let left: Vec<_> = std::fs::read_dir(&outbox)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, [".drain.lock"], "sent files are deleted");
}

#[test]
fn case23_legacy_markers_resolve_their_own_folder() {
    let home = tempfile::tempdir().unwrap();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let t = home.path().join("t.jsonl");
    std::fs::write(
        &t,
        format!(
            "{}\n",
            json!({"type": "assistant", "timestamp": "2026-10-08T10:00:00Z", "message": {"content": "<!-- @lesson cwd=/marker/folder -->L.<!-- @/lesson -->"}})
        ),
    )
    .unwrap();
    for switch in ["1", "0"] {
        calls.lock().unwrap().clear();
        let mut env = Env::new();
        env.insert("AGENTIHOOKS_SESSION_SCOPE".into(), switch.into());
        let (sum, recs) = stop(home.path(), Some("nolog"), Some(&t), None, &env, &calls);
        assert_eq!(sum.markers.len(), 1);
        assert_eq!(
            *calls.lock().unwrap(),
            ["/marker/folder"],
            "switch {switch}"
        );
        assert!(attrs(&recs[0]).get("attribution").is_none());
        std::fs::remove_dir_all(home.path().join("transcope")).ok();
    }
}

#[test]
fn case37_switching_the_scope_path_off_restores_the_preceding_behavior() {
    let home = tempfile::tempdir().unwrap();
    let mut off = Env::new();
    off.insert("AGENTIHOOKS_SESSION_SCOPE".into(), "0".into());
    let log = ScopeLog::open(home.path(), "off");
    let r = record_session(
        home.path(),
        &log,
        Some(&ident("beta", "beta", "/work/beta")),
        &off,
        Instant::now(),
        &mut |_| "main".into(),
    );
    assert!(!r.recorded && r.indexed);
    assert!(log.transitions().is_empty());
    let calls = Arc::new(Mutex::new(Vec::new()));
    let t = transcript(home.path());
    let (sum, recs) = stop(home.path(), Some("off"), Some(&t), None, &off, &calls);
    assert!(
        sum.observe.is_none(),
        "no transcript observation with the switch off"
    );
    assert!(log.transitions().is_empty());
    assert_eq!(sum.unattributed, 0);
    let a = attrs(&recs[1]);
    assert!(a.get("attribution").is_none());
    assert_eq!(
        (
            a["project"].clone(),
            a["repo"].clone(),
            a["worktree"].clone(),
            a["cwd"].clone()
        ),
        (
            json!("beta"),
            json!("fixture/beta"),
            json!("beta"),
            json!("/work/beta")
        )
    );
    // Transitions recorded directly while off are stored; markers use them once on.
    record_all(home.path(), "off", 4);
    let (_, recs) = stop(home.path(), Some("off"), Some(&t), None, &off, &calls);
    // The ledger delivered each marker once: the whole-transcript re-read of a Stop
    // with the switch off finds them again and sends none twice (DEVIATIONS.md).
    assert!(recs.is_empty(), "{recs:?}");
    let home2 = tempfile::tempdir().unwrap();
    record_all(home2.path(), "on", 4);
    let t2 = transcript(home2.path());
    let (_, recs) = stop(
        home2.path(),
        Some("on"),
        Some(&t2),
        None,
        &Env::new(),
        &calls,
    );
    assert_eq!(attrs(&recs[1])["project_id"], "github.com/fixture/alpha");
}

#[test]
fn case38_stop_reports_unattributed_markers() {
    let home = tempfile::tempdir().unwrap();
    record_all(home.path(), "stop", 3);
    let mut env = Env::new();
    env.insert("AGENTIHOOKS_SWARM".into(), "fixture".into());
    let calls = Arc::new(Mutex::new(Vec::new()));
    let t = transcript(home.path());
    let (sum, _) = stop(home.path(), Some("stop"), Some(&t), None, &env, &calls);
    assert_eq!(sum.markers.len(), 6);
    let rows = ScopeLog::open(home.path(), "stop").transitions();
    assert_eq!(rows.last().unwrap()["at"], "2026-10-08T10:35:00Z");
    assert_eq!(sum.unattributed, 1);
    // `late`: t0 at year 2000; missing transcript + last message: 1 marker, total 0.
    let log = ScopeLog::open(home.path(), "late");
    let s0 = Scope::from_json_map(fixture()["transitions"][0]["scope"].as_object().unwrap());
    log.record(&s0, "2000-01-01T00:00:00+00:00", None).unwrap();
    let missing = home.path().join("missing.jsonl");
    let msg = "<!-- @lesson -->Late.<!-- @/lesson -->";
    let (sum, _) = stop(
        home.path(),
        Some("late"),
        Some(&missing),
        Some(msg),
        &env,
        &calls,
    );
    assert_eq!((sum.markers.len(), sum.unattributed), (1, 0));
    let (sum, _) = stop(
        home.path(),
        Some("unlogged"),
        Some(&missing),
        Some(msg),
        &env,
        &calls,
    );
    assert_eq!((sum.markers.len(), sum.unattributed), (1, 0));
    // One untimed assistant marker for `late`: total 1.
    let untimed = home.path().join("untimed.jsonl");
    std::fs::write(
        &untimed,
        format!(
            "{}\n",
            json!({"type": "assistant", "message": {"content": msg}})
        ),
    )
    .unwrap();
    let (sum, _) = stop(
        home.path(),
        Some("late"),
        Some(&untimed),
        None,
        &env,
        &calls,
    );
    assert_eq!((sum.markers.len(), sum.unattributed), (1, 1));
}

#[test]
fn decision_164_no_identity_means_no_session_and_unknown() {
    let home = tempfile::tempdir().unwrap();
    record_all(home.path(), "first", 4);
    // Another session is the most recently active one; nothing may borrow from it.
    let t = transcript(home.path());
    let (sum, recs) = stop_plain(home.path(), None, &t);
    assert_eq!(sum.markers.len(), 6);
    for (i, r) in recs.iter().enumerate() {
        let a = attrs(r);
        assert!(a.get("session_id").is_none(), "marker {i} names no session");
        assert!(r.session.is_none());
        let want = if i == 4 { "fleet" } else { "unknown" };
        assert_eq!(a["attribution"], want);
        for f in ["task", "task_revision", "swarm", "lane", "project_id"] {
            assert!(a.get(f).is_none(), "marker {i} has no {f}");
        }
    }
    assert!(ScopeLog::open(home.path(), "first").transitions().len() == 4);
}

#[test]
fn markers_are_read_only_once_across_incremental_stops() {
    let home = tempfile::tempdir().unwrap();
    let t = transcript(home.path());
    let (first, _) = stop_plain(home.path(), Some("inc"), &t);
    assert_eq!(first.markers.len(), 6);
    let (second, _) = stop_plain(home.path(), Some("inc"), &t);
    assert_eq!(second.markers.len(), 0);
    let mut f = std::fs::OpenOptions::new().append(true).open(&t).unwrap();
    writeln!(f, "{}", json!({"type": "assistant", "timestamp": "2026-10-08T11:00:00Z", "cwd": "/work/beta", "gitBranch": "main", "message": {"content": "<!-- @decision -->New.<!-- @/decision -->"}})).unwrap();
    let (third, _) = stop_plain(home.path(), Some("inc"), &t);
    assert_eq!(third.markers.len(), 1);
    assert_eq!(third.markers[0].content, "New.");
}

// ---------------------------------------------------------------- long logs

/// The session of the long-log Stops.
const KEY: &str = "long";

fn long_iso(secs: u64) -> String {
    format!(
        "2026-10-08T{:02}:{:02}:{:02}Z",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

fn long_user(secs: u64, cwd: &str) -> String {
    json!({"type": "user", "timestamp": long_iso(secs), "cwd": cwd, "gitBranch": "main",
           "message": {"role": "user", "content": "hello"}})
    .to_string()
}

fn long_marker(secs: u64, cwd: &str, lesson: &str) -> String {
    json!({"type": "assistant", "timestamp": long_iso(secs), "cwd": cwd, "gitBranch": "main",
           "message": {"role": "assistant", "content": [
               {"type": "text", "text": format!("<!-- @lesson -->{lesson}<!-- @/lesson -->")}]}})
    .to_string()
}

fn append_lines(path: &Path, lines: &[String]) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

struct Home {
    dir: tempfile::TempDir,
    transcript: PathBuf,
    /// Remove the log's state before each Stop (the whole-read way).
    whole: bool,
}

impl Home {
    fn new(whole: bool) -> Home {
        let dir = tempfile::tempdir().unwrap();
        let transcript = dir.path().join("t.jsonl");
        Home {
            dir,
            transcript,
            whole,
        }
    }

    fn log(&self) -> ScopeLog {
        ScopeLog::open(self.dir.path(), KEY)
    }

    fn stop(&self, lines: &[String]) -> Vec<Value> {
        append_lines(&self.transcript, lines);
        if self.whole {
            let _ = std::fs::remove_file(self.log().state_path().unwrap());
        }
        let calls = Arc::new(Mutex::new(Vec::new()));
        let home = self.dir.path();
        let (sum, records) = stop(
            home,
            Some(KEY),
            Some(&self.transcript),
            None,
            &Env::new(),
            &calls,
        );
        assert!(sum.errors.is_empty(), "{:?}", sum.errors);
        records.into_iter().map(|r| r.body).collect()
    }
}

/// Stops on a session whose scope log is long (past the size read whole): each Stop
/// starts from the log's cached state and attributes through the rows change detection
/// hands on, yet writes the same log and the same marker bodies as Stops that read the
/// log whole every time (the state removed before each), for markers later than every
/// row and markers earlier than the latest (which read the log).
#[test]
fn stops_on_a_long_log_write_and_attribute_as_whole_reads_do() {
    let (cached, whole) = (Home::new(false), Home::new(true));
    // About 1,600 rows: past the size a log is read whole at.
    let first: Vec<String> = (0..1600)
        .map(|i| long_user(i, if i % 2 == 0 { "/w/a" } else { "/w/b" }))
        .collect();
    // Each later Stop: one new row (user line at the first time, in the folder) and
    // a marker (at the second time); `None`: another writer records a row instead.
    let later = [
        // The marker is later than every row: the window.
        Some((1700, "/w/c", 1701, "Late.")),
        // Earlier than the latest row: the log is read for it.
        Some((1800, "/w/d", 10, "Early.")),
        // Another writer between Stops, then a marker at its row's instant.
        None,
        Some((1900, "/w/a", 1850, "Between.")),
        // A line older than the latest row (skipped), then a marker in its folder.
        Some((1, "/w/b", 1901, "After.")),
    ];
    let mut steps: Vec<Vec<String>> = vec![first];
    for step in later {
        steps.push(
            step.map_or_else(Vec::new, |(row_at, cwd, marker_at, lesson)| {
                vec![long_user(row_at, cwd), long_marker(marker_at, cwd, lesson)]
            }),
        );
    }
    let mut bodies: Vec<Value> = Vec::new();
    for (n, lines) in steps.iter().enumerate() {
        if n == 3 {
            for h in [&cached, &whole] {
                let scope = transcope_core::Scope::default()
                    .with(transcope_core::ScopeField::Cwd, "/elsewhere");
                h.log()
                    .record(&scope, &long_iso(1850), None)
                    .unwrap()
                    .unwrap();
            }
            continue;
        }
        let a = cached.stop(lines);
        let b = whole.stop(lines);
        assert_eq!(a, b, "Stop {n}");
        let (la, lb) = (
            std::fs::read(cached.log().path().unwrap()).unwrap(),
            std::fs::read(whole.log().path().unwrap()).unwrap(),
        );
        assert!(la == lb, "Stop {n}: the logs differ");
        // The cached home kept a state, which the next read starts from.
        assert!(cached.log().state_path().unwrap().is_file());
        assert_eq!(
            cached.log().transaction().read_from(),
            Some(la.len() as u64)
        );
        bodies.extend(a);
    }
    // Each marker took the scope in force at its own time.
    for (lesson, cwd) in [
        ("Late.", "/w/c"),
        ("Early.", "/w/a"),
        ("Between.", "/elsewhere"),
        ("After.", "/w/b"),
    ] {
        let body = bodies
            .iter()
            .find(|b| b["content"] == lesson)
            .unwrap_or_else(|| panic!("{lesson} not delivered: {bodies:?}"));
        assert_eq!(body["attrs"]["cwd"], cwd, "{lesson}: {body}");
    }
}

// ---------------------------------------------------------------- HTTP

/// A tiny HTTP/1.1 server on 127.0.0.1 answering each request with the next status
/// (0 = hang past any client timeout), recording (idempotency key, body).
/// (idempotency key, body) of one request.
type Request = (Option<String>, Vec<u8>);

struct Server {
    url: String,
    seen: Arc<Mutex<Vec<Request>>>,
}

impl Server {
    fn start(statuses: Vec<u16>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        std::thread::spawn(move || {
            let mut statuses = statuses.into_iter();
            for stream in listener.incoming().take(16) {
                let Ok(mut stream) = stream else { break };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut key = None;
                let mut len = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        break;
                    }
                    let l = line.trim_end().to_ascii_lowercase();
                    if l.is_empty() {
                        break;
                    }
                    if let Some(v) = l.strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                    if l.starts_with("idempotency-key:") {
                        key = Some(line.trim_end()[16..].trim().to_owned());
                    }
                }
                let mut body = vec![0; len];
                let _ = reader.read_exact(&mut body);
                s.lock().unwrap().push((key, body));
                let status = statuses.next().unwrap_or(200);
                if status == 0 {
                    std::thread::sleep(Duration::from_secs(3));
                    continue;
                }
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
            }
        });
        Server { url, seen }
    }

    fn requests(&self) -> Vec<Request> {
        self.seen.lock().unwrap().clone()
    }
}

fn record(kind: &str, content: &str) -> MarkerRecord {
    MarkerRecord {
        body: json!({"type": kind, "content": content, "attrs": {"attribution": "unknown", "session_id": "s", "source": "agent"}}),
        content: content.into(),
        idempotency_key: transcope_brain::body::idempotency_key("s", kind, content),
        session: Some("s".into()),
    }
}

#[test]
fn http_sink_accepts_refuses_and_times_out_into_the_outbox() {
    let home = tempfile::tempdir().unwrap();
    let outbox = home.path().join("outbox");
    let server = Server::start(vec![201, 0, 200]);
    let client = BrainClient::new(&server.url, Duration::from_millis(500));
    let mut sink = HttpSink::new(client.clone(), OutboxSink::new(&outbox, "a", ""));
    assert_eq!(
        sink.deliver(&record("lesson", "one")).unwrap(),
        Delivery::Sent
    );
    let t0 = std::time::Instant::now();
    assert!(matches!(
        sink.deliver(&record("lesson", "two")).unwrap(),
        Delivery::Outboxed(_)
    ));
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "the client gives up at its timeout"
    );
    // After a failure, the rest of the run goes to the outbox without a POST.
    let t0 = std::time::Instant::now();
    assert!(matches!(
        sink.deliver(&record("lesson", "three")).unwrap(),
        Delivery::Outboxed(_)
    ));
    assert!(t0.elapsed() < Duration::from_millis(400), "not tried");
    assert_eq!(sink.not_tried, 1);
    assert!(sink.last_failure.is_some());
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "the third marker was never POSTed");
    assert_eq!(
        reqs[0].0.as_deref(),
        Some(record("lesson", "one").idempotency_key.as_str())
    );
    let posted: Value = serde_json::from_slice(&reqs[0].1).unwrap();
    assert_eq!(posted["content"], "one");
    let files: Vec<_> = std::fs::read_dir(&outbox).unwrap().flatten().collect();
    assert_eq!(files.len(), 2);
    // The same marker failing again does not add a second file.
    let down = BrainClient::new("http://127.0.0.1:9", Duration::from_millis(200));
    let mut sink = HttpSink::new(down, OutboxSink::new(&outbox, "a", ""));
    sink.deliver(&record("lesson", "two")).unwrap();
    assert_eq!(std::fs::read_dir(&outbox).unwrap().count(), 2);
}

/// A client's POSTs share its budget: once spent, a POST fails at once, unsent.
#[test]
fn a_spent_budget_sends_nothing() {
    let server = Server::start(vec![200, 200]);
    let client = BrainClient::new(&server.url, Duration::from_secs(2)).within(Duration::ZERO);
    let t0 = std::time::Instant::now();
    assert!(matches!(
        client.post(&json!({"type": "lesson"}), "k"),
        transcope_brain::PostResult::Failed(_)
    ));
    assert!(t0.elapsed() < Duration::from_millis(200));
    assert!(server.requests().is_empty());
}

/// One sink delivering many markers keeps the outbox's listing between them, and still
/// sees what others did to the folder meanwhile: a file another writer left for the
/// same marker, and a file a drain took away.
#[test]
fn a_long_lived_outbox_sink_sees_what_others_change() {
    let home = tempfile::tempdir().unwrap();
    let outbox = home.path().join("outbox");
    let mut ob = OutboxSink::new(&outbox, "a", "");
    let count = || std::fs::read_dir(&outbox).unwrap().count();
    for c in ["a", "b", "c"] {
        ob.deliver(&record("lesson", c)).unwrap();
    }
    // Delivered again through the same sink: found, not written twice.
    ob.deliver(&record("lesson", "b")).unwrap();
    assert_eq!(count(), 3);
    // Another writer leaves "d" (after a clock tick, as a separate process would).
    std::thread::sleep(Duration::from_millis(20));
    let d = record("lesson", "d");
    let theirs = outbox.join(format!(
        "20200101T000000-lesson-{}.json",
        &d.idempotency_key[..8]
    ));
    std::fs::write(&theirs, b"{}").unwrap();
    let Delivery::Outboxed(p) = ob.deliver(&d).unwrap() else {
        panic!()
    };
    assert_eq!(p, theirs);
    assert_eq!(count(), 4);
    // A drain sends and removes "a": delivering it again writes it again.
    std::thread::sleep(Duration::from_millis(20));
    let a = record("lesson", "a");
    for e in std::fs::read_dir(&outbox).unwrap().flatten() {
        if e.file_name()
            .to_string_lossy()
            .contains(&a.idempotency_key[..8])
        {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
    assert_eq!(count(), 3);
    ob.deliver(&a).unwrap();
    assert_eq!(count(), 4);
}

/// A batch is delivered as its records one by one would be: in order, each file once,
/// a record already waiting (or repeated within the batch) found instead of rewritten,
/// and a missing outbox made private first.
#[test]
fn an_outbox_batch_is_its_records_in_order() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let outbox = home.path().join("deep/outbox");
    let mut ob = OutboxSink::new(&outbox, "a", "");
    let recs: Vec<_> = ["a", "b", "a", "c"]
        .iter()
        .map(|c| record("lesson", c))
        .collect();
    let got = ob.deliver_all(&recs).unwrap();
    assert_eq!(got.len(), 4);
    assert_eq!(got[0], got[2], "a repeat in the batch finds the first file");
    assert_eq!(std::fs::read_dir(&outbox).unwrap().count(), 3);
    assert_eq!(
        std::fs::metadata(&outbox).unwrap().permissions().mode() & 0o777,
        0o700
    );
    // The same batch through a fresh sink (another process): nothing new is written,
    // and each record is found where the first batch put it.
    let again = OutboxSink::new(&outbox, "a", "")
        .deliver_all(&recs)
        .unwrap();
    assert_eq!(again, got);
    assert_eq!(std::fs::read_dir(&outbox).unwrap().count(), 3);
    // Each file holds its own record.
    for (d, r) in got.iter().zip(&recs) {
        let Delivery::Outboxed(p) = d else { panic!() };
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
        assert_eq!(v["idempotency_key"], r.idempotency_key.as_str());
    }
    assert!(ob.deliver_all(&[]).unwrap().is_empty());
}

#[test]
fn outbox_files_are_indent_2_json_in_the_reference_key_order() {
    let home = tempfile::tempdir().unwrap();
    let mut ob = OutboxSink::new(home.path(), "agent-x", "/proj")
        .with_clock(Instant::from_unix_micros(1_791_453_600_000_000));
    let rec = record("lesson", "café");
    let Delivery::Outboxed(p) = ob.deliver(&rec).unwrap() else {
        panic!()
    };
    let name = p.file_name().unwrap().to_str().unwrap().to_owned();
    assert_eq!(
        name,
        format!("20261008T100000-lesson-{}.json", &rec.idempotency_key[..8])
    );
    let text = std::fs::read_to_string(&p).unwrap();
    assert_eq!(
        text,
        format!(
            "{{\n  \"type\": \"lesson\",\n  \"content\": \"caf\\u00e9\",\n  \"attrs\": {{\n    \"attribution\": \"unknown\",\n    \"session_id\": \"s\",\n    \"source\": \"agent\"\n  }},\n  \"idempotency_key\": \"{}\",\n  \"session_id\": \"s\",\n  \"agent_name\": \"agent-x\",\n  \"project\": \"/proj\",\n  \"ts\": \"2026-10-08T10:00:00+00:00\"\n}}",
            rec.idempotency_key
        )
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn drain_stops_at_the_first_refusal_and_quarantines_bad_files() {
    let home = tempfile::tempdir().unwrap();
    let outbox = home.path().join("outbox");
    let mut ob = OutboxSink::new(&outbox, "a", "");
    for c in ["a", "b", "c", "d"] {
        ob.deliver(&record("lesson", c)).unwrap();
    }
    std::fs::write(
        outbox.join("00000000T000000-lesson-zzzzzzzz.json"),
        b"{not json",
    )
    .unwrap();
    let mut backlog = outbox.as_os_str().to_owned();
    backlog.push("-backlog");
    std::fs::create_dir_all(&backlog).unwrap();
    std::fs::write(
        PathBuf::from(&backlog).join("x.json"),
        serde_json::to_vec(&json!({"type": "decision", "content": "old", "attrs": {}, "session_id": "writer", "ts": "2026-01-01T00:00:00+00:00"})).unwrap(),
    )
    .unwrap();
    // backlog → 200; then outbox sorted: the bad file (quarantined, no request), then
    // a → 422 (quarantined), b → 500 (stop).
    let server = Server::start(vec![200, 422, 500]);
    let client = BrainClient::new(&server.url, Duration::from_secs(2));
    let mut looked = Vec::new();
    let report = drain(&outbox, &client, "agent", &mut |_, session, _| {
        looked.push(session.map(str::to_owned));
        None
    });
    assert_eq!(report.sent, 1);
    assert_eq!(report.quarantined, 2);
    assert!(report.stopped);
    // The legacy backlog record is replayed under its writer's session, never the
    // drainer's.
    assert_eq!(looked, [Some("writer".to_owned())]);
    let reqs = server.requests();
    let first: Value = serde_json::from_slice(&reqs[0].1).unwrap();
    assert_eq!(first["attrs"]["session_id"], "writer");
    assert_eq!(first["attrs"]["ts"], "2026-01-01T00:00:00+00:00");
    let names: Vec<String> = std::fs::read_dir(&outbox)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.iter().filter(|n| n.ends_with(".bad")).count(), 2);
    assert_eq!(names.iter().filter(|n| n.ends_with(".json")).count(), 3);
}

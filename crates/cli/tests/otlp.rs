//! `transcope export otlp` against a real OTLP/HTTP receiver on 127.0.0.1 that
//! decodes with another implementation than the one that encoded (the OpenTelemetry
//! project's Python protobuf classes, `tests/otlp/receiver.py`): token sums per
//! project, branch, task and model equal `usage --json`; every transition and marker
//! arrives once with its time and attributes; a second export sends nothing; a
//! receiver answering 503 then 200 loses and doubles nothing; a run killed mid-export
//! and run again doubles nothing the receiver acknowledged.
//!
//! The receiver needs Python with `opentelemetry-proto` (`TRANSCOPE_TEST_PYTHON`, else
//! `python3`; `.ci/py-clients` installs it into `target/py`, `.ci/run` runs that). Without it the tests say so and
//! pass, except under CI (`CI` set), where they fail.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, clean_env, parse_json_lines, run, succeeded};
use serde_json::Value;

fn python() -> Option<PathBuf> {
    let py = std::env::var_os("TRANSCOPE_TEST_PYTHON")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("python3"));
    let ok = Command::new(&py)
        .args([
            "-c",
            "import opentelemetry.proto.collector.metrics.v1.metrics_service_pb2",
        ])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some(py);
    }
    transcope_testkit::missing(
        &format!(
            "{} cannot import opentelemetry-proto under CI: the OTLP tests must not skip \
             (.ci/py-clients installs it into target/py; .ci/run sets TRANSCOPE_TEST_PYTHON)",
            py.display()
        ),
        &format!(
            "{} cannot import opentelemetry-proto (pip install opentelemetry-proto, or set \
             TRANSCOPE_TEST_PYTHON)",
            py.display()
        ),
    );
    None
}

/// A receiver process, killed when dropped.
struct Receiver {
    child: Child,
    port: u16,
    out: PathBuf,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    fn start(py: &Path, dir: &Path, port: Option<u16>, extra: &[&str]) -> Receiver {
        let port_file = dir.join("port");
        let _ = std::fs::remove_file(&port_file);
        let out = dir.join("received.jsonl");
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/otlp/receiver.py");
        let mut cmd = Command::new(py);
        cmd.arg(script).arg(&port_file).arg(&out);
        if let Some(p) = port {
            cmd.args(["--port", &p.to_string()]);
        }
        let child = cmd.args(extra).spawn().expect("start the receiver");
        let until = Instant::now() + Duration::from_secs(30);
        let port = loop {
            if let Ok(t) = std::fs::read_to_string(&port_file) {
                break t.trim().parse().unwrap();
            }
            assert!(Instant::now() < until, "the receiver did not start");
            std::thread::sleep(Duration::from_millis(20));
        };
        Receiver { child, port, out }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn received(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.out)
            .map(|t| parse_json_lines(&t))
            .unwrap_or_default()
    }
}

/// A home with a generated archive (Claude, Codex and Gemini sessions, markers,
/// usage) and the sample archive backfilled.
fn backfilled() -> (tempfile::TempDir, tempfile::TempDir) {
    let corpus = tempfile::tempdir().unwrap();
    let mut spec = transcope_corpus::CorpusSpec::new(39, 3 << 20);
    spec.codex_share = 0.3;
    spec.gemini_share = 0.2;
    transcope_corpus::generate(&spec, corpus.path()).unwrap();
    common::copy_tree(
        &common::testdata().join("sample-archive"),
        &corpus.path().join("sample"),
    );
    let home = tempfile::tempdir().unwrap();
    let out = run(
        home.path(),
        &["backfill", corpus.path().to_str().unwrap()],
        "",
        &[],
    );
    succeeded(&out, &"backfill");
    (home, corpus)
}

fn export(home: &Path, url: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["export", "otlp", "--no-sync", "--json", "--endpoint", url];
    args.extend_from_slice(extra);
    run(home, &args, "", &[])
}

fn report(out: &std::process::Output) -> Value {
    let text = succeeded(out, &"export otlp");
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

type Key = (String, String, String, String);

/// `usage --json` by project, branch, task and model: each group's four counts.
fn usage_sums(home: &Path) -> BTreeMap<Key, [i64; 4]> {
    let out = run(
        home,
        &[
            "usage",
            "--json",
            "--no-sync",
            "--by",
            "project",
            "--by",
            "branch",
            "--by",
            "task",
            "--by",
            "model",
        ],
        "",
        &[],
    );
    let mut sums = BTreeMap::new();
    for g in parse_json_lines(&succeeded(&out, &"usage")) {
        let s = |k: &str| g[k].as_str().unwrap_or("").to_owned();
        let n = |k: &str| g[k].as_i64().unwrap();
        let key = (s("project_id"), s("branch"), s("task"), s("model"));
        let row = [
            n("input_tokens"),
            n("output_tokens"),
            n("cache_creation_input_tokens"),
            n("cache_read_input_tokens"),
        ];
        assert!(sums.insert(key, row).is_none());
    }
    sums
}

/// The receiver's token points summed the same way, from their attributes.
fn received_sums(got: &[Value]) -> BTreeMap<Key, [i64; 4]> {
    let mut sums: BTreeMap<Key, [i64; 4]> = BTreeMap::new();
    for p in got
        .iter()
        .filter(|p| p["signal"] == "metric" && p["name"] == "gen_ai.client.token.usage")
    {
        assert_eq!(p["kind"], "histogram");
        assert_eq!(p["unit"], "{token}");
        assert_eq!(p["temporality"], 1, "delta");
        assert_eq!(p["count"], 1);
        let a = &p["attrs"];
        let s = |k: &str| a[k].as_str().unwrap_or("").to_owned();
        let key = (
            s("transcope.project_id"),
            s("vcs.ref.head.name"),
            s("transcope.task"),
            s("gen_ai.request.model"),
        );
        let slot = match (
            s("gen_ai.token.type").as_str(),
            s("transcope.token.kind").as_str(),
        ) {
            ("input", "input") => 0,
            ("output", "output" | "reasoning") => 1,
            ("input", "cache_creation") => 2,
            ("input", "cache_read") => 3,
            other => panic!("a token point of an unknown kind: {other:?}"),
        };
        assert!(!s("gen_ai.conversation.id").is_empty());
        sums.entry(key).or_default()[slot] += p["value"].as_f64().unwrap() as i64;
    }
    sums
}

/// Every transition, from the scope logs themselves (the source of truth the index
/// mirrors): id → (time in ns, branch).
fn logged_transitions(home: &Path) -> BTreeMap<String, (u64, String)> {
    let mut all = BTreeMap::new();
    for e in std::fs::read_dir(home.join("brain/session-scopes")).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        for row in parse_json_lines(&text) {
            let tid = row["transition_id"].as_str().unwrap().to_owned();
            let at = row["at"].as_str().unwrap();
            let ns = transcope_core::timestamp::parse(at).unwrap().unix_micros() as u64 * 1000;
            all.insert(tid, (ns, row["branch"].as_str().unwrap_or("").to_owned()));
        }
    }
    all
}

fn ledger_keys(home: &Path) -> BTreeMap<String, String> {
    let out = run(home, &["ledger", "--json", "--no-sync"], "", &[]);
    parse_json_lines(&succeeded(&out, &"ledger"))
        .into_iter()
        .map(|m| {
            (
                m["idempotency_key"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// What arrived, checked against the index: each transition and marker once, with
/// its time and attributes, and the token sums of `usage --json`.
fn assert_exact(home: &Path, got: &[Value]) {
    assert_eq!(received_sums(got), usage_sums(home));

    let transitions = logged_transitions(home);
    assert!(transitions.len() > 20, "{}", transitions.len());
    let mut seen = BTreeSet::new();
    for r in got
        .iter()
        .filter(|r| r["event"] == "transcope.scope.transition")
    {
        let id = r["attrs"]["transcope.transition_id"].as_str().unwrap();
        assert!(seen.insert(id.to_owned()), "transition {id} arrived twice");
        let (ns, branch) = &transitions[id];
        assert_eq!(r["time"].as_u64().unwrap(), *ns, "{id}");
        assert_eq!(
            r["attrs"]["vcs.ref.head.name"].as_str().unwrap_or(""),
            branch,
            "{id}"
        );
        assert!(
            r["body"].as_str().unwrap().contains(id),
            "the body is the log's line"
        );
    }
    assert_eq!(seen.len(), transitions.len());

    let markers = ledger_keys(home);
    assert!(markers.len() > 5, "{}", markers.len());
    let mut seen = BTreeSet::new();
    for r in got.iter().filter(|r| r["event"] == "transcope.marker") {
        let key = r["attrs"]["transcope.idempotency_key"].as_str().unwrap();
        assert!(seen.insert(key.to_owned()), "marker {key} arrived twice");
        assert_eq!(
            r["body"].as_str().unwrap(),
            markers[key],
            "a marker's body is its text"
        );
        assert!(r["time"].as_u64().unwrap() > 0);
    }
    assert_eq!(seen.len(), markers.len());
}

#[test]
fn an_export_sends_every_row_once_and_a_second_sends_nothing() {
    let Some(py) = python() else { return };
    let (home, _corpus) = backfilled();
    let dir = tempfile::tempdir().unwrap();
    let rx = Receiver::start(&py, dir.path(), None, &[]);

    let first = report(&export(home.path(), &rx.url(), &["--batch", "50"]));
    let got = rx.received();
    assert_exact(home.path(), &got);
    assert!(first["batches"].as_u64().unwrap() > 2, "{first}");
    let posts = got.iter().filter(|p| p["signal"] == "post").count() as u64;
    assert_eq!(posts, first["batches"].as_u64().unwrap());
    // The resource names the sender.
    let any = got.iter().find(|p| p["signal"] == "metric").unwrap();
    assert_eq!(any["resource"]["service.name"], "transcope");

    let second = report(&export(home.path(), &rx.url(), &[]));
    assert_eq!(second["batches"], 0, "{second}");
    assert_eq!(second["requests"], 0, "{second}");
    assert_eq!(
        rx.received().len(),
        got.len(),
        "a second export sent something"
    );

    // An index made again from the logs and transcripts keeps what the receiver has.
    succeeded(
        &run(home.path(), &["index", "rebuild"], "", &[]),
        &"rebuild",
    );
    let third = report(&export(home.path(), &rx.url(), &[]));
    assert_eq!(third["batches"], 0, "{third}");
    assert_eq!(
        rx.received().len(),
        got.len(),
        "an export after a rebuild sent something"
    );
}

#[test]
fn a_receiver_that_answers_503_then_200_loses_and_doubles_nothing() {
    let Some(py) = python() else { return };
    let (home, _corpus) = backfilled();
    let dir = tempfile::tempdir().unwrap();
    let rx = Receiver::start(&py, dir.path(), None, &["--script", "503,200,429,503,200"]);
    let done = report(&export(
        home.path(),
        &rx.url(),
        &["--batch", "40", "--backoff-ms", "10"],
    ));
    assert_eq!(done["retries"], 3, "{done}");
    assert_exact(home.path(), &rx.received());
}

#[test]
fn a_run_killed_mid_export_then_run_again_doubles_nothing_acknowledged() {
    let Some(py) = python() else { return };
    let (home, _corpus) = backfilled();
    let dir = tempfile::tempdir().unwrap();
    let first = Receiver::start(&py, dir.path(), None, &["--hang-on", "4"]);
    let port = first.port;
    let mut cmd = Command::new(bin());
    cmd.arg("--home")
        .arg(home.path())
        .args(["export", "otlp", "--no-sync", "--batch", "30", "--endpoint"])
        .arg(first.url())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    clean_env(&mut cmd);
    let mut child = cmd.spawn().unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    while !dir.path().join("HANG").exists() {
        assert!(
            Instant::now() < until,
            "the export never reached its fourth batch"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the export ended early"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let acknowledged = first.received();
    assert_eq!(
        acknowledged
            .iter()
            .filter(|p| p["signal"] == "post")
            .count(),
        3,
        "three batches acknowledged before the kill"
    );
    drop(first);

    // The same receiver (the same URL: the same sink) comes back; the run again.
    std::fs::rename(
        dir.path().join("received.jsonl"),
        dir.path().join("before.jsonl"),
    )
    .unwrap();
    let again = Receiver::start(&py, dir.path(), Some(port), &[]);
    report(&export(home.path(), &again.url(), &[]));
    let mut all = acknowledged;
    all.extend(again.received());
    assert_exact(home.path(), &all);
}

#[test]
fn a_dry_run_prints_otlp_json_and_sends_and_records_nothing() {
    let (home, _corpus) = backfilled();
    // Nothing listens there: a dry run does not connect.
    let out = export(home.path(), "http://127.0.0.1:9", &["--dry-run"]);
    let text = succeeded(&out, &"export --dry-run");
    let lines = parse_json_lines(&text);
    let requests: Vec<&Value> = lines.iter().filter(|l| l.get("url").is_some()).collect();
    assert!(requests
        .iter()
        .any(|r| r["url"] == "http://127.0.0.1:9/v1/metrics"
            && r["body"]["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0]["name"]
                == "gen_ai.client.token.usage"));
    let logs = requests
        .iter()
        .find(|r| r["url"] == "http://127.0.0.1:9/v1/logs")
        .unwrap();
    let record = &logs["body"]["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0];
    // OTLP/JSON: 64-bit integers as decimal strings.
    assert!(
        record["timeUnixNano"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > 0
    );
    // Nothing recorded: a second dry run prints the same requests.
    let again = export(home.path(), "http://127.0.0.1:9", &["--dry-run"]);
    assert_eq!(
        parse_json_lines(&succeeded(&again, &"again")).len(),
        lines.len()
    );
}

#[test]
fn a_refused_or_absent_receiver_is_a_clear_error_and_the_next_run_sends_it_all() {
    let Some(py) = python() else { return };
    let (home, _corpus) = backfilled();
    let dir = tempfile::tempdir().unwrap();
    let rx = Receiver::start(&py, dir.path(), None, &["--script", "200,400"]);
    let out = export(home.path(), &rx.url(), &["--batch", "40"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("answered 400"), "{err}");
    // The receiver comes back well: the run sends what was not acknowledged.
    drop(rx);
    let first =
        parse_json_lines(&std::fs::read_to_string(dir.path().join("received.jsonl")).unwrap());
    std::fs::remove_file(dir.path().join("received.jsonl")).unwrap();
    let port: u16 = {
        // The same URL as before.
        let url = String::from_utf8_lossy(&out.stderr).to_string();
        let at = url.find("127.0.0.1:").unwrap() + "127.0.0.1:".len();
        url[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap()
    };
    let rx = Receiver::start(&py, dir.path(), Some(port), &[]);
    report(&export(home.path(), &rx.url(), &[]));
    let mut all = first;
    all.extend(rx.received());
    assert_exact(home.path(), &all);
}

#[test]
fn a_request_that_grows_after_its_export_sends_only_the_difference() {
    let Some(py) = python() else { return };
    let (home, corpus) = backfilled();
    let dir = tempfile::tempdir().unwrap();
    let rx = Receiver::start(&py, dir.path(), None, &[]);
    report(&export(home.path(), &rx.url(), &[]));

    // A streamed answer's later line counts more output (the index keeps the largest).
    let grown = common::grow_streamed_requests(corpus.path(), 5);
    assert_eq!(grown, 5);
    let out = run(
        home.path(),
        &["backfill", corpus.path().to_str().unwrap()],
        "",
        &[],
    );
    succeeded(&out, &"backfill again");

    let again = report(&export(home.path(), &rx.url(), &[]));
    assert_eq!(again["grown"], 5, "{again}");
    assert_exact(home.path(), &rx.received());
}

#[test]
fn the_endpoint_and_headers_come_from_the_opentelemetry_variables_when_not_given() {
    let Some(py) = python() else { return };
    let (home, _corpus) = backfilled();
    let dir = tempfile::tempdir().unwrap();
    let rx = Receiver::start(&py, dir.path(), None, &[]);
    let url = rx.url();
    let out = run(
        home.path(),
        &["export", "otlp", "--no-sync", "--json"],
        "",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", url.as_str()),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Bearer%20s3cret,x-tenant=team-a",
            ),
        ],
    );
    let done = report(&out);
    let posts: Vec<Value> = rx
        .received()
        .into_iter()
        .filter(|p| p["signal"] == "post")
        .collect();
    assert_eq!(posts.len() as u64, done["batches"].as_u64().unwrap());
    for p in &posts {
        assert_eq!(p["headers"]["authorization"], "Bearer s3cret", "{p}");
        assert_eq!(p["headers"]["x-tenant"], "team-a", "{p}");
        assert_eq!(p["headers"]["content-type"], "application/x-protobuf");
    }
    // --header replaces the variable's headers.
    let dir2 = tempfile::tempdir().unwrap();
    let rx2 = Receiver::start(&py, dir2.path(), None, &[]);
    let url2 = rx2.url();
    report(&run(
        home.path(),
        &[
            "export",
            "otlp",
            "--no-sync",
            "--json",
            "--header",
            "x-tenant=team-b",
        ],
        "",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", url2.as_str()),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=team-a"),
        ],
    ));
    let posts = rx2.received();
    let first = posts.iter().find(|p| p["signal"] == "post").unwrap();
    assert_eq!(first["headers"]["x-tenant"], "team-b");
}

//! The fleet against the local index, with a real PostgreSQL (`TRANSCOPE_TEST_PG`,
//! started by `.ci/run`; under CI these tests fail rather than skip without it).
//!
//! The conformance kit asks the index of a home and the fleet that home was pushed to
//! every question, over the sample archive and a generated one, and requires equal
//! answers.

mod common;

use std::path::Path;

use common::{run, testdata, text};
use transcope_testkit::pg;

/// `transcope --home HOME args`, which must succeed; its stdout.
fn ok(home: &Path, args: &[&str]) -> String {
    common::succeeded(&run(home, args, "", &[]), &args)
}

/// A home backfilled from `archive`, pushed to `url` as `machine`.
fn pushed_home(archive: &Path, url: &str, machine: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    ok(
        home.path(),
        &["backfill", "--json", archive.to_str().unwrap()],
    );
    ok(
        home.path(),
        &["fleet", "push", "--to", url, "--machine", machine, "--json"],
    );
    home
}

fn conform(home: &Path, url: &str) -> transcope_testkit::store_kit::Asked {
    let index = transcope_index::Index::open(home).unwrap();
    let fleet = transcope_fleet::Fleet::connect(url, None).unwrap();
    let prices = transcope_pricing::Prices::builtin();
    transcope_testkit::store_kit::conform(
        &index,
        &fleet,
        &transcope_pricing::PriceList::new(&prices),
    )
}

#[test]
fn the_fleet_answers_every_question_as_the_index_does_over_the_sample_archive() {
    let Some(db) = pg::database("conform_sample") else {
        return;
    };
    let home = pushed_home(&testdata().join("sample-archive"), db.url(), "laptop");
    let asked = conform(home.path(), db.url());
    assert!(asked.questions > 500, "{asked:?}");
    assert!(asked.answered > 150, "{asked:?}");
}

#[test]
fn the_fleet_answers_every_question_as_the_index_does_over_a_generated_archive() {
    let Some(db) = pg::database("conform_generated") else {
        return;
    };
    let corpus = tempfile::tempdir().unwrap();
    transcope_corpus::generate(
        &transcope_corpus::CorpusSpec::new(35, 4 << 20),
        corpus.path(),
    )
    .unwrap();
    let home = pushed_home(corpus.path(), db.url(), "generated");
    let asked = conform(home.path(), db.url());
    assert!(asked.questions > 1000, "{asked:?}");
    assert!(asked.answered > 300, "{asked:?}");

    // Then the archive grows: a streamed request's later line with a larger output
    // count (the index keeps the largest: the fleet's row and its part change), and
    // a second archive's sessions; pushed again, only what changed moves, and every
    // answer is still the index's.
    let grown = common::grow_streamed_requests(corpus.path(), 3);
    assert_eq!(grown, 3, "streamed requests to grow");
    let more = tempfile::tempdir().unwrap();
    transcope_corpus::generate(&transcope_corpus::CorpusSpec::new(36, 1 << 20), more.path())
        .unwrap();
    ok(
        home.path(),
        &[
            "backfill",
            "--json",
            corpus.path().to_str().unwrap(),
            more.path().to_str().unwrap(),
        ],
    );
    let again = ok(
        home.path(),
        &[
            "fleet",
            "push",
            "--to",
            db.url(),
            "--machine",
            "generated",
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(again.trim()).unwrap();
    assert_eq!(v["whole"], false, "{again}");
    let requests = v["requests"].as_u64().unwrap();
    assert!(requests >= 3, "{again}");
    let total: u64 = psql(db.url(), "SELECT count(*) FROM usage")
        .trim()
        .parse()
        .unwrap();
    assert!(
        requests < total / 2,
        "an incremental push sends what changed: {again}"
    );
    let asked = conform(home.path(), db.url());
    assert!(asked.answered > 300, "{asked:?}");
}

/// `psql` on `url`, which must succeed.
fn psql(url: &str, sql: &str) -> String {
    let out = std::process::Command::new("psql")
        .args([url, "-XAtqc", sql])
        .output()
        .unwrap();
    assert!(out.status.success(), "psql {sql}: {}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn queries_read_the_fleet_and_name_each_rows_machine() {
    let Some(db) = pg::database("fleet_queries") else {
        return;
    };
    let home = pushed_home(&testdata().join("sample-archive"), db.url(), "laptop");
    let fleet = db.url();
    // Every session and marker names its machine; the local answers do not.
    let sessions = ok(home.path(), &["sessions", "--json", "--fleet", fleet]);
    assert!(sessions.lines().count() > 5, "{sessions}");
    for l in sessions.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["machine"], "laptop", "{l}");
    }
    let local = ok(home.path(), &["sessions", "--json", "--no-sync"]);
    assert!(!local.contains("\"machine\""), "{local}");
    let ledger = ok(home.path(), &["ledger", "--json", "--fleet", fleet]);
    assert!(ledger.lines().count() >= 6, "{ledger}");
    assert!(
        ledger.lines().all(|l| l.contains("\"machine\":\"laptop\"")),
        "{ledger}"
    );
    // Usage by machine: the fleet's rows by the machine that pushed them; on one
    // machine, that machine's name.
    let by_machine = ok(
        home.path(),
        &["usage", "--by", "machine", "--json", "--fleet", fleet],
    );
    let v: serde_json::Value = serde_json::from_str(by_machine.trim()).unwrap();
    assert_eq!(v["machine"], "laptop");
    let total = v["messages"].as_u64().unwrap();
    assert!(total > 0);
    let out = run(
        home.path(),
        &["usage", "--by", "machine", "--json", "--no-sync"],
        "",
        &[("TRANSCOPE_MACHINE", "this-box")],
    );
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(
        (v["machine"].as_str(), v["messages"].as_u64()),
        (Some("this-box"), Some(total))
    );
    // Explain says of the fleet what it says of the local log, for each session at a
    // few instants.
    for l in local.lines().take(4) {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let session = v["session"].as_str().unwrap();
        for at in [
            v["first_at"].as_str().unwrap(),
            v["last_at"].as_str().unwrap(),
            "2030-01-01T00:00:00Z",
        ] {
            let args = ["explain", "--json", "--session", session, "--at", at];
            let here = ok(home.path(), &[&args[..], &["--no-sync"]].concat());
            let there = ok(home.path(), &[&args[..], &["--fleet", fleet]].concat());
            let (a, mut b): (serde_json::Value, serde_json::Value) = (
                serde_json::from_str(&here).unwrap(),
                serde_json::from_str(&there).unwrap(),
            );
            for m in b["markers"].as_array_mut().unwrap() {
                m.as_object_mut().unwrap().remove("machine");
            }
            assert_eq!(a, b, "explain {session} at {at}");
        }
    }
    // A table, an explain and a report read the fleet too.
    let table = ok(home.path(), &["usage", "--fleet", fleet]);
    assert!(table.contains("total"), "{table}");
    let report = home.path().join("r.html");
    ok(
        home.path(),
        &[
            "report",
            "--html",
            report.to_str().unwrap(),
            "--fleet",
            fleet,
        ],
    );
    assert!(std::fs::read_to_string(&report)
        .unwrap()
        .contains("<!DOCTYPE html>"));
    // The status lists the machine and what it pushed.
    let status = ok(home.path(), &["fleet", "status", "--to", fleet, "--json"]);
    let v: serde_json::Value = serde_json::from_str(status.trim()).unwrap();
    assert_eq!(
        (v["machine"].as_str(), v["pushes"].as_i64()),
        (Some("laptop"), Some(1))
    );
    assert_eq!(
        v["sessions"].as_u64(),
        Some(sessions.lines().count() as u64)
    );
    // Pushed again with nothing new: nothing moves.
    let again = ok(
        home.path(),
        &[
            "fleet",
            "push",
            "--to",
            fleet,
            "--machine",
            "laptop",
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(again.trim()).unwrap();
    for k in ["sessions", "transitions", "markers", "requests"] {
        assert_eq!(v[k], 0, "{again}");
    }
    assert_eq!(v["whole"], false);
}

#[test]
fn a_newer_or_foreign_fleet_is_refused_and_nothing_is_written() {
    let Some(db) = pg::database("fleet_newer") else {
        return;
    };
    let home = pushed_home(&testdata().join("sample-archive"), db.url(), "laptop");
    psql(db.url(), "UPDATE transcope_schema SET version = 99");
    let before = psql(db.url(), "SELECT count(*) FROM sessions");
    let out = run(home.path(), &["fleet", "push", "--to", db.url()], "", &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("schema version 99, newer than this transcope's"),
        "{err}"
    );
    assert!(err.contains("upgrade transcope"), "{err}");
    assert_eq!(psql(db.url(), "SELECT count(*) FROM sessions"), before);
    let Some(other) = pg::database("fleet_foreign") else {
        return;
    };
    psql(other.url(), "CREATE TABLE sessions (x int)");
    let out = run(home.path(), &["sessions", "--fleet", other.url()], "", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("is not a transcope fleet"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        psql(
            other.url(),
            "SELECT count(*) FROM pg_tables WHERE tablename = 'transcope_schema'"
        ),
        "0\n"
    );
}

#[test]
fn no_fleet_is_a_usage_error_and_a_password_is_never_printed() {
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), &["fleet", "push"], "", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("TRANSCOPE_FLEET_URL"));
    let url = "postgresql://alice:s3cret-pw@127.0.0.1:1/fleet";
    for args in [
        vec!["fleet", "push", "--to", url],
        vec!["fleet", "status", "--to", url],
        vec!["sessions", "--fleet", url],
    ] {
        let out = run(home.path(), &args, "", &[]);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert!(!all.contains("s3cret-pw"), "{all}");
        assert!(all.contains("alice:***@127.0.0.1:1"), "{all}");
    }
    let out = run(
        home.path(),
        &["doctor", "--json"],
        "",
        &[("TRANSCOPE_FLEET_URL", url)],
    );
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!all.contains("s3cret-pw"), "{all}");
    let fleet = all
        .lines()
        .find(|l| l.contains("\"check\":\"fleet\""))
        .expect("a fleet check");
    assert!(
        fleet.contains("\"status\":\"fail\"") && fleet.contains("Connection refused"),
        "{fleet}"
    );
}

#[test]
fn doctor_says_the_fleet_is_reachable_and_whether_this_home_pushed() {
    let Some(db) = pg::database("fleet_doctor") else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let url = format!("{} password=never-shown", db.url());
    let check = |home: &Path| {
        let out = run(
            home,
            &["doctor", "--json"],
            "",
            &[("TRANSCOPE_FLEET_URL", &url)],
        );
        let all = text(&out.stdout);
        assert!(!all.contains("never-shown"), "{all}");
        all.lines()
            .find(|l| l.contains("\"check\":\"fleet\""))
            .expect("a fleet check")
            .to_owned()
    };
    let before = check(home.path());
    assert!(
        before.contains("\"status\":\"ok\"") && before.contains("not pushed"),
        "{before}"
    );
    ok(
        home.path(),
        &["fleet", "push", "--to", &url, "--machine", "box"],
    );
    let after = check(home.path());
    assert!(after.contains("pushed as box"), "{after}");
}

/// The database a key=value conninfo names, as another user.
fn as_user(url: &str, user: &str) -> String {
    url.split_whitespace()
        .map(|kv| {
            if kv.starts_with("user=") {
                format!("user={user}")
            } else {
                kv.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_documented_roles_push_and_read_and_nothing_more() {
    let Some(db) = pg::database("fleet_roles") else {
        return;
    };
    let home = pushed_home(&testdata().join("sample-archive"), db.url(), "owner-box");
    let roles = testdata().join("../docs/fleet/roles.sql");
    let out = std::process::Command::new("psql")
        .args([db.url(), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f"])
        .arg(&roles)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let pusher = as_user(db.url(), "transcope_push");
    let reader = as_user(db.url(), "transcope_read");
    // The pusher pushes a second machine's whole index; the reader reads it all.
    let other = tempfile::tempdir().unwrap();
    ok(
        other.path(),
        &[
            "backfill",
            testdata().join("sample-archive").to_str().unwrap(),
        ],
    );
    ok(
        other.path(),
        &["fleet", "push", "--to", &pusher, "--machine", "second"],
    );
    let status = ok(home.path(), &["fleet", "status", "--to", &reader, "--json"]);
    assert_eq!(status.lines().count(), 2, "{status}");
    let sessions = ok(home.path(), &["sessions", "--json", "--fleet", &reader]);
    assert!(sessions.lines().count() > 5);
    // The reader cannot push; neither can delete.
    let out = run(
        other.path(),
        &["fleet", "push", "--to", &reader, "--machine", "x"],
        "",
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("permission denied"),
        "{}",
        text(&out.stderr)
    );
    for who in [&pusher, &reader] {
        let out = std::process::Command::new("psql")
            .args([who.as_str(), "-XAtqc", "DELETE FROM usage"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(
            text(&out.stderr).contains("permission denied"),
            "{}",
            text(&out.stderr)
        );
    }
}

/// The README's "For a team" block, run as written (its `/tmp` homes and its database
/// made unique), with the built binary first on the PATH: what it prints is what the
/// README shows.
#[test]
fn the_readmes_team_walkthrough_runs_as_written() {
    let Some(admin) = pg::admin_url() else {
        return;
    };
    let root = testdata().join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let team = &readme[readme.find("## For a team").expect("the section")..];
    let block = &team[team.find("```bash\n").expect("its commands") + 8..];
    let block = &block[..block.find("```").unwrap()];
    let tmp = tempfile::tempdir().unwrap();
    let db = format!("readme_team_{}", std::process::id());
    let script = block
        .replace("/tmp/", &format!("{}/", tmp.path().display()))
        .replace("CREATE DATABASE team", &format!("CREATE DATABASE {db}"))
        .replace("dbname=team", &format!("dbname={db}"));
    let bin = std::path::PathBuf::from(env!("CARGO_BIN_EXE_transcope"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = std::process::Command::new("bash");
    cmd.args(["-euo", "pipefail", "-c", &script])
        .current_dir(&root)
        .env("PATH", path);
    common::clean_env(&mut cmd);
    let out = cmd.output().unwrap();
    let _ = std::process::Command::new("psql")
        .args([
            admin.as_str(),
            "-XAtqc",
            &format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"),
        ])
        .output();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // The README's lines, but for the times and the socket's folder.
    let shown: Vec<&str> = team[team.find("which prints").unwrap()..]
        .split("```")
        .nth(1)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    let printed: Vec<&str> = stdout.lines().collect();
    assert_eq!(printed.len(), shown.len(), "{stdout}");
    let words = |l: &str| -> Vec<String> {
        l.split_whitespace()
            .filter(|w| {
                !w.contains(':')
                    && !w.contains('…')
                    && !w.starts_with("2026-")
                    && !w.starts_with("dbname=")
                    && !w.starts_with("host=")
            })
            .map(str::to_owned)
            .collect()
    };
    for (p, s) in printed.iter().zip(&shown) {
        if s.starts_with("prices:") {
            assert!(p.starts_with("prices: litellm"), "{p}");
            continue;
        }
        assert_eq!(words(p), words(s), "printed {p:?}, the README shows {s:?}");
    }
}

/// `usage --by session --json` of the fleet at `url`, each line without its machine.
fn usage_by_session(home: &Path, url: &str) -> Vec<String> {
    ok(
        home,
        &["usage", "--by", "session", "--json", "--fleet", url],
    )
    .lines()
    .map(|l| {
        let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
        v.as_object_mut().unwrap().remove("machine");
        v.to_string()
    })
    .collect()
}

/// A request copied into two families (`public/claude` keeps sample transcripts under
/// other names: the same requests, times and all) is kept by each of two shards'
/// indexes. Pushed to one fleet, in either order, the fleet keeps the copy one run
/// keeps: the one read first (its place, which every shard numbers alike), not the
/// one of the smaller session key.
#[test]
fn two_shards_copies_of_a_request_keep_in_the_fleet_the_copy_one_run_keeps() {
    let (Some(one), Some(two)) = (pg::database("copies_one"), pg::database("copies_two")) else {
        return;
    };
    let roots = [
        testdata().join("sample-archive/claude/projects"),
        testdata().join("public/claude"),
    ];
    let backfill = |home: &Path, shard: Option<&str>| {
        let mut args = vec!["backfill", "--json"];
        args.extend(shard.map(|s| ["--shard", s]).into_iter().flatten());
        args.extend(roots.iter().map(|r| r.to_str().unwrap()));
        ok(home, &args);
    };
    let push = |home: &Path, url: &str, machine: &str| -> u64 {
        let out = ok(
            home,
            &["fleet", "push", "--to", url, "--machine", machine, "--json"],
        );
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["requests"].as_u64().unwrap()
    };
    let whole = tempfile::tempdir().unwrap();
    backfill(whole.path(), None);
    let requests = push(whole.path(), one.url(), "whole");
    let shards = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let mut held = 0;
    for (k, home) in shards.iter().enumerate().rev() {
        backfill(home.path(), Some(&format!("{k}/2")));
        held += push(home.path(), two.url(), &format!("shard-{k}"));
    }
    assert!(
        held > requests,
        "no copy in two shards: {held} ≤ {requests}"
    );
    assert_eq!(
        usage_by_session(whole.path(), two.url()),
        usage_by_session(whole.path(), one.url())
    );
}

//! Issue 35: two machines push to one fleet at once, each killed at a random moment
//! and pushed again, ten rounds, with new work between rounds. Every round the fleet
//! holds each row of the two machines' local indexes once, naming the machine that
//! holds it, and answers `sessions`, `ledger` and `usage --by project` (and `--by
//! machine`) as a test computes them from the two indexes; a push after a completed
//! one sends nothing, and a push after a killed one sends what a push that was never
//! killed sends. Real processes, a real PostgreSQL (`TRANSCOPE_TEST_PG`; under CI
//! the test fails without it).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::reliability::*;
use serde_json::Value;
use transcope_corpus::{CorpusSpec, FileKind};
use transcope_sqlite::rusqlite;
use transcope_testkit::pg;

/// One machine: its home, built from a generated corpus of its own.
struct Machine {
    name: &'static str,
    home: PathBuf,
    /// Its first corpus, and the seed of its corpora.
    corpus: PathBuf,
    seed: u64,
    /// Claude Code sessions of the corpus that end with a whole line, to append to.
    sessions: Vec<PathBuf>,
    /// The corpus's repositories, for the folders appended lines name.
    repos: Vec<String>,
}

impl Machine {
    /// A home backfilled from a generated corpus of about 4 MB (seed `seed`).
    fn new(sb: &Sandbox, name: &'static str, seed: u64) -> Machine {
        let corpus = sb.root.join(format!("corpus-{name}"));
        let manifest =
            transcope_corpus::generate(&CorpusSpec::new(seed, 4_000_000), &corpus).unwrap();
        let sessions: Vec<PathBuf> = manifest
            .entries
            .iter()
            .filter(|e| e.kind == FileKind::ClaudeSession && !e.torn_last_line)
            .map(|e| corpus.join(&e.path))
            .collect();
        let repos: Vec<String> = manifest
            .repos
            .iter()
            .filter(|r| r.kind == transcope_corpus::RepoKind::Main)
            .map(|r| r.path.clone())
            .collect();
        assert!(!sessions.is_empty() && repos.len() >= 2, "{name}'s corpus");
        let m = Machine {
            name,
            home: sb.root.join(format!("home-{name}")),
            corpus,
            seed,
            sessions,
            repos,
        };
        m.backfill(sb, &m.corpus);
        m
    }

    fn backfill(&self, sb: &Sandbox, root: &Path) -> Value {
        let args = backfill_args(&[root.to_owned()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let s: Value = serde_json::from_str(&stdout_in(&self.home, &sb.user, &args)).unwrap();
        assert_eq!(s["errors"], 0, "{}: {s}", self.name);
        s
    }

    /// Round `round`'s new work, if any: lines appended to one of its sessions (a
    /// request in each of two repositories, so a scope row, and a marker), then a
    /// backfill that reads them; or a further generated corpus backfilled (new
    /// sessions); or nothing. Returns what it did.
    fn work(&self, sb: &Sandbox, round: u64, i: u64) -> Work {
        match (round + i) % 3 {
            0 => Work::None,
            1 => {
                let t = &self.sessions[round as usize % self.sessions.len()];
                let mut lines = String::new();
                if !std::fs::read(t).unwrap().ends_with(b"\n") {
                    lines.push('\n');
                }
                for k in 0..2 {
                    let repo = &self.repos[(round as usize + k) % self.repos.len()];
                    let id = format!("msg_{}_{round}_{k}", self.name);
                    let text = if k == 0 {
                        format!(
                            "<!-- @lesson -->{} learned {round}<!-- @/lesson -->",
                            self.name
                        )
                    } else {
                        "working".to_owned()
                    };
                    let line = serde_json::json!({
                        "type": "assistant",
                        "timestamp": format!("2027-01-01T00:{round:02}:0{k}.000Z"),
                        "cwd": repo,
                        "gitBranch": "main",
                        "sessionId": "ignored-by-the-key",
                        "requestId": format!("req_{id}"),
                        "message": {"id": id, "role": "assistant",
                            "model": "claude-sonnet-4-20250514",
                            "content": [{"type": "text", "text": text}],
                            "usage": {"input_tokens": 100 + round, "output_tokens": 20,
                                "cache_creation_input_tokens": 5,
                                "cache_read_input_tokens": 50}},
                    });
                    lines.push_str(&format!("{line}\n"));
                }
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(t)
                    .and_then(|mut f| std::io::Write::write_all(&mut f, lines.as_bytes()))
                    .unwrap();
                let s = self.backfill(sb, &self.corpus);
                assert_eq!(s["usage_records"], 2, "{}: {s}", self.name);
                Work::Appended
            }
            _ => {
                let more = sb.root.join(format!("more-{}-{round}", self.name));
                transcope_corpus::generate(
                    &CorpusSpec::new(self.seed * 1000 + round, 600_000),
                    &more,
                )
                .unwrap();
                self.backfill(sb, &more);
                Work::Corpus
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Work {
    None,
    Appended,
    Corpus,
}

/// `each` for both machines (and their places) at once, on two threads; the results
/// in order.
fn both<T: Send>(machines: &[Machine; 2], each: impl Fn(usize, &Machine) -> T + Sync) -> [T; 2] {
    std::thread::scope(|s| {
        let each = &each;
        [0, 1]
            .map(|i| s.spawn(move || each(i, &machines[i])))
            .map(|h| h.join().unwrap())
    })
}

/// How many pushes each machine has committed to the fleet at `url`.
fn pushes(url: &str) -> BTreeMap<String, i64> {
    fleet::psql(url, "SELECT name, pushes FROM machines")
        .into_iter()
        .map(|r| (r[0].clone(), r[1].parse().unwrap()))
        .collect()
}

/// The rows' keys of each table: of the index (`sql` for SQLite) and of the fleet
/// (`pg`).
const TABLES: [(&str, &str, &str); 4] = [
    ("sessions", "session", "session"),
    (
        "transitions",
        "session || ' ' || seq",
        "session || ' ' || seq",
    ),
    ("markers", "idempotency_key", "idempotency_key"),
    (
        "usage",
        "lower(hex(message_key))",
        "encode(message_key, 'hex')",
    ),
];

/// The keys of each table of `home`'s index, read with SQLite.
fn index_keys(home: &Path) -> BTreeMap<&'static str, BTreeSet<String>> {
    let db = rusqlite::Connection::open_with_flags(
        home.join("transcope/index.sqlite"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    TABLES
        .iter()
        .map(|(table, key, _)| {
            let mut st = db.prepare(&format!("SELECT {key} FROM {table}")).unwrap();
            let keys = st
                .query_map([], |r| r.get::<_, String>(0))
                .unwrap()
                .collect::<rusqlite::Result<BTreeSet<_>>>()
                .unwrap();
            (*table, keys)
        })
        .collect()
}

/// The keys of each table of the fleet at `url`, each with the name of the machine
/// its row names; no key twice.
fn fleet_keys(url: &str) -> BTreeMap<&'static str, BTreeMap<String, String>> {
    TABLES
        .iter()
        .map(|(table, _, key)| {
            let rows = fleet::psql(
                url,
                &format!(
                    "SELECT {key}, m.name FROM {table} t JOIN machines m ON m.machine_id = t.machine"
                ),
            );
            let n = rows.len();
            let keys: BTreeMap<String, String> = rows
                .into_iter()
                .map(|mut r| (r.swap_remove(0), r.swap_remove(0)))
                .collect();
            assert_eq!(keys.len(), n, "a key twice in the fleet's {table}");
            (*table, keys)
        })
        .collect()
}

/// Rows by `key`, each with the machine it belongs to; no key twice.
type Owned = BTreeMap<String, (Value, String)>;

/// The two machines' local rows of a query, by `key`: the union, each row with its
/// machine, no key in both.
fn union_of(parts: &[(&str, Vec<Value>)], key: &str) -> Owned {
    let mut out = Owned::new();
    for (machine, rows) in parts {
        for row in rows {
            let (row, named) = fleet::without_machine(row.clone());
            assert_eq!(named, None, "a local row names a machine: {row}");
            let k = row[key].as_str().unwrap().to_owned();
            let was = out.insert(k.clone(), (row, machine.to_string()));
            assert!(was.is_none(), "{key} {k} in both machines' indexes");
        }
    }
    out
}

/// The fleet's rows of a query, by `key`, each with the machine it names (which
/// every row must).
fn fleet_rows(rows: Vec<Value>, key: &str) -> Owned {
    let n = rows.len();
    let out: Owned = rows
        .into_iter()
        .map(|row| {
            let (row, machine) = fleet::without_machine(row);
            let machine = machine.unwrap_or_else(|| panic!("a fleet row names no machine: {row}"));
            (row[key].as_str().unwrap().to_owned(), (row, machine))
        })
        .collect();
    assert_eq!(out.len(), n, "a {key} twice in the fleet's answer");
    out
}

/// `want` and `got` are equal; else the keys that differ, a few at most.
fn same(what: &str, want: &Owned, got: &Owned) {
    let differ: Vec<String> = want
        .keys()
        .chain(got.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|k| want.get(*k) != got.get(*k))
        .take(5)
        .map(|k| format!("{k}:\n  index {:?}\n  fleet {:?}", want.get(k), got.get(k)))
        .collect();
    assert!(differ.is_empty(), "{what}: {}", differ.join("\n"));
}

/// Usage groups summed by a key: each count added, the cost apart (a float).
type Sums = BTreeMap<String, (BTreeMap<String, u64>, f64)>;

/// `rows` (usage groups) added to `sums` under `key` of each.
fn add_usage(sums: &mut Sums, rows: &[Value], key: impl Fn(&Value) -> String) {
    for row in rows {
        let (counts, cost) = sums.entry(key(row)).or_default();
        for (field, v) in row.as_object().unwrap() {
            if field == "cost_usd" {
                *cost += v.as_f64().unwrap_or(0.0);
            } else if let Some(n) = v.as_u64() {
                *counts.entry(field.clone()).or_default() += n;
            }
        }
    }
}

/// Equal counts, and costs equal to within the rounding each answer's cost had (six
/// decimals): the index's are two rounded sums added.
fn same_usage(what: &str, want: &Sums, got: &Sums) {
    assert_eq!(
        want.keys().collect::<Vec<_>>(),
        got.keys().collect::<Vec<_>>(),
        "{what}: the groups"
    );
    for (k, (counts, cost)) in want {
        let (got_counts, got_cost) = &got[k];
        assert_eq!(counts, got_counts, "{what}: {k}");
        assert!(
            (cost - got_cost).abs() < 2.5e-6,
            "{what}: {k}: {cost} ≠ {got_cost}"
        );
    }
}

/// The fleet at `url` holds every row of the machines' indexes once, each naming its
/// machine, and answers as the indexes do together.
fn check(sb: &Sandbox, machines: &[Machine; 2], url: &str) {
    // Rows, read directly: the index's SQLite file, the fleet's tables.
    let local = machines.each_ref().map(|m| index_keys(&m.home));
    let fleet = fleet_keys(url);
    for (table, ..) in TABLES {
        let [a, b] = [&local[0][table], &local[1][table]];
        assert!(a.is_disjoint(b), "{table}: the machines share rows");
        let want: BTreeMap<String, String> = machines
            .iter()
            .zip(&local)
            .flat_map(|(m, keys)| keys[table].iter().map(|k| (k.clone(), m.name.to_owned())))
            .collect();
        if want != fleet[table] {
            let missing: Vec<_> = want
                .keys()
                .filter(|k| !fleet[table].contains_key(*k))
                .take(5)
                .collect();
            let extra: Vec<_> = fleet[table]
                .keys()
                .filter(|k| !want.contains_key(*k))
                .take(5)
                .collect();
            panic!(
                "{table}: the fleet holds {} rows, the indexes {}; missing {missing:?}, extra {extra:?}, or a row names another machine",
                fleet[table].len(),
                want.len()
            );
        }
    }
    // Answers: each machine's index (as it was pushed: no sync), combined here, and
    // the fleet's.
    let ask = |m: &Machine, q: &[&str]| {
        let mut args = q.to_vec();
        args.extend(["--json", "--no-sync"]);
        fleet::json_lines(&m.home, &sb.user, &args)
    };
    let ask_fleet = |q: &[&str]| {
        let mut args = q.to_vec();
        args.extend(["--json", "--fleet", url]);
        fleet::json_lines(&sb.home, &sb.user, &args)
    };
    for (q, key) in [
        (&["sessions"][..], "session"),
        (&["ledger"], "idempotency_key"),
    ] {
        let parts: Vec<_> = machines.iter().map(|m| (m.name, ask(m, q))).collect();
        same(
            &format!("{q:?}"),
            &union_of(&parts, key),
            &fleet_rows(ask_fleet(q), key),
        );
    }
    let by_project = ["usage", "--by", "project"];
    let mut want = Sums::new();
    let mut want_machines = Sums::new();
    for m in machines {
        let rows = ask(m, &by_project);
        add_usage(&mut want, &rows, |r| r["project_id"].to_string());
        add_usage(&mut want_machines, &rows, |_| m.name.to_owned());
    }
    let mut got = Sums::new();
    add_usage(&mut got, &ask_fleet(&by_project), |r| {
        r["project_id"].to_string()
    });
    same_usage("usage by project", &want, &got);
    let mut got = Sums::new();
    add_usage(&mut got, &ask_fleet(&["usage", "--by", "machine"]), |r| {
        r["machine"].as_str().unwrap().to_owned()
    });
    same_usage("usage by machine", &want_machines, &got);
}

/// How one push that was killed ended.
#[derive(Debug, Default)]
struct Kills {
    /// Done before its kill.
    finished: u32,
    /// Killed after its transaction committed.
    committed: u32,
    /// Killed with nothing committed.
    cut: u32,
}

#[test]
fn two_machines_pushing_at_once_killed_and_pushed_again_leave_every_row_once() {
    let (Some(db), Some(clean)) = (
        pg::database("fleet_push_killed"),
        pg::database("fleet_push_clean"),
    ) else {
        return;
    };
    let started = Instant::now();
    let sb = Sandbox::new();
    // The schema, so the machines' pushes can be counted from the start.
    stdout_of(&sb, &["fleet", "status", "--to", db.url()]);
    let machines = [
        Machine::new(&sb, "alpha", 3501),
        Machine::new(&sb, "beta", 3502),
    ];
    let mut rng = Rng::from_env(0x35_f1ee7);
    let mut kills = Kills::default();
    let mut longest = Duration::ZERO;
    for round in 0..10u64 {
        let work = if round == 0 {
            [Work::Corpus; 2]
        } else {
            both(&machines, |i, m| m.work(&sb, round, i as u64))
        };
        // What this round's pushes send, and how long one takes: both machines pushed
        // at once to a fleet whose pushes are never killed.
        let timed = both(&machines, |_, m| {
            let t = Instant::now();
            let v = fleet::push(&m.home, &sb.user, clean.url(), m.name);
            (v, t.elapsed())
        });
        for ((v, took), w) in timed.iter().zip(work) {
            longest = longest.max(*took);
            let sent = fleet::sent(v);
            assert_eq!(v["whole"], round == 0, "{v}");
            match w {
                Work::None => assert_eq!(sent, [0; 4], "an unchanged home sends nothing: {v}"),
                // Its session (and those its times show in), a scope row or two,
                // the marker, the two requests.
                Work::Appended => {
                    assert!(sent[0] >= 1 && sent[1] >= 1, "{v}");
                    assert_eq!(sent[2..], [1, 2], "{v}");
                }
                // New sessions, their scope rows and requests (a small corpus may
                // hold no marker).
                Work::Corpus => assert!(sent[0] > 0 && sent[1] > 0 && sent[3] > 0, "{v}"),
            }
        }

        // Both pushed at once, each killed at a moment within a push's time.
        let delays = timed
            .each_ref()
            .map(|(_, took)| Duration::from_micros(rng.below(took.as_micros() as u64 + 1)));
        let before = pushes(db.url());
        let ended = both(&machines, |i, m| {
            let push = fleet::push_cmd(&m.home, &sb.user, db.url(), m.name);
            kill_after(push, b"", delays[i])
        });
        let after = pushes(db.url());
        let mut committed = [false; 2];
        for (i, m) in machines.iter().enumerate() {
            let n = |p: &BTreeMap<String, i64>| p.get(m.name).copied().unwrap_or(0);
            committed[i] = n(&after) > n(&before);
            match ended[i] {
                Some(status) => {
                    assert!(status.success(), "{}'s push: {status}", m.name);
                    assert!(
                        committed[i],
                        "{}'s push ended well, committed nothing",
                        m.name
                    );
                    kills.finished += 1;
                }
                None if committed[i] => kills.committed += 1,
                None => kills.cut += 1,
            }
        }

        // Pushed again to the end: what the killed push did not commit, exactly what
        // the never-killed fleet was sent; then nothing more.
        let again = both(&machines, |_, m| {
            fleet::push(&m.home, &sb.user, db.url(), m.name)
        });
        for (i, v) in again.iter().enumerate() {
            if committed[i] {
                assert_eq!(fleet::sent(v), [0; 4], "after a committed push: {v}");
            } else {
                assert_eq!(fleet::sent(v), fleet::sent(&timed[i].0), "{v}");
                assert_eq!(v["whole"], timed[i].0["whole"], "{v}");
            }
        }
        let idle = both(&machines, |_, m| {
            fleet::push(&m.home, &sb.user, db.url(), m.name)
        });
        for v in &idle {
            assert_eq!(
                (fleet::sent(v), &v["whole"]),
                ([0; 4], &Value::Bool(false)),
                "{v}"
            );
        }
        check(&sb, &machines, db.url());
        check(&sb, &machines, clean.url());
    }
    // Kills that landed inside a push's transaction: the server rolled it back.
    let rolled_back = fleet::psql(
        db.url(),
        "SELECT xact_rollback FROM pg_stat_database WHERE datname = current_database()",
    )[0][0]
        .parse::<u64>()
        .unwrap();
    eprintln!(
        "{kills:?}; {rolled_back} transactions rolled back; longest push {longest:?}; {:?} in all",
        started.elapsed()
    );
    assert!(
        kills.cut > 0,
        "no push was killed before it committed: {kills:?}"
    );
    assert!(
        rolled_back > 0,
        "no kill landed inside a push's transaction: {kills:?}"
    );
}

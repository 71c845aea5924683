//! Issue 33, item 3 ("delivery once"): a delivery claims the pending rows it sends
//! under a lease, so concurrent runs take each row once; a row whose sending failed is
//! pending again at once; a killed run's rows are taken again once its process is
//! gone, or (when that cannot be told) once its lease runs out; an outbox drain's sends mark their rows delivered; an index of
//! version 5 gains the lease columns with its markers unheld.

use std::time::Duration;

use rusqlite::Connection;
use serde_json::json;
use transcope_brain::{Delivery, MarkerRecord, Sink, SinkError};
use transcope_index::{deliver, schema, Found, Index, Lease, Observed, Origin, State, Take, LEASE};

fn key(i: u64) -> String {
    format!("{i:032x}")
}

/// A Stop's take: `session`'s rows recorded by hooks, at most `limit`.
fn stop_take(session: &str, limit: usize) -> Take<'_> {
    Take {
        session: Some(session),
        origin: Some(Origin::Hook),
        limit: Some(limit),
        ..Take::default()
    }
}

/// A session's `n` markers (keys `key(from)`…), recorded by `origin`.
fn record(ix: &mut Index, session: &str, from: u64, n: u64, origin: Origin) {
    ix.record(&[observed(session, from, n)], origin, false)
        .unwrap();
}

/// What a read of a session's `n` markers (keys `key(from)`…) found.
fn observed(session: &str, from: u64, n: u64) -> Observed {
    let markers = (from..from + n)
        .map(|i| Found {
            record: MarkerRecord {
                body: json!({"type": "lesson", "content": format!("lesson {i}"), "attrs": {}}),
                content: format!("lesson {i}"),
                idempotency_key: key(i),
                session: Some(session.to_owned()),
            },
            at: None,
        })
        .collect();
    Observed {
        markers,
        ..Observed::new(session)
    }
}

fn keys(rows: &[transcope_index::LedgerRow]) -> Vec<String> {
    rows.iter().map(|r| r.idempotency_key.clone()).collect()
}

/// One run through the ledger, `batch` rows a claim, as `deliver` goes: the keys
/// it took.
fn claim_through(ix: &mut Index, batch: usize) -> Vec<String> {
    let lease = Lease::new();
    let mut take = Take {
        limit: Some(batch),
        ..Take::default()
    };
    let mut got = Vec::new();
    loop {
        let c = ix.claim(&take, &lease).unwrap();
        if c.rows.is_empty() {
            return got;
        }
        take.after = c.next;
        got.extend(keys(&c.rows));
    }
}

fn states(ix: &Index) -> Vec<(String, State)> {
    ix.states().unwrap()
}

/// Accepts every record but those whose content is in `fail`, which it cannot write.
struct Stub {
    fail: Vec<String>,
    sent: Vec<String>,
}

impl Sink for Stub {
    fn deliver(&mut self, rec: &MarkerRecord) -> Result<Delivery, SinkError> {
        if self.fail.contains(&rec.content) {
            return Err(SinkError::Io {
                context: "writing",
                source: std::io::Error::other("full"),
            });
        }
        self.sent.push(rec.idempotency_key.clone());
        Ok(Delivery::Sent)
    }
}

#[test]
fn a_held_row_is_taken_by_no_other_claim_and_a_failed_one_is_pending_again() {
    let home = tempfile::tempdir().unwrap();
    let mut ix = Index::open(home.path()).unwrap();
    record(&mut ix, "s1", 0, 4, Origin::Hook);
    let (a, b) = (Lease::new(), Lease::new());
    assert_ne!(a.owner(), b.owner());
    let took = ix.claim(&Take::default(), &a).unwrap();
    assert_eq!(keys(&took.rows), [key(0), key(1), key(2), key(3)]);
    // Another run (another connection, as another process has) finds nothing to take.
    let mut other = Index::open(home.path()).unwrap();
    assert!(other.claim(&Take::default(), &b).unwrap().rows.is_empty());
    // The first run sends all but "lesson 2", which its sink fails.
    let mut sink = Stub {
        fail: vec!["lesson 2".into()],
        sent: Vec::new(),
    };
    let report = deliver(&mut ix, &took, &a, &mut sink).unwrap();
    assert_eq!((report.sent, report.failed), (3, 1));
    // The failed row is pending and held by none: the other run takes it at once.
    let again = other.claim(&Take::default(), &b).unwrap();
    assert_eq!(keys(&again.rows), [key(2)]);
    let want: Vec<_> = (0..4)
        .map(|i| {
            let s = if i == 2 {
                State::Pending
            } else {
                State::Delivered
            };
            (key(i), s)
        })
        .collect();
    assert_eq!(states(&ix), want);
}

#[test]
fn a_stuck_runs_rows_wait_for_its_lease_and_are_then_taken_again() {
    let home = tempfile::tempdir().unwrap();
    let mut ix = Index::open(home.path()).unwrap();
    record(&mut ix, "s1", 0, 3, Origin::Backfill);
    let t0 = 1_800_000_000_000_000i64;
    let lease_us = LEASE.as_micros() as i64;
    // A run claims the rows, then never settles (its process lives on, stuck).
    let stuck = Lease::new();
    let held = ix.claim_at(&Take::default(), &stuck, t0).unwrap();
    assert_eq!(held.rows.len(), 3);
    drop(ix);
    let mut ix = Index::open(home.path()).unwrap();
    let later = Lease::new();
    // Within the lease nothing is taken, and the rows are still pending.
    let took = ix
        .claim_at(&Take::default(), &later, t0 + lease_us - 1)
        .unwrap();
    assert!(took.rows.is_empty());
    assert_eq!(ix.pending_count(None, None).unwrap(), 3);
    // Once it has run out, a later run takes every one of them again, and sends them.
    let took = ix
        .claim_at(&Take::default(), &later, t0 + lease_us)
        .unwrap();
    assert_eq!(keys(&took.rows), [key(0), key(1), key(2)]);
    let mut sink = Stub {
        fail: Vec::new(),
        sent: Vec::new(),
    };
    deliver(&mut ix, &took, &later, &mut sink).unwrap();
    assert_eq!(sink.sent, [key(0), key(1), key(2)]);
    assert!(states(&ix).iter().all(|(_, s)| *s == State::Delivered));
    // A short lease runs out as soon.
    record(&mut ix, "s1", 10, 1, Origin::Backfill);
    let short = Lease::new().lasting(Duration::from_secs(1));
    assert_eq!(
        ix.claim_at(&Take::default(), &short, t0)
            .unwrap()
            .rows
            .len(),
        1
    );
    let took = ix
        .claim_at(&Take::default(), &Lease::new(), t0 + 1_000_000)
        .unwrap();
    assert_eq!(keys(&took.rows), [key(10)]);
}

#[test]
fn a_run_that_has_ended_holds_nothing() {
    let home = tempfile::tempdir().unwrap();
    let mut ix = Index::open(home.path()).unwrap();
    record(&mut ix, "s1", 0, 2, Origin::Hook);
    // A run in another process claims the rows, then is killed before it settles.
    let mut run = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let killed = Lease::of_process(run.id());
    assert_eq!(ix.claim(&Take::default(), &killed).unwrap().rows.len(), 2);
    assert!(ix
        .claim(&Take::default(), &Lease::new())
        .unwrap()
        .rows
        .is_empty());
    run.kill().unwrap();
    run.wait().unwrap();
    // Its lease has not run out, but its process is gone: the next run takes them.
    let took = ix.claim(&Take::default(), &Lease::new()).unwrap();
    if std::path::Path::new("/proc/self/ns/pid").exists() {
        assert_eq!(keys(&took.rows), [key(0), key(1)]);
    }
}

/// The stuck run comes back after its lease was taken over: its results are recorded on rows still pending, and it never frees the new
/// holder's lease.
#[test]
fn a_late_run_records_its_sends_and_leaves_the_new_holders_lease() {
    let home = tempfile::tempdir().unwrap();
    let mut ix = Index::open(home.path()).unwrap();
    record(&mut ix, "s1", 0, 2, Origin::Backfill);
    let t0 = 1_800_000_000_000_000i64;
    let (slow, next) = (Lease::new(), Lease::new());
    let first = ix.claim_at(&Take::default(), &slow, t0).unwrap();
    let second = ix
        .claim_at(&Take::default(), &next, t0 + LEASE.as_micros() as i64)
        .unwrap();
    assert_eq!(second.rows.len(), 2);
    // The slow run sent only the first.
    let mut sink = Stub {
        fail: vec!["lesson 1".into()],
        sent: Vec::new(),
    };
    deliver(&mut ix, &first, &slow, &mut sink).unwrap();
    assert_eq!(
        states(&ix),
        [(key(0), State::Delivered), (key(1), State::Pending)]
    );
    // The second row is still the new holder's: no one else takes it.
    let none = ix
        .claim_at(
            &Take::default(),
            &Lease::new(),
            t0 + LEASE.as_micros() as i64 + 1,
        )
        .unwrap();
    assert!(none.rows.is_empty());
    let mut sink = Stub {
        fail: Vec::new(),
        sent: Vec::new(),
    };
    deliver(&mut ix, &second, &next, &mut sink).unwrap();
    assert!(states(&ix).iter().all(|(_, s)| *s == State::Delivered));
}

#[test]
fn a_claim_takes_a_session_an_origin_keys_and_batches_in_the_order_found() {
    let home = tempfile::tempdir().unwrap();
    let mut ix = Index::open(home.path()).unwrap();
    record(&mut ix, "s1", 0, 5, Origin::Hook);
    record(&mut ix, "s2", 5, 2, Origin::Hook);
    record(&mut ix, "s1", 7, 2, Origin::Backfill);
    // The Stop's take: its session's hook rows, at most 2, and how many it left.
    let stop = stop_take("s1", 2);
    let took = ix.claim(&stop, &Lease::new()).unwrap();
    assert_eq!((keys(&took.rows), took.left), (vec![key(0), key(1)], 3));
    // By keys (a Stop with no session): only the pending, unheld ones.
    let wanted = [key(1), key(8), key(6), "f".repeat(32)];
    let by_keys = Take {
        keys: Some(&wanted),
        limit: Some(1),
        ..Take::default()
    };
    let took = ix.claim(&by_keys, &Lease::new()).unwrap();
    assert_eq!((keys(&took.rows), took.left), (vec![key(6)], 1));
    // A run through the rest in batches of 2: each row once, then nothing.
    let seen = claim_through(&mut ix, 2);
    assert_eq!(seen, [key(2), key(3), key(4), key(5), key(7), key(8)]);
}

#[test]
fn concurrent_claims_take_each_row_once() {
    let home = tempfile::tempdir().unwrap();
    let mut ix = Index::open(home.path()).unwrap();
    record(&mut ix, "s1", 0, 300, Origin::Hook);
    drop(ix);
    let taken: Vec<Vec<String>> = std::thread::scope(|s| {
        let runs: Vec<_> = (0..4)
            .map(|_| s.spawn(|| claim_through(&mut Index::open(home.path()).unwrap(), 7)))
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let mut all: Vec<String> = taken.concat();
    assert_eq!(
        all.len(),
        300,
        "{:?}",
        taken.iter().map(Vec::len).collect::<Vec<_>>()
    );
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 300);
}

#[test]
fn a_drain_marks_its_rows_delivered_or_rejected() {
    let home = tempfile::tempdir().unwrap();
    let mut ix = Index::open(home.path()).unwrap();
    record(&mut ix, "s1", 0, 4, Origin::Hook);
    ix.set_states(&[
        (key(0), State::Outbox, Some("/o/a.json".into())),
        (key(1), State::Outbox, None),
        (key(3), State::Rejected, Some("HTTP 422".into())),
    ])
    .unwrap();
    ix.settle_drained(&[
        (key(0), State::Delivered, None),
        (key(1), State::Rejected, Some("HTTP 400".into())),
        (key(3), State::Delivered, None),
        ("f".repeat(32), State::Delivered, None),
    ])
    .unwrap();
    assert_eq!(
        states(&ix),
        [
            (key(0), State::Delivered),
            (key(1), State::Rejected),
            (key(2), State::Pending),
            (key(3), State::Rejected),
        ]
    );
}

#[test]
fn a_version_5_index_gains_leases_with_its_markers_unheld() {
    let home = tempfile::tempdir().unwrap();
    let path = transcope_index::index_path(home.path());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    {
        let conn = Connection::open(&path).unwrap();
        transcope_sqlite::migrate(&conn, &schema::MIGRATIONS[..5]).unwrap();
        conn.execute_batch(&format!(
            "INSERT INTO markers (idempotency_key, session, type, content, attrs, body, origin,
                 state, found_us)
             VALUES ('{}', 's1', 'lesson', 'x', '{{}}', '{{}}', 'hook', 'pending', 1),
                    ('{}', 's1', 'lesson', 'y', '{{}}', '{{}}', 'hook', 'outbox', 1);",
            key(0),
            key(1)
        ))
        .unwrap();
    }
    let mut ix = Index::open(home.path()).unwrap();
    let version: i64 = Connection::open(&path)
        .unwrap()
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, schema::MIGRATIONS.len() as i64);
    let took = ix.claim(&Take::default(), &Lease::new()).unwrap();
    assert_eq!(keys(&took.rows), [key(0)]);
}

#[test]
fn a_sessions_pending_count_is_read_from_the_index_alone_and_is_right() {
    let home = tempfile::tempdir().unwrap();
    let mut ix = Index::open(home.path()).unwrap();
    record(&mut ix, "s1", 0, 3, Origin::Hook);
    record(&mut ix, "s1", 3, 2, Origin::Backfill);
    record(&mut ix, "s2", 5, 4, Origin::Hook);
    ix.set_states(&[(key(0), State::Delivered, None)]).unwrap();
    assert_eq!(ix.pending_count(Some("s1"), Some(Origin::Hook)).unwrap(), 2);
    assert_eq!(ix.pending_count(Some("s1"), None).unwrap(), 4);
    assert_eq!(ix.pending_count(None, Some(Origin::Hook)).unwrap(), 6);
    assert_eq!(ix.pending_count(None, None).unwrap(), 8);
    // Every Stop asks a session's count: it must not read each pending marker's row
    // (its body spills to overflow pages), only the session's index entries.
    let conn = Connection::open(transcope_index::index_path(home.path())).unwrap();
    let plan: Vec<String> = conn
        .prepare(
            "EXPLAIN QUERY PLAN SELECT count(*) FROM markers WHERE session = ?1
             AND state = 'pending' AND (?2 IS NULL OR origin = ?2)",
        )
        .unwrap()
        .query_map(rusqlite::params!["s1", "hook"], |r| r.get::<_, String>(3))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(
        plan.iter()
            .any(|p| p.contains("USING COVERING INDEX markers_session")),
        "{plan:?}"
    );
}

/// A Stop records what it read and claims what it delivers in one transaction: the
/// claim sees the rows just recorded (oldest first, its session and origin only),
/// holds them from every other claim, and what the record wrote is there as with
/// `record`; with concurrent recorders, each row is claimed once.
#[test]
fn recording_and_claiming_in_one_transaction_takes_the_rows_just_recorded_once() {
    let home = tempfile::tempdir().unwrap();
    let mut ix = Index::open(home.path()).unwrap();
    record(&mut ix, "s1", 0, 2, Origin::Hook);
    record(&mut ix, "s2", 2, 1, Origin::Hook);
    let take = stop_take("s1", 3);
    let lease = Lease::new();
    let (done, claimed) = ix
        .record_and_claim(&[observed("s1", 10, 2)], Origin::Hook, true, &take, &lease)
        .unwrap();
    assert_eq!(done[0].new, [true, true]);
    // The two older rows of s1, then the first just recorded; one left; not s2's.
    assert_eq!(keys(&claimed.rows), [key(0), key(1), key(10)]);
    assert_eq!(claimed.left, 1);
    // Held: another claim of the session takes only what this one left.
    let other = ix.claim(&take, &Lease::new()).unwrap();
    assert_eq!(keys(&other.rows), [key(11)]);
    // Recorded as `record` does: every row, pending.
    let all = states(&ix);
    assert_eq!(all.len(), 5);
    assert!(all.iter().all(|(_, s)| *s == State::Pending));
    // The same markers again: nothing new, and nothing left to claim.
    let (again, none) = ix
        .record_and_claim(
            &[observed("s1", 10, 2)],
            Origin::Hook,
            true,
            &take,
            &Lease::new(),
        )
        .unwrap();
    assert_eq!(again[0].new, [false, false]);
    assert!(none.rows.is_empty());
    drop(ix);
    // Four recorders at once, each recording a turn and claiming: each row once.
    let taken: Vec<Vec<String>> = std::thread::scope(|s| {
        let runs: Vec<_> = (0..4u64)
            .map(|t| {
                let home = home.path();
                s.spawn(move || {
                    let mut ix = Index::open(home).unwrap();
                    let take = stop_take("s3", 50);
                    let turn = observed("s3", 100 + 10 * t, 10);
                    let (_, c) = ix
                        .record_and_claim(&[turn], Origin::Hook, false, &take, &Lease::new())
                        .unwrap();
                    keys(&c.rows)
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let mut all: Vec<String> = taken.concat();
    all.sort();
    let n = all.len();
    all.dedup();
    assert_eq!((n, all.len()), (40, 40), "{taken:?}");
}

/// A Stop with no brain to post to records, claims, delivers and records what its sink
/// did in one transaction: the same states and report as `deliver` after
/// `record_and_claim`, a row the sink fails pending again and held by none, and the
/// states journalled for a rebuild.
#[test]
fn recording_and_delivering_in_one_transaction_leaves_what_deliver_leaves() {
    let home = tempfile::tempdir().unwrap();
    let mut ix = Index::open(home.path()).unwrap();
    record(&mut ix, "s1", 0, 2, Origin::Hook);
    let take = stop_take("s1", 3);
    let mut sink = Stub {
        fail: vec!["lesson 1".into()],
        sent: Vec::new(),
    };
    let lease = Lease::new();
    let (done, claimed, report) = ix
        .record_and_deliver(
            &[observed("s1", 10, 2)],
            Origin::Hook,
            true,
            (&take, &lease),
            &mut sink,
        )
        .unwrap();
    assert_eq!(done[0].new, [true, true]);
    assert_eq!(keys(&claimed.rows), [key(0), key(1), key(10)]);
    assert_eq!(claimed.left, 1);
    assert_eq!(sink.sent, [key(0), key(10)]);
    assert_eq!((report.sent, report.failed), (2, 1));
    assert_eq!(
        report.keys,
        [(key(0), State::Delivered), (key(10), State::Delivered)]
    );
    let want = [
        (key(0), State::Delivered),
        (key(1), State::Pending),
        (key(10), State::Delivered),
        (key(11), State::Pending),
    ];
    assert_eq!(states(&ix), want);
    // The failed row is held by none: another run takes it, and the one left, at once.
    let again = Index::open(home.path())
        .unwrap()
        .claim(&take, &Lease::new())
        .unwrap();
    assert_eq!(keys(&again.rows), [key(1), key(11)]);
    // Journalled as `deliver`'s settle journals them.
    let journal = transcope_index::recover::journaled_states(ix.path());
    assert_eq!(journal.get(&key(0)), Some(&State::Delivered));
    assert_eq!(journal.get(&key(10)), Some(&State::Delivered));
    assert_eq!(journal.get(&key(1)), None);
}

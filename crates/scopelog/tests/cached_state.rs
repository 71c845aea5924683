//! A log written by batches that start from its cached state (reading only the bytes
//! after it) is byte for byte the log written by batches that read it whole (the
//! reference's way, [`ScopeLog::uncached`]), whatever happens between batches: other
//! writers, torn tails, replays after a killed batch, rows at the same instant, rows
//! that are not their own hash, untimed rows, foreign line endings, and the log
//! truncated, edited in place or replaced. Each record answers the same (row, nothing,
//! or the same refusal), and a batch's window attributes every event it covers as all
//! the rows do.

use std::io::Write;
use std::path::Path;

use serde_json::Value;
use transcope_core::{timestamp, Scope, ScopeField};
use transcope_scopelog::{row_line, InForce, RecordError, Row, ScopeLog, WrittenRow};

const SESSION: &str = "s";

/// A tiny deterministic generator (no dependency, stable across platforms).
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// Second `t` of the day, in one of two spellings of the instant (two ids).
fn at(t: u64, spelling: u64) -> String {
    let (h, m, s) = (t / 3600 % 24, (t / 60) % 60, t % 60);
    let day = 1 + t / 86_400;
    match spelling % 2 {
        0 => format!("2026-10-{day:02}T{h:02}:{m:02}:{s:02}Z"),
        _ => format!("2026-10-{day:02}T{h:02}:{m:02}:{s:02}+00:00"),
    }
}

fn scope(i: u64) -> Scope {
    Scope::default()
        .with(ScopeField::Cwd, format!("/w/{}", i % 3))
        .with(ScopeField::Branch, format!("b{}", (i / 3) % 2))
        .with(ScopeField::Task, if i.is_multiple_of(5) { "t" } else { "" })
        .with(ScopeField::TaskRevision, format!("{}", i % 4))
}

fn answer(r: Result<Option<WrittenRow>, RecordError>) -> String {
    match r {
        Ok(Some(w)) => w.line,
        Ok(None) => "none".into(),
        Err(e) => format!("error: {e}"),
    }
}

/// The two logs: `cached` keeps a state (and uses it even when small), `whole` never.
struct Pair {
    cached: ScopeLog,
    whole: ScopeLog,
    _homes: [tempfile::TempDir; 2],
}

impl Pair {
    fn new() -> Pair {
        let homes = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        Pair {
            cached: ScopeLog::open(homes[0].path(), SESSION).whole_rows_below(0),
            whole: ScopeLog::open(homes[1].path(), SESSION).uncached(),
            _homes: homes,
        }
    }

    fn logs(&self) -> [&ScopeLog; 2] {
        [&self.cached, &self.whole]
    }

    fn bytes(log: &ScopeLog) -> Vec<u8> {
        std::fs::read(log.path().unwrap()).unwrap_or_default()
    }

    fn same_bytes(&self, what: &str) {
        let (a, b) = (Self::bytes(&self.cached), Self::bytes(&self.whole));
        assert!(
            a == b,
            "{what}: the logs differ\ncached: {}\nwhole:  {}",
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b)
        );
    }

    /// Change both files the same way (they hold the same bytes).
    fn edit(&self, f: impl Fn(&Path)) {
        for log in self.logs() {
            let p = log.path().unwrap();
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            f(p);
        }
    }
}

fn append(p: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(p)
        .unwrap();
    f.write_all(bytes).unwrap();
}

/// The row in force at `t` among `rows`, as a value (`None`: none).
fn in_force(rows: &[Row], t: transcope_core::Instant) -> Option<Row> {
    InForce::new(rows).at(t).map(|i| rows[i].clone())
}

/// One batch of `records` on each log, which must answer alike; a keeping batch's
/// window must attribute what it covers as every row does.
fn batch(pair: &Pair, records: &[(Scope, String)], keep: bool, rng: &mut Rng, kill: bool) {
    let mut answers: Vec<Vec<String>> = Vec::new();
    let mut windows = Vec::new();
    for log in pair.logs() {
        let mut txn = if keep {
            log.transaction_keeping_rows()
        } else {
            log.transaction()
        };
        let mut got = Vec::new();
        for (s, a) in records {
            got.push(answer(txn.record(s, a, None)));
        }
        if kill {
            // Killed after its rows reached the log, before it could keep a state.
            txn.flush().unwrap();
            drop(txn);
        } else {
            txn.flush().unwrap();
            txn.save_state();
            windows.push(txn.into_window());
        }
        answers.push(got);
    }
    assert_eq!(answers[0], answers[1], "records {records:?}");
    pair.same_bytes("after a batch");
    if let (true, Some(Some(w))) = (keep, windows.first()) {
        let all = pair.whole.transitions();
        assert_eq!(w.rows.is_empty(), all.is_empty());
        let times: Vec<_> = InForce::new(&all)
            .times()
            .iter()
            .flatten()
            .copied()
            .collect();
        let mut asked = Vec::new();
        for _ in 0..8 {
            let t = match times.len() {
                0 => timestamp::parse(&at(rng.next(5000), 0)).unwrap(),
                n => {
                    let base = times[rng.next(n as u64) as usize].unix_micros();
                    let shift = rng.next(3) as i64 - 1;
                    transcope_core::Instant::from_unix_micros(base + shift * 1_000_000)
                }
            };
            if w.covers(t) {
                assert_eq!(in_force(&w.rows, t), in_force(&all, t), "at {t:?}");
            }
            asked.push(t);
        }
        // The rows in force at those times, read a row at a time, attribute them alike.
        let few = pair.cached.rows_in_force(&asked);
        assert_eq!(few.is_empty(), all.is_empty());
        assert!(few.len() <= asked.len() + 1);
        for t in &asked {
            assert_eq!(in_force(&few, *t), in_force(&all, *t), "at {t:?}");
        }
        // The latest time is always covered (a Stop's events are that late).
        if let Some(t) = times.iter().max() {
            assert!(w.covers(*t));
        }
    }
}

fn run(seed: u64, ops: usize) -> (usize, usize) {
    let pair = Pair::new();
    let mut rng = Rng(seed);
    let mut t = 0u64;
    let mut history: Vec<(Scope, String)> = Vec::new();
    let mut strays: Vec<(Scope, String)> = Vec::new();
    let (mut used, mut batches) = (0, 0);
    for op in 0..ops {
        match rng.next(20) {
            // A Stop: a batch of records, mostly later, some at the same instant, some
            // replays and some older.
            0..=9 => {
                let mut records = Vec::new();
                let n = if rng.next(40) == 0 {
                    1100
                } else {
                    1 + rng.next(6)
                };
                for _ in 0..n {
                    let r = match rng.next(12) {
                        0 if !history.is_empty() => {
                            history[rng.next(history.len() as u64) as usize].clone()
                        }
                        1 if !strays.is_empty() => strays.remove(0),
                        2 => (scope(rng.next(30)), at(t.saturating_sub(5), rng.next(2))),
                        _ => {
                            t += rng.next(3);
                            (scope(rng.next(30)), at(t, rng.next(2)))
                        }
                    };
                    records.push(r);
                }
                history.extend(records.iter().cloned());
                let kill = rng.next(8) == 0;
                batch(&pair, &records, true, &mut rng, kill);
                batches += 1;
                // The next batch of the cached log starts from its state.
                let txn = pair.cached.transaction();
                used += usize::from(txn.read_from().is_some());
            }
            // Another writer (`scope record`), with a plain batch.
            10 | 11 => {
                t += rng.next(2);
                let r = (scope(rng.next(30)), at(t, rng.next(2)));
                history.push(r.clone());
                batch(&pair, &[r], false, &mut rng, false);
            }
            // A torn line.
            12 => pair.edit(|p| append(p, b"{\"session_id\": \"s\", \"sequ")),
            // Rows another program wrote: one whose id is another transition's (later)
            // hash, an empty object, one with an unreadable time, a non-row, `\r\n`.
            13 => {
                let future = (scope(rng.next(30)), at(t + 100 + rng.next(100), 0));
                let id = future.0.transition_id(SESSION, &future.1);
                let line = row_line(SESSION, 0, &at(t, 0), &id, &scope(1)) + "\n";
                strays.push(future);
                let odd = [
                    line,
                    "{}\n".to_owned(),
                    row_line(SESSION, 0, "not a time", &"ab".repeat(32), &scope(2)) + "\n",
                    "[1]\n".to_owned(),
                    row_line(SESSION, 0, &at(t, 1), &"cd".repeat(32), &scope(4)) + "\r\n",
                    row_line(SESSION, 0, &at(t, 1), &"ef".repeat(32), &scope(5)) + "\r",
                ];
                let pick = odd[rng.next(odd.len() as u64) as usize].clone();
                pair.edit(|p| append(p, pick.as_bytes()));
            }
            // Truncated to a line boundary (or a torn one).
            14 => {
                let bytes = Pair::bytes(&pair.cached);
                let lines: Vec<usize> = (0..bytes.len()).filter(|&i| bytes[i] == b'\n').collect();
                if !lines.is_empty() {
                    let cut = lines[rng.next(lines.len() as u64) as usize] + 1;
                    let cut = cut - rng.next(2) as usize;
                    pair.edit(|p| {
                        let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
                        f.set_len(cut as u64).unwrap();
                    });
                }
            }
            // Replaced by a copy of itself less its last line (another inode).
            15 => pair.edit(|p| {
                let bytes = std::fs::read(p).unwrap_or_default();
                let keep = bytes[..bytes.len().saturating_sub(1)]
                    .iter()
                    .rposition(|b| *b == b'\n')
                    .map_or(0, |i| i + 1);
                let tmp = p.with_extension("tmp");
                std::fs::write(&tmp, &bytes[..keep]).unwrap();
                std::fs::rename(&tmp, p).unwrap();
            }),
            // Edited in place, same size: a byte of the last row changed.
            16 => pair.edit(|p| {
                let mut bytes = std::fs::read(p).unwrap_or_default();
                if let Some(i) = bytes.windows(4).rposition(|w| w == b"/w/1") {
                    bytes[i + 3] = b'7';
                    std::fs::write(p, &bytes).unwrap();
                }
            }),
            // Nothing between two batches.
            _ => {}
        }
        pair.same_bytes(&format!("op {op}"));
    }
    (used, batches)
}

#[test]
fn batches_from_the_cached_state_write_what_whole_reads_write() {
    let (mut used, mut batches) = (0, 0);
    for seed in 1..=6u64 {
        let (u, b) = run(seed, 160);
        used += u;
        batches += b;
    }
    // The state is what most batches start from (else this tests nothing).
    assert!(used * 2 > batches, "{used} of {batches}");
}

/// A log of `n` rows at 10 s apart, written by one batch that keeps a state.
fn filled(home: &Path, n: u64) -> ScopeLog {
    let log = ScopeLog::open(home, SESSION).whole_rows_below(0);
    let mut txn = log.transaction();
    for i in 0..n {
        txn.record(&scope(i), &at(i * 10, 0), None)
            .unwrap()
            .unwrap();
    }
    txn.commit().unwrap();
    log
}

#[test]
fn a_state_is_used_only_while_it_holds() {
    let home = tempfile::tempdir().unwrap();
    let log = filled(home.path(), 50);
    let size = std::fs::metadata(log.path().unwrap()).unwrap().len();
    assert!(log.state_path().unwrap().is_file());
    assert_eq!(log.transaction().read_from(), Some(size));
    // Another writer appends: the state still holds, and only its row is read.
    append(
        log.path().unwrap(),
        (row_line(SESSION, 50, &at(600, 0), &"ab".repeat(32), &scope(7)) + "\n").as_bytes(),
    );
    let txn = log.transaction();
    assert_eq!((txn.read_from(), txn.row_count()), (Some(size), 51));
    assert!(txn.contains_transition(&"ab".repeat(32)));
    assert!(txn.contains_transition(&scope(0).transition_id(SESSION, &at(0, 0))));
    // Truncated below it: read whole.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(log.path().unwrap())
        .unwrap();
    f.set_len(size - 10).unwrap();
    assert_eq!(log.transaction().read_from(), None);
    // Replaced (another inode), same bytes: read whole.
    let bytes = std::fs::read(log.path().unwrap()).unwrap();
    let mut txn = log.transaction();
    txn.record(&scope(8), &at(700, 0), None).unwrap().unwrap();
    txn.commit().unwrap();
    let bytes2 = std::fs::read(log.path().unwrap()).unwrap();
    assert!(bytes2.starts_with(&bytes[..bytes.len() - 1]));
    assert!(log.transaction().read_from().is_some());
    let tmp = log.path().unwrap().with_extension("tmp");
    std::fs::write(&tmp, &bytes2).unwrap();
    std::fs::rename(&tmp, log.path().unwrap()).unwrap();
    assert_eq!(log.transaction().read_from(), None);
    // A state that is not one (garbage, another log's): read whole.
    let mut txn = log.transaction();
    txn.record(&scope(9), &at(800, 0), None).unwrap().unwrap();
    txn.commit().unwrap();
    assert!(log.transaction().read_from().is_some());
    std::fs::write(log.state_path().unwrap(), b"{\"version\": 1").unwrap();
    assert_eq!(log.transaction().read_from(), None);
}

/// A transition at or before the latest time of the rows a state stands for may be a
/// replay of any of them: their ids are read then, and it is a no-op as it must be.
#[test]
fn an_old_replay_reads_the_ids_and_writes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let log = filled(home.path(), 20);
    let before = std::fs::read(log.path().unwrap()).unwrap();
    let mut txn = log.transaction();
    assert!(txn.read_from().is_some());
    assert_eq!(txn.record(&scope(3), &at(30, 0), None).unwrap(), None);
    assert_eq!(txn.record(&scope(19), &at(190, 0), None).unwrap(), None);
    // Not a replay, and older: refused as before.
    let e = txn.record(&scope(3), &at(30, 1), None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "transition is older than the latest accepted one"
    );
    txn.commit().unwrap();
    assert_eq!(std::fs::read(log.path().unwrap()).unwrap(), before);
}

/// The window a keeping batch hands on stands for a long log with a few rows, and is
/// every row of a short one.
#[test]
fn a_window_holds_the_base_and_what_came_after() {
    let home = tempfile::tempdir().unwrap();
    let log = filled(home.path(), 300);
    append(log.path().unwrap(), b"{}\n");
    let mut txn = log.transaction_keeping_rows();
    txn.record(&scope(301), &at(3010, 0), None)
        .unwrap()
        .unwrap();
    txn.flush().unwrap();
    let w = txn.into_window().unwrap();
    // The last timed row of the base, its last row ({}), the new row.
    assert_eq!(w.rows.len(), 3);
    assert!(w.rows[1].is_empty());
    assert!(!w.whole);
    assert_eq!(w.floor, timestamp::parse(&at(2990, 0)));
    let v: Value = Value::Object(w.rows[0].clone());
    assert_eq!(v["at"], at(2990, 0));
    // Below the default size, a batch reads every row (and keeps no state).
    let small = ScopeLog::open(home.path(), SESSION);
    let w = small.transaction_keeping_rows().into_window().unwrap();
    assert!(w.whole && w.floor.is_none());
    assert_eq!(w.rows, small.transitions());
}

/// A row another program wrote whose `transition_id` is not its own hash — here the id
/// of a transition later than every row — is held by the state, so that transition is
/// still a replay (no-op) when it comes, as it is for a whole read.
#[test]
fn an_id_that_is_not_its_rows_hash_stays_a_replay() {
    let pair = Pair::new();
    let future = (scope(11), at(5000, 0));
    let id = future.0.transition_id(SESSION, &future.1);
    for log in pair.logs() {
        let mut txn = log.transaction();
        txn.record(&scope(1), &at(10, 0), None).unwrap().unwrap();
        txn.commit().unwrap();
        append(
            log.path().unwrap(),
            (row_line(SESSION, 1, &at(20, 0), &id, &scope(2)) + "\n").as_bytes(),
        );
        // A batch that reads the foreign row and keeps the state past it.
        let mut txn = log.transaction();
        txn.record(&scope(3), &at(30, 0), None).unwrap().unwrap();
        txn.commit().unwrap();
    }
    let mut cached = pair.cached.transaction();
    assert!(cached.read_from().is_some());
    assert_eq!(cached.record(&future.0, &future.1, None).unwrap(), None);
    cached.commit().unwrap();
    let mut whole = pair.whole.transaction();
    assert_eq!(whole.record(&future.0, &future.1, None).unwrap(), None);
    whole.commit().unwrap();
    pair.same_bytes("a replay of a foreign id");
}

/// A row's values, handed to the index as they are (never parsed back), are exactly
/// what its line says: the index keeps the same columns whether a row reached it from
/// change detection or from mirroring the log.
#[test]
fn a_written_rows_values_are_what_its_line_says() {
    let home = tempfile::tempdir().unwrap();
    let log = ScopeLog::open(home.path(), "values");
    let mut n = 0;
    for i in 0..24u64 {
        // Later each time, in each of the spellings the reference reads.
        let (h, m) = (10 + i / 60, i % 60);
        let at = match i % 4 {
            0 => format!("2026-10-08T{h:02}:{m:02}:00Z"),
            1 => format!("2026-10-08T{h:02}:{m:02}:00.123456+00:00"),
            2 => format!("2026-10-08 {h:02}:{m:02}:00"),
            _ => format!("2026-10-08T{:02}:{m:02}:00+02:00", h + 2),
        };
        let at = &at;
        let s = scope(i).with(
            ScopeField::Swarm,
            if i % 2 == 0 { "" } else { "sw \"x\" é" },
        );
        let Some(w) = log.record(&s, at, None).unwrap() else {
            continue;
        };
        assert_eq!(
            Some(w.clone()),
            WrittenRow::from_line(&w.line),
            "{}",
            w.line
        );
        n += 1;
    }
    assert!(n >= 12, "{n}");
}

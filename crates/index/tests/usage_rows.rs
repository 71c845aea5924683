//! The usage table: copies of a request merge into one row by the index's rule, in
//! one batch or across batches (a large one written many rows a statement), and a
//! version-1 index moves to version 2 with the same totals; a new index has large
//! pages.

use std::sync::Arc;

use rusqlite::Connection;
use transcope_core::Tokens;
use transcope_index::{
    schema, Index, Observed, Origin, Spending, UsageBatch, UsageFilter, UsageKey,
};

fn tokens(input: u64, output: u64) -> Tokens {
    Tokens {
        input,
        output,
        cache_read: input * 10,
        ..Tokens::default()
    }
}

fn spent(key: &str, at_us: Option<i64>, model: Option<&str>, t: Tokens, task: &str) -> Spending {
    Spending {
        key: transcope_core::digest::request_key(&[key]),
        at_us,
        model: model.map(Into::into),
        tokens: t,
        scope: Arc::new([
            "p".into(),
            "/w".into(),
            "main".into(),
            task.into(),
            String::new(),
        ]),
    }
}

fn observed(session: &str, parent: Option<&str>, usage: Vec<Spending>) -> Observed {
    Observed {
        parent: parent.map(str::to_owned),
        usage,
        ..Observed::new(session)
    }
}

fn no_price(_: Option<&str>, _: &Tokens) -> Option<f64> {
    None
}

/// A group's keys, input, output, cache reads and messages.
type Row = (Vec<Option<String>>, u64, u64, u64, u64);

/// Each group's [`Row`].
fn groups(ix: &Index, by: &[UsageKey]) -> Vec<Row> {
    ix.usage(by, &UsageFilter::default(), &no_price, None)
        .unwrap()
        .into_iter()
        .map(|g| {
            (
                g.keys,
                g.tokens.input,
                g.tokens.output,
                g.tokens.cache_read,
                g.messages,
            )
        })
        .collect()
}

/// The copies of the archive below: a streamed request (two lines, output growing) in
/// the root session, replayed later by a resumed session; the replay is in the
/// sub-agent too, at the same time as the root's first copy.
fn copies() -> Vec<Observed> {
    vec![
        observed(
            "root",
            None,
            vec![
                spent(
                    "claude:m1:r1",
                    Some(1_000),
                    Some("claude-x"),
                    tokens(5, 1),
                    "T1",
                ),
                spent("claude:m2:r2", Some(2_000), None, tokens(7, 3), "T1"),
            ],
        ),
        observed(
            "resumed",
            None,
            vec![
                // The replay: later, in another task, with the whole output.
                spent(
                    "claude:m1:r1",
                    Some(5_000),
                    Some("claude-x"),
                    tokens(5, 9),
                    "T2",
                ),
                spent(
                    "claude:m3:r3",
                    Some(6_000),
                    Some("claude-y"),
                    tokens(2, 2),
                    "T2",
                ),
            ],
        ),
        observed(
            "agent-1",
            Some("root"),
            // Same time as the root's copy: the root session's copy is kept; the model
            // the root's copy lacks comes from this one.
            vec![spent(
                "claude:m2:r2",
                Some(2_000),
                Some("claude-y"),
                tokens(7, 4),
                "T9",
            )],
        ),
    ]
}

fn expect(ix: &Index) {
    let by = [UsageKey::Session, UsageKey::Task, UsageKey::Model];
    assert_eq!(
        groups(ix, &by),
        vec![
            (
                vec![
                    Some("resumed".into()),
                    Some("T2".into()),
                    Some("claude-y".into())
                ],
                2,
                2,
                20,
                1
            ),
            (
                vec![
                    Some("root".into()),
                    Some("T1".into()),
                    Some("claude-x".into())
                ],
                5,
                9,
                50,
                1
            ),
            (
                vec![
                    Some("root".into()),
                    Some("T1".into()),
                    Some("claude-y".into())
                ],
                7,
                4,
                70,
                1
            ),
        ]
    );
}

#[test]
fn copies_merge_in_one_record_call() {
    let home = tempfile::tempdir().unwrap();
    let mut ix = Index::open(home.path()).unwrap();
    ix.record(&copies(), Origin::Backfill, false).unwrap();
    expect(&ix);
}

#[test]
fn copies_merge_across_calls_in_any_order() {
    for order in [[0, 1, 2], [2, 1, 0], [1, 2, 0]] {
        let home = tempfile::tempdir().unwrap();
        let mut ix = Index::open(home.path()).unwrap();
        let items = copies();
        for i in order {
            ix.record(std::slice::from_ref(&items[i]), Origin::Hook, true)
                .unwrap();
        }
        expect(&ix);
        let scopes = || -> i64 {
            Connection::open(transcope_index::index_path(home.path()))
                .unwrap()
                .query_row("SELECT count(*) FROM usage_scopes", [], |r| r.get(0))
                .unwrap()
        };
        let known = scopes();
        // A reopened index (no ids known to the connection) merges the same way, and
        // finds the scopes it holds rather than adding them again.
        drop(ix);
        let mut ix = Index::open(home.path()).unwrap();
        ix.record(&copies(), Origin::Backfill, false).unwrap();
        expect(&ix);
        assert_eq!(scopes(), known);
    }
}

#[test]
fn a_batch_merges_like_the_table() {
    for split in 0..=3 {
        let home = tempfile::tempdir().unwrap();
        let mut ix = Index::open(home.path()).unwrap();
        let mut items = copies();
        // Some copies through the table first, the rest through one batch.
        let rest = items.split_off(split.min(items.len()));
        ix.record(&items, Origin::Backfill, false).unwrap();
        let mut batch = UsageBatch::default();
        for (mut item, order) in rest.into_iter().zip(0..) {
            let usage = std::mem::take(&mut item.usage);
            batch.add(&item, order, usage);
        }
        ix.record_usage(&mut batch).unwrap();
        assert!(batch.is_empty());
        expect(&ix);
    }
}

#[test]
fn a_version_1_index_moves_to_version_2_with_its_totals() {
    let home = tempfile::tempdir().unwrap();
    let path = transcope_index::index_path(home.path());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    {
        let conn = Connection::open(&path).unwrap();
        transcope_sqlite::migrate(&conn, &schema::MIGRATIONS[..1]).unwrap();
        // Rows as version 1 wrote them (its own columns, text scope per row).
        conn.execute_batch(
            "INSERT INTO usage (message_key, session, root_session, is_root, at, at_us, model,
                 input_tokens, output_tokens, cache_read_input_tokens, project_id, worktree,
                 branch, task, lane) VALUES
             (x'01', 'root', 'root', 1, 't', 1000, 'claude-x', 5, 9, 50, 'p', '/w', 'main', 'T1', ''),
             (x'02', 'root', 'root', 1, 't', 2000, 'claude-y', 7, 4, 70, 'p', '/w', 'main', 'T1', ''),
             (x'03', 'resumed', 'resumed', 1, 't', 6000, 'claude-y', 2, 2, 20, 'p', '/w', 'main', 'T2', ''),
             (x'04', 'agent-1', 'root', 0, NULL, NULL, NULL, 1, 1, 0, '', '', '', '', '');",
        )
        .unwrap();
    }
    let ix = Index::open(home.path()).unwrap();
    let version: i64 = Connection::open(&path)
        .unwrap()
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, schema::MIGRATIONS.len() as i64);
    // Read before any run that keeps places (version 5): a later run's tie never
    // takes them.
    let unplaced: i64 = Connection::open(&path)
        .unwrap()
        .query_row("SELECT count(*) FROM usage WHERE place = 0", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(unplaced, 4);
    assert_eq!(
        groups(&ix, &[UsageKey::RootSession, UsageKey::Model]),
        vec![
            (
                vec![Some("resumed".into()), Some("claude-y".into())],
                2,
                2,
                20,
                1
            ),
            (vec![Some("root".into()), None], 1, 1, 0, 1),
            (
                vec![Some("root".into()), Some("claude-x".into())],
                5,
                9,
                50,
                1
            ),
            (
                vec![Some("root".into()), Some("claude-y".into())],
                7,
                4,
                70,
                1
            ),
        ]
    );
}

#[test]
fn kept_sums_answer_until_a_request_is_written() {
    let home = tempfile::tempdir().unwrap();
    let mut ix = Index::open(home.path()).unwrap();
    ix.record(&copies(), Origin::Backfill, false).unwrap();
    let price = |_: Option<&str>, t: &Tokens| Some(t.output as f64);
    let by = [UsageKey::Task];
    let ask = |ix: &Index, pricing: Option<&str>| {
        ix.usage(&by, &UsageFilter::default(), &price, pricing)
            .unwrap()
            .into_iter()
            .map(|g| (g.keys, g.tokens.output, g.messages, g.cost_usd))
            .collect::<Vec<_>>()
    };
    let direct = ask(&ix, None);
    // The first query with a price list keeps its sums; the second reads them.
    assert_eq!(ask(&ix, Some("list-a")), direct);
    assert_eq!(ask(&ix, Some("list-a")), direct);
    let kept: i64 = rusqlite::Connection::open(transcope_index::index_path(home.path()))
        .unwrap()
        .query_row(
            "SELECT count(*) FROM usage_parts WHERE pricing = 'list-a'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(kept > 0);
    // A new request (and a copy that raises a kept one) changes the answer at once.
    ix.record(
        &[observed(
            "root",
            None,
            vec![
                spent(
                    "claude:m9:r9",
                    Some(9_000),
                    Some("claude-x"),
                    tokens(1, 100),
                    "T1",
                ),
                spent(
                    "claude:m3:r3",
                    Some(9_500),
                    Some("claude-y"),
                    tokens(2, 50),
                    "T7",
                ),
            ],
        )],
        Origin::Hook,
        true,
    )
    .unwrap();
    let after = ask(&ix, Some("list-a"));
    assert_eq!(after, ask(&ix, None));
    assert_ne!(after, direct);
    let t1 = after
        .iter()
        .find(|g| g.0 == [Some("T1".to_owned())])
        .unwrap();
    assert_eq!((t1.1, t1.2), (9 + 4 + 100, 3));
    // m3 stays in T2 (its earlier copy), now with the larger output.
    let t2 = after
        .iter()
        .find(|g| g.0 == [Some("T2".to_owned())])
        .unwrap();
    assert_eq!((t2.1, t2.2, t2.3), (50, 1, Some(50.0)));
    // A time window reads the requests, whatever is kept.
    let windowed = ix
        .usage(
            &by,
            &UsageFilter {
                since: Some(5_500),
                ..UsageFilter::default()
            },
            &price,
            Some("list-a"),
        )
        .unwrap();
    assert_eq!(windowed.iter().map(|g| g.messages).sum::<u64>(), 2);
}

#[test]
fn a_query_answers_while_another_connection_holds_the_write_lock() {
    let home = tempfile::tempdir().unwrap();
    let mut ix = Index::open(home.path()).unwrap();
    ix.record(&copies(), Origin::Backfill, false).unwrap();
    let kept = || -> i64 {
        rusqlite::Connection::open(transcope_index::index_path(home.path()))
            .unwrap()
            .query_row("SELECT count(*) FROM usage_parts", [], |r| r.get(0))
            .unwrap()
    };
    let writer = rusqlite::Connection::open(transcope_index::index_path(home.path())).unwrap();
    writer.execute_batch("BEGIN IMMEDIATE").unwrap();
    let by = [UsageKey::Session];
    let got = ix
        .usage(&by, &UsageFilter::default(), &no_price, Some("list"))
        .unwrap();
    // root and resumed (the sub-agent's one copy lost to the root's on a tie).
    assert_eq!(got.len(), 2);
    writer.execute_batch("COMMIT").unwrap();
    // Nothing was kept while the lock was held; the next query keeps its sums.
    assert_eq!(kept(), 0);
    let again = ix
        .usage(&by, &UsageFilter::default(), &no_price, Some("list"))
        .unwrap();
    assert_eq!(again, got);
    assert!(kept() > 0);
}

/// Hundreds of requests written by one batch (inserted many rows a statement), some of
/// them copies of rows the table holds already, earlier or later: every request is one
/// row, merged by the same rule as a row written alone.
#[test]
fn a_large_batch_merges_the_rows_it_meets() {
    let n = 300u64;
    let key = |i: u64| format!("claude:m{i}:r{i}");
    // Every third request is in the table already: at time 50, from the sub-agent,
    // with counts (i, 1); the batch's copy is at time 100 from the root with (1, i).
    let home = tempfile::tempdir().unwrap();
    let mut ix = Index::open(home.path()).unwrap();
    let before: Vec<Spending> = (0..n)
        .filter(|i| i % 3 == 0)
        .map(|i| spent(&key(i), Some(50), None, tokens(i, 1), "old"))
        .collect();
    ix.record(
        &[observed("root.a", Some("root"), before)],
        Origin::Backfill,
        false,
    )
    .unwrap();
    let mut batch = UsageBatch::with_capacity(16);
    let usage: Vec<Spending> = (0..n)
        .map(|i| spent(&key(i), Some(100), Some("m"), tokens(1, i), "new"))
        .collect();
    batch.add(&observed("root", None, Vec::new()), 0, usage);
    ix.record_usage(&mut batch).unwrap();
    assert!(batch.is_empty());
    let by_task = groups(&ix, &[UsageKey::Task]);
    // The copies met keep the earlier copy's task, the largest counts of both.
    let old: Vec<u64> = (0..n).filter(|i| i % 3 == 0).collect();
    let new: Vec<u64> = (0..n).filter(|i| i % 3 != 0).collect();
    let sum = |v: &[u64], f: fn(u64) -> u64| v.iter().map(|&i| f(i)).sum::<u64>();
    assert_eq!(
        by_task,
        vec![
            (
                vec![Some("new".into())],
                new.len() as u64,
                sum(&new, |i| i),
                10 * new.len() as u64,
                new.len() as u64
            ),
            (
                vec![Some("old".into())],
                sum(&old, |i| i.max(1)),
                sum(&old, |i| i.max(1)),
                10 * sum(&old, |i| i.max(1)),
                old.len() as u64
            ),
        ]
    );
}

#[test]
fn a_tie_goes_to_the_copy_read_first_in_its_run_whatever_the_order_added() {
    // Two copies of "a" at the same time, of two root sessions, other requests added
    // around them. The batch sorts by key when written; a tie is decided by where
    // each copy was read (`order`), not by which was added first.
    let others = |from: u64| -> Vec<Spending> {
        (from..from + 50)
            .map(|i| {
                spent(
                    &format!("o{i}"),
                    Some(i as i64),
                    Some("m"),
                    tokens(1, 1),
                    "other",
                )
            })
            .collect()
    };
    for (first_order, second_order, kept) in [(0, 1, "first"), (7, 3, "second")] {
        let home = tempfile::tempdir().unwrap();
        let mut ix = Index::open(home.path()).unwrap();
        let mut batch = UsageBatch::with_capacity(4);
        let mut first = others(0);
        first.push(spent("a", Some(500), Some("m"), tokens(3, 1), "first"));
        batch.add(&observed("s1", None, Vec::new()), first_order, first);
        let mut second = others(100);
        second.insert(0, spent("a", Some(500), Some("m"), tokens(1, 8), "second"));
        batch.add(&observed("s2", None, Vec::new()), second_order, second);
        assert_eq!(batch.len(), 102, "every copy is held until written");
        ix.record_usage(&mut batch).unwrap();
        assert!(batch.is_empty());
        let by_task = groups(&ix, &[UsageKey::Task]);
        // One request "a": the copy read first keeps its task; the largest counts of
        // both.
        let row = by_task
            .iter()
            .find(|r| r.0 == [Some(kept.to_owned())])
            .unwrap();
        assert_eq!((row.1, row.2, row.4), (3, 8, 1), "{kept}");
        assert_eq!(by_task.len(), 2, "{by_task:?}");
        assert_eq!(by_task.iter().map(|r| r.4).sum::<u64>(), 101);
    }
}

/// The task kept for request "a".
fn task_of_a(ix: &Index) -> String {
    let by = [UsageKey::Task];
    let rows = groups(ix, &by);
    assert_eq!(rows.len(), 1, "{rows:?}");
    rows[0].0[0].clone().unwrap()
}

#[test]
fn a_tie_across_writes_keeps_the_earlier_place_of_one_run_and_the_earlier_run() {
    let home = tempfile::tempdir().unwrap();
    let mut ix = Index::open(home.path()).unwrap();
    let a = |task: &str| vec![spent("a", Some(500), Some("m"), tokens(1, 1), task)];
    // One run written in two flushes: the copy of the file read 5th, then the one
    // read 3rd (written later: a worker finished it later) — the 3rd is kept.
    let mut run = UsageBatch::with_capacity(4);
    run.add(&observed("s5", None, Vec::new()), 5, a("fifth"));
    ix.record_usage(&mut run).unwrap();
    assert_eq!(task_of_a(&ix), "fifth");
    run.add(&observed("s3", None, Vec::new()), 3, a("third"));
    ix.record_usage(&mut run).unwrap();
    assert_eq!(task_of_a(&ix), "third");
    // A later run's copy ties with it and is not kept, read first in its run or not.
    let mut later = UsageBatch::with_capacity(4);
    later.add(&observed("s0", None, Vec::new()), 0, a("later run"));
    ix.record_usage(&mut later).unwrap();
    assert_eq!(task_of_a(&ix), "third");
    // Nor through `record` (a hook's or a query's sync: a run each call).
    ix.record(&[observed("s9", None, a("hook"))], Origin::Hook, true)
        .unwrap();
    assert_eq!(task_of_a(&ix), "third");
    // The place stored: the first run's first place (1: a new index's rows of
    // version 4 have 0) plus the read's; every place given is below `places`.
    let conn = Connection::open(transcope_index::index_path(home.path())).unwrap();
    let place: i64 = conn
        .query_row("SELECT place FROM usage", [], |r| r.get(0))
        .unwrap();
    assert_eq!(place, 1 + 3);
    let places: i64 = conn
        .query_row("SELECT v FROM usage_meta WHERE k = 'places'", [], |r| {
            r.get(0)
        })
        .unwrap();
    // Run 1 gave 1..=6, run 2 7, the hook's 8.
    assert_eq!(places, 9);
}

#[test]
fn a_new_index_has_large_pages_and_an_old_one_keeps_its_own() {
    let home = tempfile::tempdir().unwrap();
    drop(Index::open(home.path()).unwrap());
    let page = |p: &std::path::Path| -> i64 {
        Connection::open(p)
            .unwrap()
            .pragma_query_value(None, "page_size", |r| r.get(0))
            .unwrap()
    };
    let path = transcope_index::index_path(home.path());
    assert_eq!(page(&path), transcope_index::PAGE_SIZE);
    // An index made with SQLite's default pages, with a row in it.
    let old = tempfile::tempdir().unwrap();
    let old_path = transcope_index::index_path(old.path());
    std::fs::create_dir_all(old_path.parent().unwrap()).unwrap();
    {
        let conn = Connection::open(&old_path).unwrap();
        transcope_sqlite::migrate(&conn, &schema::MIGRATIONS[..1]).unwrap();
        conn.execute("INSERT INTO sessions (session) VALUES ('s')", [])
            .unwrap();
    }
    let before = page(&old_path);
    assert_eq!(before, 4096);
    let ix = Index::open(old.path()).unwrap();
    drop(ix);
    assert_eq!(page(&old_path), before);
    let n: i64 = Connection::open(&old_path)
        .unwrap()
        .query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1);
}

//! OpenCode's database read as records: each session's folder as its messages change
//! it, the branch derived from the folder's repository, usage equal to an independent
//! count of the five disjoint counts, sub-agent sessions' roots, a reply being written
//! left for the next read, and a locked or foreign database reported, not fatal.

use std::path::Path;
use std::process::Command;

use transcope_adapter_opencode::db::DbSource;
use transcope_adapter_opencode::write::{self, sample, Db, Tokens};
use transcope_adapter_opencode::{decode_session, OpenCodeFactory};
use transcope_core::adapter::{AdapterFactory, Confidence};
use transcope_core::records::{RecordPos, RecordSource};
use transcope_sqlite::rusqlite;

/// A repository at `dir` on branch `feature/oc` with one commit.
fn repo(dir: &Path) {
    std::fs::create_dir_all(dir.join("pkg")).unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q"]);
    git(&["checkout", "-q", "-b", "feature/oc"]);
    git(&["commit", "-q", "--allow-empty", "-m", "start"]);
}

/// (kind, time, folder, branch, texts, model, total tokens) of each entry of `key`.
type Row = (String, String, String, String, String, String, u64);

fn entries(db: &Path, key: &str) -> Vec<Row> {
    let mut source = DbSource::open(db).unwrap();
    let mut out = Vec::new();
    let read = decode_session(&mut source, key, |e| {
        let s = |c: Option<&str>| c.unwrap_or("").to_owned();
        let u = e.usage.as_ref();
        out.push((
            format!("{:?}", e.kind.unwrap()),
            s(e.time.as_str()),
            s(e.cwd.as_deref()),
            s(e.branch.as_deref()),
            e.texts.concat(),
            s(u.and_then(|u| u.model.as_deref())),
            u.and_then(|u| u.tokens).map_or(0, |t| t.total()),
        ));
    })
    .unwrap();
    assert!(!read.held);
    out
}

#[test]
fn each_message_is_an_entry_in_its_folder_with_the_repository_branch() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().join("repo");
    repo(&r);
    let s = sample(&dir.path().join("data"), &r, "/srv/elsewhere").unwrap();
    let repo_s = r.display().to_string();
    let pkg = r.join("pkg").display().to_string();
    let row = |kind: &str, time: &str, cwd: &str, text: &str, model: &str, total: u64| {
        (
            kind.to_owned(),
            time.to_owned(),
            cwd.to_owned(),
            "feature/oc".to_owned(),
            text.to_owned(),
            model.to_owned(),
            total,
        )
    };
    let sonnet = "anthropic/claude-sonnet-4-5";
    assert_eq!(
        entries(&s.db, s.main),
        [
            row("User", "2026-05-01T10:00:00.000Z", &repo_s, "", "", 0),
            row(
                "Assistant",
                "2026-05-01T10:01:00.000Z",
                &repo_s,
                "The build is green.",
                sonnet,
                1200 + 300 + 50 + 8000 + 400
            ),
            row("User", "2026-05-01T10:02:00.000Z", &repo_s, "", "", 0),
            // The reply worked in a sub-folder: the session's folder changes with it.
            row(
                "Assistant",
                "2026-05-01T10:03:00.000Z",
                &pkg,
                "Fixed in pkg.",
                sonnet,
                90 + 40 + 9000
            ),
        ]
    );
    // The session in "/" is placed in its project's worktree; no repository there.
    let rooted = entries(&s.db, s.rooted);
    assert!(
        rooted
            .iter()
            .all(|r| r.2 == "/srv/elsewhere" && r.3.is_empty()),
        "{rooted:?}"
    );
}

#[test]
fn usage_totals_equal_the_sum_of_the_five_disjoint_counts() {
    let dir = tempfile::tempdir().unwrap();
    let s = sample(&dir.path().join("data"), &dir.path().join("gone"), "/x").unwrap();
    // Independently of the adapter: SQLite's own JSON functions over the rows.
    let conn = rusqlite::Connection::open(&s.db).unwrap();
    let own: i64 = conn
        .query_row(
            "SELECT sum(json_extract(data, '$.tokens.input') + json_extract(data, '$.tokens.output')
                     + json_extract(data, '$.tokens.reasoning') + json_extract(data, '$.tokens.cache.read')
                     + json_extract(data, '$.tokens.cache.write'))
             FROM message WHERE json_extract(data, '$.role') = 'assistant'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let read: u64 = [s.main, s.child, s.rooted]
        .iter()
        .flat_map(|k| entries(&s.db, k))
        .map(|r| r.6)
        .sum();
    assert_eq!(read, own as u64);
    assert_eq!(read, s.replies.iter().map(|r| r.2.total()).sum::<u64>());
    // Reasoning is inside the output, never added twice; cache counts apart.
    let mut source = DbSource::open(&s.db).unwrap();
    let mut first = None;
    decode_session(&mut source, s.main, |e| {
        if let (None, Some(t)) = (&first, e.usage.as_ref().and_then(|u| u.tokens)) {
            first = Some(t);
        }
    })
    .unwrap();
    let t = first.unwrap();
    assert_eq!(
        (
            t.input,
            t.output,
            t.reasoning_output,
            t.cache_read,
            t.cache_creation
        ),
        (1200, 350, 50, 8000, 400)
    );
}

#[test]
fn sessions_are_listed_with_their_family_root() {
    let dir = tempfile::tempdir().unwrap();
    let s = sample(&dir.path().join("data"), &dir.path().join("r"), "/x").unwrap();
    let db = Db::open(&s.db).unwrap();
    // A grandchild: its root is the top session.
    db.session("ses_grand", "p_repo", Some(s.child), "/r", 1)
        .unwrap();
    let mut source = DbSource::open(&s.db).unwrap();
    let held: Vec<(String, String)> = source
        .sessions()
        .unwrap()
        .into_iter()
        .map(|h| (h.key, h.root))
        .collect();
    let pair = |k: &str, r: &str| (k.to_owned(), r.to_owned());
    assert_eq!(
        held,
        [
            pair("ses_child", "ses_main"),
            pair("ses_grand", "ses_main"),
            pair("ses_main", "ses_main"),
            pair("ses_rooted", "ses_rooted"),
        ]
    );
    let read = source
        .read("ses_grand", &RecordPos::START, &mut |_: u64, _: &[u8]| true)
        .unwrap();
    assert_eq!(read.parent.as_deref(), Some("ses_main"));
}

#[test]
fn a_reply_being_written_is_held_until_it_completes() {
    let dir = tempfile::tempdir().unwrap();
    let s = sample(&dir.path().join("data"), &dir.path().join("r"), "/x").unwrap();
    let db = Db::open(&s.db).unwrap();
    let t0 = 1_777_629_600_000 + 10 * 60_000;
    db.message("msg_05", s.main, t0, &write::user(t0)).unwrap();
    let writing = write::assistant(
        t0 + 1,
        None,
        "msg_05",
        ("anthropic", "m"),
        "/r",
        Tokens::default(),
    );
    db.message("msg_06", s.main, t0 + 1, &writing).unwrap();
    let mut source = DbSource::open(&s.db).unwrap();
    let before = source.marker(s.main).unwrap().unwrap();
    let mut ids = Vec::new();
    let read = source
        .read(
            s.main,
            &RecordPos {
                ordinal: 4,
                anchor: "msg_04".into(),
            },
            &mut |o: u64, _: &[u8]| {
                ids.push(o);
                true
            },
        )
        .unwrap();
    assert!(read.held);
    assert_eq!(ids, [4], "the user message, not the reply being written");
    assert_eq!(
        read.end,
        RecordPos {
            ordinal: 5,
            anchor: "msg_05".into()
        }
    );
    // It completes: the marker moves and the reply is read.
    let done = write::assistant(
        t0 + 1,
        Some(t0 + 9),
        "msg_05",
        ("anthropic", "m"),
        "/r",
        Tokens {
            input: 1,
            ..Tokens::default()
        },
    );
    db.message("msg_06", s.main, t0 + 1, &done).unwrap();
    assert_ne!(source.marker(s.main).unwrap().unwrap(), before);
    assert!(source.holds(s.main, &read.end).unwrap());
    let again = source
        .read(s.main, &read.end, &mut |_: u64, _: &[u8]| true)
        .unwrap();
    assert!(!again.held);
    assert_eq!(again.end.ordinal, 6);
    // A reply never completed but followed by another message was abandoned: read.
    db.message("msg_07", s.main, t0 + 20, &write::user(t0 + 20))
        .unwrap();
    db.message("msg_06", s.main, t0 + 1, &writing).unwrap();
    let all = source
        .read(s.main, &read.end, &mut |_: u64, _: &[u8]| true)
        .unwrap();
    assert_eq!((all.held, all.end.ordinal), (false, 7));
}

#[test]
fn a_locked_or_foreign_database_is_an_error_that_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let s = sample(&dir.path().join("data"), &dir.path().join("r"), "/x").unwrap();
    // Another process's exclusive lock held past the wait (a rollback journal, so
    // readers are shut out, unlike WAL).
    let locker = rusqlite::Connection::open(&s.db).unwrap();
    locker
        .pragma_update(None, "journal_mode", "delete")
        .unwrap();
    locker
        .execute_batch("BEGIN EXCLUSIVE; UPDATE session SET title = 'x';")
        .unwrap();
    let err = match DbSource::open(&s.db).and_then(|mut d| d.sessions()) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("read through an exclusive lock"),
    };
    assert!(err.contains("locked"), "{err}");
    locker.execute_batch("ROLLBACK").unwrap();

    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t (a);")
        .unwrap();
    let err = DbSource::open(&other).err().unwrap().to_string();
    assert!(err.contains("not an OpenCode database"), "{err}");
}

#[test]
fn a_write_ahead_log_being_written_is_read_and_never_changed() {
    let dir = tempfile::tempdir().unwrap();
    let s = sample(&dir.path().join("data"), &dir.path().join("r"), "/x").unwrap();
    // OpenCode keeps its connection open: the last rows are in the log, not the file.
    let writer = Db::open(&s.db).unwrap();
    writer
        .conn()
        .pragma_update(None, "wal_autocheckpoint", 0)
        .unwrap();
    let size = std::fs::metadata(&s.db).unwrap().len();
    let t = 1_777_629_600_000 + 30 * 60_000;
    writer
        .message("msg_30", s.rooted, t, &write::user(t))
        .unwrap();
    assert_eq!(std::fs::metadata(&s.db).unwrap().len(), size);
    let mut source = DbSource::open(&s.db).unwrap();
    let read = source
        .read(s.rooted, &RecordPos::START, &mut |_: u64, _: &[u8]| true)
        .unwrap();
    assert_eq!(read.end.anchor, "msg_30");
    drop(source);
    assert_eq!(
        std::fs::metadata(&s.db).unwrap().len(),
        size,
        "the reader wrote nothing"
    );
}

#[test]
fn sniffing_knows_a_database_by_its_header_and_nothing_else() {
    let f = OpenCodeFactory;
    let any = Path::new("/tmp/x.db");
    assert_eq!(
        f.sniff(any, b"SQLite format 3\0\x10\0"),
        Some(Confidence::Certain)
    );
    assert_eq!(
        f.sniff(Path::new("/tmp/x.jsonl"), br#"{"type":"user"}"#),
        None
    );
    assert_eq!(f.sniff(Path::new("/tmp/x.json"), b"{"), None);
}

//! The records compliance kit on OpenCode's database (each session written one message
//! a transaction and read between, a reply being written, every one-byte change of a
//! message's JSON), and detection both ways: every other agent's public file is
//! detected and named exactly as without the OpenCode adapter, and the database is no
//! other agent's.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use transcope_adapter_opencode::write::{self, Db, Tokens};
use transcope_sqlite::rusqlite::{params, OptionalExtension};
use transcope_testkit::compliance::{others_untouched, Container, RecordsKit};

/// One message: id, time, its JSON complete, its JSON while being written (an
/// assistant's), its parts.
struct Message {
    id: String,
    at: i64,
    done: String,
    writing: Option<String>,
    parts: Vec<(String, String)>,
}

/// A database of two sessions (a task's child among them), written message by
/// message.
struct OpenCodeDb {
    path: PathBuf,
    db: Db,
    sessions: BTreeMap<String, Vec<Message>>,
    present: BTreeMap<String, usize>,
}

fn err(e: impl std::error::Error + Send + Sync + 'static) -> io::Error {
    io::Error::other(e)
}

fn messages(session: &str, n: usize, cwd: &str) -> Vec<Message> {
    let t0 = 1_777_629_600_000 + if session.ends_with('b') { 500_000 } else { 0 };
    (0..n)
        .map(|i| {
            let at = t0 + i as i64 * 1000;
            let id = format!("msg_{session}_{i:02}");
            if i % 2 == 0 {
                Message {
                    id,
                    at,
                    done: write::user(at),
                    writing: None,
                    parts: vec![(format!("prt_{session}_{i:02}"), write::text_part("Go on."))],
                }
            } else {
                let parent = format!("msg_{session}_{:02}", i - 1);
                let t = Tokens {
                    input: 10 + i as u64,
                    output: 5,
                    reasoning: 2,
                    cache_read: 100,
                    cache_write: 7,
                };
                let model = ("anthropic", "claude-sonnet-4-5");
                // The folder moves at the second reply; the user message after it stays there.
                let cwd = if i >= 3 {
                    format!("{cwd}/pkg")
                } else {
                    cwd.to_owned()
                };
                Message {
                    done: write::assistant(at, Some(at + 500), &parent, model, &cwd, t),
                    writing: Some(write::assistant(
                        at,
                        None,
                        &parent,
                        model,
                        &cwd,
                        Tokens::default(),
                    )),
                    parts: vec![
                        (
                            format!("prt_{session}_{i:02}a"),
                            write::tool_part("c1", "read", "fn main() {}"),
                        ),
                        (
                            format!("prt_{session}_{i:02}b"),
                            write::text_part(&format!("Reply {i}: <!-- not a marker")),
                        ),
                    ],
                    id,
                    at,
                }
            }
        })
        .collect()
}

impl OpenCodeDb {
    fn new(dir: &Path) -> io::Result<OpenCodeDb> {
        let path = dir.join("opencode.db");
        let db = Db::create(&path).map_err(err)?;
        // Thousands of one-row changes: not synced (a test's database).
        db.conn()
            .pragma_update(None, "synchronous", "off")
            .map_err(err)?;
        db.project("p1", "/work/app").map_err(err)?;
        db.session("ses_a", "p1", None, "/work/app", 1)
            .map_err(err)?;
        db.session("ses_b", "p1", Some("ses_a"), "/work/app", 2)
            .map_err(err)?;
        let sessions = BTreeMap::from([
            ("ses_a".to_owned(), messages("ses_a", 6, "/work/app")),
            ("ses_b".to_owned(), messages("ses_b", 4, "/work/app")),
        ]);
        Ok(OpenCodeDb {
            path,
            db,
            sessions,
            present: BTreeMap::new(),
        })
    }

    fn message(&self, key: &str, ordinal: usize) -> &Message {
        &self.sessions[key][ordinal]
    }
}

impl Container for OpenCodeDb {
    fn path(&self) -> &Path {
        &self.path
    }

    fn sessions(&self) -> Vec<(String, usize)> {
        self.sessions
            .iter()
            .map(|(k, m)| (k.clone(), m.len()))
            .collect()
    }

    fn write(&mut self, key: &str, upto: usize) -> io::Result<()> {
        let from = self.present.get(key).copied().unwrap_or(0);
        self.db.conn().execute_batch("BEGIN").map_err(err)?;
        // A record left being written is rewritten complete; the rest inserted.
        let start = from.saturating_sub(1);
        for i in start..upto {
            let m = self.message(key, i);
            self.db.message(&m.id, key, m.at, &m.done).map_err(err)?;
            for (id, data) in &m.parts {
                self.db.part(id, &m.id, key, m.at, data).map_err(err)?;
            }
        }
        self.db.conn().execute_batch("COMMIT").map_err(err)?;
        self.present.insert(key.to_owned(), upto.max(from));
        Ok(())
    }

    fn writing(&mut self, key: &str, ordinal: usize) -> io::Result<()> {
        let m = self.message(key, ordinal);
        let data = m
            .writing
            .as_ref()
            .ok_or_else(|| io::Error::other("a user message is never being written"))?;
        self.db.message(&m.id, key, m.at, data).map_err(err)?;
        self.present.insert(key.to_owned(), ordinal + 1);
        Ok(())
    }

    fn row(&self, key: &str, ordinal: usize) -> io::Result<Vec<u8>> {
        let id = &self.message(key, ordinal).id;
        let data: Option<String> = self
            .db
            .conn()
            .query_row("SELECT data FROM message WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(err)?;
        data.map(String::into_bytes)
            .ok_or_else(|| io::Error::other("no such row"))
    }

    fn set_row(&mut self, key: &str, ordinal: usize, json: &[u8]) -> io::Result<()> {
        let id = self.message(key, ordinal).id.clone();
        // Stored as SQLite stores what it is given: text when it is UTF-8, else a blob.
        let changed = match std::str::from_utf8(json) {
            Ok(s) => self
                .db
                .conn()
                .execute("UPDATE message SET data = ?2 WHERE id = ?1", params![id, s]),
            Err(_) => self.db.conn().execute(
                "UPDATE message SET data = ?2 WHERE id = ?1",
                params![id, json],
            ),
        }
        .map_err(err)?;
        assert_eq!(changed, 1);
        Ok(())
    }
}

#[test]
fn opencode_databases_in_pieces_give_one_pass() {
    let report = RecordsKit::new("opencode", transcope_testkit::engine::adapters)
        .check(OpenCodeDb::new)
        .unwrap();
    assert_eq!(
        (report.sessions, report.records, report.entries),
        (2, 10, 10),
        "{report:?}"
    );
    assert!(report.mutations > 1000, "{report:?}");
}

/// The kit can fail: a source that passed a reply being written would move the cursor
/// past it — checked by a container whose "being written" is complete already.
#[test]
fn the_kit_sees_a_record_being_written_read_too_early() {
    struct Eager(OpenCodeDb);
    impl Container for Eager {
        fn path(&self) -> &Path {
            self.0.path()
        }
        fn sessions(&self) -> Vec<(String, usize)> {
            self.0.sessions()
        }
        fn write(&mut self, key: &str, upto: usize) -> io::Result<()> {
            self.0.write(key, upto)
        }
        fn writing(&mut self, key: &str, ordinal: usize) -> io::Result<()> {
            self.0.write(key, ordinal + 1)
        }
        fn row(&self, key: &str, ordinal: usize) -> io::Result<Vec<u8>> {
            self.0.row(key, ordinal)
        }
        fn set_row(&mut self, key: &str, ordinal: usize, json: &[u8]) -> io::Result<()> {
            self.0.set_row(key, ordinal, json)
        }
    }
    let err = RecordsKit::new("opencode", transcope_testkit::engine::adapters)
        .mutated_rows(0)
        .check(|d| OpenCodeDb::new(d).map(Eager))
        .unwrap_err();
    assert!(err.to_string().contains("being written"), "{err}");
}

#[test]
fn every_other_agents_public_file_is_detected_and_named_as_before() {
    let n = others_untouched("opencode");
    assert!(n >= 50, "{n}");
}

//! Writing OpenCode's database and legacy tree as OpenCode writes them: for the tests,
//! the generated corpus and the benches (transcope itself never writes an agent's
//! data).
//!
//! The schema is transcope's own transcription of the tables OpenCode's drizzle
//! definitions declare (`packages/opencode/src/session/session.sql.ts`,
//! `project/project.sql.ts` at 063e830; see `db.rs` for the columns read): the columns,
//! their types and `NOT NULL`s, the foreign keys and the indexes the reader's queries
//! lean on (`message_session_time_created_id_idx`, `part_message_id_id_idx`). The
//! database is in WAL mode, as OpenCode keeps it. The message and part JSON
//! ([`user`], [`assistant`], [`text_part`], [`tool_part`]) are shaped like
//! `MessageV2.Info` and `MessageV2.Part` (`message-v2.ts`): without the ids the row
//! holds in columns.
//!
//! ```
//! use transcope_adapter_opencode::write::{self, Db, Tokens};
//! let dir = tempfile::tempdir().unwrap();
//! let db = Db::create(&dir.path().join("opencode.db")).unwrap();
//! db.project("global", "/").unwrap();
//! db.session("ses_1", "global", None, "/w", 1_000).unwrap();
//! db.message("msg_1", "ses_1", 1_000, &write::user(1_000)).unwrap();
//! let done = write::assistant(2_000, Some(3_000), "msg_1", ("anthropic", "claude-sonnet-4-5"), "/w", Tokens::default());
//! db.message("msg_2", "ses_1", 2_000, &done).unwrap();
//! db.part("prt_1", "msg_2", "ses_1", 2_000, &write::text_part("Done.")).unwrap();
//! ```

use std::path::Path;

use serde_json::json;
use transcope_sqlite::rusqlite::{self, params, Connection};

/// OpenCode's tables, as transcope transcribes them (see the module docs).
pub const SCHEMA: &str = "
CREATE TABLE project (
    id TEXT PRIMARY KEY NOT NULL,
    worktree TEXT NOT NULL,
    vcs TEXT,
    name TEXT,
    icon_url TEXT,
    icon_color TEXT,
    time_created INTEGER NOT NULL,
    time_updated INTEGER NOT NULL,
    time_initialized INTEGER,
    sandboxes TEXT NOT NULL,
    commands TEXT
);
CREATE TABLE session (
    id TEXT PRIMARY KEY NOT NULL,
    project_id TEXT NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    workspace_id TEXT,
    parent_id TEXT,
    slug TEXT NOT NULL,
    directory TEXT NOT NULL,
    title TEXT NOT NULL,
    version TEXT NOT NULL,
    share_url TEXT,
    summary_additions INTEGER,
    summary_deletions INTEGER,
    summary_files INTEGER,
    summary_diffs TEXT,
    cost REAL NOT NULL DEFAULT 0,
    tokens_input INTEGER NOT NULL DEFAULT 0,
    tokens_output INTEGER NOT NULL DEFAULT 0,
    tokens_reasoning INTEGER NOT NULL DEFAULT 0,
    tokens_cache_read INTEGER NOT NULL DEFAULT 0,
    tokens_cache_write INTEGER NOT NULL DEFAULT 0,
    revert TEXT,
    permission TEXT,
    time_created INTEGER NOT NULL,
    time_updated INTEGER NOT NULL,
    time_compacting INTEGER,
    time_archived INTEGER
);
CREATE INDEX session_project_idx ON session (project_id);
CREATE INDEX session_workspace_idx ON session (workspace_id);
CREATE INDEX session_parent_idx ON session (parent_id);
CREATE TABLE message (
    id TEXT PRIMARY KEY NOT NULL,
    session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
    time_created INTEGER NOT NULL,
    time_updated INTEGER NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE TABLE part (
    id TEXT PRIMARY KEY NOT NULL,
    message_id TEXT NOT NULL REFERENCES message(id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    time_created INTEGER NOT NULL,
    time_updated INTEGER NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
CREATE INDEX part_session_idx ON part (session_id);
CREATE TABLE todo (
    session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
    content TEXT NOT NULL,
    status TEXT NOT NULL,
    priority TEXT NOT NULL,
    position INTEGER NOT NULL,
    time_created INTEGER NOT NULL,
    time_updated INTEGER NOT NULL,
    PRIMARY KEY (session_id, position)
);
";

/// A database being written as OpenCode writes it.
pub struct Db {
    conn: Connection,
}

impl Db {
    /// A new database at `path` with OpenCode's tables, in WAL mode.
    pub fn create(path: &Path) -> rusqlite::Result<Db> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "wal")?;
        conn.pragma_update(None, "foreign_keys", true)?;
        conn.execute_batch(SCHEMA)?;
        Ok(Db { conn })
    }

    /// The database at `path`, opened to write more.
    pub fn open(path: &Path) -> rusqlite::Result<Db> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "foreign_keys", true)?;
        Ok(Db { conn })
    }

    /// The connection (transactions, deletes, anything the helpers do not do).
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// A project (`id`: the repository's root commit, or `global`).
    pub fn project(&self, id: &str, worktree: &str) -> rusqlite::Result<()> {
        self.conn.execute(
            "INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes)
             VALUES (?1, ?2, 'git', 0, 0, '[]')",
            params![id, worktree],
        )?;
        Ok(())
    }

    /// A session of `project` in `directory`, a child of `parent` when given.
    pub fn session(
        &self,
        id: &str,
        project: &str,
        parent: Option<&str>,
        directory: &str,
        created: i64,
    ) -> rusqlite::Result<()> {
        self.conn.execute(
            "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version,
                                  time_created, time_updated)
             VALUES (?1, ?2, ?3, ?1, ?4, 'New session', '1.18.33', ?5, ?5)",
            params![id, project, parent, directory, created],
        )?;
        Ok(())
    }

    /// A message, or its new version (OpenCode upserts a message as it changes),
    /// touching its session's `time_updated`.
    pub fn message(
        &self,
        id: &str,
        session: &str,
        created: i64,
        data: &str,
    ) -> rusqlite::Result<()> {
        let updated = created.max(completed_of(data).unwrap_or(created));
        self.conn.execute(
            "INSERT INTO message (id, session_id, time_created, time_updated, data)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (id) DO UPDATE SET time_updated = excluded.time_updated, data = excluded.data",
            params![id, session, created, updated, data],
        )?;
        self.conn.execute(
            "UPDATE session SET time_updated = max(time_updated, ?2) WHERE id = ?1",
            params![session, updated],
        )?;
        Ok(())
    }

    /// A part of `message`.
    pub fn part(
        &self,
        id: &str,
        message: &str,
        session: &str,
        created: i64,
        data: &str,
    ) -> rusqlite::Result<()> {
        self.conn.execute(
            "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)
             VALUES (?1, ?2, ?3, ?4, ?4, ?5)
             ON CONFLICT (id) DO UPDATE SET data = excluded.data",
            params![id, message, session, created, data],
        )?;
        Ok(())
    }
}

/// `time.completed` of a message's JSON.
fn completed_of(data: &str) -> Option<i64> {
    let v: serde_json::Value = serde_json::from_str(data).ok()?;
    v.pointer("/time/completed")?.as_i64()
}

/// An assistant's five token counts (OpenCode's: none includes another).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Fresh input.
    pub input: u64,
    /// Output, reasoning apart.
    pub output: u64,
    /// Reasoning.
    pub reasoning: u64,
    /// Cache reads.
    pub cache_read: u64,
    /// Cache writes.
    pub cache_write: u64,
}

impl Tokens {
    /// The sum of the five: a request's total.
    pub fn total(&self) -> u64 {
        self.input + self.output + self.reasoning + self.cache_read + self.cache_write
    }
}

/// A user message's JSON (`MessageV2.User`, ids left to the row).
pub fn user(created: i64) -> String {
    json!({
        "role": "user",
        "time": {"created": created},
        "agent": "build",
        "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"},
    })
    .to_string()
}

/// An assistant message's JSON (`MessageV2.Assistant`): `completed` absent while the
/// reply is being written (its tokens then zero, as OpenCode starts them).
pub fn assistant(
    created: i64,
    completed: Option<i64>,
    parent: &str,
    (provider, model): (&str, &str),
    cwd: &str,
    t: Tokens,
) -> String {
    let mut time = json!({"created": created});
    if let Some(c) = completed {
        time["completed"] = json!(c);
    }
    let mut v = json!({
        "role": "assistant",
        "time": time,
        "parentID": parent,
        "modelID": model,
        "providerID": provider,
        "mode": "build",
        "agent": "build",
        "path": {"cwd": cwd, "root": cwd},
        "cost": 0.0,
        "tokens": {
            "total": t.total(),
            "input": t.input,
            "output": t.output,
            "reasoning": t.reasoning,
            "cache": {"read": t.cache_read, "write": t.cache_write},
        },
    });
    if completed.is_some() {
        v["finish"] = json!("stop");
    }
    v.to_string()
}

/// A text part's JSON.
pub fn text_part(text: &str) -> String {
    json!({"type": "text", "text": text, "time": {"start": 0, "end": 0}}).to_string()
}

/// A completed tool part's JSON, its output `output`.
pub fn tool_part(call: &str, tool: &str, output: &str) -> String {
    json!({
        "type": "tool",
        "callID": call,
        "tool": tool,
        "state": {
            "status": "completed",
            "input": {"filePath": "/w/src/main.rs"},
            "output": output,
            "title": "src/main.rs",
            "metadata": {},
            "time": {"start": 0, "end": 1},
        },
    })
    .to_string()
}

/// What [`sample`] wrote: the database, and the sessions' ids.
#[derive(Clone, Debug)]
pub struct Sample {
    /// The database.
    pub db: std::path::PathBuf,
    /// A session in the repository's folder, then in its `pkg` sub-folder.
    pub main: &'static str,
    /// A sub-agent session of `main` (a `task`).
    pub child: &'static str,
    /// A session whose directory is `/` (the project's worktree stands for it).
    pub rooted: &'static str,
    /// The assistant messages written, with their session, folder and counts.
    pub replies: Vec<(&'static str, String, Tokens)>,
}

/// The session set the tests and examples read: `opencode.db` under `data` (created),
/// for a project whose worktree is `repo` (a folder the caller may make a repository):
/// [`Sample::main`] asks twice, its replies working in `repo` then `repo/pkg`, and
/// hands a task to [`Sample::child`]; [`Sample::rooted`] runs in `/` of a project whose
/// worktree is `elsewhere`. Times from 2026-05-01T10:00:00Z, a minute apart.
pub fn sample(data: &Path, repo: &Path, elsewhere: &str) -> rusqlite::Result<Sample> {
    const T0: i64 = 1_777_629_600_000;
    let min = |n: i64| T0 + n * 60_000;
    std::fs::create_dir_all(data).map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.into()))?;
    let path = data.join("opencode.db");
    let db = Db::create(&path)?;
    let repo_s = repo.display().to_string();
    let pkg = repo.join("pkg").display().to_string();
    db.project("p_repo", &repo_s)?;
    db.project("p_else", elsewhere)?;
    let mut replies = Vec::new();
    let model = ("anthropic", "claude-sonnet-4-5");
    let mut reply = |db: &Db,
                     (session, id, at): (&'static str, &str, i64),
                     parent: &str,
                     cwd: &str,
                     t: Tokens,
                     text: &str| {
        db.message(
            id,
            session,
            min(at),
            &assistant(min(at), Some(min(at) + 30_000), parent, model, cwd, t),
        )?;
        db.part(
            &format!("prt_{id}_1"),
            id,
            session,
            min(at),
            &tool_part("call_1", "read", &"x".repeat(200)),
        )?;
        db.part(
            &format!("prt_{id}_2"),
            id,
            session,
            min(at),
            &text_part(text),
        )?;
        replies.push((session, cwd.to_owned(), t));
        Ok::<(), rusqlite::Error>(())
    };
    let t = |input, output, reasoning, cache_read, cache_write| Tokens {
        input,
        output,
        reasoning,
        cache_read,
        cache_write,
    };
    db.session("ses_main", "p_repo", None, &repo_s, min(0))?;
    db.message("msg_01", "ses_main", min(0), &user(min(0)))?;
    db.part(
        "prt_01",
        "msg_01",
        "ses_main",
        min(0),
        &text_part("Look at the build."),
    )?;
    reply(
        &db,
        ("ses_main", "msg_02", 1),
        "msg_01",
        &repo_s,
        t(1200, 300, 50, 8000, 400),
        "The build is green.",
    )?;
    db.message("msg_03", "ses_main", min(2), &user(min(2)))?;
    reply(
        &db,
        ("ses_main", "msg_04", 3),
        "msg_03",
        &pkg,
        t(90, 40, 0, 9000, 0),
        "Fixed in pkg.",
    )?;
    db.session("ses_child", "p_repo", Some("ses_main"), &repo_s, min(3))?;
    db.message("msg_10", "ses_child", min(3), &user(min(3)))?;
    reply(
        &db,
        ("ses_child", "msg_11", 4),
        "msg_10",
        &repo_s,
        t(500, 120, 30, 0, 2000),
        "Searched: three files.",
    )?;
    db.session("ses_rooted", "p_else", None, "/", min(5))?;
    db.message("msg_20", "ses_rooted", min(5), &user(min(5)))?;
    reply(
        &db,
        ("ses_rooted", "msg_21", 6),
        "msg_20",
        "/",
        t(10, 5, 0, 0, 0),
        "Hi.",
    )?;
    Ok(Sample {
        db: path,
        main: "ses_main",
        child: "ses_child",
        rooted: "ses_rooted",
        replies,
    })
}

/// Write the database at `db` out as the legacy JSON tree under `storage` (the files
/// OpenCode's import reads, each row's ids put back in its JSON): the same sessions
/// in the older layout, for tests that read both.
pub fn export_tree(db: &Path, storage: &Path) -> std::io::Result<()> {
    let conn = Connection::open(db).map_err(std::io::Error::other)?;
    let put = |rel: std::path::PathBuf, v: serde_json::Value| -> std::io::Result<()> {
        let path = storage.join(rel);
        std::fs::create_dir_all(path.parent().unwrap_or(storage))?;
        std::fs::write(
            path,
            serde_json::to_vec_pretty(&v).map_err(std::io::Error::other)?,
        )
    };
    let rows = |sql: &str| -> std::io::Result<Vec<Vec<String>>> {
        let mut st = conn.prepare(sql).map_err(std::io::Error::other)?;
        let n = st.column_count();
        let got = st
            .query_map([], |r| {
                (0..n)
                    .map(|i| r.get::<_, Option<String>>(i).map(Option::unwrap_or_default))
                    .collect()
            })
            .and_then(|rows| rows.collect::<Result<Vec<Vec<String>>, _>>())
            .map_err(std::io::Error::other)?;
        Ok(got)
    };
    let object = |data: &str, ids: serde_json::Value| {
        let mut v: serde_json::Value = serde_json::from_str(data).unwrap_or(json!({}));
        if let (Some(o), Some(ids)) = (v.as_object_mut(), ids.as_object()) {
            for (k, x) in ids {
                o.insert(k.clone(), x.clone());
            }
        }
        v
    };
    for r in rows("SELECT id, worktree FROM project")? {
        put(
            format!("project/{}.json", r[0]).into(),
            json!({"id": r[0], "worktree": r[1], "vcs": "git", "time": {"created": 0}}),
        )?;
    }
    for r in rows("SELECT id, project_id, coalesce(parent_id, ''), directory, CAST(time_created AS TEXT), CAST(time_updated AS TEXT) FROM session")? {
        let mut v = json!({"id": r[0], "slug": r[0], "projectID": r[1], "directory": r[3], "title": "New session", "version": "1.1.0",
            "time": {"created": r[4].parse::<i64>().unwrap_or(0), "updated": r[5].parse::<i64>().unwrap_or(0)}});
        if !r[2].is_empty() {
            v["parentID"] = json!(r[2]);
        }
        put(format!("session/{}/{}.json", r[1], r[0]).into(), v)?;
    }
    for r in rows("SELECT id, session_id, data FROM message")? {
        put(
            format!("message/{}/{}.json", r[1], r[0]).into(),
            object(&r[2], json!({"id": r[0], "sessionID": r[1]})),
        )?;
    }
    for r in rows("SELECT id, message_id, session_id, data FROM part")? {
        put(
            format!("part/{}/{}.json", r[1], r[0]).into(),
            object(
                &r[3],
                json!({"id": r[0], "messageID": r[1], "sessionID": r[2]}),
            ),
        )?;
    }
    Ok(())
}

/// A generated database at `path` of `sessions` sessions shaped like a working
/// week's (every fourth a task's child of the one before; 30 exchanges each: a user
/// message with its text, a reply with a reasoning part, a text part and a tool call
/// whose output is 2–12 KB; the folder moving to a sub-folder half-way), written in one
/// transaction, unsynced. Deterministic: the same arguments give the same rows.
pub fn generated(path: &Path, sessions: usize) -> rusqlite::Result<()> {
    const T0: i64 = 1_777_629_600_000;
    let db = Db::create(path)?;
    db.conn().pragma_update(None, "synchronous", "off")?;
    db.conn().execute_batch("BEGIN")?;
    db.project("p_gen", "/work/gen")?;
    // A small linear congruential generator: sizes vary, runs repeat.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        (state >> 33) % n
    };
    let filler = "fn handler(req: Request) -> Response { let body = parse(req); respond(body) }\n";
    for s in 0..sessions {
        let sid = format!("ses_gen{s:05}");
        let parent = (s % 4 == 3).then(|| format!("ses_gen{:05}", s - 1));
        let start = T0 + s as i64 * 3_600_000;
        let dir = format!("/work/gen/app{}", s % 7);
        db.session(&sid, "p_gen", parent.as_deref(), &dir, start)?;
        for x in 0..30i64 {
            let at = start + x * 60_000;
            let uid = format!("msg_{sid}_{x:02}u");
            db.message(&uid, &sid, at, &user(at))?;
            db.part(
                &format!("prt_{uid}"),
                &uid,
                &sid,
                at,
                &text_part("Please look at the failing test and fix it."),
            )?;
            let aid = format!("msg_{sid}_{x:02}a");
            let cwd = if x < 15 {
                dir.clone()
            } else {
                format!("{dir}/pkg")
            };
            let t = Tokens {
                input: 200 + next(2000),
                output: 100 + next(900),
                reasoning: next(300),
                cache_read: 5_000 + next(60_000),
                cache_write: next(4_000),
            };
            let reply = assistant(
                at + 1_000,
                Some(at + 20_000),
                &uid,
                ("anthropic", "claude-sonnet-4-5"),
                &cwd,
                t,
            );
            db.message(&aid, &sid, at + 1_000, &reply)?;
            let reasoning = json!({"type": "reasoning", "text": filler.repeat(8), "time": {"start": 0, "end": 1}}).to_string();
            db.part(&format!("prt_{aid}_r"), &aid, &sid, at + 1_000, &reasoning)?;
            let output = filler.repeat(25 + next(125) as usize);
            db.part(
                &format!("prt_{aid}_t"),
                &aid,
                &sid,
                at + 1_000,
                &tool_part("call", "read", &output),
            )?;
            db.part(
                &format!("prt_{aid}_x"),
                &aid,
                &sid,
                at + 1_000,
                &text_part("Fixed: the handler parses before it responds."),
            )?;
        }
    }
    db.conn().execute_batch("COMMIT")?;
    Ok(())
}

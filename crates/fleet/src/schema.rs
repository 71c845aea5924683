//! The fleet's schema, one migration per version (`transcope_schema.version`).
//!
//! Migrations run in one transaction under an advisory lock, so machines pushing for
//! the first time together migrate once; a fleet of a newer version is refused
//! ([`crate::FleetError::Newer`]), never written.
//!
//! * `machines`: one row per machine (its stable id), its name, how far into its
//!   local index it has pushed (`index_id`, `upto`: see `transcope_index::Mark`),
//!   and when it pushed first and last.
//! * `sessions`, `transitions`, `markers`, `usage`: the local index's rows, keyed as
//!   there (session; session and place; idempotency key; request key), each with the
//!   machine that first pushed it. `markers.ord` keeps the order rows were found,
//!   machine by machine, push by push.
//! * `usage_parts`: the requests summed by machine, scope, model, UTC day and price
//!   tier (which of the thresholds in `fleet_meta.thresholds`, fixed by the first
//!   push, a request's prompt is above), kept by every push as it merges requests
//!   (the old rows' sums taken out, the new ones' put in, under one lock), so a
//!   usage query without a time window reads parts, not every request. A part whose
//!   requests all moved elsewhere stays with 0 requests (pushers may not delete).
//!   A model of none is `''`, a day of none `-9223372036854775808`.

use crate::{Fleet, FleetError};

/// The migrations, in order: migration `i` takes version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[V1];

/// The newest version this build knows.
pub const VERSION: i32 = MIGRATIONS.len() as i32;

/// The key of the advisory lock migrations take (any constant of ours).
const LOCK: i64 = 0x7472_616e_7363_6f70; // "transcop"

const V1: &str = "
CREATE TABLE machines (
    machine_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    index_id BIGINT,
    upto BIGINT,
    first_push TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_push TIMESTAMPTZ,
    pushes BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE sessions (
    session TEXT PRIMARY KEY,
    machine TEXT NOT NULL,
    parent TEXT,
    agent TEXT,
    transcript TEXT,
    first_at TEXT,
    first_us BIGINT,
    last_at TEXT,
    last_us BIGINT
);
CREATE INDEX sessions_machine ON sessions (machine);
CREATE TABLE transitions (
    session TEXT NOT NULL,
    seq BIGINT NOT NULL,
    machine TEXT NOT NULL,
    transition_id TEXT NOT NULL,
    at TEXT NOT NULL,
    at_us BIGINT,
    project_id TEXT NOT NULL DEFAULT '',
    project TEXT NOT NULL DEFAULT '',
    repo TEXT NOT NULL DEFAULT '',
    worktree TEXT NOT NULL DEFAULT '',
    cwd TEXT NOT NULL DEFAULT '',
    remote TEXT NOT NULL DEFAULT '',
    branch TEXT NOT NULL DEFAULT '',
    swarm TEXT NOT NULL DEFAULT '',
    task TEXT NOT NULL DEFAULT '',
    task_revision TEXT NOT NULL DEFAULT '',
    lane TEXT NOT NULL DEFAULT '',
    line TEXT NOT NULL,
    PRIMARY KEY (session, seq)
);
CREATE INDEX transitions_time ON transitions (session, at_us, seq);
CREATE INDEX transitions_project ON transitions (project_id);
CREATE INDEX transitions_machine ON transitions (machine);
CREATE SEQUENCE markers_found;
CREATE TABLE markers (
    idempotency_key TEXT PRIMARY KEY,
    ord BIGINT NOT NULL DEFAULT nextval('markers_found'),
    machine TEXT NOT NULL,
    session TEXT,
    type TEXT NOT NULL,
    content TEXT NOT NULL,
    attrs TEXT NOT NULL,
    at TEXT,
    at_us BIGINT,
    attribution TEXT,
    project_id TEXT,
    worktree TEXT,
    branch TEXT,
    task TEXT,
    body TEXT NOT NULL,
    origin TEXT NOT NULL,
    state TEXT NOT NULL,
    detail TEXT,
    found_us BIGINT,
    changed_us BIGINT
);
CREATE INDEX markers_order ON markers (ord);
CREATE INDEX markers_session ON markers (session, at_us);
CREATE INDEX markers_machine ON markers (machine);
CREATE TABLE usage (
    message_key BYTEA PRIMARY KEY,
    machine TEXT NOT NULL,
    session TEXT NOT NULL,
    root_session TEXT NOT NULL,
    is_root BOOLEAN NOT NULL,
    at_us BIGINT,
    model TEXT,
    input_tokens BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    cache_creation_input_tokens BIGINT NOT NULL DEFAULT 0,
    cache_creation_1h_input_tokens BIGINT NOT NULL DEFAULT 0,
    cache_read_input_tokens BIGINT NOT NULL DEFAULT 0,
    reasoning_output_tokens BIGINT NOT NULL DEFAULT 0,
    project_id TEXT NOT NULL DEFAULT '',
    worktree TEXT NOT NULL DEFAULT '',
    branch TEXT NOT NULL DEFAULT '',
    task TEXT NOT NULL DEFAULT '',
    lane TEXT NOT NULL DEFAULT '',
    place BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE fleet_meta (
    k TEXT PRIMARY KEY,
    v TEXT NOT NULL
);
CREATE TABLE usage_parts (
    machine TEXT NOT NULL,
    session TEXT NOT NULL,
    root_session TEXT NOT NULL,
    project_id TEXT NOT NULL,
    worktree TEXT NOT NULL,
    branch TEXT NOT NULL,
    task TEXT NOT NULL,
    model TEXT NOT NULL,
    day BIGINT NOT NULL,
    tier INTEGER NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cache_creation_input_tokens BIGINT NOT NULL,
    cache_creation_1h_input_tokens BIGINT NOT NULL,
    cache_read_input_tokens BIGINT NOT NULL,
    reasoning_output_tokens BIGINT NOT NULL,
    requests BIGINT NOT NULL,
    PRIMARY KEY (machine, session, root_session, project_id, worktree, branch, task, model, day, tier)
);
";

/// Bring `fleet`'s schema to [`VERSION`] in one transaction; refuse a newer one.
pub fn migrate(fleet: &Fleet) -> Result<i32, FleetError> {
    let mut client = fleet.client.borrow_mut();
    let q = |e| fleet.query_error(e);
    // Most connections find the schema current: one read, no lock, no transaction.
    // Whether the table is there is read from the catalog, as of the statement: a
    // name looked up by `to_regclass` before waiting for the lock is remembered as
    // missing (the server's catalog cache) after another connection made it.
    fn current(c: &mut impl postgres::GenericClient) -> Result<Option<i32>, postgres::Error> {
        let has = c.query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables
                            WHERE schemaname = current_schema() AND tablename = 'transcope_schema')",
            &[],
        )?;
        if !has.get::<_, bool>(0) {
            return Ok(None);
        }
        Ok(c.query_opt("SELECT version FROM transcope_schema", &[])?
            .map(|r| r.get::<_, i32>(0)))
    }
    let found = current(&mut *client).map_err(q)?;
    if found == Some(VERSION) {
        return Ok(VERSION);
    }
    if let Some(v) = found.filter(|v| *v > VERSION) {
        return Err(FleetError::Newer {
            url: fleet.url.clone(),
            found: v,
            known: VERSION,
        });
    }
    let mut tx = client.transaction().map_err(q)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK])
        .map_err(q)?;
    let found = current(&mut tx).map_err(q)?;
    let from = match found {
        Some(v) if v > VERSION => {
            return Err(FleetError::Newer {
                url: fleet.url.clone(),
                found: v,
                known: VERSION,
            })
        }
        Some(v) => v,
        None => {
            // A database where our tables already stand without our version row is
            // another program's: refused, never written.
            let clash = tx
                .query_opt(
                    "SELECT table_name::text FROM information_schema.tables
                     WHERE table_schema = current_schema()
                       AND table_name IN ('machines', 'sessions', 'transitions', 'markers', 'usage')
                     LIMIT 1",
                    &[],
                )
                .map_err(q)?;
            if let Some(row) = clash {
                return Err(FleetError::Foreign {
                    url: fleet.url.clone(),
                    what: format!(
                        "a table named {} is there without transcope's schema version",
                        row.get::<_, String>(0)
                    ),
                });
            }
            tx.batch_execute("CREATE TABLE transcope_schema (version INTEGER NOT NULL)")
                .map_err(q)?;
            tx.execute("INSERT INTO transcope_schema (version) VALUES (0)", &[])
                .map_err(q)?;
            0
        }
    };
    for m in &MIGRATIONS[from as usize..] {
        tx.batch_execute(m).map_err(q)?;
    }
    tx.execute("UPDATE transcope_schema SET version = $1", &[&VERSION])
        .map_err(q)?;
    tx.commit().map_err(q)?;
    Ok(VERSION)
}

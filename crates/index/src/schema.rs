//! The index's schema, one migration per version (`PRAGMA user_version`).
//!
//! * `sessions`: one row per scope-log key: its parent (a sub-agent's root session),
//!   agent, transcript, first and last recorded times (text as recorded, and
//!   microseconds since the epoch to compare), and the size of its scope log when it
//!   was last mirrored (`NULL`: read it again at the next sync).
//! * `transitions`: the scope logs' rows, mirrored (the logs stay the source of
//!   truth), keyed by session and `transition_id`, with `seq` the row's place in its
//!   log.
//! * `markers`: the ledger, one row per idempotency key, in the order found (rowid),
//!   with the request body to deliver and the delivery state.
//! * `usage`: one row per model request, appended (its key, the first 16 bytes of its
//!   SHA-256, in a compact unique index rather than as the table's key, so a batch's
//!   inserts touch the index's pages and the table's last ones, not the whole table: every copy of a request shares
//!   it, and the earliest copy is kept, a root session's on a tie), with its time,
//!   model, tokens and the scope in force when it was spent.

/// The migrations, in order: migration `i` takes version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[V1];

const V1: &str = "
CREATE TABLE sessions (
    session TEXT PRIMARY KEY,
    parent TEXT,
    agent TEXT,
    transcript TEXT,
    first_at TEXT,
    first_us INTEGER,
    last_at TEXT,
    last_us INTEGER,
    log_size INTEGER
) WITHOUT ROWID;
CREATE INDEX sessions_parent ON sessions (parent);
CREATE TABLE transitions (
    session TEXT NOT NULL,
    transition_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    at TEXT NOT NULL,
    at_us INTEGER,
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
    PRIMARY KEY (session, transition_id)
) WITHOUT ROWID;
CREATE INDEX transitions_project ON transitions (project_id);
CREATE TABLE markers (
    idempotency_key TEXT NOT NULL UNIQUE,
    session TEXT,
    type TEXT NOT NULL,
    content TEXT NOT NULL,
    attrs TEXT NOT NULL,
    at TEXT,
    at_us INTEGER,
    attribution TEXT,
    project_id TEXT,
    worktree TEXT,
    branch TEXT,
    task TEXT,
    body TEXT NOT NULL,
    origin TEXT NOT NULL,
    state TEXT NOT NULL,
    found_us INTEGER NOT NULL,
    changed_us INTEGER,
    detail TEXT
);
CREATE INDEX markers_session ON markers (session, state);
CREATE INDEX markers_state ON markers (state);
CREATE TABLE usage (
    id INTEGER PRIMARY KEY,
    message_key BLOB NOT NULL UNIQUE,
    session TEXT NOT NULL,
    root_session TEXT NOT NULL,
    is_root INTEGER NOT NULL,
    at TEXT,
    at_us INTEGER,
    model TEXT,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_creation_input_tokens INTEGER NOT NULL DEFAULT 0,
    cache_creation_1h_input_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_input_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_output_tokens INTEGER NOT NULL DEFAULT 0,
    project_id TEXT NOT NULL DEFAULT '',
    worktree TEXT NOT NULL DEFAULT '',
    branch TEXT NOT NULL DEFAULT '',
    task TEXT NOT NULL DEFAULT '',
    lane TEXT NOT NULL DEFAULT ''
);
";

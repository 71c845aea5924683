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
//!   inserts touch the index's pages and the table's last ones, not the whole
//!   table: every copy of a request shares it, and the earliest copy is kept, a root
//!   session's on a tie, since version 5 then the one read first), with its time,
//!   model, tokens and the scope in force when it was spent. Since version 2 the
//!   key is the table's key (`WITHOUT ROWID`: one B-tree, which a backfill fills in
//!   key order, many files' requests at a time), and the scope and model are
//!   numbers (rows of `usage_scopes` and `usage_models`), so a request's row is about
//!   45 bytes and a query reads no text per request.
//! * `seen_files` (version 3): each transcript a query's sync left read to its end,
//!   with its size, modification time and inode then; a sync skips a file that still
//!   has all three (see `Index::seen`).
//! * `usage_meta`, `usage_parts_of`, `usage_parts` (version 4): the sums a usage
//!   query made by scope, model and day for a price list, kept until the next
//!   request is written (`generation`).
//! * `usage.place` and `usage_meta.places` (version 5): where a request's kept copy
//!   was read — its run's first place plus its file's place in that run's stream;
//!   a run's places follow every earlier run's (`places` is one past the largest
//!   given) — which decides between copies tied by time and by being a root
//!   session's. Rows of version 4 have 0: read before any run since.
//! * `markers.lease_owner`, `markers.lease_until` (version 6): the delivery run that
//!   took a pending row to send it, and until when (microseconds since the epoch) no
//!   other run may take it; `NULL` when no run holds it. Rows of version 5 are held
//!   by none.
//! * `sessions.log_rows`, and `transitions` kept in file order (version 7): a log is
//!   mirrored up to the end of its last whole line, `log_size` bytes holding
//!   `log_rows` readable rows, so a sync reads only what was appended since (`NULL`,
//!   every row of version 6, reads the whole log once more). The table's key is
//!   `(session, seq)`, so a log's rows are stored, appended and read back in its own
//!   order, `transition_id` unique beside it; an index by `(session, at_us, seq)`
//!   reads a session's rows in time order. Nothing is sorted whole, and a long
//!   session's rows are never scattered across the table.
//! * `changed` on `sessions`, `markers` and `usage`, `usage_meta.changes` and
//!   `usage_meta.index_id` (version 8): every writing transaction takes the next
//!   number of `changes` and stamps the rows it inserts or changes with it, so a
//!   fleet push sends only what changed since the number it last sent up to; the
//!   index's random id tells a push that the index was made again (a rebuild), whose
//!   numbers start over. Rows of version 7 have 0: sent by a machine's first push.
//! * `facts` (version 9): what a listed stage handed on to be kept
//!   ([`transcope_core::Fact`]), once per `(session, stage, key)`, with the scope in
//!   force at its time, read back by `transcope facts`.
//! * `export_marks`, `export_requests`, `export_sent`, `export_logs` (version 11): what each outside sink
//!   (`transcope export otlp`'s endpoint) acknowledged, so each row reaches it once
//!   (`exports` module docs).

/// The migrations, in order: migration `i` takes version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11];

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

/// Version 2: a request's scope and model by number. The rows of version 1 move over
/// as they are (their recorded time text, which nothing read, is dropped).
const V2: &str = "
CREATE TABLE usage_scopes (
    id INTEGER PRIMARY KEY,
    session TEXT NOT NULL,
    root_session TEXT NOT NULL,
    project_id TEXT NOT NULL DEFAULT '',
    worktree TEXT NOT NULL DEFAULT '',
    branch TEXT NOT NULL DEFAULT '',
    task TEXT NOT NULL DEFAULT '',
    lane TEXT NOT NULL DEFAULT '',
    UNIQUE (session, root_session, project_id, worktree, branch, task, lane)
);
CREATE TABLE usage_models (
    id INTEGER PRIMARY KEY,
    model TEXT NOT NULL UNIQUE
);
CREATE TABLE usage_v2 (
    message_key BLOB PRIMARY KEY,
    scope INTEGER NOT NULL REFERENCES usage_scopes (id),
    is_root INTEGER NOT NULL,
    at_us INTEGER,
    model INTEGER REFERENCES usage_models (id),
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_creation_input_tokens INTEGER NOT NULL DEFAULT 0,
    cache_creation_1h_input_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_input_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_output_tokens INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
INSERT INTO usage_scopes (session, root_session, project_id, worktree, branch, task, lane)
    SELECT DISTINCT session, root_session, project_id, worktree, branch, task, lane FROM usage;
INSERT INTO usage_models (model) SELECT DISTINCT model FROM usage WHERE model IS NOT NULL;
INSERT INTO usage_v2 (message_key, scope, is_root, at_us, model, input_tokens, output_tokens,
    cache_creation_input_tokens, cache_creation_1h_input_tokens, cache_read_input_tokens,
    reasoning_output_tokens)
SELECT u.message_key, s.id, u.is_root, u.at_us, m.id, u.input_tokens, u.output_tokens,
    u.cache_creation_input_tokens, u.cache_creation_1h_input_tokens, u.cache_read_input_tokens,
    u.reasoning_output_tokens
FROM usage u
JOIN usage_scopes s ON s.session = u.session AND s.root_session = u.root_session
    AND s.project_id = u.project_id AND s.worktree = u.worktree AND s.branch = u.branch
    AND s.task = u.task AND s.lane = u.lane
LEFT JOIN usage_models m ON m.model = u.model;
DROP TABLE usage;
ALTER TABLE usage_v2 RENAME TO usage;
";

/// Version 3: the transcripts a query's sync found read to their end, with what
/// told them unchanged (size, modification time, inode): the next sync passes over
/// them without opening them.
const V3: &str = "
CREATE TABLE seen_files (
    path BLOB PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ino INTEGER NOT NULL
) WITHOUT ROWID;
";

/// Version 4: the usage sums a query made, kept until the next request is written.
/// `usage_meta.generation` counts the transactions that wrote requests;
/// `usage_parts` holds, for each price list (by its fingerprint), the requests summed
/// by scope, model and UTC day with their cost, as of `usage_parts_of.generation`.
const V4: &str = "
CREATE TABLE usage_meta (
    k TEXT PRIMARY KEY,
    v INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO usage_meta (k, v) VALUES ('generation', 0);
CREATE TABLE usage_parts_of (
    pricing TEXT PRIMARY KEY,
    generation INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE usage_parts (
    pricing TEXT NOT NULL,
    scope INTEGER NOT NULL,
    model INTEGER,
    day INTEGER,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cache_creation_input_tokens INTEGER NOT NULL,
    cache_creation_1h_input_tokens INTEGER NOT NULL,
    cache_read_input_tokens INTEGER NOT NULL,
    reasoning_output_tokens INTEGER NOT NULL,
    messages INTEGER NOT NULL,
    cost_usd REAL,
    unpriced INTEGER NOT NULL
);
CREATE INDEX usage_parts_pricing ON usage_parts (pricing);
";

/// Version 5: where each request's kept copy was read, to break a tie of time and
/// root-ness the same way whichever worker read which file first.
const V5: &str = "
ALTER TABLE usage ADD COLUMN place INTEGER NOT NULL DEFAULT 0;
INSERT INTO usage_meta (k, v) VALUES ('places', 1);
";

/// Version 6: a lease on each pending marker a delivery takes, so concurrent runs
/// (`deliver`, Stops) send each marker once; a killed run's lease runs out.
const V6: &str = "
ALTER TABLE markers ADD COLUMN lease_owner TEXT;
ALTER TABLE markers ADD COLUMN lease_until INTEGER;
";

/// Version 7: where each log was mirrored to (its rows up to `log_size`), so a sync
/// reads only what a log gained; the transitions in each log's own order (the key
/// `(session, seq)`), and by time, so a long session is appended and read in order.
/// The rows of version 6 are kept (a log may be gone), each log mirrored again once.
const V7: &str = "
ALTER TABLE sessions ADD COLUMN log_rows INTEGER;
UPDATE sessions SET log_size = NULL;
CREATE TABLE transitions_by_place (
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
    PRIMARY KEY (session, seq)
) WITHOUT ROWID;
INSERT OR REPLACE INTO transitions_by_place SELECT * FROM transitions ORDER BY session, seq;
DROP TABLE transitions;
ALTER TABLE transitions_by_place RENAME TO transitions;
CREATE UNIQUE INDEX transitions_id ON transitions (session, transition_id);
CREATE INDEX transitions_project ON transitions (project_id);
CREATE INDEX transitions_time ON transitions (session, at_us, seq);
";

/// Version 8: what changed since a number, for a fleet push (module docs).
const V8: &str = "
ALTER TABLE sessions ADD COLUMN changed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE markers ADD COLUMN changed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage ADD COLUMN changed INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sessions_changed ON sessions (changed);
CREATE INDEX markers_changed ON markers (changed);
CREATE INDEX usage_changed ON usage (changed);
INSERT INTO usage_meta (k, v) VALUES ('changes', 0);
INSERT INTO usage_meta (k, v) VALUES ('index_id', abs(random()));
";

/// Version 9: the facts listed stages hand on (module docs).
const V9: &str = "
CREATE TABLE facts (
    session TEXT NOT NULL,
    stage TEXT NOT NULL,
    key TEXT NOT NULL,
    at_us INTEGER,
    value TEXT NOT NULL,
    project_id TEXT NOT NULL DEFAULT '',
    worktree TEXT NOT NULL DEFAULT '',
    branch TEXT NOT NULL DEFAULT '',
    task TEXT NOT NULL DEFAULT '',
    lane TEXT NOT NULL DEFAULT '',
    changed INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session, stage, key)
) WITHOUT ROWID;
CREATE INDEX facts_stage ON facts (stage, at_us);
";

/// Version 10: a session's pending markers counted (every Stop does) and claimed
/// from the index alone: `origin` joins `session` and `state` there, so neither reads
/// a marker's row (whose `body` usually spills to overflow pages).
const V10: &str = "
DROP INDEX markers_session;
CREATE INDEX markers_session ON markers (session, state, origin);
";

/// Version 11: what each export sink acknowledged (the `exports` module).
const V11: &str = "
CREATE TABLE export_marks (
    sink TEXT PRIMARY KEY,
    index_id INTEGER NOT NULL,
    upto INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE export_requests (
    sink TEXT NOT NULL,
    key BLOB NOT NULL,
    c0 INTEGER NOT NULL,
    c1 INTEGER NOT NULL,
    c2 INTEGER NOT NULL,
    c3 INTEGER NOT NULL,
    c4 INTEGER NOT NULL,
    c5 INTEGER NOT NULL,
    PRIMARY KEY (sink, key)
) WITHOUT ROWID;
CREATE TABLE export_sent (
    sink TEXT NOT NULL,
    kind INTEGER NOT NULL,
    key BLOB NOT NULL,
    PRIMARY KEY (sink, kind, key)
) WITHOUT ROWID;
CREATE TABLE export_logs (
    sink TEXT NOT NULL,
    session TEXT NOT NULL,
    next_seq INTEGER NOT NULL,
    PRIMARY KEY (sink, session)
) WITHOUT ROWID;
";

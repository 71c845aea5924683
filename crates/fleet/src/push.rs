//! `transcope fleet push`: what changed in this machine's index since its last push,
//! sent in one transaction (module docs of the crate).

use std::io::Write;

use transcope_index::{Index, Mark};

use crate::{Fleet, FleetError, Machine};

/// What one push sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pushed {
    /// Sessions sent (new, or their times or names changed).
    pub sessions: u64,
    /// Scope-log rows sent (those past what the fleet held of each session).
    pub transitions: u64,
    /// Ledger rows sent (new, or their delivery state changed).
    pub markers: u64,
    /// Model requests sent (new, or their kept copy or counts changed).
    pub requests: u64,
    /// Whether the whole index was read (the machine's first push, or its index was
    /// made again since), not only what changed.
    pub whole: bool,
    /// Attempts made (a deadlock with a concurrent push is tried again).
    pub attempts: u32,
}

impl Pushed {
    /// The `--json` object.
    pub fn to_json(&self, machine: &Machine, url: &str) -> serde_json::Value {
        serde_json::json!({
            "machine": machine.name,
            "machine_id": machine.id,
            "fleet": url,
            "sessions": self.sessions,
            "transitions": self.transitions,
            "markers": self.markers,
            "requests": self.requests,
            "whole": self.whole,
        })
    }
}

/// How many times a push meets a deadlock or a serialization failure before it gives
/// up (each attempt is one whole transaction: nothing of a failed one stays).
const ATTEMPTS: u32 = 8;

/// Send what changed in `index` since `machine`'s last push to `fleet`.
pub fn push(index: &Index, fleet: &Fleet, machine: &Machine) -> Result<Pushed, FleetError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match push_once(index, fleet, machine) {
            Err(e) if e.is_transient() && attempt < ATTEMPTS => {
                std::thread::sleep(std::time::Duration::from_millis(20 * u64::from(attempt)));
            }
            Ok(mut p) => {
                p.attempts = attempt;
                return Ok(p);
            }
            Err(e) => return Err(e),
        }
    }
}

/// The temporary tables a push copies into (dropped at commit).
const STAGING: &str = "
CREATE TEMP TABLE s_in (
    session TEXT, parent TEXT, agent TEXT, transcript TEXT,
    first_at TEXT, first_us BIGINT, last_at TEXT, last_us BIGINT
) ON COMMIT DROP;
CREATE TEMP TABLE t_in (
    session TEXT, seq BIGINT, transition_id TEXT, at TEXT, at_us BIGINT,
    project_id TEXT, project TEXT, repo TEXT, worktree TEXT, cwd TEXT, remote TEXT,
    branch TEXT, swarm TEXT, task TEXT, task_revision TEXT, lane TEXT, line TEXT
) ON COMMIT DROP;
CREATE TEMP TABLE m_in (
    n BIGINT, idempotency_key TEXT, session TEXT, type TEXT, content TEXT, attrs TEXT,
    at TEXT, attribution TEXT, project_id TEXT, worktree TEXT, branch TEXT, task TEXT,
    body TEXT, origin TEXT, state TEXT, detail TEXT, at_us BIGINT, found_us BIGINT,
    changed_us BIGINT
) ON COMMIT DROP;
CREATE TEMP TABLE u_in (
    message_key BYTEA, session TEXT, root_session TEXT, project_id TEXT, worktree TEXT,
    branch TEXT, task TEXT, lane TEXT, is_root BOOLEAN, at_us BIGINT, model TEXT,
    input_tokens BIGINT, output_tokens BIGINT, cache_creation_input_tokens BIGINT,
    cache_creation_1h_input_tokens BIGINT, cache_read_input_tokens BIGINT,
    reasoning_output_tokens BIGINT, place BIGINT
) ON COMMIT DROP;
";

const MERGE_SESSIONS: &str = "
INSERT INTO sessions (session, machine, parent, agent, transcript, first_at, first_us, last_at, last_us)
SELECT session, $1, parent, agent, transcript, first_at, first_us, last_at, last_us
FROM s_in ORDER BY session
ON CONFLICT (session) DO UPDATE SET
    parent = coalesce(sessions.parent, excluded.parent),
    agent = coalesce(sessions.agent, excluded.agent),
    transcript = coalesce(sessions.transcript, excluded.transcript),
    first_at = CASE WHEN excluded.first_us IS NOT NULL
                     AND (sessions.first_us IS NULL OR excluded.first_us < sessions.first_us)
                    THEN excluded.first_at ELSE sessions.first_at END,
    first_us = CASE WHEN excluded.first_us IS NOT NULL
                     AND (sessions.first_us IS NULL OR excluded.first_us < sessions.first_us)
                    THEN excluded.first_us ELSE sessions.first_us END,
    last_at = CASE WHEN excluded.last_us IS NOT NULL
                    AND (sessions.last_us IS NULL OR excluded.last_us > sessions.last_us)
                   THEN excluded.last_at ELSE sessions.last_at END,
    last_us = CASE WHEN excluded.last_us IS NOT NULL
                    AND (sessions.last_us IS NULL OR excluded.last_us > sessions.last_us)
                   THEN excluded.last_us ELSE sessions.last_us END";

const MERGE_TRANSITIONS: &str = "
INSERT INTO transitions (session, seq, machine, transition_id, at, at_us, project_id, project, repo,
    worktree, cwd, remote, branch, swarm, task, task_revision, lane, line)
SELECT session, seq, $1, transition_id, at, at_us, project_id, project, repo,
    worktree, cwd, remote, branch, swarm, task, task_revision, lane, line
FROM t_in ORDER BY session, seq
ON CONFLICT (session, seq) DO NOTHING";

/// A state's rank: a row's state only moves forward (pending, then the outbox, then
/// delivered or rejected), whichever machine says so first.
const RANK: &str = "CASE {} WHEN 'pending' THEN 0 WHEN 'outbox' THEN 1 ELSE 2 END";

fn merge_markers() -> String {
    format!(
        "INSERT INTO markers (idempotency_key, machine, session, type, content, attrs, at, at_us,
            attribution, project_id, worktree, branch, task, body, origin, state, detail, found_us,
            changed_us)
        SELECT idempotency_key, $1, session, type, content, attrs, at, at_us, attribution,
            project_id, worktree, branch, task, body, origin, state, detail, found_us, changed_us
        FROM m_in ORDER BY n
        ON CONFLICT (idempotency_key) DO UPDATE SET
            state = excluded.state, detail = excluded.detail, changed_us = excluded.changed_us
        WHERE {} < {}",
        RANK.replace("{}", "markers.state"),
        RANK.replace("{}", "excluded.state")
    )
}

/// The copy pushed is the earlier one: earlier in time, a root session's on a tie,
/// then the one read first (`place`: the local index's rule; the shards of one
/// archive number every file of its walk alike, so they keep the copy one run
/// keeps), then the smaller session key (two machines' places that tie). This and
/// [`merge_usage`] are the usage merge rule, whose one home is
/// `transcope_core::entry::merge_copy`, in PostgreSQL across machines (the session
/// tie-break is the fleet's own: one machine's copies never tie by place and session).
const EARLIER: &str =
    "((excluded.at_us IS NOT NULL AND (usage.at_us IS NULL OR excluded.at_us < usage.at_us))
    OR (excluded.at_us IS NOT DISTINCT FROM usage.at_us AND (excluded.is_root > usage.is_root
        OR (excluded.is_root = usage.is_root AND (excluded.place < usage.place
            OR (excluded.place = usage.place AND excluded.session < usage.session))))))";

fn merge_usage() -> String {
    let kept = |c: &str| format!("{c} = CASE WHEN {EARLIER} THEN excluded.{c} ELSE usage.{c} END");
    let most = |c: &str| format!("{c} = GREATEST(usage.{c}, excluded.{c})");
    let mut sets: Vec<String> = [
        "machine",
        "place",
        "session",
        "root_session",
        "is_root",
        "project_id",
        "worktree",
        "branch",
        "task",
        "lane",
    ]
    .iter()
    .map(|c| kept(c))
    .collect();
    sets.push(format!(
        "model = coalesce(CASE WHEN {EARLIER} THEN excluded.model ELSE usage.model END, usage.model, excluded.model)"
    ));
    sets.extend(
        [
            "input_tokens",
            "output_tokens",
            "cache_creation_input_tokens",
            "cache_creation_1h_input_tokens",
            "cache_read_input_tokens",
            "reasoning_output_tokens",
        ]
        .iter()
        .map(|c| most(c)),
    );
    // Last: the time decides the others, so it changes after them.
    sets.push(kept("at_us"));
    format!(
        "INSERT INTO usage (message_key, machine, session, root_session, is_root, at_us, model,
            input_tokens, output_tokens, cache_creation_input_tokens, cache_creation_1h_input_tokens,
            cache_read_input_tokens, reasoning_output_tokens, project_id, worktree, branch, task, lane,
            place)
        SELECT message_key, $1, session, root_session, is_root, at_us, model,
            input_tokens, output_tokens, cache_creation_input_tokens, cache_creation_1h_input_tokens,
            cache_read_input_tokens, reasoning_output_tokens, project_id, worktree, branch, task, lane,
            place
        FROM u_in ORDER BY message_key
        ON CONFLICT (message_key) DO UPDATE SET {}",
        sets.join(",\n            ")
    )
}

/// The advisory lock a push holds while it merges requests (any constant of ours).
const PARTS_LOCK: i64 = 0x7472_616e_7370_7274; // "transprt"

/// The fleet's tier thresholds (`fleet_meta.thresholds`), set by the first push to
/// those of its built-in price list.
fn thresholds(tx: &mut postgres::Transaction<'_>) -> Result<Vec<u64>, postgres::Error> {
    let builtin = transcope_pricing::Prices::builtin().thresholds();
    let text: Vec<String> = builtin.iter().map(u64::to_string).collect();
    tx.execute(
        "INSERT INTO fleet_meta (k, v) VALUES ('thresholds', $1) ON CONFLICT (k) DO NOTHING",
        &[&text.join(",")],
    )?;
    let v: String = tx
        .query_one("SELECT v FROM fleet_meta WHERE k = 'thresholds'", &[])?
        .get(0);
    Ok(crate::read::parse_thresholds(&v))
}

/// A part's columns (as `usage_parts` names them).
const PART_COLUMNS: &str =
    "machine, session, root_session, project_id, worktree, branch, task, model, day, tier";

/// [`PART_COLUMNS`] by place, for `GROUP BY` and `ORDER BY`.
const GROUPED: &str = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10";

/// The part of a request `u` (its machine `machine`) under `thresholds`, as
/// [`PART_COLUMNS`].
fn part_key(machine: &str, thresholds: &[u64]) -> String {
    format!(
        "{machine} AS machine, u.session AS session, u.root_session AS root_session,
         u.project_id AS project_id, u.worktree AS worktree, u.branch AS branch, u.task AS task,
         coalesce(u.model, '') AS model,
         coalesce({}, {}) AS day, {} AS tier",
        crate::read::day_of("u.at_us"),
        i64::MIN,
        crate::read::tier_expr("u.", thresholds)
    )
}

/// The sums of a group of requests, and with the sign turned.
const SUMMED: &str = "sum(u.input_tokens) AS input_tokens, sum(u.output_tokens) AS output_tokens,
    sum(u.cache_creation_input_tokens) AS cache_creation_input_tokens,
    sum(u.cache_creation_1h_input_tokens) AS cache_creation_1h_input_tokens,
    sum(u.cache_read_input_tokens) AS cache_read_input_tokens,
    sum(u.reasoning_output_tokens) AS reasoning_output_tokens, count(*) AS requests";
const NEGATED: &str =
    "-sum(u.input_tokens) AS input_tokens, -sum(u.output_tokens) AS output_tokens,
    -sum(u.cache_creation_input_tokens) AS cache_creation_input_tokens,
    -sum(u.cache_creation_1h_input_tokens) AS cache_creation_1h_input_tokens,
    -sum(u.cache_read_input_tokens) AS cache_read_input_tokens,
    -sum(u.reasoning_output_tokens) AS reasoning_output_tokens, -count(*) AS requests";
const ADDED: &str = "input_tokens = usage_parts.input_tokens + excluded.input_tokens,
    output_tokens = usage_parts.output_tokens + excluded.output_tokens,
    cache_creation_input_tokens = usage_parts.cache_creation_input_tokens + excluded.cache_creation_input_tokens,
    cache_creation_1h_input_tokens = usage_parts.cache_creation_1h_input_tokens + excluded.cache_creation_1h_input_tokens,
    cache_read_input_tokens = usage_parts.cache_read_input_tokens + excluded.cache_read_input_tokens,
    reasoning_output_tokens = usage_parts.reasoning_output_tokens + excluded.reasoning_output_tokens,
    requests = usage_parts.requests + excluded.requests";

fn push_once(index: &Index, fleet: &Fleet, machine: &Machine) -> Result<Pushed, FleetError> {
    let q = |e| fleet.query_error(e);
    let io = |source| FleetError::Copy {
        url: fleet.url.clone(),
        source,
    };
    let mut client = fleet.client.borrow_mut();
    let mut tx = client.transaction().map_err(q)?;
    tx.execute(
        "INSERT INTO machines (machine_id, name) VALUES ($1, $2)
         ON CONFLICT (machine_id) DO UPDATE SET name = excluded.name",
        &[&machine.id, &machine.name],
    )
    .map_err(q)?;
    // One push of a machine at a time: the next waits here, then reads the mark
    // this one leaves.
    let row = tx
        .query_one(
            "SELECT index_id, upto FROM machines WHERE machine_id = $1 FOR UPDATE",
            &[&machine.id],
        )
        .map_err(q)?;
    let last = match (row.get::<_, Option<i64>>(0), row.get::<_, Option<i64>>(1)) {
        (Some(index_id), Some(upto)) => Some(Mark { index_id, upto }),
        _ => None,
    };
    let changes = index.changes(last)?;
    let mut out = Pushed {
        whole: changes.is_whole(),
        ..Pushed::default()
    };
    tx.batch_execute(STAGING).map_err(q)?;

    // Sessions.
    let mut sessions: Vec<String> = Vec::new();
    {
        let mut w = Copier::new(tx.copy_in("COPY s_in FROM STDIN").map_err(q)?);
        changes.sessions(|s| {
            let r = w.row();
            r.text(Some(&s.session))
                .text(s.parent.as_deref())
                .text(s.agent.as_deref())
                .text(s.transcript.as_deref())
                .text(s.first.0.as_deref())
                .int(s.first.1)
                .text(s.last.0.as_deref())
                .int(s.last.1);
            w.end_row();
            sessions.push(s.session);
        })?;
        w.finish().map_err(io)?;
    }
    out.sessions = sessions.len() as u64;

    // Each changed session's rows past what the fleet holds of it.
    let held: std::collections::HashMap<String, i64> = tx
        .query(
            "SELECT session, max(seq) FROM transitions WHERE session = ANY($1) GROUP BY session",
            &[&sessions],
        )
        .map_err(q)?
        .into_iter()
        .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1)))
        .collect();
    {
        let mut w = Copier::new(tx.copy_in("COPY t_in FROM STDIN").map_err(q)?);
        for s in &sessions {
            let from = held.get(s).map_or(i64::MIN, |m| m + 1);
            changes.transitions(s, from, |t| {
                let r = w.row();
                r.text(Some(&t.session))
                    .int(Some(t.seq))
                    .text(Some(&t.transition_id))
                    .text(Some(&t.at))
                    .int(t.at_us);
                for f in &t.fields {
                    r.text(Some(f));
                }
                r.text(Some(&t.line));
                w.end_row();
                out.transitions += 1;
            })?;
            w.flush_some().map_err(io)?;
        }
        w.finish().map_err(io)?;
    }

    // Ledger rows.
    {
        let mut w = Copier::new(tx.copy_in("COPY m_in FROM STDIN").map_err(q)?);
        let mut n = 0i64;
        let mut failed = None;
        changes.markers(|m| {
            n += 1;
            let r = w.row();
            r.int(Some(n));
            for t in &m.text {
                r.text(t.as_deref());
            }
            for t in m.times {
                r.int(t);
            }
            w.end_row();
            if failed.is_none() {
                failed = w.flush_some().err();
            }
        })?;
        if let Some(e) = failed {
            return Err(io(e));
        }
        out.markers = n as u64;
        w.finish().map_err(io)?;
    }

    // Requests.
    {
        let mut w = Copier::new(tx.copy_in("COPY u_in FROM STDIN").map_err(q)?);
        let mut n = 0u64;
        let mut failed = None;
        changes.requests(|u| {
            n += 1;
            let r = w.row();
            r.bytes(&u.key);
            for f in &u.scope {
                r.text(Some(f));
            }
            r.boolean(u.is_root).int(u.at_us).text(u.model.as_deref());
            for c in u.counts {
                r.int(Some(c));
            }
            r.int(Some(u.place));
            w.end_row();
            if failed.is_none() {
                failed = w.flush_some().err();
            }
        })?;
        if let Some(e) = failed {
            return Err(io(e));
        }
        out.requests = n;
        w.finish().map_err(io)?;
    }

    // Rows name the machine by its id (its name may change; a query shows the
    // name the id has now).
    let id: &(dyn postgres::types::ToSql + Sync) = &machine.id;
    tx.execute(MERGE_SESSIONS, &[id]).map_err(q)?;
    tx.execute(MERGE_TRANSITIONS, &[id]).map_err(q)?;
    tx.execute(merge_markers().as_str(), &[id]).map_err(q)?;
    // The requests and their sums by part change together, one push at a time:
    // a part's sums are the old rows' taken out and the merged rows' put in, which
    // a concurrent merge of the same requests would make wrong.
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&PARTS_LOCK])
        .map_err(q)?;
    // Sums of a whole index group in memory; compiling them is not worth its time.
    tx.batch_execute("SET LOCAL work_mem = '64MB'; SET LOCAL jit = off")
        .map_err(q)?;
    let thresholds = thresholds(&mut tx).map_err(q)?;
    // The requests the fleet held before the merge: their sums come out of their
    // parts, their merged rows' go in after it; a new request's row is the one sent.
    tx.batch_execute(&format!(
        "CREATE TEMP TABLE old_rows ON COMMIT DROP AS
             SELECT u.* FROM u_in JOIN usage u USING (message_key);
         CREATE TEMP TABLE d_parts (LIKE usage_parts) ON COMMIT DROP;
         INSERT INTO d_parts SELECT {}, {NEGATED} FROM old_rows u GROUP BY {GROUPED};",
        part_key("u.machine", &thresholds)
    ))
    .map_err(q)?;
    tx.execute(merge_usage().as_str(), &[id]).map_err(q)?;
    tx.execute(
        &format!(
            "INSERT INTO d_parts SELECT {}, {SUMMED} FROM u_in u
             WHERE NOT EXISTS (SELECT FROM old_rows o WHERE o.message_key = u.message_key)
             GROUP BY {GROUPED}",
            part_key("$1::text", &thresholds)
        ),
        &[id],
    )
    .map_err(q)?;
    let merged = format!(
        "INSERT INTO d_parts
         SELECT {}, {SUMMED} FROM old_rows o JOIN usage u USING (message_key)
         GROUP BY {GROUPED};",
        part_key("u.machine", &thresholds)
    );
    tx.batch_execute(&format!(
        "{merged}
         INSERT INTO usage_parts
         SELECT {PART_COLUMNS}, sum(input_tokens), sum(output_tokens),
                sum(cache_creation_input_tokens), sum(cache_creation_1h_input_tokens),
                sum(cache_read_input_tokens), sum(reasoning_output_tokens), sum(requests)
         FROM d_parts GROUP BY {GROUPED} ORDER BY {GROUPED}
         ON CONFLICT (machine, session, root_session, project_id, worktree, branch, task, model, day, tier)
         DO UPDATE SET {ADDED}"
    ))
    .map_err(q)?;
    let mark = changes.mark();
    drop(changes);
    tx.execute(
        "UPDATE machines SET index_id = $2, upto = $3, last_push = now(), pushes = pushes + 1
         WHERE machine_id = $1",
        &[&machine.id, &mark.index_id, &mark.upto],
    )
    .map_err(q)?;
    tx.commit().map_err(q)?;
    Ok(out)
}

/// Rows in `COPY`'s text format, written to the server as they fill a buffer.
struct Copier<'a> {
    writer: postgres::CopyInWriter<'a>,
    buf: Vec<u8>,
    first: bool,
}

impl<'a> Copier<'a> {
    fn new(writer: postgres::CopyInWriter<'a>) -> Self {
        Copier {
            writer,
            buf: Vec::with_capacity(1 << 16),
            first: true,
        }
    }

    fn row(&mut self) -> &mut Self {
        self.first = true;
        self
    }

    fn sep(&mut self) {
        if !self.first {
            self.buf.push(b'\t');
        }
        self.first = false;
    }

    fn text(&mut self, v: Option<&str>) -> &mut Self {
        self.sep();
        match v {
            None => self.buf.extend_from_slice(b"\\N"),
            Some(s) => {
                for &b in s.as_bytes() {
                    match b {
                        b'\\' => self.buf.extend_from_slice(b"\\\\"),
                        b'\t' => self.buf.extend_from_slice(b"\\t"),
                        b'\n' => self.buf.extend_from_slice(b"\\n"),
                        b'\r' => self.buf.extend_from_slice(b"\\r"),
                        b => self.buf.push(b),
                    }
                }
            }
        }
        self
    }

    fn int(&mut self, v: Option<i64>) -> &mut Self {
        self.sep();
        match v {
            None => self.buf.extend_from_slice(b"\\N"),
            Some(n) => {
                let _ = write!(self.buf, "{n}");
            }
        }
        self
    }

    fn boolean(&mut self, v: bool) -> &mut Self {
        self.sep();
        self.buf.push(if v { b't' } else { b'f' });
        self
    }

    fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.sep();
        // bytea's hex form, its backslash escaped for COPY.
        self.buf.extend_from_slice(b"\\\\x");
        for b in v {
            let _ = write!(self.buf, "{b:02x}");
        }
        self
    }

    fn end_row(&mut self) {
        self.buf.push(b'\n');
    }

    /// Send what is buffered once it is large.
    fn flush_some(&mut self) -> std::io::Result<()> {
        if self.buf.len() >= 1 << 16 {
            self.writer.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    fn finish(mut self) -> std::io::Result<u64> {
        self.writer.write_all(&self.buf)?;
        self.writer
            .finish()
            .map_err(|e| std::io::Error::other(e.to_string()))
    }
}

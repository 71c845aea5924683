//! What an export to an outside sink has sent (schema version 11): `transcope export
//! otlp` asks for the rows changed since its sink's [`Mark`] ([`Index::changes`]),
//! leaves out what the sink already acknowledged, and records each acknowledged batch
//! here before it sends the next one.
//!
//! * `export_marks`: per sink, the change number every row up to which was sent and
//!   acknowledged (with the index id it belongs to: a rebuilt index starts again).
//! * `export_requests`: per sink, each request acknowledged with the counts it was
//!   sent with: a request's row changes when a later line of it counts more (a
//!   streamed answer read mid-stream), and the next run sends only the difference.
//! * `export_sent`: per sink, the idempotency key of each marker acknowledged (a
//!   marker's row changes again when it is delivered; its record is sent once).
//! * `export_logs`: per sink and session, the place in the session's scope log up to
//!   which its rows were acknowledged (the logs are append-only).
//!
//! A batch acknowledged and recorded is never sent again to that sink; a batch sent
//! and not acknowledged (refused, timed out, the run killed) is sent again by the next
//! run.

use std::collections::HashMap;

use rusqlite::{params, OptionalExtension};

use crate::{Index, IndexError, Mark};

/// What an acknowledged batch held, recorded at once ([`Index::export_acknowledged`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Acknowledged {
    /// Requests' keys, each with the counts the sink has of it now.
    pub requests: Vec<(Vec<u8>, [i64; 6])>,
    /// Markers' idempotency keys.
    pub markers: Vec<String>,
    /// Per session, the place in its scope log after its last row acknowledged.
    pub logs: Vec<(String, i64)>,
}

impl Acknowledged {
    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty() && self.markers.is_empty() && self.logs.is_empty()
    }
}

const MARKER: i64 = 2;

impl Index {
    /// The change number up to which every row was sent to `sink`, if any.
    pub fn export_mark(&self, sink: &str) -> Result<Option<Mark>, IndexError> {
        self.conn()
            .query_row(
                "SELECT index_id, upto FROM export_marks WHERE sink = ?1",
                [sink],
                |r| {
                    Ok(Mark {
                        index_id: r.get(0)?,
                        upto: r.get(1)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.sqlite(e))
    }

    /// Record that every row up to `mark` reached `sink`.
    pub fn set_export_mark(&self, sink: &str, mark: Mark) -> Result<(), IndexError> {
        self.conn()
            .execute(
                "INSERT INTO export_marks (sink, index_id, upto) VALUES (?1, ?2, ?3)
                 ON CONFLICT (sink) DO UPDATE SET index_id = excluded.index_id, upto = excluded.upto",
                params![sink, mark.index_id, mark.upto],
            )
            .map(drop)
            .map_err(|e| self.sqlite(e))
    }

    /// Record one batch `sink` acknowledged, in one transaction.
    pub fn export_acknowledged(&self, sink: &str, ack: &Acknowledged) -> Result<(), IndexError> {
        if ack.is_empty() {
            return Ok(());
        }
        let sql = |e| self.sqlite(e);
        let conn = self.conn();
        conn.execute_batch("BEGIN IMMEDIATE").map_err(sql)?;
        let write = || -> rusqlite::Result<()> {
            let mut sent = conn.prepare_cached(
                "INSERT OR IGNORE INTO export_sent (sink, kind, key) VALUES (?1, ?2, ?3)",
            )?;
            let mut requests = conn.prepare_cached(
                "INSERT INTO export_requests (sink, key, c0, c1, c2, c3, c4, c5)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (sink, key) DO UPDATE SET c0 = excluded.c0, c1 = excluded.c1,
                     c2 = excluded.c2, c3 = excluded.c3, c4 = excluded.c4, c5 = excluded.c5",
            )?;
            for (k, [c0, c1, c2, c3, c4, c5]) in &ack.requests {
                requests.execute(params![sink, k, c0, c1, c2, c3, c4, c5])?;
            }
            for k in &ack.markers {
                sent.execute(params![sink, MARKER, k.as_bytes()])?;
            }
            let mut logs = conn.prepare_cached(
                "INSERT INTO export_logs (sink, session, next_seq) VALUES (?1, ?2, ?3)
                 ON CONFLICT (sink, session) DO UPDATE
                 SET next_seq = max(next_seq, excluded.next_seq)",
            )?;
            for (s, next) in &ack.logs {
                logs.execute(params![sink, s, next])?;
            }
            Ok(())
        };
        match write() {
            Ok(()) => conn.execute_batch("COMMIT").map_err(sql),
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                Err(sql(e))
            }
        }
    }

    /// The counts `sink` acknowledged of the request `key`, if it has it.
    pub fn export_sent_request(
        &self,
        sink: &str,
        key: &[u8],
    ) -> Result<Option<[i64; 6]>, IndexError> {
        self.conn()
            .prepare_cached(
                "SELECT c0, c1, c2, c3, c4, c5 FROM export_requests WHERE sink = ?1 AND key = ?2",
            )
            .and_then(|mut st| {
                st.query_row(params![sink, key], |r| {
                    let mut counts = [0i64; 6];
                    for (i, c) in counts.iter_mut().enumerate() {
                        *c = r.get(i)?;
                    }
                    Ok(counts)
                })
                .optional()
            })
            .map_err(|e| self.sqlite(e))
    }

    /// Whether `sink` acknowledged the marker `key`.
    pub fn export_sent_marker(&self, sink: &str, key: &str) -> Result<bool, IndexError> {
        self.export_sent(sink, MARKER, key.as_bytes())
    }

    fn export_sent(&self, sink: &str, kind: i64, key: &[u8]) -> Result<bool, IndexError> {
        self.conn()
            .prepare_cached("SELECT 1 FROM export_sent WHERE sink = ?1 AND kind = ?2 AND key = ?3")
            .and_then(|mut st| st.exists(params![sink, kind, key]))
            .map_err(|e| self.sqlite(e))
    }

    /// Per session, the place in its scope log `sink` has every row before.
    pub fn export_logs(&self, sink: &str) -> Result<HashMap<String, i64>, IndexError> {
        self.pairs(
            "SELECT session, next_seq FROM export_logs WHERE sink = ?1",
            [sink],
        )
    }

    /// Each session's agent, by session key.
    pub fn session_agents(&self) -> Result<HashMap<String, String>, IndexError> {
        self.pairs(
            "SELECT session, agent FROM sessions WHERE agent IS NOT NULL",
            [],
        )
    }

    /// Each project's remote (its last recorded, for a project seen with several).
    pub fn project_remotes(&self) -> Result<HashMap<String, String>, IndexError> {
        self.pairs(
            "SELECT project_id, remote FROM transitions
             WHERE project_id != '' AND remote != '' ORDER BY at_us",
            [],
        )
    }

    /// A two-column query as a map (a later row replaces an earlier one's value).
    fn pairs<V: rusqlite::types::FromSql>(
        &self,
        sql: &str,
        args: impl rusqlite::Params,
    ) -> Result<HashMap<String, V>, IndexError> {
        let err = |e| self.sqlite(e);
        let mut st = self.conn().prepare(sql).map_err(err)?;
        let rows = st
            .query_map(args, |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(err)?;
        rows.collect::<Result<_, _>>().map_err(err)
    }
}

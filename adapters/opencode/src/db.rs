//! OpenCode's database as a [`RecordSource`]: `opencode.db`, read while OpenCode runs.
//!
//! The tables read (drizzle's `session.sql.ts`; every `time_*` epoch ms):
//!
//! | table | columns read |
//! |---|---|
//! | `project` | `id`, `worktree` |
//! | `session` | `id`, `project_id`, `parent_id`, `directory`, `time_updated` |
//! | `message` | `id`, `session_id`, `time_created`, `time_updated`, `data` |
//! | `part` | `message_id`, `id`, `data` |
//!
//! * A session's records are its messages in the order of OpenCode's own index
//!   (`message_session_time_created_id_idx`: `time_created`, then `id`), each with its
//!   session's folder and its text parts ([`crate::record::envelope`]).
//! * Its change marker is the number of its messages and their latest `time_updated`,
//!   with the session row's `time_updated`: one index range, no `data` read.
//! * A reply still being written ([`crate::record::being_written`]) that is the
//!   session's last message is left for the next read, and the cursor stops before it
//!   (its tokens arrive when it ends). An unfinished reply with messages after it was
//!   abandoned (OpenCode stopped mid-reply) and is read as it is.
//! * Opened read-only with the write-ahead log honoured and a busy timeout
//!   ([`transcope_sqlite::open_foreign`]); a database that is locked past the wait,
//!   damaged or not OpenCode's is a [`RecordError`] naming the cause.

use std::collections::HashMap;
use std::path::Path;

use transcope_core::records::{Held, RecordError, RecordPos, RecordRead, RecordSink, RecordSource};
use transcope_sqlite::rusqlite::{self, params, Connection, OptionalExtension};

use crate::record::{being_written, hand};

/// An open OpenCode database.
pub struct DbSource {
    conn: Connection,
}

fn failed(e: rusqlite::Error) -> RecordError {
    RecordError::new(format!("the OpenCode database: {e}"))
}

impl DbSource {
    /// Open the database at `path` read-only and check it holds OpenCode's tables.
    pub fn open(path: &Path) -> Result<DbSource, RecordError> {
        let conn = transcope_sqlite::open_foreign(path).map_err(|e| {
            RecordError::new(format!("the OpenCode database could not be opened: {e}"))
        })?;
        let tables: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table'
                 AND name IN ('session', 'message', 'part', 'project')",
                [],
                |r| r.get(0),
            )
            .map_err(failed)?;
        if tables != 4 {
            return Err(RecordError::new(
                "not an OpenCode database: it lacks the session, message, part or project table",
            ));
        }
        Ok(DbSource { conn })
    }

    /// The message id at `ordinal` in `key`'s order, if any.
    fn id_at(&self, key: &str, ordinal: u64) -> Result<Option<String>, RecordError> {
        self.conn
            .prepare_cached(
                "SELECT id FROM message WHERE session_id = ?1
                 ORDER BY time_created, id LIMIT 1 OFFSET ?2",
            )
            .and_then(|mut st| {
                st.query_row(params![key, ordinal as i64], |r| r.get(0))
                    .optional()
            })
            .map_err(failed)
    }
}

/// A session's context: what each envelope carries, and its family root.
struct Context {
    envelope: crate::record::Context,
    root: Option<String>,
}

impl DbSource {
    fn context(&self, key: &str) -> Result<Option<Context>, RecordError> {
        let row = self
            .conn
            .prepare_cached(
                "SELECT s.directory, s.parent_id, p.worktree FROM session s
                 LEFT JOIN project p ON p.id = s.project_id WHERE s.id = ?1",
            )
            .and_then(|mut st| {
                st.query_row([key], |r| {
                    Ok((
                        r.get::<_, Option<String>>(0)?,
                        r.get::<_, Option<String>>(1)?,
                        r.get::<_, Option<String>>(2)?,
                    ))
                })
                .optional()
            })
            .map_err(failed)?;
        let Some((directory, parent, worktree)) = row else {
            return Ok(None);
        };
        let root = match &parent {
            Some(_) => Some(self.root_of(key)?),
            None => None,
        };
        Ok(Some(Context {
            envelope: crate::record::Context {
                session: key.to_owned(),
                parent,
                directory: directory.unwrap_or_default(),
                worktree: worktree.unwrap_or_default(),
            },
            root,
        }))
    }

    /// The top parent of `key` (itself for a root), following `parent_id` (a loop or
    /// a missing parent ends the walk where it is).
    fn root_of(&self, key: &str) -> Result<String, RecordError> {
        let mut at = key.to_owned();
        let mut seen = vec![at.clone()];
        loop {
            let parent: Option<String> = self
                .conn
                .prepare_cached("SELECT parent_id FROM session WHERE id = ?1")
                .and_then(|mut st| st.query_row([&at], |r| r.get(0)).optional())
                .map_err(failed)?
                .flatten();
            match parent {
                Some(p) if !seen.contains(&p) && self.exists(&p)? => {
                    seen.push(p.clone());
                    at = p;
                }
                _ => return Ok(at),
            }
        }
    }

    fn exists(&self, key: &str) -> Result<bool, RecordError> {
        self.conn
            .prepare_cached("SELECT 1 FROM session WHERE id = ?1")
            .and_then(|mut st| st.exists([key]))
            .map_err(failed)
    }
}

/// Each session's family root, from every (id, parent) pair: parents followed until a
/// session without one, one missing, or a loop.
pub fn roots(pairs: &[(String, Option<String>)]) -> Vec<Held> {
    let parent: HashMap<&str, &str> = pairs
        .iter()
        .filter_map(|(id, p)| Some((id.as_str(), p.as_deref()?)))
        .collect();
    let known: std::collections::HashSet<&str> = pairs.iter().map(|(id, _)| id.as_str()).collect();
    pairs
        .iter()
        .map(|(id, _)| {
            let mut at = id.as_str();
            let mut steps = 0;
            while let Some(p) = parent.get(at).filter(|p| known.contains(**p)) {
                at = p;
                steps += 1;
                if steps > pairs.len() {
                    // A loop: the session is its own root.
                    at = id.as_str();
                    break;
                }
            }
            Held {
                key: id.clone(),
                root: at.to_owned(),
            }
        })
        .collect()
}

impl RecordSource for DbSource {
    fn sessions(&mut self) -> Result<Vec<Held>, RecordError> {
        let mut st = self
            .conn
            .prepare("SELECT id, parent_id FROM session ORDER BY id")
            .map_err(failed)?;
        let pairs = st
            .query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(failed)?;
        Ok(roots(&pairs))
    }

    fn marker(&mut self, key: &str) -> Result<Option<String>, RecordError> {
        self.conn
            .prepare_cached(
                "SELECT s.time_updated,
                        (SELECT count(*) FROM message m WHERE m.session_id = s.id),
                        (SELECT max(m.time_updated) FROM message m WHERE m.session_id = s.id)
                 FROM session s WHERE s.id = ?1",
            )
            .and_then(|mut st| {
                st.query_row([key], |r| {
                    Ok(format!(
                        "{}:{}:{}",
                        r.get::<_, Option<i64>>(0)?.unwrap_or(0),
                        r.get::<_, i64>(1)?,
                        r.get::<_, Option<i64>>(2)?.unwrap_or(0)
                    ))
                })
                .optional()
            })
            .map_err(failed)
    }

    fn holds(&mut self, key: &str, at: &RecordPos) -> Result<bool, RecordError> {
        if at.ordinal == 0 {
            return Ok(true);
        }
        Ok(self.id_at(key, at.ordinal - 1)?.as_deref() == Some(at.anchor.as_str()))
    }

    fn read(
        &mut self,
        key: &str,
        from: &RecordPos,
        sink: &mut dyn RecordSink,
    ) -> Result<RecordRead, RecordError> {
        let mut read = RecordRead {
            end: from.clone(),
            ..RecordRead::default()
        };
        let Some(ctx) = self.context(key)? else {
            return Ok(read);
        };
        read.parent = ctx.root.clone();
        let mut messages = self
            .conn
            .prepare_cached(
                "SELECT id, data FROM message WHERE session_id = ?1
                 ORDER BY time_created, id LIMIT -1 OFFSET ?2",
            )
            .map_err(failed)?;
        let mut parts = self
            .conn
            .prepare_cached("SELECT data FROM part WHERE message_id = ?1 ORDER BY id")
            .map_err(failed)?;
        let mut rows = messages
            .query(params![key, from.ordinal as i64])
            .map_err(failed)?;
        // One message held back until the next is seen: a reply being written is left
        // only when it is the last.
        let mut ahead: Option<(String, Vec<u8>)> = None;
        let mut ordinal = from.ordinal;
        loop {
            let next = rows
                .next()
                .map_err(failed)?
                .map(|r| -> rusqlite::Result<(String, Vec<u8>)> {
                    Ok((r.get(0)?, text_bytes(r.get_ref(1)?)))
                })
                .transpose()
                .map_err(failed)?;
            let Some((id, data)) = ahead.take() else {
                match next {
                    Some(n) => {
                        ahead = Some(n);
                        continue;
                    }
                    None => break,
                }
            };
            if next.is_none() && being_written(&data) {
                read.held = true;
                break;
            }
            let mut parts_data = Vec::new();
            if memchr::memmem::find(&data, b"assistant").is_some() {
                let mut prows = parts.query([&id]).map_err(failed)?;
                while let Some(p) = prows.next().map_err(failed)? {
                    parts_data.push(text_bytes(p.get_ref(0).map_err(failed)?));
                }
            }
            let go_on = hand(
                sink,
                &mut read,
                (ordinal, id),
                &ctx.envelope,
                &data,
                parts_data,
            );
            ordinal += 1;
            if !go_on {
                break;
            }
            match next {
                Some(n) => ahead = Some(n),
                None => break,
            }
        }
        Ok(read)
    }
}

/// A column's bytes as stored (text, or a blob a writer put there instead); anything
/// else is no JSON (the adapter skips it).
fn text_bytes(v: rusqlite::types::ValueRef<'_>) -> Vec<u8> {
    match v {
        rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => t.to_vec(),
        _ => Vec::new(),
    }
}

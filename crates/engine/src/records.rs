//! Reading one session of a container of records ([`Framing::Records`]): the third
//! framing, beside lines and documents.
//!
//! The container's factory opens it as a [`RecordSource`]; the session is the
//! request's key. The cursor keeps, instead of a byte offset and a head fingerprint,
//! the ordinal of the next record, the id of the record before it (the anchor) and the
//! session's change marker:
//!
//! ```text
//! cursor (ordinal, anchor, marker) ──► marker now == marker? ── yes ──► nothing read
//!                                          │ no
//!                                          ▼
//!                          anchor still before the ordinal? ── no ──► read from 0
//!                                          │ yes                      (stages fresh)
//!                                          ▼
//!          records from the ordinal ──► adapter.decode(json) ──► stages ──► cursor at
//!          (a record still being written is left, like a torn last line)   the last one
//! ```
//!
//! Everything after the entries — tokens, the intent, `finish`, the cursor handed
//! back — is the line read's ([`Pipeline::conclude`]), so kill safety and
//! exactly-once hold the same way. A read cut short (a time limit) or one that left a
//! record being written keeps no marker: the next read looks again from its ordinal.
//!
//! [`Framing::Records`]: transcope_core::adapter::Framing::Records

use serde_json::Value;
use transcope_core::adapter::{AdapterFactory, EntrySink, Probe};
use transcope_core::records::{RecordPos, RecordSource};
use transcope_core::stage::{FileContext, Stage};
use transcope_core::times::Times;
use transcope_core::{Entry, TimeValue};

use crate::cursor::{Cursor, CURSOR_VERSION};
use crate::scan::{decode_one, Resume, ScanError, ScanReport};
use crate::{prepare, Fan, Loaded, Observation, Pipeline, Request, Store};

impl Pipeline {
    /// [`Pipeline::observe`] of `req.key`'s records in the container at `req.path`,
    /// framed as `factory` says ([`Framing::Records`](transcope_core::adapter::Framing)),
    /// from the cursor `held` resolved.
    pub(crate) fn observe_records(
        &self,
        req: &Request<'_>,
        factory: &dyn AdapterFactory,
        (store, held): (Option<Store<'_>>, Loaded),
        mut obs: Observation,
        stages: &mut [&mut (dyn Stage + '_)],
    ) -> Result<Observation, ScanError> {
        let failed = |reason: String| ScanError::Records {
            path: req.path.display().to_string(),
            reason,
        };
        let Some(key) = req.key else {
            return Err(failed(
                "a container of many sessions is read one session at a time: name one".into(),
            ));
        };
        let mut source = factory.records(req.path).map_err(|e| failed(e.reason))?;
        let Some(marker) = source.marker(key).map_err(|e| failed(e.reason))? else {
            // The session is no longer there: nothing to read, the cursor stays.
            obs.up_to_date = true;
            return Ok(obs);
        };
        let Loaded { on_disk, saved } = held;
        let mut saved = saved.filter(|c| c.records && c.adapter == factory.name());
        if let Some(c) = &saved {
            if c.marker == marker && obs.recovered != Some(true) {
                obs.up_to_date = true;
                return Ok(obs);
            }
        }
        let mut adapter = factory.build();
        adapter.open(req.path);
        if let Some(c) = &saved {
            let at = position(c);
            let holds = source.holds(key, &at).map_err(|e| failed(e.reason))?;
            // The adapter and every stage restored, or none: a read from the start.
            let ok = holds
                && adapter.restore(&c.adapter_checkpoint)
                && stages
                    .iter_mut()
                    .all(|s| s.restore(c.stages.get(s.name()).unwrap_or(&Value::Null)));
            if !ok {
                saved = None;
                adapter = factory.build();
                adapter.open(req.path);
            }
        }
        obs.resumed = saved.is_some();
        let from = saved.as_ref().map(position).unwrap_or(RecordPos::START);
        let ctx = FileContext {
            path: req.path,
            key: req.key,
            adapter: factory.name(),
            usage: factory.agent().usage,
            resumed: obs.resumed,
        };
        for s in stages.iter_mut() {
            s.begin(&ctx);
        }
        let mut report = ScanReport {
            adapter: factory.name(),
            resume: resume(from.ordinal),
            ..ScanReport::default()
        };
        let mut fan = Timed {
            fan: Fan {
                stages: &mut *stages,
                skip: 0,
                hash: None,
                skipped_hash: None,
            },
            times: Times::default(),
        };
        let mut cut = false;
        let read = source
            .read(key, &from, &mut |ordinal: u64, json: &[u8]| {
                decode_one(
                    json,
                    ordinal,
                    ordinal + 1,
                    adapter.as_mut(),
                    &mut fan,
                    &mut report,
                );
                let go_on = req.until.is_none_or(|t| std::time::Instant::now() < t);
                cut = !go_on;
                go_on
            })
            .map_err(|e| failed(e.reason));
        let times = fan.times;
        // A read that failed half-way makes nothing (as a line read that fails): the
        // stages are dropped unfinished, and the old cursor stays.
        let read = read?;
        report.bytes = read.bytes;
        report.resume = resume(read.end.ordinal);
        report.cut = cut;
        report.times = times;
        report.parent = read.parent.clone();
        report.checkpoint = adapter.checkpoint();
        obs.scan = report;
        let tokens = prepare(stages);
        let next = store.as_ref().map(|st| Cursor {
            version: CURSOR_VERSION,
            session: st.key.to_owned(),
            path: req.path.display().to_string(),
            adapter: factory.name().to_owned(),
            offset: read.end.ordinal,
            line: read.end.ordinal + 1,
            size: 0,
            mtime_ns: 0,
            head_len: 0,
            head_sha256: String::new(),
            whole: false,
            entries: 0,
            entries_sha256: String::new(),
            records: true,
            // Read to the end as it was when its marker was taken: else the next read
            // looks again (from the ordinal, so only what is left).
            marker: if cut || read.held {
                String::new()
            } else {
                marker
            },
            anchor: read.end.anchor.clone(),
            stages: stages
                .iter()
                .map(|s| (s.name().to_owned(), s.checkpoint()))
                .collect(),
            adapter_checkpoint: obs.scan.checkpoint.clone(),
            intent: None,
        });
        self.conclude(
            req,
            (store.as_ref(), on_disk.as_ref()),
            &mut obs,
            stages,
            &ctx,
            (tokens, next),
        );
        Ok(obs)
    }
}

/// Where a records cursor resumes.
fn position(c: &Cursor) -> RecordPos {
    RecordPos {
        ordinal: c.offset,
        anchor: c.anchor.clone(),
    }
}

/// The ordinal as a [`Resume`]: the offset is the ordinal, the line one past it.
fn resume(ordinal: u64) -> Resume {
    Resume {
        offset: ordinal,
        line: ordinal + 1,
    }
}

/// The stages' fan, noting the first and last entry times (a container's records name
/// their times in their own way, so they are taken from the entries, not the bytes).
struct Timed<'s, 'a, 'o> {
    fan: Fan<'s, 'a, 'o>,
    times: Times,
}

impl EntrySink for Timed<'_, '_, '_> {
    fn entry(&mut self, e: &Entry<'_>) {
        if let TimeValue::Str(t) = &e.time {
            if self.times.first.is_none() {
                self.times.first = Some(t.to_string());
            }
            self.times.last = Some(t.to_string());
        }
        self.fan.entry(e);
    }

    fn wants(&self, p: &Probe<'_>) -> bool {
        self.fan.wants(p)
    }
}

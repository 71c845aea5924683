//! # transcope-brain: the brain writer in one place
//!
//! Markers found by the marker stage come here to be attributed and delivered, and
//! nothing here depends on a pipeline:
//!
//! * [`writer`]: [`Writer::attribute`] through the writing session's own scope log
//!   (decision 164), the [`BrainConfig`] read from the environment;
//! * [`body`]: the request body, the marker's attribution, the idempotency key;
//! * the sinks below, and the outbox drain.
//!
//! A [`Sink`] takes one [`MarkerRecord`] — the request body the brain expects, its
//! idempotency key, and what the outbox must remember — and delivers it. The required
//! surface is one method; `&mut S` and `Box<S>` are sinks too.
//!
//! * [`NdjsonSink`]: one body per line to any writer (stdout, a file);
//! * [`OutboxSink`]: one file per marker in the brain-writer outbox
//!   (`<YYYYmmddTHHMMSS>-<type>-<8 hex>.json`, indent-2 JSON, written to a temporary
//!   `.<name>.<pid>.tmp` and renamed, the look-then-write serialised by an advisory
//!   lock on the folder), scope-log.md §5.7;
//! * [`HttpSink`]: `POST $BRAIN_URL/marker` with the idempotency key in the
//!   `Idempotency-Key` header, falling back to the outbox on any failure and, after
//!   the first failure, for every later record without a POST;
//! * [`drain`]: replay the outbox (the `-backlog` sibling first, each sorted by name)
//!   holding the outbox's drain lock (`.drain.lock`; a drain that finds it held
//!   leaves the files to the process holding it), deleting what was accepted,
//!   quarantining unparseable files and 400/404/422 answers as `.bad`, stopping at
//!   the first other refusal; its report names the keys accepted and refused, for
//!   the ledger.
//!
//! ```
//! use transcope_brain::{MarkerRecord, NdjsonSink, Sink, Delivery};
//! let rec = MarkerRecord {
//!     body: serde_json::json!({"type": "lesson", "content": "x", "attrs": {}}),
//!     content: "x".into(),
//!     idempotency_key: "0".repeat(32),
//!     session: Some("s1".into()),
//! };
//! let mut out = Vec::new();
//! assert_eq!(NdjsonSink::new(&mut out).deliver(&rec).unwrap(), Delivery::Printed);
//! assert_eq!(out, b"{\"type\": \"lesson\", \"content\": \"x\", \"attrs\": {}}\n");
//! ```
#![warn(missing_docs)]

pub mod body;
mod outbox;
pub mod writer;

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use transcope_core::py;

pub use outbox::{drain, outbox_dir_from_env, DrainReport, OutboxSink, Replay};
pub use writer::{
    legacy_identity, truthy_flag, BrainConfig, Writer, DEFAULT_BUDGET, DEFAULT_MAX_MARKERS,
};

/// One marker ready to deliver.
#[derive(Clone, Debug, PartialEq)]
pub struct MarkerRecord {
    /// `{"type", "content" (≤ 4096 characters), "attrs"}`.
    pub body: Value,
    /// The untruncated content (the outbox keeps it whole).
    pub content: String,
    /// The idempotency key (32 hex digits).
    pub idempotency_key: String,
    /// The writing session's scope-log key; `None` when none could be established.
    pub session: Option<String>,
}

impl MarkerRecord {
    /// The marker type.
    pub fn kind(&self) -> &str {
        self.body.get("type").and_then(Value::as_str).unwrap_or("")
    }
}

/// What happened to a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Written to a stream.
    Printed,
    /// Accepted by the brain over HTTP.
    Sent,
    /// Written to the outbox, at this path (or already there).
    Outboxed(PathBuf),
    /// Refused by the brain with this status (400, 404 or 422), by a sink asked to say
    /// so ([`HttpSink::rejecting`]): not written to the outbox, where a drain would
    /// only quarantine it.
    Rejected(u16),
}

/// Why a record could not be delivered at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SinkError {
    /// Writing failed.
    #[error("while {context}: {source}")]
    Io {
        /// What was being done.
        context: &'static str,
        /// The cause.
        source: io::Error,
    },
}

/// A destination for marker records. One method is required; [`Sink::deliver_all`]
/// has a default.
pub trait Sink {
    /// Deliver one record.
    fn deliver(&mut self, rec: &MarkerRecord) -> Result<Delivery, SinkError>;

    /// Deliver records in order, stopping at the first that fails (those before it
    /// stay delivered). A sink may do its per-call setup once for the batch.
    fn deliver_all(&mut self, recs: &[MarkerRecord]) -> Result<Vec<Delivery>, SinkError> {
        recs.iter().map(|r| self.deliver(r)).collect()
    }
}

impl<S: Sink + ?Sized> Sink for &mut S {
    fn deliver(&mut self, rec: &MarkerRecord) -> Result<Delivery, SinkError> {
        (**self).deliver(rec)
    }
    fn deliver_all(&mut self, recs: &[MarkerRecord]) -> Result<Vec<Delivery>, SinkError> {
        (**self).deliver_all(recs)
    }
}

impl<S: Sink + ?Sized> Sink for Box<S> {
    fn deliver(&mut self, rec: &MarkerRecord) -> Result<Delivery, SinkError> {
        (**self).deliver(rec)
    }
    fn deliver_all(&mut self, recs: &[MarkerRecord]) -> Result<Vec<Delivery>, SinkError> {
        (**self).deliver_all(recs)
    }
}

/// One body per line, in Python `json.dumps` form.
pub struct NdjsonSink<W: Write> {
    out: W,
}

impl<W: Write> NdjsonSink<W> {
    /// A sink writing to `out`.
    pub fn new(out: W) -> Self {
        NdjsonSink { out }
    }
}

impl<W: Write> Sink for NdjsonSink<W> {
    fn deliver(&mut self, rec: &MarkerRecord) -> Result<Delivery, SinkError> {
        let mut line = py::dumps(&rec.body);
        line.push('\n');
        self.out
            .write_all(line.as_bytes())
            .map_err(|source| SinkError::Io {
                context: "writing a marker line",
                source,
            })?;
        Ok(Delivery::Printed)
    }
}

/// The answer of one POST.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PostResult {
    /// 2xx.
    Accepted,
    /// Another status.
    Status(u16),
    /// No answer (connection refused, timeout, bad URL…).
    Failed(String),
}

/// A minimal client for the brain's `/marker` endpoint.
///
/// Each POST may take at most the client's timeout, and all the POSTs of one client
/// (and of its clones) together at most its budget ([`BrainClient::within`]): past
/// it, a POST is not attempted and fails at once. A POST counts as accepted only when
/// the answer is a 2xx **and** its body arrived whole (as many bytes as its
/// `Content-Length`, or a chunked body to its end): a connection cut mid-answer is a
/// failure, and the marker goes to the outbox.
#[derive(Clone)]
pub struct BrainClient {
    url: String,
    agent: ureq::Agent,
    timeout: Duration,
    /// When the budget runs out (`None`: no budget).
    until: Option<std::time::Instant>,
}

/// The default time one POST may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3);

/// The most of an answer's body read to check that it is whole.
const MAX_ANSWER: u64 = 1024 * 1024;

impl BrainClient {
    /// A client for `<base>/marker`.
    pub fn new(base: &str, timeout: Duration) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .into();
        BrainClient {
            url: format!("{}/marker", base.trim_end_matches('/')),
            agent,
            timeout,
            until: None,
        }
    }

    /// The same client, its POSTs all done within `budget` from now (shared by its
    /// clones): a slow brain cannot keep a hook past its deadline, however many
    /// markers or outbox files there are.
    pub fn within(mut self, budget: Duration) -> Self {
        self.until = Some(std::time::Instant::now() + budget);
        self
    }

    /// POST one body.
    pub fn post(&self, body: &Value, key: &str) -> PostResult {
        let timeout = match self.until {
            None => self.timeout,
            Some(until) => {
                let left = until.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    return PostResult::Failed(
                        "the brain's time budget for this run is spent".into(),
                    );
                }
                left.min(self.timeout)
            }
        };
        let bytes = py::dumps(body).into_bytes();
        let sent = self
            .agent
            .post(&self.url)
            .config()
            .timeout_global(Some(timeout))
            .build()
            .header("Content-Type", "application/json")
            .header("Idempotency-Key", key)
            .send(&bytes[..]);
        match sent {
            Ok(mut resp) => {
                let s = resp.status().as_u16();
                // The whole answer, or it was not an answer.
                let whole = resp
                    .body_mut()
                    .with_config()
                    .limit(MAX_ANSWER)
                    .read_to_vec();
                match whole {
                    Err(e) => PostResult::Failed(format!("answer cut short: {e}")),
                    Ok(_) if (200..300).contains(&s) => PostResult::Accepted,
                    Ok(_) => PostResult::Status(s),
                }
            }
            Err(e) => PostResult::Failed(e.to_string()),
        }
    }
}

/// POST to the brain; anything but a 2xx goes to the outbox, and so does every record
/// after the first that failed: one unanswered POST per run, not one per marker.
pub struct HttpSink {
    client: BrainClient,
    fallback: OutboxSink,
    /// The last failure, for the hook's summary.
    pub last_failure: Option<String>,
    /// Records sent straight to the outbox because an earlier POST failed.
    pub not_tried: u64,
    /// Say [`Delivery::Rejected`] for a 400, 404 or 422 instead of writing the outbox.
    reject: bool,
}

impl HttpSink {
    /// A sink posting with `client`, falling back to `fallback`.
    pub fn new(client: BrainClient, fallback: OutboxSink) -> Self {
        HttpSink {
            client,
            fallback,
            last_failure: None,
            not_tried: 0,
            reject: false,
        }
    }

    /// Answer a refusal the brain gives a record itself (400, 404, 422: the drain's
    /// quarantine statuses) with [`Delivery::Rejected`], not the outbox: a caller that
    /// keeps its own state of each record (the ledger) records it as rejected. Other
    /// failures still fall back to the outbox. `on: false` keeps the reference's
    /// behaviour (every failure to the outbox).
    pub fn rejecting(mut self, on: bool) -> Self {
        self.reject = on;
        self
    }

    /// Treat the brain as down from the start (a drain just failed to reach it): every
    /// record goes to the outbox without a POST.
    pub fn given_up(mut self, why: impl Into<String>) -> Self {
        self.last_failure = Some(why.into());
        self
    }
}

impl Sink for HttpSink {
    fn deliver(&mut self, rec: &MarkerRecord) -> Result<Delivery, SinkError> {
        if self.last_failure.is_some() {
            self.not_tried += 1;
            return self.fallback.deliver(rec);
        }
        match self.client.post(&rec.body, &rec.idempotency_key) {
            PostResult::Accepted => Ok(Delivery::Sent),
            PostResult::Status(s @ (400 | 404 | 422)) if self.reject => Ok(Delivery::Rejected(s)),
            other => {
                self.last_failure = Some(match other {
                    PostResult::Status(s) => format!("brain answered HTTP {s}"),
                    PostResult::Failed(e) => format!("brain unreachable: {e}"),
                    PostResult::Accepted => unreachable!(),
                });
                self.fallback.deliver(rec)
            }
        }
    }
}

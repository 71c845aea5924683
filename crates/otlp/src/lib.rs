//! # transcope-otlp: the index's rows to an OpenTelemetry collector
//!
//! `transcope export otlp` sends what the index knows to any OTLP/HTTP receiver (an
//! OpenTelemetry Collector, Grafana Alloy, a vendor's intake) as protobuf:
//!
//! * each model request as `gen_ai.client.token.usage` histogram points (delta
//!   temporality, one point per kind of token, at the time it was spent) and its cost
//!   as `transcope.usage.cost`, both with the scope in force then
//!   ([`encode::Context::metrics`]);
//! * each scope transition and marker as a log record at its recorded time, with its
//!   identity (`transcope.transition_id`, `transcope.idempotency_key`) so a backend can
//!   deduplicate ([`encode::Context::logs`]).
//!
//! A run is incremental and exact ([`export::export`]): it asks the index for the
//! rows changed since the sink's mark, leaves out what the sink acknowledged before,
//! sends the rest in batches — retried on 429/502/503/504 with back-off, split on 413
//! ([`send::Sender`]) — and records each acknowledged batch before sending the next,
//! so a run killed or refused midway is taken up by the next one, and nothing the
//! receiver acknowledged is sent to it twice.

pub mod encode;
pub mod export;
pub mod send;

/// The OpenTelemetry semantic conventions version the names follow.
pub const SEMCONV_VERSION: &str = "1.37.0";

pub use encode::Context;
pub use export::{export, ExportError, Options, Output, Report};
pub use send::{Endpoint, SendError, Sender};

//! One export run: the rows changed since the sink's mark, less what it already
//! acknowledged, sent in batches; each acknowledged batch recorded in the index
//! before the next is sent, the mark moved once every batch is.

use std::io::Write;

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceResponse;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceResponse;
use prost::Message;
use transcope_index::{Acknowledged, Index, IndexError, MarkerRow, RequestRow, TransitionRow};

use crate::encode::Context;
use crate::send::{SendError, Sender};

/// What to export.
#[derive(Clone, Debug)]
pub struct Options {
    /// The sink's name in the index (the endpoint's URL): each sink gets every row once.
    pub sink: String,
    /// Leave out rows recorded before this time (microseconds since the epoch); they
    /// are not sent by a later run either.
    pub since_us: Option<i64>,
    /// Requests (or log records) in one POST.
    pub batch: usize,
    /// The time log records are observed at (nanoseconds since the epoch).
    pub observed_ns: u64,
}

/// Where the batches go.
pub enum Output<'a> {
    /// To a receiver, each acknowledged batch recorded.
    Send(&'a Sender),
    /// As OTLP/JSON, one request a line (`{"url", "body"}`), nothing recorded.
    DryRun {
        /// The receiver's base URL, to name the signal's URL.
        base: String,
        /// Where the lines go.
        out: &'a mut dyn Write,
    },
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    /// Requests sent (as token-usage points and cost points).
    pub requests: u64,
    /// Token-usage data points among them.
    pub points: u64,
    /// Scope transitions sent (log records).
    pub transitions: u64,
    /// Markers sent (log records).
    pub markers: u64,
    /// POSTs acknowledged (or printed, on a dry run).
    pub batches: u64,
    /// Retries they took.
    pub retries: u64,
    /// Points and records the receiver acknowledged as rejected (not sent again).
    pub rejected: i64,
    /// Rows changed since the mark that the sink had already acknowledged as they are.
    pub already_sent: u64,
    /// Requests the sink had with smaller counts (read mid-stream): sent again with
    /// the difference only.
    pub grown: u64,
    /// Rows left out by `--since`.
    pub before_since: u64,
}

/// Why a run stopped.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The index.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// A batch was not acknowledged: it and every batch after it are sent by the next
    /// run; what was acknowledged before it is recorded.
    #[error("{0}")]
    Send(#[from] SendError),
    /// The dry run's output.
    #[error("writing the dry run: {0}")]
    Write(#[from] std::io::Error),
}

/// Export what changed in `index` since `opts.sink` last acknowledged.
pub fn export(
    index: &Index,
    cx: &Context<'_>,
    opts: &Options,
    mut output: Output<'_>,
) -> Result<Report, ExportError> {
    let mut report = Report::default();
    let sink = opts.sink.as_str();
    let before = |at: Option<i64>| matches!((opts.since_us, at), (Some(s), Some(a)) if a < s);
    // Each request to send (its counts the difference from what the sink has of it),
    // with its whole counts, recorded once acknowledged.
    let mut requests: Vec<(RequestRow, [i64; 6])> = Vec::new();
    let mut transitions: Vec<TransitionRow> = Vec::new();
    let mut markers: Vec<MarkerRow> = Vec::new();
    let mark = {
        let logs = index.export_logs(sink)?;
        let changes = index.changes(index.export_mark(sink)?)?;
        let mut err = None;
        changes.requests(|r| {
            if err.is_some() {
                return;
            }
            match index.export_sent_request(sink, &r.key) {
                Ok(Some(had)) => {
                    let whole = r.counts;
                    let more: [i64; 6] = std::array::from_fn(|i| (whole[i] - had[i]).max(0));
                    if more == [0; 6] {
                        report.already_sent += 1;
                    } else {
                        report.grown += 1;
                        requests.push((RequestRow { counts: more, ..r }, whole));
                    }
                }
                Ok(None) if before(r.at_us) => report.before_since += 1,
                Ok(None) => {
                    let whole = r.counts;
                    requests.push((r, whole));
                }
                Err(e) => err = Some(e),
            }
        })?;
        changes.markers(|m| {
            if err.is_some() {
                return;
            }
            match index.export_sent_marker(sink, m.text[0].as_deref().unwrap_or("")) {
                Ok(true) => report.already_sent += 1,
                Ok(false) if before(m.times[0].or(m.times[1])) => report.before_since += 1,
                Ok(false) => markers.push(m),
                Err(e) => err = Some(e),
            }
        })?;
        if let Some(e) = err {
            return Err(e.into());
        }
        let mut sessions = Vec::new();
        changes.sessions(|s| sessions.push(s.session))?;
        for s in &sessions {
            let from = logs.get(s).copied().unwrap_or(i64::MIN);
            changes.transitions(s, from, |t| {
                if before(t.at_us) {
                    report.before_since += 1;
                }
                // Kept either way: the session's place moves past it.
                transitions.push(t);
            })?;
        }
        changes.mark()
    };
    requests.sort_by(|(a, _), (b, _)| (a.at_us, &a.key).cmp(&(b.at_us, &b.key)));
    let batch = opts.batch.max(1);

    for chunk in requests.chunks(batch) {
        send_requests(index, cx, opts, &mut output, chunk, &mut report)?;
    }
    // Log records: transitions then markers, each batch recording its own.
    let mut logs: Vec<Log<'_>> = transitions.iter().map(Log::Transition).collect();
    logs.extend(markers.iter().map(Log::Marker));
    for chunk in logs.chunks(batch) {
        send_logs(index, cx, opts, &mut output, chunk, &mut report, &before)?;
    }
    if let Output::Send(_) = output {
        index.set_export_mark(sink, mark)?;
    }
    Ok(report)
}

#[derive(Clone, Copy)]
enum Log<'a> {
    Transition(&'a TransitionRow),
    Marker(&'a MarkerRow),
}

fn send_requests(
    index: &Index,
    cx: &Context<'_>,
    opts: &Options,
    output: &mut Output<'_>,
    rows: &[(RequestRow, [i64; 6])],
    report: &mut Report,
) -> Result<(), ExportError> {
    let message = cx.metrics(rows.iter().map(|(r, _)| r));
    let points = message
        .resource_metrics
        .iter()
        .flat_map(|r| &r.scope_metrics)
        .flat_map(|s| &s.metrics)
        .filter(|m| m.name == crate::encode::TOKEN_USAGE)
        .map(|m| match &m.data {
            Some(opentelemetry_proto::tonic::metrics::v1::metric::Data::Histogram(h)) => {
                h.data_points.len() as u64
            }
            _ => 0,
        })
        .sum::<u64>();
    match output {
        Output::DryRun { base, out } => {
            dry(out, &format!("{base}/v1/metrics"), &message)?;
        }
        Output::Send(sender) => {
            let sent = sender.send("metrics", &message, |a| {
                ExportMetricsServiceResponse::decode(a)
                    .ok()
                    .and_then(|r| r.partial_success)
                    .map_or(0, |p| p.rejected_data_points)
            });
            let ack = match sent {
                Err(SendError::TooLarge { .. }) if rows.len() > 1 => {
                    let (a, b) = rows.split_at(rows.len() / 2);
                    send_requests(index, cx, opts, output, a, report)?;
                    return send_requests(index, cx, opts, output, b, report);
                }
                other => other?,
            };
            report.retries += u64::from(ack.retries);
            report.rejected += ack.rejected;
            index.export_acknowledged(
                &opts.sink,
                &Acknowledged {
                    requests: rows
                        .iter()
                        .map(|(r, whole)| (r.key.clone(), *whole))
                        .collect(),
                    ..Default::default()
                },
            )?;
        }
    }
    report.batches += 1;
    report.requests += rows.len() as u64;
    report.points += points;
    Ok(())
}

fn send_logs(
    index: &Index,
    cx: &Context<'_>,
    opts: &Options,
    output: &mut Output<'_>,
    logs: &[Log<'_>],
    report: &mut Report,
    before: &dyn Fn(Option<i64>) -> bool,
) -> Result<(), ExportError> {
    let mut transitions = Vec::new();
    let mut markers = Vec::new();
    let mut ack = Acknowledged::default();
    for l in logs {
        match *l {
            Log::Transition(t) => {
                if !before(t.at_us) {
                    transitions.push(t.clone());
                }
                match ack.logs.last_mut() {
                    Some((s, next)) if *s == t.session => *next = t.seq + 1,
                    _ => ack.logs.push((t.session.clone(), t.seq + 1)),
                }
            }
            Log::Marker(m) => {
                markers.push(m.clone());
                ack.markers.push(m.text[0].clone().unwrap_or_default());
            }
        }
    }
    let message = cx.logs(&transitions, &markers, opts.observed_ns);
    match output {
        Output::DryRun { base, out } => {
            if !transitions.is_empty() || !markers.is_empty() {
                dry(out, &format!("{base}/v1/logs"), &message)?;
            }
        }
        Output::Send(sender) => {
            if !transitions.is_empty() || !markers.is_empty() {
                let sent = sender.send("logs", &message, |a| {
                    ExportLogsServiceResponse::decode(a)
                        .ok()
                        .and_then(|r| r.partial_success)
                        .map_or(0, |p| p.rejected_log_records)
                });
                let got = match sent {
                    Err(SendError::TooLarge { .. }) if logs.len() > 1 => {
                        let (a, b) = logs.split_at(logs.len() / 2);
                        send_logs(index, cx, opts, output, a, report, before)?;
                        return send_logs(index, cx, opts, output, b, report, before);
                    }
                    other => other?,
                };
                report.retries += u64::from(got.retries);
                report.rejected += got.rejected;
            }
            index.export_acknowledged(&opts.sink, &ack)?;
        }
    }
    if !transitions.is_empty() || !markers.is_empty() {
        report.batches += 1;
    }
    report.transitions += transitions.len() as u64;
    report.markers += markers.len() as u64;
    Ok(())
}

fn dry<M: serde::Serialize>(out: &mut dyn Write, url: &str, body: &M) -> Result<(), ExportError> {
    #[derive(serde::Serialize)]
    struct Line<'a, M> {
        url: &'a str,
        body: &'a M,
    }
    serde_json::to_writer(&mut *out, &Line { url, body }).map_err(std::io::Error::from)?;
    out.write_all(b"\n")?;
    Ok(())
}

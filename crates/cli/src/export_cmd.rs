//! `transcope export otlp`: the index's usage, transitions and markers to an
//! OpenTelemetry receiver (`transcope-otlp` does the work; this reads the options and
//! the environment every OpenTelemetry exporter reads).

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use clap::{Args, Subcommand};
use transcope_store::Pricer as _;

use crate::args::time_arg;
use crate::exit;
use crate::query_cmd::{index_for, load_prices, Common, PriceList};

#[derive(Subcommand, Debug)]
pub enum ExportCommand {
    /// Send usage (as `gen_ai.client.token.usage` points), scope transitions and markers
    /// (as log records) to an OTLP/HTTP receiver, each row once: a run sends what
    /// changed since the receiver last acknowledged.
    Otlp(OtlpArgs),
}

#[derive(Args, Debug)]
pub struct OtlpArgs {
    /// The receiver's base URL (`/v1/metrics` and `/v1/logs` are appended)
    /// [default: $OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318].
    #[arg(long, value_name = "URL")]
    endpoint: Option<String>,
    /// Leave out rows recorded before this time (later runs do not send them either).
    #[arg(long, value_name = "TIME", value_parser = time_arg)]
    since: Option<i64>,
    /// A header sent with every request, `K=V` (repeatable) [default:
    /// $OTEL_EXPORTER_OTLP_HEADERS, `k1=v1,k2=v2`].
    #[arg(long = "header", value_name = "K=V")]
    headers: Vec<String>,
    /// Print the requests as OTLP/JSON, one a line (`{"url", "body"}`); send and
    /// record nothing.
    #[arg(long)]
    dry_run: bool,
    /// Requests (or log records) in one POST; a receiver that answers 413 gets halves.
    #[arg(long, value_name = "N", default_value_t = 500)]
    batch: usize,
    /// Retries of a batch the receiver answers 429/502/503/504 (or does not answer).
    #[arg(long, value_name = "N", default_value_t = 6)]
    retries: u32,
    /// The first wait before a retry, in milliseconds (doubled each time, at most 30 s),
    /// when the receiver gives no Retry-After.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    backoff_ms: u64,
    /// Prices from FILE (the shipped table's format) instead of the shipped table.
    #[arg(long, value_name = "FILE")]
    pricing: Option<std::path::PathBuf>,
    #[command(flatten)]
    common: Common,
}

/// The default receiver (the OTLP specification's for HTTP).
const DEFAULT_ENDPOINT: &str = "http://localhost:4318";

/// `OTEL_EXPORTER_OTLP_HEADERS`' form: `k1=v1,k2=v2`, values percent-decoded.
fn parse_headers(text: &str) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, v)) = part.split_once('=') else {
            bail!("a header is K=V, not {part:?}");
        };
        out.push((k.trim().to_owned(), percent_decode(v.trim())));
    }
    Ok(out)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, ..) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub fn run(home: &Path, cmd: ExportCommand) -> Result<u8> {
    match cmd {
        ExportCommand::Otlp(a) => run_otlp(home, a),
    }
}

fn run_otlp(home: &Path, a: OtlpArgs) -> Result<u8> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let base = a
        .endpoint
        .clone()
        .or_else(|| env("OTEL_EXPORTER_OTLP_ENDPOINT"))
        .unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned());
    let base = base.trim().trim_end_matches('/').to_owned();
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        bail!("the OTLP endpoint must be an http:// or https:// URL, not {base:?}");
    }
    let headers = if a.headers.is_empty() {
        parse_headers(&env("OTEL_EXPORTER_OTLP_HEADERS").unwrap_or_default())
            .context("reading OTEL_EXPORTER_OTLP_HEADERS")?
    } else {
        parse_headers(&a.headers.join(","))?
    };
    let prices = load_prices(a.pricing.as_deref())?;
    let list = PriceList::new(&prices);
    let price = |model: &str, counts: [i64; 6]| {
        let t = transcope_core::Tokens::from_counts(counts.map(|c| c.max(0) as u64));
        list.cost((!model.is_empty()).then_some(model), &t)
    };
    let index = index_for(home, a.common)?;
    let adapters = crate::compose::adapters();
    let cx = transcope_otlp::Context {
        machine: transcope_fleet::Machine::name_here(None),
        version: env!("CARGO_PKG_VERSION"),
        agents: index.session_agents()?,
        providers: adapters
            .factories()
            .filter_map(|f| Some((f.name().to_owned(), f.agent().pricing?)))
            .collect(),
        remotes: index.project_remotes()?,
        price: &price,
    };
    let opts = transcope_otlp::Options {
        sink: base.clone(),
        since_us: a.since,
        batch: a.batch,
        observed_ns: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    };
    let report = if a.dry_run {
        let mut out = std::io::stdout().lock();
        transcope_otlp::export(
            &index,
            &cx,
            &opts,
            transcope_otlp::Output::DryRun {
                base: base.clone(),
                out: &mut out,
            },
        )
    } else {
        let mut endpoint = transcope_otlp::Endpoint::new(&base);
        endpoint.headers = headers;
        endpoint.retries = a.retries;
        endpoint.backoff = Duration::from_millis(a.backoff_ms);
        let sender = transcope_otlp::Sender::new(endpoint);
        transcope_otlp::export(&index, &cx, &opts, transcope_otlp::Output::Send(&sender))
    };
    let report = match report {
        Ok(r) => r,
        // `--dry-run | head`: the reader went away.
        Err(transcope_otlp::ExportError::Write(e))
            if e.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            return Ok(exit::OK)
        }
        Err(e) => {
            crate::say_line(&format!(
                "export stopped: {e} (what the receiver acknowledged is recorded; the next run sends the rest)"
            ));
            return Ok(exit::RUNTIME);
        }
    };
    let line = serde_json::to_string(&report)?;
    if a.common.json {
        crate::println_out(&mut std::io::stdout().lock(), &line)?;
    } else {
        crate::say_line(&format!(
            "{} {} requests ({} points), {} transitions, {} markers in {} batches{}; {} already sent{}",
            if a.dry_run { "would send" } else { "sent" },
            report.requests,
            report.points,
            report.transitions,
            report.markers,
            report.batches,
            if report.retries > 0 { format!(" ({} retries)", report.retries) } else { String::new() },
            report.already_sent,
            if report.rejected > 0 { format!("; the receiver rejected {}", report.rejected) } else { String::new() },
        ));
    }
    Ok(exit::OK)
}

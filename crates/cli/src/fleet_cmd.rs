//! `transcope fleet push` and `fleet status`: this machine's index sent to a fleet
//! (PostgreSQL), and what the fleet holds; and the Stop's own push, bounded.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use transcope_fleet::{Fleet, Machine, URL_ENV};

use crate::table::{local_time, Table};
use crate::{exit, print_ndjson, println_out};

#[derive(Subcommand, Debug)]
pub enum FleetCommand {
    /// Send what changed in this machine's index since its last push (sessions, scope
    /// rows, the marker ledger with delivery states, usage) to the fleet.
    Push(PushArgs),
    /// The fleet's machines: their last push and the rows they recorded.
    Status(StatusArgs),
}

#[derive(Args, Debug)]
pub struct PushArgs {
    /// The fleet: a PostgreSQL URL [default: $TRANSCOPE_FLEET_URL].
    #[arg(long, value_name = "URL")]
    to: Option<String>,
    /// This machine's name in the fleet [default: $TRANSCOPE_MACHINE, else the host
    /// name]. Its id is kept under the home.
    #[arg(long, value_name = "NAME")]
    machine: Option<String>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// The fleet: a PostgreSQL URL [default: $TRANSCOPE_FLEET_URL].
    #[arg(long, value_name = "URL")]
    to: Option<String>,
    /// Print one JSON object per machine.
    #[arg(long)]
    json: bool,
}

/// How long a command waits to connect.
const CONNECT: Duration = Duration::from_secs(15);

/// How long a Stop's push may take, all told.
pub const STOP_PUSH: Duration = Duration::from_secs(2);

/// The fleet URL: the one given, else `TRANSCOPE_FLEET_URL`.
pub fn fleet_url(given: Option<String>) -> Option<String> {
    given.or_else(|| std::env::var(URL_ENV).ok().filter(|u| !u.trim().is_empty()))
}

pub fn run(home: &Path, cmd: FleetCommand) -> Result<u8> {
    match cmd {
        FleetCommand::Push(a) => push(home, a),
        FleetCommand::Status(a) => status(a),
    }
}

fn no_url() -> u8 {
    say!("no fleet given: pass --to URL or set {URL_ENV} (a PostgreSQL URL, e.g. postgresql://user@host/fleet)");
    exit::USAGE
}

/// Mirror the scope logs that changed, then push.
fn push_now(
    home: &Path,
    url: &str,
    name: Option<&str>,
    timeout: Option<Duration>,
) -> Result<(transcope_fleet::push::Pushed, Machine, String)> {
    let machine = Machine::of_home(home, name)
        .with_context(|| format!("keeping this machine's id under {}", home.display()))?;
    let mut index = transcope_index::Index::open(home)?;
    index.sync_logs(home)?;
    let fleet = Fleet::connect(url, timeout)?;
    let pushed = transcope_fleet::push::push(&index, &fleet, &machine)?;
    Ok((pushed, machine, fleet.url().to_owned()))
}

fn push(home: &Path, a: PushArgs) -> Result<u8> {
    let Some(url) = fleet_url(a.to) else {
        return Ok(no_url());
    };
    let (pushed, machine, shown) = push_now(home, &url, a.machine.as_deref(), Some(CONNECT))?;
    let mut out = std::io::stdout().lock();
    if a.json {
        println_out(&mut out, &pushed.to_json(&machine, &shown).to_string())?;
    } else {
        println_out(
            &mut out,
            &format!(
                "pushed to {shown} as {}: {} sessions, {} scope rows, {} markers, {} requests ({})",
                transcope_core::quote::escape_unsafe(&machine.name),
                pushed.sessions,
                pushed.transitions,
                pushed.markers,
                pushed.requests,
                if pushed.whole {
                    "the whole index: this machine's first push to this fleet"
                } else {
                    "what changed since the last push"
                }
            ),
        )?;
    }
    Ok(exit::OK)
}

fn status(a: StatusArgs) -> Result<u8> {
    let Some(url) = fleet_url(a.to) else {
        return Ok(no_url());
    };
    let fleet = Fleet::connect(&url, Some(CONNECT))?;
    let machines = fleet.machines()?;
    let mut out = std::io::stdout().lock();
    if a.json {
        print_ndjson(&mut out, machines.iter().map(|m| m.to_json()))?;
        return Ok(exit::OK);
    }
    let mut t = Table::new(&[
        "machine",
        "last push (local)",
        "pushes",
        "sessions",
        "scope rows",
        "markers",
        "requests",
    ]);
    t.whole(&[0]);
    for m in &machines {
        t.row(vec![
            m.name.clone(),
            m.last_push.as_deref().map(local_time).unwrap_or_default(),
            m.pushes.to_string(),
            m.rows[0].to_string(),
            m.rows[1].to_string(),
            m.rows[2].to_string(),
            m.rows[3].to_string(),
        ]);
    }
    t.print(
        &mut out,
        &format!(
            "{} in {}",
            crate::table::count(machines.len() as u64, "machine"),
            fleet.url()
        ),
    )?;
    Ok(exit::OK)
}

/// A Stop's push, when a fleet is configured (`TRANSCOPE_FLEET_URL`): at most
/// [`STOP_PUSH`] all told (connecting included). What it did, for the Stop's summary;
/// a push that failed or ran out of time is one line on stderr, and its rows wait
/// for the next push (an unfinished transaction commits nothing).
pub fn stop_push(home: &Path) -> Option<serde_json::Value> {
    let url = fleet_url(None)?;
    let started = std::time::Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    let home = home.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(
            push_now(&home, &url, None, Some(STOP_PUSH))
                .map(|(p, m, u)| p.to_json(&m, &u))
                .map_err(|e| crate::error_text(&e)),
        );
    });
    let left = STOP_PUSH.saturating_sub(started.elapsed());
    match rx.recv_timeout(left) {
        Ok(Ok(v)) => Some(v),
        Ok(Err(e)) => {
            say!("fleet push: {e}; the rows wait for the next push");
            Some(serde_json::json!({"error": e}))
        }
        Err(_) => {
            say!(
                "fleet push: not done within {} s; the rows wait for the next push",
                STOP_PUSH.as_secs()
            );
            Some(serde_json::json!({"error": "timed out"}))
        }
    }
}

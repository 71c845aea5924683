//! `transcope observe`: a transcript's scope transitions into the log.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use transcope_change_detect::Env;
use transcope_core::{BuildContext, Found, Stage};
use transcope_engine::Buffers;
use transcope_identity::{GitResolver, ResolverConfig};
use transcope_markers::{Markers, TextEnds};
use transcope_observe::{observe, observe_indexed, Indexed, Observe, Routes};
use transcope_scopelog::ScopeLog;

use crate::{exit, println_out};

#[derive(Args, Debug)]
pub struct ObserveArgs {
    /// The session id (the scope-log key).
    #[arg(long, allow_hyphen_values = true)]
    session: String,
    /// Do not take swarm/task/lane (nor AGENTIHOOKS_PROJECT_ID) from the environment.
    #[arg(long)]
    no_env: bool,
    /// Read the whole transcript again, ignoring what earlier runs read (rows may be
    /// added when the transcript's times go backwards, as agentihooks adds them).
    #[arg(long)]
    full: bool,
    /// Print a JSON summary (transitions, markers found and new to the ledger).
    #[arg(long)]
    json: bool,
    /// The transcript (Claude Code JSONL, a Codex rollout or a Gemini CLI session).
    transcript: PathBuf,
}

/// The process environment as an explicit map.
pub fn process_env() -> Env {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// The environment an archived or `--no-env` run sees: only the switch and the paths
/// the resolver needs, never the swarm variables of the running process.
pub fn bare_env(full: &Env) -> Env {
    full.iter()
        .filter(|(k, _)| matches!(k.as_str(), "HOME" | "AGENTIHOOKS_SESSION_SCOPE"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// A resolver configured from the environment, with `home` as the agentihooks home.
pub fn resolver_for(home: &Path, env: &Env) -> Result<GitResolver> {
    let mut cfg_env = env.clone();
    cfg_env.insert("AGENTIHOOKS_HOME".into(), home.display().to_string());
    if !cfg_env.contains_key("HOME") {
        cfg_env.insert("HOME".into(), crate::user_home().display().to_string());
    }
    let config = ResolverConfig::from_env(&cfg_env).context("configuring project identity")?;
    Ok(GitResolver::new(config))
}

pub fn run_observe(home: &Path, args: ObserveArgs) -> Result<u8> {
    let full = process_env();
    let env = if args.no_env { bare_env(&full) } else { full };
    let resolver = resolver_for(home, &env)?;
    let log = ScopeLog::open(home, args.session);
    let pipeline = if args.full {
        crate::compose::pipeline_full()
    } else {
        crate::compose::pipeline(home, true)
    };
    let o = Observe::new(&log, &args.transcript, &env);
    let mut buffers = Buffers::default();
    let observed = if args.full {
        // The reference's whole-file read: nothing of it is indexed (it has no cursor
        // to say what was already recorded).
        observe(&pipeline, &o, resolver, &mut buffers).map(|r| (r, Indexed::default()))
    } else {
        observe_indexed(&pipeline, &o, home, resolver, &mut buffers)
    };
    let (report, indexed) =
        observed.with_context(|| format!("observing {}", args.transcript.display()))?;
    if let Some(e) = &indexed.error {
        say!("{e}; the cursor stays, so the next run records these bytes");
    }
    let outcome = &report.outcome;
    if outcome.io_errors > 0 {
        // The log could not be written: a runtime error, with what was written before it.
        say!(
            "{}; {} transition(s) recorded, {} write(s) failed",
            outcome
                .first_error
                .as_deref()
                .unwrap_or("writing the scope log failed"),
            outcome.recorded,
            outcome.io_errors
        );
        return Ok(exit::RUNTIME);
    }
    if let Some(e) = &outcome.first_error {
        say!("{e}");
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        let v = serde_json::json!({
            "transitions_recorded": outcome.recorded,
            "markers": indexed.markers,
            "recorded": indexed.recorded,
            "error": indexed.error,
        });
        println_out(&mut out, &v.to_string())?;
    } else {
        println_out(&mut out, &outcome.recorded.to_string())?;
    }
    Ok(exit::OK)
}

#[derive(Args, Debug)]
pub struct MarkersArgs {
    /// The transcript (Claude Code JSONL, a Codex rollout or a Gemini CLI session).
    transcript: PathBuf,
    /// Accepted for symmetry with the other commands and unused: `markers` only reads
    /// the transcript (declared here so the global `--home` is not listed).
    #[arg(long = "home", id = "home", hide = true, value_name = "DIR")]
    _home: Option<PathBuf>,
}

/// `transcope markers`: every brain marker, in order, one JSON object per line.
pub fn run_markers(args: MarkersArgs) -> Result<u8> {
    // The listed stages that hand on markers, over the whole file, no cursor. A one-off
    // listing: the text ends here, so a block never closed is settled as the reference
    // settles it.
    let pipeline = crate::compose::pipeline_full();
    let env = Env::new();
    let ctx = BuildContext::new(&args.transcript, None, &env).lending(&[&TextEnds]);
    let markers_only = Routes {
        markers: true,
        ..Routes::NONE
    };
    let mut stages = pipeline
        .stages()
        .build_where(&ctx, |f| markers_only.keeps(f));
    let mut each: Vec<&mut dyn Stage> = stages
        .iter_mut()
        .map(|s| &mut **s as &mut dyn Stage)
        .collect();
    pipeline
        .observe(
            &transcope_engine::Request::new(&args.transcript, None),
            &mut each,
            &mut Buffers::default(),
        )
        .with_context(|| format!("reading {}", args.transcript.display()))?;
    let mut found = Found::new();
    stages.iter_mut().for_each(|s| s.hand_on(&mut found));
    let mut out = std::io::stdout().lock();
    for m in found
        .take_all::<Markers>()
        .into_iter()
        .flat_map(|m| m.found)
    {
        println_out(&mut out, &m.to_python_json())?;
    }
    Ok(exit::OK)
}

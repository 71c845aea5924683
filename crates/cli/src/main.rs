//! The `transcope` command line (see `spec/cli.md`, the contract other tools rely on).
//!
//! Exit codes: `0` success (including "nothing to write"), `1` runtime error, `2` usage
//! error, `3` the scope log refused the transition. Hook commands always exit 0 unless
//! `--strict`. A broken pipe on stdout is success.

// clap argument enums are built once per process; boxing them buys nothing.
#![allow(clippy::large_enum_variant)]

/// Say `transcope: <message>` on stderr (`format!` arguments): the one way a line that
/// may hold a user's path or value reaches the terminal ([`say_line`]).
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::say_line(&format!($($arg)*))
    };
}

mod archive_cmd;
mod args;
mod backfill_cmd;
mod deliver;
mod doctor;
mod export_cmd;
mod facts_cmd;
mod fleet_cmd;
mod hook;
mod install;
mod install_mcp;
mod jsontext;
mod mcp_cmd;
mod payload;
mod query_cmd;
mod rebuild_cmd;
mod report_cmd;
mod scope_cmd;
mod settings_file;
mod sources;
mod sync;
mod table;
mod transcript_cmd;
mod why;

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
// The adapter and stage lists are the library's, so that tests, the example and the
// fuzz target use the same ones.
use transcope::compose;

/// What was this agent session working on when each thing happened?
#[derive(Parser, Debug)]
#[command(name = "transcope", version, long_about = None)]
pub struct Cli {
    /// The agentihooks home [default: $AGENTIHOOKS_HOME, else ~/.agentihooks].
    #[arg(long, global = true, value_name = "DIR")]
    home: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Read and write a session's scope log.
    #[command(subcommand)]
    Scope(scope_cmd::ScopeCommand),
    /// Attribute NDJSON events ({"at": …, "attrs": {…}}) through a session's scope log.
    Attribute(scope_cmd::AttributeArgs),
    /// Record the scope transitions a transcript implies; prints how many were written.
    Observe(transcript_cmd::ObserveArgs),
    /// Every brain marker in a transcript, in order, one JSON object per line.
    Markers(transcript_cmd::MarkersArgs),
    /// Read every archived transcript (all agents' default folders, or those given):
    /// scope transitions, markers and token usage, in parallel.
    Backfill(backfill_cmd::BackfillArgs),
    /// Whose transcript a hook payload (on stdin) is about: the caller's record,
    /// stable identity and scope-log key, as JSON.
    Identity,
    /// The agents' hooks (payload JSON on stdin; they always exit 0 unless --strict),
    /// and `hook install` / `hook uninstall` to wire them.
    #[command(subcommand)]
    Hook(hook::HookCommand),
    /// Sessions in force in a scope at some moment of a window, from the index.
    Sessions(query_cmd::SessionsArgs),
    /// One session's transitions and markers, in time order.
    Timeline(query_cmd::TimelineArgs),
    /// Every brain marker found, each once, with its attribution and delivery state.
    Ledger(query_cmd::LedgerArgs),
    /// What listed stages kept, each with the scope in force when it happened.
    Facts(facts_cmd::FactsArgs),
    /// Send the ledger's pending markers (HTTP when BRAIN_URL is set, else the outbox).
    Deliver(query_cmd::DeliverArgs),
    /// Which transition was in force at an instant, and why; what a grant allows.
    Explain(query_cmd::ExplainArgs),
    /// Token usage (and its cost) attributed to the scope in force when it was spent.
    Usage(query_cmd::UsageArgs),
    /// One self-contained HTML page: sessions over time, coloured by the scope in
    /// force, with their markers and usage.
    Report(report_cmd::ReportArgs),
    /// One line for Claude Code's status line: the session's scope and what its task
    /// and the session have cost (hook payload on stdin).
    Statusline(query_cmd::StatuslineArgs),
    /// Serve the query commands as MCP tools over stdio (read-only; an agent starts it:
    /// `hook install --mcp` registers it).
    Mcp(mcp_cmd::McpArgs),
    /// The local index (`<home>/transcope/index.sqlite`).
    #[command(subcommand)]
    Index(query_cmd::IndexCommand),
    /// Keep every transcript the agents would delete (compressed, checksummed, never
    /// overwritten), and give it back: verify, restore, ls, prune.
    Archive(archive_cmd::ArchiveArgs),
    /// Send what the index knows to the tools people already watch: `export otlp`.
    #[command(subcommand)]
    Export(export_cmd::ExportCommand),
    /// Many machines in one PostgreSQL: push this machine's index, see the machines.
    /// Queries read it with --fleet URL.
    #[command(subcommand)]
    Fleet(fleet_cmd::FleetCommand),
    /// Check the set-up (binary, hooks, home, switches, brain, index) and say how to fix
    /// what is broken; exits 1 when something is.
    Doctor(doctor::DoctorArgs),
    /// Print a shell completion script (e.g. `transcope completions bash >
    /// ~/.local/share/bash-completion/completions/transcope`).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff: `transcope man | man -l -`), every command in it;
    /// or write one page per command into DIR.
    Man {
        /// Write `transcope.1` and a `transcope-<command>.1` for each command here.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// The resolved agentihooks home.
pub fn resolve_home(flag: Option<PathBuf>) -> PathBuf {
    if let Some(h) = flag {
        return h;
    }
    if let Some(h) = std::env::var_os("AGENTIHOOKS_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(h);
    }
    user_home().join(".agentihooks")
}

/// `$HOME` (the user's home directory).
pub fn user_home() -> PathBuf {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// Exit statuses of the contract.
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// Runtime error.
    pub const RUNTIME: u8 = 1;
    /// Usage error.
    pub const USAGE: u8 = 2;
    /// The scope log refused the transition.
    pub const REFUSED: u8 = 3;
}

/// Write `transcope: <message>` and a newline to stderr in one write, each character
/// of `message` that could drive the terminal or reorder the line (controls, ESC, line
/// breaks, bidirectional controls: [`transcope_core::quote::is_unsafe`]) escaped as
/// `\u{1b}`, `\u{202e}`, `\n`: a path or value named on the command line or read from
/// a file is shown, never obeyed. A failing stderr is ignored (there is nowhere to say
/// it).
pub fn say_line(message: &str) {
    let line = format!(
        "transcope: {}\n",
        transcope_core::quote::escape_unsafe(message)
    );
    let _ = io::stderr().lock().write_all(line.as_bytes());
}

/// Write `text` and a newline to stdout; a closed pipe is not an error.
pub fn println_out(out: &mut impl Write, text: &str) -> io::Result<()> {
    quiet_pipe(
        out.write_all(text.as_bytes())
            .and_then(|()| out.write_all(b"\n")),
    )
}

/// A closed pipe (the reader went away: `| head`) is no error.
fn quiet_pipe(r: io::Result<()>) -> io::Result<()> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// Print one JSON object a line, written in large pieces (not a write a line: a
/// query of a thousand rows made a thousand system calls); a closed pipe ends it
/// quietly, as [`println_out`] does.
pub fn print_ndjson(
    out: &mut impl Write,
    values: impl Iterator<Item = serde_json::Value>,
) -> io::Result<()> {
    let mut nd = Ndjson::new(out);
    for v in values {
        nd.push(&v)?;
    }
    nd.finish()
}

/// NDJSON written as it comes, in 64 KiB pieces that each end a line (a line-buffered
/// stdout passes each straight through); a closed pipe is a quiet end.
pub struct Ndjson<'w, W: Write> {
    out: &'w mut W,
    text: Vec<u8>,
}

impl<'w, W: Write> Ndjson<'w, W> {
    /// Writing to `out`.
    pub fn new(out: &'w mut W) -> Ndjson<'w, W> {
        Ndjson {
            out,
            text: Vec::with_capacity(1 << 16),
        }
    }

    /// One value, one line.
    pub fn push(&mut self, v: &serde_json::Value) -> io::Result<()> {
        serde_json::to_writer(&mut self.text, v)?;
        self.text.push(b'\n');
        if self.text.len() >= 1 << 16 {
            quiet_pipe(self.out.write_all(&self.text))?;
            self.text.clear();
        }
        Ok(())
    }

    /// What is left.
    pub fn finish(self) -> io::Result<()> {
        quiet_pipe(self.out.write_all(&self.text))
    }
}

fn main() -> ExitCode {
    let plain = hook::HookCommand::from_plain_args(std::env::args_os()).map(|(home, cmd)| Cli {
        home,
        command: Command::Hook(cmd),
    });
    let cli = match plain.map_or_else(Cli::try_parse, Ok) {
        Ok(c) => c,
        Err(mut e) => {
            bound_echoes(&mut e);
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    // Tables show local times; the offset is read before any thread starts (a hook
    // prints none, and does not pay for reading the zone).
    if !matches!(cli.command, Command::Hook(_)) {
        table::init_local_offset();
    }
    let home = resolve_home(cli.home);
    let result = match cli.command {
        Command::Scope(cmd) => scope_cmd::run_scope(&home, cmd),
        Command::Attribute(args) => scope_cmd::run_attribute(&home, args),
        Command::Observe(args) => transcript_cmd::run_observe(&home, args),
        Command::Markers(args) => transcript_cmd::run_markers(args),
        Command::Backfill(args) => backfill_cmd::run_backfill(&home, args),
        Command::Identity => hook::run_identity(),
        Command::Hook(cmd) => hook::run_hook(&home, cmd),
        Command::Sessions(args) => query_cmd::run_sessions(&home, args),
        Command::Timeline(args) => query_cmd::run_timeline(&home, args),
        Command::Ledger(args) => query_cmd::run_ledger(&home, args),
        Command::Facts(args) => facts_cmd::run_facts(&home, args),
        Command::Deliver(args) => query_cmd::run_deliver(&home, args),
        Command::Explain(args) => query_cmd::run_explain(&home, args),
        Command::Usage(args) => query_cmd::run_usage(&home, args),
        Command::Report(args) => report_cmd::run_report(&home, args),
        Command::Fleet(cmd) => fleet_cmd::run(&home, cmd),
        Command::Export(cmd) => export_cmd::run(&home, cmd),
        Command::Archive(args) => archive_cmd::run(&home, args),
        Command::Statusline(args) => query_cmd::run_statusline(&home, args),
        Command::Mcp(args) => mcp_cmd::run_mcp(&home, args),
        Command::Index(cmd) => query_cmd::run_index(&home, cmd),
        Command::Doctor(args) => doctor::run_doctor(&home, args),
        Command::Completions { shell } => run_completions(shell),
        Command::Man { dir } => run_man(dir),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if e.downcast_ref::<io::Error>()
                .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
            {
                return ExitCode::from(exit::OK);
            }
            say!("{}", error_text(&e));
            ExitCode::from(exit::RUNTIME)
        }
    }
}

/// clap echoes what it could not take (`invalid value '…'`, `unexpected argument
/// '…'` and its tip) as it was typed: a 100 KB `--since` came back whole, an escape
/// sequence reached the terminal. Each echoed value is made [`bounded`] (escaped, cut
/// after 64 characters with its length), in every piece of the message that repeats
/// it; clap's own words are kept.
///
/// [`bounded`]: transcope_core::quote::bounded
fn bound_echoes(e: &mut clap::Error) {
    use clap::builder::StyledStr;
    use clap::error::ContextValue;
    use transcope_core::quote::bounded;
    let mut echoed: Vec<(String, String)> = Vec::new();
    let mut bound = |raw: &String| {
        let b = bounded(raw).to_string();
        if b != *raw && !echoed.iter().any(|(r, _)| r == raw) {
            echoed.push((raw.clone(), b.clone()));
        }
        b
    };
    let strings: Vec<_> = e
        .context()
        .filter_map(|(kind, v)| match v {
            ContextValue::String(s) => Some((kind, ContextValue::String(bound(s)))),
            ContextValue::Strings(v) => Some((
                kind,
                ContextValue::Strings(v.iter().map(&mut bound).collect()),
            )),
            _ => None,
        })
        .collect();
    // A styled piece is its text with clap's style codes in it (`ansi`): the value
    // stands there as typed (its own ESC included, which the plain text would strip),
    // and the styles around it are kept.
    let replaced = |styled: &StyledStr| -> Option<StyledStr> {
        let coded = styled.ansi().to_string();
        let hit = echoed.iter().any(|(raw, _)| coded.contains(raw.as_str()));
        hit.then(|| {
            let text = echoed
                .iter()
                .fold(coded, |t, (raw, b)| t.replace(raw.as_str(), b));
            StyledStr::from(text)
        })
    };
    let styled: Vec<_> = e
        .context()
        .filter_map(|(kind, v)| match v {
            ContextValue::StyledStr(s) => replaced(s).map(|s| (kind, ContextValue::StyledStr(s))),
            ContextValue::StyledStrs(v) if v.iter().any(|s| replaced(s).is_some()) => Some((
                kind,
                ContextValue::StyledStrs(
                    v.iter()
                        .map(|s| replaced(s).unwrap_or_else(|| s.clone()))
                        .collect(),
                ),
            )),
            _ => None,
        })
        .collect();
    for (kind, v) in strings.into_iter().chain(styled) {
        e.insert(kind, v);
    }
}

/// `transcope completions SHELL`: the script on stdout.
fn run_completions(shell: clap_complete::Shell) -> anyhow::Result<u8> {
    use clap::CommandFactory;
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "transcope", &mut out);
    write_out(&out)?;
    Ok(exit::OK)
}

/// `transcope man [--dir DIR]`: one page on stdout, or every page into DIR.
///
/// The page on stdout stands alone: it lists every command with its synopsis and what
/// it does, and refers to no other page (clap_mangen's own top page names a
/// `transcope-<command>(1)` for each command, pages that exist only where `--dir`
/// wrote them all). The pages `--dir` writes refer to one another, all written at once.
fn run_man(dir: Option<PathBuf>) -> anyhow::Result<u8> {
    use anyhow::Context;
    use clap::CommandFactory;
    let cmd = Cli::command();
    match dir {
        Some(d) => {
            std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
            clap_mangen::generate_to(cmd, &d)
                .with_context(|| format!("writing into {}", d.display()))?;
            say!("manual pages written into {}", d.display());
        }
        None => write_out(&one_man_page(cmd)?)?,
    }
    Ok(exit::OK)
}

/// The whole manual as one roff page: clap_mangen's title, name, synopsis, description
/// and options, then a COMMANDS section of every command, nested ones included.
fn one_man_page(mut cmd: clap::Command) -> io::Result<Vec<u8>> {
    use roff::{bold, roman, Roff};
    cmd.build();
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    let mut roff = Roff::new();
    roff.control("SH", ["COMMANDS"]);
    fn each(roff: &mut Roff, cmd: &clap::Command) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            if sub.get_name() == "help" {
                continue;
            }
            let usage = sub.clone().render_usage().to_string();
            let usage = usage.strip_prefix("Usage: ").unwrap_or(&usage);
            roff.control("TP", []);
            roff.text([bold(usage.lines().next().unwrap_or_default())]);
            if let Some(about) = sub.get_about() {
                for line in about.to_string().lines() {
                    roff.text([roman(line)]);
                }
            }
            each(roff, sub);
        }
    }
    each(&mut roff, &cmd);
    roff.control("SH", ["SEE ALSO"]);
    roff.text([roman(
        "transcope COMMAND --help documents every flag of a command. \
         transcope man --dir DIR writes this page as transcope.1 and one page per \
         command, transcope-COMMAND.1, which refer to one another.",
    )]);
    roff.to_writer(&mut out)?;
    man.render_version_section(&mut out)?;
    Ok(out)
}

/// Write `bytes` to stdout; a closed pipe is not an error.
fn write_out(bytes: &[u8]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// `e` and its causes, joined by `: `, each said once: a library error whose message
/// already ends with its source's (`while appending to the scope log: <io error>`)
/// is not followed by that source again.
///
/// A context naming what its cause names again (`reading X` over `while reading X: …`)
/// is left out too: the cause says it.
pub fn error_text(e: &anyhow::Error) -> String {
    let parts: Vec<String> = e.chain().map(ToString::to_string).collect();
    let mut text = String::new();
    for (i, part) in parts.iter().enumerate() {
        if text.ends_with(part.as_str()) {
            continue;
        }
        let named_below = part
            .split_once(' ')
            .map(|(_, object)| object)
            .filter(|o| o.len() > 3)
            .is_some_and(|o| parts.get(i + 1).is_some_and(|next| next.contains(o)));
        if named_below {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(part);
    }
    text.strip_prefix("while ")
        .map(str::to_owned)
        .unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error whose message (`what`, then its source) includes its source, as
    /// thiserror's `{source}` makes it.
    #[derive(Debug)]
    struct Says {
        what: &'static str,
        source: io::Error,
    }

    impl std::fmt::Display for Says {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{}: {}", self.what, self.source)
        }
    }

    impl std::error::Error for Says {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.source)
        }
    }

    /// The hook command lines read without clap are read as clap reads them, and
    /// everything else is left to clap.
    #[test]
    fn plain_hook_command_lines_are_what_clap_makes_of_them() {
        let plain = |line: &[&str]| {
            let args = std::iter::once("transcope").chain(line.iter().copied());
            hook::HookCommand::from_plain_args(args.map(Into::into)).map(|(home, cmd)| Cli {
                home,
                command: Command::Hook(cmd),
            })
        };
        let taken: &[&[&str]] = &[
            &["hook", "stop"],
            &["--home", "/h", "hook", "stop"],
            &["--home=/h", "hook", "session-start", "--json"],
            &["hook", "--home", "h", "stop", "--strict", "--json"],
            &["hook", "stop", "--json", "--strict", "--home", "/a b"],
            &["hook", "session-start"],
        ];
        for line in taken {
            let clap =
                Cli::try_parse_from(std::iter::once("transcope").chain(line.iter().copied()))
                    .unwrap();
            let ours = plain(line).unwrap_or_else(|| panic!("not taken: {line:?}"));
            assert_eq!(format!("{ours:?}"), format!("{clap:?}"), "{line:?}");
        }
        let left: &[&[&str]] = &[
            &[],
            &["hook"],
            &["hook", "stop", "--help"],
            &["hook", "stop", "--strict", "--strict"],
            &["--strict", "hook", "stop"],
            &["--home", "hook", "stop"],
            &["--home=", "hook", "stop"],
            &["--home", "/a", "--home", "/b", "hook", "stop"],
            &["hook", "stop", "extra"],
            &["stop", "hook"],
            &["hook", "stop", "-h"],
            &["backfill", "x"],
        ];
        for line in left {
            assert!(plain(line).is_none(), "taken: {line:?}");
        }
    }

    /// `scope record` on a full disk printed the I/O error twice (issue 13, item 11).
    #[test]
    fn a_cause_already_in_its_message_is_said_once() {
        let e = anyhow::Error::new(Says {
            what: "while appending",
            source: io::Error::other("File too large"),
        })
        .context("recording the transition");
        assert_eq!(
            error_text(&e),
            "recording the transition: while appending: File too large"
        );
        let plain = anyhow::Error::new(io::Error::other("disk")).context("writing");
        assert_eq!(error_text(&plain), "writing: disk");
    }

    /// `markers` on a missing file said the path and the cause twice (issue 16).
    #[test]
    fn a_context_its_cause_repeats_is_left_out() {
        // An error that names its path, as the engine's does.
        let e = anyhow::Error::new(Says {
            what: "while reading /x/t.jsonl",
            source: io::Error::other("No such file or directory (os error 2)"),
        })
        .context("reading /x/t.jsonl");
        assert_eq!(
            error_text(&e),
            "reading /x/t.jsonl: No such file or directory (os error 2)"
        );
    }
}

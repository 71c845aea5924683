//! `transcope doctor`: check what a working set-up needs and say how to fix what is not
//! there. Each check is `ok`, `warn` (works, but maybe not as meant) or `fail` (broken:
//! the exit status is then 1).
//!
//! The checks: a `transcope` on the PATH (and whether it is this one); the hooks wired
//! in each agent's settings, and the programs they run found; `transcope mcp`'s
//! registration with each agent that starts MCP servers (optional; its program found); the home writable; the
//! scope switch; where markers go (the brain URL reachable, or the outbox); the index
//! readable.
//!
//! Every agent is checked alike — each registered adapter that declares a hook wiring
//! ([`Agent::all`]), in order: one that is not installed here (its settings folder
//! absent) has nothing to wire and is `ok`; one that is installed and not wired is a
//! `warn` while another agent's hooks are wired, and a `fail` when no installed
//! agent's are (then nothing would ever call transcope).

use std::net::ToSocketAddrs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use serde_json::json;

use crate::install::{wiring, Agent};
use crate::install_mcp::{registration, McpAgent};
use crate::transcript_cmd::process_env;
use crate::{exit, println_out};

#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// Print one JSON object per check (`check`, `status`, `detail`, `fix`).
    #[arg(long)]
    json: bool,
}

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Ok,
    Warn,
    Fail,
}

impl Status {
    fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

/// One check's outcome: what was found, and how to fix it when it is not ok.
struct Check {
    name: String,
    status: Status,
    detail: String,
    fix: Option<String>,
}

fn check(name: &str, status: Status, detail: String, fix: Option<String>) -> Check {
    Check {
        name: name.to_owned(),
        status,
        detail,
        fix,
    }
}

/// Where `program` is found: itself when it names a path, else the first executable of
/// that name in a PATH folder.
pub fn find_program(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(program))
        .find(|p| executable(p))
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn binary_check() -> Check {
    let name = "transcope on the PATH";
    let this = std::env::current_exe().ok();
    match find_program("transcope") {
        None => check(
            name,
            Status::Fail,
            "no `transcope` in any PATH folder: the hooks cannot run it".into(),
            Some(
                "install it (`cargo install --locked --path crates/cli`) and put ~/.cargo/bin on your PATH"
                    .into(),
            ),
        ),
        Some(found) => match &this {
            Some(this) if !same_file(&found, this) => check(
                name,
                Status::Warn,
                format!(
                    "{} (not this one, {}: the hooks run that one)",
                    found.display(),
                    this.display()
                ),
                Some("reinstall, or run this doctor from the PATH".into()),
            ),
            _ => check(name, Status::Ok, found.display().to_string(), None),
        },
    }
}

/// The hooks of one agent: wired, and the programs they run found (`others_wired`:
/// another installed agent's hooks are, so this one unwired is a warning only).
fn agent_checks(agent: &Agent, others_wired: bool, out: &mut Vec<Check>) {
    let path = agent.settings_path();
    let w = wiring(agent, &path);
    let name = format!("{} hooks", agent.title());
    let flag = agent.name;
    let install = format!("transcope hook install --agent {flag}");
    if !agent.installed() {
        out.push(check(
            &name,
            Status::Ok,
            format!(
                "not installed here ({} absent); nothing to wire",
                path.display()
            ),
            None,
        ));
        return;
    }
    if w.wired.is_empty() {
        let status = if others_wired {
            Status::Warn
        } else {
            Status::Fail
        };
        out.push(check(
            &name,
            status,
            format!("not wired in {}", path.display()),
            Some(install.clone()),
        ));
    } else if !w.missing.is_empty() {
        out.push(check(
            &name,
            Status::Fail,
            format!(
                "{} wired, {} missing in {}",
                w.wired.join(", "),
                w.missing.join(", "),
                path.display()
            ),
            Some(install.clone()),
        ));
    } else {
        out.push(check(
            &name,
            Status::Ok,
            format!("{} wired in {}", w.wired.join(", "), path.display()),
            None,
        ));
    }
    for p in &w.problems {
        out.push(check(&name, Status::Fail, p.clone(), Some(install.clone())));
    }
    let mut programs = w.programs.clone();
    programs.dedup();
    for program in programs {
        match find_program(&program) {
            Some(found) => out.push(check(
                &format!("{} hook program", agent.title()),
                Status::Ok,
                format!("`{program}` is {}", found.display()),
                None,
            )),
            None => out.push(check(
                &format!("{} hook program", agent.title()),
                Status::Fail,
                format!("the hooks run `{program}`, which is not found"),
                Some(format!(
                    "put it on the PATH, or `transcope hook uninstall --agent {flag}` then `transcope hook install --agent {flag} --program /full/path/to/transcope`"
                )),
            )),
        }
    }
}

/// The MCP registration of one agent (`transcope hook install --mcp`): optional, so
/// an agent without it is `ok` (said, with how to add it); a registration whose
/// program is not found, or an entry of transcope's name that runs something else, is
/// a `fail`. An agent not installed and without one is not reported.
fn mcp_check(agent: &McpAgent, hooks: &[Agent]) -> Option<Check> {
    let path = agent.path();
    let r = registration(agent, &path);
    let name = format!("{} MCP server", agent.mcp.title);
    let install = if hooks.iter().any(|h| h.name == agent.name) {
        format!("transcope hook install --mcp --agent {}", agent.name)
    } else {
        "transcope hook install --mcp".to_owned()
    };
    if let Some(problem) = r.problem {
        return Some(check(
            &name,
            Status::Fail,
            problem,
            Some(format!("remove or rename that entry, then `{install}`")),
        ));
    }
    Some(match r.program {
        Some(program) => match find_program(&program) {
            Some(found) => check(
                &name,
                Status::Ok,
                format!(
                    "`{program} mcp` registered in {} (`{program}` is {})",
                    path.display(),
                    found.display()
                ),
                None,
            ),
            None => check(
                &name,
                Status::Fail,
                format!(
                    "registered in {}, but it runs `{program}`, which is not found",
                    path.display()
                ),
                Some(format!(
                    "put it on the PATH, or `transcope hook uninstall --mcp` then `{install} --program /full/path/to/transcope`"
                )),
            ),
        },
        None if agent.installed() => check(
            &name,
            Status::Ok,
            format!(
                "not registered in {} (optional: `{install}` lets the agent ask transcope through MCP)",
                path.display()
            ),
            None,
        ),
        None => return None,
    })
}

/// Whether `dir` (or, when it does not exist yet, the folder it would be made in) takes
/// a new file.
fn writable(dir: &Path) -> Result<(), String> {
    let mut at = dir;
    while !at.exists() {
        at = match at.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => return Err(format!("no folder of {} exists", dir.display())),
        };
    }
    if !at.is_dir() {
        return Err(format!("{} is not a folder", at.display()));
    }
    let probe = at.join(format!(".transcope-doctor-{}", std::process::id()));
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe);
    match made {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(format!("cannot create a file in {}: {e}", at.display())),
    }
}

fn home_check(home: &Path) -> Check {
    let name = "home writable";
    match writable(home) {
        Ok(()) if home.is_dir() => check(name, Status::Ok, home.display().to_string(), None),
        Ok(()) => check(
            name,
            Status::Ok,
            format!("{} (made at the first hook)", home.display()),
            None,
        ),
        Err(e) => check(
            name,
            Status::Fail,
            format!("{}: {e}", home.display()),
            Some("make it writable, or point AGENTIHOOKS_HOME (or --home) elsewhere".into()),
        ),
    }
}

fn switch_check(env: &transcope_change_detect::Env) -> Check {
    let name = "scope switch";
    if env.get("AGENTIHOOKS_SESSION_SCOPE").map(String::as_str) == Some("0") {
        check(
            name,
            Status::Warn,
            "off (AGENTIHOOKS_SESSION_SCOPE=0): a Stop records no transitions".into(),
            Some("unset AGENTIHOOKS_SESSION_SCOPE to record them".into()),
        )
    } else {
        check(
            name,
            Status::Ok,
            "on: every Stop records the session's scope transitions".into(),
            None,
        )
    }
}

/// `host:port` of an `http(s)://host[:port]/…` URL.
fn host_port(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let default = match scheme {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => {
            Some((h.trim_matches(['[', ']']).to_owned(), p.parse().ok()?))
        }
        _ => Some((authority.trim_matches(['[', ']']).to_owned(), default)),
    }
}

fn brain_check(home: &Path, env: &transcope_change_detect::Env) -> Check {
    let name = "markers";
    let brain = transcope_brain::BrainConfig::from_env(home, env);
    if !brain.enabled {
        return check(
            name,
            Status::Ok,
            "brain writer off: markers are kept in the ledger (`transcope ledger`), none sent"
                .into(),
            None,
        );
    }
    let Some(url) = brain.url.as_deref() else {
        return check(
            name,
            Status::Ok,
            format!(
                "brain writer on, no BRAIN_URL: markers go to the outbox {}",
                brain.outbox.display()
            ),
            None,
        );
    };
    let reachable = host_port(url).and_then(|(h, p)| {
        let addr = (h.as_str(), p).to_socket_addrs().ok()?.next()?;
        std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()
    });
    if reachable.is_some() {
        check(name, Status::Ok, format!("brain at {url} reachable"), None)
    } else {
        check(
            name,
            Status::Warn,
            format!(
                "brain at {url} not reachable: markers wait in the outbox {} until it is",
                brain.outbox.display()
            ),
            Some("check BRAIN_URL, or start the brain".into()),
        )
    }
}

fn index_check(home: &Path) -> Check {
    let name = "index";
    let path = transcope_index::index_path(home);
    // A link is looked at, not through: a dangling one is not "not made yet".
    if std::fs::symlink_metadata(&path).is_err() {
        return check(
            name,
            Status::Ok,
            format!(
                "{} not made yet (the first hook, backfill or query makes it)",
                path.display()
            ),
            None,
        );
    }
    match transcope_index::Index::open(home).and_then(|ix| ix.pending_count(None, None)) {
        Ok(_) => check(
            name,
            Status::Ok,
            format!("{} readable", path.display()),
            None,
        ),
        Err(e) => check(
            name,
            Status::Fail,
            e.to_string(),
            Some("`transcope index rebuild` moves it aside (kept) and rebuilds it from the logs and every transcript it knew".into()),
        ),
    }
}

/// The fleet a Stop pushes to (`TRANSCOPE_FLEET_URL`), when one is set: reachable,
/// its schema one this build reads, and whether this home has pushed to it. The URL
/// is shown with its password hidden, and so is every message.
fn fleet_check(home: &Path) -> Option<Check> {
    let url = crate::fleet_cmd::fleet_url(None)?;
    let shown = transcope_fleet::redact(&url);
    let name = "fleet";
    Some(
        match transcope_fleet::Fleet::connect(&url, Some(Duration::from_secs(3))) {
            Ok(fleet) => {
                let id = std::fs::read_to_string(transcope_fleet::machine_id_file(home))
                    .ok()
                    .map(|t| t.trim().to_owned());
                let pushed = fleet.machines().ok().and_then(|ms| {
                    ms.into_iter().find(|m| Some(&m.id) == id.as_ref())
                });
                match pushed {
                    Some(m) => check(
                        name,
                        Status::Ok,
                        format!(
                            "{shown} reachable; this home pushed as {} (last {})",
                            m.name,
                            m.last_push.as_deref().unwrap_or("never")
                        ),
                        None,
                    ),
                    None => check(
                        name,
                        Status::Ok,
                        format!("{shown} reachable; this home has not pushed to it yet"),
                        Some("`transcope fleet push` sends this machine's index (a Stop then pushes its own rows)".into()),
                    ),
                }
            }
            Err(e) => check(
                name,
                Status::Fail,
                // The error names the URL redacted already.
                e.to_string(),
                Some(format!("check that the server in {} ({}) is up and this user may connect; unset it to stop the Stop's pushes", transcope_fleet::URL_ENV, shown)),
            ),
        },
    )
}

/// An agent's clean-up, when it has one (Claude Code's `cleanupPeriodDays`, 30 days by
/// default): it deletes older transcripts at its start. `None` when the agent declares
/// none or is not installed here.
fn cleanup_check(agent: &Agent, archive_on: bool) -> Option<Check> {
    let cleanup = agent.hooks.cleanup?;
    if !agent.installed() {
        return None;
    }
    let path = agent.settings_path();
    let setting = cleanup.setting;
    let days = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get(setting).and_then(serde_json::Value::as_i64));
    let said = match days {
        Some(d) => format!("{setting} is {d} in {}", path.display()),
        None => format!(
            "no {setting} in {}: {} days",
            path.display(),
            cleanup.default_days
        ),
    };
    let name = format!("{} clean-up", agent.title());
    Some(if archive_on {
        check(
            &name,
            Status::Ok,
            format!("{said}: it deletes older transcripts at its start; the archive keeps them"),
            None,
        )
    } else {
        check(
            &name,
            Status::Warn,
            format!("{said}: it deletes older transcripts at its start, and the archive is off (TRANSCOPE_ARCHIVE): they will be lost"),
            Some(format!(
                "unset TRANSCOPE_ARCHIVE (or set {setting} higher in {}'s settings)",
                agent.title()
            )),
        )
    })
}

/// Whether the archive holds every transcript the agents still have, each up to its
/// present size.
fn archive_check(home: &Path, env: &transcope_change_detect::Env) -> Check {
    let name = "archive";
    let Some(archive) = crate::archive_cmd::keeping(home) else {
        return check(
            name,
            Status::Warn,
            format!(
                "off ({}): transcripts the agents delete are not kept",
                transcope_archive::SWITCH_ENV
            ),
            Some(format!(
                "unset {} to keep them",
                transcope_archive::SWITCH_ENV
            )),
        );
    };
    let pipeline = crate::compose::pipeline(home, false);
    let paths = crate::sources::default_paths(env, pipeline.registry());
    let (jobs, _) = transcope_backfill::discover(&paths, pipeline.registry());
    let (mut missing, mut behind, mut bytes) = (0u64, 0u64, 0u64);
    for j in &jobs {
        let e = archive.entry(&j.path);
        match e.info() {
            Ok(i) if i.generations > 0 && i.bytes == j.size => {}
            Ok(i) if i.generations > 0 => {
                behind += 1;
                bytes += j.size.saturating_sub(i.bytes);
            }
            _ => {
                missing += 1;
                bytes += j.size;
            }
        }
    }
    let root = archive.root().display();
    if jobs.is_empty() {
        check(
            name,
            Status::Ok,
            format!("{root}; the agents have no transcript here yet"),
            None,
        )
    } else if missing + behind == 0 {
        check(
            name,
            Status::Ok,
            format!(
                "{root} holds all {} the agents have",
                crate::table::count(jobs.len() as u64, "transcript")
            ),
            None,
        )
    } else {
        check(
            name,
            Status::Warn,
            format!(
                "{root}: {missing} of {} transcripts not archived, {behind} not up to date ({bytes} bytes)",
                jobs.len()
            ),
            Some("`transcope archive` keeps them now (a Stop and a backfill keep what they read from then on)".into()),
        )
    }
}

pub fn run_doctor(home: &Path, args: DoctorArgs) -> Result<u8> {
    let env = process_env();
    let mut checks = vec![binary_check()];
    let agents = Agent::all();
    let wired: Vec<&Agent> = agents
        .iter()
        .filter(|a| a.installed() && !wiring(a, &a.settings_path()).wired.is_empty())
        .collect();
    for agent in &agents {
        agent_checks(agent, wired.iter().any(|w| *w != agent), &mut checks);
    }
    if !agents.iter().any(Agent::installed) {
        let titles: Vec<&str> = agents.iter().map(Agent::title).collect();
        checks.push(check(
            "agents",
            Status::Warn,
            format!("no agent is installed here ({}): no hook will call transcope; `backfill` and the queries still work on archives you name", titles.join(", ")),
            None,
        ));
    }
    for agent in McpAgent::all() {
        checks.extend(mcp_check(&agent, &agents));
    }
    checks.push(home_check(home));
    checks.push(switch_check(&env));
    checks.push(brain_check(home, &env));
    checks.push(index_check(home));
    let archive_on = crate::archive_cmd::keeping(home).is_some();
    for agent in &agents {
        checks.extend(cleanup_check(agent, archive_on));
    }
    checks.push(archive_check(home, &env));
    if let Some(c) = fleet_check(home) {
        checks.push(c);
    }
    let mut out = std::io::stdout().lock();
    for c in &checks {
        let line = if args.json {
            json!({"check": c.name, "status": c.status.word(), "detail": c.detail, "fix": c.fix})
                .to_string()
        } else {
            // A detail names paths from the environment and the flags: shown, never
            // obeyed (see `say_line`).
            let shown = |t: &str| transcope_core::quote::escape_unsafe(t).into_owned();
            let mut l = format!("{:<5} {}: {}", c.status.word(), c.name, shown(&c.detail));
            if let Some(f) = &c.fix {
                l.push_str(&format!("\n      fix: {}", shown(f)));
            }
            l
        };
        println_out(&mut out, &line)?;
    }
    let broken = checks.iter().filter(|c| c.status == Status::Fail).count();
    if broken > 0 {
        say!("{} failed", crate::table::count(broken as u64, "check"));
        return Ok(exit::RUNTIME);
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_brain_url_gives_its_host_and_port() {
        assert_eq!(
            host_port("http://localhost:8080/x"),
            Some(("localhost".into(), 8080))
        );
        assert_eq!(
            host_port("https://brain.example/"),
            Some(("brain.example".into(), 443))
        );
        assert_eq!(host_port("http://[::1]:9/"), Some(("::1".into(), 9)));
        assert_eq!(host_port("ftp://x"), None);
    }
}

//! Each agent's knowledge is its adapter's declaration, and the binary goes over what
//! the registered adapters declare (`transcope::compose::adapters`, the one list):
//!
//! * `hook install` and `doctor` cover exactly the agents that declare a hook wiring,
//!   in the registry's order, each with its title, settings file and events;
//! * every agent's home variable is read by one rule — unset, empty or blank after
//!   trimming is the default; a value is trimmed — by every reader: the install's
//!   settings path, the layout's default roots, and (Claude Code's) the hook caller;
//! * the providers the price list's own tests assume are the ones the adapters
//!   declare.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use transcope_core::agent::{HomeVar, Hooks};

mod common;

use common::text;

/// The agents that declare a wiring, as the binary registers them.
fn wired() -> Vec<(&'static str, Hooks)> {
    transcope::compose::adapters().hooks().collect()
}

/// `transcope ARGS` with HOME (and the agentihooks home) in `home`, the agents'
/// variables removed but for `env`.
fn run(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_transcope"));
    cmd.arg("--home")
        .arg(home.join("agentihooks"))
        .args(args)
        .env("HOME", home);
    common::clean_env(&mut cmd);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// What `hook install --dry-run` said it would do, per agent: (title, events, file).
fn dry_run(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Vec<(String, String, PathBuf)> {
    let mut all = vec!["hook", "install", "--dry-run"];
    all.extend(args);
    let out = run(home, &all, env);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    err.lines()
        .map(|l| {
            let l = l.strip_prefix("transcope: ").unwrap();
            let (title, rest) = l.split_once(": wired ").unwrap();
            let (events, rest) = rest.split_once(" in ").unwrap();
            let (file, _) = rest.split_once(" (dry run").unwrap();
            (title.to_owned(), events.to_owned(), PathBuf::from(file))
        })
        .collect()
}

/// The settings file `hooks` declares in the home folder `folder`.
fn settings_in(hooks: &Hooks, folder: &Path) -> PathBuf {
    let folder = if hooks.canonical_home {
        std::fs::canonicalize(folder).unwrap_or_else(|_| folder.to_owned())
    } else {
        folder.to_owned()
    };
    folder.join(hooks.settings)
}

fn events(hooks: &Hooks) -> String {
    let names: Vec<&str> = hooks.events.iter().map(|(e, _)| *e).collect();
    names.join(", ")
}

#[test]
fn install_and_doctor_cover_exactly_the_declared_wirings() {
    let declared = wired();
    assert!(!declared.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();

    // No agent's folder: `all` wires only those wired by default.
    let defaults: Vec<(String, String, PathBuf)> = declared
        .iter()
        .filter(|(_, h)| h.wired_by_default)
        .map(|(_, h)| {
            let folder = home.join(h.home.folder);
            (h.title.to_owned(), events(h), settings_in(h, &folder))
        })
        .collect();
    assert_eq!(dry_run(home, &[], &[]), defaults);

    // Every agent's folder: `all` wires each declared agent, in order, as declared.
    for (_, h) in &declared {
        std::fs::create_dir_all(home.join(h.home.folder)).unwrap();
    }
    let each: Vec<(String, String, PathBuf)> = declared
        .iter()
        .map(|(_, h)| {
            let folder = home.join(h.home.folder);
            (h.title.to_owned(), events(h), settings_in(h, &folder))
        })
        .collect();
    assert_eq!(dry_run(home, &[], &[]), each);
    // And each one alone by its adapter's name.
    for ((name, _), one) in declared.iter().zip(&each) {
        assert_eq!(
            dry_run(home, &["--agent", name], &[]),
            std::slice::from_ref(one)
        );
    }

    // `doctor` checks the same agents, in the same order, each fixed by its name.
    let out = run(home, &["doctor", "--json"], &[]);
    let checks: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let hooks: Vec<(String, Option<String>)> = checks
        .iter()
        .filter(|c| c["check"].as_str().unwrap().ends_with(" hooks"))
        .map(|c| {
            (
                c["check"].as_str().unwrap().to_owned(),
                c["fix"].as_str().map(str::to_owned),
            )
        })
        .collect();
    let want: Vec<(String, Option<String>)> = declared
        .iter()
        .map(|(name, h)| {
            (
                format!("{} hooks", h.title),
                Some(format!("transcope hook install --agent {name}")),
            )
        })
        .collect();
    assert_eq!(hooks, want);
    // A declared clean-up setting is reported for its agent, and only then.
    let cleanups: Vec<&str> = checks
        .iter()
        .filter_map(|c| c["check"].as_str()?.strip_suffix(" clean-up"))
        .collect();
    let declared_cleanups: Vec<&str> = declared
        .iter()
        .filter(|(_, h)| h.cleanup.is_some())
        .map(|(_, h)| h.title)
        .collect();
    assert_eq!(cleanups, declared_cleanups);
}

/// The folder a home variable set to `value` (or unset) names, by the one rule.
fn expected(h: &Hooks, home: &Path, value: Option<&str>) -> PathBuf {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        None => home.join(h.home.folder),
        Some(v) => match h.home.names {
            HomeVar::Folder => PathBuf::from(v),
            HomeVar::UserHome => Path::new(v).join(h.home.folder),
        },
    }
}

#[test]
fn each_home_variable_has_one_rule_for_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("user");
    let moved = dir.path().join("moved");
    std::fs::create_dir_all(&home).unwrap();
    let adapters = transcope::compose::adapters();
    let mut vars = Vec::new();
    for (name, h) in wired() {
        vars.push(h.home.var);
        let padded = format!("  {}\n", moved.display());
        let values = [None, Some(""), Some(" \t\n"), Some(padded.as_str())];
        for value in values {
            let folder = expected(&h, &home, value);
            std::fs::create_dir_all(&folder).unwrap();
            let env: Vec<(&str, &str)> = value.map(|v| (h.home.var, v)).into_iter().collect();
            let lookup = |k: &str| {
                env.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| (*v).to_owned())
            };
            let why = format!("{name}: {} = {value:?}", h.home.var);
            // The declaration.
            assert_eq!(h.home.resolve(&lookup, &home), folder, "{why}");
            // The layout's default roots are in that folder.
            let layout = adapters.by_name(name).unwrap().layout();
            for root in layout.map_or(Vec::new(), |l| l.default_roots(&lookup, &home)) {
                assert!(root.starts_with(&folder), "{why}: {}", root.display());
            }
            // The install edits the settings file in it.
            let said = dry_run(&home, &["--agent", name], &env);
            assert_eq!(said.len(), 1, "{why}");
            assert_eq!(said[0].2, settings_in(&h, &folder), "{why}");
            // The hook caller reads Claude Code's variable by the same rule.
            if h.home.var == transcope_caller::claudepath::CLAUDE_CONFIG_DIR_VAR {
                let mut env = transcope_core::Env::new();
                env.insert("HOME".into(), home.display().to_string());
                if let Some(v) = value {
                    env.insert(h.home.var.into(), v.into());
                }
                assert_eq!(
                    transcope_caller::claudepath::config_dir(&env),
                    Some(folder.clone()),
                    "{why}"
                );
            }
        }
    }
    // The caller's variable is one an adapter declares.
    assert!(vars.contains(&transcope_caller::claudepath::CLAUDE_CONFIG_DIR_VAR));
}

/// `crates/pricing`'s tests match names with the providers of the shipped agents
/// (`PROVIDERS` there): the registry declares them, in that order (a further agent's
/// provider may follow; nothing here names it).
#[test]
fn the_providers_the_pricing_tests_assume_are_declared() {
    let providers = transcope::compose::adapters().pricing_providers();
    let assumed = ["anthropic", "openai", "gemini"];
    let declared: Vec<&str> = providers
        .iter()
        .copied()
        .filter(|p| assumed.contains(p))
        .collect();
    assert_eq!(declared, assumed);
}

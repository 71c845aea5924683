//! The stage compliance kit on change detection, against a real scope log in a
//! temporary folder: read in two pieces split at any entry, with the checkpoint the
//! first read leaves restored into a fresh stage, it writes the same log bytes and
//! counts the same outcome as one pass — times that go backwards, folders without a
//! project, folders whose project cannot be resolved, and a log that already holds a
//! launch scope included.

use std::borrow::Cow;

use transcope_change_detect::{ChangeDetect, Env, Outcome, ProjectResolver};
use transcope_core::{Entry, Scope, ScopeField, TimeValue};
use transcope_identity::{ProjectIdentity, ResolveError};
use transcope_scopelog::ScopeLog;
use transcope_testkit::compliance::{check_stage, fixture_entries, Check, StageHarness};
use transcope_testkit::{testdata, Rng};

/// `/w/0` and `/w/1` are one project's worktrees, `/w/bad` cannot be resolved,
/// anything else has no project.
#[derive(Clone, Copy, Default)]
struct Projects;

impl ProjectResolver for Projects {
    fn resolve(&mut self, folder: &str, _: &Env) -> Result<Option<ProjectIdentity>, ResolveError> {
        match folder {
            "/w/0" | "/w/1" => {
                let mut p = ProjectIdentity::new("alpha", "fixture/alpha");
                p.worktree = folder.trim_start_matches("/w/").into();
                p.cwd = folder.into();
                p.project_id = "github.com/fixture/alpha".into();
                Ok(Some(p))
            }
            "/w/bad" => Err(ResolveError::InvalidProjectId {
                id: "bad id".into(),
            }),
            _ => Ok(None),
        }
    }
}

/// One run's scope log, in its own folder.
struct World {
    _home: tempfile::TempDir,
    log: ScopeLog,
    env: Env,
}

/// What a run did: the log's bytes and the outcomes of its reads added up.
#[derive(Debug, Default, PartialEq)]
struct Produced {
    /// The log's rows, as written.
    log: Vec<String>,
    recorded: u64,
    entries: u64,
    refused: u64,
    io_errors: u64,
    resolve_errors: u64,
    seen: Option<(String, String)>,
}

/// Change detection over a fresh log, or one whose session start already recorded a
/// launch scope (`launch`).
struct Scopes {
    launch: Option<(&'static str, &'static str)>,
}

impl StageHarness for Scopes {
    type World = World;
    type Stage<'w> = ChangeDetect<'w, Projects>;
    type Output = Produced;

    fn world(&mut self) -> World {
        let home = tempfile::tempdir().unwrap();
        let log = ScopeLog::open(home.path(), "compliance-session");
        if let Some((cwd, at)) = self.launch {
            let scope = Scope::default().with(ScopeField::Cwd, cwd);
            log.record(&scope, at, None).unwrap().unwrap();
        }
        let mut env = Env::new();
        env.insert("AGENTIHOOKS_SWARM".into(), "fixture".into());
        env.insert("AGENTIHOOKS_SWARM_TASK".into(), "first".into());
        World {
            _home: home,
            log,
            env,
        }
    }

    fn build<'w>(&mut self, w: &'w World) -> ChangeDetect<'w, Projects> {
        ChangeDetect::begin(&w.log, &w.env, Projects)
    }

    fn collect<'w>(&mut self, w: &'w World, stage: ChangeDetect<'w, Projects>, out: &mut Produced) {
        let o: Outcome = stage.into_outcome();
        out.recorded += o.recorded;
        out.entries += o.entries;
        out.refused += o.refused;
        out.io_errors += o.io_errors;
        out.resolve_errors += o.resolve_errors;
        out.seen = o.seen.map(|s| (s.cwd.to_string(), s.branch.to_string()));
        let path = w.log.path().unwrap();
        let bytes = std::fs::read(path).unwrap_or_default();
        out.log = String::from_utf8(bytes)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
    }
}

/// Entries whose folders, branches and times wander: times go backwards, some are
/// missing or not timestamps, some folders have no project or a broken one.
fn wandering(seed: u64, n: u64) -> Vec<Entry<'static>> {
    let mut rng = Rng::new(seed);
    let mut m: u64 = 600;
    (0..n)
        .map(|_| {
            m = if rng.chance(0.25) {
                m.saturating_sub(rng.below(30))
            } else {
                m + rng.below(20)
            };
            let time = match rng.below(10) {
                0 => TimeValue::Missing,
                1 => TimeValue::Str(Cow::Borrowed("not a time")),
                2 => TimeValue::Other(Cow::Borrowed("17")),
                _ => TimeValue::Str(Cow::Owned(format!(
                    "2026-10-08T{:02}:{:02}:00Z",
                    m / 60 % 24,
                    m % 60
                ))),
            };
            let cwd = ["/w/0", "/w/1", "/w/2", "/w/bad", ""][rng.below(5) as usize];
            let branch = ["main", "", "topic"][rng.below(3) as usize];
            Entry {
                time,
                cwd: (!cwd.is_empty() || rng.chance(0.5)).then(|| Cow::Owned(cwd.to_owned())),
                branch: (!branch.is_empty()).then(|| Cow::Owned(branch.to_owned())),
                ..Entry::default()
            }
        })
        .collect()
}

#[test]
fn change_detect_split_anywhere_writes_one_pass_log() {
    for seed in 0..4 {
        let entries = wandering(0x5eed_c0de + seed, 50);
        let report = check_stage(&mut Scopes { launch: None }, &entries).unwrap();
        assert_eq!(report.boundaries, 51);
    }
}

/// The log already holds a row (session start's launch scope) before the transcript
/// is read: the first read starts after it, a resumed one from the checkpoint.
#[test]
fn change_detect_over_a_launch_scope_split_anywhere_writes_one_pass_log() {
    let entries = wandering(0x5eed_1a0c, 50);
    let launch = Some(("/w/2", "2026-10-08T10:10:00Z"));
    check_stage(&mut Scopes { launch }, &entries).unwrap();
}

/// Real transcripts of every adapter, as their adapters decode them.
#[test]
fn change_detect_on_real_transcripts() {
    for rel in [
        "fixtures/session-scope.transcript.jsonl",
        "sample-archive/claude/projects/-work-alpha-one/0f0e0d0c-0000-4000-8000-000000000001.jsonl",
        "public/claude/handgemacht-ai__claude-code-log__edge_cases.jsonl",
        "public/codex/lanegrid__agtrace__rollout-2025-12-10T04-55-16-019b04ae-b1c6-7c72-a134-a4c2de66058c.jsonl",
        "codex-legacy/rollout-2025-08-20T09-15-00-1b7c2e44-0d1f-4e55-9a8b-6c2f0e3d4a5b.jsonl",
        "public/gemini/home/.gemini/tmp/demo-app/chats/session-2026-05-01T10-00-5f1c9a2e.jsonl",
    ] {
        let entries = fixture_entries(&testdata(rel)).unwrap();
        assert!(entries.iter().any(|e| e.cwd.is_some()), "{rel}: no folders");
        check_stage(&mut Scopes { launch: None }, &entries).unwrap();
    }
}

/// The kit can fail: a harness that loses the first read's output is caught.
#[test]
fn the_kit_catches_a_lost_output() {
    struct Forgetful(Scopes);
    impl StageHarness for Forgetful {
        type World = World;
        type Stage<'w> = ChangeDetect<'w, Projects>;
        type Output = Produced;
        fn world(&mut self) -> World {
            self.0.world()
        }
        fn build<'w>(&mut self, w: &'w World) -> ChangeDetect<'w, Projects> {
            self.0.build(w)
        }
        fn collect<'w>(&mut self, w: &'w World, s: ChangeDetect<'w, Projects>, out: &mut Produced) {
            // Counts only the last read's transitions.
            let before = std::mem::take(out);
            self.0.collect(w, s, out);
            out.entries += before.entries;
        }
    }
    let entries = wandering(7, 20);
    let err = check_stage(&mut Forgetful(Scopes { launch: None }), &entries).unwrap_err();
    assert_eq!(err.check, Check::StagePieces, "{err}");
}

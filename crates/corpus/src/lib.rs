//! # transcope-corpus: a deterministic corpus of agent transcripts
//!
//! [`generate`] writes, under one output folder, a corpus of Claude Code and Codex CLI
//! transcripts laid out exactly like `~/.claude/projects/…` and `~/.codex/sessions/YYYY/MM/DD/…`,
//! and, when [`CorpusSpec::gemini_share`], [`CorpusSpec::qwen_share`] and
//! [`CorpusSpec::copilot_share`] ask for them, Gemini CLI sessions laid out as under
//! `~/.gemini/tmp/…`, Qwen Code sessions as under `~/.qwen/projects/…` and GitHub Copilot
//! CLI sessions as under `~/.copilot/session-state/…`, plus the real git repositories (and linked worktrees, and plain
//! folders) that the transcripts' `cwd`s point at. The same [`CorpusSpec`] always gives
//! byte-identical files, whatever the number of threads. A [`Manifest`] (also written as
//! `manifest.json`) lists every file with the counts the generator knows: lines, invalid and
//! torn lines, folder/branch switches, brain markers, out-of-order timestamps ([`FileEntry`]),
//! and every folder ([`RepoEntry`]).
//!
//! ```text
//! OUT/
//!   manifest.json
//!   repos/<name>/.git …                 main checkouts (origin https://github.com/gen/<name>.git)
//!   repos/<name>--wt-…/.git             sibling linked worktrees (gitfile)
//!   repos/<name>/.claude/worktrees/agent-<8 hex>/.git   Claude agent worktrees
//!   repos/scratch/ …                    plain folders, not repositories
//!   claude/projects/<encoded-cwd>/<sessionId>.jsonl
//!   claude/projects/<encoded-cwd>/agent-<8 hex>.jsonl                  (2.0.x flat sub-agents)
//!   claude/projects/<encoded-cwd>/<sessionId>/subagents/agent-<id>.jsonl (+ .meta.json)
//!   claude/projects/<encoded-cwd>/<sessionId>/subagents/workflows/<run>/{agent-<id>.jsonl,journal.jsonl}
//!   codex/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<uuid>.jsonl  (envelope and legacy)
//!   codex/sessions/rollout-….jsonl                                      (a few early legacy files)
//!   gemini/.gemini/projects.json                                        (Gemini CLI's home:
//!   gemini/.gemini/tmp/<short id>/{.project_root,chats/session-….jsonl}  GEMINI_CLI_HOME=OUT/gemini)
//!   gemini/.gemini/tmp/<short id>/chats/session-….json                  (0.29–0.38 documents)
//!   gemini/.gemini/tmp/<sha256 of the folder>/chats/session-….json      (before 0.29)
//!   gemini/.gemini/tmp/<id>/chats/<parent sessionId>/<sessionId>.json[l] (sub-agents)
//!   qwen/.qwen/projects/<sanitised cwd>/chats/<sessionId>.jsonl         (Qwen Code's home:
//!   qwen/.qwen/projects/<sanitised cwd>/subagents/<sessionId>/agent-<id>.jsonl (+ .meta.json)
//!                                                                       HOME=OUT/qwen)
//!   copilot/.copilot/session-state/<sessionId>/events.jsonl             (Copilot CLI's home:
//!   copilot/.copilot/session-state/<sessionId>.jsonl  (early builds)    HOME=OUT/copilot)
//! ```
//!
//! An agent a share asks for is one entry of a list (`SHARED` in the source: its plan,
//! drawn from a stream of its own, so a share of 0 leaves the corpus byte-identical to
//! one generated without that agent) and a module writing its sessions.
//!
//! The binary `transcope-corpus` wraps [`generate`]; [`single_transcript`] writes one large
//! Claude transcript for benchmarks; [`parse_size`] reads sizes like `150MB` or `512KiB`;
//! [`git_repo`] writes one repository the way the corpus's are; [`Rng`] is the generator's
//! pseudo-random stream, stable across platforms and versions.
//!
//! # Example
//!
//! ```
//! use transcope_corpus::{generate, CorpusSpec, FileKind};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let spec = CorpusSpec::new(7, 300_000);
//! let manifest = generate(&spec, dir.path()).unwrap();
//! assert!(manifest.bytes >= 300_000);
//! assert!(manifest.entries.iter().any(|f| f.kind == FileKind::ClaudeSession));
//! assert!(dir.path().join("manifest.json").is_file());
//!
//! // Gemini CLI sessions only, where the CLI keeps them under its home.
//! let dir = tempfile::tempdir().unwrap();
//! let mut spec = CorpusSpec::new(7, 200_000);
//! spec.gemini_share = 1.0;
//! let manifest = generate(&spec, dir.path()).unwrap();
//! assert!(manifest.entries.iter().all(|f| f.path.starts_with("gemini/.gemini/tmp/")));
//! assert!(dir.path().join("gemini/.gemini/projects.json").is_file());
//!
//! // Every agent side by side.
//! let dir = tempfile::tempdir().unwrap();
//! let mut spec = CorpusSpec::new(7, 3_000_000);
//! (spec.gemini_share, spec.qwen_share, spec.copilot_share) = (0.2, 0.3, 0.4);
//! let manifest = generate(&spec, dir.path()).unwrap();
//! for kind in [FileKind::ClaudeSession, FileKind::CodexRollout, FileKind::GeminiSession,
//!              FileKind::QwenSession, FileKind::CopilotSession] {
//!     assert!(manifest.of_kind(kind).next().is_some(), "{kind:?}");
//! }
//! ```
#![warn(missing_docs)]

mod claude;
mod clock;
mod codex;
mod copilot;
mod gemini;
mod git;
mod json;
mod opencode;
mod qwen;
mod rng;
pub use rng::Rng;
mod sink;
mod text;
mod world;

pub use opencode::Expected as OpenCodeExpected;

use std::fs;
use std::io;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::claude::{Env, Era, Force, SessionResult};
use crate::gemini::Projects;
use crate::rng::derive;
use crate::text::TextPool;
use crate::world::World;

pub use crate::world::encode_cwd;

/// What to generate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CorpusSpec {
    /// Seed of every random choice.
    pub seed: u64,
    /// Total bytes of transcript files (everything under `claude/`, `codex/`, `gemini/`,
    /// `qwen/` and `copilot/` but Gemini CLI's records of folders). Generation
    /// stops at the first line that reaches it, so the corpus is at least this large and at most
    /// one line larger.
    pub target_bytes: u64,
    /// Probability that a session that is not another agent's (Gemini CLI's, Qwen Code's,
    /// Copilot CLI's) is a Codex rollout rather than a Claude session (0–1).
    pub codex_share: f64,
    /// Probability that a session is a Gemini CLI session (0–1). 0, the default, writes no
    /// `gemini/` folder and leaves every other file as it was before Gemini sessions were
    /// generated (a seed's corpus is the same as ever); above 0, the sessions chosen for
    /// Gemini leave every other session as it would be, and the first few cover its
    /// layouts.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub gemini_share: f64,
    /// Probability that a session that is not Gemini CLI's is a Qwen Code session (0–1),
    /// under `qwen/.qwen/projects/…`. 0, the default, writes none and leaves every other
    /// file as without it, as for [`CorpusSpec::gemini_share`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub qwen_share: f64,
    /// Probability that a session that is neither Gemini CLI's nor Qwen Code's is a GitHub
    /// Copilot CLI session (0–1), under `copilot/.copilot/session-state/…`. 0, the
    /// default, writes none and leaves every other file as without it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub copilot_share: f64,
    /// Of the Codex sessions, the share written in the legacy (pre-envelope) format.
    pub legacy_share: f64,
    /// OpenCode sessions written to a database (`opencode/`, its expectations in
    /// `opencode/sessions.json`: [`OpenCodeExpected`]), as a share of the number of
    /// the other sessions (above 1: more than they). 0, the default, writes none and changes nothing else.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub opencode_share: f64,
    /// Number of git repositories to create under `repos/` (plus about a quarter as many plain
    /// folders).
    pub repos: usize,
    /// Largest tool output in bytes (before JSON escaping). Sizes are log-normal (median 600 B).
    pub max_tool_output: usize,
}

impl CorpusSpec {
    /// A spec with the default shape: 20% Codex (8% of it legacy), no Gemini CLI, 16
    /// repositories, 1 MiB largest tool output.
    pub fn new(seed: u64, target_bytes: u64) -> Self {
        CorpusSpec {
            seed,
            target_bytes,
            codex_share: 0.2,
            gemini_share: 0.0,
            qwen_share: 0.0,
            copilot_share: 0.0,
            legacy_share: 0.08,
            opencode_share: 0.0,
            repos: 16,
            max_tool_output: 1 << 20,
        }
    }
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// What kind of transcript file an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// `claude/projects/<enc>/<sessionId>.jsonl` (may hold inline sidechain lines).
    ClaudeSession,
    /// `claude/projects/<enc>/<sessionId>/subagents/[workflows/<run>/]agent-<id>.jsonl`.
    ClaudeSubagent,
    /// `claude/projects/<enc>/agent-<8 hex>.jsonl` (Claude Code 2.0.x).
    ClaudeAgentFlat,
    /// `agent-<id>.meta.json` sidecar: one JSON object, no trailing newline.
    ClaudeAgentMeta,
    /// `subagents/workflows/<run>/journal.jsonl`.
    ClaudeWorkflowJournal,
    /// Codex envelope-format rollout.
    CodexRollout,
    /// Codex legacy (pre-envelope) rollout.
    CodexLegacy,
    /// Gemini CLI `tmp/<id>/chats/session-<…>.json` (a document, one record: `lines` is
    /// 1) or `.jsonl` (a log).
    GeminiSession,
    /// Gemini CLI `tmp/<id>/chats/<parent sessionId>/<sessionId>.json[l]`.
    GeminiSubagent,
    /// Qwen Code `projects/<folder>/chats/<sessionId>.jsonl`.
    QwenSession,
    /// Qwen Code `projects/<folder>/subagents/<sessionId>/agent-<agentId>.jsonl`.
    QwenSubagent,
    /// Its `agent-<agentId>.meta.json` sidecar: one JSON document, no trailing newline.
    QwenAgentMeta,
    /// Copilot CLI `session-state/<sessionId>/events.jsonl` (or, an early build's,
    /// `session-state/<sessionId>.jsonl`), sub-agents inside.
    CopilotSession,
}

/// Expectations for one generated file. Line numbers are 1-based.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Path relative to the corpus root, `/`-separated.
    pub path: String,
    /// The file's kind.
    pub kind: FileKind,
    /// Claude `sessionId` (the parent's for sub-agents), Codex session id, or Gemini CLI
    /// `sessionId` (the parent's for sub-agents).
    pub session_id: String,
    /// Claude `agentId` for agent files; a Gemini CLI sub-agent's own `sessionId`.
    pub agent_id: Option<String>,
    /// File size.
    pub bytes: u64,
    /// Number of lines, counting a torn last line.
    pub lines: u64,
    /// Complete lines that are not JSON objects (`5`, `[1]`, garbage, truncated JSON).
    pub invalid_lines: Vec<u64>,
    /// The file ends with a truncated line and no newline.
    pub torn_last_line: bool,
    /// Times a line's `cwd` differs from the previous line that carries one (Claude: top-level
    /// `cwd`; Codex: `session_meta.payload.cwd` then each `turn_context.payload.cwd`; legacy:
    /// the header `cwd` and the `<environment_context>`).
    pub cwd_switches: u64,
    /// Same for `gitBranch` (Claude only; Codex records the branch once in `session_meta`;
    /// Gemini CLI records one folder a session, the project's, and no branch).
    pub branch_switches: u64,
    /// Distinct cwds, in order of first appearance.
    pub cwds: Vec<String>,
    /// Distinct branches (`""` outside a repository, `"HEAD"` when detached), in order.
    pub branches: Vec<String>,
    /// Brain markers a spec-conforming extractor (scope-log §5.1) finds in assistant text
    /// (Claude `text` blocks of assistant lines, Codex assistant `output_text`, Gemini CLI
    /// `gemini` messages' text), counting each message once and extracting per message.
    pub markers: u64,
    /// Of those, markers with `share=fleet`.
    pub fleet_markers: u64,
    /// Opening tags of a known type that are never closed (yield nothing).
    pub unterminated_markers: u64,
    /// Extractable markers outside assistant text (user prompts, tool results echoing a
    /// sub-agent's answer, tool output): an assistant-text extractor must not report them.
    pub decoy_markers: u64,
    /// Codex: copies of assistant markers in `event_msg` `agent_message` and `task_complete`
    /// `last_agent_message`; Gemini CLI: in a log's record of a reply again, with its
    /// tokens (the same message; don't count twice).
    pub echoed_markers: u64,
    /// Lines whose top-level `timestamp` is earlier than the previous such line's.
    pub out_of_order_timestamps: u64,
}

/// The kind of a folder under `repos/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepoKind {
    /// A main checkout with a `.git` directory.
    Main,
    /// A linked worktree (`.git` is a gitfile).
    Worktree,
    /// A plain folder that is not in a repository.
    Plain,
}

/// One folder transcripts point at, with what git should answer there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoEntry {
    /// Absolute path.
    pub path: String,
    /// Main checkout, linked worktree or plain folder.
    pub kind: RepoKind,
    /// `git remote get-url origin`.
    pub origin: Option<String>,
    /// Checked-out branch (`None` when detached or not a repo).
    pub branch: Option<String>,
    /// `git rev-parse --show-toplevel`.
    pub toplevel: Option<String>,
    /// `git rev-parse --git-common-dir`, absolute.
    pub common_dir: Option<String>,
    /// The main checkout this folder belongs to.
    pub main_checkout: Option<String>,
    /// The single root commit (`git rev-list --max-parents=0 HEAD`).
    pub root_commit: Option<String>,
}

/// Everything the generator wrote, with per-file expectations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Manifest format version.
    pub format: u32,
    /// The spec that produced the corpus.
    pub spec: CorpusSpec,
    /// Absolute corpus root (paths in `entries` are relative to it).
    pub root: String,
    /// Sessions generated (a session is a main file plus its agent files, or a Codex rollout).
    pub sessions: u64,
    /// Number of transcript files (`entries.len()`).
    pub files: u64,
    /// Total bytes of transcript files.
    pub bytes: u64,
    /// Total lines of transcript files.
    pub lines: u64,
    /// Longest line (bytes, newline included).
    pub max_line_bytes: u64,
    /// Sum of `invalid_lines` over files.
    pub invalid_lines: u64,
    /// Files that end with a torn line.
    pub torn_lines: u64,
    /// Sum of `markers` over files.
    pub markers: u64,
    /// Sum of `cwd_switches` over files.
    pub cwd_switches: u64,
    /// Sum of `branch_switches` over files.
    pub branch_switches: u64,
    /// The folders under `repos/`.
    pub repos: Vec<RepoEntry>,
    /// Every transcript file, in generation order.
    pub entries: Vec<FileEntry>,
}

impl Manifest {
    /// Reads `DIR/manifest.json`.
    pub fn load(dir: &Path) -> io::Result<Manifest> {
        let f = fs::File::open(dir.join("manifest.json"))?;
        serde_json::from_reader(io::BufReader::new(f)).map_err(io::Error::other)
    }

    /// Entries of one kind.
    pub fn of_kind(&self, kind: FileKind) -> impl Iterator<Item = &FileEntry> {
        self.entries.iter().filter(move |e| e.kind == kind)
    }
}

/// Parses a size such as `150MB`, `1GB`, `1.5 GB`, `512KiB`, `4096` or `2M`.
///
/// `K`/`KB`, `M`/`MB`, `G`/`GB`, `T`/`TB` are decimal (powers of 1000); `KiB`, `MiB`, `GiB`,
/// `TiB` are binary. Units are case-insensitive; a bare number is bytes.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num.parse().ok()?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "t" | "tb" => 1_000_000_000_000,
        "ki" | "kib" => 1 << 10,
        "mi" | "mib" => 1 << 20,
        "gi" | "gib" => 1 << 30,
        "ti" | "tib" => 1 << 40,
        _ => return None,
    };
    let bytes = value * mult as f64;
    (0.0..1.8e19)
        .contains(&bytes)
        .then_some(bytes.round() as u64)
}

const DAY_MS: u64 = 86_400_000;
const CLAUDE_START: u64 = 1_751_328_000_000; // 2025-07-01
const CODEX_START: u64 = 1_757_894_400_000; // 2025-09-15
const LEGACY_START: u64 = 1_746_057_600_000; // 2025-05-01
const GEMINI_START: u64 = 1_752_537_600_000; // 2025-07-15
const GEMINI_LOG_START: u64 = 1_773_964_800_000; // 2026-03-20
const QWEN_START: u64 = 1_767_225_600_000; // 2026-01-01
const COPILOT_START: u64 = 1_761_955_200_000; // 2025-11-01
const COPILOT_EARLY_START: u64 = 1_756_684_800_000; // 2025-09-01

enum Plan {
    Claude {
        force: Force,
        lines: Option<u64>,
    },
    Codex {
        legacy: bool,
        quirks: bool,
    },
    Gemini {
        form: gemini::Form,
        subagent: bool,
        quirks: bool,
    },
    Qwen {
        subagent: bool,
        quirks: bool,
    },
    Copilot {
        early: bool,
        quirks: bool,
    },
}

/// Whether session `i` is an agent's that `share` asks for, drawn from the agent's own
/// stream (`tag`), so the sessions that are not keep the plan they have without it:
/// every session at a share of 1; else never one before `first` (the sessions that
/// cover the agents asked before it), always those in `first` (its own layouts), a
/// draw for the rest. The stream, to plan the session chosen with.
fn chosen(
    spec: &CorpusSpec,
    share: f64,
    tag: u64,
    first: RangeInclusive<u64>,
    i: u64,
) -> Option<Rng> {
    if share <= 0.0 {
        return None;
    }
    let mut rng = Rng::new(derive(spec.seed, tag, i));
    let yes = if share >= 1.0 {
        true
    } else if i < *first.start() {
        false
    } else {
        first.contains(&i) || rng.chance(share)
    };
    yes.then_some(rng)
}

/// The agents a share picks, asked in this order before Claude or Codex is drawn.
/// Sessions 6 to 8 cover Gemini CLI's layouts, 9 and 10 Qwen Code's, 11 and 12
/// Copilot CLI's (0 to 5 cover the other agents').
const SHARED: [PlanOf; 3] = [gemini_plan, qwen_plan, copilot_plan];

/// An agent's plan for session `i`, when the session is its: the plan, the session's
/// seed, its start (ms).
type PlanOf = fn(&CorpusSpec, u64) -> Option<(Plan, u64, u64)>;

/// The plan for session `i` when it is a Gemini CLI session.
fn gemini_plan(spec: &CorpusSpec, i: u64) -> Option<(Plan, u64, u64)> {
    let mut rng = chosen(spec, spec.gemini_share, 0x6e3, 6..=8, i)?;
    let session_seed = rng.next_u64();
    use gemini::Form;
    let (form, subagent, quirks) = match i {
        0 | 6 => (Form::Log, true, true),
        1 | 7 => (Form::HashDocument, false, false),
        2 | 8 => (Form::Document, true, false),
        _ => {
            let form = [Form::HashDocument, Form::Document, Form::Log][rng.weighted(&[25, 35, 40])];
            (form, false, false)
        }
    };
    let start = match form {
        Form::Log => GEMINI_LOG_START + rng.below(90 * DAY_MS),
        Form::HashDocument | Form::Document => GEMINI_START + rng.below(240 * DAY_MS),
    };
    Some((
        Plan::Gemini {
            form,
            subagent,
            quirks,
        },
        session_seed,
        start,
    ))
}

/// The plan for session `i` when it is a Qwen Code session: its first covers a
/// sub-agent and the quirks.
fn qwen_plan(spec: &CorpusSpec, i: u64) -> Option<(Plan, u64, u64)> {
    let mut rng = chosen(spec, spec.qwen_share, 0x9e7, 9..=10, i)?;
    let session_seed = rng.next_u64();
    let first = i == 0 || i == 9;
    let start = QWEN_START + rng.below(200 * DAY_MS);
    let plan = Plan::Qwen {
        subagent: first || i == 10,
        quirks: first,
    };
    Some((plan, session_seed, start))
}

/// The plan for session `i` when it is a Copilot CLI session: its first covers
/// resumes, a sub-agent and the quirks, its second an early build's flat file.
fn copilot_plan(spec: &CorpusSpec, i: u64) -> Option<(Plan, u64, u64)> {
    let mut rng = chosen(spec, spec.copilot_share, 0xc0b, 11..=12, i)?;
    let session_seed = rng.next_u64();
    let (early, quirks) = match i {
        0 | 11 => (false, true),
        1 | 12 => (true, false),
        _ => (rng.chance(0.03), false),
    };
    let start = if early {
        COPILOT_EARLY_START + rng.below(30 * DAY_MS)
    } else {
        COPILOT_START + rng.below(200 * DAY_MS)
    };
    Some((Plan::Copilot { early, quirks }, session_seed, start))
}

/// The plan for session `i`: the first sessions cover every layout, so even a 1 MB corpus holds
/// a `subagents/` file, a flat agent file, an inline sidechain, a Codex rollout and a legacy one
/// (only the agents that `codex_share` allows: none of Claude at 1.0, none of Codex at 0.0).
fn plan(spec: &CorpusSpec, i: u64) -> (Plan, u64, u64) {
    if let Some(p) = SHARED.iter().find_map(|plan| plan(spec, i)) {
        return p;
    }
    let mut rng = Rng::new(derive(spec.seed, 0x9a1, i));
    let session_seed = rng.next_u64();
    let codex = spec.codex_share > 0.0;
    let claude = spec.codex_share < 1.0;
    let forced = |era, quirks| Plan::Claude {
        force: Force {
            era: Some(era),
            agent: true,
            no_edge: true,
            quirks,
        },
        lines: Some(rng_lines(spec, i)),
    };
    let p = match i {
        0 if claude => forced(Era::V21New, true),
        1 if codex => Plan::Codex {
            legacy: false,
            quirks: true,
        },
        2 if claude => forced(Era::V20, false),
        3 if codex => Plan::Codex {
            legacy: true,
            quirks: false,
        },
        4 if claude => forced(Era::V10, false),
        5 if claude => forced(Era::V21, false),
        _ if rng.chance(spec.codex_share) => Plan::Codex {
            legacy: rng.chance(spec.legacy_share),
            quirks: false,
        },
        _ => Plan::Claude {
            force: Force::default(),
            lines: None,
        },
    };
    let start = match &p {
        Plan::Claude { .. } => CLAUDE_START + rng.below(300 * DAY_MS),
        Plan::Codex { legacy: false, .. } => CODEX_START + rng.below(225 * DAY_MS),
        Plan::Codex { legacy: true, .. } => LEGACY_START + rng.below(130 * DAY_MS),
        Plan::Gemini { .. } | Plan::Qwen { .. } | Plan::Copilot { .. } => {
            unreachable!("planned by SHARED")
        }
    };
    (p, session_seed, start)
}

fn rng_lines(spec: &CorpusSpec, i: u64) -> u64 {
    20 + Rng::new(derive(spec.seed, 0x11e5, i)).below(40)
}

fn run_session(
    env: &Env<'_>,
    projects: &Projects,
    spec: &CorpusSpec,
    tz_offset_ms: i64,
    i: u64,
    budget: Option<u64>,
) -> io::Result<SessionResult> {
    let (p, seed, start_ms) = plan(spec, i);
    match p {
        Plan::Claude { force, lines } => claude::session(
            env,
            seed,
            claude::Opts {
                budget,
                start_ms,
                force,
                target_lines: lines,
                single_file: None,
                switch_at: Vec::new(),
            },
        ),
        Plan::Codex { legacy, quirks } => codex::session(
            env,
            seed,
            codex::Opts {
                budget,
                start_ms,
                legacy,
                tz_offset_ms,
                quirks,
            },
        ),
        Plan::Gemini {
            form,
            subagent,
            quirks,
        } => gemini::session(
            env,
            projects,
            seed,
            gemini::Opts {
                budget,
                start_ms,
                form,
                subagent,
                quirks,
            },
        ),
        Plan::Qwen { subagent, quirks } => qwen::session(
            env,
            seed,
            qwen::Opts {
                budget,
                start_ms,
                subagent,
                quirks,
            },
        ),
        Plan::Copilot { early, quirks } => copilot::session(
            env,
            seed,
            copilot::Opts {
                budget,
                start_ms,
                early,
                quirks,
            },
        ),
    }
}

/// Removes the files of a discarded session and the folders that became empty.
fn discard(root: &Path, files: &[FileEntry]) -> io::Result<()> {
    for f in files {
        let p = root.join(&f.path);
        fs::remove_file(&p)?;
        let mut dir = p.parent();
        while let Some(d) = dir {
            if d == root || fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }
    Ok(())
}

/// Generates a corpus under `out` (created if missing; it must not already hold a corpus).
///
/// Sessions are generated in parallel; each depends only on the seed and its index, and the
/// session that crosses `target_bytes` is regenerated with a byte budget, so the output does not
/// depend on thread scheduling.
pub fn generate(spec: &CorpusSpec, out: &Path) -> io::Result<Manifest> {
    fs::create_dir_all(out)?;
    let root: PathBuf = fs::canonicalize(out)?;
    for name in [
        "claude",
        "codex",
        gemini::HOME,
        qwen::HOME,
        copilot::HOME,
        "repos",
        "manifest.json",
    ] {
        if root.join(name).exists() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} already holds a corpus ({name})", root.display()),
            ));
        }
    }
    let world = World::build(&root.join("repos"), spec.seed, spec.repos, true)?;
    let projects = Projects::new(&world);
    let pool = TextPool::new(spec.seed, spec.max_tool_output);
    let env = Env {
        root: &root,
        world: &world,
        pool: &pool,
        max_tool_output: spec.max_tool_output,
    };
    let tz_offset_ms = {
        let hours = [-8i64, -5, 0, 1, 2, 9];
        hours[Rng::new(derive(spec.seed, 0x7a, 0)).index(hours.len())] * 3_600_000
    };

    let mut entries: Vec<FileEntry> = Vec::new();
    let mut total = 0u64;
    let mut max_line = 0u64;
    let mut next = 0u64;
    let mut sessions = 0u64;
    // Running estimate of a session's size, used only to size batches.
    let mut avg = 400_000u64;
    let workers = rayon::current_num_threads().max(1) as u64;
    'outer: while total < spec.target_bytes {
        let remaining = spec.target_bytes - total;
        let n = (remaining / avg.max(1)).clamp(1, 4 * workers);
        let batch: Vec<io::Result<SessionResult>> = (next..next + n)
            .into_par_iter()
            .map(|i| run_session(&env, &projects, spec, tz_offset_ms, i, None))
            .collect();
        let mut batch: Vec<SessionResult> = batch.into_iter().collect::<io::Result<_>>()?;
        for k in 0..batch.len() {
            let i = next + k as u64;
            let r = &batch[k];
            if total + r.bytes < spec.target_bytes {
                total += r.bytes;
                max_line = max_line.max(r.max_line);
                sessions += 1;
                avg = (avg * 7 + r.bytes.max(1_000)) / 8;
                entries.append(&mut batch[k].files);
                continue;
            }
            // Session i crosses the target: drop it and everything after it, then regenerate
            // it with the exact remaining budget (its lines are a prefix of the full session).
            for later in &batch[k..] {
                discard(&root, &later.files)?;
            }
            let mut r = run_session(
                &env,
                &projects,
                spec,
                tz_offset_ms,
                i,
                Some(spec.target_bytes - total),
            )?;
            total += r.bytes;
            max_line = max_line.max(r.max_line);
            sessions += 1;
            entries.append(&mut r.files);
            break 'outer;
        }
        next += n;
    }

    gemini::write_records(&root, &projects, &entries)?;
    let opencode = (sessions as f64 * spec.opencode_share).round() as u64;
    opencode::write_sessions(&root, &world, spec.seed, opencode)?;

    let manifest = Manifest {
        format: 1,
        spec: spec.clone(),
        root: root.to_string_lossy().into_owned(),
        sessions,
        files: entries.len() as u64,
        bytes: total,
        lines: entries.iter().map(|e| e.lines).sum(),
        max_line_bytes: max_line,
        invalid_lines: entries.iter().map(|e| e.invalid_lines.len() as u64).sum(),
        torn_lines: entries.iter().filter(|e| e.torn_last_line).count() as u64,
        markers: entries.iter().map(|e| e.markers).sum(),
        cwd_switches: entries.iter().map(|e| e.cwd_switches).sum(),
        branch_switches: entries.iter().map(|e| e.branch_switches).sum(),
        repos: world.entries.clone(),
        entries,
    };
    let f = fs::File::create(root.join("manifest.json"))?;
    let mut w = io::BufWriter::new(f);
    serde_json::to_writer_pretty(&mut w, &manifest).map_err(io::Error::other)?;
    io::Write::write_all(&mut w, b"\n")?;
    io::Write::flush(&mut w)?;
    Ok(manifest)
}

/// A git repository at `root` (created), written without the git CLI the way the
/// corpus's repositories are: one commit on `branch`, checked out, with `origin` as its
/// origin remote. For tests that need a folder with a project identity.
pub fn git_repo(root: &Path, origin: &str, branch: &str) -> io::Result<()> {
    git::create_repo(&git::RepoSpec {
        root,
        origin,
        head_branch: branch,
        branches: &[],
        readme: "# fixture\n",
        commit_time: 1_700_000_000,
    })
    .map(|_| ())
}

/// Writes one large Claude Code transcript (2.1.x shape, no sub-agent files) of at least
/// `target_bytes` to `path`, with four folder/branch switches spread evenly through it.
///
/// The `cwd`s are under `/home/dev/src` and are not created. Returns the file's expectations
/// (its `path` is `path` as given).
pub fn single_transcript(path: &Path, target_bytes: u64, seed: u64) -> io::Result<FileEntry> {
    let world = World::build(Path::new("/home/dev/src"), seed, 4, false)?;
    let pool = TextPool::new(seed, 1 << 20);
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?
        .to_string_lossy()
        .into_owned();
    let env = Env {
        root: &parent,
        world: &world,
        pool: &pool,
        max_tool_output: 1 << 20,
    };
    let r = claude::session(
        &env,
        derive(seed, 0x51, 0),
        claude::Opts {
            budget: Some(target_bytes.max(1)),
            start_ms: CLAUDE_START,
            force: Force {
                era: Some(Era::V21New),
                agent: false,
                no_edge: true,
                quirks: false,
            },
            target_lines: Some(u64::MAX),
            single_file: Some(name),
            switch_at: (1..=4).map(|k| target_bytes / 5 * k).collect(),
        },
    )?;
    let mut entry = r
        .files
        .into_iter()
        .next()
        .ok_or_else(|| io::Error::other("no transcript written"))?;
    entry.path = path.to_string_lossy().into_owned();
    Ok(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes() {
        assert_eq!(parse_size("150MB"), Some(150_000_000));
        assert_eq!(parse_size("1GB"), Some(1_000_000_000));
        assert_eq!(parse_size("512KiB"), Some(524_288));
        assert_eq!(parse_size("1.5 GiB"), Some(1_610_612_736));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("10gb"), Some(10_000_000_000));
        assert_eq!(parse_size("2M"), Some(2_000_000));
        assert_eq!(parse_size("MB"), None);
        assert_eq!(parse_size("12XB"), None);
        assert_eq!(parse_size(""), None);
    }
}

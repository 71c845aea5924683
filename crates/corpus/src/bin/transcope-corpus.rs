//! `transcope-corpus`: writes a deterministic corpus of Claude Code, Codex CLI and (with
//! `--gemini-share`, `--qwen-share`, `--copilot-share`) Gemini CLI, Qwen Code and GitHub
//! Copilot CLI transcripts, plus the git repositories they point at, for tests and
//! benchmarks.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Parser;
use transcope_corpus::{generate, parse_size, single_transcript, CorpusSpec};

/// Generate a deterministic transcript corpus.
#[derive(Parser, Debug)]
#[command(name = "transcope-corpus", version, about)]
struct Args {
    /// Output folder (created; must not already hold a corpus unless --force).
    #[arg(long, required_unless_present = "single")]
    out: Option<PathBuf>,
    /// Total transcript bytes, e.g. 150MB, 1GB, 512KiB (decimal K/M/G, binary Ki/Mi/Gi).
    #[arg(long, default_value = "150MB")]
    size: String,
    /// Seed; the same arguments always give byte-identical files.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Share of the sessions that are no other agent's (Gemini CLI's, Qwen Code's, Copilot
    /// CLI's) that are Codex rollouts (0–1).
    #[arg(long, default_value_t = 0.2)]
    codex_share: f64,
    /// Share of sessions that are Gemini CLI sessions (0–1; 0 writes none, and every
    /// other file as without this option).
    #[arg(long, default_value_t = 0.0)]
    gemini_share: f64,
    /// Share of sessions not Gemini CLI's that are Qwen Code sessions (0–1; 0 writes
    /// none, and every other file as without this option; 1: Qwen Code's only).
    #[arg(long, default_value_t = 0.0)]
    qwen_share: f64,
    /// Share of sessions neither Gemini CLI's nor Qwen Code's that are GitHub Copilot
    /// CLI sessions (0–1; 0 writes none, and every other file as without this option).
    #[arg(long, default_value_t = 0.0)]
    copilot_share: f64,
    /// Share of Codex sessions in the legacy (pre-envelope) format (0–1).
    #[arg(long, default_value_t = 0.08)]
    legacy_share: f64,
    /// OpenCode sessions in a database under OUT/opencode, as a share of the number of
    /// the other sessions (0 writes none).
    #[arg(long, default_value_t = 0.0)]
    opencode_share: f64,
    /// Number of git repositories to create under OUT/repos.
    #[arg(long, default_value_t = 16)]
    repos: usize,
    /// Largest tool output, e.g. 1MB.
    #[arg(long, default_value = "1MiB")]
    max_tool_output: String,
    /// Remove OUT/{claude,codex,gemini,qwen,copilot,repos,manifest.json} first.
    #[arg(long)]
    force: bool,
    /// Instead of a corpus, write ONE Claude transcript of --size bytes to this file.
    #[arg(long, value_name = "FILE", conflicts_with = "force")]
    single: Option<PathBuf>,
    /// Number of worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let size = parse_size(&args.size).with_context(|| format!("bad --size {:?}", args.size))?;
    let max_tool_output = parse_size(&args.max_tool_output)
        .with_context(|| format!("bad --max-tool-output {:?}", args.max_tool_output))?;
    if [
        args.codex_share,
        args.gemini_share,
        args.qwen_share,
        args.copilot_share,
        args.legacy_share,
    ]
    .iter()
    .any(|s| !(0.0..=1.0).contains(s))
    {
        bail!("--codex-share, --gemini-share, --qwen-share, --copilot-share and --legacy-share must be within 0..=1");
    }
    if let Some(n) = args.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
            .context("configuring threads")?;
    }
    let started = Instant::now();
    if let Some(file) = &args.single {
        let e = single_transcript(file, size, args.seed)
            .with_context(|| format!("writing {}", file.display()))?;
        eprintln!(
            "wrote {} ({} bytes, {} lines, {} cwd switches) in {:.2}s",
            e.path,
            e.bytes,
            e.lines,
            e.cwd_switches,
            started.elapsed().as_secs_f64()
        );
        return Ok(());
    }
    let Some(out) = args.out else {
        bail!("--out is required");
    };
    if args.force {
        for name in ["claude", "codex", "gemini", "qwen", "copilot", "repos"] {
            let p = out.join(name);
            if p.exists() {
                std::fs::remove_dir_all(&p).with_context(|| format!("removing {}", p.display()))?;
            }
        }
        let m = out.join("manifest.json");
        if m.exists() {
            std::fs::remove_file(&m)?;
        }
    }
    let spec = CorpusSpec {
        seed: args.seed,
        target_bytes: size,
        codex_share: args.codex_share,
        gemini_share: args.gemini_share,
        qwen_share: args.qwen_share,
        copilot_share: args.copilot_share,
        legacy_share: args.legacy_share,
        opencode_share: args.opencode_share,
        repos: args.repos,
        max_tool_output: usize::try_from(max_tool_output).context("--max-tool-output too large")?,
    };
    let m = generate(&spec, &out).with_context(|| format!("generating into {}", out.display()))?;
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "wrote {} files ({} sessions), {} bytes, {} lines, {} repo folders in {:.2}s ({:.0} MB/s) -> {}",
        m.files,
        m.sessions,
        m.bytes,
        m.lines,
        m.repos.len(),
        secs,
        m.bytes as f64 / 1e6 / secs.max(1e-9),
        m.root
    );
    Ok(())
}

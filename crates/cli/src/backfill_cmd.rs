//! `transcope backfill`: archived transcripts through the stages a Stop runs (scope
//! transitions, markers, usage), in parallel.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use transcope_backfill::{backfill_iter, walk, MarkersOut, Shard};

use crate::table::count;
use crate::transcript_cmd::process_env;
use crate::{exit, println_out};

#[derive(Args, Debug)]
pub struct BackfillArgs {
    /// Folders (Claude projects, Codex sessions, Gemini CLI's tmp folder) or single
    /// transcripts [default: $CLAUDE_CONFIG_DIR/projects (else ~/.claude/projects),
    /// $CODEX_HOME/sessions (else ~/.codex/sessions) and $GEMINI_CLI_HOME/.gemini/tmp
    /// (else ~/.gemini/tmp)].
    paths: Vec<PathBuf>,
    /// Worker threads, at most 256 [default: one per core].
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new()
            .range(1..=transcope_backfill::MAX_JOBS as u64)
    )]
    jobs: Option<usize>,
    /// Print a JSON summary on stdout.
    #[arg(long)]
    json: bool,
    /// Do not extract markers.
    #[arg(long, conflicts_with_all = ["markers_out", "deliver"])]
    no_markers: bool,
    /// Also append each marker new to FILE (request body, `at`, idempotency key; NDJSON).
    #[arg(long, value_name = "FILE")]
    markers_out: Option<PathBuf>,
    /// Deliver the ledger's pending markers when done (HTTP when BRAIN_URL is set, else
    /// the outbox). By default markers are only recorded in the ledger.
    #[arg(long)]
    deliver: bool,
    /// Do not read token usage.
    #[arg(long)]
    no_usage: bool,
    /// Do not keep the index (for measuring what it costs; markers are then only
    /// counted, or written to --markers-out).
    #[arg(long, conflicts_with = "deliver", hide = true)]
    no_index: bool,
    /// Memory-map files of 64 KiB or more that have not changed for five minutes
    /// (default: read every file through one reusable buffer).
    #[arg(long)]
    mmap: bool,
    /// Read only shard K of N (0 ≤ K < N): the sessions whose family's root session (a
    /// sub-agent's parent, a Codex fork's source) hashes to K. N runs over one archive,
    /// each in its own home, write what one run writes; the other shards' files are
    /// counted (`other_shards`), not read past the head that names them.
    #[arg(long, value_name = "K/N")]
    shard: Option<Shard>,
    /// Do not keep the files read in the archive (`TRANSCOPE_ARCHIVE=off` turns it off
    /// everywhere).
    #[arg(long)]
    no_archive: bool,
    /// Also read the archived copy of every transcript whose original is gone (the
    /// agents deleted it), as that transcript.
    #[arg(long)]
    from_archive: bool,
}

/// The counts a progress bar shows. Workers finish files concurrently and report in
/// any order (a worker that finished the 3rd file may report after the one that
/// finished the 4th): only counts larger than those shown are shown, so the bar never
/// goes back.
#[derive(Default)]
struct Shown(std::sync::Mutex<(u64, u64)>);

impl Shown {
    /// A report of `files` done and `bytes` read: the counts to show now, if larger.
    fn advance(&self, files: u64, bytes: u64) -> (Option<u64>, Option<u64>) {
        let mut s = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let files = (files > s.0).then(|| {
            s.0 = files;
            files
        });
        let bytes = (bytes > s.1).then(|| {
            s.1 = bytes;
            bytes
        });
        (files, bytes)
    }
}

pub fn run_backfill(home: &Path, args: BackfillArgs) -> Result<u8> {
    let full = process_env();
    let mut opts = crate::sync::options(home, &full)?;
    let paths = if args.paths.is_empty() {
        let found = crate::sources::default_paths(&full, opts.pipeline.registry());
        if found.is_empty() {
            say!(
                "no archive here: none of {} exists; name a folder or transcript to read",
                crate::sources::default_roots(&full, opts.pipeline.registry())
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        found
    } else {
        args.paths.clone()
    };
    opts.jobs = args.jobs.unwrap_or(0);
    if args.mmap {
        opts.io = transcope_backfill::MAP_QUIET;
    }
    opts.index = !args.no_index;
    opts.usage = !args.no_usage;
    if args.no_archive {
        opts.archive = None;
    }
    // `0/1` is the whole archive: no head is read twice for it.
    opts.shard = args.shard.filter(|s| !s.is_whole());
    if opts.index && !args.paths.is_empty() {
        // Kept so `index rebuild` walks them again (the default folders it walks
        // anyway): each as named, with the folder it was named from.
        let named: Vec<PathBuf> = paths
            .iter()
            .filter(|p| std::fs::symlink_metadata(p).is_ok())
            .cloned()
            .collect();
        if let Ok(cwd) = std::env::current_dir() {
            if let Err(e) = transcope_index::recover::record_roots(home, &cwd, &named) {
                say!(
                    "{}: {e} (`index rebuild` will not know these paths)",
                    transcope_index::recover::roots_file(home).display()
                );
            }
        }
    }
    opts.markers = if args.no_markers {
        MarkersOut::Skip
    } else if let Some(f) = &args.markers_out {
        MarkersOut::Ndjson(f.clone())
    } else {
        MarkersOut::Ledger
    };
    // Files are streamed to the workers as they are found; only a progress bar needs
    // the totals first, from a walk that keeps nothing but two sums.
    let bar = std::io::stderr().is_terminal().then(|| {
        let (total_files, total_bytes) = walk(&paths, opts.pipeline.registry())
            .flatten()
            .fold((0u64, 0u64), |(n, b), j| (n + 1, b + j.size));
        let b = indicatif::ProgressBar::new(total_bytes);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {msg} {bytes}/{total_bytes} {bytes_per_sec} ETA {eta} {wide_bar}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        (b, total_files)
    });
    let shown = Shown::default();
    let progress = |files: u64, bytes: u64| {
        if let Some((b, total_files)) = &bar {
            let (files, bytes) = shown.advance(files, bytes);
            if let Some(bytes) = bytes {
                b.set_position(bytes);
            }
            if let Some(files) = files {
                // A shard's share of the archive is known only once each file is named.
                b.set_message(match opts.shard {
                    Some(shard) => format!("{files} files (shard {shard} of {total_files})"),
                    None => format!("{files}/{total_files} files"),
                });
            }
        }
    };
    let mut summary = backfill_iter(walk(&paths, opts.pipeline.registry()), &opts, &progress);
    if let Some((b, _)) = bar {
        b.finish_and_clear();
    }
    if args.from_archive {
        // The transcripts the agents deleted, read from the archive as themselves.
        let (from, _, failed) =
            crate::archive_cmd::read_gone(home, &mut opts, &|p: &Path| p.to_path_buf());
        for f in &failed {
            say!("not read from the archive: {f}");
        }
        summary.absorb(from);
        if !failed.is_empty() {
            summary.errors.push(transcope_backfill::Problem {
                path: crate::archive_cmd::view_dir(home),
                reason: format!("{} archived transcript(s) could not be read", failed.len()),
            });
        }
    }
    for p in &summary.errors {
        say!("{}: {}", p.path.display(), p.reason);
    }
    if summary.files == 0 && summary.errors.is_empty() && !paths.is_empty() {
        match args.shard {
            Some(shard) if summary.other_shards > 0 => say!(
                "none of the {} found is shard {shard}'s; nothing read",
                count(summary.other_shards, "transcript")
            ),
            _ => say!("no transcript found in the paths given; nothing read"),
        }
    }
    let mut failed = !summary.errors.is_empty();
    let delivered = if args.deliver {
        let d = crate::deliver::deliver_all(home, &full)?;
        failed |= d.failed > 0;
        Some(d)
    } else {
        None
    };
    let pending = if opts.index {
        transcope_index::Index::open(home)
            .and_then(|ix| ix.pending_count(None, None))
            .ok()
    } else {
        None
    };
    if args.json {
        let mut v = summary.to_json();
        v["markers_pending"] = serde_json::json!(pending);
        v["shard"] = serde_json::json!(args.shard.map(|s| s.to_string()));
        if let Some(d) = &delivered {
            v["delivered"] = d.to_json();
        }
        println_out(&mut std::io::stdout().lock(), &v.to_string())?;
    } else {
        let delivered = delivered.as_ref().map_or(String::new(), |d| {
            format!(
                "; delivered: {} sent, {} to the outbox ({}), {} failed",
                d.sent,
                d.outbox,
                crate::deliver::outbox_shown(home, &full),
                d.failed
            )
        });
        // Shard K/N: the files it read, and those it left to the others.
        let files = match args.shard {
            Some(shard) => format!(
                "{} (shard {shard}; {} in other shards)",
                count(summary.files, "file"),
                summary.other_shards
            ),
            None => count(summary.files, "file"),
        };
        // One write: stderr is unbuffered, and a formatted line is otherwise written
        // piece by piece (and could interleave with another writer's).
        let line = if summary.bytes == 0 && summary.files > 0 && summary.errors.is_empty() {
            // Every file was read to its end by an earlier run: "0 bytes, 0 markers"
            // would read as "found nothing".
            format!(
                "transcope: {files} looked at, nothing new since the last run ({} pending){delivered}, {:.2} s\n",
                pending.map_or("-".to_owned(), |n| count(n, "marker")),
                summary.seconds,
            )
        } else {
            format!(
                "transcope: {files}, {} bytes, {} written, {} ({} new to the ledger, {} pending, {} unattributed, {} not recorded, {} unclosed){delivered}, {}, {:.2} s, {:.1} MB/s\n",
                summary.bytes,
                count(summary.transitions, "transition"),
                count(summary.markers, "marker"),
                summary.markers_recorded,
                pending.map_or("-".to_owned(), |n| n.to_string()),
                summary.unattributed,
                summary.markers_not_recorded,
                summary.unclosed,
                count(summary.errors.len() as u64, "error"),
                summary.seconds,
                summary.mb_per_s()
            )
        };
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    }
    Ok(if failed { exit::RUNTIME } else { exit::OK })
}

#[cfg(test)]
mod tests {
    use super::Shown;

    /// The count went `3/570` then `1/570` (issue 16): reports out of order show only
    /// what is larger than shown.
    #[test]
    fn the_progress_count_never_goes_back() {
        let shown = Shown::default();
        assert_eq!(shown.advance(3, 300), (Some(3), Some(300)));
        assert_eq!(shown.advance(1, 100), (None, None));
        assert_eq!(shown.advance(4, 250), (Some(4), None));
        assert_eq!(shown.advance(4, 400), (None, Some(400)));
    }
}

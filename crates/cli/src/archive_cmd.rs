//! `transcope archive`: keep every transcript the agents would delete, and give it
//! back (`verify`, `restore`, `ls`, `prune`).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::{Args, Subcommand};
use rayon::prelude::*;
use serde_json::json;
use transcope_archive::{Archive, Entry};

use crate::table::{count, local_time, Table};
use crate::transcript_cmd::process_env;
use crate::{exit, print_ndjson, println_out};

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ArchiveArgs {
    #[command(subcommand)]
    cmd: Option<ArchiveCommand>,
    /// Folders or transcripts to archive [default: every agent's default folders, as
    /// `backfill` reads them].
    paths: Vec<PathBuf>,
    /// Print a JSON summary on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum ArchiveCommand {
    /// Check every frame's and every generation's checksum; a torn last frame (a killed
    /// write) is cut off and named; exits 1 naming each damaged entry.
    Verify {
        /// One JSON object per problem, then a summary.
        #[arg(long)]
        json: bool,
    },
    /// Write archived transcripts back, byte for byte.
    Restore {
        /// Only this session's transcripts (its scope-log key; a sub-agent's key, or
        /// its parent's for the whole family).
        #[arg(long, value_name = "S", allow_hyphen_values = true)]
        session: Option<String>,
        /// Under DIR, each at its original absolute path re-rooted
        /// (DIR/home/me/.claude/projects/…).
        #[arg(
            long,
            value_name = "DIR",
            required_unless_present = "in_place",
            conflicts_with = "in_place"
        )]
        to: Option<PathBuf>,
        /// Where they were, for each that is missing; never over a file that is there.
        #[arg(long)]
        in_place: bool,
        /// Also each older generation (a transcript cut or rewritten), beside it as
        /// `<name>.gen<N>`.
        #[arg(long)]
        all_generations: bool,
        /// Print a JSON summary.
        #[arg(long)]
        json: bool,
    },
    /// The archived transcripts: session, original and stored bytes, ratio,
    /// generations, whether the original is still there.
    Ls {
        /// One JSON object per transcript.
        #[arg(long)]
        json: bool,
    },
    /// Delete archived transcripts on purpose, and say which.
    Prune {
        /// Those last kept before TIME.
        #[arg(long, value_name = "TIME", value_parser = crate::args::time_arg, required_unless_present = "session")]
        older_than: Option<i64>,
        /// This session's.
        #[arg(long, value_name = "S", allow_hyphen_values = true)]
        session: Option<String>,
        /// Print one JSON object per deleted transcript, then a summary.
        #[arg(long)]
        json: bool,
    },
}

/// The archive the commands work on: where the home's is, even when keeping is
/// turned off (these commands are asked for by name).
pub fn archive_of(home: &Path) -> Archive {
    let env = process_env();
    let var = |k: &str| env.get(k).cloned();
    Archive::of_home(home, |k| {
        (k != transcope_archive::SWITCH_ENV)
            .then(|| var(k))
            .flatten()
    })
    .expect("never off without the switch")
}

/// The archive a Stop, a backfill or a query's sync keeps transcripts in: `None` when
/// turned off (`TRANSCOPE_ARCHIVE=off`).
pub fn keeping(home: &Path) -> Option<Archive> {
    let env = process_env();
    Archive::of_home(home, |k| env.get(k).cloned())
}

pub fn run(home: &Path, a: ArchiveArgs) -> Result<u8> {
    let archive = archive_of(home);
    match a.cmd {
        None => keep(home, &archive, a.paths, a.json),
        Some(ArchiveCommand::Verify { json }) => verify(&archive, json),
        Some(ArchiveCommand::Restore {
            session,
            to,
            in_place: _,
            all_generations,
            json,
        }) => restore(&archive, session, to, all_generations, json),
        Some(ArchiveCommand::Ls { json }) => ls(&archive, json),
        Some(ArchiveCommand::Prune {
            older_than,
            session,
            json,
        }) => prune(&archive, older_than, session, json),
    }
}

fn keep(home: &Path, archive: &Archive, paths: Vec<PathBuf>, json: bool) -> Result<u8> {
    let full = process_env();
    let pipeline = crate::compose::pipeline(home, false);
    let registry = pipeline.registry();
    let paths = if paths.is_empty() {
        crate::sources::default_paths(&full, registry)
    } else {
        paths
    };
    let started = std::time::Instant::now();
    let (jobs, problems) = transcope_backfill::discover(&paths, registry);
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(jobs.iter().map(|j| j.size).sum());
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} archiving {bytes}/{total_bytes} {bytes_per_sec} ETA {eta} {wide_bar}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    #[derive(Default)]
    struct Sum {
        files: u64,
        added: u64,
        stored: u64,
        generations: u64,
        unchanged: u64,
        errors: Vec<(PathBuf, String)>,
    }
    let sum = jobs
        .par_iter()
        .map(|j| {
            let key = transcope_backfill::scope_key(registry, &j.path).ok();
            let mut s = Sum {
                files: 1,
                ..Sum::default()
            };
            match archive.keep(&j.path, key.as_deref()) {
                Ok(k) => {
                    s.added = k.added;
                    s.stored = k.stored;
                    s.generations = u64::from(k.new_generation);
                    s.unchanged = u64::from(k.added == 0 && !k.new_generation);
                }
                Err(e) => s.errors.push((j.path.clone(), e.to_string())),
            }
            if let Some(b) = &bar {
                b.inc(j.size);
            }
            s
        })
        .reduce(Sum::default, |mut a, b| {
            a.files += b.files;
            a.added += b.added;
            a.stored += b.stored;
            a.generations += b.generations;
            a.unchanged += b.unchanged;
            a.errors.extend(b.errors);
            a
        });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    for p in &problems {
        say!("{}: {}", p.path.display(), p.reason);
    }
    for (p, e) in &sum.errors {
        say!("{}: {e}", p.display());
    }
    let seconds = started.elapsed().as_secs_f64();
    let failed = !sum.errors.is_empty() || !problems.is_empty();
    if json {
        let v = json!({
            "archive": archive.root(),
            "files": sum.files,
            "unchanged": sum.unchanged,
            "added_bytes": sum.added,
            "stored_bytes": sum.stored,
            "new_generations": sum.generations,
            "errors": sum.errors.len() + problems.len(),
            "seconds": (seconds * 1000.0).round() / 1000.0,
        });
        println_out(&mut std::io::stdout().lock(), &v.to_string())?;
    } else {
        say!(
            "{} looked at in {}: {} bytes added ({} bytes stored), {} unchanged, {} new, {}, {:.2} s",
            count(sum.files, "transcript"),
            archive.root().display(),
            sum.added,
            sum.stored,
            sum.unchanged,
            count(sum.generations, "generation"),
            count((sum.errors.len() + problems.len()) as u64, "error"),
            seconds
        );
    }
    Ok(if failed { exit::RUNTIME } else { exit::OK })
}

fn verify(archive: &Archive, json: bool) -> Result<u8> {
    let entries = archive.entries()?;
    let mut out = std::io::stdout().lock();
    let (mut damaged, mut repaired) = (0u64, 0u64);
    for e in &entries {
        let problems = match e.verify(true) {
            Ok(p) => p,
            Err(err) => {
                damaged += 1;
                say!("{}: {err}", e.original().display());
                continue;
            }
        };
        for p in problems {
            if p.torn {
                repaired += u64::from(p.repaired);
            } else {
                damaged += 1;
            }
            if json {
                println_out(
                    &mut out,
                    &json!({
                        "original": e.original(),
                        "generation_file": p.path,
                        "offset": p.offset,
                        "problem": p.what,
                        "torn": p.torn,
                        "repaired": p.repaired,
                    })
                    .to_string(),
                )?;
            } else if p.torn {
                say!(
                    "{}: a torn last frame at byte {} of {} ({}): {}",
                    e.original().display(),
                    p.offset,
                    p.path.display(),
                    p.what,
                    if p.repaired {
                        "cut off; every earlier frame is whole"
                    } else {
                        "not cut"
                    }
                );
            } else {
                say!(
                    "{}: damaged at byte {} of {}: {}",
                    e.original().display(),
                    p.offset,
                    p.path.display(),
                    p.what
                );
            }
        }
    }
    let summary = json!({
        "entries": entries.len(),
        "damaged": damaged,
        "torn_repaired": repaired,
    });
    if json {
        println_out(&mut out, &summary.to_string())?;
    } else {
        println_out(
            &mut out,
            &format!(
                "{} checked: {} damaged, {} torn end(s) cut off",
                count(entries.len() as u64, "archived transcript"),
                damaged,
                repaired
            ),
        )?;
    }
    Ok(if damaged > 0 { exit::RUNTIME } else { exit::OK })
}

/// Whether `e` is `session`'s: its key, or a sub-agent of it (`<session>.<agent>`).
fn of_session(e: &Entry, session: &str) -> bool {
    match e.session() {
        Some(k) => k == session || k.strip_prefix(session).is_some_and(|r| r.starts_with('.')),
        None => e
            .original()
            .file_stem()
            .is_some_and(|s| s.to_string_lossy() == session),
    }
}

/// `original` under `dir`: its absolute path re-rooted.
fn rerooted(dir: &Path, original: &Path) -> PathBuf {
    dir.join(original.strip_prefix("/").unwrap_or(original))
}

fn restore(
    archive: &Archive,
    session: Option<String>,
    to: Option<PathBuf>,
    all: bool,
    json: bool,
) -> Result<u8> {
    let entries: Vec<Entry> = archive
        .entries()?
        .into_iter()
        .filter(|e| session.as_deref().is_none_or(|s| of_session(e, s)))
        .collect();
    if entries.is_empty() {
        say!(
            "nothing to restore: {}",
            match &session {
                Some(s) => format!("no archived transcript of session {s}"),
                None => format!("the archive at {} is empty", archive.root().display()),
            }
        );
    }
    let (mut written, mut kept, mut bytes, mut failed) = (0u64, 0u64, 0u64, 0u64);
    for e in &entries {
        let target = match &to {
            Some(dir) => rerooted(dir, e.original()),
            None => e.original().to_path_buf(),
        };
        match e.restore_to(&target, all) {
            Ok(r) => {
                written += r.written.len() as u64;
                kept += r.kept.len() as u64;
                bytes += r.bytes;
                // In place, a file that is there is the usual case: counted, not said.
                if to.is_some() {
                    for k in &r.kept {
                        say!("{}: there already; left as it is", k.display());
                    }
                }
            }
            Err(err) => {
                failed += 1;
                say!("{}: {err}", e.original().display());
            }
        }
    }
    if json {
        let v = json!({"written": written, "left": kept, "bytes": bytes, "failed": failed});
        println_out(&mut std::io::stdout().lock(), &v.to_string())?;
    } else {
        println_out(
            &mut std::io::stdout().lock(),
            &format!(
                "{} written ({bytes} bytes), {kept} left as they were, {failed} failed",
                count(written, "file")
            ),
        )?;
    }
    Ok(if failed > 0 { exit::RUNTIME } else { exit::OK })
}

fn ls(archive: &Archive, json: bool) -> Result<u8> {
    let mut rows = Vec::new();
    for e in archive.entries()? {
        let info = e.info()?;
        rows.push((e.session(), info));
    }
    rows.sort_by(|a, b| (&a.0, &a.1.original).cmp(&(&b.0, &b.1.original)));
    let mut out = std::io::stdout().lock();
    let ratio = |i: &transcope_archive::EntryInfo| {
        if i.stored == 0 {
            0.0
        } else {
            i.all_bytes as f64 / i.stored as f64
        }
    };
    let at = |us: u64| transcope_core::Instant::from_unix_micros(us as i64).to_python_isoformat();
    if json {
        print_ndjson(
            &mut out,
            rows.iter().map(|(s, i)| {
                json!({
                    "session": s,
                    "original": i.original,
                    "bytes": i.bytes,
                    "all_bytes": i.all_bytes,
                    "stored_bytes": i.stored,
                    "ratio": (ratio(i) * 100.0).round() / 100.0,
                    "generations": i.generations,
                    "original_exists": i.exists,
                    "last_kept": at(i.last_at_us),
                })
            }),
        )?;
        return Ok(exit::OK);
    }
    let mut t = Table::new(&[
        "session",
        "original",
        "bytes",
        "stored",
        "ratio",
        "generations",
        "original there",
        "last kept (local)",
    ]);
    t.whole(&[0, 1]);
    let (mut all, mut stored, mut gone) = (0u64, 0u64, 0u64);
    for (s, i) in &rows {
        all += i.all_bytes;
        stored += i.stored;
        gone += u64::from(!i.exists);
        t.row(vec![
            s.clone().unwrap_or_else(|| "-".into()),
            i.original.display().to_string(),
            i.bytes.to_string(),
            i.stored.to_string(),
            format!("{:.1}", ratio(i)),
            i.generations.to_string(),
            if i.exists {
                "yes".into()
            } else {
                "no (only here)".into()
            },
            local_time(&at(i.last_at_us)),
        ]);
    }
    t.print(
        &mut out,
        &format!(
            "{} in {}: {all} bytes in {stored} ({:.1}x); {gone} no longer where they were",
            count(rows.len() as u64, "transcript"),
            archive.root().display(),
            if stored == 0 {
                0.0
            } else {
                all as f64 / stored as f64
            },
        ),
    )?;
    Ok(exit::OK)
}

fn prune(
    archive: &Archive,
    older_than: Option<i64>,
    session: Option<String>,
    json: bool,
) -> Result<u8> {
    let mut out = std::io::stdout().lock();
    let (mut n, mut freed) = (0u64, 0u64);
    for e in archive.entries()? {
        let info = e.info()?;
        let old = older_than.is_none_or(|t| (info.last_at_us as i64) < t);
        let ours = session.as_deref().is_none_or(|s| of_session(&e, s));
        if !(old && ours) {
            continue;
        }
        let original = e.original().to_path_buf();
        let stored = e.remove()?;
        n += 1;
        freed += stored;
        if json {
            println_out(
                &mut out,
                &json!({"deleted": original, "stored_bytes": stored, "original_exists": info.exists}).to_string(),
            )?;
        } else {
            say!(
                "deleted {} from the archive ({stored} bytes){}",
                original.display(),
                if info.exists {
                    ""
                } else {
                    "; its original is gone: this was its only copy"
                }
            );
        }
    }
    if json {
        println_out(
            &mut out,
            &json!({"deleted": n, "freed_bytes": freed}).to_string(),
        )?;
    } else {
        println_out(
            &mut out,
            &format!(
                "{} deleted, {freed} bytes freed",
                count(n, "archived transcript")
            ),
        )?;
    }
    Ok(exit::OK)
}

/// Where copies of transcripts whose originals are gone are written back for a read
/// (`backfill --from-archive`, `index rebuild`): the same folder each time, so a
/// copy's cursor is found again; emptied after the read.
pub fn view_dir(home: &Path) -> PathBuf {
    home.join("transcope").join("archive-view")
}

/// Write every archived transcript whose original is gone under `view`, re-rooted; the
/// copies, each with the original it stands for, and what could not be written.
pub fn copies_of_gone(archive: &Archive, view: &Path) -> (Vec<(PathBuf, PathBuf)>, Vec<String>) {
    let mut out = Vec::new();
    let mut failed = Vec::new();
    let entries = match archive.entries() {
        Ok(e) => e,
        Err(e) => return (out, vec![e.to_string()]),
    };
    for e in entries {
        if e.original().exists() {
            continue;
        }
        let copy = rerooted(view, e.original());
        let _ = std::fs::remove_file(&copy);
        match e.restore_to(&copy, false) {
            Ok(_) => out.push((copy, e.original().to_path_buf())),
            Err(err) => failed.push(format!("{}: {err}", e.original().display())),
        }
    }
    (out, failed)
}

/// The path a backfill recorded for the transcript at the absolute path `original`:
/// relative when a backfill was named a relative folder holding it (`backfill corpus`
/// records `corpus/…`, from the folder it was named in), else `original` itself.
pub fn as_recorded(home: &Path) -> impl Fn(&Path) -> PathBuf + Sync {
    let roots: Vec<(PathBuf, PathBuf)> = transcope_index::recover::recorded_roots(home)
        .into_iter()
        .filter(|(_, given)| given.is_relative())
        .map(|(cwd, given)| (cwd.join(&given), given))
        .collect();
    move |original: &Path| {
        roots
            .iter()
            .find_map(|(whole, given)| {
                original
                    .strip_prefix(whole)
                    .ok()
                    .map(|rest| given.join(rest))
            })
            .unwrap_or_else(|| original.to_path_buf())
    }
}

/// Read the archived copy of every transcript whose original is gone, as the
/// transcript it stands for (`named`: the path the index records for an original;
/// never archived again): `opts` as given otherwise (the
/// archive it keeps in is taken off it). The run's summary, the copies read (each
/// with its original) and what could not be written back.
pub fn read_gone(
    home: &Path,
    opts: &mut transcope_backfill::Options,
    named: &(dyn Fn(&Path) -> PathBuf + Sync),
) -> (
    transcope_backfill::Summary,
    Vec<(PathBuf, PathBuf)>,
    Vec<String>,
) {
    let view = view_dir(home);
    let (copies, failed) = copies_of_gone(&archive_of(home), &view);
    let mut summary = transcope_backfill::Summary::default();
    if !copies.is_empty() {
        let names: std::collections::HashMap<PathBuf, PathBuf> = copies
            .iter()
            .map(|(copy, original)| (copy.clone(), named(original)))
            .collect();
        opts.archive = None;
        opts.recorded_as = Some(std::sync::Arc::new(move |p: &Path| {
            names.get(p).cloned().unwrap_or_else(|| p.to_path_buf())
        }));
        let jobs = transcope_backfill::walk(std::slice::from_ref(&view), opts.pipeline.registry());
        summary = transcope_backfill::backfill_iter(jobs, opts, &|_, _| {});
        opts.recorded_as = None;
    }
    let _ = std::fs::remove_dir_all(&view);
    (summary, copies, failed)
}

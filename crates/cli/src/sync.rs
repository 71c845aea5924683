//! Bringing the index up to date: the options every backfill of a home starts from,
//! the agents' default folders, and the sync every query runs first (a backfill
//! through the cursors, then the scope logs mirrored).

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::{json, Value};
use transcope_backfill::{backfill_iter, walk, MarkersOut, Options};
use transcope_change_detect::Env;
use transcope_index::{seen_key, Index};

use crate::println_out;
use crate::table::count;
use crate::transcript_cmd::{bare_env, process_env, resolver_for};

/// What a sync did.
pub(crate) struct Synced {
    pub(crate) summary: transcope_backfill::Summary,
    /// The scope logs mirrored, and how many of their bytes were read.
    pub(crate) logs: transcope_index::Mirrored,
}

impl Synced {
    pub(crate) fn to_json(&self) -> Value {
        let mut v = self.summary.to_json();
        v["logs_mirrored"] = json!(self.logs.logs);
        v["log_bytes_read"] = json!(self.logs.bytes);
        v
    }
}

/// How thoroughly a sync looks at the archive.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sync {
    /// A query's: a transcript with the size, modification time and inode it had when
    /// a sync last left it read to its end is not opened (cursors decide the rest).
    Quick,
    /// `index sync`: every transcript's cursor is checked.
    Full,
}

/// A sync's backfill options (`rebuild`: whole files, no cursors) and the default
/// archive paths that exist.
pub(crate) fn sync_options(home: &Path, rebuild: bool) -> Result<(Options, Vec<PathBuf>)> {
    let full = process_env();
    let mut opts = options(home, &full)?;
    let paths = crate::sources::default_paths(&full, opts.pipeline.registry());
    opts.markers = MarkersOut::Ledger;
    opts.rebuild = rebuild;
    Ok((opts, paths))
}

/// The options every backfill of `home` starts from, `backfill`'s and a sync's alike:
/// the listed pipeline (cursors saved in batches), the scope variables of `full` (the
/// process environment), their project resolver, and the archive when keeping is on.
pub(crate) fn options(home: &Path, full: &Env) -> Result<Options> {
    let mut opts = Options::new(home, crate::compose::pipeline(home, false));
    opts.env = bare_env(full);
    opts.resolver = Some(resolver_for(home, &opts.env)?);
    opts.archive = crate::archive_cmd::keeping(home);
    Ok(opts)
}

/// Backfill the default archive paths into the index, then mirror the changed scope
/// logs.
pub(crate) fn sync(home: &Path, how: Sync) -> Result<(Index, Synced)> {
    let (opts, paths) = sync_options(home, false)?;
    let mut index = Index::open(home)?;
    let summary = if paths.is_empty() {
        transcope_backfill::Summary::default()
    } else {
        let seen = if how == Sync::Quick {
            index.seen()?
        } else {
            Default::default()
        };
        let listed: Vec<_> = walk(&paths, opts.pipeline.registry()).collect();
        // What is not read to its end as it is now (and what could not be listed, for
        // the run to report).
        let changed: Vec<_> = listed
            .iter()
            .filter(|j| match j {
                // A container's session is asked its change marker instead (its
                // database's own stamp does not move while its write-ahead log grows).
                Ok(job) => {
                    job.session.is_some() || seen.get(seen_key(&job.path)) != Some(&job.stamp())
                }
                Err(_) => true,
            })
            .collect();
        let summary = backfill_iter(changed.iter().map(|j| (*j).clone()), &opts, &|_, _| {});
        // Read to their end now, unless the read failed: stamped as listed (a file
        // that grew meanwhile differs from its stamp, and is looked at next time).
        let failed: rustc_hash::FxHashSet<&[u8]> =
            summary.errors.iter().map(|p| seen_key(&p.path)).collect();
        // A batch the index could not take (its lock held past the wait, a full
        // disk) is reported against the index, not its files: none is stamped, so
        // the next query looks at them all again (their cursors did not move).
        let index_failed = summary
            .errors
            .iter()
            .any(|p| p.path == transcope_index::index_path(home));
        let stamps: Vec<_> = changed
            .iter()
            .filter(|_| !index_failed)
            .filter_map(|j| j.as_ref().ok())
            .filter(|j| j.session.is_none() && !failed.contains(seen_key(&j.path)))
            .map(|j| (seen_key(&j.path), j.stamp()))
            .collect();
        let here: rustc_hash::FxHashSet<&[u8]> =
            listed.iter().flatten().map(|j| seen_key(&j.path)).collect();
        let gone: Vec<&[u8]> = seen
            .keys()
            .map(Vec::as_slice)
            .filter(|p| !here.contains(p))
            .collect();
        index.set_seen(&stamps, &gone)?;
        summary
    };
    for p in &summary.errors {
        say!("{}: {}", p.path.display(), p.reason);
    }
    let logs = index.sync_logs(home)?;
    Ok((index, Synced { summary, logs }))
}

pub(crate) fn summary_line(out: &mut impl std::io::Write, json: bool, s: &Synced) -> Result<()> {
    if json {
        println_out(out, &s.to_json().to_string())?;
    } else {
        println_out(
            out,
            &format!(
                "{} read ({} bytes), {} written, {} ({} new), {} mirrored, {}",
                count(s.summary.files, "transcript"),
                s.summary.bytes,
                count(s.summary.transitions, "transition"),
                count(s.summary.markers, "marker"),
                s.summary.markers_recorded,
                count(s.logs.logs, "scope log"),
                count(s.summary.errors.len() as u64, "error")
            ),
        )?;
    }
    Ok(())
}

//! `transcope index rebuild`: a new index from the scope logs and every transcript the
//! old one knew, the ledger's delivery states and what each export receiver
//! acknowledged carried over.
//!
//! What is read again: the transcripts of the old index's sessions (as far as it can
//! be read), every transcript the cursor store holds, every path a backfill was named
//! (`transcope_index::recover::recorded_roots`, each from the folder it was named
//! from, so a relative path means what it meant then) and the agents' default
//! folders. What is gone is counted, not an error. An old index that cannot be used
//! (empty, a link, garbage, another program's, a newer transcope's, a directory) is
//! moved aside to `index.sqlite.damaged-<UTC time>`, never deleted; the states come
//! from what can be read of it, else from the states journal and the outbox.

use std::collections::{BTreeMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::json;
use transcope_backfill::{backfill_iter, walk, Summary};
use transcope_index::recover::{self, Salvage};
use transcope_index::{Index, State};

use crate::sync::{summary_line, sync_options, Synced};
use crate::transcript_cmd::process_env;
use crate::{exit, println_out};

/// The transcripts to read again, grouped by the folder their paths are relative to
/// (a backfill named them from there), in the order first recorded.
#[derive(Default)]
struct Sources {
    /// Folder → paths (folders and files) named from it.
    groups: Vec<(PathBuf, Vec<PathBuf>)>,
    /// Recorded paths that no longer exist.
    gone: Vec<PathBuf>,
}

impl Sources {
    fn add(&mut self, cwd: &Path, path: PathBuf) {
        match self.groups.iter_mut().find(|(c, _)| c == cwd) {
            Some((_, paths)) => {
                if !paths.contains(&path) {
                    paths.push(path);
                }
            }
            None => self.groups.push((cwd.to_path_buf(), vec![path])),
        }
    }
}

/// Every transcript and folder the old index knew, and the default folders.
fn sources(home: &Path, salvage: &Salvage, defaults: Vec<PathBuf>) -> Sources {
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let exists = |cwd: &Path, p: &Path| std::fs::symlink_metadata(cwd.join(p)).is_ok();
    let mut s = Sources::default();
    let roots = recover::recorded_roots(home);
    for (cwd, given) in &roots {
        let cwd = if given.is_absolute() { &here } else { cwd };
        if exists(cwd, given) {
            s.add(cwd, given.clone());
        } else {
            s.gone.push(cwd.join(given));
        }
    }
    for d in defaults {
        s.add(&here, d);
    }
    let cursors = transcope_engine::store::CursorStore::new(home, false)
        .transcripts()
        .unwrap_or_else(|e| {
            say!("{e}; rebuilding without the transcripts it lists");
            Vec::new()
        });
    let mut files: Vec<&PathBuf> = salvage.transcripts.iter().chain(&cursors).collect();
    let mut once = HashSet::new();
    files.retain(|f| once.insert(*f));
    for f in files {
        if f.is_absolute() {
            if exists(&here, f) {
                s.add(&here, f.clone());
            } else {
                s.gone.push(f.clone());
            }
            continue;
        }
        // Relative to the folder a backfill named it from: the first recorded folder
        // where it is, else this one.
        let from = roots
            .iter()
            .map(|(c, _)| c.as_path())
            .chain([here.as_path()])
            .find(|c| exists(c, f));
        match from {
            Some(c) => s.add(c, f.clone()),
            None => s.gone.push(f.clone()),
        }
    }
    s
}

/// `path` (and its `-wal`, `-shm`, `-journal`) renamed to
/// `<path>.damaged-<UTC time>` (its sidecars beside it, so SQLite still pairs them);
/// the new name.
fn move_aside(path: &Path) -> io::Result<PathBuf> {
    let stamp = transcope_core::Instant::now().to_compact_utc();
    let mut n = 0;
    let aside = loop {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".damaged-{stamp}Z"));
        if n > 0 {
            name.push(format!("-{n}"));
        }
        let candidate = PathBuf::from(name);
        let free = ["", "-wal", "-shm", "-journal"]
            .iter()
            .all(|s| std::fs::symlink_metadata(transcope_sqlite::sidecar(&candidate, s)).is_err());
        if free {
            break candidate;
        }
        n += 1;
    };
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let from = transcope_sqlite::sidecar(path, suffix);
        if std::fs::symlink_metadata(&from).is_ok() {
            std::fs::rename(&from, transcope_sqlite::sidecar(&aside, suffix))?;
        }
    }
    Ok(aside)
}

/// The delivery states to carry: each key's state as the old index said it, else as
/// the states journal did, else `outbox` for a marker waiting in the outbox.
fn states_known(salvage: &Salvage, home: &Path, index: &Path) -> BTreeMap<String, State> {
    let outbox = transcope_brain::BrainConfig::from_env(home, &process_env()).outbox;
    let mut states: BTreeMap<String, State> = recover::outbox_keys(&outbox)
        .into_iter()
        .map(|k| (k, State::Outbox))
        .collect();
    states.extend(recover::journaled_states(index));
    states.extend(salvage.states.iter().cloned());
    states
}

pub fn run_rebuild(home: &Path, json: bool) -> Result<u8> {
    let path = transcope_index::index_path(home);
    // 1. What the old index knew, read before anything moves.
    let salvage = recover::salvage(&path);
    let present = std::fs::symlink_metadata(&path).is_ok();
    let trouble = match present {
        false => None,
        true => Index::open_at(&path).err(),
    };
    let whole = present && trouble.is_none() && salvage.whole;
    let known = states_known(&salvage, home, &path);
    // 2. Out of the way: a sound index is removed (everything it knew is carried), any
    // other is moved aside, never deleted.
    let mut aside = None;
    if whole {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let p = transcope_sqlite::sidecar(&path, suffix);
            match std::fs::remove_file(&p) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| format!("removing {}", p.display()));
                }
                _ => {}
            }
        }
    } else if present {
        let to = move_aside(&path).with_context(|| format!("moving {} aside", path.display()))?;
        let why = trouble.map_or_else(
            || "only part of it could be read".to_owned(),
            |e| e.to_string(),
        );
        say!("{why}");
        say!(
            "the old index was moved aside to {} (kept, not deleted)",
            to.display()
        );
        aside = Some(to);
    }
    // 3. Every transcript it knew, whole, without cursors; then the scope logs.
    let (opts, defaults) = sync_options(home, true)?;
    let src = sources(home, &salvage, defaults);
    let mut index = Index::open(home)?;
    let mut summary = Summary::default();
    let start = std::env::current_dir().ok();
    let mut listed = HashSet::new();
    for (cwd, paths) in &src.groups {
        // A relative path is read from the folder it was named from, and recorded as
        // it was then.
        if start.as_deref() != Some(cwd.as_path()) {
            std::env::set_current_dir(cwd)
                .with_context(|| format!("entering {}", cwd.display()))?;
        }
        let jobs: Vec<_> = walk(paths, opts.pipeline.registry())
            .filter(|j| {
                j.as_ref()
                    .map_or(true, |j| listed.insert(cwd.join(&j.path)))
            })
            .collect();
        summary.absorb(backfill_iter(jobs.into_iter(), &opts, &|_, _| {}));
    }
    if let Some(d) = &start {
        std::env::set_current_dir(d).with_context(|| format!("entering {}", d.display()))?;
    }
    // Every transcript whose original is gone, from the archive, as itself.
    let mut opts = opts;
    let named = crate::archive_cmd::as_recorded(home);
    let (from, copies, failed) = crate::archive_cmd::read_gone(home, &mut opts, &named);
    let from_archive = copies.len();
    summary.absorb(from);
    for f in &failed {
        say!("not read from the archive: {f}");
    }
    for p in &summary.errors {
        say!("{}: {}", p.path.display(), p.reason);
    }
    let logs = index.sync_logs(home)?;
    // 4. The delivery states.
    let carried: Vec<_> = known
        .iter()
        .filter(|(_, s)| **s != State::Pending)
        .map(|(k, s)| (k.clone(), *s, None))
        .collect();
    index.set_states(&carried)?;
    // 5. What each export receiver acknowledged: it is not sent the rows again.
    for (sink, ack) in &salvage.exported {
        index.export_acknowledged(sink, ack)?;
    }
    let now = index.states()?;
    let unknown = match whole {
        true => 0,
        false => now
            .iter()
            .filter(|(k, s)| *s == State::Pending && !known.contains_key(k))
            .count(),
    };
    if let Err(e) = recover::rewrite_journal(&path, &now) {
        say!("rewriting the delivery states journal: {e}");
    }
    // Gone and not in the archive either: said, by name.
    // (A folder is lost when no archived transcript was under it.)
    let lost: Vec<&PathBuf> = src
        .gone
        .iter()
        .filter(|p| {
            !copies
                .iter()
                .any(|(_, o)| o.starts_with(p) || named(o).starts_with(p))
        })
        .collect();
    if !lost.is_empty() {
        say!(
            "{} recorded transcript(s) or folder(s) are gone and not in the archive, not read: {}",
            lost.len(),
            lost.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if unknown > 0 {
        say!(
            "{unknown} marker(s) have no record of a delivery the old index may have made: they are pending (delivering one again is harmless: the brain keeps each idempotency key once)"
        );
    }
    let synced = Synced { summary, logs };
    let mut out = std::io::stdout().lock();
    if json {
        let mut v = synced.to_json();
        v["moved_aside"] = json!(aside.as_ref().map(|p| p.display().to_string()));
        v["gone"] = json!(lost.len());
        v["from_archive"] = json!(from_archive);
        v["states_carried"] = json!(carried.len());
        v["states_unknown"] = json!(unknown);
        println_out(&mut out, &v.to_string())?;
    } else {
        summary_line(&mut out, false, &synced)?;
    }
    // A transcript that could not be read is reported and counted, as a backfill's.
    Ok(exit::OK)
}

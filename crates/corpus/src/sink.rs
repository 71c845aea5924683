//! Output files: a buffered writer that keeps the per-file expectations of the manifest.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::rng::Rng;
use crate::text::MarkerCounts;
use crate::{FileEntry, FileKind};

/// A byte budget shared by all files of one session.
#[derive(Debug)]
pub(crate) struct Budget {
    pub(crate) limit: u64,
    pub(crate) used: u64,
}

impl Budget {
    pub(crate) fn new(limit: Option<u64>) -> Self {
        Budget {
            limit: limit.unwrap_or(u64::MAX),
            used: 0,
        }
    }

    pub(crate) fn exhausted(&self) -> bool {
        self.used >= self.limit
    }
}

/// One file being written.
pub(crate) struct Sink {
    w: BufWriter<File>,
    pub(crate) entry: FileEntry,
    last_ts: Option<String>,
    last_cwd: Option<String>,
    last_branch: Option<String>,
    pub(crate) max_line: u64,
}

impl Sink {
    /// Creates `root/rel` (and its folders).
    pub(crate) fn create(
        root: &Path,
        rel: &str,
        kind: FileKind,
        session_id: &str,
        agent_id: Option<&str>,
    ) -> io::Result<Sink> {
        let path: PathBuf = root.join(rel);
        if let Some(p) = path.parent() {
            fs::create_dir_all(p)?;
        }
        let f = File::create(&path)?;
        Ok(Sink {
            w: BufWriter::with_capacity(256 * 1024, f),
            entry: FileEntry {
                path: rel.to_string(),
                kind,
                session_id: session_id.to_string(),
                agent_id: agent_id.map(str::to_string),
                bytes: 0,
                lines: 0,
                invalid_lines: Vec::new(),
                torn_last_line: false,
                cwd_switches: 0,
                branch_switches: 0,
                cwds: Vec::new(),
                branches: Vec::new(),
                markers: 0,
                fleet_markers: 0,
                unterminated_markers: 0,
                decoy_markers: 0,
                echoed_markers: 0,
                out_of_order_timestamps: 0,
            },
            last_ts: None,
            last_cwd: None,
            last_branch: None,
            max_line: 0,
        })
    }

    /// Notes the top-level `timestamp` of the line about to be written.
    pub(crate) fn note_ts(&mut self, ts: &str) {
        if let Some(prev) = &self.last_ts {
            if ts < prev.as_str() {
                self.entry.out_of_order_timestamps += 1;
            }
        }
        self.last_ts = Some(ts.to_string());
    }

    /// Notes the `cwd` carried by the line about to be written.
    pub(crate) fn note_cwd(&mut self, cwd: &str) {
        if self.last_cwd.as_deref() != Some(cwd) {
            if self.last_cwd.is_some() {
                self.entry.cwd_switches += 1;
            }
            if !self.entry.cwds.iter().any(|c| c == cwd) {
                self.entry.cwds.push(cwd.to_string());
            }
            self.last_cwd = Some(cwd.to_string());
        }
    }

    /// Notes the `gitBranch` carried by the line about to be written.
    pub(crate) fn note_branch(&mut self, branch: &str) {
        if self.last_branch.as_deref() != Some(branch) {
            if self.last_branch.is_some() {
                self.entry.branch_switches += 1;
            }
            if !self.entry.branches.iter().any(|c| c == branch) {
                self.entry.branches.push(branch.to_string());
            }
            self.last_branch = Some(branch.to_string());
        }
    }

    pub(crate) fn note_markers(&mut self, m: MarkerCounts) {
        self.entry.markers += m.markers;
        self.entry.fleet_markers += m.fleet;
        self.entry.unterminated_markers += m.unterminated;
    }

    pub(crate) fn note_decoys(&mut self, n: u64) {
        self.entry.decoy_markers += n;
    }

    fn account(&mut self, n: u64, budget: &mut Budget) {
        self.entry.bytes += n;
        self.entry.lines += 1;
        self.max_line = self.max_line.max(n);
        budget.used += n;
    }

    /// Writes one complete line (`line` without the newline).
    pub(crate) fn line(&mut self, line: &[u8], budget: &mut Budget) -> io::Result<()> {
        self.w.write_all(line)?;
        self.w.write_all(b"\n")?;
        self.account(line.len() as u64 + 1, budget);
        Ok(())
    }

    /// Writes a line that is deliberately not a JSON object.
    pub(crate) fn invalid_line(&mut self, line: &[u8], budget: &mut Budget) -> io::Result<()> {
        self.line(line, budget)?;
        self.entry.invalid_lines.push(self.entry.lines);
        Ok(())
    }

    /// Writes a truncated last line without a newline.
    pub(crate) fn torn_line(&mut self, partial: &[u8], budget: &mut Budget) -> io::Result<()> {
        self.w.write_all(partial)?;
        self.account(partial.len() as u64, budget);
        self.entry.torn_last_line = true;
        Ok(())
    }

    /// Writes `record` cut short at a random place (at least one byte, not all of it),
    /// without a newline: the agent was writing it.
    pub(crate) fn torn_record(
        &mut self,
        rng: &mut Rng,
        record: &serde_json::Value,
        budget: &mut Budget,
    ) -> io::Result<()> {
        let b = serde_json::to_vec(record).map_err(io::Error::other)?;
        let cut = 1 + rng.index(b.len() - 1);
        self.torn_line(&b[..cut], budget)
    }

    /// Writes a whole non-JSONL document (a `.meta.json` sidecar) as one line without newline.
    pub(crate) fn document(&mut self, doc: &[u8], budget: &mut Budget) -> io::Result<()> {
        self.w.write_all(doc)?;
        self.account(doc.len() as u64, budget);
        Ok(())
    }

    /// Flushes and returns the manifest entry.
    pub(crate) fn finish(mut self) -> io::Result<(FileEntry, u64)> {
        self.w.flush()?;
        Ok((self.entry, self.max_line))
    }
}

//! The end of a run, seen before its last files are read.
//!
//! A backfill holds the requests it reads for the index and writes them many files'
//! worth at a time (a flush passes over the usage table once). Whatever is held when
//! the last file ends used to be written after it, by one thread while the others had
//! nothing left to do: on the generated 1 GB archive, tens of thousands of requests and
//! tens of milliseconds at the end of every run (benches/README.md, session 17).
//!
//! [`ReadAhead`] reads the stream of files up to [`LOOKAHEAD`] files ahead of the
//! workers, so the run's total size is known while its last files are still to be
//! read; [`Tail::due`] then tells a worker when to write what is held — when the
//! others can read what is left in about the time the write takes, so both end
//! together and what is still held at the end is the last few files' requests. A
//! flush's time is estimated from this run's last flush (before the first, from
//! [`PER_COPY_GUESS`]), the reading speed from the run so far. One thread has no one
//! to read beside its write: it never writes early.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use crate::discover::{Job, Problem};

/// How many files the stream is read ahead of the workers: the end is then known
/// while the last thousand files are still to be taken (a few hundred kilobytes of
/// paths).
pub(crate) const LOOKAHEAD: usize = 1024;

/// Seconds a copy takes to write before a run has measured its own: about what the
/// generated 1 GB archive's first flush takes on a 2-core machine (a smaller archive
/// may never flush before its end).
pub(crate) const PER_COPY_GUESS: f64 = 2.5e-6;

/// How much longer than its copies' estimate an early write is taken to be: it also
/// writes the records of the files waiting for their batch, into the largest usage
/// table of the run (traced on the 1 GB archive: 1.3 to 1.7 times the last flush's
/// time a copy). Too early costs a little (the last flush holds a few more files'
/// requests), too late costs the other workers' idle wait.
pub(crate) const EARLY_MARGIN: f64 = 1.5;

/// What a run knows of its end: sizes of the files found and of the files done, and
/// what its flushes cost.
pub(crate) struct Tail {
    start: Instant,
    /// The share of the workers that go on reading while one writes.
    others: f64,
    /// Sizes (as discovered) of the files the stream has given so far.
    found: AtomicU64,
    /// The stream has ended: `found` is the run's whole.
    ended: AtomicBool,
    /// Sizes (as discovered) of the files whose processing ended.
    done: AtomicU64,
    /// Seconds a copy took to write in the last flush (`f64` bits; 0: none yet, the
    /// guess then).
    per_copy: AtomicU64,
    /// The early write was made.
    written: AtomicBool,
}

impl Tail {
    /// A run with `threads` workers, started at `start`.
    pub(crate) fn new(start: Instant, threads: usize) -> Tail {
        let threads = threads.max(1) as f64;
        Tail {
            start,
            others: (threads - 1.0) / threads,
            found: AtomicU64::new(0),
            ended: AtomicBool::new(false),
            done: AtomicU64::new(0),
            per_copy: AtomicU64::new(0),
            written: AtomicBool::new(false),
        }
    }

    /// A file of `size` bytes (as discovered) was processed.
    pub(crate) fn file_done(&self, size: u64) {
        self.done.fetch_add(size, Ordering::Relaxed);
    }

    /// A flush wrote `copies` in `seconds`.
    pub(crate) fn flushed(&self, copies: usize, seconds: f64) {
        if copies > 0 {
            let per = seconds / copies as f64;
            self.per_copy.store(per.to_bits(), Ordering::Relaxed);
        }
    }

    /// Whether `held` copies are to be written now: the stream has ended, no early
    /// write was made, and what is left to read takes the other workers about as
    /// long as writing them would. Answers `true` once (until [`Tail::not_written`]).
    pub(crate) fn due(&self, held: usize) -> bool {
        if held == 0 || self.written.load(Ordering::Relaxed) || !self.ended.load(Ordering::Acquire)
        {
            return false;
        }
        let per_copy = match f64::from_bits(self.per_copy.load(Ordering::Relaxed)) {
            p if p > 0.0 => p,
            _ => PER_COPY_GUESS,
        };
        let done = self.done.load(Ordering::Relaxed);
        let elapsed = self.start.elapsed().as_secs_f64();
        if done == 0 || elapsed <= 0.0 {
            return false;
        }
        let left = self.found.load(Ordering::Relaxed).saturating_sub(done) as f64;
        // Bytes a second, all workers together, so far.
        let rate = done as f64 / elapsed;
        let write = held as f64 * per_copy * EARLY_MARGIN;
        // Nothing left to read (or no one to read it): the write at the end is as soon.
        left > 0.0
            && left <= write * rate * self.others
            && self
                .written
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
    }

    /// The write [`Tail::due`] asked for could not be made (another worker was
    /// writing): ask again after the next file.
    pub(crate) fn not_written(&self) {
        self.written.store(false, Ordering::Release);
    }
}

/// The stream of files, read ahead of the workers by up to `limit` files (see the
/// module docs), telling `tail` the sizes found and the end. It reads one file ahead
/// more each time it is asked for one, so the workers never wait for a full window.
pub(crate) struct ReadAhead<'t, I> {
    inner: I,
    ahead: VecDeque<Result<Job, Problem>>,
    limit: usize,
    tail: &'t Tail,
}

impl<'t, I> ReadAhead<'t, I> {
    /// `inner` read ahead by up to `limit` files (0: not at all).
    pub(crate) fn new(inner: I, limit: usize, tail: &'t Tail) -> ReadAhead<'t, I> {
        ReadAhead {
            inner,
            ahead: VecDeque::new(),
            limit,
            tail,
        }
    }
}

impl<I: Iterator<Item = Result<Job, Problem>>> Iterator for ReadAhead<'_, I> {
    type Item = Result<Job, Problem>;

    fn next(&mut self) -> Option<Self::Item> {
        // Two more read for each one taken, until the window is full.
        for _ in 0..2 {
            if self.tail.ended.load(Ordering::Relaxed) || self.ahead.len() > self.limit {
                break;
            }
            match self.inner.next() {
                Some(item) => {
                    if let Ok(job) = &item {
                        self.tail.found.fetch_add(job.size, Ordering::Relaxed);
                    }
                    self.ahead.push_back(item);
                }
                None => self.tail.ended.store(true, Ordering::Release),
            }
        }
        self.ahead.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn job(size: u64) -> Result<Job, Problem> {
        Ok(Job {
            path: PathBuf::from(format!("f{size}")),
            size,
            modified: 0,
            stamp: (0, 0),
            session: None,
        })
    }

    #[test]
    fn read_ahead_keeps_the_order_and_knows_the_end_early() {
        let tail = Tail::new(Instant::now(), 2);
        let items: Vec<_> = (1..=10).map(job).collect();
        let mut r = ReadAhead::new(items.into_iter(), 3, &tail);
        let mut got = Vec::new();
        let mut end_seen = None;
        while let Some(Ok(j)) = r.next() {
            got.push(j.size);
            if end_seen.is_none() && tail.ended.load(Ordering::Acquire) {
                end_seen = Some((got.len(), tail.found.load(Ordering::Relaxed)));
            }
        }
        // The end is seen with the window's files still to be taken (two of three:
        // the one taken with it was in the window), every size found by then.
        assert_eq!(end_seen, Some((8, 55)));
        assert_eq!(got, (1..=10).collect::<Vec<_>>());
        // Not read ahead: the end is known only when it comes.
        let tail = Tail::new(Instant::now(), 2);
        let items: Vec<_> = (1..=3).map(job).collect();
        let mut r = ReadAhead::new(items.into_iter(), 0, &tail);
        assert_eq!(r.next().map(|j| j.unwrap().size), Some(1));
        assert!(!tail.ended.load(Ordering::Acquire));
        assert_eq!(tail.found.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn due_once_when_the_rest_reads_in_about_the_time_of_the_write() {
        let start = Instant::now() - std::time::Duration::from_secs(1);
        let tail = Tail::new(start, 2);
        tail.found.store(1_000_000, Ordering::Relaxed);
        tail.done.store(900_000, Ordering::Relaxed);
        // The stream not ended: never.
        tail.flushed(1_000, 0.5);
        assert!(!tail.due(1_000));
        tail.ended.store(true, Ordering::Release);
        // 100,000 bytes left at ~900,000 a second, half of it beside the write: a
        // write of 0.05 s is too short to end with the reading, one of 0.5 s is not.
        assert!(!tail.due(100));
        assert!(tail.due(1_000));
        assert!(!tail.due(1_000), "once");
        tail.not_written();
        assert!(tail.due(1_000), "again when it could not be made");
        // One worker reads nothing beside a write.
        let alone = Tail::new(start, 1);
        alone.found.store(1_000_000, Ordering::Relaxed);
        alone.done.store(999_999, Ordering::Relaxed);
        alone.ended.store(true, Ordering::Release);
        alone.flushed(1, 10.0);
        assert!(!alone.due(1_000_000));
        // No flush measured: the guess (40,000 copies, 0.1 s).
        let fresh = Tail::new(start, 2);
        fresh.found.store(1_000_000, Ordering::Relaxed);
        fresh.done.store(900_000, Ordering::Relaxed);
        fresh.ended.store(true, Ordering::Release);
        assert!(!fresh.due(40_000));
        fresh.done.store(990_000, Ordering::Relaxed);
        assert!(fresh.due(40_000));
    }
}

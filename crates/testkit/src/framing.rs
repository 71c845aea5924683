//! The framing layer's test support (`transcope-jsonl`'s tests, the framing fuzz
//! target): an owning [`Recorder`] sink, a [`ShortReader`] that returns 1–7 bytes per
//! read, and [`frame_all_ways`], an equivalence tester checking that every way of
//! framing the same bytes (whole slice, short-read streaming, resuming at every
//! possible cut as a tail reader would) yields the same lines.
//!
//! Typical use with proptest:
//!
//! ```
//! use transcope_jsonl::Framer;
//! use transcope_testkit::framing::frame_all_ways;
//! let framer = Framer::builder().max_line(8).build();
//! let events = frame_all_ways(&framer, b"{}\r\n\nlong line here\n{\"a\":1}", 42).unwrap();
//! assert_eq!(events.len(), 3); // the unterminated tail is held
//! ```

use std::convert::Infallible;
use std::io::{self, Read};

use transcope_jsonl::{FinalLine, Framer, Line, LineSink, Summary};

use crate::Rng;

/// One framing event, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A delivered line.
    Line {
        /// [`Line::offset`].
        offset: u64,
        /// [`Line::number`].
        number: u64,
        /// [`Line::end`].
        end: u64,
        /// [`Line::bytes`], copied.
        bytes: Vec<u8>,
    },
    /// A skipped over-long line.
    Oversized {
        /// Offset of its first byte.
        offset: u64,
        /// Its line number.
        number: u64,
        /// Its content length.
        len: u64,
    },
}

/// A sink that records every event; optionally stops after `stop_after` events.
#[derive(Debug, Default, Clone)]
pub struct Recorder {
    /// Events in order.
    pub events: Vec<Event>,
    /// If set, return `Ok(false)` once this many events are recorded.
    pub stop_after: Option<usize>,
}

impl Recorder {
    fn go(&self) -> bool {
        self.stop_after.is_none_or(|n| self.events.len() < n)
    }
}

impl LineSink for Recorder {
    type Error = Infallible;

    fn line(&mut self, line: Line<'_>) -> Result<bool, Infallible> {
        self.events.push(Event::Line {
            offset: line.offset,
            number: line.number,
            end: line.end,
            bytes: line.bytes.to_vec(),
        });
        Ok(self.go())
    }

    fn oversized(&mut self, offset: u64, number: u64, len: u64) -> Result<bool, Infallible> {
        self.events.push(Event::Oversized {
            offset,
            number,
            len,
        });
        Ok(self.go())
    }
}

/// A reader over a slice that returns between 1 and 7 bytes per `read`.
#[derive(Debug, Clone)]
pub struct ShortReader<'a> {
    data: &'a [u8],
    rng: Rng,
}

impl<'a> ShortReader<'a> {
    /// Reads `data` in random short pieces determined by `seed`.
    pub fn new(data: &'a [u8], seed: u64) -> Self {
        ShortReader {
            data,
            rng: Rng::new(seed),
        }
    }
}

impl Read for ShortReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = (self.rng.range(1, 7) as usize)
            .min(out.len())
            .min(self.data.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn slice_events(framer: &Framer, buf: &[u8], offset: u64, line: u64) -> (Vec<Event>, Summary) {
    let mut rec = Recorder::default();
    let summary = match framer.frame_slice(buf, offset, line, &mut rec) {
        Ok(summary) => summary,
        Err(never) => match never {},
    };
    (rec.events, summary)
}

fn reader_events(
    framer: &Framer,
    buf: &[u8],
    offset: u64,
    line: u64,
    seed: u64,
    scratch: &mut Vec<u8>,
) -> Result<(Vec<Event>, Summary), String> {
    let mut rec = Recorder::default();
    let summary = framer
        .frame_reader(ShortReader::new(buf, seed), scratch, offset, line, &mut rec)
        .map_err(|e| format!("frame_reader failed: {e:?}"))?;
    Ok((rec.events, summary))
}

fn check<T: PartialEq + std::fmt::Debug>(what: &str, got: &T, want: &T) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}:\n  got:  {got:?}\n  want: {want:?}"))
    }
}

/// Frames `input` (offset 0, line 1) every way and checks they agree:
///
/// 1. [`Framer::frame_slice`] over the whole input (the reference);
/// 2. [`Framer::frame_reader`] over a [`ShortReader`] (same events and summary);
/// 3. for every cut `p` in `0..=input.len()`: frame `input[..p]` with
///    [`FinalLine::Hold`] (as a tail reader seeing a partial write would),
///    then resume at its `bytes_consumed` / `lines_consumed` with the
///    framer's own policy, alternately via slice and short-read reader;
///    the concatenated events must equal the reference;
/// 4. a multi-step tail read: several growing prefixes, each resumed from the
///    previous step's resume point.
///
/// Under [`Oversized::Stop`](transcope_jsonl::Oversized::Stop) a read that stops at an
/// over-long line is not resumed: what it saw must already be the reference.
///
/// Returns the reference events, or a description of the first mismatch.
pub fn frame_all_ways(framer: &Framer, input: &[u8], seed: u64) -> Result<Vec<Event>, String> {
    let mut rng = Rng::new(seed);
    let mut scratch = Vec::new();
    let hold = framer.with_final_line(FinalLine::Hold);

    let (reference, ref_summary) = slice_events(framer, input, 0, 1);
    let ends_nl = input.last() == Some(&b'\n');
    let tail = if ends_nl {
        0
    } else {
        input.len() - input.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)
    };
    // Only a framer stopping at an over-long line stops short of the end here.
    if !ref_summary.stopped {
        check(
            "slice summary: incomplete_tail",
            &ref_summary.incomplete_tail,
            &(tail as u64),
        )?;
        check(
            "slice summary: bytes_consumed",
            &ref_summary.bytes_consumed,
            &((input.len() - tail) as u64),
        )?;
    }
    check(
        "slice summary: event count",
        &(ref_summary.lines + ref_summary.oversized),
        &(reference.len() as u64),
    )?;

    let (events, summary) = reader_events(framer, input, 0, 1, rng.next_u64(), &mut scratch)?;
    check("frame_reader events", &events, &reference)?;
    check("frame_reader summary", &summary, &ref_summary)?;

    for p in 0..=input.len() {
        let (mut events, first) = slice_events(&hold, &input[..p], 0, 1);
        let c = first.bytes_consumed as usize;
        if c > p || (c > 0 && input[c - 1] != b'\n') {
            return Err(format!(
                "cut {p}: bytes_consumed {c} is not a line boundary"
            ));
        }
        if first.stopped {
            check(&format!("stopped within cut {p}"), &events, &reference)?;
            continue;
        }
        let line = 1 + first.lines_consumed;
        let (rest, _) = if p % 2 == 0 {
            slice_events(framer, &input[c..], c as u64, line)
        } else {
            reader_events(
                framer,
                &input[c..],
                c as u64,
                line,
                rng.next_u64(),
                &mut scratch,
            )?
        };
        events.extend(rest);
        check(
            &format!("resume after cut {p} (at {c})"),
            &events,
            &reference,
        )?;
    }

    let mut events = Vec::new();
    let (mut offset, mut line) = (0usize, 1u64);
    let mut p = 0;
    while p < input.len() {
        p = rng.range(p as u64 + 1, input.len() as u64) as usize;
        let f = if p == input.len() { framer } else { &hold };
        let (got, s) = reader_events(
            f,
            &input[offset..p],
            offset as u64,
            line,
            rng.next_u64(),
            &mut scratch,
        )?;
        events.extend(got);
        if s.stopped {
            break;
        }
        offset += s.bytes_consumed as usize;
        line += s.lines_consumed;
    }
    if input.is_empty() {
        check("empty input", &reference, &Vec::new())?;
    } else {
        check("multi-step tail read", &events, &reference)?;
    }
    Ok(reference)
}

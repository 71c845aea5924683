//! `Framer::frame_slice` vs `Framer::frame_reader` (through a reader returning short
//! reads and `Interrupted` errors) over the same bytes, with a small `max_line`.
//!
//! Input layout: `[max_line, flags, start, stop, data...]`
//! * `max_line` = byte % 32;
//! * `flags`: bit 0 = `FinalLine::Yield`, bits 1..=4 = buffer size - 1, bits 5..=7 seed
//!   the reader's chunking;
//! * `start`: start offset = byte * 1000, start line = byte + 1;
//! * `stop`: 0 = never stop, else the sink stops after `stop` events (both paths).
//!
//! Checks: identical event sequences and summaries; offsets contiguous, monotonic and
//! within the input; line numbers consecutive; each line's bytes are the input at its
//! offset; the summary's resume point is a line boundary. Small inputs additionally go
//! through `transcope_testkit::framing::frame_all_ways` (every resume cut).
#![no_main]

use std::io::{self, Read};

use libfuzzer_sys::fuzz_target;
use transcope_jsonl::{FinalLine, Framer, Summary};
use transcope_testkit::framing::{frame_all_ways, Event, Recorder};

/// Returns 1..=7 bytes per read, and `Interrupted` every few calls.
struct Choppy<'a> {
    data: &'a [u8],
    state: u32,
    calls: u32,
}

impl Read for Choppy<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        self.calls += 1;
        self.state = self.state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        if self.calls % 5 == 0 {
            return Err(io::Error::from(io::ErrorKind::Interrupted));
        }
        let want = 1 + ((self.state >> 16) % 7) as usize;
        let n = want.min(out.len()).min(self.data.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn recorder(stop: u8) -> Recorder {
    Recorder {
        events: Vec::new(),
        stop_after: (stop != 0).then_some(stop as usize),
    }
}

fn check_events(
    data: &[u8],
    framer: &Framer,
    start: u64,
    first_line: u64,
    ev: &[Event],
    s: &Summary,
) {
    let len = data.len() as u64;
    let mut expect_offset = start;
    let mut expect_number = first_line;
    for (i, e) in ev.iter().enumerate() {
        let last = i + 1 == ev.len();
        match e {
            Event::Line {
                offset,
                number,
                end,
                bytes,
            } => {
                assert_eq!(*offset, expect_offset, "offsets are contiguous");
                assert_eq!(*number, expect_number, "numbers are consecutive");
                assert!(
                    end > offset || (bytes.is_empty() && end >= offset),
                    "end after offset"
                );
                assert!(*end <= start + len, "end within input");
                assert!(bytes.len() <= framer.max_line(), "accepted line within cap");
                let rel = (offset - start) as usize;
                let rel_end = (end - start) as usize;
                assert_eq!(
                    &data[rel..rel + bytes.len()],
                    bytes.as_slice(),
                    "line bytes are the input"
                );
                let term = &data[rel + bytes.len()..rel_end];
                let terminated = term == b"\n" || term == b"\r\n";
                assert!(
                    terminated || (term.is_empty() && last && rel_end == data.len()),
                    "terminator {term:?}"
                );
                assert!(!bytes.contains(&b'\n'));
                expect_offset = *end;
            }
            Event::Oversized {
                offset,
                number,
                len: l,
            } => {
                assert_eq!(*offset, expect_offset);
                assert_eq!(*number, expect_number);
                assert!(
                    *l > framer.max_line() as u64,
                    "oversized line longer than cap"
                );
                let rel = (offset - start) as usize;
                let nl = data[rel..].iter().position(|&b| b == b'\n');
                let raw = nl.unwrap_or(data.len() - rel);
                let content = if nl.is_some() && raw > 0 && data[rel + raw - 1] == b'\r' {
                    raw - 1
                } else {
                    raw
                };
                assert_eq!(*l, content as u64, "oversized length");
                expect_offset = offset + raw as u64 + u64::from(nl.is_some());
            }
        }
        expect_number += 1;
    }
    assert!(expect_offset <= start + len);
    assert_eq!(s.lines + s.oversized, ev.len() as u64);
    let bc = s.bytes_consumed as usize;
    assert!(bc <= data.len());
    assert!(
        bc == 0 || data[bc - 1] == b'\n',
        "resume point is a line boundary"
    );
    assert!(s.lines_consumed <= ev.len() as u64);
    assert!(s.bytes_consumed + s.incomplete_tail <= len);
}

fuzz_target!(|input: &[u8]| {
    if input.len() < 4 {
        return;
    }
    let (head, data) = input.split_at(4);
    let max_line = usize::from(head[0] % 32);
    let final_line = if head[1] & 1 == 1 {
        FinalLine::Yield
    } else {
        FinalLine::Hold
    };
    let buffer_size = 1 + usize::from((head[1] >> 1) & 0x0f);
    let start = u64::from(head[2]) * 1000;
    let first_line = u64::from(head[2]) + 1;
    let stop = head[3];
    let framer = Framer::builder()
        .max_line(max_line)
        .final_line(final_line)
        .buffer_size(buffer_size)
        .build();

    let mut a = recorder(stop);
    let sa = match framer.frame_slice(data, start, first_line, &mut a) {
        Ok(s) => s,
        Err(never) => match never {},
    };

    let mut b = recorder(stop);
    let mut buf = Vec::new();
    let reader = Choppy {
        data,
        state: u32::from(head[1] >> 5),
        calls: 0,
    };
    let sb = framer
        .frame_reader(reader, &mut buf, start, first_line, &mut b)
        .expect("frame_reader over an in-memory reader cannot fail");

    assert_eq!(a.events, b.events, "frame_slice and frame_reader disagree");
    assert_eq!(sa, sb, "summaries disagree");
    assert!(
        buf.len() <= buffer_size.max(max_line + 2),
        "buffer stayed bounded: {}",
        buf.len()
    );
    check_events(data, &framer, start, first_line, &a.events, &sa);

    if data.len() <= 64 && stop == 0 {
        if let Err(e) = frame_all_ways(&framer, data, u64::from(head[1])) {
            panic!("frame_all_ways: {e}");
        }
    }
});

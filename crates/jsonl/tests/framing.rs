//! Framing behaviour: terminators, offsets, final-line policies, oversized
//! lines, bounded streaming memory, early stop and error propagation.

use std::io::{self, Cursor, Read};

use transcope_jsonl::{
    Error, FinalLine, Framer, Line, LineSink, Oversized, Summary, DEFAULT_BUFFER_SIZE,
    DEFAULT_MAX_LINE,
};
use transcope_testkit::framing::{frame_all_ways, Event, Recorder};

fn line(offset: u64, number: u64, end: u64, bytes: &[u8]) -> Event {
    Event::Line {
        offset,
        number,
        end,
        bytes: bytes.to_vec(),
    }
}

fn over(offset: u64, number: u64, len: u64) -> Event {
    Event::Oversized {
        offset,
        number,
        len,
    }
}

/// Frames with `frame_slice`, checks every other way agrees, returns events
/// and the slice summary.
fn frame(framer: &Framer, input: &[u8]) -> (Vec<Event>, Summary) {
    let all = frame_all_ways(framer, input, 7).unwrap_or_else(|e| panic!("{e}"));
    let mut rec = Recorder::default();
    let summary = framer.frame_slice(input, 0, 1, &mut rec).unwrap();
    assert_eq!(rec.events, all);
    (rec.events, summary)
}

fn hold() -> Framer {
    Framer::default()
}

fn yield_() -> Framer {
    Framer::builder().final_line(FinalLine::Yield).build()
}

#[test]
fn defaults() {
    let f = Framer::default();
    assert_eq!(f.max_line(), 16 * 1024 * 1024);
    assert_eq!(DEFAULT_MAX_LINE, 16 * 1024 * 1024);
    assert_eq!(f.final_line(), FinalLine::Hold);
    assert_eq!(f.oversized(), Oversized::Skip);
    assert_eq!(f.buffer_size(), DEFAULT_BUFFER_SIZE);
}

#[test]
fn lf_lines() {
    let (ev, s) = frame(&hold(), b"a\nbb\n");
    assert_eq!(ev, vec![line(0, 1, 2, b"a"), line(2, 2, 5, b"bb")]);
    assert_eq!(
        s,
        Summary {
            lines: 2,
            oversized: 0,
            bytes_consumed: 5,
            lines_consumed: 2,
            incomplete_tail: 0,
            stopped: false
        }
    );
}

#[test]
fn crlf_lines_strip_cr() {
    let (ev, s) = frame(&hold(), b"a\r\nbb\r\n");
    assert_eq!(ev, vec![line(0, 1, 3, b"a"), line(3, 2, 7, b"bb")]);
    assert_eq!(s.bytes_consumed, 7);
}

#[test]
fn mixed_terminators() {
    let (ev, s) = frame(&hold(), b"{\"a\":1}\r\n\nb\nc\r\n");
    assert_eq!(
        ev,
        vec![
            line(0, 1, 9, b"{\"a\":1}"),
            line(9, 2, 10, b""),
            line(10, 3, 12, b"b"),
            line(12, 4, 15, b"c"),
        ]
    );
    assert_eq!((s.lines, s.lines_consumed, s.bytes_consumed), (4, 4, 15));
}

#[test]
fn empty_input() {
    for f in [hold(), yield_()] {
        let (ev, s) = frame(&f, b"");
        assert!(ev.is_empty());
        assert_eq!(s, Summary::default());
    }
}

#[test]
fn only_newlines_are_blank_lines() {
    let (ev, s) = frame(&hold(), b"\n\n\r\n\n");
    assert_eq!(
        ev,
        vec![
            line(0, 1, 1, b""),
            line(1, 2, 2, b""),
            line(2, 3, 4, b""),
            line(4, 4, 5, b""),
        ]
    );
    assert_eq!((s.lines, s.bytes_consumed, s.incomplete_tail), (4, 5, 0));
}

#[test]
fn final_line_without_newline_hold() {
    let (ev, s) = frame(&hold(), b"a\nbc");
    assert_eq!(ev, vec![line(0, 1, 2, b"a")]);
    assert_eq!(
        (
            s.lines,
            s.bytes_consumed,
            s.lines_consumed,
            s.incomplete_tail
        ),
        (1, 2, 1, 2)
    );
}

#[test]
fn final_line_without_newline_yield() {
    let (ev, s) = frame(&yield_(), b"a\nbc");
    assert_eq!(ev, vec![line(0, 1, 2, b"a"), line(2, 2, 4, b"bc")]);
    // Delivered, but still not consumed: a tail reader must see it again.
    assert_eq!(
        (
            s.lines,
            s.bytes_consumed,
            s.lines_consumed,
            s.incomplete_tail
        ),
        (2, 2, 1, 2)
    );
}

#[test]
fn final_line_only_without_newline() {
    let (ev, s) = frame(&hold(), b"{\"x\"");
    assert!(ev.is_empty());
    assert_eq!((s.bytes_consumed, s.incomplete_tail), (0, 4));
    let (ev, _) = frame(&yield_(), b"{\"x\"");
    assert_eq!(ev, vec![line(0, 1, 4, b"{\"x\"")]);
}

#[test]
fn final_line_with_newline_same_under_both_policies() {
    let input = b"a\r\nb\n";
    let (h, hs) = frame(&hold(), input);
    let (y, ys) = frame(&yield_(), input);
    assert_eq!(h, y);
    assert_eq!(hs, ys);
    assert_eq!((hs.bytes_consumed, hs.incomplete_tail), (5, 0));
}

#[test]
fn lone_cr_stays_in_line() {
    let (ev, _) = frame(&hold(), b"a\rb\n\r\r\n\rc\n");
    assert_eq!(
        ev,
        vec![
            line(0, 1, 4, b"a\rb"),
            line(4, 2, 7, b"\r"),
            line(7, 3, 10, b"\rc"),
        ]
    );
    // An unterminated tail ending in `\r` is delivered verbatim under Yield.
    let (ev, s) = frame(&yield_(), b"x\r");
    assert_eq!(ev, vec![line(0, 1, 2, b"x\r")]);
    assert_eq!(s.incomplete_tail, 2);
}

#[test]
fn start_offset_and_line_are_applied() {
    let f = hold();
    let mut rec = Recorder::default();
    let s = f.frame_slice(b"a\n\nbc\r\nd", 100, 10, &mut rec).unwrap();
    assert_eq!(
        rec.events,
        vec![
            line(100, 10, 102, b"a"),
            line(102, 11, 103, b""),
            line(103, 12, 107, b"bc")
        ]
    );
    // Relative to the start.
    assert_eq!(
        (s.bytes_consumed, s.lines_consumed, s.incomplete_tail),
        (7, 3, 1)
    );

    let mut rec2 = Recorder::default();
    let s2 = f
        .frame_reader(
            Cursor::new(b"a\n\nbc\r\nd"),
            &mut Vec::new(),
            100,
            10,
            &mut rec2,
        )
        .unwrap();
    assert_eq!(rec2.events, rec.events);
    assert_eq!(s2, s);
}

#[test]
fn oversized_line_skipped_and_next_delivered() {
    let f = Framer::builder().max_line(4).build();
    let (ev, s) = frame(&f, b"12345\nabcd\n\n");
    assert_eq!(
        ev,
        vec![over(0, 1, 5), line(6, 2, 11, b"abcd"), line(11, 3, 12, b"")]
    );
    assert_eq!(
        (s.lines, s.oversized, s.lines_consumed, s.bytes_consumed),
        (2, 1, 3, 12)
    );
}

#[test]
fn cap_applies_to_content_without_crlf() {
    let f = Framer::builder().max_line(4).build();
    let (ev, _) = frame(&f, b"abcd\r\n12345\r\nxyz\n");
    assert_eq!(
        ev,
        vec![
            line(0, 1, 6, b"abcd"),
            over(6, 2, 5),
            line(13, 3, 17, b"xyz")
        ]
    );
    // A `\r` that is not part of `\r\n` counts towards the cap.
    let (ev, _) = frame(&f, b"abc\r\r\n");
    assert_eq!(ev, vec![line(0, 1, 6, b"abc\r")]);
    let (ev, _) = frame(&f, b"abcd\r\r\n");
    assert_eq!(ev, vec![over(0, 1, 5)]);
}

#[test]
fn oversized_tail_policies() {
    let f = Framer::builder().max_line(3).build();
    let (ev, s) = frame(&f, b"ok\n12345");
    assert_eq!(ev, vec![line(0, 1, 3, b"ok")]);
    assert_eq!((s.oversized, s.incomplete_tail), (0, 5));
    let (ev, s) = frame(&f.with_final_line(FinalLine::Yield), b"ok\n12345");
    assert_eq!(ev, vec![line(0, 1, 3, b"ok"), over(3, 2, 5)]);
    assert_eq!(
        (s.oversized, s.bytes_consumed, s.incomplete_tail),
        (1, 3, 5)
    );
}

/// `Oversized::Stop` ends framing at the first over-long line, which is reported (with
/// `len` = cap + 1) but not consumed; every way of framing agrees.
#[test]
fn oversized_stop_ends_framing_at_the_line() {
    let f = Framer::builder()
        .max_line(2)
        .oversized(Oversized::Stop)
        .build();
    let (ev, s) = frame(&f, b"ok\ntoo long\nnever\n");
    assert_eq!(ev, vec![line(0, 1, 3, b"ok"), over(3, 2, 3)]);
    assert_eq!(
        (
            s.lines,
            s.oversized,
            s.bytes_consumed,
            s.lines_consumed,
            s.incomplete_tail,
            s.stopped
        ),
        (1, 1, 3, 1, 0, true)
    );
    // An unterminated tail over the cap stops under either final-line policy once it
    // is more than cap + 1 bytes (a `\r` could still end one of cap + 1).
    for final_line in [FinalLine::Hold, FinalLine::Yield] {
        let f = f.with_final_line(final_line);
        let (ev, s) = frame(&f, b"ok\nabc\r");
        assert_eq!(ev, vec![line(0, 1, 3, b"ok"), over(3, 2, 3)]);
        assert!(s.stopped);
    }
    let (ev, s) = frame(&f, b"ab\r");
    assert_eq!((ev, s.incomplete_tail, s.stopped), (vec![], 3, false));
    let (ev, _) = frame(&f, b"ab\r\n");
    assert_eq!(ev, vec![line(0, 1, 4, b"ab")]);
    let (ev, _) = frame(&f.with_final_line(FinalLine::Yield), b"abc");
    assert_eq!(ev, vec![over(0, 1, 3)]);
}

/// A stream under `Oversized::Stop` is read no further than the cap of an over-long line:
/// an endless line ends the framing instead of being streamed past.
#[test]
fn oversized_stop_reads_no_further_than_the_cap() {
    struct Counted<R>(R, u64);
    impl<R: Read> Read for Counted<R> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.0.read(out)?;
            self.1 += n as u64;
            Ok(n)
        }
    }
    let f = Framer::builder()
        .max_line(1000)
        .buffer_size(64)
        .oversized(Oversized::Stop)
        .build();
    let mut rec = Recorder::default();
    let mut reader = Counted(b"ok\n".chain(io::repeat(b'x')), 0);
    let s = f
        .frame_reader(&mut reader, &mut Vec::new(), 0, 1, &mut rec)
        .unwrap();
    assert_eq!(rec.events, vec![line(0, 1, 3, b"ok"), over(3, 2, 1001)]);
    assert!(s.stopped);
    assert!(reader.1 <= 3 + 1002 + 64, "read {} bytes", reader.1);
}

#[test]
fn default_cap_exact_and_plus_one() {
    let f = Framer::default();
    let mut input = vec![b'x'; DEFAULT_MAX_LINE + 1];
    input.push(b'\n');
    input.extend(vec![b'y'; DEFAULT_MAX_LINE]);
    input.extend(b"\r\nz\n");
    let big = (DEFAULT_MAX_LINE + 2) as u64;
    let third = (DEFAULT_MAX_LINE + 2) as u64 + big;

    let mut rec = Recorder::default();
    let s = f.frame_slice(&input, 0, 1, &mut rec).unwrap();
    assert_eq!(rec.events.len(), 3);
    assert_eq!(rec.events[0], over(0, 1, DEFAULT_MAX_LINE as u64 + 1));
    match &rec.events[1] {
        Event::Line {
            offset,
            number,
            end,
            bytes,
        } => {
            assert_eq!((*offset, *number, *end), (big, 2, third));
            assert_eq!(bytes.len(), DEFAULT_MAX_LINE);
        }
        e => panic!("expected a line, got {e:?}"),
    }
    assert_eq!(rec.events[2], line(third, 3, third + 2, b"z"));
    assert_eq!((s.lines, s.oversized), (2, 1));

    let mut buf = Vec::new();
    let mut rec2 = Recorder::default();
    let s2 = f
        .frame_reader(Cursor::new(&input), &mut buf, 0, 1, &mut rec2)
        .unwrap();
    assert_eq!(rec2.events, rec.events);
    assert_eq!(s2, s);
    assert!(
        buf.capacity() <= DEFAULT_MAX_LINE + 2 + 4096,
        "{}",
        buf.capacity()
    );
}

/// Reader producing `n` bytes of `x` (never a newline) then `tail`.
fn long_line(n: u64, tail: &'static [u8]) -> impl Read {
    io::repeat(b'x').take(n).chain(tail)
}

#[test]
fn streaming_discards_long_line_with_bounded_buffer() {
    let f = Framer::builder().max_line(16).buffer_size(64).build();
    let n = 10_000_000;
    let mut buf = Vec::new();
    let mut rec = Recorder::default();
    let s = f
        .frame_reader(long_line(n, b"\r\nok\n"), &mut buf, 0, 1, &mut rec)
        .unwrap();
    assert_eq!(
        rec.events,
        vec![over(0, 1, n), line(n + 2, 2, n + 5, b"ok")]
    );
    assert_eq!((s.lines, s.oversized, s.bytes_consumed), (1, 1, n + 5));
    assert!(buf.capacity() <= 128, "buffer grew to {}", buf.capacity());
}

#[test]
fn streaming_long_line_without_newline_is_bounded() {
    let n = 10_000_000;
    for (policy, expect) in [
        (FinalLine::Hold, vec![]),
        (FinalLine::Yield, vec![over(0, 1, n)]),
    ] {
        let f = Framer::builder()
            .max_line(16)
            .buffer_size(64)
            .final_line(policy)
            .build();
        let mut buf = Vec::new();
        let mut rec = Recorder::default();
        let s = f
            .frame_reader(long_line(n, b""), &mut buf, 0, 1, &mut rec)
            .unwrap();
        assert_eq!(rec.events, expect);
        assert_eq!((s.bytes_consumed, s.incomplete_tail), (0, n));
        assert!(buf.capacity() <= 128, "buffer grew to {}", buf.capacity());
    }
}

#[test]
fn streaming_default_buffer_stays_bounded_for_huge_line() {
    // Cap 1 MiB, 40 MiB line without newline: buffer never exceeds the cap.
    let cap = 1024 * 1024;
    let f = Framer::builder().max_line(cap).build();
    let mut buf = Vec::new();
    let mut rec = Recorder::default();
    let s = f
        .frame_reader(long_line(40 << 20, b"\n{}\n"), &mut buf, 0, 1, &mut rec)
        .unwrap();
    assert_eq!(rec.events.len(), 2);
    assert_eq!(rec.events[0], over(0, 1, 40 << 20));
    assert_eq!(s.lines, 1);
    assert!(
        buf.capacity() <= cap + 2 + 4096,
        "buffer grew to {}",
        buf.capacity()
    );
}

#[test]
fn streaming_buffer_grows_only_to_fit_accepted_line() {
    let f = Framer::builder().max_line(10_000).buffer_size(8).build();
    let mut input = vec![b'a'; 1000];
    input.push(b'\n');
    let mut buf = Vec::new();
    let mut rec = Recorder::default();
    f.frame_reader(Cursor::new(&input), &mut buf, 0, 1, &mut rec)
        .unwrap();
    assert_eq!(rec.events.len(), 1);
    assert!(
        (1000..=2048).contains(&buf.capacity()),
        "capacity {}",
        buf.capacity()
    );
}

#[test]
fn stop_early_slice_and_reader() {
    let input = b"a\nb\nc\n";
    let f = Framer::default();
    let mut rec = Recorder {
        stop_after: Some(2),
        ..Recorder::default()
    };
    let s = f.frame_slice(input, 0, 1, &mut rec).unwrap();
    assert_eq!(rec.events, vec![line(0, 1, 2, b"a"), line(2, 2, 4, b"b")]);
    assert!(s.stopped);
    assert_eq!(
        (
            s.lines,
            s.bytes_consumed,
            s.lines_consumed,
            s.incomplete_tail
        ),
        (2, 4, 2, 0)
    );

    let mut rec2 = Recorder {
        stop_after: Some(2),
        ..Recorder::default()
    };
    let s2 = f
        .frame_reader(Cursor::new(input), &mut Vec::new(), 0, 1, &mut rec2)
        .unwrap();
    assert_eq!(rec2.events, rec.events);
    assert_eq!(s2, s);
}

#[test]
fn stop_early_from_oversized_and_closure_sink() {
    let f = Framer::builder().max_line(2).buffer_size(4).build();
    let input = b"ok\ntoo long\nnever\n";
    let mut rec = Recorder {
        stop_after: Some(2),
        ..Recorder::default()
    };
    let s = f
        .frame_reader(Cursor::new(input), &mut Vec::new(), 0, 1, &mut rec)
        .unwrap();
    assert_eq!(rec.events, vec![line(0, 1, 3, b"ok"), over(3, 2, 8)]);
    assert!(s.stopped);
    assert_eq!(s.bytes_consumed, 12);

    let mut n = 0;
    let s = Framer::default()
        .frame_slice(
            b"a\nb\nc\n",
            0,
            1,
            transcope_jsonl::FnSink(|_: Line<'_>| {
                n += 1;
                Ok::<_, ()>(n < 1)
            }),
        )
        .unwrap();
    assert_eq!(n, 1);
    assert!(s.stopped);
    assert_eq!(s.bytes_consumed, 2);
}

struct FailOn(u64);

impl LineSink for FailOn {
    type Error = String;
    fn line(&mut self, line: Line<'_>) -> Result<bool, String> {
        if line.number == self.0 {
            Err(format!("bad line {}", line.number))
        } else {
            Ok(true)
        }
    }
}

#[test]
fn sink_errors_propagate() {
    let f = Framer::default();
    assert_eq!(
        f.frame_slice(b"a\nb\nc\n", 0, 1, FailOn(2)),
        Err("bad line 2".to_string())
    );
    match f.frame_reader(Cursor::new(b"a\nb\nc\n"), &mut Vec::new(), 0, 1, FailOn(3)) {
        Err(Error::Sink(e)) => assert_eq!(e, "bad line 3"),
        other => panic!("{other:?}"),
    }
}

/// Fails with `Interrupted` once, then with a real error after `ok` bytes.
struct Flaky {
    data: &'static [u8],
    interrupted: bool,
}

impl Read for Flaky {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if !self.interrupted {
            self.interrupted = true;
            return Err(io::ErrorKind::Interrupted.into());
        }
        if self.data.is_empty() {
            return Err(io::Error::other("disk on fire"));
        }
        let n = self.data.len().min(out.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

#[test]
fn reader_io_errors_and_interrupts() {
    let mut rec = Recorder::default();
    let r = Framer::default().frame_reader(
        Flaky {
            data: b"a\n",
            interrupted: false,
        },
        &mut Vec::new(),
        0,
        1,
        &mut rec,
    );
    assert_eq!(rec.events, vec![line(0, 1, 2, b"a")]);
    match r {
        Err(e @ Error::Io { path: None, .. }) => {
            assert_eq!(e.to_string(), "while reading input");
            let source = std::error::Error::source(&e).unwrap();
            assert_eq!(source.to_string(), "disk on fire");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn reused_buffer_gives_same_results() {
    let f = Framer::builder().max_line(5).buffer_size(3).build();
    let mut buf = vec![0xAA; 100];
    for input in [&b"abc\nzz\r\n"[..], b"\n123456\nq", b"x\ny\n"] {
        let mut a = Recorder::default();
        let mut b = Recorder::default();
        f.frame_slice(input, 0, 1, &mut a).unwrap();
        f.frame_reader(Cursor::new(input), &mut buf, 0, 1, &mut b)
            .unwrap();
        assert_eq!(a.events, b.events);
    }
}

/// A framer sized for a stream of `len` bytes frames it as the default framer does,
/// with a buffer of a page or a few (not the default 256 KiB: a Stop's read of one
/// turn zeroed and faulted in all of it), grown only for a line longer than that.
#[test]
fn a_framer_sized_for_a_short_stream_frames_it_alike_in_a_small_buffer() {
    let turn: Vec<u8> = (0..40)
        .flat_map(|i| format!("{{\"n\":{i},\"pad\":\"{}\"}}\n", "x".repeat(i * 7)).into_bytes())
        .collect();
    let mut long = turn.clone();
    long.extend(std::iter::repeat_n(b'y', 20_000));
    long.extend_from_slice(b"\n{\"tail\":1}");
    for data in [
        &b""[..],
        b"{}\n",
        &turn[..4095],
        &turn[..4096],
        &turn,
        &long,
    ] {
        for policy in [FinalLine::Hold, FinalLine::Yield] {
            let default = Framer::builder().final_line(policy).build();
            let sized = default.clone().sized_for(data.len() as u64);
            assert!(sized.buffer_size() <= 8192.max(data.len().div_ceil(4096) * 4096));
            assert_eq!(sized.buffer_size() % 4096, 0);
            let run = |f: &Framer| {
                let (mut rec, mut buf) = (Recorder::default(), Vec::new());
                let s = f.frame_reader(data, &mut buf, 0, 1, &mut rec).unwrap();
                (rec.events, s, buf.len())
            };
            let (want, want_summary, _) = run(&default);
            let (got, got_summary, buffer) = run(&sized);
            assert_eq!(got, want, "{} bytes, {policy:?}", data.len());
            assert_eq!(got_summary, want_summary);
            assert!(buffer < DEFAULT_BUFFER_SIZE / 8, "a {buffer}-byte buffer");
        }
    }
    // Never larger than the framer's own buffer.
    assert_eq!(
        Framer::default().sized_for(u64::MAX).buffer_size(),
        DEFAULT_BUFFER_SIZE
    );
    let small = Framer::builder().buffer_size(100).build();
    assert_eq!(small.sized_for(10_000).buffer_size(), 100);
}

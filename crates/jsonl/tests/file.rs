//! File helpers: `read_file` under every policy, `read_from` resume, errors.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

use transcope_jsonl::{
    read_file, read_from, read_regular, Error, FinalLine, Framer, ReadPolicy, Summary,
    MMAP_THRESHOLD,
};
use transcope_testkit::framing::{Event, Recorder};

const POLICIES: [ReadPolicy; 4] = [
    ReadPolicy::Read,
    ReadPolicy::Mmap,
    ReadPolicy::Auto { growing: true },
    ReadPolicy::Auto { growing: false },
];

fn sample(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 100);
    let mut i = 0u64;
    while out.len() < len {
        let pad = "p".repeat((i * 7919 % 300) as usize);
        let eol = if i.is_multiple_of(3) { "\r\n" } else { "\n" };
        out.extend(format!("{{\"i\":{i},\"pad\":\"{pad}\"}}{eol}").as_bytes());
        if i.is_multiple_of(11) {
            out.push(b'\n');
        }
        i += 1;
    }
    out
}

fn slice_reference(framer: &Framer, data: &[u8]) -> (Vec<Event>, Summary) {
    let mut rec = Recorder::default();
    let s = framer.frame_slice(data, 0, 1, &mut rec).unwrap();
    (rec.events, s)
}

fn write(path: &Path, data: &[u8]) {
    std::fs::write(path, data).unwrap();
}

fn append(path: &Path, data: &[u8]) {
    let mut f = OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(data).unwrap();
}

#[test]
fn read_file_all_policies_match_slice() {
    let dir = tempfile::tempdir().unwrap();
    // Small (below the mmap threshold) and large (above), both with an
    // unterminated tail.
    for len in [10_000, MMAP_THRESHOLD as usize + 1000] {
        let mut data = sample(len);
        data.extend(b"{\"partial\":");
        let path = dir.path().join(format!("s{len}.jsonl"));
        write(&path, &data);
        for final_line in [FinalLine::Hold, FinalLine::Yield] {
            let framer = Framer::builder()
                .max_line(200)
                .final_line(final_line)
                .build();
            let (want, want_s) = slice_reference(&framer, &data);
            assert!(want_s.oversized > 0 && want_s.lines > 40);
            for policy in POLICIES {
                let mut rec = Recorder::default();
                let s = read_file(&path, policy, &framer, &mut rec).unwrap();
                assert_eq!(rec.events, want, "{policy:?} {final_line:?} len {len}");
                assert_eq!(s, want_s, "{policy:?} {final_line:?} len {len}");
            }
        }
    }
}

#[test]
fn read_file_empty_file_every_policy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.jsonl");
    write(&path, b"");
    for policy in POLICIES {
        let mut rec = Recorder::default();
        let s = read_file(&path, policy, &Framer::default(), &mut rec).unwrap();
        assert!(rec.events.is_empty());
        assert_eq!(s, Summary::default());
    }
}

#[test]
fn missing_file_error_names_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nope.jsonl");
    for policy in POLICIES {
        let err = read_file(&path, policy, &Framer::default(), Recorder::default()).unwrap_err();
        match &err {
            Error::Io {
                path: Some(p),
                source,
            } => {
                assert_eq!(p, &path);
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(err.to_string(), format!("while reading {}", path.display()));
        assert!(std::error::Error::source(&err).is_some());
    }
    let err = read_from(&path, 0, 1, &Framer::default(), Recorder::default()).unwrap_err();
    assert!(matches!(err, Error::Io { path: Some(ref p), .. } if p == &path));
}

#[test]
fn read_from_tails_a_growing_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.jsonl");
    // Yield is ignored by read_from: the partial line is never consumed.
    let framer = Framer::builder().final_line(FinalLine::Yield).build();
    let mut seen = Vec::new();
    let (mut offset, mut line) = (0u64, 1u64);
    let poll = |seen: &mut Vec<Event>, offset: &mut u64, line: &mut u64| {
        let mut rec = Recorder::default();
        let s = read_from(&path, *offset, *line, &framer, &mut rec).unwrap();
        seen.extend(rec.events);
        *offset += s.bytes_consumed;
        *line += s.lines_consumed;
        s
    };

    write(&path, b"{\"a\":1}\n{\"b\":");
    let s = poll(&mut seen, &mut offset, &mut line);
    assert_eq!((s.lines, s.bytes_consumed, s.incomplete_tail), (1, 8, 5));
    append(&path, b"2}\r");
    let s = poll(&mut seen, &mut offset, &mut line);
    assert_eq!((s.lines, s.bytes_consumed, s.incomplete_tail), (0, 0, 8));
    append(&path, b"\n\n{\"c\":3}\n");
    let s = poll(&mut seen, &mut offset, &mut line);
    assert_eq!((s.lines, s.incomplete_tail), (3, 0));
    let s = poll(&mut seen, &mut offset, &mut line);
    assert_eq!(s, Summary::default());

    let data = std::fs::read(&path).unwrap();
    let (want, _) = slice_reference(&Framer::default(), &data);
    assert_eq!(seen, want);
    assert_eq!((offset, line), (data.len() as u64, 5));
}

#[test]
fn read_from_every_line_boundary_matches_whole_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.jsonl");
    let data = sample(5_000);
    write(&path, &data);
    let framer = Framer::builder().max_line(150).buffer_size(64).build();
    let (want, _) = slice_reference(&framer, &data);
    let mut boundaries = vec![(0u64, 1u64)];
    for e in &want {
        let (end, number) = match e {
            Event::Line { end, number, .. } => (*end, *number),
            Event::Oversized {
                offset,
                number,
                len,
            } => {
                // Find the terminator after the skipped content.
                let mut end = (*offset + *len) as usize;
                while data[end] != b'\n' {
                    end += 1;
                }
                ((end + 1) as u64, *number)
            }
        };
        boundaries.push((end, number + 1));
    }
    for (k, &(offset, line)) in boundaries.iter().enumerate() {
        let mut rec = Recorder::default();
        let s = read_from(&path, offset, line, &framer, &mut rec).unwrap();
        assert_eq!(rec.events, want[k..], "resume at {offset}");
        assert_eq!(offset + s.bytes_consumed, data.len() as u64);
    }
}

#[test]
fn read_from_past_end_is_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    write(&path, b"a\n");
    let err = read_from(&path, 10, 5, &Framer::default(), Recorder::default()).unwrap_err();
    match &err {
        Error::Truncated {
            path: p,
            offset,
            len,
        } => {
            assert_eq!((p, *offset, *len), (&path, 10, 2));
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("truncated"));
    // Exactly at the end is fine: nothing new yet.
    let s = read_from(&path, 2, 2, &Framer::default(), Recorder::default()).unwrap();
    assert_eq!(s, Summary::default());
}

#[test]
fn sink_error_from_file_is_sink_variant() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    write(&path, b"a\nb\n");
    for policy in POLICIES {
        let r = read_file(
            &path,
            policy,
            &Framer::default(),
            transcope_jsonl::FnSink(
                |l: transcope_jsonl::Line<'_>| {
                    if l.number == 2 {
                        Err("nope")
                    } else {
                        Ok(true)
                    }
                },
            ),
        );
        assert!(matches!(r, Err(Error::Sink("nope"))), "{policy:?}");
    }
}

/// `read_regular` frames what `frame_slice` frames, under the framer's policies; a path
/// that is not a regular file is an `InvalidInput` error naming it, a missing one keeps
/// `NotFound`.
#[test]
fn read_regular_frames_a_regular_file_and_refuses_anything_else() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.jsonl");
    let mut data = sample(300_000);
    data.extend(b"{\"partial\":");
    write(&path, &data);
    for final_line in [FinalLine::Hold, FinalLine::Yield] {
        let framer = Framer::builder()
            .final_line(final_line)
            .buffer_size(4096)
            .build();
        let mut rec = Recorder::default();
        let s = read_regular(&path, &framer, &mut rec).unwrap();
        assert_eq!((rec.events, s), slice_reference(&framer, &data));
    }
    for (what, kind) in [
        (dir.path().to_path_buf(), std::io::ErrorKind::InvalidInput),
        (dir.path().join("nope"), std::io::ErrorKind::NotFound),
    ] {
        match read_regular(&what, &Framer::default(), Recorder::default()) {
            Err(Error::Io {
                path: Some(p),
                source,
            }) => {
                assert_eq!(p, what);
                assert_eq!(source.kind(), kind);
            }
            other => panic!("{other:?}"),
        }
    }
}

//! Property test: every way of framing (slice, short-read streaming, resume
//! at every cut, multi-step tail reads) agrees, for random inputs, caps,
//! buffer sizes, final-line and over-long-line policies.

use proptest::prelude::*;
use transcope_jsonl::{FinalLine, Framer, Oversized};
use transcope_testkit::framing::{frame_all_ways, Event};

fn input() -> impl Strategy<Value = Vec<u8>> {
    // Mostly line structure: newlines, CRs, a few content bytes.
    let byte = prop_oneof![
        4 => Just(b'\n'),
        3 => Just(b'\r'),
        6 => Just(b'a'),
        2 => Just(b'{'),
        1 => any::<u8>(),
    ];
    prop::collection::vec(byte, 0..160)
}

fn policy() -> impl Strategy<Value = FinalLine> {
    prop_oneof![Just(FinalLine::Hold), Just(FinalLine::Yield)]
}

fn oversized() -> impl Strategy<Value = Oversized> {
    prop_oneof![Just(Oversized::Skip), Just(Oversized::Stop)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn all_framings_agree(
        data in input(),
        max_line in 0usize..12,
        buffer_size in 1usize..20,
        final_line in policy(),
        over in oversized(),
        seed in any::<u64>(),
    ) {
        let framer = Framer::builder()
            .max_line(max_line)
            .buffer_size(buffer_size)
            .final_line(final_line)
            .oversized(over)
            .build();
        let events = frame_all_ways(&framer, &data, seed).map_err(TestCaseError::fail)?;
        // Line numbers are consecutive from 1 and every line respects the cap.
        for (i, e) in events.iter().enumerate() {
            match e {
                Event::Line { number, bytes, .. } => {
                    prop_assert_eq!(*number, i as u64 + 1);
                    prop_assert!(bytes.len() <= max_line);
                }
                Event::Oversized { number, len, .. } => {
                    prop_assert_eq!(*number, i as u64 + 1);
                    prop_assert!(*len > max_line as u64);
                    // Stopping: the first over-long line is the last event.
                    if over == Oversized::Stop {
                        prop_assert_eq!(i + 1, events.len());
                    }
                }
            }
        }
    }

    #[test]
    fn all_framings_agree_default_cap(data in input(), final_line in policy(), seed in any::<u64>()) {
        let framer = Framer::builder().final_line(final_line).build();
        let events = frame_all_ways(&framer, &data, seed).map_err(TestCaseError::fail)?;
        let newlines = data.iter().filter(|&&b| b == b'\n').count();
        let tail = !data.is_empty() && data.last() != Some(&b'\n');
        let expect = newlines + usize::from(tail && final_line == FinalLine::Yield);
        prop_assert_eq!(events.len(), expect);
    }
}

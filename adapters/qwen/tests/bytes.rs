//! Every one-byte change of every line of a Qwen Code session: the adapter agrees
//! with JSON's grammar on which lines are records (a line that is no JSON object is a
//! skip of the matching reason; one that is, is decoded or ignored, never a panic), and a changed first line placed nowhere in particular is
//! claimed only when it still carries a key only Qwen writes.

use std::path::Path;

use serde::de::IgnoredAny;
use transcope_adapter_qwen::{classify, QwenAdapter, QwenFactory, Said};
use transcope_core::adapter::{from_fn, Adapter, AdapterFactory, Skip};
use transcope_core::{Entry, LinePos};
use transcope_testkit::mutate::{one_byte_changes, BYTES};

const SESSION: &str = "public/qwen/home/.qwen/projects/-work-demo-app/chats/0a0b0c0d-1111-4222-8333-444455556666.jsonl";

#[test]
fn every_one_byte_change_is_a_record_or_a_skip_as_json_says() {
    let text = std::fs::read_to_string(transcope_testkit::testdata(SESSION)).unwrap();
    let (mut decoded, mut skipped) = (0, 0);
    for line in text.lines() {
        let (_, tried) = one_byte_changes(line.as_bytes(), BYTES, |v| {
            let pos = LinePos {
                offset: 10,
                line: 2,
            };
            let mut n = 0;
            let got = QwenAdapter.decode(v, pos, &mut from_fn(|_: &Entry<'_>| n += 1));
            // JSON's grammar as serde_json reads it (a number too large for a float
            // is still JSON, as it is to Python), and whether it is an object.
            let reference = std::str::from_utf8(v).ok().and_then(|s| {
                serde_json::from_str::<IgnoredAny>(s.trim())
                    .ok()
                    .map(|_| s.trim_start().starts_with('{'))
            });
            match (&reference, got) {
                (Some(true), Ok(())) => {
                    assert_eq!(n, 1, "{}", String::from_utf8_lossy(v));
                    decoded += 1;
                }
                (Some(true), Err(Skip::Ignored | Skip::WrongType)) => skipped += 1,
                (Some(false), Err(Skip::NotObject)) => skipped += 1,
                (None, Err(Skip::InvalidJson | Skip::InvalidUtf8 | Skip::Blank)) => {
                    assert_eq!(n, 0);
                    skipped += 1
                }
                (r, g) => panic!(
                    "reference {:?}, adapter {g:?}: {}",
                    r.is_some(),
                    String::from_utf8_lossy(v)
                ),
            }
            true
        });
        assert!(tried > 0);
    }
    assert!(decoded > 10_000 && skipped > 1_000, "{decoded} {skipped}");
}

#[test]
fn a_changed_first_line_is_claimed_only_with_a_qwen_key() {
    let text = std::fs::read_to_string(transcope_testkit::testdata(SESSION)).unwrap();
    let first = text.lines().next().unwrap();
    let anywhere = Path::new("/tmp/elsewhere/x.jsonl");
    let mut claimed = 0;
    one_byte_changes(first.as_bytes(), BYTES, |v| {
        let sniffed = QwenFactory.sniff(anywhere, v).is_some();
        assert_eq!(sniffed, classify(v) == Said::Qwen);
        claimed += usize::from(sniffed);
        true
    });
    assert!(claimed > 1000, "{claimed}");
}

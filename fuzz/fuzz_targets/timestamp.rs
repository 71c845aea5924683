//! `transcope_core::timestamp::parse` on arbitrary UTF-8: never panics; a parsed
//! instant in Python's datetime range formats (`to_python_isoformat`) to a string that
//! parses back to the same instant.
//!
//! Instants outside 0001-01-01T00:00:00Z ..= 9999-12-31T23:59:59.999999Z are legal
//! results (`0001-01-01T00:00:00+01:00` is year 0 in UTC, as Python's own subtraction
//! gives) but have no Python isoformat, so the round trip is only checked inside it.
//! The first 8 bytes are also formatted as a raw `Instant` (any i64) and, when in
//! range, round-tripped the same way.
#![no_main]

use libfuzzer_sys::fuzz_target;
use transcope_core::timestamp::{parse, Instant};

const MIN: i64 = -62_135_596_800_000_000; // 0001-01-01T00:00:00Z
const MAX: i64 = 253_402_300_799_999_999; // 9999-12-31T23:59:59.999999Z

fn round_trip(t: Instant) {
    let iso = t.to_python_isoformat();
    let _ = t.to_compact_utc();
    let _ = t.to_string();
    if (MIN..=MAX).contains(&t.unix_micros()) {
        assert_eq!(
            parse(&iso),
            Some(t),
            "{iso:?} does not parse back to {}",
            t.unix_micros()
        );
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() >= 8 {
        let raw = i64::from_le_bytes(data[..8].try_into().unwrap());
        round_trip(Instant::from_unix_micros(raw));
    }
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(t) = parse(s) {
        round_trip(t);
    }
});

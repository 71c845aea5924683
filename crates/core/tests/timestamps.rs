//! The §1.4 table of scope-log.md, and a differential test against Python 3.11's own
//! `datetime.fromisoformat` on generated strings.

use std::io::Write;
use std::process::{Command, Stdio};

use transcope_core::timestamp::{parse, Instant};

fn micros(s: &str) -> i64 {
    parse(s)
        .unwrap_or_else(|| panic!("{s:?} should parse"))
        .unix_micros()
}

const BASE: i64 = 1_791_453_600_000_000; // 2026-10-08T10:00:00Z

#[test]
fn spec_table_accepted_forms() {
    // Z, +00:00, -00:00 and naive are all the same UTC instant.
    for s in [
        "2026-10-08T10:00:00Z",
        "2026-10-08T10:00:00+00:00",
        "2026-10-08T10:00:00-00:00",
        "2026-10-08T10:00:00",
    ] {
        assert_eq!(micros(s), BASE, "{s}");
    }
    // Offsets, with or without colon, hours only, with seconds.
    let two_h = 2 * 3600 * 1_000_000;
    assert_eq!(micros("2026-10-08T12:20:00+02:00"), BASE + 20 * 60_000_000);
    assert_eq!(micros("2026-10-08T12:00:00+0200"), BASE);
    assert_eq!(micros("2026-10-08T12:00:00+02"), BASE);
    assert_eq!(
        micros("2026-10-08T12:00:30+02:00:30"),
        BASE + two_h - two_h // 12:00:30 minus 2h00m30s = 10:00:00
    );
    // Fractions of any length, '.' or ',', truncated to 6 digits.
    assert_eq!(micros("2026-10-08T10:00:00.5"), BASE + 500_000);
    assert_eq!(micros("2026-10-08T10:00:00,5"), BASE + 500_000);
    assert_eq!(micros("2026-10-08T10:00:00.1234567"), BASE + 123_456);
    assert_eq!(micros("2026-10-08T10:00:00.123456789Z"), BASE + 123_456);
    // Minutes and hours precision.
    assert_eq!(micros("2026-10-08T10:00"), BASE);
    assert_eq!(micros("2026-10-08T10"), BASE);
    // Date only, basic and mixed forms.
    let midnight = BASE - 10 * 3600 * 1_000_000;
    assert_eq!(micros("2026-10-08"), midnight);
    assert_eq!(micros("20261008"), midnight);
    assert_eq!(micros("20261008T100000"), BASE);
    assert_eq!(micros("2026-10-08T100000Z"), BASE);
    // ISO week dates: 2026-W41-4 is Thursday 2026-10-08.
    assert_eq!(micros("2026-W41-4"), midnight);
    assert_eq!(micros("2026-W41-4T10:00:00"), BASE);
    // Any single character separates date and time.
    assert_eq!(micros("2026-10-08 10:00:00"), BASE);
    assert_eq!(micros("2026-10-08x10:00:00"), BASE);
    assert_eq!(micros("2026-10-08é10:00:00"), BASE);
    // The CPython quirk: one stray character before Z.
    assert_eq!(micros("2026-10-08T10:00:00 Z"), BASE);
    assert_eq!(micros("2026-10-08T10:00:00.Z"), BASE);
}

#[test]
fn spec_table_rejected_forms() {
    for s in [
        "2026-281",
        "2026-10",
        "+2026-10-08",
        "2026-1-08",
        " 2026-10-08T10:00:00",
        "2026-10-08T10:00:00 ",
        "2026-10-08T10:00:00z",
        "2026-10-08T24:00:00",
        "2026-10-08T10:00:60",
        "2026-10-08T10:00:00+24:00",
        "2026-10-08T10:00:00-24:00",
        "not a time",
        "",
        "0000-01-01",
        "2026-02-29",
        "2026-13-01",
        "2026-W54-1",
        "2026-W41-8",
        "2026-10-08T",
    ] {
        assert!(parse(s).is_none(), "{s:?} should be rejected");
    }
}

#[test]
fn isoformat_round_trip() {
    let t = Instant::from_unix_micros(BASE + 123_456);
    assert_eq!(t.to_python_isoformat(), "2026-10-08T10:00:00.123456+00:00");
    assert_eq!(
        Instant::from_unix_micros(BASE).to_python_isoformat(),
        "2026-10-08T10:00:00+00:00"
    );
    assert_eq!(parse(&t.to_python_isoformat()), Some(t));
    assert_eq!(
        Instant::from_unix_micros(BASE).to_compact_utc(),
        "20261008T100000"
    );
}

fn generated_timestamps() -> Vec<String> {
    let seeds = [
        "2026-10-08T10:00:00Z",
        "2026-10-08T10:00:00+02:00",
        "2026-10-08T10:00:00.123456+00:00",
        "2026-10-08T10:00:00,5-05:30",
        "20261008T100000",
        "2026-10-08T100000Z",
        "2026-W41-4T10:00:00",
        "2026W414T10:00",
        "2026-W41",
        "2026W41",
        "2026-10-08",
        "2026-10-08T10",
        "2026-10-08T10:00:00 Z",
        "2026-10-08T10:00:00+02:00:30.25",
        "2020-W53-7",
        "2024-02-29T23:59:59.999999-23:59",
        "0001-01-01T00:00:00+01:00",
        "9999-12-31T23:59:59-01:00",
        "2026-10-08T1000",
        "2026-10-08T10:00:00:5",
    ];
    let pool: Vec<char> = "0123456789-:TZz+ .,Wé\u{2028}x\0".chars().collect();
    let mut rng = transcope_testkit::Rng::new(0x5eed);
    let mut out: Vec<String> = seeds.iter().map(|s| s.to_string()).collect();
    for _ in 0..6000 {
        let seed = seeds[rng.index(seeds.len())];
        let mut chars: Vec<char> = seed.chars().collect();
        for _ in 0..1 + rng.index(3) {
            let op = rng.index(4);
            let pos = rng.index(chars.len() + 1);
            let c = pool[rng.index(pool.len())];
            match op {
                0 if pos < chars.len() => chars[pos] = c,
                1 => chars.insert(pos, c),
                2 if pos < chars.len() => {
                    chars.remove(pos);
                }
                _ => chars.truncate(pos.max(1)),
            }
        }
        out.push(chars.into_iter().collect());
    }
    out
}

const PY_FROMISO: &str = r#"
import sys, json, datetime
utc = datetime.timezone.utc
epoch = datetime.datetime(1970, 1, 1, tzinfo=utc)
for line in sys.stdin:
    s = json.loads(line)
    try:
        d = datetime.datetime.fromisoformat(s)
        if d.tzinfo is None:
            d = d.replace(tzinfo=utc)
        print((d - epoch) // datetime.timedelta(microseconds=1))
    except Exception:
        print("x")
"#;

#[test]
fn differential_against_python_fromisoformat() {
    if !transcope_testkit::python311() {
        return;
    }
    let py = "python3";
    let inputs = generated_timestamps();
    let mut child = Command::new(py)
        .args(["-c", PY_FROMISO])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    {
        let mut stdin = child.stdin.take().unwrap();
        for s in &inputs {
            writeln!(stdin, "{}", serde_json::to_string(s).unwrap()).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    let answers = String::from_utf8(out.stdout).unwrap();
    let answers: Vec<&str> = answers.lines().collect();
    assert_eq!(answers.len(), inputs.len());
    let mut accepted = 0;
    for (s, want) in inputs.iter().zip(answers) {
        let got = parse(s).map(|t| t.unix_micros().to_string());
        let want = (want != "x").then(|| want.to_string());
        assert_eq!(got, want, "input {s:?}");
        accepted += usize::from(want_is_some(&got));
    }
    // The generator must exercise both sides.
    assert!(accepted > 300, "only {accepted} accepted");
    assert!(inputs.len() - accepted > 300);
}

fn want_is_some(x: &Option<String>) -> bool {
    x.is_some()
}

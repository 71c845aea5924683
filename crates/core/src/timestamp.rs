//! Timestamps exactly as the references read them: Python 3.11's
//! `datetime.fromisoformat` ([`parse`], the scope log's), and Go's
//! `time.Parse(time.RFC3339, s)` ([`parse_go_rfc3339`], the caller identity walk's, after
//! sloprail). Both share one calendar (proleptic Gregorian, day counts from 1970-01-01).
//!
//! The scope log stores `at` verbatim and compares instants, so what counts as "a
//! timestamp" must be what the reference implementation accepts — no more, no less.
//! [`parse`] is a transliteration of CPython 3.11's C parser (`_datetime.c`:
//! `_find_isoformat_datetime_separator`, `parse_isoformat_date`,
//! `parse_isoformat_time`, `parse_hhmmss_ffffff`), including its quirks: any single
//! character as the date/time separator, ISO week dates, basic and mixed forms,
//! fractions of any length with `.` or `,` truncated to microseconds, and a single
//! stray character before `Z` or an offset (`10:00:00 Z`). A naive result is UTC.
//!
//! ```
//! use transcope_core::timestamp::{parse, Instant};
//! let a = parse("2026-10-08T12:20:00+02:00").unwrap();
//! let b = parse("2026-10-08T10:20:00Z").unwrap();
//! assert_eq!(a, b);
//! assert!(parse("2026-10-08T10:00:00z").is_none()); // lowercase z: rejected, as in Python
//! assert_eq!(parse("2026-10-08").unwrap(), Instant::from_unix_micros(1_791_417_600_000_000));
//! ```

use std::fmt;

/// An absolute instant at microsecond precision (microseconds since the Unix epoch, UTC).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(i64);

impl Instant {
    /// The instant `micros` microseconds after 1970-01-01T00:00:00Z.
    pub const fn from_unix_micros(micros: i64) -> Self {
        Instant(micros)
    }

    /// Microseconds since the Unix epoch.
    pub const fn unix_micros(self) -> i64 {
        self.0
    }

    /// The current instant.
    pub fn now() -> Self {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Instant(d.as_micros() as i64)
    }

    /// Python's `datetime.now(timezone.utc).isoformat()` for this instant:
    /// `YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00`, the fraction omitted when it is zero.
    pub fn to_python_isoformat(self) -> String {
        let secs = self.0.div_euclid(1_000_000);
        let micros = self.0.rem_euclid(1_000_000);
        let days = secs.div_euclid(86_400);
        let sod = secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        let mut s = format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            y,
            m,
            d,
            sod / 3600,
            (sod / 60) % 60,
            sod % 60
        );
        if micros != 0 {
            s.push_str(&format!(".{micros:06}"));
        }
        s.push_str("+00:00");
        s
    }

    /// `YYYYmmddTHHMMSS` in UTC (the outbox file-name stamp).
    pub fn to_compact_utc(self) -> String {
        let secs = self.0.div_euclid(1_000_000);
        let days = secs.div_euclid(86_400);
        let sod = secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        format!(
            "{:04}{:02}{:02}T{:02}{:02}{:02}",
            y,
            m,
            d,
            sod / 3600,
            (sod / 60) % 60,
            sod % 60
        )
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_python_isoformat())
    }
}

/// Parse `s` as Python 3.11 `datetime.fromisoformat` would; naive results are UTC.
/// `None` where Python raises.
pub fn parse(s: &str) -> Option<Instant> {
    match s.as_bytes().try_into() {
        Ok(b) => parse_millis_z(b).or_else(|| parse_general(s)),
        Err(_) => parse_general(s),
    }
}

/// The form agents write (`2025-07-26T22:21:25.043Z`: milliseconds, `Z`), read
/// without the general parser's search for separators and forms — the same instant
/// [`parse_general`] gives it. `None` when the string is not of that form, or its
/// date or time is out of range (the general parser decides then).
#[inline]
fn parse_millis_z(b: &[u8; 24]) -> Option<Instant> {
    const PUNCT: [(usize, u8); 7] = [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
        (23, b'Z'),
    ];
    if PUNCT.iter().any(|&(i, c)| b[i] != c) {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        b[from..to].iter().try_fold(0i64, |v, &c| {
            c.is_ascii_digit().then(|| v * 10 + i64::from(c - b'0'))
        })
    };
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    let millis = num(20, 23)?;
    if !(1..=9999).contains(&year) || !(1..=12).contains(&month) {
        return None;
    }
    if day < 1 || day > days_in_month(year, month) || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second;
    Some(Instant(secs * 1_000_000 + millis * 1000))
}

/// [`parse`] for any form Python accepts.
fn parse_general(s: &str) -> Option<Instant> {
    // All valid strings are at least 7 characters long (checked in characters, and
    // only as far as the seventh).
    s.chars().nth(6)?;
    let b = s.as_bytes();
    let len = b.len();
    let sep = find_separator(b)?;
    let (year, month, day) = parse_date(b, sep)?;
    let mut t = TimeParts::default();
    if len > sep {
        // Skip the separator: one UTF-8 character.
        let c = b[sep];
        let width = if c & 0x80 == 0 {
            1
        } else {
            match c & 0xf0 {
                0xe0 => 3,
                0xf0 => 4,
                _ => 2,
            }
        };
        let start = sep + width;
        if start > len {
            return None;
        }
        t = parse_time(&b[start..])?;
    }
    // new_datetime range checks
    if !(1..=9999).contains(&year) || !(1..=12).contains(&month) {
        return None;
    }
    if day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if t.hour > 23 || t.minute > 59 || t.second > 59 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let local =
        (days * 86_400 + t.hour * 3600 + t.minute * 60 + t.second) * 1_000_000 + t.microsecond;
    let offset = match t.offset {
        None => 0,
        Some(off) => {
            // timezone() requires -24h < offset < 24h (strictly).
            if off.abs() >= 86_400 * 1_000_000 {
                return None;
            }
            off
        }
    };
    Some(Instant(local - offset))
}

/// Parse `s` as Go's `time.Parse(time.RFC3339, s)` does (sloprail reads transcript
/// timestamps so); nanoseconds since the Unix epoch, `None` where Go returns an error.
///
/// `YYYY-MM-DDTHH:MM:SS`, an optional fraction (`.` or `,` and one or more digits; more
/// than nine read as zero nanoseconds, Go's fast path), then `Z` or `±HH:MM` — nothing
/// else: no other separator, no lowercase `z`, no naive form. Unlike [`parse`], the
/// precision is the nanosecond.
///
/// ```
/// use transcope_core::timestamp::parse_go_rfc3339;
/// assert_eq!(parse_go_rfc3339("1970-01-01T00:00:01.5Z"), Some(1_500_000_000));
/// assert_eq!(parse_go_rfc3339("2026-08-13T11:00:00+02:00"), parse_go_rfc3339("2026-08-13T09:00:00Z"));
/// assert!(parse_go_rfc3339("2026-08-13 09:00:00Z").is_none()); // Python would accept it
/// ```
pub fn parse_go_rfc3339(s: &str) -> Option<i128> {
    let b = s.as_bytes();
    if b.len() < 19 {
        return None;
    }
    let num = |r: std::ops::Range<usize>, min: i64, max: i64| -> Option<i64> {
        let mut x: i64 = 0;
        for &c in &b[r] {
            if !c.is_ascii_digit() {
                return None;
            }
            x = x * 10 + i64::from(c - b'0');
        }
        (min..=max).contains(&x).then_some(x)
    };
    let year = num(0..4, 0, 9999)?;
    let month = num(5..7, 1, 12)?;
    let day = num(8..10, 1, days_in_month(year, month))?;
    let hour = num(11..13, 0, 23)?;
    let min = num(14..16, 0, 59)?;
    let sec = num(17..19, 0, 59)?;
    if !(b[4] == b'-' && b[7] == b'-' && b[10] == b'T' && b[13] == b':' && b[16] == b':') {
        return None;
    }
    let mut rest = &b[19..];
    let mut nanos: i64 = 0;
    if rest.len() >= 2 && (rest[0] == b'.' || rest[0] == b',') && rest[1].is_ascii_digit() {
        let mut n = 1;
        while n < rest.len() && rest[n].is_ascii_digit() {
            n += 1;
        }
        let digits = &rest[1..n];
        if digits.len() <= 9 {
            for i in 0..9 {
                nanos = nanos * 10 + digits.get(i).map_or(0, |d| i64::from(d - b'0'));
            }
        }
        rest = &rest[n..];
    }
    let offset: i64 = if rest == b"Z" {
        0
    } else {
        if rest.len() != 6 || !(rest[0] == b'+' || rest[0] == b'-') || rest[3] != b':' {
            return None;
        }
        let digits = |r: std::ops::Range<usize>, max: i64| -> Option<i64> {
            let t = &rest[r];
            if !t.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let v = i64::from(t[0] - b'0') * 10 + i64::from(t[1] - b'0');
            (v <= max).then_some(v)
        };
        let hh = digits(1..3, 23)?;
        let mm = digits(4..6, 59)?;
        let off = (hh * 60 + mm) * 60;
        if rest[0] == b'-' {
            -off
        } else {
            off
        }
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + min * 60 + sec - offset;
    Some(i128::from(secs) * 1_000_000_000 + i128::from(nanos))
}

#[derive(Default)]
struct TimeParts {
    hour: i64,
    minute: i64,
    second: i64,
    microsecond: i64,
    /// Offset in microseconds, `None` when naive.
    offset: Option<i64>,
}

/// Byte `i` of `b`, or NUL past the end (the C code reads a NUL-terminated buffer).
#[inline]
fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

fn find_separator(b: &[u8]) -> Option<usize> {
    let len = b.len();
    if len == 7 {
        return Some(7);
    }
    if at(b, 4) == b'-' {
        if at(b, 5) == b'W' {
            if len < 8 {
                return None;
            }
            if len > 8 && at(b, 8) == b'-' {
                if len == 9 {
                    return None;
                }
                if len > 10 && at(b, 10).is_ascii_digit() {
                    return Some(8);
                }
                Some(10)
            } else {
                Some(8)
            }
        } else {
            Some(10)
        }
    } else if at(b, 4) == b'W' {
        let mut idx = 7;
        while idx < len && b[idx].is_ascii_digit() {
            idx += 1;
        }
        if idx < 9 {
            Some(idx)
        } else if idx % 2 == 0 {
            Some(7)
        } else {
            Some(8)
        }
    } else {
        Some(8)
    }
}

/// `parse_digits`: exactly `n` ASCII digits starting at `*p` (NUL past the end).
fn digits(b: &[u8], p: &mut usize, n: usize) -> Option<i64> {
    let mut v: i64 = 0;
    for _ in 0..n {
        let c = at(b, *p);
        *p += 1;
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i64::from(c - b'0');
    }
    Some(v)
}

/// `parse_isoformat_date` over the first `len` bytes (it may read past them, as C does).
fn parse_date(b: &[u8], len: usize) -> Option<(i64, i64, i64)> {
    let mut p = 0;
    let year = digits(b, &mut p, 4)?;
    let uses_sep = at(b, p) == b'-';
    if uses_sep {
        p += 1;
    }
    if at(b, p) == b'W' {
        p += 1;
        let week = digits(b, &mut p, 2)?;
        let weekday = if p < len {
            if uses_sep {
                let c = at(b, p);
                p += 1;
                if c != b'-' {
                    return None;
                }
            }
            digits(b, &mut p, 1)?
        } else {
            1
        };
        return iso_to_ymd(year, week, weekday);
    }
    let month = digits(b, &mut p, 2)?;
    if uses_sep {
        let c = at(b, p);
        p += 1;
        if c != b'-' {
            return None;
        }
    }
    let day = digits(b, &mut p, 2)?;
    Some((year, month, day))
}

/// `parse_isoformat_time` over `b` (the rest of the string after the separator).
fn parse_time(b: &[u8]) -> Option<TimeParts> {
    let end = b.len();
    // do { if Z/+/- break } while (++pos < end): the first byte is always inspected.
    let mut tz = 0;
    loop {
        let c = at(b, tz);
        if c == b'Z' || c == b'+' || c == b'-' {
            break;
        }
        tz += 1;
        if tz >= end {
            break;
        }
    }
    let (mut t, rv) = parse_hhmmss(b, 0, tz)?;
    if tz == end {
        return if rv { None } else { Some(t) };
    }
    if at(b, tz) == b'Z' {
        if at(b, tz + 1) != 0 {
            return None;
        }
        t.offset = Some(0);
        return Some(t);
    }
    let sign: i64 = if at(b, tz) == b'-' { -1 } else { 1 };
    let (o, rv) = parse_hhmmss(b, tz + 1, end)?;
    if rv {
        return None;
    }
    let off_secs = o.hour * 3600 + o.minute * 60 + o.second;
    t.offset = Some(sign * (off_secs * 1_000_000 + o.microsecond));
    Some(t)
}

/// `parse_hhmmss_ffffff` over `b[start..end]`; the bool is the C "not at the end of the
/// string" return value (1), which is an error only when no offset follows.
fn parse_hhmmss(b: &[u8], start: usize, end: usize) -> Option<(TimeParts, bool)> {
    let mut vals = [0i64; 3];
    let mut p = start;
    let mut has_sep = true;
    for i in 0..3 {
        vals[i] = digits(b, &mut p, 2)?;
        let c = at(b, p);
        p += 1;
        if i == 0 {
            has_sep = c == b':';
        }
        if p >= end {
            return Some((parts(vals, 0), c != 0));
        }
        if has_sep && c == b':' {
            continue;
        } else if c == b'.' || c == b',' {
            break;
        } else if !has_sep {
            p -= 1;
        } else {
            return None;
        }
    }
    // The fraction (reached after a '.'/',' or after three components).
    let to_parse = end.saturating_sub(p).min(6);
    let mut micro = digits(b, &mut p, to_parse)?;
    if to_parse < 6 {
        const CORRECTION: [i64; 5] = [100_000, 10_000, 1000, 100, 10];
        // to_parse is never 0 here: the loop returns as soon as p reaches `end`.
        micro *= CORRECTION[to_parse.max(1) - 1];
    }
    while at(b, p).is_ascii_digit() {
        p += 1;
    }
    Some((parts(vals, micro), at(b, p) != 0))
}

fn parts(v: [i64; 3], microsecond: i64) -> TimeParts {
    TimeParts {
        hour: v[0],
        minute: v[1],
        second: v[2],
        microsecond,
        offset: None,
    }
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ => {
            if is_leap(y) {
                29
            } else {
                28
            }
        }
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `iso_to_ymd`: an ISO week date to a calendar date; `None` for an invalid week or day.
fn iso_to_ymd(iso_year: i64, week: i64, day: i64) -> Option<(i64, i64, i64)> {
    if week <= 0 || week >= 53 {
        let mut out = true;
        if week == 53 {
            // Monday=0 weekday of Jan 1.
            let first_weekday = (days_from_civil(iso_year, 1, 1) + 3).rem_euclid(7);
            if first_weekday == 3 || (first_weekday == 2 && is_leap(iso_year)) {
                out = false;
            }
        }
        if out {
            return None;
        }
    }
    if day <= 0 || day >= 8 {
        return None;
    }
    // Monday of ISO week 1.
    let jan1 = days_from_civil(iso_year, 1, 1);
    let first_weekday = (jan1 + 3).rem_euclid(7);
    let mut week1_monday = jan1 - first_weekday;
    if first_weekday > 3 {
        week1_monday += 7;
    }
    let d = week1_monday + (week - 1) * 7 + day - 1;
    Some(civil_from_days(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The agents' form read by the short path as the general parser reads it, in
    /// and out of range, and every near miss left to the general parser.
    #[test]
    fn the_millis_form_reads_as_the_general_parser_reads_it() {
        for s in [
            "2025-07-26T22:21:25.043Z",
            "1970-01-01T00:00:00.000Z",
            "0001-01-01T00:00:00.000Z",
            "9999-12-31T23:59:59.999Z",
            "2024-02-29T12:00:00.500Z",
            "2023-02-29T12:00:00.500Z",
            "2025-13-01T00:00:00.000Z",
            "2025-00-01T00:00:00.000Z",
            "2025-01-00T00:00:00.000Z",
            "0000-01-01T00:00:00.000Z",
            "2025-01-01T24:00:00.000Z",
            "2025-01-01T23:60:00.000Z",
            "2025-01-01T23:00:60.000Z",
            "2025-01-01 23:00:00.000Z",
            "2025-01-01T23:00:00,000Z",
            "2025-01-01T23:00:00.000z",
            "2025-01-01T23:00:00.0001",
            "+025-01-01T23:00:00.000Z",
        ] {
            let b: &[u8; 24] = s.as_bytes().try_into().unwrap();
            if let Some(t) = parse_millis_z(b) {
                assert_eq!(Some(t), parse_general(s), "{s}");
            }
            assert_eq!(parse(s), parse_general(s), "{s}");
        }
        assert!(parse_millis_z(b"2025-07-26T22:21:25.043Z").is_some());
    }

    proptest::proptest! {
        #[test]
        fn the_short_path_never_differs(
            date in (0i64..=10_000, 0i64..=13, 0i64..=32),
            time in (0i64..=24, 0i64..=60, 0i64..=60, 0i64..1000),
            byte in 0usize..24,
            c in proptest::sample::select(b"0912-:.TZ +x".to_vec()),
        ) {
            let (y, mo, d) = date;
            let (h, mi, sec, ms) = time;
            let mut v = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{sec:02}.{ms:03}Z").into_bytes();
            for edit in [false, true] {
                if edit && v.len() == 24 {
                    v[byte] = c;
                }
                let s = std::str::from_utf8(&v).unwrap();
                proptest::prop_assert_eq!(parse(s), parse_general(s), "{}", s);
            }
        }
    }

    #[test]
    fn go_rfc3339() {
        let z = parse_go_rfc3339("1970-01-01T00:00:00Z").unwrap();
        assert_eq!(z, 0);
        assert_eq!(
            parse_go_rfc3339("2026-08-13T09:00:00.000Z"),
            parse_go_rfc3339("2026-08-13T11:00:00+02:00")
        );
        assert_eq!(
            parse_go_rfc3339("1970-01-01T00:00:01.5Z"),
            Some(1_500_000_000)
        );
        assert_eq!(
            parse_go_rfc3339("1970-01-01T00:00:01,5Z"),
            Some(1_500_000_000)
        );
        assert_eq!(
            parse_go_rfc3339("1970-01-01T00:00:01.1234567891Z"),
            Some(1_000_000_000)
        );
        assert!(parse_go_rfc3339("2026-02-30T00:00:00Z").is_none());
        assert!(parse_go_rfc3339("2026-08-13 09:00:00Z").is_none());
        assert!(parse_go_rfc3339("2026-08-13T09:00:00").is_none());
        assert!(parse_go_rfc3339("2026-08-13T09:00:00z").is_none());
        assert!(parse_go_rfc3339("").is_none());
        assert_eq!(
            parse_go_rfc3339("2000-03-01T00:00:00Z"),
            Some(951_868_800 * 1_000_000_000)
        );
    }

    /// The two dialects share the calendar: where both accept a string, they name the same
    /// instant (Go at the nanosecond, Python truncated to the microsecond).
    #[test]
    fn dialects_agree_where_both_accept() {
        for s in [
            "1970-01-01T00:00:00Z",
            "2000-02-29T23:59:59.999999999+05:30",
            "2026-08-13T09:00:00.000Z",
            "1999-12-31T23:59:59,25-08:00",
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59Z",
        ] {
            let go = parse_go_rfc3339(s).unwrap();
            let py = parse(s).unwrap();
            assert_eq!(go.div_euclid(1000), i128::from(py.unix_micros()), "{s}");
        }
    }
}

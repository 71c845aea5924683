//! Telling a line's kind, folder and branch without decoding it.
//!
//! Most of a transcript's bytes are tool output in lines no stage needs: a `user` line
//! in the same folder and branch as the one before changes no scope and holds no
//! marker text. [`probe`] finds the top-level `type`, `cwd` and `gitBranch` of a line
//! by a structural scan that skips strings 64 bytes at a time (SSE2 masks of quotes
//! and brackets; a backslash only matters next to a quote), and the adapter asks its
//! sink whether such an entry could matter ([`EntrySink::wants`]) before decoding.
//!
//! The scan does not validate JSON, and need not: it answers only when it is certain
//! of the answer the full decode would give *if the line is valid*; if the line is
//! invalid, the full decode skips it, which is exactly what a sink that does not want
//! the entry does too. It answers `None` (decode normally) for anything unusual: a
//! duplicate `type`/`cwd`/`gitBranch`, an escaped or non-string value for them, a line
//! not framed by `{…}`.
//!
//! [`EntrySink::wants`]: transcope_core::adapter::EntrySink::wants

use transcope_core::adapter::Probe;

use crate::record::base_kind;

/// Bit masks of a 64-byte block: (`"`, `\\`, any of `{}[]`).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[inline]
fn masks(chunk: &[u8; 64]) -> (u64, u64, u64) {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let (mut q, mut bs, mut br) = (0u64, 0u64, 0u64);
    // SAFETY: SSE2 is part of the x86_64 baseline; every 16-byte unaligned load reads
    // inside the 64-byte array.
    unsafe {
        let quote = _mm_set1_epi8(b'"' as i8);
        let back = _mm_set1_epi8(b'\\' as i8);
        let (o1, c1) = (_mm_set1_epi8(b'{' as i8), _mm_set1_epi8(b'}' as i8));
        let (o2, c2) = (_mm_set1_epi8(b'[' as i8), _mm_set1_epi8(b']' as i8));
        for j in 0..4 {
            let v = _mm_loadu_si128(chunk.as_ptr().add(16 * j).cast::<__m128i>());
            let b = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, o1), _mm_cmpeq_epi8(v, c1)),
                _mm_or_si128(_mm_cmpeq_epi8(v, o2), _mm_cmpeq_epi8(v, c2)),
            );
            q |= u64::from(_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote)) as u16) << (16 * j);
            bs |= u64::from(_mm_movemask_epi8(_mm_cmpeq_epi8(v, back)) as u16) << (16 * j);
            br |= u64::from(_mm_movemask_epi8(b) as u16) << (16 * j);
        }
    }
    (q, bs, br)
}

/// Bit masks of a 64-byte block: (`"`, `\\`, any of `{}[]`).
#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn masks(chunk: &[u8; 64]) -> (u64, u64, u64) {
    let (mut q, mut bs, mut br) = (0u64, 0u64, 0u64);
    for (j, &x) in chunk.iter().enumerate() {
        q |= u64::from(x == b'"') << j;
        bs |= u64::from(x == b'\\') << j;
        br |= u64::from(matches!(x, b'{' | b'}' | b'[' | b']')) << j;
    }
    (q, bs, br)
}

/// The characters of a 64-byte block escaped by a backslash, given its backslash mask
/// and the carry from the block before (1 when that block ended in an unfinished
/// escape). The odd/even run trick: a run of backslashes escapes the character after
/// it exactly when the run is odd.
#[inline]
pub fn escaped_bits(backslashes: u64, carry: &mut u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let bs = backslashes & !*carry;
    let follows = (bs << 1) | *carry;
    let odd_starts = bs & !EVEN & !follows;
    let (runs_from_even, overflow) = odd_starts.overflowing_add(bs);
    *carry = u64::from(overflow);
    (EVEN ^ (runs_from_even << 1)) & follows
}

/// Whether the quote at `q` is escaped (an odd run of backslashes before it, not
/// reaching back past `floor`).
#[inline]
fn escaped(b: &[u8], q: usize, floor: usize) -> bool {
    let mut n = 0;
    while q - n > floor && b[q - n - 1] == b'\\' {
        n += 1;
    }
    n % 2 == 1
}

/// One past the closing quote of the string opening at `open`.
fn string_end(b: &[u8], open: usize) -> Option<usize> {
    let start = open + 1;
    let mut p = start;
    let mut carry = 0u64;
    while p + 64 <= b.len() {
        let chunk: &[u8; 64] = b[p..p + 64].try_into().ok()?;
        let (q, bs, _) = masks(chunk);
        let q = q & !escaped_bits(bs, &mut carry);
        if q != 0 {
            return Some(p + q.trailing_zeros() as usize + 1);
        }
        p += 64;
    }
    while p < b.len() {
        if b[p] == b'"' && !escaped(b, p, start) {
            return Some(p + 1);
        }
        p += 1;
    }
    None
}

/// One past the container (`{…}` or `[…]`) opening at `open`: one pass over 64-byte
/// blocks, tracking whether each quote or bracket is inside a string.
fn container_end(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    // Where the current string's contents start (for the backslash look-back).
    let mut string_start = open;
    let mut step = |at: usize, c: u8, depth: &mut usize, in_string: &mut bool| -> Option<bool> {
        if *in_string {
            if c == b'"' && !escaped(b, at, string_start) {
                *in_string = false;
            }
        } else {
            match c {
                b'"' => {
                    *in_string = true;
                    string_start = at + 1;
                }
                b'{' | b'[' => *depth += 1,
                _ => {
                    *depth = depth.checked_sub(1)?;
                    if *depth == 0 {
                        return Some(true);
                    }
                }
            }
        }
        Some(false)
    };
    let mut p = open;
    let mut carry = 0u64;
    while p + 64 <= b.len() {
        let chunk: &[u8; 64] = b[p..p + 64].try_into().ok()?;
        let (q, bs, br) = masks(chunk);
        // Escaped quotes never open or close a string (outside strings, valid JSON has
        // no backslashes at all).
        let q = q & !escaped_bits(bs, &mut carry);
        let mut m = if in_string { q } else { q | br };
        while m != 0 {
            let at = p + m.trailing_zeros() as usize;
            m &= m - 1;
            let was = in_string;
            if step(at, b[at], &mut depth, &mut in_string)? {
                return Some(at + 1);
            }
            if was != in_string {
                // Entering or leaving a string changes which bits matter next.
                let rest = !0u64 << (at - p) << 1;
                m = if in_string { q & rest } else { (q | br) & rest };
            }
        }
        p += 64;
    }
    while p < b.len() {
        let c = b[p];
        if matches!(c, b'"' | b'{' | b'}' | b'[' | b']')
            && (c == b'"' || !in_string)
            && step(p, c, &mut depth, &mut in_string)?
        {
            return Some(p + 1);
        }
        p += 1;
    }
    None
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// A top-level value we may read: a plain string, `null`, or something else.
#[derive(Clone, Copy)]
enum Val<'a> {
    Str(&'a str),
    Null,
    Other,
}

/// A value as a falsy-aware string: `None` (missing, null, `""`), `Some(s)`, or not
/// certain (`Err`).
fn text(v: Option<Val<'_>>) -> Option<Option<&str>> {
    match v {
        None | Some(Val::Null) => Some(None),
        Some(Val::Str(s)) => Some((!s.is_empty()).then_some(s)),
        Some(Val::Other) => None,
    }
}

/// The top-level `type`, `cwd`, `gitBranch` of a line, and the `type` and `role` of
/// its `payload` object when it has one. `None` when the line is not framed as an
/// object or one of those keys repeats (the full decode decides then).
#[derive(Clone, Copy, Default)]
pub struct Fields<'a> {
    ty: Option<Val<'a>>,
    cwd: Option<Val<'a>>,
    branch: Option<Val<'a>>,
    payload_ty: Option<Val<'a>>,
    payload_role: Option<Val<'a>>,
}

/// Scan the object opening at `open`; `keys` maps wanted keys to slots. The object of
/// key `payload` is scanned one level down into `nested` when given. Returns the end.
fn scan_object<'a>(
    b: &'a [u8],
    open: usize,
    keys: &[(&[u8], usize)],
    slots: &mut [Option<Val<'a>>],
    nested: Option<&mut [Option<Val<'a>>]>,
) -> Option<usize> {
    let mut nested = nested;
    let mut i = skip_ws(b, open + 1);
    if b.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let kend = string_end(b, i)?;
        let key = &b[i + 1..kend - 1];
        let c = skip_ws(b, kend);
        if b.get(c) != Some(&b':') {
            return None;
        }
        let v = skip_ws(b, c + 1);
        let slot = keys.iter().find(|(k, _)| *k == key).map(|(_, s)| *s);
        let (val, e) = match *b.get(v)? {
            b'"' => {
                let e = string_end(b, v)?;
                let raw = &b[v + 1..e - 1];
                let val = if slot.is_none() || raw.contains(&b'\\') {
                    Val::Other
                } else {
                    std::str::from_utf8(raw).map_or(Val::Other, Val::Str)
                };
                (val, e)
            }
            b'{' if key == b"payload" && nested.is_some() => {
                let inner = nested.take()?;
                let e = scan_object(b, v, &[(b"type", 0), (b"role", 1)], inner, None)?;
                (Val::Other, e)
            }
            b'{' | b'[' => (Val::Other, container_end(b, v)?),
            _ => {
                let mut e = v;
                while e < b.len() && !matches!(b[e], b',' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                    e += 1;
                }
                let val = if &b[v..e] == b"null" {
                    Val::Null
                } else {
                    Val::Other
                };
                (val, e)
            }
        };
        if let Some(s) = slot {
            if slots[s].is_some() {
                return None; // a duplicate: the full decode decides
            }
            slots[s] = Some(val);
        }
        i = skip_ws(b, e);
        match b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b'}' => return Some(i + 1),
            _ => return None,
        }
    }
}

/// The [`Fields`] of a line framed as one JSON object.
pub fn fields(line: &[u8]) -> Option<Fields<'_>> {
    let i0 = skip_ws(line, 0);
    if line.get(i0) != Some(&b'{') {
        return None;
    }
    let mut top = [None; 3];
    let mut inner = [None; 2];
    let end = scan_object(
        line,
        i0,
        &[(b"type", 0), (b"cwd", 1), (b"gitBranch", 2)],
        &mut top,
        Some(&mut inner),
    )?;
    if skip_ws(line, end) != line.len() {
        return None;
    }
    Some(Fields {
        ty: top[0],
        cwd: top[1],
        branch: top[2],
        payload_ty: inner[0],
        payload_role: inner[1],
    })
}

impl<'a> Fields<'a> {
    /// The top-level `type` when it is a plain string.
    pub fn ty(&self) -> Option<&'a str> {
        match self.ty {
            Some(Val::Str(t)) => Some(t),
            _ => None,
        }
    }

    /// The `payload`'s `type` when it is a plain string.
    pub fn payload_ty(&self) -> Option<&'a str> {
        match self.payload_ty {
            Some(Val::Str(t)) => Some(t),
            _ => None,
        }
    }

    /// The `payload`'s `role`: `Some(None)` when absent or null, `None` when uncertain.
    pub fn payload_role(&self) -> Option<Option<&'a str>> {
        match self.payload_role {
            None | Some(Val::Null) => Some(None),
            Some(Val::Str(t)) => Some(Some(t)),
            Some(Val::Other) => None,
        }
    }

    /// The folder and branch by the reference's top-level rule (not for turn_context).
    pub fn folder_and_branch(&self) -> Option<(Option<&'a str>, Option<&'a str>)> {
        Some((text(self.cwd)?, text(self.branch)?))
    }
}

/// The kind, folder and branch of a Claude line, when certain (see the module doc).
pub fn probe(line: &[u8]) -> Option<Probe<'_>> {
    let f = fields(line)?;
    let kind = match f.ty()? {
        // A turn_context record takes its folder from `payload.cwd`: decode it.
        "turn_context" => return None,
        // An unknown type is decoded as `Other` (or nothing, which no sink wants either).
        t => base_kind(t).unwrap_or(transcope_core::EntryKind::Other),
    };
    let (cwd, branch) = f.folder_and_branch()?;
    Some(Probe {
        kind: Some(kind),
        cwd,
        branch,
        text: kind == transcope_core::EntryKind::Assistant,
    })
}

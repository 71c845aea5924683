//! Telling a line's top-level fields without decoding it: the SIMD probe.
//!
//! Most of a transcript's bytes are tool output in lines no stage needs: a `user` line
//! in the same folder and branch as the one before changes no scope and holds no
//! marker text. [`fields`] finds the top-level `type`, `cwd` and `gitBranch` of a line
//! (and the `type` and `role` of its `payload` object) by a structural scan that skips
//! strings and nested values 64 bytes at a time; each adapter turns those [`Fields`]
//! into a [`Probe`] by its own vocabulary, and asks its sink whether such an entry
//! could matter ([`EntrySink::wants`]) before decoding.
//!
//! Each block becomes bit masks of quotes, backslashes and brackets (SSE2, or AVX2
//! when the CPU has it, chosen at run time); escaped quotes are removed with the
//! odd/even backslash-run trick, a prefix XOR of the remaining quotes marks the string
//! interiors, and only brackets outside strings are counted one by one, so a block
//! inside a long tool output costs its masks and nothing more.
//!
//! The scan does not validate JSON, and need not: it answers only when it is certain
//! of the answer the full decode would give *if the line is valid*; if the line is
//! invalid, the full decode skips it, which is exactly what a sink that does not want
//! the entry does too. It answers `None` (decode normally) for anything unusual: a
//! duplicate `type`/`cwd`/`gitBranch`, an escaped or non-string value for them, a line
//! not framed by `{…}`.
//!
//! ```
//! use transcope_adapter_common::probe::fields;
//! let f = fields(br#"{"type":"user","cwd":"/w","message":{"content":"{\"x\""}}"#).unwrap();
//! assert_eq!((f.ty(), f.folder_and_branch()), (Some("user"), Some((Some("/w"), None))));
//! assert!(fields(br#"{"type":"user","type":"assistant"}"#).is_none());
//! ```
//!
//! [`EntrySink::wants`]: transcope_core::adapter::EntrySink::wants
//! [`Probe`]: transcope_core::adapter::Probe

/// The bit masks of one 64-byte block: bit `i` is set when byte `i` is that character.
#[derive(Clone, Copy, Default)]
pub(crate) struct Block {
    pub(crate) quote: u64,
    pub(crate) backslash: u64,
    /// `{` or `[`.
    open: u64,
    /// `}` or `]`.
    close: u64,
    /// A control character (`0x00`–`0x1f`), which a JSON string may not hold.
    pub(crate) ctrl: u64,
}

/// The instruction set the block scan is compiled for: SSE2 (the x86_64 baseline),
/// AVX2 (chosen at run time when the CPU has it), or portable code elsewhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// Portable code (SSE2 on x86_64).
    Baseline,
    /// 32-byte vectors, when the CPU has AVX2.
    Avx2,
}

impl Isa {
    /// The best the running CPU offers.
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return Isa::Avx2;
        }
        Isa::Baseline
    }
}

// `{`/`[` and `}`/`]` differ only in bit 0x20: `x | 0x20` is `{` exactly for `{` and
// `[`, and `}` exactly for `}` and `]`, so two compares find all four brackets.
const OPEN_LOWER: u8 = b'{';
const CLOSE_LOWER: u8 = b'}';

/// The masks of a 64-byte block; the bracket masks only when `BRACKETS` (a string's
/// end needs just quotes and backslashes), the control-character mask only when
/// `CTRL` (the checked walk's, [`crate::walk`]).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[inline(always)]
pub(crate) fn masks_baseline<const BRACKETS: bool, const CTRL: bool>(chunk: &[u8; 64]) -> Block {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    let mut m = Block::default();
    // SAFETY: SSE2 is part of the x86_64 baseline; every 16-byte unaligned load reads
    // inside the 64-byte array.
    unsafe {
        let quote = _mm_set1_epi8(b'"' as i8);
        let back = _mm_set1_epi8(b'\\' as i8);
        let lower = _mm_set1_epi8(0x20);
        let open = _mm_set1_epi8(OPEN_LOWER as i8);
        let close = _mm_set1_epi8(CLOSE_LOWER as i8);
        let top_ctrl = _mm_set1_epi8(0x1f);
        for j in 0..4 {
            let v = _mm_loadu_si128(chunk.as_ptr().add(16 * j).cast::<__m128i>());
            let l = _mm_or_si128(v, lower);
            let bits = |x| u64::from(_mm_movemask_epi8(x) as u16) << (16 * j);
            m.quote |= bits(_mm_cmpeq_epi8(v, quote));
            m.backslash |= bits(_mm_cmpeq_epi8(v, back));
            if BRACKETS {
                m.open |= bits(_mm_cmpeq_epi8(l, open));
                m.close |= bits(_mm_cmpeq_epi8(l, close));
            }
            if CTRL {
                // Unsigned `v <= 0x1f`: the minimum of the two is `v` itself.
                m.ctrl |= bits(_mm_cmpeq_epi8(_mm_min_epu8(v, top_ctrl), v));
            }
        }
    }
    m
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn masks_baseline<const BRACKETS: bool, const CTRL: bool>(chunk: &[u8; 64]) -> Block {
    let mut m = Block::default();
    for (j, &x) in chunk.iter().enumerate() {
        m.quote |= u64::from(x == b'"') << j;
        m.backslash |= u64::from(x == b'\\') << j;
        m.open |= u64::from(x | 0x20 == OPEN_LOWER) << j;
        m.close |= u64::from(x | 0x20 == CLOSE_LOWER) << j;
        m.ctrl |= u64::from(x < 0x20) << j;
    }
    m
}

/// [`masks_baseline`] with 32-byte vectors (for CPUs with AVX2 only).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn masks_avx2<const BRACKETS: bool, const CTRL: bool>(chunk: &[u8; 64]) -> Block {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_min_epu8, _mm256_movemask_epi8,
        _mm256_or_si256, _mm256_set1_epi8,
    };
    let mut m = Block::default();
    let quote = _mm256_set1_epi8(b'"' as i8);
    let back = _mm256_set1_epi8(b'\\' as i8);
    let lower = _mm256_set1_epi8(0x20);
    let open = _mm256_set1_epi8(OPEN_LOWER as i8);
    let close = _mm256_set1_epi8(CLOSE_LOWER as i8);
    let top_ctrl = _mm256_set1_epi8(0x1f);
    for j in 0..2 {
        // SAFETY: every 32-byte unaligned load reads inside the 64-byte array.
        let v = unsafe { _mm256_loadu_si256(chunk.as_ptr().add(32 * j).cast::<__m256i>()) };
        let l = _mm256_or_si256(v, lower);
        let bits = |x| u64::from(_mm256_movemask_epi8(x) as u32) << (32 * j);
        m.quote |= bits(_mm256_cmpeq_epi8(v, quote));
        m.backslash |= bits(_mm256_cmpeq_epi8(v, back));
        if BRACKETS {
            m.open |= bits(_mm256_cmpeq_epi8(l, open));
            m.close |= bits(_mm256_cmpeq_epi8(l, close));
        }
        if CTRL {
            m.ctrl |= bits(_mm256_cmpeq_epi8(_mm256_min_epu8(v, top_ctrl), v));
        }
    }
    m
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

/// Bit `i` of the result is the XOR of bits `0..=i` of `x`: given the unescaped quotes
/// of a block, the bytes from each opening quote up to (not including) its closing one.
#[inline(always)]
pub(crate) fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// A line as the block scan reads it: its bytes, and a copy of its last 64 bytes
/// followed by spaces (which match no mask), made once, so the last, short block of
/// any string or container in the line is read in place too.
pub(crate) struct Line<'b> {
    pub(crate) b: &'b [u8],
    /// Where the copied tail starts in `b`.
    base: usize,
    tail: [u8; 128],
}

impl<'b> Line<'b> {
    #[inline(always)]
    pub(crate) fn new(b: &'b [u8]) -> Line<'b> {
        let base = b.len().saturating_sub(64);
        let mut tail = [b' '; 128];
        tail[..b.len() - base].copy_from_slice(&b[base..]);
        Line { b, base, tail }
    }

    /// The 64-byte block at `p`: in place, or (the last, short one) from the tail.
    /// `None` past the end.
    #[inline(always)]
    pub(crate) fn block_at(&self, p: usize) -> Option<&[u8; 64]> {
        if let Some(chunk) = self.b.get(p..p + 64) {
            return chunk.try_into().ok();
        }
        if p >= self.b.len() {
            return None;
        }
        // Past `len - 64` (or in a line shorter than a block): inside the tail copy.
        self.tail
            .get(p - self.base..p - self.base + 64)?
            .try_into()
            .ok()
    }
}

#[inline(always)]
pub(crate) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// A top-level value we may read: a plain string, `null`, or something else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fields<'a> {
    ty: Option<Val<'a>>,
    cwd: Option<Val<'a>>,
    branch: Option<Val<'a>>,
    payload_ty: Option<Val<'a>>,
    payload_role: Option<Val<'a>>,
}

/// The slot of a wanted key: `type`, `cwd`, `gitBranch` at the top (`TOP`), `type` and
/// `role` inside `payload`.
#[inline(always)]
fn slot_of<const TOP: bool>(key: &[u8]) -> Option<usize> {
    if TOP {
        match key {
            b"type" => Some(0),
            b"cwd" => Some(1),
            b"gitBranch" => Some(2),
            _ => None,
        }
    } else {
        match key {
            b"type" => Some(0),
            b"role" => Some(1),
            _ => None,
        }
    }
}

/// The scan functions, compiled once per instruction set: `$attr` goes on each (a
/// `target_feature` for the AVX2 copy) and `$masks` computes a block's masks.
macro_rules! scanner {
    ($name:ident, $masks:ident, $(#[$attr:meta])*) => {
        mod $name {
            use super::*;

            /// One past the closing quote of the string opening at `open`.
            $(#[$attr])*
            fn string_end(l: &Line<'_>, open: usize) -> Option<usize> {
                let mut carry = 0u64;
                let mut p = open + 1;
                loop {
                    let m = $masks::<false, false>(l.block_at(p)?);
                    let q = m.quote & !escaped_bits(m.backslash, &mut carry);
                    if q != 0 {
                        return Some(p + q.trailing_zeros() as usize + 1);
                    }
                    p += 64;
                }
            }

            /// One past the container (`{…}` or `[…]`) opening at `open`. Each block's string
            /// interior comes from the prefix XOR of its unescaped quotes, and only the brackets
            /// outside strings are looked at one by one: a block wholly inside a string (most of
            /// a tool output) costs its masks and nothing more.
            $(#[$attr])*
            fn container_end(l: &Line<'_>, open: usize) -> Option<usize> {
                let mut depth = 0usize;
                // All ones when the block starts inside a string.
                let mut inside_before = 0u64;
                let mut carry = 0u64;
                let mut p = open;
                loop {
                    let m = $masks::<true, false>(l.block_at(p)?);
                    // Escaped quotes never open or close a string (outside strings, valid JSON
                    // has no backslashes at all).
                    let q = m.quote & !escaped_bits(m.backslash, &mut carry);
                    if q != 0 || inside_before == 0 {
                        let inside = prefix_xor(q) ^ inside_before;
                        inside_before = ((inside as i64) >> 63) as u64;
                        let mut brackets = (m.open | m.close) & !inside;
                        while brackets != 0 {
                            let i = brackets.trailing_zeros();
                            brackets &= brackets - 1;
                            if m.open >> i & 1 == 1 {
                                depth += 1;
                            } else {
                                // The first bracket at depth 0 is the opener itself, so the depth
                                // is at least 1 here.
                                depth -= 1;
                                if depth == 0 {
                                    return Some(p + i as usize + 1);
                                }
                            }
                        }
                    }
                    p += 64;
                }
            }

            /// Scan the object opening at `open` into `slots` (see [`slot_of`]). At the top, the
            /// object of key `payload` is scanned one level down into `nested`. Returns the end.
            $(#[$attr])*
            fn scan_object<'a, const TOP: bool>(
                l: &Line<'a>,
                open: usize,
                slots: &mut [Option<Val<'a>>],
                nested: &mut [Option<Val<'a>>],
            ) -> Option<usize> {
                let b: &'a [u8] = l.b;
                let mut payload_seen = false;
                let mut i = skip_ws(b, open + 1);
                if b.get(i) == Some(&b'}') {
                    return Some(i + 1);
                }
                loop {
                    if b.get(i) != Some(&b'"') {
                        return None;
                    }
                    let kend = string_end(l, i)?;
                    let key = &b[i + 1..kend - 1];
                    let c = skip_ws(b, kend);
                    if b.get(c) != Some(&b':') {
                        return None;
                    }
                    let v = skip_ws(b, c + 1);
                    let slot = slot_of::<TOP>(key);
                    let is_payload = TOP && key == b"payload";
                    if is_payload {
                        if payload_seen {
                            return None; // a duplicate: the full decode decides
                        }
                        payload_seen = true;
                    }
                    let (val, e) = match *b.get(v)? {
                        b'"' => {
                            let e = string_end(l, v)?;
                            let raw = &b[v + 1..e - 1];
                            let val = if slot.is_none() || raw.contains(&b'\\') {
                                Val::Other
                            } else {
                                std::str::from_utf8(raw).map_or(Val::Other, Val::Str)
                            };
                            (val, e)
                        }
                        b'{' if is_payload => {
                            let e = scan_object::<false>(l, v, nested, &mut [])?;
                            (Val::Other, e)
                        }
                        b'{' | b'[' => (Val::Other, container_end(l, v)?),
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

            /// [`super::fields`] compiled for this instruction set.
            $(#[$attr])*
            pub(super) fn fields(line: &[u8]) -> Option<Fields<'_>> {
                let i0 = skip_ws(line, 0);
                if line.get(i0) != Some(&b'{') {
                    return None;
                }
                let mut top = [None; 3];
                let mut inner = [None; 2];
                let end = scan_object::<true>(&Line::new(line), i0, &mut top, &mut inner)?;
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
        }
    };
}

scanner!(baseline, masks_baseline, #[inline(always)]);
#[cfg(target_arch = "x86_64")]
scanner!(avx2, masks_avx2, #[target_feature(enable = "avx2")] #[inline]);

/// The [`Fields`] of a line framed as one JSON object, scanned with the best
/// instruction set the CPU has.
pub fn fields(line: &[u8]) -> Option<Fields<'_>> {
    // `Avx2` is checked against the CPU once, in `fields_with`.
    fields_with(Isa::Avx2, line)
}

/// [`fields`] with a chosen instruction set ([`Isa::Avx2`] falls back to the baseline
/// on a CPU without it). For tests and benchmarks.
#[allow(unsafe_code)]
pub fn fields_with(isa: Isa, line: &[u8]) -> Option<Fields<'_>> {
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx2 && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { avx2::fields(line) };
    }
    let _ = isa;
    baseline::fields(line)
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

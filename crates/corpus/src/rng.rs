//! A small, fully specified pseudo-random generator (SplitMix64 seeding a xoshiro256**).
//!
//! The corpus must be byte-identical for a given seed on every platform and with every
//! dependency version, so the generator does not depend on the `rand` crate's stream stability.

/// Mixes a 64-bit value (the SplitMix64 finaliser).
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Derives an independent stream seed from a parent seed and a label.
pub fn derive(seed: u64, stream: u64, index: u64) -> u64 {
    mix64(mix64(seed ^ mix64(stream)).wrapping_add(index.wrapping_mul(0xD1B5_4A32_D192_ED03)))
}

/// Deterministic PRNG (xoshiro256**).
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator seeded from one 64-bit value.
    pub fn new(seed: u64) -> Self {
        let mut z = seed;
        let mut s = [0u64; 4];
        for slot in &mut s {
            z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
            *slot = mix64(z);
        }
        if s == [0; 4] {
            s[0] = 1;
        }
        Rng { s }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in `[0, n)`; `n == 0` gives 0.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform index into a collection of length `n`.
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// Uniform in `[lo, hi]` (inclusive).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// Uniform in `[0, 1)`.
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.f64() < p
    }

    /// Standard normal deviate (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.f64();
        let u2 = self.f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Log-normal deviate with the given median and shape `sigma`.
    pub fn lognormal(&mut self, median: f64, sigma: f64) -> f64 {
        median * (sigma * self.normal()).exp()
    }

    /// Log-uniform integer in `[lo, hi]`.
    pub fn log_uniform(&mut self, lo: u64, hi: u64) -> u64 {
        let (l, h) = ((lo.max(1)) as f64, (hi.max(1)) as f64);
        let v = (l.ln() + self.f64() * (h.ln() - l.ln())).exp();
        (v as u64).clamp(lo, hi)
    }

    /// A uniformly chosen element.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.index(items.len())]
    }

    /// A weighted choice; returns the index.
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        let mut x = self.below(total);
        for (i, &w) in weights.iter().enumerate() {
            if x < u64::from(w) {
                return i;
            }
            x -= u64::from(w);
        }
        weights.len() - 1
    }

    /// `n` lowercase hex digits.
    pub fn hex(&mut self, n: usize) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut s = String::with_capacity(n);
        let mut bits = 0u64;
        let mut left = 0;
        for _ in 0..n {
            if left == 0 {
                bits = self.next_u64();
                left = 16;
            }
            s.push(HEX[(bits & 15) as usize] as char);
            bits >>= 4;
            left -= 1;
        }
        s
    }

    /// `n` characters from a base62 alphabet.
    pub fn alnum(&mut self, n: usize) -> String {
        const A: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..n).map(|_| A[self.index(62)] as char).collect()
    }

    /// A random version-4 UUID.
    pub fn uuid_v4(&mut self) -> String {
        let h = self.hex(32);
        let variant = b"89ab"[self.index(4)] as char;
        format!(
            "{}-{}-4{}-{}{}-{}",
            &h[0..8],
            &h[8..12],
            &h[13..16],
            variant,
            &h[17..20],
            &h[20..32]
        )
    }

    /// A version-7 UUID for the given unix time in milliseconds.
    pub fn uuid_v7(&mut self, unix_ms: u64) -> String {
        let t = format!("{:012x}", unix_ms & 0xFFFF_FFFF_FFFF);
        let h = self.hex(20);
        let variant = b"89ab"[self.index(4)] as char;
        format!(
            "{}-{}-7{}-{}{}-{}",
            &t[0..8],
            &t[8..12],
            &h[0..3],
            variant,
            &h[3..6],
            &h[6..18]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_is_stable() {
        let mut a = Rng::new(42);
        let mut b = Rng::new(42);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
    }

    #[test]
    fn uuids_have_the_right_shape() {
        let mut r = Rng::new(7);
        let u = r.uuid_v4();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        let v = r.uuid_v7(1_765_000_000_000);
        assert_eq!(&v[14..15], "7");
        assert!(v.starts_with("019"));
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = Rng::new(3);
        for n in 1..50 {
            assert!(r.below(n) < n);
        }
        assert_eq!(r.log_uniform(20, 20), 20);
    }
}

//! [`Divisor`]: `u64` division by a number fixed in advance, with
//! multiplications only.
#![forbid(unsafe_code)]

/// Divides `u64`s by one divisor without a divide instruction or a library
/// call.
///
/// A 32-bit core has no 64-bit divide instruction (a Cortex-M0 has no
/// divide at all), so `u64 / u64` is a call to a library routine: about
/// 1.4 KB of flash on thumbv6m, and tens to hundreds of cycles per call.
/// A `Divisor` keeps its divisor's reciprocal, so each division is one
/// 64×64-bit multiply-high and at most one correction. The timers convert
/// durations to ticks and lags to microseconds this way.
///
/// [`new`](Self::new) works out the reciprocal one bit at a time: 64 steps,
/// free when it runs at compile time (a `const` or `static`), and worth it
/// at run time only when the divisor is used more than a few times.
///
/// ```
/// use dinah::time::Divisor;
///
/// const MILLION: Divisor = Divisor::new(1_000_000);
/// assert_eq!(MILLION.div_rem(3_500_000), (3, 500_000));
/// assert_eq!(MILLION.div_ceil(3_000_001), 4);
/// assert_eq!(Divisor::new(7).div_rem(u64::MAX), (u64::MAX / 7, u64::MAX % 7));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Divisor {
    divisor: u64,
    /// `⌊(2⁶⁴ - 1) / divisor⌋`.
    reciprocal: u64,
}

impl Divisor {
    /// A divisor of `divisor`; zero is taken as one, so a division never
    /// panics.
    #[must_use]
    pub const fn new(divisor: u64) -> Self {
        let divisor = if divisor == 0 { 1 } else { divisor };
        Self {
            divisor,
            reciprocal: bitwise_div_rem(u64::MAX, divisor).0,
        }
    }

    /// The divisor.
    #[must_use]
    pub const fn get(self) -> u64 {
        self.divisor
    }

    /// `(x / divisor, x % divisor)`, exactly.
    #[must_use]
    #[inline]
    pub fn div_rem(self, x: u64) -> (u64, u64) {
        // r = ⌊(2⁶⁴ - 1) / d⌋ >= 2⁶⁴ / d - 1, so x·r / 2⁶⁴ > x / d - 1:
        // the estimate is ⌊x / d⌋ or one below it, never above (q·d <= x).
        let quotient = ((u128::from(x) * u128::from(self.reciprocal)) >> 64) as u64;
        let remainder = x - quotient * self.divisor;
        if remainder >= self.divisor {
            (quotient + 1, remainder - self.divisor)
        } else {
            (quotient, remainder)
        }
    }

    /// `x / divisor`, rounded up.
    #[must_use]
    #[inline]
    pub fn div_ceil(self, x: u64) -> u64 {
        let (quotient, remainder) = self.div_rem(x);
        quotient + u64::from(remainder != 0)
    }
}

/// `(n / d, n % d)` by restoring division, one quotient bit per step, for
/// `d > 0`: the slow path that keeps a run-time reciprocal (and the
/// interval's rare catching up) from linking the library routine that
/// [`Divisor`] exists to avoid. Every shift is by one place, so a 32-bit
/// core needs no 64-bit shift routine either.
pub(crate) const fn bitwise_div_rem(mut n: u64, d: u64) -> (u64, u64) {
    let mut quotient = 0;
    let mut remainder: u64 = 0;
    let mut step = 0;
    while step < 64 {
        step += 1;
        // The remainder stays below d, so a carry out of the shift means
        // it now exceeds d.
        let carry = remainder >> 63;
        remainder = (remainder << 1) | (n >> 63);
        n <<= 1;
        quotient <<= 1;
        if carry != 0 || remainder >= d {
            remainder = remainder.wrapping_sub(d);
            quotient |= 1;
        }
    }
    (quotient, remainder)
}

#[cfg(test)]
mod tests {
    use super::{Divisor, bitwise_div_rem};

    const EDGES: [u64; 12] = [
        0,
        1,
        2,
        3,
        999_999_999,
        1_000_000_000,
        1_000_000_001,
        u32::MAX as u64,
        1 << 32,
        (1 << 63) - 1,
        u64::MAX - 1,
        u64::MAX,
    ];

    #[test]
    fn matches_division_at_the_edges() {
        for &d in EDGES.iter().skip(1) {
            let divisor = Divisor::new(d);
            for &x in &EDGES {
                assert_eq!(divisor.div_rem(x), (x / d, x % d), "{x} / {d}");
                assert_eq!(divisor.div_ceil(x), x.div_ceil(d), "{x} / {d} up");
                assert_eq!(bitwise_div_rem(x, d), (x / d, x % d), "{x} / {d} bitwise");
            }
        }
    }

    #[test]
    fn matches_division_on_a_spread_of_values() {
        // A fixed xorshift sequence: the same values every run.
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..2_000 {
            // Divisors of every width, from one bit to 64.
            let d = (next() >> (round % 64)).max(1);
            let divisor = Divisor::new(d);
            for _ in 0..8 {
                let x = next() >> (next() % 64);
                assert_eq!(divisor.div_rem(x), (x / d, x % d), "{x} / {d}");
            }
        }
    }

    #[test]
    fn zero_is_taken_as_one() {
        assert_eq!(Divisor::new(0).get(), 1);
        assert_eq!(Divisor::new(0).div_rem(42), (42, 0));
    }
}

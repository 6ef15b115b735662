//! [`Log2Histogram`]: a distribution in power-of-two buckets, with no
//! allocation.
#![forbid(unsafe_code)]

/// A histogram of `u64` samples in `B` power-of-two buckets, with the
/// count, sum and maximum; no allocation, `const fn new`, 8·B + 24 bytes.
///
/// Bucket 0 holds the samples equal to 0. Bucket `i` for `1 <= i < B - 1`
/// holds `[2^(i-1), 2^i)`. The last bucket holds every sample at or above
/// `2^(B-2)`. So `Log2Histogram<16>` resolves 0 to 16,383 and puts the rest
/// together; with microseconds that is up to about 16 ms.
///
/// Counts saturate at `u64::MAX` (the sum too); nothing wraps or panics.
/// The histogram is a value: it does not synchronize, and concurrent
/// recording needs the caller's lock or one histogram per thread, merged
/// later with [`merge`](Self::merge).
///
/// Not promised: exact quantiles. A quantile is answered with the upper edge
/// of the bucket it falls in, which is at most twice the true value (for the
/// last bucket, the largest sample seen).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Log2Histogram<const B: usize> {
    buckets: [u64; B],
    count: u64,
    sum: u64,
    max: u64,
}

impl<const B: usize> Log2Histogram<B> {
    const AT_LEAST_TWO_BUCKETS: () = assert!(B >= 2 && B <= 65, "B is between 2 and 65");

    /// An empty histogram.
    #[must_use]
    pub const fn new() -> Self {
        let () = Self::AT_LEAST_TWO_BUCKETS;
        Self {
            buckets: [0; B],
            count: 0,
            sum: 0,
            max: 0,
        }
    }

    /// A histogram of the given buckets, count, sum and largest sample, as
    /// kept elsewhere (a copy in atomics, say). Nothing is checked: a count
    /// that is not the sum of the buckets reads back as given.
    #[must_use]
    pub const fn from_parts(buckets: [u64; B], count: u64, sum: u64, max: u64) -> Self {
        let () = Self::AT_LEAST_TWO_BUCKETS;
        Self {
            buckets,
            count,
            sum,
            max,
        }
    }

    /// The bucket a sample falls in.
    #[must_use]
    pub const fn bucket_of(value: u64) -> usize {
        // 0 -> 0; [2^(i-1), 2^i) -> i; clamped to the last bucket.
        let index = if HAS_CLZ {
            (u64::BITS - value.leading_zeros()) as usize
        } else {
            bit_length(value)
        };
        if index < B - 1 { index } else { B - 1 }
    }

    /// The smallest sample bucket `index` holds, and the largest (`None` for
    /// the last bucket, which is open above).
    ///
    /// # Panics
    ///
    /// If `index >= B`.
    #[must_use]
    pub const fn bucket_range(index: usize) -> (u64, Option<u64>) {
        assert!(index < B, "bucket index out of range");
        let low = if index == 0 { 0 } else { 1 << (index - 1) };
        if index == B - 1 {
            (low, None)
        } else if index == 0 {
            (0, Some(0))
        } else {
            (low, Some((1 << index) - 1))
        }
    }

    /// Records one sample.
    pub fn record(&mut self, value: u64) {
        let bucket = &mut self.buckets[Self::bucket_of(value)];
        *bucket = bucket.saturating_add(1);
        self.count = self.count.saturating_add(1);
        self.sum = self.sum.saturating_add(value);
        if value > self.max {
            self.max = value;
        }
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &Self) {
        for (mine, theirs) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *mine = mine.saturating_add(*theirs);
        }
        self.count = self.count.saturating_add(other.count);
        self.sum = self.sum.saturating_add(other.sum);
        if other.max > self.max {
            self.max = other.max;
        }
    }

    /// Forgets every sample.
    pub fn clear(&mut self) {
        *self = Self::new();
    }

    /// How many samples were recorded.
    #[must_use]
    pub const fn count(&self) -> u64 {
        self.count
    }

    /// The sum of the samples (saturating).
    #[must_use]
    pub const fn sum(&self) -> u64 {
        self.sum
    }

    /// The largest sample, or 0 when empty.
    #[must_use]
    pub const fn max(&self) -> u64 {
        self.max
    }

    /// How many samples bucket `index` holds (0 for an index out of range).
    #[must_use]
    pub const fn bucket(&self, index: usize) -> u64 {
        if index < B { self.buckets[index] } else { 0 }
    }

    /// Every bucket's count, lowest first.
    #[must_use]
    pub const fn buckets(&self) -> &[u64; B] {
        &self.buckets
    }

    /// An upper bound for the `numerator / denominator` quantile: the upper
    /// edge of the bucket holding the sample at that rank (the largest
    /// sample seen if that is smaller, or if the bucket is the last). 0 for
    /// an empty histogram; a fraction above 1 is read as 1, and a zero
    /// denominator as 1.
    #[must_use]
    pub fn quantile_upper_bound(&self, numerator: u64, denominator: u64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let denominator = u128::from(denominator.max(1));
        let numerator = u128::from(numerator).min(denominator);
        // The rank (1-based) of the sample the quantile names.
        let rank = (u128::from(self.count) * numerator)
            .div_ceil(denominator)
            .max(1);
        let mut seen = 0u128;
        for (index, &count) in self.buckets.iter().enumerate() {
            seen += u128::from(count);
            if seen >= rank {
                return match Self::bucket_range(index).1 {
                    Some(high) if high < self.max => high,
                    _ => self.max,
                };
            }
        }
        self.max
    }
}

impl<const B: usize> Default for Log2Histogram<B> {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether `leading_zeros` is an instruction here: on 64-bit targets, and
/// on the Arm cores with atomic read-modify-write (ARMv7-M and later, which
/// have `CLZ`). ARMv6-M has neither (a Cortex-M0's `leading_zeros` calls a
/// library routine of about 100 bytes), nor has a RISC-V core without Zbb:
/// those take [`bit_length`]. A core this misses (ARMv8-M Baseline) only
/// keeps the library call.
const HAS_CLZ: bool = cfg!(any(
    target_pointer_width = "64",
    all(target_arch = "arm", target_has_atomic = "32")
));

/// The number of bits `value` needs (0 for 0), by halving: the high word if
/// it is not zero, else the low one, then five compares, each shift by a
/// constant (no shift routine on a 32-bit core).
const fn bit_length(value: u64) -> usize {
    let high = (value >> 32) as u32;
    let (mut rest, mut bits) = if high != 0 {
        (high, 32)
    } else {
        (value as u32, 0)
    };
    if rest >> 16 != 0 {
        rest >>= 16;
        bits += 16;
    }
    if rest >> 8 != 0 {
        rest >>= 8;
        bits += 8;
    }
    if rest >> 4 != 0 {
        rest >>= 4;
        bits += 4;
    }
    if rest >> 2 != 0 {
        rest >>= 2;
        bits += 2;
    }
    if rest >> 1 != 0 {
        rest >>= 1;
        bits += 1;
    }
    bits + rest as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_length_by_halving_matches_leading_zeros() {
        // Every power of two, one below and one above it, and the ends:
        // the 32-bit cores' path, checked against the 64-bit one.
        let near_powers = (0..64).flat_map(|shift| {
            let power = 1u64 << shift;
            [power - 1, power, power + 1]
        });
        for value in [0, 1, u64::MAX].into_iter().chain(near_powers) {
            assert_eq!(
                bit_length(value),
                (u64::BITS - value.leading_zeros()) as usize,
                "{value:#x}"
            );
        }
    }

    #[test]
    fn buckets_split_at_powers_of_two() {
        type H = Log2Histogram<8>;
        assert_eq!(H::bucket_of(0), 0);
        assert_eq!(H::bucket_of(1), 1);
        assert_eq!(H::bucket_of(2), 2);
        assert_eq!(H::bucket_of(3), 2);
        assert_eq!(H::bucket_of(4), 3);
        assert_eq!(H::bucket_of(63), 6);
        // 2^(B-2) = 64 and above share the last bucket.
        assert_eq!(H::bucket_of(64), 7);
        assert_eq!(H::bucket_of(u64::MAX), 7);
        assert_eq!(H::bucket_range(0), (0, Some(0)));
        assert_eq!(H::bucket_range(1), (1, Some(1)));
        assert_eq!(H::bucket_range(3), (4, Some(7)));
        assert_eq!(H::bucket_range(7), (64, None));
        for index in 0..8 {
            let (low, high) = H::bucket_range(index);
            assert_eq!(H::bucket_of(low), index);
            if let Some(high) = high {
                assert_eq!(H::bucket_of(high), index);
                assert_eq!(H::bucket_of(high + 1), index + 1);
            }
        }
        assert_eq!(Log2Histogram::<65>::bucket_of(u64::MAX), 64);
        assert_eq!(Log2Histogram::<65>::bucket_range(64), (1 << 63, None));
    }

    #[test]
    fn records_counts_sum_max_and_merges() {
        let mut a: Log2Histogram<6> = Log2Histogram::new();
        for value in [0, 5, 5, 100] {
            a.record(value);
        }
        assert_eq!((a.count(), a.sum(), a.max()), (4, 110, 100));
        assert_eq!(a.buckets(), &[1, 0, 0, 2, 0, 1]);
        let mut b = Log2Histogram::<6>::new();
        b.record(1);
        b.merge(&a);
        assert_eq!((b.count(), b.sum(), b.max()), (5, 111, 100));
        assert_eq!(b.bucket(1), 1);
        assert_eq!(b.bucket(99), 0);
        b.clear();
        assert_eq!(b, Log2Histogram::default());
    }

    #[test]
    fn saturates_instead_of_wrapping() {
        let mut h: Log2Histogram<4> = Log2Histogram::new();
        h.record(u64::MAX);
        h.record(u64::MAX);
        assert_eq!((h.sum(), h.max(), h.count()), (u64::MAX, u64::MAX, 2));
        let mut full = h.clone();
        full.buckets[3] = u64::MAX;
        full.count = u64::MAX;
        full.record(9);
        assert_eq!((full.bucket(3), full.count()), (u64::MAX, u64::MAX));
    }

    #[test]
    fn quantiles_are_bucket_upper_edges_capped_by_the_max() {
        let mut h: Log2Histogram<16> = Log2Histogram::new();
        assert_eq!(h.quantile_upper_bound(1, 2), 0, "empty");
        for value in 1..=100 {
            h.record(value);
        }
        // The median (rank 50) lies in [32, 64).
        assert_eq!(h.quantile_upper_bound(1, 2), 63);
        // The 99th percentile (rank 99) lies in [64, 128), capped at 100.
        assert_eq!(h.quantile_upper_bound(99, 100), 100);
        assert_eq!(h.quantile_upper_bound(0, 100), 1, "the smallest");
        assert_eq!(h.quantile_upper_bound(5, 1), 100, "above 1 reads as 1");
        assert_eq!(
            h.quantile_upper_bound(1, 0),
            100,
            "zero denominator reads as 1"
        );
    }
}

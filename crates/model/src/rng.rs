//! SplitMix64, the one random generator of Rosetta's own code (data order, the numbers corpus,
//! dropout masks, per-step seeds), fully specified so that every platform and dependency
//! version draws the same numbers.

/// The SplitMix64 increment (the golden ratio in 64 bits).
pub const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function: a bijective 64-bit mix.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// SplitMix64 (Steele, Lea and Flood, 2014).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// A generator for stream `stream` of `seed` (e.g. one per epoch), independent of the others.
    pub fn derive(seed: u64, stream: u64) -> Self {
        let mut base = Self(seed ^ 0xD1B5_4A32_D192_ED03);
        let mixed = base.next_u64() ^ stream.wrapping_mul(GOLDEN_GAMMA);
        Self(Self(mixed).next_u64())
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN_GAMMA);
        mix64(self.0)
    }

    /// The output the `k`-th call of [`next_u64`](Self::next_u64) from here would give
    /// (`k = 0` is the next one), without advancing: SplitMix64's outputs are random-access.
    pub fn peek(&self, k: u64) -> u64 {
        mix64(
            self.0
                .wrapping_add(GOLDEN_GAMMA.wrapping_mul(k.wrapping_add(1))),
        )
    }

    /// Advances past `k` outputs, as `k` calls of [`next_u64`](Self::next_u64) would.
    pub fn skip(&mut self, k: u64) {
        self.0 = self.0.wrapping_add(GOLDEN_GAMMA.wrapping_mul(k));
    }

    /// A number in `0..bound` (`bound > 0`), by Lemire's multiply-shift (bias below 2^-32 for
    /// the sizes used here).
    pub fn below(&mut self, bound: u64) -> u64 {
        ((self.next_u64() as u128 * bound as u128) >> 64) as u64
    }

    /// Shuffles `items` in place (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_first_output() {
        // Reference value of SplitMix64 seeded with 0 (Vigna's splitmix64.c).
        assert_eq!(SplitMix64::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn streams_differ_and_repeat() {
        let a: Vec<u64> = (0..4)
            .map(|_| SplitMix64::derive(7, 1).next_u64())
            .collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(
            SplitMix64::derive(7, 1).next_u64(),
            SplitMix64::derive(7, 2).next_u64()
        );
    }

    #[test]
    fn peek_and_skip_match_sequential_draws() {
        let start = SplitMix64::derive(11, 3);
        let mut sequential = start.clone();
        let draws: Vec<u64> = (0..50).map(|_| sequential.next_u64()).collect();
        for (k, &d) in draws.iter().enumerate() {
            assert_eq!(start.peek(k as u64), d, "draw {k}");
        }
        let mut skipped = start.clone();
        skipped.skip(50);
        assert_eq!(skipped.next_u64(), sequential.next_u64());
    }

    #[test]
    fn below_stays_in_range() {
        let mut rng = SplitMix64::new(3);
        assert!((0..1000).all(|_| rng.below(7) < 7));
    }
}

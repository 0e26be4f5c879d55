//! A seeded generator for fault decisions (SplitMix64): tiny, no crate,
//! the same sequence on every platform, so a seed names a run's faults.

/// SplitMix64 (Steele, Lea, Flood 2014), the seeder of xoshiro.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p` (0 never draws).
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.next_f64() < p
    }

    /// Uniform in [lo, hi] (lo when hi <= lo).
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo + 1)
    }
}

/// The seed for a test run: `TELHA_CLUSTER_SEED` when set (to replay a
/// failure), else one drawn from the clock. Printed either way, so every
/// failing run names the seed that replays its faults.
pub fn test_seed(test: &str) -> u64 {
    let seed = match std::env::var("TELHA_CLUSTER_SEED") {
        Ok(s) => s
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("TELHA_CLUSTER_SEED={s:?} is not a u64")),
        Err(_) => {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            SplitMix64::new(t.as_nanos() as u64 ^ u64::from(std::process::id())).next_u64()
        }
    };
    eprintln!("{test}: seed {seed} (replay with TELHA_CLUSTER_SEED={seed})");
    seed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn between_stays_in_bounds_and_chance_tracks_p() {
        let mut r = SplitMix64::new(1);
        let mut hits = 0;
        for _ in 0..10_000 {
            let v = r.between(3, 5);
            assert!((3..=5).contains(&v));
            if r.chance(0.25) {
                hits += 1;
            }
        }
        assert!((2_000..3_000).contains(&hits), "{hits}");
        assert!(!r.chance(0.0));
    }
}

//! The retry schedule: attempt `k` (k ≥ 1 failed attempts) waits
//! `min(cap, base * factor^(k-1))`, then spread by the jitter share `j`
//! uniformly over `[d × (1 − j), d × (1 + j)]` ([`jittered`], drawn from
//! the engine's [`JitterRng`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::config::Backoff;

/// The delay after `attempts` failed attempts (`attempts` ≥ 1; 0 is treated as 1).
/// Never overflows: anything past the cap is the cap.
pub fn delay(b: &Backoff, attempts: u32) -> Duration {
    let exp = attempts.max(1) - 1;
    let base_ms = b.base.as_millis() as f64;
    let cap_ms = b.cap.as_millis() as f64;
    let ms = base_ms * b.factor.powi(exp.min(i32::MAX as u32) as i32);
    let ms = if ms.is_finite() {
        ms.min(cap_ms)
    } else {
        cap_ms
    };
    Duration::from_millis(ms.max(0.0).round() as u64)
}

/// The random source of the jitter: SplitMix64 over one atomic counter
/// (lock-free, shared by every thread of an engine). Seeded from the time
/// and the process at open; [`JitterRng::seed`] (`Queue::seed_jitter`)
/// makes the sequence of draws repeatable for tests.
#[derive(Debug)]
pub struct JitterRng {
    state: AtomicU64,
}

const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

impl JitterRng {
    /// A generator seeded with `seed`.
    pub fn seeded(seed: u64) -> Self {
        JitterRng {
            state: AtomicU64::new(seed),
        }
    }

    /// A generator seeded from the system time, the process id and an
    /// address (no two engines of a process share a sequence).
    pub fn from_entropy() -> Self {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let here = &t as *const u64 as u64;
        Self::seeded(t ^ (u64::from(std::process::id()) << 32) ^ here.rotate_left(17))
    }

    /// Restart the sequence at `seed`.
    pub fn seed(&self, seed: u64) {
        self.state.store(seed, Ordering::SeqCst);
    }

    /// The next draw, uniform in `[0, 1)`.
    pub fn unit(&self) -> f64 {
        let mut z = self
            .state
            .fetch_add(GAMMA, Ordering::Relaxed)
            .wrapping_add(GAMMA);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `d` spread by the share `jitter` (0 to 1) with the draw `u` in
/// `[0, 1)`: `d × (1 − jitter + 2 × jitter × u)`, whole milliseconds.
/// `jitter` 0 (or out of range, NaN) answers `d` itself.
pub fn jittered(d: Duration, jitter: f64, u: f64) -> Duration {
    if !(jitter > 0.0 && jitter <= 1.0) {
        return d;
    }
    let ms = d.as_millis() as f64 * (1.0 - jitter + 2.0 * jitter * u);
    Duration::from_millis(ms.max(0.0).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_jitter_keeps_the_delay_and_a_draw_stays_in_the_band() {
        let d = Duration::from_secs(10);
        assert_eq!(jittered(d, 0.0, 0.7), d);
        assert_eq!(jittered(d, f64::NAN, 0.7), d);
        assert_eq!(jittered(d, 0.2, 0.0), Duration::from_secs(8));
        assert_eq!(jittered(d, 0.2, 0.5), d);
        assert!(jittered(d, 0.2, 0.999_999) <= Duration::from_secs(12));
    }

    #[test]
    fn a_seeded_generator_repeats_its_draws_in_0_to_1() {
        let (a, b) = (JitterRng::seeded(7), JitterRng::seeded(7));
        let xs: Vec<f64> = (0..100).map(|_| a.unit()).collect();
        let ys: Vec<f64> = (0..100).map(|_| b.unit()).collect();
        assert_eq!(xs, ys);
        assert!(xs.iter().all(|x| (0.0..1.0).contains(x)));
        b.seed(8);
        assert_ne!(b.unit(), JitterRng::seeded(7).unit());
    }

    #[test]
    fn default_schedule_is_10_40_160_640_2560_then_cap() {
        let b = Backoff::default();
        let secs: Vec<u64> = (1..=7).map(|k| delay(&b, k).as_secs()).collect();
        assert_eq!(secs, vec![10, 40, 160, 640, 2560, 3600, 3600]);
    }

    #[test]
    fn huge_attempt_counts_stay_at_the_cap() {
        let b = Backoff::default();
        assert_eq!(delay(&b, u32::MAX), Duration::from_secs(3600));
    }
}

//! The retry schedule: attempt `k` (k ≥ 1 failed attempts) waits
//! `min(cap, base * factor^(k-1))`.

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

#[cfg(test)]
mod tests {
    use super::*;

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

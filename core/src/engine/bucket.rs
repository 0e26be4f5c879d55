//! One instance of a flow-control rule: its leases and its token bucket.
//! Shared by the limiter (kinds and scopes, `limiter.rs`) and the key gate
//! (job keys, `keyed.rs`), which differ only in what names an instance.

/// The leases an instance holds and its tokens (a rate's bucket).
#[derive(Debug, Clone, Copy)]
pub(super) struct Inst {
    pub leased: u32,
    pub tokens: f64,
    /// When `tokens` was last brought up to date (ms).
    pub at: u64,
}

impl Inst {
    /// A new instance at `now`: nothing leased, a full bucket.
    pub fn new(burst: f64, now: u64) -> Inst {
        Inst {
            leased: 0,
            tokens: burst,
            at: now,
        }
    }

    /// Bring the bucket up to `now` at `rate` tokens per second, at most
    /// `burst` (a rate of 0: no rate, nothing to refill).
    pub fn refill(&mut self, now: u64, rate: f64, burst: f64) {
        if rate > 0.0 && now > self.at {
            self.tokens = (self.tokens + (now - self.at) as f64 * rate / 1000.0).min(burst);
            self.at = now;
        }
    }

    /// `None` when a lease may go now, else when it may (u64::MAX: when one
    /// of this instance's leases ends). Call after [`Inst::refill`].
    pub fn blocked(&self, now: u64, cap: u32, rate: Option<f64>) -> Option<u64> {
        if self.leased >= cap {
            return Some(u64::MAX);
        }
        match rate {
            Some(rate) if self.tokens < 1.0 - 1e-9 => {
                let ms = ((1.0 - self.tokens) * 1000.0 / rate).ceil().max(1.0) as u64;
                Some(now.saturating_add(ms))
            }
            _ => None,
        }
    }

    /// Holds nothing and would start afresh anyway: safe to forget.
    pub fn idle(&self, has_rate: bool, burst: f64) -> bool {
        self.leased == 0 && (!has_rate || self.tokens >= burst)
    }
}

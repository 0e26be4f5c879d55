//! A `PollJobs` stream's lease-ahead window, sized by time: the stream
//! keeps at most `clamp(ceil(rate * window), floor, capacity)` leases
//! unsettled, where `rate` is its settles per second as measured here
//! (sampled at most every 20 ms; a higher sample replaces the rate at once,
//! a lower one blends in slowly). Fast handlers drain their window within a
//! round trip, so the rate (and the window) grows to the capacity; slow
//! ones settle a few a second, so the window falls to the floor (the
//! worker's concurrency) and the rest of a backlog stays pending for other
//! workers. It shrinks by leasing less, never by taking leases back.

use telha_jobs::Error;

/// The default time of handler work kept in flight (`window_ms` absent).
pub(crate) const DEFAULT_WINDOW_MS: u32 = 100;
/// The longest `window_ms` a request may ask for.
pub(crate) const MAX_WINDOW_MS: u32 = 60_000;
/// The shortest time between two rate samples.
const SAMPLE_SECS: f64 = 0.020;
/// How much of the old rate a lower sample keeps per 20 ms.
const DECAY_KEEP: f64 = 0.7;

#[derive(Debug, Clone)]
pub(crate) struct Window {
    capacity: usize,
    floor: usize,
    window_secs: f64,
    /// Settles per second, smoothed.
    rate: f64,
    last_settles: u64,
    last_secs: f64,
}

impl Window {
    /// From a `PollJobsRequest`'s fields (capacity already validated).
    /// `floor` absent: the window is fixed at `capacity` (as before the
    /// field existed).
    pub(crate) fn from_request(
        capacity: u32,
        floor: Option<u32>,
        window_ms: Option<u32>,
    ) -> Result<Window, Error> {
        let floor = floor.unwrap_or(capacity);
        if floor == 0 || floor > capacity {
            return Err(Error::InvalidArgument(format!(
                "floor must be 1 to capacity ({capacity}), got {floor}"
            )));
        }
        let window_ms = window_ms.unwrap_or(DEFAULT_WINDOW_MS);
        if window_ms == 0 || window_ms > MAX_WINDOW_MS {
            return Err(Error::InvalidArgument(format!(
                "window_ms must be 1 to {MAX_WINDOW_MS}, got {window_ms}"
            )));
        }
        Ok(Window {
            capacity: capacity as usize,
            floor: floor as usize,
            window_secs: f64::from(window_ms) / 1000.0,
            rate: 0.0,
            last_settles: 0,
            last_secs: 0.0,
        })
    }

    /// The number of unsettled leases to keep now, given the stream's
    /// settle count so far and the seconds since it opened.
    pub(crate) fn sample(&mut self, settles: u64, now_secs: f64) -> usize {
        if self.floor == self.capacity {
            return self.capacity;
        }
        let dt = now_secs - self.last_secs;
        if dt >= SAMPLE_SECS {
            let sample = settles.saturating_sub(self.last_settles) as f64 / dt;
            if sample >= self.rate {
                self.rate = sample;
            } else {
                // 0.7 old + 0.3 sample per 20 ms: a long gap (an idle
                // stream) forgets more.
                let keep = DECAY_KEEP.powf(dt / SAMPLE_SECS);
                self.rate = keep * self.rate + (1.0 - keep) * sample;
            }
            self.last_settles = settles;
            self.last_secs = now_secs;
        }
        self.target()
    }

    /// `clamp(ceil(rate * window), floor, capacity)`.
    pub(crate) fn target(&self) -> usize {
        let want = (self.rate * self.window_secs).ceil();
        if want >= self.capacity as f64 {
            self.capacity
        } else {
            (want as usize).clamp(self.floor, self.capacity)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(capacity: u32, floor: Option<u32>) -> Window {
        Window::from_request(capacity, floor, None).unwrap()
    }

    #[test]
    fn without_a_floor_the_window_is_fixed_at_capacity() {
        let mut x = w(64, None);
        assert_eq!(x.sample(0, 0.0), 64);
        assert_eq!(x.sample(1, 10.0), 64);
        assert_eq!(x.sample(1_000_000, 10.1), 64);
    }

    #[test]
    fn it_starts_at_the_floor() {
        let mut x = w(257, Some(1));
        assert_eq!(x.sample(0, 0.0), 1);
        assert_eq!(x.sample(0, 0.001), 1);
    }

    #[test]
    fn fast_settles_grow_it_to_capacity_at_once() {
        let mut x = w(257, Some(4));
        x.sample(0, 0.0);
        // 100 settles in 20 ms: 5,000/s; 100 ms of that is 500, capped.
        assert_eq!(x.sample(100, 0.020), 257);
    }

    #[test]
    fn a_moderate_rate_keeps_about_the_window_of_work() {
        let mut x = w(257, Some(1));
        x.sample(0, 0.0);
        // 50/s (20 ms handlers): 100 ms of work is 5 leases.
        assert_eq!(x.sample(10, 0.2), 5);
    }

    #[test]
    fn slow_handlers_keep_it_at_the_floor() {
        let mut x = w(257, Some(2));
        x.sample(0, 0.0);
        // 2 settles a second (500 ms handlers, concurrency 1): 0.2 → floor.
        assert_eq!(x.sample(1, 0.5), 2);
        assert_eq!(x.sample(3, 1.5), 2);
    }

    #[test]
    fn a_lower_rate_decays_slowly_and_an_idle_gap_forgets() {
        let mut x = w(1000, Some(1));
        x.sample(0, 0.0);
        assert_eq!(x.sample(200, 0.020), 1000); // 10,000/s
                                                // One 20 ms sample at 0/s keeps 70 %: 7,000/s → 700.
        assert_eq!(x.sample(200, 0.040), 700);
        // Ten seconds without a settle: the old rate is gone.
        assert_eq!(x.sample(200, 10.040), 1);
    }

    #[test]
    fn samples_closer_than_20_ms_do_not_move_it() {
        let mut x = w(1000, Some(1));
        x.sample(0, 0.0);
        assert_eq!(x.sample(50, 0.010), 1);
        // The sample then spans the whole 25 ms: 2,000/s → 200.
        assert_eq!(x.sample(50, 0.025), 200);
    }

    #[test]
    fn bad_floor_or_window_is_invalid_argument() {
        for (cap, floor, ms) in [
            (8, Some(0), None),
            (8, Some(9), None),
            (8, Some(1), Some(0)),
            (8, Some(1), Some(MAX_WINDOW_MS + 1)),
        ] {
            match Window::from_request(cap, floor, ms) {
                Err(Error::InvalidArgument(_)) => {}
                other => panic!("{cap} {floor:?} {ms:?}: {other:?}"),
            }
        }
        assert!(Window::from_request(8, Some(8), Some(MAX_WINDOW_MS)).is_ok());
        assert!(Window::from_request(8, Some(1), Some(1)).is_ok());
    }
}

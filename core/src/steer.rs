//! `Queue::promote`, `reschedule`, `set_priority`: operator steering of
//! waiting work (issue 44). The engine's half is `engine/steer.rs`.

use crate::error::Result;
use crate::ids::JobId;
use crate::queue::Queue;

impl Queue {
    /// Make a delayed job, or a failed one waiting for its retry, ready
    /// now (event `promoted`; its state is kept: a failed job stays failed
    /// and is leased as a retry). A job already due is left as it is:
    /// `Ok`, nothing written, so a repeat is harmless.
    ///
    /// Errors: `NotFound`; `WrongState` for a leased, completed, dead or
    /// cancelled job (it is untouched); `Storage`; `Closed`.
    pub fn promote(&self, id: &JobId) -> Result<()> {
        self.writable()?.promote(id)
    }

    /// Give a pending or failed job a new run time, `run_at` in ms since
    /// the epoch (event `rescheduled`). A time in the future makes a ready
    /// job delayed (not leasable before it); a time in the past makes it
    /// ready at that place in line. The same time: `Ok`, nothing written.
    ///
    /// Errors: `InvalidArgument` for a time after
    /// [`MAX_INSTANT_MS`](crate::limits::MAX_INSTANT_MS) (nothing
    /// written); otherwise as [`Queue::promote`].
    pub fn reschedule(&self, id: &JobId, run_at: u64) -> Result<()> {
        self.writable()?.reschedule(id, run_at)
    }

    /// Give a pending or failed job a new priority, 0 most urgent to 255
    /// (event `reprioritized`); its time, so its place among jobs of that
    /// priority, is kept. The same priority: `Ok`, nothing written.
    ///
    /// Errors: as [`Queue::promote`]. Front ends taking a wider integer
    /// answer `InvalidArgument` outside 0–255.
    pub fn set_priority(&self, id: &JobId, priority: u8) -> Result<()> {
        self.writable()?.set_priority(id, priority)
    }
}

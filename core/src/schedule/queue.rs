//! The schedule operations on [`Queue`].

use crate::error::Result;
use crate::queue::Queue;

use super::{RunReport, Schedule, ScheduleInfo};

impl Queue {
    /// Create the schedule `schedule.name`, or replace it. An update keeps
    /// what the schedule has done (the slots already enqueued are never
    /// enqueued again) unless its spec, time zone or anchor changed: then
    /// it starts afresh from now. A new schedule's first slot is the first
    /// one after now. Everything is checked here, never at fire time:
    /// `InvalidArgument` for a bad name, spec, time zone, interval, kind,
    /// number, or a payload over `max_payload_bytes`. `Closed` after
    /// `close`; `InvalidArgument` on a read-only handle.
    pub fn schedule_put(&self, schedule: &Schedule) -> Result<ScheduleInfo> {
        self.writable()?.schedule_put(schedule.clone())
    }

    /// The schedule `name`; `NotFound` when there is none.
    pub fn schedule_get(&self, name: &str) -> Result<ScheduleInfo> {
        self.engine()?.schedule_get(name)
    }

    /// Every schedule, by name.
    pub fn schedule_list(&self) -> Result<Vec<ScheduleInfo>> {
        Ok(self.engine()?.schedule_list())
    }

    /// Delete the schedule `name` (the jobs it enqueued stay); `NotFound`
    /// when there is none.
    pub fn schedule_delete(&self, name: &str) -> Result<()> {
        self.writable()?.schedule_delete(name)
    }

    /// Pause the schedule `name`: it enqueues nothing until resumed.
    /// `NotFound` when there is none; pausing a paused one changes nothing.
    pub fn schedule_pause(&self, name: &str) -> Result<ScheduleInfo> {
        self.writable()?.schedule_set_paused(name, true)
    }

    /// Resume the schedule `name`. The slots that passed while it was
    /// paused are not caught up: the next one after now is its next.
    pub fn schedule_resume(&self, name: &str) -> Result<ScheduleInfo> {
        self.writable()?.schedule_set_paused(name, false)
    }

    /// Run one scheduler pass now (at the queue's clock): enqueue every
    /// due slot. The scheduler thread does this by itself whenever a slot
    /// falls due, unless the store was opened with `reaper_interval = 0`
    /// (no background threads), where this is how slots are enqueued.
    pub fn run_schedules(&self) -> Result<RunReport> {
        self.writable()?.run_schedules()
    }
}

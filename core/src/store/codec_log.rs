//! A record's event log: appending, folding attempts, bounding (split
//! from `codec.rs`).

use crate::event::{Event, LogEntry};

use super::{
    truncate_utf8, JobRecord, MAX_ATTEMPT_SUMMARIES, MAX_DETAIL_LEN, MAX_EVENTS, MAX_SUMMARY_LEN,
};

impl JobRecord {
    /// Append a log entry for `event`, keeping the log bounded.
    pub fn log(&mut self, ts: u64, event: Event, detail: impl Into<String>) {
        let mut detail = detail.into();
        truncate_utf8(&mut detail, MAX_DETAIL_LEN);
        self.events.push((ts, event.name().to_string(), detail));
        self.bound_log();
    }

    /// Fold or drop the oldest full entries until at most [`MAX_EVENTS`]
    /// are left. A `leased` entry followed by its failure (`failed` or
    /// `lease_expired`) folds into one [`LogEntry::ATTEMPT`] entry, so the
    /// log of a poison job still accounts for every attempt; any other
    /// entry is dropped and counted in `dropped_events`.
    fn bound_log(&mut self) {
        let mut folded = self.folded_len();
        while self.events.len() - folded > MAX_EVENTS {
            let first = &self.events[folded];
            let next = self.events.get(folded + 1);
            let attempt_end = next.is_some_and(|(_, t, _)| {
                t == Event::Failed.name() || t == Event::LeaseExpired.name()
            });
            if first.1 == Event::Leased.name() && attempt_end {
                let (ts, _, _) = self.events[folded].clone();
                let (end_ts, what, why) = self.events[folded + 1].clone();
                let mut detail = format!("{what} after {} ms: {why}", end_ts.saturating_sub(ts));
                truncate_utf8(&mut detail, MAX_SUMMARY_LEN);
                self.events.remove(folded + 1);
                self.events[folded] = (ts, LogEntry::ATTEMPT.to_string(), detail);
                folded += 1;
            } else {
                self.events.remove(folded);
                self.dropped_events = self.dropped_events.saturating_add(1);
            }
        }
        if folded > MAX_ATTEMPT_SUMMARIES {
            let drop = folded - MAX_ATTEMPT_SUMMARIES;
            self.events.drain(..drop);
            self.dropped_events = self.dropped_events.saturating_add(drop as u32);
        }
    }

    /// How many leading entries are folded attempts.
    pub(super) fn folded_len(&self) -> usize {
        self.events
            .iter()
            .take_while(|(_, t, _)| t == LogEntry::ATTEMPT)
            .count()
    }

    /// The event log as [`LogEntry`]s (copies), oldest first.
    pub fn events(&self) -> Vec<LogEntry> {
        self.events
            .iter()
            .map(|(ts, t, d)| LogEntry {
                ts: *ts,
                transition: t.clone(),
                detail: d.clone(),
            })
            .collect()
    }
}

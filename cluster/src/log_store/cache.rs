//! The newest entries, kept decoded beside the log DB. openraft reads
//! every entry back after appending it: the state machine worker for the
//! apply (on every node) and the leader's replication task for each
//! follower. From the DB each read is a RocksDB iterator, a CRC-32C and a
//! MessagePack decode of the whole entry; from here it is a clone.
//!
//! The cache holds a contiguous run of indexes `[first, next)`, each
//! exactly the entry the DB holds under that index: an append writes the
//! DB and then the cache (entries it overwrites, and any after them,
//! leave the cache first), a truncate or purge drops what it deletes. A
//! read is served here only when the whole range lies inside the run, so
//! the run may be shorter than the log's tail (a reopened store starts
//! empty, a follower far behind reads from the DB). Bounded by bytes: the
//! oldest entries leave first.

use std::collections::VecDeque;

use openraft::EntryPayload;

use crate::types::Entry;

/// About how much of the newest log the cache keeps.
pub(crate) const CACHE_BYTES_DEFAULT: usize = 32 << 20;

pub(crate) struct Cache {
    entries: VecDeque<Entry>,
    /// Index of `entries[0]`.
    first: u64,
    bytes: usize,
    max_bytes: usize,
}

/// An entry's weight: its batches' bytes plus a fixed overhead.
fn weight(e: &Entry) -> usize {
    128 + match &e.payload {
        EntryPayload::Normal(p) => p.batches.iter().map(Vec::len).sum(),
        _ => 0,
    }
}

impl Cache {
    pub(crate) fn new(max_bytes: usize) -> Cache {
        Cache {
            entries: VecDeque::new(),
            first: 0,
            bytes: 0,
            max_bytes,
        }
    }

    fn next(&self) -> u64 {
        self.first + self.entries.len() as u64
    }

    /// `entries` (consecutive indexes) were just written to the DB.
    pub(crate) fn appended(&mut self, entries: Vec<Entry>) {
        let Some(start) = entries.first().map(|e| e.log_id.index) else {
            return;
        };
        if self.entries.is_empty() || start < self.first || start > self.next() {
            self.clear();
            self.first = start;
        } else {
            self.truncate(start);
        }
        for e in entries {
            debug_assert_eq!(e.log_id.index, self.next());
            self.bytes += weight(&e);
            self.entries.push_back(e);
        }
        while self.bytes > self.max_bytes && self.entries.len() > 1 {
            self.pop_front();
        }
    }

    /// Entries `[start, end)`, if all of them are here.
    pub(crate) fn get(&self, start: u64, end: u64) -> Option<Vec<Entry>> {
        if self.entries.is_empty() || start < self.first || end > self.next() || end <= start {
            return None;
        }
        let from = (start - self.first) as usize;
        let to = (end - self.first) as usize;
        Some(self.entries.range(from..to).cloned().collect())
    }

    /// Drop index `index` and every later one.
    pub(crate) fn truncate(&mut self, index: u64) {
        while self.next() > index.max(self.first) && !self.entries.is_empty() {
            let e = self.entries.pop_back().expect("not empty");
            self.bytes -= weight(&e);
        }
    }

    /// Drop every index up to and including `index`.
    pub(crate) fn purge(&mut self, index: u64) {
        while !self.entries.is_empty() && self.first <= index {
            self.pop_front();
        }
        if self.entries.is_empty() {
            self.clear();
        }
    }

    fn pop_front(&mut self) {
        let e = self.entries.pop_front().expect("not empty");
        self.bytes -= weight(&e);
        self.first += 1;
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, LogId};

    use super::*;
    use crate::types::{Payload, PAYLOAD_FORMAT};

    fn entry(term: u64, index: u64, size: usize) -> Entry {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(term, 1), index),
            payload: EntryPayload::Normal(Payload {
                format: PAYLOAD_FORMAT,
                cf_table_digest: 0,
                epoch: crate::types::Epoch::Of(0),
                batches: vec![vec![index as u8; size]],
            }),
        }
    }

    fn ids(v: Option<Vec<Entry>>) -> Option<Vec<(u64, u64)>> {
        v.map(|v| {
            v.iter()
                .map(|e| (e.log_id.leader_id.term, e.log_id.index))
                .collect()
        })
    }

    #[test]
    fn serves_only_ranges_wholly_inside_and_follows_overwrites() {
        let mut c = Cache::new(1 << 20);
        assert_eq!(ids(c.get(1, 2)), None);
        c.appended((5..=9).map(|i| entry(1, i, 10)).collect());
        assert_eq!(ids(c.get(5, 7)), Some(vec![(1, 5), (1, 6)]));
        assert_eq!(ids(c.get(4, 7)), None, "starts before the run");
        assert_eq!(ids(c.get(8, 11)), None, "ends after the run");
        assert_eq!(ids(c.get(7, 7)), None, "empty range");
        // A new leader overwrites 8.. : 8 and 9 of term 1 are gone.
        c.appended(vec![entry(2, 8, 10)]);
        assert_eq!(ids(c.get(7, 9)), Some(vec![(1, 7), (2, 8)]));
        assert_eq!(ids(c.get(9, 10)), None);
        // A gap restarts the run.
        c.appended(vec![entry(2, 12, 10)]);
        assert_eq!(ids(c.get(7, 8)), None);
        assert_eq!(ids(c.get(12, 13)), Some(vec![(2, 12)]));
        // Before the run: restarts it too.
        c.appended(vec![entry(3, 3, 10)]);
        assert_eq!(ids(c.get(12, 13)), None);
        assert_eq!(ids(c.get(3, 4)), Some(vec![(3, 3)]));
    }

    #[test]
    fn truncate_and_purge_drop_what_the_db_deletes() {
        let mut c = Cache::new(1 << 20);
        c.appended((1..=10).map(|i| entry(1, i, 10)).collect());
        c.truncate(8);
        assert_eq!(ids(c.get(7, 9)), None);
        assert_eq!(ids(c.get(7, 8)).map(|v| v.len()), Some(1));
        c.purge(3);
        assert_eq!(ids(c.get(3, 5)), None);
        assert_eq!(ids(c.get(4, 8)).map(|v| v.len()), Some(4));
        c.truncate(2); // below the run: everything goes
        assert_eq!(ids(c.get(4, 5)), None);
        c.appended(vec![entry(1, 2, 10)]);
        assert_eq!(ids(c.get(2, 3)), Some(vec![(1, 2)]));
        c.purge(100);
        assert_eq!(ids(c.get(2, 3)), None);
    }

    #[test]
    fn the_oldest_leave_first_past_the_bound() {
        let mut c = Cache::new(3 * (128 + 1000));
        c.appended((1..=5).map(|i| entry(1, i, 1000)).collect());
        assert_eq!(ids(c.get(2, 3)), None);
        assert_eq!(ids(c.get(3, 6)).map(|v| v.len()), Some(3));
        // One entry larger than the bound stays (the newest always does).
        c.appended(vec![entry(1, 6, 10_000)]);
        assert_eq!(ids(c.get(6, 7)).map(|v| v.len()), Some(1));
        assert_eq!(ids(c.get(5, 7)), None);
    }
}

//! Reading a band: the first unclaimed row that is due, from the band's
//! cursor with the iterator bounded to the band (a cached one refreshed, or
//! a new one), and the cursor after a claim.

use rustc_hash::FxHashSet as HashSet;

use rocksdb::ReadOptions;

use crate::error::{Error, Result};
use crate::job::State;
use crate::store::keys::{self, Pos};
use crate::store::{self as st};

use super::bands::{self, BandGroup, BandIter, Cursor};
use super::Engine;

/// A group keeping more kind cursors than this has them checked by the
/// reaper pass ([`Engine::tidy_kind_cursors`]).
const KIND_CURSORS_CHECKED_OVER: usize = 8;

impl Engine {
    /// The reaper pass's check of the kind cursors of groups that keep
    /// many: each moves to its band's first row, or goes when the band is
    /// empty. A busy scope served through the jobs CF never looks at its
    /// kind cursors, so without this the cursors of kinds it no longer has
    /// would stay until it drains (one seek per cursor checked, only in
    /// such groups).
    pub(super) fn tidy_kind_cursors(&self) -> Result<()> {
        let cf = self.cf(st::CF_KINDS)?;
        for (scope, sb) in self.bands.all() {
            for (prio, group) in sb.groups() {
                let mut g = bands::lock(&group);
                if g.kinds.len() <= KIND_CURSORS_CHECKED_OVER {
                    continue;
                }
                let BandGroup {
                    kinds,
                    claimed,
                    kind_its,
                    ..
                } = &mut *g;
                let mut gone = Vec::new();
                for (kind, cursor) in kinds.iter_mut() {
                    let prefix = keys::kind_band_prefix(&scope, kind, prio);
                    let mut slot = kind_its.remove(kind.as_str());
                    // Due or not: `u64::MAX` for now finds the first row.
                    self.peek(cf, &prefix, None, cursor, &mut slot, u64::MAX, claimed)?;
                    if *cursor == Cursor::EMPTY {
                        gone.push(kind.clone());
                    }
                }
                for k in gone {
                    kinds.remove(&k);
                }
            }
        }
        Ok(())
    }

    /// The first unclaimed row of a band that is due, reading from the
    /// band's cursor with the iterator bounded to the band. Moves the cursor
    /// past what it learns is dead, and records when the band's head is due.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn peek(
        &self,
        cf: &rocksdb::ColumnFamily,
        prefix: &[u8],
        state: Option<State>,
        cursor: &mut Cursor,
        slot: &mut Option<BandIter>,
        now: u64,
        claimed: &HashSet<(State, Pos)>,
    ) -> Result<Option<(Pos, Vec<u8>)>> {
        let found = self.peek_with(cf, prefix, state, cursor, slot, now, claimed);
        if !matches!(found, Ok(Some(_))) {
            // Idle, empty or failed: do not keep the DB state pinned.
            *slot = None;
        }
        found
    }

    /// `state` is the band's state (jobs CF), or `None` in the kind index,
    /// where each entry's value says it.
    #[allow(clippy::too_many_arguments)]
    fn peek_with(
        &self,
        cf: &rocksdb::ColumnFamily,
        prefix: &[u8],
        state: Option<State>,
        cursor: &mut Cursor,
        slot: &mut Option<BandIter>,
        now: u64,
        claimed: &HashSet<(State, Pos)>,
    ) -> Result<Option<(Pos, Vec<u8>)>> {
        // Refresh the band's iterator (to see every commit before this lock
        // was taken), or create one bounded to the band.
        if let Some(it) = slot.as_mut() {
            it.unpark();
            if it.it.refresh().is_err() {
                *slot = None;
            }
        }
        let it = match slot {
            Some(it) => &mut it.it,
            None => {
                let mut ro = ReadOptions::default();
                ro.set_iterate_lower_bound(prefix.to_vec());
                if let Some(upper) = keys::prefix_end(prefix) {
                    ro.set_iterate_upper_bound(upper);
                }
                let it = self.db().raw_iterator_cf_opt(cf, ro);
                // SAFETY: see `BandIter`: the engine drops every cached
                // iterator before it closes the DB this one borrows.
                let it = unsafe {
                    std::mem::transmute::<
                        rocksdb::DBRawIteratorWithThreadMode<'_, rocksdb::DB>,
                        rocksdb::DBRawIteratorWithThreadMode<'static, rocksdb::DB>,
                    >(it)
                };
                &mut slot.insert(BandIter::new(it)).it
            }
        };
        // On the stack for jobs bands and short kinds (no allocation).
        let mut short = [0u8; 128];
        let mut long = Vec::new();
        let target: &[u8] = if prefix.len() + 24 <= short.len() {
            short[..prefix.len()].copy_from_slice(prefix);
            short[prefix.len()..prefix.len() + 24].copy_from_slice(&cursor.from.encode());
            &short[..prefix.len() + 24]
        } else {
            long.extend_from_slice(prefix);
            long.extend_from_slice(&cursor.from.encode());
            &long
        };
        it.seek(target);
        let mut first = true;
        while let Some(k) = it.key() {
            let Some(pos) = k.strip_prefix(prefix).and_then(keys::decode_pos) else {
                let e = Error::Corruption("malformed key inside a band".into());
                self.report_corrupt(k, None, &e);
                it.next();
                continue;
            };
            if first {
                // Everything between the old cursor and here is dead.
                cursor.from = pos;
                first = false;
            }
            if pos.ts > now {
                cursor.next_ts = pos.ts;
                return Ok(None);
            }
            let row_state = state.or_else(|| {
                it.value()
                    .and_then(|v| v.first())
                    .and_then(|b| State::from_byte(*b))
            });
            if row_state.is_some_and(|st| claimed.contains(&(st, pos))) {
                it.next();
                continue;
            }
            cursor.next_ts = pos.ts;
            return Ok(Some((pos, it.value().unwrap_or_default().to_vec())));
        }
        it.status()?;
        *cursor = Cursor::EMPTY;
        Ok(None)
    }
}

/// The cursor of a band after claiming its row at `pos`, found by the
/// band's iterator `slot` (still positioned there): the next row, or empty
/// when there is none. One step of an open iterator, so that the claim of a
/// band's last row leaves it empty and its scope leaves the active set
/// without another seek. `old` with its start moved past `pos` when the
/// step cannot tell. An emptied band's iterator is parked in `parked`
/// when there is room (see `BandIter`), else dropped.
pub(super) fn past_claim(
    slot: &mut Option<BandIter>,
    prefix: &[u8],
    pos: Pos,
    old: Cursor,
    parked: &std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> Cursor {
    let fallback = Cursor {
        from: pos.successor(),
        ..old
    };
    let Some(it) = slot.as_mut() else {
        return fallback;
    };
    it.it.next();
    match it.it.key() {
        Some(k) => match k.strip_prefix(prefix).and_then(keys::decode_pos) {
            Some(next) => Cursor {
                from: next,
                next_ts: next.ts,
            },
            None => fallback,
        },
        None if it.it.status().is_ok() => {
            if !it.park(parked) {
                *slot = None; // empty: do not keep the DB state pinned
            }
            Cursor::EMPTY
        }
        None => fallback,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::{Config, EnqueueOptions, LeaseOptions, ManualClock, Queue};

    use super::super::bands;

    #[test]
    fn emptied_bands_park_at_most_max_parked_iterators_and_a_reaper_pass_drops_them() {
        use std::sync::atomic::Ordering;
        let d = tempfile::tempdir().unwrap();
        let cfg = Config {
            reaper_interval: Duration::ZERO,
            ..Config::default()
        };
        let q = Queue::open(d.path(), cfg).unwrap();
        let e = q.engine().unwrap();
        let parked = || e.bands.parked_iters.load(Ordering::SeqCst);
        // One scope drained one job at a time keeps one iterator.
        for _ in 0..3 {
            q.enqueue("k", b"x", EnqueueOptions::default()).unwrap();
            let j = q
                .lease_next("w", &LeaseOptions::default())
                .unwrap()
                .unwrap();
            q.complete(&j.token(), None).unwrap();
            assert_eq!(parked(), 1);
        }
        // Many scopes drained: never more than the bound.
        for i in 0..3 * bands::MAX_PARKED as u128 {
            let scope = crate::Scope::from_uuid(uuid::Uuid::from_u128(i + 1));
            let opts = EnqueueOptions {
                scope: Some(scope),
                ..EnqueueOptions::default()
            };
            q.enqueue("k", b"x", opts).unwrap();
            let j = q
                .lease_next("w", &LeaseOptions::default())
                .unwrap()
                .unwrap();
            q.complete(&j.token(), None).unwrap();
            assert!(parked() <= bands::MAX_PARKED, "{}", parked());
        }
        assert_eq!(parked(), bands::MAX_PARKED);
        q.reap().unwrap();
        assert_eq!(parked(), 0);
        // A parked iterator reads rows written after it was parked.
        q.enqueue("k", b"x", EnqueueOptions::default()).unwrap();
        let j = q
            .lease_next("w", &LeaseOptions::default())
            .unwrap()
            .unwrap();
        q.complete(&j.token(), None).unwrap();
        q.enqueue("k", b"y", EnqueueOptions::default()).unwrap();
        let j = q
            .lease_next("w", &LeaseOptions::default())
            .unwrap()
            .unwrap();
        assert_eq!(j.payload, b"y");
        assert_eq!(parked(), 1, "unparked when read, parked again when emptied");
    }

    #[test]
    fn the_reaper_drops_the_cursors_of_kinds_a_busy_scope_no_longer_has() {
        let d = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(1_700_000_000_000));
        let cfg = Config {
            reaper_interval: Duration::ZERO,
            ..Config::default()
        };
        let q = Queue::open_with_clock(d.path(), cfg, clock.clone()).unwrap();
        for i in 0..20 {
            q.enqueue(&format!("k{i}"), b"x", EnqueueOptions::default())
                .unwrap();
        }
        let later = EnqueueOptions {
            delay: Some(Duration::from_secs(60)),
            ..EnqueueOptions::default()
        };
        q.enqueue("keep", b"x", later).unwrap();
        for _ in 0..20 {
            let j = q
                .lease_next("w", &LeaseOptions::default())
                .unwrap()
                .unwrap();
            q.complete(&j.token(), None).unwrap();
        }
        let e = q.engine().unwrap();
        let cursors = || -> usize {
            e.bands
                .all()
                .iter()
                .flat_map(|(_, sb)| sb.groups())
                .map(|(_, g)| bands::lock(&g).kinds.len())
                .sum()
        };
        assert_eq!(cursors(), 21, "unfiltered leases never look at them");
        q.reap().unwrap();
        assert_eq!(cursors(), 1);
        clock.advance(Duration::from_secs(60));
        let keep = LeaseOptions::default().kind("keep").unwrap();
        assert!(q.lease_next("w", &keep).unwrap().is_some());
    }
}

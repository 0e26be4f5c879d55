//! `check()`'s part for fan-in: the `fanc/` and `fanp/` rows against the
//! parents' records and the in-memory map.

use std::collections::{HashMap, HashSet};

use crate::error::Result;
use crate::job::{JobId, State};
use crate::store::keys::{self, JobKey};
use crate::store::{self as st};

use super::admin::CheckReport;
use super::Engine;

impl Engine {
    /// Every `fanc/ c p` row: `p` waits, `c` exists unfinished, `p` names
    /// `c` (`fanp/`); a waiting parent's unfinished count is its `fanc/`
    /// rows; every `fanp/` row's parent exists; memory holds the `fanc/`
    /// rows (exact on a quiet store).
    pub(super) fn check_fan(
        &self,
        snap: &rocksdb::Snapshot<'_>,
        seen: &HashMap<JobId, JobKey>,
        parents: &HashMap<JobId, (State, u64)>,
        r: &mut CheckReport,
    ) -> Result<()> {
        // A format-1 store opened read-only has no meta family.
        let Ok(meta) = self.cf(st::CF_META) else {
            return Ok(());
        };
        let mut open: HashMap<JobId, u64> = HashMap::new();
        let mut pairs = HashSet::new();
        let mut it = snap.raw_iterator_cf(meta);
        it.seek(keys::FAN_CHILD_PREFIX);
        while let Some(k) = it.key() {
            if !k.starts_with(keys::FAN_CHILD_PREFIX) {
                break;
            }
            let Some((c, p)) = keys::decode_fan_key(k) else {
                r.problems
                    .push(format!("fan-in row {} is malformed", keys::hex(k)));
                it.next();
                continue;
            };
            pairs.insert((c, p));
            if !matches!(parents.get(&p), Some((State::Waiting, _))) {
                r.problems.push(format!(
                    "fan-in row: job {p} waits on {c} but is not waiting"
                ));
            }
            match seen.get(&c) {
                Some(ck) if !ck.state.is_terminal() => {}
                _ => r.problems.push(format!(
                    "fan-in row: job {p} waits on {c}, which is finished or gone"
                )),
            }
            if snap
                .get_pinned_cf(meta, keys::fan_parent_key(&p, &c))?
                .is_none()
            {
                r.problems.push(format!(
                    "fan-in row: job {p} waits on {c} but does not name it"
                ));
            }
            *open.entry(p).or_default() += 1;
            it.next();
        }
        it.status()?;
        for (p, (s, unfinished)) in parents {
            let rows = open.get(p).copied().unwrap_or(0);
            let want = if *s == State::Waiting { *unfinished } else { 0 };
            if rows != want || (*s == State::Waiting && *unfinished == 0) {
                r.problems.push(format!(
                    "{s} parent {p} counts {unfinished} unfinished children, {rows} fan-in rows"
                ));
            }
        }
        it.seek(keys::FAN_PARENT_PREFIX);
        while let Some(k) = it.key() {
            if !k.starts_with(keys::FAN_PARENT_PREFIX) {
                break;
            }
            match keys::decode_fan_key(k) {
                Some((p, _)) if parents.contains_key(&p) => {}
                _ => r
                    .problems
                    .push(format!("fan-in row {} names no parent", keys::hex(k))),
            }
            it.next();
        }
        it.status()?;
        if self.fan.pairs() != pairs {
            r.problems
                .push("the in-memory fan-in map disagrees with the fan-in rows".to_string());
        }
        Ok(())
    }
}

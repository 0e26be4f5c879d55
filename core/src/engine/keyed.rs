//! Flow control by job key (issue 43): the limits on `key:<k>` and
//! `key:*`, each key's unfinished jobs and leased count, and the rows
//! pollers stepped past because their key was held back.
//!
//! Keys are per scope: the instance of a rule is a (scope, key). A lease
//! of a keyed job takes its key's slots when its claim is committed
//! ([`KeyGate::reserve`], under this gate's one lock), so no key is ever
//! above its cap. A job refused there is *parked*: the poller's cursor has
//! moved past its row already, and the gate keeps (scope, priority, state,
//! position) under the key. When a slot of the key frees (a lease of it
//! ends), one parked row goes back to its band group's `unparked` set,
//! where pollers take it before the band's head. So a held key costs one
//! park per job it holds back, never a walk over its jobs per lease.
//!
//! `ordered` rules (concurrency 1) also need the key's oldest unfinished
//! job: every unfinished keyed job is kept in `live` (ids are UUIDv7, so
//! the smallest is the oldest enqueue), loaded at open from the key index
//! (`meta`, `jkey/`), which `Tx::stage` keeps in the batch of every move
//! that starts or finishes a keyed job. A job being retried is unfinished:
//! it holds its key until it completes, dies or is cancelled.

use std::collections::{BTreeSet, HashMap as StdHashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use rustc_hash::FxHashMap as HashMap;

use crate::flow::{Limit, LimitStatus, LimitTarget};
use crate::ids::{JobId, Scope};
use crate::job::State;
use crate::store::keys::Pos;

use super::bucket::Inst;

/// A (scope, key): one instance of a key rule.
pub(crate) type KeyOf = (Scope, String);

/// A parked row to hand back: its scope, its job key and the row.
pub(crate) type Back = (Scope, String, Parked);

/// A ready row a poller stepped past because its key was held back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parked {
    pub state: State,
    pub prio: u8,
    pub pos: Pos,
    pub kind: String,
}

#[derive(Debug)]
struct Rule {
    target: LimitTarget,
    limit: Limit,
    cap: u32,
    rate: f64,
    burst: f64,
    insts: HashMap<KeyOf, Inst>,
    throttled_concurrency: u64,
    throttled_rate: u64,
}

impl Rule {
    fn applies(&self, key: &str) -> bool {
        match &self.target {
            LimitTarget::Key(k) => k == key,
            LimitTarget::EachKey => true,
            _ => false,
        }
    }

    fn inst(&mut self, k: &KeyOf, now: u64) -> &mut Inst {
        let (rate, burst) = (self.rate, self.burst);
        if !self.insts.contains_key(k) {
            self.insts.insert(k.clone(), Inst::new(burst, now));
        }
        let i = self.insts.get_mut(k).expect("inserted above");
        i.refill(now, rate, burst);
        i
    }

    /// `None` when a lease may go now, else when it may (u64::MAX: when a
    /// lease of the key ends).
    fn blocked(&mut self, k: &KeyOf, now: u64) -> Option<u64> {
        let (cap, rate) = (self.cap, self.limit.rate.is_some().then_some(self.rate));
        self.inst(k, now).blocked(now, cap, rate)
    }

    /// Drop an instance that holds nothing and would start afresh anyway.
    fn tidy(&mut self, k: &KeyOf) {
        let idle = self
            .insts
            .get(k)
            .is_some_and(|i| i.idle(self.limit.rate.is_some(), self.burst));
        if idle {
            self.insts.remove(k);
        }
    }
}

/// A key's parked rows: by job (a job parked again replaces its entry),
/// and in band order (most urgent first) for the next to hand back.
#[derive(Debug, Default)]
struct KeyParked {
    by_id: HashMap<JobId, Parked>,
    order: BTreeSet<(u8, Pos)>,
}

impl KeyParked {
    fn insert(&mut self, id: JobId, p: Parked) {
        if let Some(old) = self.by_id.insert(id, p.clone()) {
            self.order.remove(&(old.prio, old.pos));
        }
        self.order.insert((p.prio, p.pos));
    }

    fn take(&mut self, id: &JobId) -> Option<Parked> {
        let p = self.by_id.remove(id)?;
        self.order.remove(&(p.prio, p.pos));
        Some(p)
    }

    fn take_first(&mut self) -> Option<Parked> {
        let (_, pos) = *self.order.iter().next()?;
        self.take(&pos.id)
    }
}

#[derive(Debug, Default)]
struct KState {
    rules: Vec<Rule>,
    /// Unfinished keyed jobs, by key (every key, limited or not).
    live: HashMap<KeyOf, BTreeSet<JobId>>,
    /// Leased (and claimed) keyed jobs, by key.
    leased: HashMap<KeyOf, u32>,
    parked: HashMap<KeyOf, KeyParked>,
    /// Keys held back by a rate, by when a token frees.
    wake: BTreeSet<(u64, KeyOf)>,
    /// Rows to hand back that a poller found while it held a band group's
    /// lock (see [`KeyGate::stale`]); the next poll hands them back.
    deferred: Vec<Back>,
}

impl KState {
    /// Why `id` of key `k` may not lease now: `Some(when)` (u64::MAX:
    /// when a lease of the key ends or an older job of it finishes).
    fn blocked(&mut self, k: &KeyOf, id: &JobId, now: u64, count: bool) -> Option<u64> {
        let oldest = self.live.get(k).and_then(|s| s.iter().next().copied());
        let mut until: Option<u64> = None;
        for r in self.rules.iter_mut().filter(|r| r.applies(&k.1)) {
            let mut b = r.blocked(k, now);
            if b.is_none() && r.limit.ordered && oldest.is_some_and(|o| o < *id) {
                b = Some(u64::MAX);
            }
            if let Some(t) = b {
                if count {
                    if t == u64::MAX {
                        r.throttled_concurrency += 1;
                    } else {
                        r.throttled_rate += 1;
                    }
                }
                until = Some(until.map_or(t, |u| u.max(t)));
            }
        }
        until
    }

    /// The parked rows of `k` that may go now: the oldest job when an
    /// `ordered` rule applies, else one row (each freed slot hands back one).
    fn release(&mut self, k: &KeyOf, now: u64, all: bool) -> Vec<Parked> {
        let mut out = Vec::new();
        if !self.parked.contains_key(k) {
            return out;
        }
        let ordered = self
            .rules
            .iter()
            .any(|r| r.limit.ordered && r.applies(&k.1));
        let limited = self.rules.iter().any(|r| r.applies(&k.1));
        if ordered {
            let oldest = self.live.get(k).and_then(|s| s.iter().next().copied());
            if let Some(o) = oldest {
                if self.blocked(k, &o, now, false).is_none() {
                    if let Some(p) = self.parked.get_mut(k).and_then(|kp| kp.take(&o)) {
                        out.push(p);
                    }
                }
            }
        } else if !limited || all {
            let n = if limited { self.room(k) } else { usize::MAX };
            let kp = self.parked.get_mut(k).expect("checked above");
            while out.len() < n {
                match kp.take_first() {
                    Some(p) => out.push(p),
                    None => break,
                }
            }
        } else if self.room(k) > 0 {
            if let Some(kp) = self.parked.get_mut(k) {
                out.extend(kp.take_first());
            }
        }
        if self.parked.get(k).is_some_and(|kp| kp.by_id.is_empty()) {
            self.parked.remove(k);
        }
        out
    }

    /// Free slots of `k` under every rule that applies (0 when one is full).
    fn room(&mut self, k: &KeyOf) -> usize {
        let mut room = usize::MAX;
        for r in self.rules.iter_mut().filter(|r| r.applies(&k.1)) {
            let cap = r.cap;
            let l = r.insts.get(k).map_or(0, |i| i.leased);
            room = room.min(cap.saturating_sub(l) as usize);
        }
        room
    }
}

/// The answer of [`KeyGate::reserve`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyReserve {
    /// Taken (the key's leased count and its rules' slots and tokens).
    Granted,
    /// Held back: the row is parked under its key.
    Parked,
}

#[derive(Debug, Default)]
pub(crate) struct KeyGate {
    any: AtomicBool,
    deferred: AtomicBool,
    st: Mutex<KState>,
}

impl KeyGate {
    fn lock(&self) -> MutexGuard<'_, KState> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Some key limit is set.
    pub fn active(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// Replace the key rules; they count the leases that exist now.
    /// Answers the parked rows that may go under the new rules.
    pub fn install(&self, rules: Vec<(LimitTarget, Limit)>, now: u64) -> Vec<Back> {
        let mut st = self.lock();
        let old: StdHashMap<String, (u64, u64)> = st
            .rules
            .iter()
            .map(|r| {
                (
                    r.target.label(),
                    (r.throttled_concurrency, r.throttled_rate),
                )
            })
            .collect();
        let mut fresh: Vec<Rule> = rules
            .into_iter()
            .map(|(target, limit)| {
                let mut r = Rule {
                    cap: limit.concurrency.unwrap_or(u32::MAX),
                    rate: limit.rate.unwrap_or(0.0),
                    burst: limit.effective_burst().unwrap_or(0) as f64,
                    target,
                    limit,
                    insts: HashMap::default(),
                    throttled_concurrency: 0,
                    throttled_rate: 0,
                };
                if let Some((c, t)) = old.get(&r.target.label()) {
                    (r.throttled_concurrency, r.throttled_rate) = (*c, *t);
                }
                r
            })
            .collect();
        for (k, n) in &st.leased {
            for r in fresh.iter_mut().filter(|r| r.applies(&k.1)) {
                r.inst(k, now).leased += n;
            }
        }
        self.any.store(!fresh.is_empty(), Ordering::Release);
        st.rules = fresh;
        st.wake.clear();
        let keys: Vec<KeyOf> = st.parked.keys().cloned().collect();
        let mut out = Vec::new();
        for k in keys {
            for p in st.release(&k, now, true) {
                out.push((k.0, k.1.clone(), p));
            }
        }
        out
    }

    /// Take the slots of every rule job `id` of key `k` counts against, or
    /// park `row` under its key (atomically: a slot that frees after this
    /// answer finds the row parked).
    pub fn reserve(&self, k: &KeyOf, id: JobId, row: Parked, now: u64) -> KeyReserve {
        let mut st = self.lock();
        if !st.rules.is_empty() {
            if let Some(t) = st.blocked(k, &id, now, true) {
                st.parked.entry(k.clone()).or_default().insert(id, row);
                if t != u64::MAX {
                    st.wake.insert((t, k.clone()));
                }
                return KeyReserve::Parked;
            }
            for r in st.rules.iter_mut().filter(|r| r.applies(&k.1)) {
                let has_rate = r.limit.rate.is_some();
                let cap = r.cap;
                let i = r.inst(k, now);
                i.leased += 1;
                if has_rate {
                    i.tokens -= 1.0;
                }
                if i.leased >= cap {
                    r.throttled_concurrency += 1;
                }
            }
        }
        *st.leased.entry(k.clone()).or_default() += 1;
        KeyReserve::Granted
    }

    /// After a granted [`KeyGate::reserve`]: when the key still has room
    /// (a cap of several, or a rate with tokens left), its next parked row
    /// goes back too, so a key's parked rows drain as fast as its rules allow.
    pub fn more(&self, k: &KeyOf, now: u64) -> Vec<Back> {
        let mut st = self.lock();
        if !st.parked.contains_key(k) {
            return Vec::new();
        }
        st.release(k, now, false)
            .into_iter()
            .map(|p| (k.0, k.1.clone(), p))
            .collect()
    }

    /// Give back what a granted [`KeyGate::reserve`] took for a lease that
    /// did not commit (its tokens too); answers rows that may go now.
    pub fn unreserve(&self, k: &KeyOf, now: u64) -> Vec<Back> {
        let mut st = self.lock();
        Self::unlease(&mut st, k, true);
        st.release(k, now, false)
            .into_iter()
            .map(|p| (k.0, k.1.clone(), p))
            .collect()
    }

    fn unlease(st: &mut KState, k: &KeyOf, tokens: bool) {
        if let Some(n) = st.leased.get_mut(k) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                st.leased.remove(k);
            }
        }
        for r in st.rules.iter_mut().filter(|r| r.applies(&k.1)) {
            let burst = r.burst;
            let has_rate = r.limit.rate.is_some();
            if let Some(i) = r.insts.get_mut(k) {
                i.leased = i.leased.saturating_sub(1);
                if tokens && has_rate {
                    i.tokens = (i.tokens + 1.0).min(burst);
                }
            }
            r.tidy(k);
        }
    }

    /// A batch committed: keyed jobs that became unfinished (`true`) or
    /// finished (`false`), and keyed jobs that left the leased state.
    /// Answers the parked rows that may go now.
    pub fn committed(
        &self,
        live: &[(Scope, String, JobId, bool)],
        unleased: &[KeyOf],
        now: u64,
    ) -> Vec<Back> {
        let mut st = self.lock();
        let mut touched: Vec<KeyOf> = Vec::new();
        for (s, key, id, on) in live {
            let k = (*s, key.clone());
            if *on {
                st.live.entry(k).or_default().insert(*id);
                continue;
            }
            if let Some(set) = st.live.get_mut(&k) {
                let was_oldest = set.iter().next() == Some(id);
                set.remove(id);
                if set.is_empty() {
                    st.live.remove(&k);
                }
                if let Some(kp) = st.parked.get_mut(&k) {
                    kp.take(id);
                }
                if was_oldest {
                    touched.push(k);
                }
            }
        }
        for k in unleased {
            Self::unlease(&mut st, k, false);
            touched.push(k.clone());
        }
        let mut out = Vec::new();
        if st.parked.is_empty() {
            return out;
        }
        for k in touched {
            for p in st.release(&k, now, false) {
                out.push((k.0, k.1.clone(), p));
            }
        }
        out
    }

    /// A row handed back turned out stale (its job moved meanwhile): the
    /// key may hand back another, which waits in `deferred` for the next
    /// poll (the finder holds a band group's lock).
    pub fn stale(&self, k: &KeyOf, now: u64) {
        let mut st = self.lock();
        let rows = st.release(k, now, false);
        if !rows.is_empty() {
            st.deferred
                .extend(rows.into_iter().map(|p| (k.0, k.1.clone(), p)));
            self.deferred.store(true, Ordering::Release);
        }
    }

    /// Rows [`KeyGate::stale`] set aside, to hand back now.
    pub fn take_deferred(&self) -> Vec<Back> {
        if !self.deferred.load(Ordering::Acquire) {
            return Vec::new();
        }
        let mut st = self.lock();
        self.deferred.store(false, Ordering::Release);
        std::mem::take(&mut st.deferred)
    }

    /// Keys whose rate gives a token by `now`: their next parked rows.
    pub fn end_due(&self, now: u64) -> Vec<Back> {
        let mut st = self.lock();
        let mut out = Vec::new();
        while let Some((t, k)) = st.wake.iter().next().cloned() {
            if t > now {
                break;
            }
            st.wake.remove(&(t, k.clone()));
            for p in st.release(&k, now, false) {
                out.push((k.0, k.1.clone(), p));
            }
        }
        out
    }

    /// The earliest instant a rate-held key gets a token, if any.
    pub fn wake_at(&self) -> Option<u64> {
        self.lock().wake.iter().next().map(|(t, _)| *t)
    }

    /// At open: the unfinished keyed jobs (from the key index) and the
    /// leased ones (from the loaded leases).
    pub fn load(&self, live: Vec<(Scope, String, JobId)>, leased: Vec<KeyOf>) {
        let mut st = self.lock();
        for (s, k, id) in live {
            st.live.entry((s, k)).or_default().insert(id);
        }
        for k in leased {
            *st.leased.entry(k).or_default() += 1;
        }
    }

    /// The unfinished keyed jobs as kept in memory (for `check`).
    pub fn live_rows(&self) -> BTreeSet<(Scope, String, JobId)> {
        let st = self.lock();
        st.live
            .iter()
            .flat_map(|(k, s)| s.iter().map(move |id| (k.0, k.1.clone(), *id)))
            .collect()
    }

    /// Leased keyed jobs per key as counted here (for `check`).
    pub fn leased_counts(&self) -> BTreeSet<(Scope, String, u32)> {
        let st = self.lock();
        st.leased
            .iter()
            .map(|(k, n)| (k.0, k.1.clone(), *n))
            .collect()
    }

    /// How many rows are parked now (for tests).
    #[cfg(test)]
    pub fn parked_len(&self) -> usize {
        self.lock().parked.values().map(|p| p.by_id.len()).sum()
    }

    /// Every key rule with its use now.
    pub fn status(&self, now: u64) -> Vec<LimitStatus> {
        let mut st = self.lock();
        let mut out = Vec::with_capacity(st.rules.len());
        for r in st.rules.iter_mut() {
            let keys: Vec<KeyOf> = r.insts.keys().cloned().collect();
            let (mut held, mut leased) = (0, 0u64);
            for k in keys {
                leased += r.insts[&k].leased as u64;
                if r.blocked(&k, now).is_some() {
                    held += 1;
                }
            }
            out.push(LimitStatus {
                target: r.target.clone(),
                limit: r.limit,
                leased,
                held,
                throttled_concurrency: r.throttled_concurrency,
                throttled_rate: r.throttled_rate,
            });
        }
        out
    }
}

#[cfg(test)]
#[path = "keyed_tests.rs"]
mod tests;

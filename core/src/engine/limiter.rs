//! The in-memory side of flow control: how many leases each limit counts,
//! each rate's token bucket, and every (scope, kind)'s leased count.
//!
//! Exactness: a lease takes its slots and tokens when it is *claimed*
//! (under its band group's lock, before its commit), and gives them back
//! when the claim fails or when the job leaves the leased state (a move
//! staged by `Tx`, released after that move commits). So the counts are
//! never below the leases that exist. Limits change only under the
//! engine's `pause_gate` held exclusively (no claim in flight), and a new
//! set of rules counts the leases that exist from `leased`, the per
//! (scope, kind) counts kept under the same lock as every release.

use std::collections::HashMap as StdHashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use rustc_hash::FxHashMap as HashMap;

use crate::flow::{Limit, LimitStatus, LimitTarget};
use crate::ids::Scope;
use crate::kind::KindPattern;

use super::bands::Bands;
use super::bucket::Inst;

#[derive(Debug)]
struct Rule {
    target: LimitTarget,
    limit: Limit,
    cap: u32,
    rate: f64,
    burst: f64,
    /// One instance per scope of a `scope:*` rule, else one for the rule.
    insts: HashMap<Scope, Inst>,
    throttled_concurrency: u64,
    throttled_rate: u64,
}

/// The key of the one instance of a rule that is not per scope.
const ONE: Scope = Scope::SYSTEM;

impl Rule {
    fn new(target: LimitTarget, limit: Limit) -> Rule {
        Rule {
            cap: limit.concurrency.unwrap_or(u32::MAX),
            rate: limit.rate.unwrap_or(0.0),
            burst: limit.effective_burst().unwrap_or(0) as f64,
            target,
            limit,
            insts: HashMap::default(),
            throttled_concurrency: 0,
            throttled_rate: 0,
        }
    }

    fn per_scope(&self) -> bool {
        matches!(
            self.target,
            LimitTarget::EachScope | LimitTarget::EachScopeKind(_)
        )
    }

    fn key(&self, s: Scope) -> Scope {
        if self.per_scope() {
            s
        } else {
            ONE
        }
    }

    /// Whether a job of `kind` (when known) in `scope` counts here.
    /// Scope-wide rules ignore the kind.
    fn applies(&self, scope: &Scope, kind: Option<&str>) -> bool {
        match &self.target {
            LimitTarget::Kind(p) | LimitTarget::EachScopeKind(p) => {
                kind.is_some_and(|k| p.matches(k))
            }
            LimitTarget::Scope(s) => s == scope,
            LimitTarget::EachScope => true,
            LimitTarget::ScopeKind(s, p) => s == scope && kind.is_some_and(|k| p.matches(k)),
            // Key rules live in the key gate (`keyed.rs`).
            LimitTarget::Key(_) | LimitTarget::EachKey => false,
        }
    }

    fn has_rate(&self) -> bool {
        self.limit.rate.is_some()
    }

    fn inst(&mut self, s: Scope, now: u64) -> &mut Inst {
        let key = self.key(s);
        let (rate, burst) = (self.rate, self.burst);
        let i = self.insts.entry(key).or_insert(Inst::new(burst, now));
        i.refill(now, rate, burst);
        i
    }

    /// `None` when a lease may go now, else when it may (u64::MAX: when a
    /// lease settles).
    fn blocked(&mut self, s: Scope, now: u64) -> Option<u64> {
        let (cap, rate) = (self.cap, self.has_rate().then_some(self.rate));
        self.inst(s, now).blocked(now, cap, rate)
    }

    /// Drop an instance that holds nothing and would start afresh anyway.
    fn tidy(&mut self, s: Scope) {
        let key = self.key(s);
        if !self.per_scope() {
            return;
        }
        if let Some(i) = self.insts.get(&key) {
            if i.idle(self.has_rate(), self.burst) {
                self.insts.remove(&key);
            }
        }
    }
}

#[derive(Debug, Default)]
struct State {
    rules: Vec<Rule>,
    /// Rules naming one scope, by scope.
    by_scope: HashMap<Scope, Vec<usize>>,
    /// Rules for every scope (kinds, `scope:*`).
    general: Vec<usize>,
    /// Leased (and claimed) jobs per scope and kind.
    leased: HashMap<Scope, StdHashMap<String, u32>>,
    /// Scopes taken out of the active set by a scope-wide rule, with when
    /// a token frees (u64::MAX: when a lease settles).
    held: HashMap<Scope, u64>,
}

impl State {
    fn for_scope<'a>(&'a self, s: &Scope) -> impl Iterator<Item = usize> + 'a {
        self.general
            .iter()
            .chain(self.by_scope.get(s).into_iter().flatten())
            .copied()
    }
}

/// A claim's answer from [`Limiter::reserve`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reserve {
    /// Taken; `Some(t)` when the scope is now held back by a scope-wide
    /// rule until `t` (u64::MAX: until a lease settles).
    Granted(Option<u64>),
    /// A rule is at its cap or out of tokens: nothing was taken.
    Refused,
}

#[derive(Debug, Default)]
pub(crate) struct Limiter {
    any: AtomicBool,
    kinds: AtomicBool,
    weighted: AtomicBool,
    /// The earliest time a held-back scope gets a token (u64::MAX: none).
    wake: AtomicU64,
    st: Mutex<State>,
}

impl Limiter {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Some limit is set.
    pub fn active(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// Some limit concerns kinds: a claim must know its job's kind.
    pub fn needs_kind(&self) -> bool {
        self.kinds.load(Ordering::Acquire)
    }

    /// Some scope has a weight other than 1.
    pub fn weighted(&self) -> bool {
        self.weighted.load(Ordering::Acquire)
    }

    /// Replace the rules; they count the leases that exist now. Answers
    /// the scopes that were held back (their holds end; a poller holds
    /// them again if a new rule says so).
    pub fn install(&self, rules: Vec<(LimitTarget, Limit)>, now: u64, bands: &Bands) {
        let mut st = self.lock();
        let old: HashMap<String, (u64, u64)> = st
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
            .map(|(t, l)| {
                let mut r = Rule::new(t, l);
                if let Some((c, rt)) = old.get(&r.target.label()) {
                    (r.throttled_concurrency, r.throttled_rate) = (*c, *rt);
                }
                r
            })
            .collect();
        for (scope, kinds) in &st.leased {
            for (kind, n) in kinds {
                for r in fresh.iter_mut() {
                    if r.applies(scope, Some(kind)) {
                        r.inst(*scope, now).leased += n;
                    }
                }
            }
        }
        st.by_scope.clear();
        st.general.clear();
        let mut by_scope: HashMap<Scope, Vec<usize>> = HashMap::default();
        let mut general = Vec::new();
        for (i, r) in fresh.iter().enumerate() {
            match &r.target {
                LimitTarget::Scope(s) | LimitTarget::ScopeKind(s, _) => {
                    by_scope.entry(*s).or_default().push(i)
                }
                _ => general.push(i),
            }
        }
        self.any.store(!fresh.is_empty(), Ordering::Release);
        self.kinds.store(
            fresh.iter().any(|r| !r.target.is_scope_wide()),
            Ordering::Release,
        );
        self.weighted.store(
            fresh.iter().any(|r| r.limit.weight.is_some_and(|w| w != 1)),
            Ordering::Release,
        );
        st.rules = fresh;
        st.by_scope = by_scope;
        st.general = general;
        self.wake.store(u64::MAX, Ordering::Release);
        for (s, _) in st.held.drain() {
            bands.unhold(s);
        }
    }

    /// When `scope` may lease again if a scope-wide rule holds it back now;
    /// with `hold`, it also leaves the active set until then.
    pub fn scope_blocked(&self, scope: Scope, now: u64, hold: bool, bands: &Bands) -> Option<u64> {
        let mut st = self.lock();
        let idx: Vec<usize> = st.for_scope(&scope).collect();
        let mut until: Option<u64> = None;
        for i in idx {
            let r = &mut st.rules[i];
            if !r.target.is_scope_wide() {
                continue;
            }
            if let Some(t) = r.blocked(scope, now) {
                until = Some(until.map_or(t, |u| u.max(t)));
            }
        }
        if let (Some(t), true) = (until, hold) {
            st.held.insert(scope, t);
            bands.hold(scope);
            if t != u64::MAX {
                self.wake.fetch_min(t, Ordering::AcqRel);
            }
        }
        until
    }

    /// The kind patterns that cannot lease in `scope` now, and the
    /// earliest time one of them may again (by rate).
    pub fn blocked_kinds(&self, scope: Scope, now: u64) -> (Vec<KindPattern>, Option<u64>) {
        let mut st = self.lock();
        let idx: Vec<usize> = st.for_scope(&scope).collect();
        let mut out = Vec::new();
        let mut wake: Option<u64> = None;
        for i in idx {
            let r = &mut st.rules[i];
            let p = match &r.target {
                LimitTarget::Kind(p)
                | LimitTarget::ScopeKind(_, p)
                | LimitTarget::EachScopeKind(p) => p.clone(),
                _ => continue,
            };
            if let Some(t) = r.blocked(scope, now) {
                out.push(p);
                if t != u64::MAX {
                    wake = Some(wake.map_or(t, |w| w.min(t)));
                }
            }
        }
        if let Some(t) = wake {
            self.wake.fetch_min(t, Ordering::AcqRel);
        }
        (out, wake)
    }

    /// Take a slot and a token of every rule a job of `kind` (`None` when
    /// no rule concerns kinds) in `scope` counts against, or nothing.
    pub fn reserve(&self, scope: Scope, kind: Option<&str>, now: u64, bands: &Bands) -> Reserve {
        let mut st = self.lock();
        let idx: Vec<usize> = st
            .for_scope(&scope)
            .filter(|&i| st.rules[i].applies(&scope, kind))
            .collect();
        let mut refused = false;
        for &i in &idx {
            let r = &mut st.rules[i];
            match r.blocked(scope, now) {
                None => {}
                Some(u64::MAX) => {
                    r.throttled_concurrency += 1;
                    refused = true;
                }
                Some(_) => {
                    r.throttled_rate += 1;
                    refused = true;
                }
            }
        }
        if refused {
            return Reserve::Refused;
        }
        let mut hold: Option<u64> = None;
        for &i in &idx {
            let r = &mut st.rules[i];
            let (cap, has_rate) = (r.cap, r.has_rate());
            let inst = r.inst(scope, now);
            inst.leased += 1;
            if has_rate {
                inst.tokens -= 1.0;
            }
            let full = inst.leased >= cap;
            if full {
                r.throttled_concurrency += 1;
            }
            if let Some(t) = r.blocked(scope, now) {
                if t != u64::MAX && !full {
                    r.throttled_rate += 1;
                }
                if r.target.is_scope_wide() {
                    hold = Some(hold.map_or(t, |h| h.max(t)));
                }
            }
        }
        if let Some(t) = hold {
            st.held.insert(scope, t);
            bands.hold(scope);
            if t != u64::MAX {
                self.wake.fetch_min(t, Ordering::AcqRel);
            }
        }
        Reserve::Granted(hold)
    }

    /// Give back what [`Limiter::reserve`] took for a claim that did not
    /// become a lease (its tokens too: no lease went).
    pub fn unreserve(&self, scope: Scope, kind: Option<&str>, bands: &Bands) {
        let mut st = self.lock();
        Self::give_back(&mut st, scope, kind, true, bands);
    }

    /// Free one slot (and a token, when no lease went) of every rule the
    /// job counted against; a scope whose cap held it goes active again.
    fn give_back(st: &mut State, scope: Scope, kind: Option<&str>, tokens: bool, bands: &Bands) {
        let idx: Vec<usize> = st
            .for_scope(&scope)
            .filter(|&i| st.rules[i].applies(&scope, kind))
            .collect();
        for i in idx {
            let r = &mut st.rules[i];
            let key = r.key(scope);
            let burst = r.burst;
            if let Some(inst) = r.insts.get_mut(&key) {
                inst.leased = inst.leased.saturating_sub(1);
                if tokens && r.limit.rate.is_some() {
                    inst.tokens = (inst.tokens + 1.0).min(burst);
                }
            }
            r.tidy(scope);
        }
        if st.held.get(&scope) == Some(&u64::MAX) {
            st.held.remove(&scope);
            bands.unhold(scope);
        }
    }

    /// A job of `kind` in `scope` is leased now (its commit is staged): count it.
    pub fn note_leased(&self, scope: Scope, kind: &str) {
        let mut st = self.lock();
        let m = st.leased.entry(scope).or_default();
        match m.get_mut(kind) {
            Some(n) => *n += 1,
            None => {
                m.insert(kind.to_string(), 1);
            }
        }
    }

    fn unnote(st: &mut State, scope: Scope, kind: &str) {
        if let Some(m) = st.leased.get_mut(&scope) {
            if let Some(n) = m.get_mut(kind) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    m.remove(kind);
                }
            }
            if m.is_empty() {
                st.leased.remove(&scope);
            }
        }
    }

    /// A lease whose commit failed: uncount it (and give back its claim's
    /// slots when it had taken them).
    pub fn lease_failed(
        &self,
        scope: Scope,
        kind: &str,
        reserved: Option<Option<&str>>,
        bands: &Bands,
    ) {
        let mut st = self.lock();
        Self::unnote(&mut st, scope, kind);
        if let Some(k) = reserved {
            Self::give_back(&mut st, scope, k, true, bands);
        }
    }

    /// Jobs left the leased state (committed): free their slots. Answers
    /// whether a limit may have freed a slot (pollers should look again).
    pub fn unleased(&self, jobs: &[(Scope, String)], bands: &Bands) -> bool {
        let mut st = self.lock();
        for (scope, kind) in jobs {
            Self::unnote(&mut st, *scope, kind);
            if !st.rules.is_empty() {
                Self::give_back(&mut st, *scope, Some(kind), false, bands);
            }
        }
        !st.rules.is_empty()
    }

    /// The weight of `scope` (1 unless a rule says otherwise; its own
    /// `scope:<uuid>` rule over `scope:*`).
    pub fn weight(&self, scope: &Scope) -> u32 {
        let st = self.lock();
        let mut w = None;
        for i in st.for_scope(scope) {
            let r = &st.rules[i];
            match (&r.target, r.limit.weight) {
                (LimitTarget::Scope(_), Some(x)) => return x,
                (LimitTarget::EachScope, Some(x)) => w = Some(x),
                _ => {}
            }
        }
        w.unwrap_or(1)
    }

    /// The earliest instant a rate-held target gets a token, if any.
    pub fn wake_at(&self) -> Option<u64> {
        let w = self.wake.load(Ordering::Acquire);
        (w != u64::MAX).then_some(w)
    }

    /// End the rate holds that are over by `now` (cheap when none).
    pub fn end_due_holds(&self, now: u64, bands: &Bands) {
        if self.wake.load(Ordering::Acquire) > now {
            return;
        }
        let mut st = self.lock();
        let mut due = Vec::new();
        let mut next = u64::MAX;
        st.held.retain(|s, t| {
            if *t <= now {
                due.push(*s);
                false
            } else {
                if *t != u64::MAX {
                    next = next.min(*t);
                }
                true
            }
        });
        self.wake.store(next, Ordering::Release);
        for s in due {
            bands.unhold(s);
        }
    }

    /// Drop the per-scope instances (of `scope:*` rules) that hold no lease
    /// and whose bucket has refilled: they would start afresh the same.
    /// Keeps the limiter's memory to the tenants that are busy (the reaper
    /// pass calls it).
    pub fn sweep(&self, now: u64) {
        if !self.active() {
            return;
        }
        let mut st = self.lock();
        for r in st.rules.iter_mut().filter(|r| r.per_scope()) {
            let keys: Vec<Scope> = r.insts.keys().copied().collect();
            for k in keys {
                // Bring the bucket up to date, then drop it if idle and full.
                let _ = r.inst(k, now);
                r.tidy(k);
            }
        }
    }

    /// Instances kept, over every rule (for tests).
    #[cfg(test)]
    pub fn instances(&self) -> usize {
        self.lock().rules.iter().map(|r| r.insts.len()).sum()
    }

    /// Every rule with its use now.
    pub fn status(&self, now: u64) -> Vec<LimitStatus> {
        let mut st = self.lock();
        let mut out = Vec::with_capacity(st.rules.len());
        for r in st.rules.iter_mut() {
            let keys: Vec<Scope> = r.insts.keys().copied().collect();
            let mut held = 0;
            let mut leased = 0u64;
            for k in keys {
                leased += r.insts[&k].leased as u64;
                if r.blocked(k, now).is_some() {
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
        out.sort_by_key(|s| s.target.label());
        out
    }

    /// Leased jobs per (scope, kind) as counted here (for `check`).
    pub fn leased_counts(&self) -> Vec<(Scope, String, u32)> {
        let st = self.lock();
        let mut v: Vec<(Scope, String, u32)> = st
            .leased
            .iter()
            .flat_map(|(s, m)| m.iter().map(move |(k, n)| (*s, k.clone(), *n)))
            .collect();
        v.sort();
        v
    }
}

#[cfg(test)]
#[path = "limiter_tests.rs"]
mod tests;

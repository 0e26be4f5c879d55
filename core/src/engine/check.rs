//! The full consistency check used by tests, the crash harness and
//! operators (`telha jobs check`).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::error::Result;
use crate::ids::Scope;
use crate::job::{JobId, State};
use crate::state::PerState;
use crate::store::codec;
use crate::store::keys::{self, JobKey, KindKey};
use crate::store::{self as st};

use super::admin::CheckReport;
use super::Engine;

impl Engine {
    /// A full scan that cross-checks rows, the id, kind, idempotency,
    /// expiry and tag indexes, the payloads, the counters (disk and memory) and the in-memory leases.
    /// O(store size): for tests, the crash harness and operators. The disk
    /// checks read one snapshot and are exact on a live store; the
    /// comparisons with memory (leases, counts) are exact on a quiet one.
    pub fn check(&self) -> Result<CheckReport> {
        let mut r = CheckReport {
            format: self.format(),
            ..CheckReport::default()
        };
        // Every disk read goes through one snapshot: rows, indexes and
        // counters are written together in one batch per move, so they agree
        // exactly at any snapshot, also while workers and the reaper run.
        let snap = self.db().snapshot();
        let mut seen: HashMap<JobId, JobKey> = HashMap::new();
        let mut records: HashMap<JobId, (String, Option<String>)> = HashMap::new();
        let mut external: HashSet<JobId> = HashSet::new();
        let mut expiring: HashSet<[u8; 24]> = HashSet::new();
        let mut tagged: HashSet<Vec<u8>> = HashSet::new();
        let mut fan_parents: HashMap<JobId, (State, u64)> = HashMap::new();
        let mut keyed: std::collections::BTreeSet<(Scope, String, JobId)> = Default::default();
        let mut keyed_leased: BTreeMap<(Scope, String), u32> = BTreeMap::new();
        let leased_mem: HashMap<JobId, (JobKey, u64)> = self
            .leases
            .snapshot()
            .into_iter()
            .map(|(id, k, g)| (id, (k, g)))
            .collect();

        let mut scoped: BTreeMap<Scope, PerState<i64>> = BTreeMap::new();
        let mut it = snap.raw_iterator_cf(self.cf(st::CF_JOBS)?);
        it.seek_to_first();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            r.jobs += 1;
            let key = match JobKey::decode(k) {
                Ok(key) => key,
                Err(e) => {
                    r.problems.push(format!("jobs row: {e}"));
                    it.next();
                    continue;
                }
            };
            scoped.entry(key.scope).or_default()[key.state] += 1;
            let rec = match codec::decode(v) {
                Ok(rec) => rec,
                Err(e) => {
                    r.problems.push(format!("job {}: {e}", key.id));
                    it.next();
                    continue;
                }
            };
            if let Some(prev) = seen.insert(key.id, key) {
                r.problems.push(format!(
                    "job {} has two rows: {} and {}",
                    key.id, prev.state, key.state
                ));
            }
            r.scanned.entry(rec.kind.clone()).or_default()[key.state] += 1;
            match snap.get_pinned_cf(self.cf(st::CF_IDS)?, key.id.as_bytes())? {
                Some(ik) if ik.as_ref() == key.encode() => {}
                Some(_) => r
                    .problems
                    .push(format!("id index of job {} points elsewhere", key.id)),
                None => r
                    .problems
                    .push(format!("job {} missing from the id index", key.id)),
            }
            if matches!(key.state, State::Pending | State::Failed) {
                let kk = keys::kind_key(&key.scope, &rec.kind, key.priority, key.pos());
                match snap.get_pinned_cf(self.cf(st::CF_KINDS)?, kk)? {
                    Some(s) if s.as_ref() == [key.state.byte()] => {}
                    _ => r.problems.push(format!(
                        "{} job {} missing from the kind index",
                        key.state, key.id
                    )),
                }
            }
            if key.state == State::Leased {
                match leased_mem.get(&key.id) {
                    Some((mk, g)) if *mk == key && *g == rec.generation => {}
                    _ => r.problems.push(format!(
                        "leased job {} disagrees with the in-memory lease",
                        key.id
                    )),
                }
            }
            if let Some(len) = rec.ext.payload_len {
                let found = match self.cf(st::CF_PAYLOADS) {
                    Ok(cf) => snap.get_pinned_cf(cf, key.id.as_bytes())?,
                    Err(_) => None, // a format-1 store opened read-only
                };
                match found {
                    Some(p) if p.len() as u64 == len => {}
                    Some(p) => r.problems.push(format!(
                        "payload of job {} is {} bytes, its record says {len}",
                        key.id,
                        p.len()
                    )),
                    None => r
                        .problems
                        .push(format!("payload of job {} is missing", key.id)),
                }
                external.insert(key.id);
            }
            if let Some(at) = rec.ext.expires_at {
                if key.state == State::Pending && rec.generation == 0 {
                    expiring.insert(keys::expiry_key(at, &key.id));
                }
            }
            Self::expected_tag_rows(&key, &rec, &mut tagged);
            if let Some(jk) = &rec.ext.key {
                if !key.state.is_terminal() {
                    keyed.insert((key.scope, jk.clone(), key.id));
                }
                if key.state == State::Leased {
                    *keyed_leased.entry((key.scope, jk.clone())).or_default() += 1;
                }
            }
            match (key.state, rec.ext.fan_in) {
                (s, Some(f)) => {
                    fan_parents.insert(key.id, (s, f.unfinished));
                }
                (State::Waiting, None) => r
                    .problems
                    .push(format!("waiting job {} waits on nothing", key.id)),
                _ => {}
            }
            records.insert(key.id, (rec.kind, rec.idempotency_key));
            it.next();
        }
        it.status()?;
        self.check_tags(&snap, tagged, &mut r)?;
        let keyed_leased = keyed_leased
            .into_iter()
            .map(|((s, k), n)| (s, k, n))
            .collect();
        self.check_keys(&snap, keyed, keyed_leased, &mut r)?;
        self.check_fan(&snap, &seen, &fan_parents, &mut r)?;

        // A format-1 store opened read-only has no expiry family.
        if let Ok(cf) = self.cf(st::CF_EXPIRY) {
            let mut it = snap.raw_iterator_cf(cf);
            it.seek_to_first();
            while let Some(k) = it.key() {
                let known = <[u8; 24]>::try_from(k)
                    .ok()
                    .is_some_and(|k| expiring.remove(&k));
                if !known {
                    r.problems.push(format!(
                        "expiry entry {} names no pending, never-leased job expiring then",
                        keys::hex(k)
                    ));
                }
                it.next();
            }
            it.status()?;
            for k in &expiring {
                r.problems.push(format!(
                    "job {} expires but is missing from the expiry index",
                    keys::decode_expiry_key(k)
                        .map(|(_, id)| id.to_string())
                        .unwrap_or_default()
                ));
            }
        }

        // A format-1 store opened read-only has no payloads family.
        let payloads = self.cf(st::CF_PAYLOADS).ok();
        let mut it = payloads.map(|cf| snap.raw_iterator_cf(cf));
        if let Some(it) = it.as_mut() {
            it.seek_to_first();
        }
        while let Some(k) = it.as_ref().and_then(|it| it.key()) {
            let ok = <[u8; 16]>::try_from(k)
                .ok()
                .is_some_and(|b| external.contains(&JobId::from_bytes(b)));
            if !ok {
                r.problems.push(format!(
                    "payload entry {} names no job keeping its payload there",
                    keys::hex(k)
                ));
            }
            if let Some(it) = it.as_mut() {
                it.next();
            }
        }
        if let Some(it) = it.as_ref() {
            it.status()?;
        }

        for (id, (k, _)) in &leased_mem {
            if seen.get(id) != Some(k) {
                r.problems
                    .push(format!("in-memory lease of {id} has no leased row"));
            }
        }
        // The flow-control counts of leased jobs per (scope, kind) are the
        // in-memory leases' (exact on a quiet store).
        let mut by_scope_kind: BTreeMap<(Scope, String), u32> = BTreeMap::new();
        for (k, kind) in self.leases.snapshot_kinds() {
            *by_scope_kind.entry((k.scope, kind)).or_default() += 1;
        }
        let counted: BTreeMap<(Scope, String), u32> = self
            .limiter
            .leased_counts()
            .into_iter()
            .map(|(s, k, n)| ((s, k), n))
            .collect();
        if counted != by_scope_kind {
            r.problems.push(format!(
                "in-memory flow-control lease counts {counted:?} differ from the in-memory leases {by_scope_kind:?}"
            ));
        }

        let mut it = snap.raw_iterator_cf(self.cf(st::CF_KINDS)?);
        it.seek_to_first();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            match KindKey::decode(k) {
                Ok(kk) => {
                    let ok = seen.get(&kk.pos.id).is_some_and(|jk| {
                        jk.pos() == kk.pos
                            && jk.scope == kk.scope
                            && jk.priority == kk.priority
                            && v == [jk.state.byte()]
                    }) && records
                        .get(&kk.pos.id)
                        .is_some_and(|(kind, _)| *kind == kk.kind);
                    if !ok {
                        r.problems
                            .push(format!("stale kind-index entry for job {}", kk.pos.id));
                    }
                }
                Err(e) => r.problems.push(format!("kind index: {e}")),
            }
            it.next();
        }
        it.status()?;

        let mut it = snap.raw_iterator_cf(self.cf(st::CF_IDS)?);
        it.seek_to_first();
        let mut ids = 0u64;
        while let Some(k) = it.key() {
            ids += 1;
            let ok = <[u8; 16]>::try_from(k)
                .ok()
                .is_some_and(|b| seen.contains_key(&JobId::from_bytes(b)));
            if !ok {
                r.problems
                    .push(format!("id index entry {} names no job", keys::hex(k)));
            }
            it.next();
        }
        it.status()?;
        if ids != seen.len() as u64 {
            r.problems
                .push(format!("{ids} id index entries for {} jobs", seen.len()));
        }

        let mut it = snap.raw_iterator_cf(self.cf(st::CF_IDEM)?);
        it.seek_to_first();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            let ok = <[u8; 16]>::try_from(v).ok().is_some_and(|b| {
                let id = JobId::from_bytes(b);
                records
                    .get(&id)
                    .is_some_and(|(_, ik)| ik.as_deref().map(|s| s.as_bytes()) == k.get(16..))
            });
            if !ok {
                r.problems.push(format!(
                    "idempotency entry {} names no job with that key",
                    keys::hex(k)
                ));
            }
            it.next();
        }
        it.status()?;

        let mut disk: BTreeMap<String, PerState<i64>> = BTreeMap::new();
        let mut disk_scopes: BTreeMap<Scope, PerState<i64>> = BTreeMap::new();
        let mut marked = false;
        let mut it = snap.raw_iterator_cf(self.cf(st::CF_COUNTERS)?);
        it.seek_to_first();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            let scope = st::scope_of_counter_key(k);
            if k == st::SCOPE_COUNTERS_MARKER {
                marked = true;
            } else if let (Some(s), Some(c)) = (scope, st::decode_counters(v)) {
                if !c.is_zero() {
                    disk_scopes.insert(s, c);
                }
            } else if let (Ok(kind), Some(c)) = (std::str::from_utf8(k), st::decode_counters(v)) {
                if !c.is_zero() {
                    disk.insert(kind.to_string(), c);
                }
            } else {
                r.problems
                    .push(format!("malformed counters row {}", keys::hex(k)));
            }
            it.next();
        }
        it.status()?;
        if disk != r.scanned {
            r.problems.push(format!(
                "counters on disk {disk:?} differ from a full scan {:?}",
                r.scanned
            ));
        }
        let mem = self.counts.kind_stats();
        let disk_scopes = marked.then_some(&disk_scopes);
        self.check_scopes(&mut r, &scoped, disk_scopes, &self.counts.scopes_all());
        for (kind, c) in &r.scanned {
            let m = mem.by_kind.get(kind).copied().unwrap_or_default();
            let want = crate::job::StateCounts::from_per_state(c);
            if m != want {
                r.problems.push(format!(
                    "in-memory counts of {kind} {m:?} differ from a full scan {want:?}"
                ));
            }
        }
        for kind in mem.by_kind.keys() {
            if !r.scanned.contains_key(kind) {
                r.problems
                    .push(format!("in-memory counts for {kind}, which has no jobs"));
            }
        }
        Ok(r)
    }

    /// Per-scope counters, on disk and in memory, against the scan.
    fn check_scopes(
        &self,
        r: &mut CheckReport,
        scanned: &BTreeMap<Scope, PerState<i64>>,
        disk: Option<&BTreeMap<Scope, PerState<i64>>>,
        mem: &BTreeMap<Scope, PerState<i64>>,
    ) {
        // Unmarked: a store from before them, opened read-only (kept in
        // memory only, never written).
        if let Some(disk) = disk.filter(|d| *d != scanned) {
            r.problems.push(format!(
                "per-scope counters on disk {disk:?} differ from a full scan {scanned:?}"
            ));
        }
        if mem != scanned {
            r.problems.push(format!(
                "in-memory per-scope counts {mem:?} differ from a full scan {scanned:?}"
            ));
        }
    }
}

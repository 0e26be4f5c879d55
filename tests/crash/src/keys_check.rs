//! The keys mode's ledger (keys.rs): leases read from the ack log, each
//! reduced to an interval it surely held, and the checks on them.
//!
//! A lease is held from its commit to its settle's commit. The log has the
//! `L` record after the lease call returned (so after its commit) and the
//! `S` intent before the settle call (so before its commit): `[L, S]` lies
//! inside the real lease. A lease with no `S` in its round was still held
//! when the owner was killed (no reaper runs, the TTL is 30 s, and the
//! harness hands such leases back only after the kill), so it held at
//! least until the round's last record. Intervals that overlap in the log
//! overlapped in the store: more of them at once than a key's cap is a
//! real breach, never an artefact of when the log was written.

use std::collections::{BTreeMap, HashMap};

use telha_jobs::JobId;

use crate::log::Record;

/// One lease and the interval (µs) it surely held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub id: JobId,
    pub generation: u64,
    pub key: String,
    pub from: u64,
    pub to: u64,
}

/// The leases in one round's records (every worker's file).
pub fn leases(records: &[Record]) -> Result<Vec<Lease>, String> {
    let last = records.iter().map(|r| r.t_us).max().unwrap_or(0);
    let mut settle: HashMap<(&str, u64), u64> = HashMap::new();
    for r in records.iter().filter(|r| r.tag == 'S') {
        settle.insert((r.id.as_str(), r.generation), r.t_us);
    }
    let mut out = Vec::new();
    for r in records.iter().filter(|r| r.tag == 'L') {
        let id: JobId = r.id.parse().map_err(|e| format!("{r:?}: {e}"))?;
        if r.extra.is_empty() {
            return Err(format!("a lease record without its key: {r:?}"));
        }
        let to = settle
            .get(&(r.id.as_str(), r.generation))
            .copied()
            .unwrap_or(last);
        out.push(Lease {
            id,
            generation: r.generation,
            key: r.extra.clone(),
            from: r.t_us,
            to: to.max(r.t_us),
        });
    }
    Ok(out)
}

/// The most leases of each key held at one instant. At the same
/// microsecond an end counts before a start (the log's clock cannot order
/// them, and the real intervals then may only touch).
pub fn peaks(leases: &[Lease]) -> BTreeMap<String, (u32, u64)> {
    let mut by_key: BTreeMap<&str, Vec<(u64, i32)>> = BTreeMap::new();
    for l in leases {
        let ev = by_key.entry(l.key.as_str()).or_default();
        ev.push((l.from, 1));
        ev.push((l.to, -1));
    }
    by_key
        .into_iter()
        .map(|(k, mut ev)| {
            ev.sort();
            let (mut now, mut peak, mut at) = (0i32, 0i32, 0u64);
            for (t, d) in ev {
                now += d;
                if now > peak {
                    (peak, at) = (now, t);
                }
            }
            (k.to_string(), (peak as u32, at))
        })
        .collect()
}

/// Every key's peak within `cap(key)`.
pub fn within_caps(leases: &[Lease], cap: impl Fn(&str) -> u32) -> Result<(), String> {
    for (key, (peak, at)) in peaks(leases) {
        if peak > cap(&key) {
            return Err(format!(
                "key {key:?}: {peak} leases held at once at t={at} µs, its cap is {}",
                cap(&key)
            ));
        }
    }
    Ok(())
}

/// An ordered key's jobs by their first acknowledged lease must come in
/// enqueue order: ids (UUIDv7) increasing, and for the jobs whose enqueue
/// was acknowledged, their enqueue sequence increasing. `first`: job →
/// (first lease µs, key); `seq`: acknowledged job → enqueue sequence.
pub fn in_enqueue_order(
    first: &BTreeMap<JobId, (u64, String)>,
    seq: &BTreeMap<JobId, u64>,
    ordered: impl Fn(&str) -> bool,
) -> Result<usize, String> {
    let mut by_key: BTreeMap<&str, Vec<(u64, JobId)>> = BTreeMap::new();
    for (id, (t, k)) in first {
        if ordered(k) {
            by_key.entry(k.as_str()).or_default().push((*t, *id));
        }
    }
    let mut n = 0;
    for (key, mut v) in by_key {
        v.sort();
        n += v.len();
        for w in v.windows(2) {
            let ((ta, a), (tb, b)) = (w[0], w[1]);
            if b < a {
                return Err(format!(
                    "ordered key {key:?}: job {b} (first leased at {tb}) went after job {a} \
                     (at {ta}) but is older"
                ));
            }
        }
        let acked: Vec<(u64, JobId)> = v
            .into_iter()
            .filter(|(_, id)| seq.contains_key(id))
            .collect();
        for w in acked.windows(2) {
            let (a, b) = (w[0].1, w[1].1);
            if seq[&b] < seq[&a] {
                return Err(format!(
                    "ordered key {key:?}: job {b} (enqueue #{}) was first leased after job {a} \
                     (enqueue #{}) but was enqueued before it",
                    seq[&b], seq[&a]
                ));
            }
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(tag: char, t_us: u64, id: &JobId, generation: u64, extra: &str) -> Record {
        Record {
            tag,
            t_us,
            id: id.to_string(),
            generation,
            extra: extra.into(),
        }
    }

    fn ids(n: usize) -> Vec<JobId> {
        (0..n)
            .map(|i| JobId::from_bytes([i as u8 + 1; 16]))
            .collect()
    }

    #[test]
    fn three_overlapping_leases_breach_a_cap_of_two() {
        let j = ids(3);
        let r = vec![
            rec('L', 10, &j[0], 1, "k"),
            rec('L', 20, &j[1], 1, "k"),
            rec('L', 30, &j[2], 1, "k"),
            rec('S', 40, &j[0], 1, "complete"),
            rec('S', 50, &j[1], 1, "complete"),
            rec('S', 60, &j[2], 1, "release"),
        ];
        let l = leases(&r).unwrap();
        assert_eq!(peaks(&l)["k"].0, 3);
        assert!(within_caps(&l, |_| 2).is_err());
        assert!(within_caps(&l, |_| 3).is_ok());
    }

    #[test]
    fn an_end_and_a_start_at_one_instant_do_not_overlap() {
        let j = ids(2);
        let r = vec![
            rec('L', 10, &j[0], 1, "k"),
            rec('S', 20, &j[0], 1, "complete"),
            rec('L', 20, &j[1], 1, "k"),
            rec('S', 30, &j[1], 1, "complete"),
        ];
        assert!(within_caps(&leases(&r).unwrap(), |_| 1).is_ok());
    }

    #[test]
    fn an_unsettled_lease_is_held_to_the_rounds_last_record() {
        let j = ids(2);
        let r = vec![
            rec('L', 10, &j[0], 1, "k"),
            rec('L', 20, &j[1], 1, "k"),
            rec('S', 30, &j[1], 1, "complete"),
        ];
        let l = leases(&r).unwrap();
        assert_eq!(l[0].to, 30);
        assert!(within_caps(&l, |_| 1).is_err());
    }

    #[test]
    fn an_ordered_key_leased_out_of_order_is_caught() {
        let j = ids(3);
        let seq: BTreeMap<JobId, u64> = j
            .iter()
            .enumerate()
            .map(|(i, id)| (*id, i as u64))
            .collect();
        let mut first = BTreeMap::new();
        first.insert(j[0], (10, "o".to_string()));
        first.insert(j[1], (20, "o".to_string()));
        first.insert(j[2], (5, "free".to_string()));
        assert_eq!(in_enqueue_order(&first, &seq, |k| k == "o"), Ok(2));
        first.insert(j[1], (5, "o".to_string()));
        assert!(in_enqueue_order(&first, &seq, |k| k == "o").is_err());
        // By sequence alone: ids in order, enqueues not.
        first.insert(j[1], (20, "o".to_string()));
        let mut swapped = seq.clone();
        swapped.insert(j[0], 9);
        assert!(in_enqueue_order(&first, &swapped, |k| k == "o").is_err());
    }
}

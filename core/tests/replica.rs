//! The replica API (core/src/replica.rs) on real stores: engines whose
//! writes go through a `Replicate` written here (what a one-node cluster
//! does: apply the bytes to every store), fencing, the takeover grace, the
//! family table, and `apply`'s refusals.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{expect_err, EPOCH_MS, SEC};
use telha_jobs::replica::{ReplicaStore, Replicate, ReplicateError, RAFT_META_PREFIX};
use telha_jobs::{
    Clock, Config, EnqueueOptions, ErrorKind, JobId, LeaseOptions, ManualClock, PauseTarget, Queue,
    Schedule, State,
};

const APPLIED: &[u8] = b"raft/applied";

/// No reaper thread (tests call `reap()`), and a known lease TTL.
fn cfg() -> Config {
    Config {
        reaper_interval: Duration::ZERO,
        lease_ttl: Duration::from_secs(30),
        ..Config::default()
    }
}

/// A one-node cluster's log, in one lock: each batch is applied to every
/// store in the same order, with the entry's index under `raft/applied`
/// in the same write, then answered `Ok`.
struct Loopback {
    stores: Vec<ReplicaStore>,
    index: Arc<Mutex<u64>>,
}

impl Replicate for Loopback {
    fn replicate(&self, batch: Vec<u8>) -> Result<(), ReplicateError> {
        let mut index = self.index.lock().unwrap();
        let next = (*index + 1).to_be_bytes();
        for (i, s) in self.stores.iter().enumerate() {
            match s.apply(&[batch.as_slice()], &[(APPLIED, &next[..])]) {
                Ok(()) => {}
                // Refused everywhere alike: nothing written.
                Err(e) if i == 0 => return Err(ReplicateError::Failed(e)),
                Err(e) => return Err(ReplicateError::Unknown(e.to_string())),
            }
        }
        *index += 1;
        Ok(())
    }
}

fn loopback(stores: &[&ReplicaStore]) -> Box<Loopback> {
    Box::new(Loopback {
        stores: stores.iter().map(|s| (*s).clone()).collect(),
        index: Arc::new(Mutex::new(0)),
    })
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(EPOCH_MS))
}

fn assert_clean(r: &telha_jobs::CheckReport, what: &str) {
    assert_eq!(r.problems, Vec::<String>::new(), "{what}");
}

/// Every job's state, by id, and the totals.
fn jobs(q: &Queue) -> (BTreeMap<JobId, State>, telha_jobs::StateCounts) {
    let mut out = BTreeMap::new();
    for state in State::ALL {
        let page = q
            .list(&telha_jobs::ListQuery {
                state: Some(state),
                ..Default::default()
            })
            .unwrap();
        assert!(page.next.is_none());
        out.extend(page.jobs.iter().map(|j| (j.id, j.state)));
    }
    (out, q.stats().unwrap().total)
}

fn lease(q: &Queue, kind: &str) -> telha_jobs::Job {
    let opts = LeaseOptions::default().kind(kind).unwrap();
    q.lease_next("w", &opts).unwrap().expect("a job to lease")
}

#[test]
fn a_loopback_replica_ends_equal_to_its_peer_and_opens_as_a_plain_store() {
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (
        ReplicaStore::open(da.path()).unwrap(),
        ReplicaStore::open(db.path()).unwrap(),
    );
    let clock = clock();
    let log = loopback(&[&a, &b]);
    let index = log.index.clone();
    let q = Queue::open_replica(&a, cfg(), clock.clone(), log, Duration::ZERO).unwrap();

    let key = EnqueueOptions::default().idempotency_key("once");
    let first = q.enqueue("mail", b"1", key.clone()).unwrap();
    assert!(!q.enqueue("mail", b"1", key).unwrap().created);
    q.enqueue("mail", b"2", EnqueueOptions::default()).unwrap();
    q.enqueue("img", &[7u8; 4000], EnqueueOptions::default())
        .unwrap(); // a payload in its own family
    let doomed = q.enqueue("slow", b"4", EnqueueOptions::default()).unwrap();
    let expiring = q.enqueue("lost", b"5", EnqueueOptions::default()).unwrap();
    let done = lease(&q, "mail");
    assert_eq!(done.id, first.id);
    q.complete(&done.token(), Some(b"ok")).unwrap();
    let failed = lease(&q, "mail");
    q.fail(&failed.token(), "try later", true).unwrap();
    let dead = lease(&q, "img");
    q.fail(&dead.token(), "bad input", false).unwrap();
    q.retry(&dead.id).unwrap();
    q.cancel(&doomed.id, "not needed").unwrap();
    let _held = lease(&q, "lost");
    q.pause(&PauseTarget::parse("kind:mail").unwrap()).unwrap();
    q.schedule_put(&Schedule::new("tick", "every 1m", "tick"))
        .unwrap();
    clock.advance(Duration::from_secs(3 * 60 + 1));
    let fired = q.run_schedules().unwrap().enqueued;
    assert!(fired >= 1);
    // The lease of "lost" is past its TTL: the reaper moves it, replicated.
    assert_eq!(q.reap().unwrap().expired, 1);
    assert_eq!(q.get(&expiring.id).unwrap().unwrap().state, State::Pending);

    assert_clean(&q.check().unwrap(), "the engine's own check");
    assert_eq!(a.digest().unwrap(), b.digest().unwrap());
    assert_clean(&a.check(cfg()).unwrap(), "check of a");
    assert_clean(&b.check(cfg()).unwrap(), "check of b");
    let applied = index.lock().unwrap().to_be_bytes().to_vec();
    assert_eq!(a.meta_get(APPLIED).unwrap(), Some(applied.clone()));
    assert_eq!(b.meta_get(APPLIED).unwrap(), Some(applied));
    let seen = jobs(&q);
    assert_eq!(seen.0.len() as u64, 5 + fired, "{:?}", seen.0);

    // The engine lets go of its store only; the stores close with their owners.
    drop(q);
    drop((a, b));
    for dir in [da.path(), db.path()] {
        let plain = Queue::open_with_clock(dir, cfg(), clock.clone()).unwrap();
        assert_eq!(jobs(&plain), seen, "{}", dir.display());
        assert_clean(&plain.check().unwrap(), "plain open");
        assert_eq!(plain.paused().unwrap().kinds.len(), 1);
        assert_eq!(plain.schedule_list().unwrap().len(), 1);
    }
}

const PASS: u8 = 0;
/// Applied, then the answer is lost.
const LOST: u8 = 1;
/// Refused before it was proposed.
const REFUSE: u8 = 2;

/// Applies to its one store; the next outcome is set by the test.
struct Switch {
    store: ReplicaStore,
    next: Arc<AtomicU8>,
}

impl Replicate for Switch {
    fn replicate(&self, batch: Vec<u8>) -> Result<(), ReplicateError> {
        match self.next.swap(PASS, Ordering::SeqCst) {
            REFUSE => Err(ReplicateError::Failed(telha_jobs::Error::unavailable(
                "not the leader",
            ))),
            mode => {
                self.store
                    .apply(&[batch.as_slice()], &[])
                    .map_err(ReplicateError::Failed)?;
                if mode == LOST {
                    return Err(ReplicateError::Unknown("leader changed mid-write".into()));
                }
                Ok(())
            }
        }
    }
}

fn switched(store: &ReplicaStore, next: &Arc<AtomicU8>) -> Box<Switch> {
    Box::new(Switch {
        store: store.clone(),
        next: next.clone(),
    })
}

#[test]
fn an_unknown_outcome_fences_the_engine_and_the_next_engine_sees_what_was_applied() {
    let dir = tempfile::tempdir().unwrap();
    let store = ReplicaStore::open(dir.path()).unwrap();
    let next = Arc::new(AtomicU8::new(PASS));
    let q1 = Queue::open_replica(&store, cfg(), clock(), switched(&store, &next), SEC).unwrap();
    q1.enqueue("a", b"1", EnqueueOptions::default()).unwrap();
    q1.enqueue("b", b"2", EnqueueOptions::default()).unwrap();

    // A refusal fails its call only.
    next.store(REFUSE, Ordering::SeqCst);
    let e = expect_err(
        q1.enqueue("c", b"3", EnqueueOptions::default()),
        ErrorKind::Unavailable,
    );
    assert!(e.to_string().contains("not the leader"), "{e}");
    assert_eq!(q1.stats().unwrap().total.pending, 2);

    let job = lease(&q1, "a");
    next.store(LOST, Ordering::SeqCst);
    let e = expect_err(q1.complete(&job.token(), None), ErrorKind::Unavailable);
    assert!(e.to_string().contains("leader changed mid-write"), "{e}");
    let clone = q1.clone();
    expect_err(q1.stats(), ErrorKind::Unavailable);
    expect_err(q1.backup(dir.path().join("b")), ErrorKind::Unavailable);
    assert!(!dir.path().join("b").exists());
    expect_err(
        clone.enqueue("c", b"3", EnqueueOptions::default()),
        ErrorKind::Unavailable,
    );
    expect_err(
        q1.lease_next("w", &LeaseOptions::default()),
        ErrorKind::Unavailable,
    );

    // The next term's engine opens while the fenced one is still held, and
    // reads what the store holds: the lost answer's complete took effect.
    let q2 = Queue::open_replica(&store, cfg(), clock(), switched(&store, &next), SEC).unwrap();
    assert_eq!(q2.get(&job.id).unwrap().unwrap().state, State::Completed);
    let b = lease(&q2, "b");
    q2.complete(&b.token(), None).unwrap();
    let s = q2.stats().unwrap().total;
    assert_eq!((s.pending, s.leased, s.completed), (0, 0, 2));
    expect_err(q1.get(&job.id), ErrorKind::Unavailable);
    assert_clean(&q2.check().unwrap(), "q2");
    assert_clean(&store.check(cfg()).unwrap(), "store");
}

#[test]
fn fence_from_outside_ends_every_call_and_wait_and_frees_the_store_for_the_next_engine() {
    let dir = tempfile::tempdir().unwrap();
    let store = ReplicaStore::open(dir.path()).unwrap();
    let q = Queue::open_replica(&store, cfg(), clock(), loopback(&[&store]), SEC).unwrap();
    q.enqueue("a", b"1", EnqueueOptions::default()).unwrap();
    let job = lease(&q, "a");

    // At most one engine writes: a second one waits for the fence.
    let e = expect_err(
        Queue::open_replica(&store, cfg(), clock(), loopback(&[&store]), SEC),
        ErrorKind::InvalidArgument,
    );
    assert!(e.to_string().contains("not fenced"), "{e}");

    let waiter = {
        let q = q.clone();
        let opts = LeaseOptions::default()
            .kind("never")
            .unwrap()
            .wait(Duration::from_secs(3600));
        std::thread::spawn(move || q.lease_next("w2", &opts))
    };
    q.fence("leadership lost in term 7");
    let e = expect_err(waiter.join().unwrap(), ErrorKind::Unavailable);
    assert!(e.to_string().contains("term 7"), "{e}");
    for e in [
        expect_err(q.complete(&job.token(), None), ErrorKind::Unavailable),
        expect_err(
            q.enqueue("b", b"2", EnqueueOptions::default()),
            ErrorKind::Unavailable,
        ),
        expect_err(q.stats(), ErrorKind::Unavailable),
    ] {
        assert!(e.to_string().contains("leadership lost in term 7"), "{e}");
    }
    q.fence("again"); // idempotent: the first reason stays
    assert!(expect_err(q.stats(), ErrorKind::Unavailable)
        .to_string()
        .contains("term 7"));

    let q2 = Queue::open_replica(&store, cfg(), clock(), loopback(&[&store]), SEC).unwrap();
    q2.complete(&job.token(), None).unwrap();
    assert_eq!(q2.stats().unwrap().total.completed, 1);
    assert_clean(&q2.check().unwrap(), "q2");
}

#[test]
fn takeover_grace_keeps_recovered_leases_until_it_passes() {
    let dir = tempfile::tempdir().unwrap();
    let store = ReplicaStore::open(dir.path()).unwrap();
    let clock = clock();
    let q1 = Queue::open_replica(&store, cfg(), clock.clone(), loopback(&[&store]), SEC).unwrap();
    for p in [b"1", b"2"] {
        q1.enqueue("a", p, EnqueueOptions::default()).unwrap();
    }
    let (beating, silent) = (lease(&q1, "a"), lease(&q1, "a"));
    q1.fence("election");
    // The election outlasts the 30 s leases.
    clock.advance(Duration::from_secs(60));

    let grace = Duration::from_secs(10);
    let q2 = Queue::open_replica(&store, cfg(), clock.clone(), loopback(&[&store]), grace).unwrap();
    assert_eq!(q2.reap().unwrap().expired, 0, "both held by the grace");
    assert_eq!(q2.stats().unwrap().total.leased, 2);
    // The worker that reaches the new leader renews its lease as usual.
    clock.advance(Duration::from_secs(5));
    let renewed = q2.extend(&[beating.token()], "w").unwrap();
    assert!(renewed[0].as_ref().is_ok_and(|d| *d > clock.now_ms()));
    clock.advance(Duration::from_secs(5) - Duration::from_millis(1));
    assert_eq!(q2.reap().unwrap().expired, 0, "still within the grace");
    clock.advance(Duration::from_millis(1));
    assert_eq!(
        q2.reap().unwrap().expired,
        1,
        "the silent one, at the grace's end"
    );
    assert_eq!(q2.get(&silent.id).unwrap().unwrap().state, State::Pending);
    q2.complete(&beating.token(), None).unwrap();
    assert_clean(&q2.check().unwrap(), "q2");
}

#[test]
fn without_a_grace_a_recovered_lease_past_its_deadline_expires_at_the_first_pass() {
    let dir = tempfile::tempdir().unwrap();
    let store = ReplicaStore::open(dir.path()).unwrap();
    let clock = clock();
    let q1 = Queue::open_replica(&store, cfg(), clock.clone(), loopback(&[&store]), SEC).unwrap();
    q1.enqueue("a", b"1", EnqueueOptions::default()).unwrap();
    let job = lease(&q1, "a");
    q1.fence("election");
    clock.advance(Duration::from_secs(60));
    let q2 = Queue::open_replica(
        &store,
        cfg(),
        clock.clone(),
        loopback(&[&store]),
        Duration::ZERO,
    )
    .unwrap();
    assert_eq!(q2.reap().unwrap().expired, 1);
    expect_err(q2.complete(&job.token(), None), ErrorKind::Aborted);
}

#[test]
fn the_family_table_digest_matches_across_fresh_stores_and_reopens_and_sees_a_new_family() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let s1 = ReplicaStore::open(d1.path()).unwrap();
    let t = s1.cf_table_digest();
    assert_eq!(ReplicaStore::open(d2.path()).unwrap().cf_table_digest(), t);
    drop(s1);
    assert_eq!(ReplicaStore::open(d1.path()).unwrap().cf_table_digest(), t);
    // A family another build added changes the table.
    {
        let mut raw = common::raw_db(d2.path());
        raw.create_cf("zz", &rocksdb::Options::default()).unwrap();
    }
    assert_ne!(ReplicaStore::open(d2.path()).unwrap().cf_table_digest(), t);
}

#[test]
fn apply_refuses_garbage_foreign_families_and_keys_outside_the_raft_prefix_writing_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = ReplicaStore::open(dir.path()).unwrap();
    let before = store.digest().unwrap();

    let mut cut = rocksdb::WriteBatch::default();
    cut.put(b"k", b"v");
    let cut = cut.data()[..cut.data().len() - 1].to_vec();
    // Header (sequence 0, count 1), then a put into family id 99.
    let mut foreign = vec![0u8; 8];
    foreign.extend_from_slice(&1u32.to_le_bytes());
    foreign.extend_from_slice(&[0x5, 99, 1, b'k', 1, b'v']);
    let mut random = vec![0u8; 200];
    let mut x: u32 = 12345;
    for b in &mut random {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        *b = (x >> 16) as u8;
    }
    let good = {
        let mut g = rocksdb::WriteBatch::default();
        g.put(b"default-cf-key", b"v");
        g.data().to_vec()
    };
    for garbage in [&b""[..], &b"short"[..], &random[..], &cut[..], &foreign[..]] {
        // A good batch beside a bad one is not written either.
        expect_err(
            store.apply(&[&good[..], garbage], &[(APPLIED, &b"1"[..])]),
            ErrorKind::Corruption,
        );
    }
    // An engine batch never touches the reserved keys: a batch made on a
    // store with the same family table that does is refused.
    let raft_row = {
        let other = tempfile::tempdir().unwrap();
        drop(ReplicaStore::open(other.path()).unwrap());
        let raw = common::raw_db(other.path());
        let mut g = rocksdb::WriteBatch::default();
        g.put_cf(raw.cf_handle("meta").unwrap(), b"raft/applied", b"9");
        g.data().to_vec()
    };
    expect_err(
        store.apply(&[raft_row.as_slice()], &[]),
        ErrorKind::Corruption,
    );
    for key in [
        &b"pause/kind:x"[..],
        &b"limit/kind:x"[..],
        &b""[..],
        &b"raf"[..],
    ] {
        expect_err(
            store.apply(&[], &[(key, &b""[..])]),
            ErrorKind::InvalidArgument,
        );
        expect_err(store.meta_get(key), ErrorKind::InvalidArgument);
    }
    assert_eq!(store.digest().unwrap(), before, "nothing was written");
    assert_eq!(store.meta_get(APPLIED).unwrap(), None);
    store.apply(&[good.as_slice()], &[]).unwrap();
    assert_ne!(store.digest().unwrap(), before, "a good batch applies");
}

#[test]
fn reserved_meta_keys_round_trip_stay_out_of_the_digest_and_do_not_upset_check() {
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (
        ReplicaStore::open(da.path()).unwrap(),
        ReplicaStore::open(db.path()).unwrap(),
    );
    let membership = [b'm'; 300];
    a.apply(
        &[],
        &[
            (APPLIED, &b"\x00\x07"[..]),
            (&b"raft/membership"[..], &membership[..]),
        ],
    )
    .unwrap();
    assert!(APPLIED.starts_with(RAFT_META_PREFIX));
    assert_eq!(
        a.meta_get(APPLIED).unwrap().as_deref(),
        Some(&b"\x00\x07"[..])
    );
    assert_eq!(
        a.meta_get(b"raft/membership").unwrap().as_deref(),
        Some(&membership[..])
    );
    assert_eq!(a.meta_get(b"raft/none").unwrap(), None);
    assert_eq!(a.digest().unwrap(), b.digest().unwrap());
    a.persist().unwrap();

    // Pauses and limits live beside them in `meta`.
    let clock = clock();
    let q = Queue::open_replica(&a, cfg(), clock.clone(), loopback(&[&a]), SEC).unwrap();
    q.pause(&PauseTarget::parse("kind:x").unwrap()).unwrap();
    q.pause(&PauseTarget::parse("kind:y").unwrap()).unwrap();
    q.set_limit(
        &telha_jobs::LimitTarget::parse("kind:z").unwrap(),
        telha_jobs::Limit::concurrency(2),
    )
    .unwrap();
    q.enqueue("z", b"1", EnqueueOptions::default()).unwrap();
    assert_clean(&q.check().unwrap(), "engine");
    assert_clean(&a.check(cfg()).unwrap(), "store");
    q.fence("done");
    drop(q);
    drop(a);
    let plain = Queue::open_with_clock(da.path(), cfg(), clock).unwrap();
    assert_clean(&plain.check().unwrap(), "plain open");
    assert_eq!(plain.paused().unwrap().kinds.len(), 2);
    assert_eq!(plain.limits().unwrap().len(), 1);
    let corrupt = common::metric(
        &plain.metrics().unwrap(),
        "telha_jobs_corrupt_records_total",
    );
    assert_eq!(corrupt, Some(0.0));
}

#[test]
fn a_store_under_a_replica_is_locked_to_plain_opens() {
    let dir = tempfile::tempdir().unwrap();
    let store = ReplicaStore::open(dir.path()).unwrap();
    expect_err(Queue::open(dir.path(), cfg()), ErrorKind::StoreLocked);
    let q = Queue::open_replica(&store, cfg(), clock(), loopback(&[&store]), SEC).unwrap();
    q.close();
    // Closing the engine's handle left the store open.
    store.apply(&[], &[(APPLIED, &b"1"[..])]).unwrap();
    expect_err(Queue::open(dir.path(), cfg()), ErrorKind::StoreLocked);
    drop(store);
    assert_store_opens(dir.path());
}

fn assert_store_opens(path: &Path) {
    let q = Queue::open(path, cfg()).unwrap();
    assert_clean(&q.check().unwrap(), "reopened");
}

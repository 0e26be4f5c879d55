//! The fencing token in the state machine, without Raft: an `Epoch::Open`
//! entry records its index as the current epoch (kept across reopen); an
//! entry of an older epoch is skipped on every replica (applied id moves,
//! contents do not); an epoch newer than the current one and a payload
//! format older than the token's are refused with nothing applied.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::storage::RaftStateMachine;
use openraft::{CommittedLeaderId, EntryPayload};
use telha_jobs::replica::{ReplicaStore, Replicate, ReplicateError};
use telha_jobs::{Config, EnqueueOptions, ManualClock, Queue};
use telha_jobs_cluster::state_machine::StateMachine;
use telha_jobs_cluster::{Applied, Entry, Epoch, LogId, Payload, PAYLOAD_FORMAT};

fn entry(index: u64, format: u32, digest: u64, epoch: Epoch, batches: Vec<Vec<u8>>) -> Entry {
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
        payload: EntryPayload::Normal(Payload {
            format,
            cf_table_digest: digest,
            epoch,
            batches,
        }),
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Two replicas fed the same entries in order.
struct Replicas {
    sms: Vec<Arc<Mutex<StateMachine>>>,
    stores: Vec<ReplicaStore>,
    next: Arc<Mutex<u64>>,
    /// Every engine batch replicated so far.
    batches: Arc<Mutex<Vec<Vec<u8>>>>,
    digest: u64,
    rt: Arc<tokio::runtime::Runtime>,
}

impl Replicas {
    /// Apply `make(index)` on every replica; each one's answer.
    fn apply(&self, make: impl Fn(u64) -> Entry) -> Result<Vec<Applied>, String> {
        let mut next = self.next.lock().unwrap();
        let e = make(*next + 1);
        let mut out = Vec::new();
        for sm in &self.sms {
            let mut sm = sm.lock().unwrap();
            let r = self.rt.block_on(sm.apply([e.clone()]));
            out.push(r.map_err(|e| e.to_string())?[0]);
        }
        *next += 1;
        Ok(out)
    }

    fn digests(&self) -> Vec<u64> {
        self.stores.iter().map(|s| s.digest().unwrap()).collect()
    }
}

/// The engine's way in: each batch one entry of `epoch`.
struct Engine {
    replicas: Arc<Replicas>,
    epoch: u64,
}

impl Replicate for Engine {
    fn replicate(&self, batch: Vec<u8>) -> Result<(), ReplicateError> {
        let r = &self.replicas;
        r.batches.lock().unwrap().push(batch.clone());
        let answers = r
            .apply(|i| {
                entry(
                    i,
                    PAYLOAD_FORMAT,
                    r.digest,
                    Epoch::Of(self.epoch),
                    vec![batch.clone()],
                )
            })
            .map_err(ReplicateError::Unknown)?;
        assert_eq!(answers, vec![Applied::Written; 2]);
        Ok(())
    }
}

#[test]
fn entries_of_an_older_epoch_are_skipped_on_every_replica_and_newer_ones_refused() {
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let stores: Vec<ReplicaStore> = dirs
        .iter()
        .map(|d| ReplicaStore::open(d.path()).unwrap())
        .collect();
    let digest = stores[0].cf_table_digest();
    let replicas = Arc::new(Replicas {
        sms: stores
            .iter()
            .map(|s| Arc::new(Mutex::new(StateMachine::open(s.clone()).unwrap())))
            .collect(),
        stores: stores.clone(),
        next: Arc::default(),
        batches: Arc::default(),
        digest,
        rt: Arc::new(rt()),
    });
    let open = |i| entry(i, PAYLOAD_FORMAT, digest, Epoch::Open, vec![]);
    assert_eq!(replicas.apply(open).unwrap(), vec![Applied::Opened(1); 2]);

    let cfg = Config {
        reaper_interval: Duration::ZERO,
        ..Config::default()
    };
    let clock = Arc::new(ManualClock::new(1_000_000));
    let engine = Engine {
        replicas: replicas.clone(),
        epoch: 1,
    };
    let q = Queue::open_replica(&stores[0], cfg, clock, Box::new(engine), Duration::ZERO).unwrap();
    q.enqueue("mail", b"1", EnqueueOptions::default()).unwrap();
    q.fence("a newer epoch opens");
    drop(q);

    // A new epoch opens; the first engine's last batch (its enqueue, sent
    // again) arrives after it and is skipped everywhere.
    let e = *replicas.next.lock().unwrap() + 1;
    assert!(e > 2, "the engine wrote");
    assert_eq!(replicas.apply(open).unwrap(), vec![Applied::Opened(e); 2]);
    let before = replicas.digests();
    assert_eq!(before[0], before[1]);
    let late = replicas.batches.lock().unwrap().last().unwrap().clone();
    let stale = |i| entry(i, PAYLOAD_FORMAT, digest, Epoch::Of(1), vec![late.clone()]);
    assert_eq!(
        replicas.apply(stale).unwrap(),
        vec![
            Applied::Stale {
                epoch: 1,
                current: e
            };
            2
        ]
    );
    assert_eq!(replicas.digests(), before, "nothing of it written");
    for s in &stores {
        assert_eq!(
            s.check(Config::default()).unwrap().problems,
            Vec::<String>::new()
        );
    }
    let rt = rt();
    for sm in &replicas.sms {
        let mut sm = sm.lock().unwrap();
        assert_eq!(
            rt.block_on(sm.applied_state()).unwrap().0.unwrap().index,
            e + 1
        );
        assert_eq!(sm.epoch(), e);
    }

    // No engine can be of an epoch not opened yet; a format without the
    // token is not applied either. Both refused, nothing applied.
    let future = |i| {
        entry(
            i,
            PAYLOAD_FORMAT,
            digest,
            Epoch::Of(e + 1),
            vec![late.clone()],
        )
    };
    let err = replicas.apply(future).unwrap_err();
    assert!(
        err.contains(&format!("newer than the current epoch {e}")),
        "{err}"
    );
    let old = |i| entry(i, 1, digest, Epoch::Of(e), vec![late.clone()]);
    let err = replicas.apply(old).unwrap_err();
    assert!(err.contains("older than 2"), "{err}");
    assert_eq!(replicas.digests(), before);

    // The epoch is in the store, with the applied id.
    drop(replicas);
    for s in &stores {
        let mut sm = StateMachine::open(s.clone()).unwrap();
        assert_eq!(sm.epoch(), e);
        assert_eq!(
            rt.block_on(sm.applied_state()).unwrap().0.unwrap().index,
            e + 1
        );
    }
}

#[test]
fn a_format_1_payload_decodes_with_no_token_so_its_format_refusal_is_reached() {
    // A format-1 payload as MessagePack with named fields: no `epoch`.
    #[derive(serde::Serialize)]
    struct V1 {
        format: u32,
        cf_table_digest: u64,
        batches: Vec<serde_bytes::ByteBuf>,
    }
    let raw = rmp_serde::to_vec_named(&V1 {
        format: 1,
        cf_table_digest: 7,
        batches: vec![],
    })
    .unwrap();
    let p: Payload = rmp_serde::from_slice(&raw).unwrap();
    assert_eq!((p.format, p.epoch), (1, Epoch::Of(0)));
}

//! The decoders of bytes that come from disk or from another language, fed
//! random and mutated bytes: the part of the decoder checks that runs in
//! `make test` (the cargo-fuzz targets in `fuzz/` run in `make fuzz`, out
//! of `make test`; see `fuzz/README.md`), and the regression cases of what
//! `make fuzz` found.
//!
//! The record decoder (`store::codec::decode`), the key decoders
//! (`store::keys::{JobKey, KindKey}`, `decode_pos`, `unhex`,
//! `store::decode_counters`) and the payload convention decoder
//! (`payload::decode`) must never panic, must answer a typed error
//! (`Corruption`) or `None`, and valid encodings must round-trip. Then a
//! store with garbage under row keys reopens, `list` / `get` / `reap` /
//! `check` report the bad rows, and the store stays usable.

mod common;
// The committed cargo-fuzz inputs through the targets' own checks.
#[path = "decoders/regressions.rs"]
mod regressions;

use common::*;
use proptest::prelude::*;
use telha_jobs::payload::{self, Value};
use telha_jobs::store::codec::{self, JobRecord, FORMAT_V1};
use telha_jobs::store::keys::{self, JobKey, KindKey, Pos, JOB_KEY_LEN};
use telha_jobs::store::{self as st, decode_counters, encode_counters};
use telha_jobs::{ErrorKind, JobId, ListQuery, Scope, State};

// ------------------------------------------------------------ generators

fn any_state() -> impl Strategy<Value = State> {
    prop::sample::select(State::ALL.to_vec())
}

fn any_id() -> impl Strategy<Value = JobId> {
    any::<[u8; 16]>().prop_map(JobId::from_bytes)
}

fn any_key() -> impl Strategy<Value = JobKey> {
    (
        any::<[u8; 16]>(),
        any_state(),
        any::<u8>(),
        any::<u64>(),
        any_id(),
    )
        .prop_map(|(s, state, priority, ts, id)| JobKey {
            scope: Scope::from_bytes(s),
            state,
            priority,
            ts,
            id,
        })
}

fn any_record() -> impl Strategy<Value = JobRecord> {
    (
        (
            "[a-z][a-z0-9_.:-]{0,63}",
            prop::collection::vec(any::<u8>(), 0..256),
            any::<u32>(),
            prop::option::of(".{0,40}"),
            prop::option::of(any::<u64>()),
            any::<u64>(),
            prop::option::of(".{1,40}"),
        ),
        (
            any::<u64>(),
            any::<u64>(),
            prop::option::of(prop::collection::vec(any::<u8>(), 0..64)),
            prop::option::of(".{0,80}"),
            prop::collection::vec((any::<u64>(), "[a-z_]{1,16}", ".{0,40}"), 0..8),
            any::<u32>(),
            prop::option::of(any::<u32>()),
        ),
    )
        .prop_map(
            |(
                (kind, payload, attempts, worker_id, lease_deadline, generation, idempotency_key),
                (created_at, ready_at, result, last_error, events, dropped_events, max_attempts),
            )| JobRecord {
                kind,
                payload,
                attempts,
                worker_id,
                lease_deadline,
                generation,
                idempotency_key,
                created_at,
                ready_at,
                result,
                last_error,
                events,
                dropped_events,
                max_attempts,
                ..JobRecord::default()
            },
        )
}

/// A msgpack value as the bindings produce them (no NaN: NaN != NaN).
fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Nil),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e300f64..1e300).prop_map(Value::F64),
        ".{0,24}".prop_map(Value::from),
        prop::collection::vec(any::<u8>(), 0..32).prop_map(Value::Binary),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec(("[a-z]{1,8}".prop_map(Value::from), inner), 0..8)
                .prop_map(Value::Map),
        ]
    })
}

/// How a valid encoding gets damaged: a byte flipped, the tail cut,
/// random bytes inserted, or a run overwritten with 0xFF (huge lengths).
#[derive(Debug, Clone)]
enum Mutation {
    Flip(prop::sample::Index, u8),
    Truncate(prop::sample::Index),
    Insert(prop::sample::Index, Vec<u8>),
    Saturate(prop::sample::Index, usize),
}

fn any_mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<prop::sample::Index>(), 1..=255u8).prop_map(|(i, x)| Mutation::Flip(i, x)),
        any::<prop::sample::Index>().prop_map(Mutation::Truncate),
        (
            any::<prop::sample::Index>(),
            prop::collection::vec(any::<u8>(), 1..16)
        )
            .prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<prop::sample::Index>(), 1..8usize).prop_map(|(i, n)| Mutation::Saturate(i, n)),
    ]
}

fn mutate(mut b: Vec<u8>, muts: &[Mutation]) -> Vec<u8> {
    for m in muts {
        if b.is_empty() {
            b.push(0);
        }
        match m {
            Mutation::Flip(i, x) => {
                let i = i.index(b.len());
                b[i] ^= x;
            }
            Mutation::Truncate(i) => b.truncate(i.index(b.len())),
            Mutation::Insert(i, bytes) => {
                let i = i.index(b.len() + 1);
                b.splice(i..i, bytes.iter().copied());
            }
            Mutation::Saturate(i, n) => {
                let i = i.index(b.len());
                let end = (i + n).min(b.len());
                b[i..end].fill(0xFF);
            }
        }
    }
    b
}

/// The key byte of `s`, as `JobKey::encode` writes it.
fn state_byte(s: State) -> u8 {
    JobKey {
        scope: Scope::SYSTEM,
        state: s,
        priority: 0,
        ts: 0,
        id: JobId::from_bytes([0; 16]),
    }
    .encode()[16]
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 4_096,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ------------------------------------------------------------ the record decoder

proptest! {
    #![proptest_config(config())]

    #[test]
    fn record_decoder_answers_corruption_for_random_bytes(b in prop::collection::vec(any::<u8>(), 0..512)) {
        match codec::decode(&b) {
            Ok(r) => {
                // Random bytes can be a valid record; then it must re-encode.
                let again = codec::decode(&codec::encode(&r).unwrap()).unwrap();
                prop_assert_eq!(again, r);
            }
            Err(e) => prop_assert_eq!(e.kind(), ErrorKind::Corruption),
        }
    }

    #[test]
    fn record_decoder_reads_random_msgpack_after_the_format_byte(b in prop::collection::vec(any::<u8>(), 0..512)) {
        let mut v = vec![FORMAT_V1];
        v.extend(b);
        if let Err(e) = codec::decode(&v) {
            prop_assert_eq!(e.kind(), ErrorKind::Corruption);
        }
    }

    #[test]
    fn records_round_trip(r in any_record()) {
        let b = codec::encode(&r).unwrap();
        prop_assert_eq!(b[0], FORMAT_V1);
        prop_assert_eq!(codec::decode(&b).unwrap(), r);
    }

    #[test]
    fn mutated_records_decode_or_answer_corruption(
        r in any_record(),
        muts in prop::collection::vec(any_mutation(), 1..4),
    ) {
        let b = mutate(codec::encode(&r).unwrap(), &muts);
        match codec::decode(&b) {
            Ok(d) => prop_assert_eq!(codec::decode(&codec::encode(&d).unwrap()).unwrap(), d),
            Err(e) => prop_assert_eq!(e.kind(), ErrorKind::Corruption),
        }
    }
}

// ------------------------------------------------------------ the key decoders

proptest! {
    #![proptest_config(config())]

    #[test]
    fn job_key_decoder_is_total_and_exact(b in prop::collection::vec(any::<u8>(), 0..64)) {
        match JobKey::decode(&b) {
            Ok(k) => {
                prop_assert_eq!(b.len(), JOB_KEY_LEN);
                prop_assert_eq!(&k.encode()[..], &b[..]);
            }
            Err(e) => {
                prop_assert_eq!(e.kind(), ErrorKind::Corruption);
                let known_state = b.len() == JOB_KEY_LEN
                    && State::ALL.iter().any(|s| state_byte(*s) == b[16]);
                prop_assert!(!known_state, "a well-formed key was refused");
            }
        }
    }

    #[test]
    fn job_keys_round_trip(k in any_key()) {
        prop_assert_eq!(JobKey::decode(&k.encode()).unwrap(), k);
    }

    #[test]
    fn kind_key_decoder_is_total(b in prop::collection::vec(any::<u8>(), 0..128)) {
        match KindKey::decode(&b) {
            Ok(k) => prop_assert_eq!(
                keys::kind_key(&k.scope, &k.kind, k.priority, k.pos), b
            ),
            Err(e) => prop_assert_eq!(e.kind(), ErrorKind::Corruption),
        }
    }

    #[test]
    fn kind_keys_round_trip_and_mutations_never_panic(
        k in any_key(),
        kind in "[a-z][a-z0-9_.:-]{0,63}",
        muts in prop::collection::vec(any_mutation(), 1..4),
    ) {
        let b = keys::kind_key(&k.scope, &kind, k.priority, k.pos());
        let d = KindKey::decode(&b).unwrap();
        prop_assert_eq!((d.scope, d.kind.as_str(), d.priority, d.pos), (k.scope, kind.as_str(), k.priority, k.pos()));
        if let Err(e) = KindKey::decode(&mutate(b, &muts)) {
            prop_assert_eq!(e.kind(), ErrorKind::Corruption);
        }
    }

    #[test]
    fn positions_counters_and_cursors_decode_exactly(
        b in prop::collection::vec(any::<u8>(), 0..64),
        s in "[0-9a-fA-Fz+ -]{0,48}",
        c in any::<[i64; telha_jobs::State::COUNT]>(),
    ) {
        let p = keys::decode_pos(&b);
        prop_assert_eq!(p.is_some(), b.len() == 24);
        if let Some(p) = p {
            prop_assert_eq!(&p.encode()[..], &b[..]);
        }
        let d = decode_counters(&b);
        // Any whole number of counts, 1 to 64 (values written by builds
        // that knew fewer or more states).
        prop_assert_eq!(d.is_some(), !b.is_empty() && b.len() % 8 == 0);
        let c = telha_jobs::PerState(c);
        prop_assert_eq!(decode_counters(&encode_counters(&c)), Some(c));
        if let Some(bytes) = keys::unhex(&s) {
            prop_assert_eq!(keys::hex(&bytes), s.to_ascii_lowercase());
        }
        prop_assert_eq!(keys::unhex(&keys::hex(&b)), Some(b.clone()));
    }
}

// ------------------------------------------------------------ the payload decoder

proptest! {
    #![proptest_config(config())]

    #[test]
    fn payload_decoder_is_total(b in prop::collection::vec(any::<u8>(), 0..512)) {
        if let Some(v) = payload::decode(&b) {
            prop_assert_eq!(b[0], payload::PAYLOAD_MSGPACK_V1);
            // What decoded re-encodes to a payload that decodes the same
            // (compared as bytes: a NaN float is not equal to itself).
            let once = payload::encode(&v).unwrap();
            let twice = payload::encode(&payload::decode(&once).unwrap()).unwrap();
            prop_assert_eq!(once, twice);
        }
    }

    #[test]
    fn payloads_round_trip_and_mutations_never_panic(
        v in any_value(),
        muts in prop::collection::vec(any_mutation(), 1..4),
    ) {
        let b = payload::encode(&v).unwrap();
        let d = payload::decode(&b);
        prop_assert_eq!(d.as_ref(), Some(&v));
        let _ = payload::decode(&mutate(b, &muts));
    }
}

// ------------------------------------------------------------ hostile shapes

/// Lengths that claim gigabytes, and nesting far deeper than any record,
/// in every decoder: each answers an error (no abort on allocation, no
/// stack overflow), on a thread with the default 2 MiB stack.
#[test]
fn huge_length_claims_and_deep_nesting_are_errors_not_aborts() {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let mut cases: Vec<Vec<u8>> = Vec::new();
            for head in [
                &[0xdd, 0xff, 0xff, 0xff, 0xff][..], // array32 of 4G
                &[0xdf, 0xff, 0xff, 0xff, 0xff][..], // map32 of 4G
                &[0xdb, 0xff, 0xff, 0xff, 0xff][..], // str32 of 4 GiB
                &[0xc6, 0xff, 0xff, 0xff, 0xff][..], // bin32 of 4 GiB
                &[
                    0x9e, 0xa5, b'e', b'm', b'b', b'e', b'd', 0xc6, 0xff, 0xff, 0xff, 0xf0,
                ][..],
            ] {
                cases.push(head.to_vec());
            }
            // A record whose event list claims 4G entries.
            let mut r = vec![0x9e, 0xa5];
            r.extend_from_slice(b"embed");
            r.extend_from_slice(&[0xc4, 0x00, 0, 0xc0, 0xc0, 0, 0xc0, 0, 0, 0xc0, 0xc0]);
            r.extend_from_slice(&[0xdd, 0xff, 0xff, 0xff, 0xff]);
            cases.push(r);
            // Deep nesting: as a whole record, inside an extra trailing
            // field, as a map value under an unknown key.
            let deep = |n: usize, open: u8| {
                let mut d = vec![open; n];
                d.push(0xc0);
                d
            };
            cases.push(deep(200_000, 0x91));
            cases.push(deep(200_000, 0x81));
            let mut trailing = vec![0x9f, 0xa5];
            trailing.extend_from_slice(b"embed");
            trailing.extend_from_slice(&[
                0xc4, 0x00, 0, 0xc0, 0xc0, 0, 0xc0, 0, 0, 0xc0, 0xc0, 0x90, 0, 0xc0,
            ]);
            trailing.extend(deep(200_000, 0x91));
            cases.push(trailing);
            let mut named = vec![0x82, 0xa4];
            named.extend_from_slice(b"kind");
            named.extend_from_slice(&[0xa5]);
            named.extend_from_slice(b"embed");
            named.extend_from_slice(&[0xa1, b'z']);
            named.extend(deep(200_000, 0x91));
            cases.push(named);

            for c in &cases {
                let mut rec = vec![FORMAT_V1];
                rec.extend_from_slice(c);
                if let Err(e) = codec::decode(&rec) {
                    assert_eq!(e.kind(), ErrorKind::Corruption);
                }
                let mut p = vec![payload::PAYLOAD_MSGPACK_V1];
                p.extend_from_slice(c);
                let _ = payload::decode(&p);
                let _ = KindKey::decode(c);
                let _ = JobKey::decode(c);
            }
        })
        .unwrap()
        .join()
        .expect("a decoder panicked or overflowed its stack");
}

// ------------------------------------------------------------ garbage on disk

/// With the queue closed, write `value` under `key` in the jobs CF (and
/// nothing else) through the raw RocksDB API.
fn raw_put(path: &std::path::Path, key: &[u8], value: &[u8]) {
    raw_put_cf(path, st::CF_JOBS, key, value)
}

/// With the queue closed, write `value` under `key` in column family `cf`.
fn raw_put_cf(path: &std::path::Path, cf: &str, key: &[u8], value: &[u8]) {
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(false);
    let cfs = st::ALL_CFS.iter().map(|name| {
        let mut o = rocksdb::Options::default();
        if *name == st::CF_COUNTERS {
            o.set_merge_operator_associative(st::COUNTERS_MERGE_NAME, st::counters_merge);
        }
        rocksdb::ColumnFamilyDescriptor::new(*name, o)
    });
    let db = rocksdb::DB::open_cf_descriptors(&opts, path, cfs).expect("raw open");
    let handle = db.cf_handle(cf).unwrap();
    db.put_cf(handle, key, value).unwrap();
    db.flush_wal(true).unwrap();
}

fn key_of(path: &std::path::Path, id: JobId) -> Vec<u8> {
    let q = telha_jobs::Queue::open_read_only(path).unwrap();
    let info = q.get(&id).unwrap().unwrap();
    q.close();
    JobKey {
        scope: info.scope,
        state: info.state,
        priority: info.priority,
        ts: info.state_ts,
        id,
    }
    .encode()
    .to_vec()
}

/// Garbage under the row of a pending, a leased and a completed job, and a
/// jobs-CF key that is not a job key at all: the store reopens (recovery
/// reads leased rows), every reader reports the bad rows as corrupt, the
/// good jobs stay untouched, and new work goes through.
#[test]
fn garbage_under_row_keys_is_reported_as_corrupt_and_the_store_stays_usable() {
    let mut s = TestStore::new();
    let ids: Vec<JobId> = (0..4).map(|_| s.enqueue("embed")).collect();
    let leased = s.lease("w").unwrap();
    let done = s.lease("w").unwrap();
    s.q.complete(&done.token(), Some(b"r")).unwrap();
    let pending_bad = ids[3];
    let good = ids[2];
    s.q.close();

    let path = s.path().to_path_buf();
    let victims = [
        (pending_bad, vec![FORMAT_V1, 0x9e, 0xc1]),
        (leased.id, vec![FORMAT_V1, 0xdd, 0xff, 0xff, 0xff, 0xff]),
        (done.id, b"\x07not a record".to_vec()),
    ];
    for (id, garbage) in &victims {
        let k = key_of(&path, *id);
        raw_put(&path, &k, garbage);
    }
    // A key of the wrong length in the jobs CF.
    raw_put(&path, b"not-a-job-key", b"x");
    s.reopen();

    // get: Corruption for the bad rows, the good job reads as before.
    for (id, _) in &victims {
        let e = s.q.get(id).expect_err("a corrupt row reads as an error");
        assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    }
    assert_eq!(s.get(&good).state, State::Pending);

    // list: the good jobs, and the four bad rows named as corrupt.
    let page = s.q.list(&ListQuery::default()).unwrap();
    let listed: Vec<JobId> = page.jobs.iter().map(|j| j.id).collect();
    assert_eq!(listed, [good], "only the good pending job lists");
    assert_eq!(page.corrupt.len(), 4, "{:?}", page.corrupt);
    for (id, _) in &victims {
        assert!(
            page.corrupt.iter().any(|c| c.id == Some(*id)),
            "{id} not reported"
        );
    }

    // reap (with every lease long expired) and check: no panic, and check
    // names every bad row.
    s.advance(3600 * SEC);
    s.q.reap().unwrap();
    let report = s.q.check().unwrap();
    for (id, _) in &victims {
        assert!(
            report.problems.iter().any(|p| p.contains(&id.to_string())),
            "check does not name {id}: {:?}",
            report.problems
        );
    }
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains(&keys::hex(b"not-a-job-key"))),
        "{:?}",
        report.problems
    );

    // Still usable: the good job and a new one go through their lifecycle.
    let fresh = s.enqueue("embed");
    let mut seen = Vec::new();
    while let Some(j) = s.lease("w") {
        seen.push(j.id);
        s.q.complete(&j.token(), None).unwrap();
    }
    seen.sort();
    let mut want = vec![good, fresh];
    want.sort();
    assert_eq!(seen, want);
}

/// Positions sort as their encodings do (the engine's cursors rely on it).
#[test]
fn positions_sort_like_their_bytes() {
    let ps = [
        Pos::MIN,
        Pos {
            ts: 1,
            id: JobId::from_bytes([0; 16]),
        },
        Pos {
            ts: 1,
            id: JobId::from_bytes([1; 16]),
        },
        Pos::MAX,
    ];
    for w in ps.windows(2) {
        assert!(w[0] < w[1] && w[0].encode() < w[1].encode());
    }
}

/// Garbage in the indexes rather than the rows: an id-index entry that is
/// not a jobs key, a kind-index key that does not parse, a counters value
/// of the wrong length. The store reopens; `get` of the job whose index
/// entry is garbage is `Corruption`; `check` names all three; the other jobs
/// go through their lifecycle.
#[test]
fn garbage_in_the_indexes_is_reported_and_the_store_stays_usable() {
    let mut s = TestStore::new();
    let victim = s.enqueue("embed");
    let good = s.enqueue("embed");
    s.q.close();
    let path = s.path().to_path_buf();
    raw_put_cf(&path, st::CF_IDS, victim.as_bytes(), b"\x01\x02 not a key");
    raw_put_cf(&path, st::CF_KINDS, b"\xffbad kind key", b"P");
    raw_put_cf(&path, st::CF_COUNTERS, b"embed:ghost", b"short");
    s.reopen();

    let e =
        s.q.get(&victim)
            .expect_err("a garbage id-index entry reads as an error");
    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    let report = s.q.check().unwrap();
    let named = |needle: &str| report.problems.iter().any(|p| p.contains(needle));
    assert!(named(&victim.to_string()), "{:?}", report.problems);
    assert!(named("kind index"), "{:?}", report.problems);
    assert!(named(&keys::hex(b"embed:ghost")), "{:?}", report.problems);

    let fresh = s.enqueue("embed");
    let mut done = Vec::new();
    while let Some(j) = s.lease("w") {
        match s.q.complete(&j.token(), None) {
            Ok(()) => done.push(j.id),
            Err(e) => panic!(
                "complete {} ({}): {e}",
                j.id,
                if j.id == victim { "victim" } else { "good" }
            ),
        }
    }
    done.sort();
    let mut want = vec![victim, good, fresh];
    want.sort();
    assert_eq!(
        done, want,
        "every job, the one with the bad index entry too, completes"
    );
    // Its move rewrote the id-index entry.
    assert_eq!(s.get(&victim).state, State::Completed);
    s.q.stats().unwrap();
    s.q.list(&ListQuery::default()).unwrap();
    s.q.reap().unwrap();
}

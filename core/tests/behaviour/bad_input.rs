//! Bad input and corruption on disk.

use super::*;

// ------------------------------------------------------------- bad input

#[test]
fn malformed_kinds_are_invalid_arguments() {
    let s = TestStore::new();
    let long = "a".repeat(65);
    for kind in [
        "Embed",
        "",
        long.as_str(),
        "ingest pdf",
        " embed",
        "ingest/pdf",
        "é",
    ] {
        expect_err(
            s.q.enqueue(kind, b"", EnqueueOptions::default()),
            ErrorKind::InvalidArgument,
        );
    }
    // The 64-byte limit is inclusive.
    s.enqueue(&"a".repeat(64));
    assert_eq!(s.q.stats().unwrap().total.total(), 1);
    for pattern in ["Ingest:*", "", "a b", "ingest:pdf:*"] {
        expect_err(
            LeaseOptions::default().kind(pattern),
            ErrorKind::InvalidArgument,
        );
    }
}

#[test]
fn an_oversized_payload_is_refused_and_nothing_is_written() {
    let mut cfg = test_config();
    cfg.max_payload_bytes = 1024;
    let s = TestStore::with_config(cfg);
    s.enqueue("embed");
    let before = s.q.stats().unwrap();
    expect_err(
        s.q.enqueue("embed", &[0u8; 1025], EnqueueOptions::default()),
        ErrorKind::InvalidArgument,
    );
    // One bad job fails the whole batch.
    expect_err(
        s.q.enqueue_many(vec![
            NewJob::new("embed", vec![0u8; 10]),
            NewJob::new("embed", vec![0u8; 1025]),
        ]),
        ErrorKind::InvalidArgument,
    );
    assert_eq!(s.q.stats().unwrap(), before);
    let ok =
        s.q.enqueue("embed", &[0u8; 1024], EnqueueOptions::default())
            .unwrap();
    assert_eq!(s.get(&ok.id).payload.len(), 1024);
    assert_consistent(&s.q);
}

#[test]
fn an_oversized_result_is_refused_and_the_lease_stays_valid() {
    let mut cfg = test_config();
    cfg.max_payload_bytes = 1024;
    let s = TestStore::with_config(cfg);
    let id = s.enqueue("embed");
    let job = s.must_lease("w");
    let before = s.get(&id);
    expect_err(
        s.q.complete(&job.token(), Some(&[1u8; 1025])),
        ErrorKind::InvalidArgument,
    );
    assert_eq!(s.get(&id), before);
    assert!(s.q.extend(&[job.token()], "w").unwrap()[0].is_ok());
    s.q.complete(&job.token(), Some(&[1u8; 1024])).unwrap();
    assert_eq!(s.get(&id).result.map(|r| r.len()), Some(1024));
}

#[test]
fn malformed_ids_scopes_workers_batches_and_cursors_are_invalid_arguments() {
    let s = TestStore::new();
    s.enqueue("embed");
    for bad in [
        "nope",
        "",
        "0190f1b2-0000-7000-8000",
        "0190f1b2-0000-7000-8000-00000000000g",
    ] {
        expect_err(bad.parse::<JobId>(), ErrorKind::InvalidArgument);
        expect_err(bad.parse::<Scope>(), ErrorKind::InvalidArgument);
    }
    expect_err("nope".parse::<LeaseToken>(), ErrorKind::InvalidArgument);
    let id = JobId::from_bytes([3; 16]);
    assert_eq!(id.to_string().parse::<JobId>().unwrap(), id);
    assert!(s.q.get(&id).unwrap().is_none(), "unknown id: Ok(None)");

    expect_err(
        s.q.lease_next("", &LeaseOptions::default()),
        ErrorKind::InvalidArgument,
    );
    expect_err(
        s.q.lease_next(&"w".repeat(257), &LeaseOptions::default()),
        ErrorKind::InvalidArgument,
    );
    expect_err(
        s.q.lease_many("w", 0, &LeaseOptions::default()),
        ErrorKind::InvalidArgument,
    );
    let job = s.must_lease("w");
    expect_err(s.q.extend(&[job.token()], ""), ErrorKind::InvalidArgument);

    for after in ["garbage", "zz", "00"] {
        let q = ListQuery {
            after: Some(after.into()),
            ..ListQuery::default()
        };
        expect_err(s.q.list(&q), ErrorKind::InvalidArgument);
    }
    let zero = ListQuery {
        limit: 0,
        ..ListQuery::default()
    };
    expect_err(s.q.list(&zero), ErrorKind::InvalidArgument);
    expect_err(
        s.q.enqueue("embed", b"", EnqueueOptions::default().idempotency_key("")),
        ErrorKind::InvalidArgument,
    );
    expect_err(
        s.q.enqueue("embed", b"", EnqueueOptions::default().max_attempts(0)),
        ErrorKind::InvalidArgument,
    );
    // None of it disturbed the store.
    assert_eq!(s.q.stats().unwrap().total.leased, 1);
    assert_consistent(&s.q);
}

#[test]
fn an_invalid_config_is_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = test_config();
    cfg.max_attempts = 0;
    expect_err(Queue::open(dir.path(), cfg), ErrorKind::InvalidArgument);
}

// ----------------------------------------------------- corruption on disk

/// With the queue closed, overwrite `victim`'s row in the jobs CF with bytes
/// that do not decode, through the raw RocksDB API.
fn corrupt_row(path: &std::path::Path, victim: JobId, garbage: &[u8]) {
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(false);
    let cfs = telha_jobs::store::ALL_CFS.iter().map(|name| {
        let mut o = rocksdb::Options::default();
        if *name == "counters" {
            // Recovery may flush the WAL's merge operands: it needs the operator.
            o.set_merge_operator_associative(
                telha_jobs::store::COUNTERS_MERGE_NAME,
                telha_jobs::store::counters_merge,
            );
        }
        rocksdb::ColumnFamilyDescriptor::new(*name, o)
    });
    let db = rocksdb::DB::open_cf_descriptors(&opts, path, cfs).expect("raw open");
    let ids = db.cf_handle("ids").unwrap();
    let jobs = db.cf_handle("jobs").unwrap();
    let key = db
        .get_cf(ids, victim.as_bytes())
        .unwrap()
        .expect("the victim is in the id index");
    let jk = JobKey::decode(&key).unwrap();
    assert_eq!((jk.id, jk.state), (victim, State::Pending));
    assert!(db.get_cf(jobs, &key).unwrap().is_some());
    db.put_cf(jobs, &key, garbage).unwrap();
    db.flush_wal(true).unwrap();
}

#[test]
fn a_corrupt_record_on_disk_is_reported_and_skipped_and_the_store_stays_usable() {
    let mut s = TestStore::new();
    let ids: Vec<JobId> = (0..3).map(|_| s.enqueue("embed")).collect();
    let victim = ids[1];
    s.q.close();
    corrupt_row(s.path(), victim, &[1, 0xc1, 0xff, 0x00, 0x13]);
    s.reopen();

    let page = s.q.list(&ListQuery::default()).unwrap();
    let listed: Vec<JobId> = page.jobs.iter().map(|j| j.id).collect();
    assert_eq!(listed, [ids[0], ids[2]]);
    assert_eq!(page.corrupt.len(), 1);
    assert_eq!(page.corrupt[0].id, Some(victim));
    assert!(!page.corrupt[0].error.is_empty());

    expect_err(s.q.get(&victim), ErrorKind::Corruption);
    assert_eq!(s.get(&ids[0]).state, State::Pending);

    let mut leased = Vec::new();
    for _ in 0..5 {
        if let Some(j) = s.lease("w") {
            leased.push(j.id);
        }
    }
    assert_eq!(
        leased,
        [ids[0], ids[2]],
        "the good jobs, once each, in order"
    );
    for id in [ids[0], ids[2]] {
        let t = LeaseToken { id, generation: 1 };
        s.q.complete(&t, None).unwrap();
    }
    s.q.reap().unwrap();
    s.advance(25 * HOUR);
    assert_eq!(s.q.reap().unwrap().pruned, 2);

    let text = s.q.metrics().unwrap();
    let corrupt = metric(&text, "telha_jobs_corrupt_records_total").expect("the series");
    assert_eq!(
        corrupt, 1.0,
        "one bad record, however often it is met: {text}"
    );
    s.q.list(&ListQuery::default()).unwrap();
    s.q.reap().unwrap();
    let text = s.q.metrics().unwrap();
    assert_eq!(metric(&text, "telha_jobs_corrupt_records_total"), Some(1.0));
    // The full check names the bad row.
    let report = s.q.check().unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains(&victim.to_string())),
        "{:?}",
        report.problems
    );
}

#[test]
fn a_corrupt_record_at_the_head_does_not_hide_the_ready_job_behind_it() {
    let mut s = TestStore::new();
    let bad = s.enqueue("embed");
    let good = s.enqueue("embed");
    s.q.close();
    corrupt_row(s.path(), bad, b"garbage");
    s.reopen();
    let got = s.lease("w");
    assert_eq!(
        got.map(|j| j.id),
        Some(good),
        "lease_next answered None while a good job was ready behind the corrupt one"
    );
}

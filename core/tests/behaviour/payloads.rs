//! Large payloads live outside the record, written once.

use super::*;
use telha_jobs::store::{CF_PAYLOADS, INLINE_PAYLOAD_MAX};
use telha_jobs::Config;

fn payload_entries(s: &TestStore) -> usize {
    let db = raw_db(s.path());
    let cf = db.cf_handle(CF_PAYLOADS).unwrap();
    db.iterator_cf(cf, rocksdb::IteratorMode::Start).count()
}

#[test]
fn a_large_payload_comes_back_whole_from_lease_get_and_list_and_goes_with_the_job() {
    let mut s = TestStore::with_config(Config {
        completed_retention: Some(HOUR),
        ..test_config()
    });
    let big: Vec<u8> = (0..64 * 1024).map(|i| (i % 251) as u8).collect();
    let small = vec![7u8; INLINE_PAYLOAD_MAX];
    let id =
        s.q.enqueue("embed", &big, EnqueueOptions::default())
            .unwrap()
            .id;
    let inline =
        s.q.enqueue("embed", &small, EnqueueOptions::default())
            .unwrap()
            .id;
    assert_eq!(s.q.get(&id).unwrap().unwrap().payload, big);
    let listed = s.q.list(&ListQuery::default()).unwrap();
    assert_eq!(
        listed.jobs.iter().find(|j| j.id == id).unwrap().payload,
        big
    );
    let job = lease_with(&s, &LeaseOptions::default()).unwrap();
    assert_eq!((job.id, &job.payload), (id, &big));
    // A heartbeat and a failure rewrite the record, not the payload.
    s.advance(SEC);
    s.q.extend(&[job.token()], "w").unwrap()[0]
        .as_ref()
        .unwrap();
    s.q.fail(&job.token(), "again", true).unwrap();
    s.advance(HOUR);
    let job = s.q.lease_next("w", &kinds(&["embed"])).unwrap().unwrap();
    let job = if job.id == id {
        job
    } else {
        s.q.complete(&job.token(), None).unwrap();
        lease_with(&s, &LeaseOptions::default()).unwrap()
    };
    assert_eq!((job.id, &job.payload), (id, &big));
    s.q.complete(&job.token(), Some(b"done")).unwrap();
    assert!(s.q.check().unwrap().problems.is_empty());
    s.q.close();
    assert_eq!(
        payload_entries(&s),
        1,
        "only the large payload lives outside"
    );
    s.reopen();
    assert_eq!(s.q.get(&id).unwrap().unwrap().payload, big);
    assert_eq!(s.q.get(&inline).unwrap().unwrap().payload, small);
    // Pruned with its job.
    s.advance(2 * HOUR);
    assert_eq!(s.q.reap().unwrap().pruned, 2);
    assert!(s.q.check().unwrap().problems.is_empty());
    s.q.close();
    assert_eq!(payload_entries(&s), 0);
}

#[test]
fn a_missing_outside_payload_is_reported_not_a_panic_and_check_sees_it() {
    let mut s = TestStore::new();
    let big = vec![1u8; INLINE_PAYLOAD_MAX + 1];
    let id =
        s.q.enqueue("embed", &big, EnqueueOptions::default())
            .unwrap()
            .id;
    let ok =
        s.q.enqueue("embed", b"fine", EnqueueOptions::default())
            .unwrap()
            .id;
    s.q.close();
    {
        let db = raw_db(s.path());
        db.delete_cf(db.cf_handle(CF_PAYLOADS).unwrap(), id.as_bytes())
            .unwrap();
        db.flush_wal(true).unwrap();
    }
    s.reopen();
    assert_eq!(s.q.get(&id).unwrap_err().kind(), ErrorKind::Corruption);
    let problems = s.q.check().unwrap().problems;
    assert!(
        problems.iter().any(|p| p.contains("payload")),
        "{problems:?}"
    );
    // The lease path skips it and serves the good job.
    let job = lease_with(&s, &LeaseOptions::default()).unwrap();
    assert_eq!(job.id, ok);
}

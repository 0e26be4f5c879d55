//! The store format: the committed fixtures of earlier formats open and
//! serve, a store of a future format is refused untouched, and rows written
//! by a newer build keep the fields this build does not know.

mod common;

use std::path::Path;

use common::*;
use telha_jobs::store::format::{self, StoreFormat, FORMAT_FILE};
use telha_jobs::store::keys::JobKey;
use telha_jobs::store::{codec, CF_IDS, CF_JOBS};
use telha_jobs::{
    Config, EnqueueOptions, ErrorKind, LeaseOptions, ListQuery, Queue, State, SystemClock,
};

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn all_jobs(q: &Queue) -> Vec<telha_jobs::JobInfo> {
    use telha_jobs::JobStore;
    let page = q
        .list_full(&ListQuery {
            limit: 1000,
            ..ListQuery::default()
        })
        .unwrap();
    assert!(page.corrupt.is_empty(), "{:?}", page.corrupt);
    page.jobs
}

#[test]
fn the_format_1_fixture_opens_upgrades_and_its_jobs_lease_complete_and_list() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture("store-format-1"), dir.path());
    assert!(
        !dir.path().join(FORMAT_FILE).exists(),
        "format 1 has no marker"
    );
    // The fixture's jobs finished when it was made (2026-12-01): with the
    // default retentions the first reap would prune them some day later, so
    // this test keeps them to compare the counts on any date.
    let keep = Config {
        completed_retention: None,
        dead_retention: None,
        cancelled_retention: None,
        ..test_config()
    };
    let q = Queue::open_with_clock(dir.path(), keep, std::sync::Arc::new(SystemClock)).unwrap();
    assert_eq!(
        format::read(dir.path()).unwrap(),
        Some(StoreFormat::CURRENT),
        "upgraded in place"
    );
    let t = q.stats().unwrap().total;
    assert_eq!(
        (t.pending, t.leased, t.failed, t.completed, t.dead),
        (3, 1, 1, 1, 1)
    );
    let jobs = all_jobs(&q);
    assert_eq!(jobs.len(), 7);
    let dead = jobs.iter().find(|j| j.state == State::Dead).unwrap();
    assert_eq!(dead.last_error.as_deref(), Some("poison document"));
    assert_eq!(dead.kind, "ingest:pdf");
    let done = jobs.iter().find(|j| j.state == State::Completed).unwrap();
    assert_eq!(done.result.as_deref(), Some(&b"\x01\xa2ok"[..]));
    // The idempotency index still answers for the fixture's keys.
    let again = q
        .enqueue(
            "embed",
            b"",
            EnqueueOptions::default().idempotency_key("fixture-ready"),
        )
        .unwrap();
    assert!(!again.created);

    // The lease held when the fixture was closed expired long ago.
    let r = q.reap().unwrap();
    assert_eq!(r.expired, 1);
    let mut completed = 0;
    while let Some(job) = q
        .lease_next("fixture-test", &LeaseOptions::default())
        .unwrap()
    {
        q.complete(&job.token(), Some(b"done")).unwrap();
        completed += 1;
    }
    // Ready: the failed one (its retry-at has passed) and the two ready
    // pending ones; not the expired one (backing off for 10 s) nor the job
    // delayed to 2100.
    assert_eq!(completed, 3);
    let t = q.stats().unwrap().total;
    assert_eq!((t.pending, t.leased, t.completed, t.dead), (2, 0, 4, 1));
    let report = q.check().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.format, Some(StoreFormat::CURRENT));
    q.close();
}

#[test]
fn the_format_1_fixture_reads_read_only_without_being_upgraded() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture("store-format-1"), dir.path());
    let q = Queue::open_read_only(dir.path()).unwrap();
    assert_eq!(all_jobs(&q).len(), 7);
    q.close();
    assert!(!dir.path().join(FORMAT_FILE).exists());
}

#[test]
fn a_store_of_a_future_format_is_refused_and_left_byte_for_byte_untouched() {
    let s = TestStore::new();
    s.q.enqueue("embed", b"x", EnqueueOptions::default())
        .unwrap();
    s.q.close();
    std::fs::write(
        s.path().join(FORMAT_FILE),
        "format = 9\ncompatible_from = 9\n",
    )
    .unwrap();
    let before = snapshot_dir(s.path());
    for attempt in 0..2 {
        let e = if attempt == 0 {
            Queue::open(s.path(), test_config()).unwrap_err()
        } else {
            Queue::open_read_only(s.path()).unwrap_err()
        };
        assert_eq!(e.kind(), ErrorKind::UnsupportedFormat, "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("format 9") && msg.contains("untouched"),
            "{msg}"
        );
        assert_eq!(snapshot_dir(s.path()), before, "attempt {attempt}");
    }
}

#[test]
fn a_newer_format_that_says_this_build_may_open_it_opens_and_keeps_its_marker() {
    let s = TestStore::new();
    s.q.close();
    let marker = "format = 9\ncompatible_from = 2\n";
    std::fs::write(s.path().join(FORMAT_FILE), marker).unwrap();
    let q = Queue::open(s.path(), test_config()).unwrap();
    q.enqueue("embed", b"x", EnqueueOptions::default()).unwrap();
    q.close();
    assert_eq!(
        std::fs::read_to_string(s.path().join(FORMAT_FILE)).unwrap(),
        marker
    );
}

/// Append a newer build's fields to the record of `id`: two extension tags
/// this build does not know and two array elements after the map.
fn add_future_fields(path: &Path, id: telha_jobs::JobId) -> JobKey {
    let db = raw_db(path);
    let (ids, jobs) = (
        db.cf_handle(CF_IDS).unwrap(),
        db.cf_handle(CF_JOBS).unwrap(),
    );
    let key = JobKey::decode(&db.get_cf(ids, id.as_bytes()).unwrap().unwrap()).unwrap();
    let mut rec = codec::decode(&db.get_cf(jobs, key.encode()).unwrap().unwrap()).unwrap();
    rec.ext.unknown = vec![(90, vec![0xa3, b'n', b'e', b'w']), (91, vec![0x92, 1, 2])];
    rec.ext.tail = vec![vec![0xc3], vec![0xa4, b't', b'a', b'i', b'l']];
    db.put_cf(jobs, key.encode(), codec::encode(&rec).unwrap())
        .unwrap();
    db.flush_wal(true).unwrap();
    key
}

fn record_of(path: &Path, id: telha_jobs::JobId) -> codec::JobRecord {
    let db = raw_db(path);
    let (ids, jobs) = (
        db.cf_handle(CF_IDS).unwrap(),
        db.cf_handle(CF_JOBS).unwrap(),
    );
    let key = db.get_cf(ids, id.as_bytes()).unwrap().unwrap();
    codec::decode(&db.get_cf(jobs, key).unwrap().unwrap()).unwrap()
}

#[test]
fn fields_of_a_newer_build_survive_a_lease_a_heartbeat_and_a_completion_here() {
    let mut s = TestStore::new();
    let id =
        s.q.enqueue("embed", b"doc", EnqueueOptions::default())
            .unwrap()
            .id;
    s.q.close();
    add_future_fields(s.path(), id);
    s.reopen();
    let job =
        s.q.lease_next("w", &LeaseOptions::default())
            .unwrap()
            .unwrap();
    assert_eq!((job.id, job.payload.as_slice()), (id, &b"doc"[..]));
    s.advance(SEC);
    assert!(s.q.extend(&[job.token()], "w").unwrap()[0].is_ok());
    s.q.complete(&job.token(), Some(b"r")).unwrap();
    assert_eq!(s.q.get(&id).unwrap().unwrap().state, State::Completed);
    s.q.close();
    let rec = record_of(s.path(), id);
    assert_eq!(rec.result.as_deref(), Some(&b"r"[..]));
    assert_eq!(rec.generation, 1);
    assert_eq!(
        rec.ext.unknown,
        vec![(90, vec![0xa3, b'n', b'e', b'w']), (91, vec![0x92, 1, 2])]
    );
    assert_eq!(
        rec.ext.tail,
        vec![vec![0xc3], vec![0xa4, b't', b'a', b'i', b'l']]
    );
}

#[test]
fn a_poison_job_with_100_attempts_accounts_for_every_attempt_in_its_log() {
    let s = TestStore::with_config(Config {
        max_attempts: 100,
        ..test_config()
    });
    let id =
        s.q.enqueue("embed", b"", EnqueueOptions::default())
            .unwrap()
            .id;
    for attempt in 1..=100u32 {
        s.advance(3600 * SEC);
        let job =
            s.q.lease_next("w", &LeaseOptions::default())
                .unwrap()
                .unwrap();
        assert_eq!(job.attempts + 1, attempt);
        if attempt % 3 == 0 {
            // Some attempts end by expiry rather than by a failure.
            s.advance(600 * SEC);
            s.q.reap().unwrap();
        } else {
            s.q.fail(&job.token(), "boom", true).unwrap();
        }
    }
    let info = s.q.get(&id).unwrap().unwrap();
    assert_eq!(
        (info.state, info.attempts, info.max_attempts),
        (State::Dead, 100, 100)
    );
    for a in 1..=100 {
        let needle = format!("(attempt {a} of 100)");
        let n = info
            .events
            .iter()
            .filter(|e| e.detail.contains(&needle))
            .count();
        assert_eq!(n, 1, "attempt {a} in {:#?}", info.events);
    }
    assert!(info.events.iter().any(|e| e.transition == "attempt"));
    assert_eq!(info.events.last().unwrap().transition, "dead");
}

#[test]
fn a_dead_job_shows_the_ceiling_that_decided_it_to_a_reader_with_other_defaults() {
    let s = TestStore::with_config(Config {
        max_attempts: 2,
        ..test_config()
    });
    let id =
        s.q.enqueue("embed", b"", EnqueueOptions::default())
            .unwrap()
            .id;
    for _ in 0..2 {
        s.advance(3600 * SEC);
        let job =
            s.q.lease_next("w", &LeaseOptions::default())
                .unwrap()
                .unwrap();
        s.q.fail(&job.token(), "boom", true).unwrap();
    }
    s.q.close();
    // An operator's read-only view with the defaults (max_attempts 5).
    let ro = Queue::open_read_only(s.path()).unwrap();
    let info = ro.get(&id).unwrap().unwrap();
    assert_eq!(
        (info.state, info.attempts, info.max_attempts),
        (State::Dead, 2, 2)
    );
}

#[test]
fn a_column_family_added_by_a_newer_compatible_build_is_opened_too() {
    let s = TestStore::new();
    s.q.enqueue("embed", b"x", EnqueueOptions::default())
        .unwrap();
    s.q.close();
    {
        let mut db = raw_db(s.path());
        db.create_cf("from_the_future", &rocksdb::Options::default())
            .unwrap();
    }
    let q = Queue::open(s.path(), test_config()).unwrap();
    assert_eq!(q.stats().unwrap().total.pending, 1);
    q.close();
    let ro = Queue::open_read_only(s.path()).unwrap();
    assert_eq!(ro.stats().unwrap().total.pending, 1);
}

fn marker_of(path: &Path) -> StoreFormat {
    format::read(path).unwrap().expect("a marker")
}

#[test]
fn the_first_waiting_job_raises_compatible_from_before_its_batch_and_only_then() {
    let s = TestStore::new();
    // A new store: format 3, still openable by a format-2 build.
    assert_eq!(
        marker_of(s.path()),
        StoreFormat {
            format: 3,
            compatible_from: 2
        }
    );
    // `after` on a finished job makes no job wait: nothing raised.
    let done = s.q.enqueue("a", b"", EnqueueOptions::default()).unwrap().id;
    let lease =
        s.q.lease_next("w", &LeaseOptions::default())
            .unwrap()
            .unwrap();
    assert_eq!(lease.id, done);
    s.q.complete(&lease.token(), None).unwrap();
    let p =
        s.q.enqueue("p", b"", EnqueueOptions::default().after([done]))
            .unwrap()
            .id;
    assert_eq!(s.q.get(&p).unwrap().unwrap().state, State::Pending);
    assert_eq!(marker_of(s.path()).compatible_from, 2, "no job waits yet");
    // A parent waiting on an unfinished child: a format-2 build would
    // mishandle its row, so the marker says so before the row exists.
    let child = s.q.enqueue("c", b"", EnqueueOptions::default()).unwrap().id;
    let w =
        s.q.enqueue("p", b"", EnqueueOptions::default().after([child]))
            .unwrap()
            .id;
    assert_eq!(s.q.get(&w).unwrap().unwrap().state, State::Waiting);
    let raised = StoreFormat {
        format: 3,
        compatible_from: format::WAITING_COMPAT,
    };
    assert_eq!(marker_of(s.path()), raised);
    assert_eq!(s.q.check().unwrap().format, Some(raised));
    // It stays raised after the waiting job is gone and across a reopen.
    s.q.close();
    let q = Queue::open(s.path(), test_config()).unwrap();
    assert_eq!(marker_of(s.path()), raised);
    assert_eq!(q.check().unwrap().format, Some(raised));
}

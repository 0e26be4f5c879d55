//! Times past the year 9999 (issue 14 item 4): the core now refuses them at
//! enqueue, but a store written before may hold them. Every command that
//! renders a time renders any u64, and one such row never aborts a listing.

use std::path::Path;

use telha_jobs::limits::MAX_INSTANT_MS;
use telha_jobs::store::codec;
use telha_jobs::store::keys::{self, JobKey};
use telha_jobs::{EnqueueOptions, JobId, LeaseOptions, Queue, State};

use crate::support::{config, telha};

/// The store opened with raw RocksDB (every column family, the counters
/// merge operator), to write rows the engine would refuse. The queue must
/// be closed.
fn raw_db(path: &Path) -> rocksdb::DB {
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(false);
    let cfs = telha_jobs::store::ALL_CFS.iter().map(|name| {
        let mut o = rocksdb::Options::default();
        if *name == telha_jobs::store::CF_COUNTERS {
            o.set_merge_operator_associative(
                telha_jobs::store::COUNTERS_MERGE_NAME,
                telha_jobs::store::counters_merge,
            );
        }
        rocksdb::ColumnFamilyDescriptor::new(*name, o)
    });
    rocksdb::DB::open_cf_descriptors(&opts, path, cfs).expect("raw open")
}

/// Move job `id`'s row to state time `ts`, and stamp its record's
/// `created_at` and every event with `stamp`, keeping the id and kind
/// indexes pointing at it (so the store is otherwise consistent).
fn stamp(path: &Path, id: JobId, ts: u64, stamp: u64) {
    use telha_jobs::store::{CF_IDS, CF_JOBS, CF_KINDS};
    let db = raw_db(path);
    let cf = |n| db.cf_handle(n).expect("column family");
    let old = db
        .get_cf(cf(CF_IDS), id.as_bytes())
        .unwrap()
        .expect("id row");
    let key = JobKey::decode(&old).unwrap();
    let mut rec = codec::decode(&db.get_cf(cf(CF_JOBS), &old).unwrap().unwrap()).unwrap();
    rec.created_at = stamp;
    for e in &mut rec.events {
        e.0 = stamp;
    }
    let new = JobKey { ts, ..key };
    let mut b = rocksdb::WriteBatch::default();
    b.delete_cf(cf(CF_JOBS), old.as_slice());
    b.put_cf(cf(CF_JOBS), new.encode(), codec::encode(&rec).unwrap());
    b.put_cf(cf(CF_IDS), id.as_bytes(), new.encode());
    if matches!(key.state, State::Pending | State::Failed) {
        b.delete_cf(
            cf(CF_KINDS),
            keys::kind_key(&key.scope, &rec.kind, key.priority, key.pos()),
        );
        b.put_cf(
            cf(CF_KINDS),
            keys::kind_key(&new.scope, &rec.kind, new.priority, new.pos()),
            [new.state.byte()],
        );
    }
    db.write(b).unwrap();
}

/// A store with a pending job due just after 9999 (the issue's
/// `run_at=253402300800.0`), a dead job whose times are all `u64::MAX`,
/// and an ordinary pending job.
struct FarStore {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    after_9999: JobId,
    max: JobId,
    plain: JobId,
}

fn far_store() -> FarStore {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let q = Queue::open(&path, config()).unwrap();
    let after_9999 = q
        .enqueue("embed", b"", EnqueueOptions::default())
        .unwrap()
        .id;
    let max = q
        .enqueue("embed", b"", EnqueueOptions::default().priority(0))
        .unwrap()
        .id;
    let j = q
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!(j.id, max);
    q.fail(&j.token(), "broken", false).unwrap();
    let plain = q
        .enqueue("embed", b"p", EnqueueOptions::default())
        .unwrap()
        .id;
    q.close();
    drop(q);
    stamp(&path, after_9999, MAX_INSTANT_MS + 1, MAX_INSTANT_MS + 1);
    stamp(&path, max, u64::MAX, u64::MAX);
    FarStore {
        _dir: dir,
        path,
        after_9999,
        max,
        plain,
    }
}

#[test]
fn ls_lists_jobs_scheduled_after_the_year_9999_and_every_other_job() {
    let s = far_store();
    let out = telha(&s.path, &["jobs", "ls"]);
    let text = out.ok();
    for id in [s.after_9999, s.max, s.plain] {
        assert!(text.contains(&id.to_string()), "{id} missing:\n{text}");
    }
    assert!(
        text.contains(&format!(
            "{} ms since the epoch (after year 9999)",
            u64::MAX
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("{} ms since the epoch", MAX_INSTANT_MS + 1)),
        "{text}"
    );
}

#[test]
fn ls_json_keeps_the_exact_numbers() {
    let s = far_store();
    let v = telha(&s.path, &["--json", "jobs", "ls"]).json();
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 3);
    let of = |id: JobId| {
        jobs.iter()
            .find(|j| j["id"] == id.to_string())
            .expect("listed")
            .clone()
    };
    let m = of(s.max);
    assert_eq!(m["state_ts_ms"].as_u64(), Some(u64::MAX));
    assert_eq!(m["created_at_ms"].as_u64(), Some(u64::MAX));
    assert!(m["state_at"].as_str().unwrap().contains("after year 9999"));
    let a = of(s.after_9999);
    assert_eq!(a["state_ts_ms"].as_u64(), Some(MAX_INSTANT_MS + 1));
    assert!(of(s.plain)["state_at"].as_str().unwrap().ends_with('Z'));
}

#[test]
fn show_renders_any_time_in_text_and_json() {
    let s = far_store();
    for id in [s.after_9999, s.max] {
        let id = id.to_string();
        let text = telha(&s.path, &["jobs", "show", &id]).ok().to_string();
        assert!(text.contains("after year 9999"), "{text}");
        let v = telha(&s.path, &["--json", "jobs", "show", &id]).json();
        for e in v["events"].as_array().unwrap() {
            assert!(e["at"].as_str().unwrap().contains("after year 9999"), "{e}");
        }
    }
    let v = telha(&s.path, &["--json", "jobs", "show", &s.max.to_string()]).json();
    assert_eq!(v["state"], "dead");
    assert_eq!(v["events"][0]["ts_ms"].as_u64(), Some(u64::MAX));
}

#[test]
fn check_accepts_the_rewritten_rows_as_consistent() {
    let s = far_store();
    let out = telha(&s.path, &["jobs", "check"]);
    assert!(out.ok().contains("no problems"), "{out:#?}");
}

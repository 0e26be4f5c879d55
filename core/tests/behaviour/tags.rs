//! Tags and metadata (issue 42): kept through every transition and a
//! reopen, listed and counted through the tag index, checked by `check`.

use super::*;
use telha_jobs::{CancelFilter, Completion, StateCounts};

fn tagged(tags: &[&str]) -> EnqueueOptions {
    tags.iter()
        .fold(EnqueueOptions::default(), |o, t| o.tag(*t))
        .meta("trace", "00-abc-01")
        .meta("actor", "ops")
}

fn ids_tagged(s: &TestStore, tag: &str, state: Option<State>) -> Vec<JobId> {
    let q = ListQuery {
        tag: Some(tag.into()),
        state,
        ..ListQuery::default()
    };
    s.q.list(&q).unwrap().jobs.iter().map(|j| j.id).collect()
}

fn count(s: &TestStore, tag: &str) -> StateCounts {
    s.q.count_tag(tag, None).unwrap()
}

#[test]
fn tags_and_metadata_survive_every_transition_and_a_reopen() {
    let mut cfg = test_config();
    cfg.completed_retention = Some(Duration::from_secs(1));
    let mut s = TestStore::with_config(cfg);
    let id = s.enqueue_with("embed", tagged(&["order-4711", "upload-9", "order-4711"]));
    let info = s.get(&id);
    assert_eq!(info.tags, ["order-4711", "upload-9"], "duplicates removed");
    assert_eq!(info.metadata["trace"], "00-abc-01");
    assert_eq!(ids_tagged(&s, "order-4711", Some(State::Pending)), [id]);
    // Leased: the worker sees them.
    let j = s.must_lease("w");
    assert_eq!((j.tags.len(), j.metadata.len()), (2, 2));
    assert_eq!(count(&s, "upload-9").leased, 1);
    s.q.extend(&[j.token()], "w").unwrap();
    // Failed (retryable), leased again at its retry, released, leased.
    s.q.fail(&j.token(), "boom", true).unwrap();
    assert_eq!(ids_tagged(&s, "order-4711", Some(State::Failed)), [id]);
    assert!(ids_tagged(&s, "order-4711", Some(State::Pending)).is_empty());
    s.advance(HOUR);
    let j = s.must_lease("w");
    s.q.release(&j.token()).unwrap();
    assert_eq!(count(&s, "order-4711").pending, 1);
    s.reopen();
    assert_eq!(s.get(&id).tags, ["order-4711", "upload-9"]);
    assert_consistent(&s.q);
    // Completed with a tagged follow-up, in the same batch.
    let j = s.must_lease("w");
    let then = NewJob::new("notify", b"x".to_vec()).with(tagged(&["order-4711"]));
    s.q.complete_with(Completion::new(j.token(), None).then(vec![then]))
        .unwrap();
    let c = count(&s, "order-4711");
    assert_eq!((c.completed, c.pending, c.total()), (1, 1, 2));
    assert_eq!(s.get(&id).metadata["actor"], "ops");
    assert_consistent(&s.q);
    // Pruned by retention: its index rows go with it.
    s.advance(Duration::from_secs(2));
    assert_eq!(s.q.reap().unwrap().pruned, 1);
    assert_eq!(count(&s, "upload-9"), StateCounts::default());
    assert!(ids_tagged(&s, "upload-9", None).is_empty());
    assert_eq!(count(&s, "order-4711").total(), 1);
    assert_consistent(&s.q);
}

#[test]
fn cancel_dead_delete_and_steering_keep_the_index_true() {
    let s = TestStore::new();
    let a = s.enqueue_with("embed", tagged(&["t"]));
    let b = s.enqueue_with("embed", tagged(&["t"]));
    let c = s.enqueue_with("embed", tagged(&["t"]).max_attempts(1));
    let d = s.enqueue_with("embed", tagged(&["t"]).delay(HOUR));
    s.q.cancel(&a, "no").unwrap();
    s.q.delete(&b).unwrap();
    s.q.set_priority(&d, 3).unwrap();
    let j = s.must_lease("w");
    assert_eq!(j.id, c);
    s.q.fail(&j.token(), "bad", true).unwrap();
    let n = count(&s, "t");
    assert_eq!((n.cancelled, n.dead, n.pending, n.total()), (1, 1, 1, 3));
    assert_eq!(ids_tagged(&s, "t", Some(State::Dead)), [c]);
    s.q.retry(&c).unwrap();
    assert_eq!(count(&s, "t").pending, 2);
    assert_consistent(&s.q);
}

#[test]
fn list_by_tag_pages_with_a_cursor_and_filters_by_state_kind_and_scope() {
    let s = TestStore::new();
    let mut mine = Vec::new();
    for i in 0..25u8 {
        let kind = if i % 5 == 0 { "mail" } else { "embed" };
        let o = tagged(&["batch-1"]).scope(scope(1 + i % 2));
        mine.push(s.enqueue_with(kind, o));
        s.enqueue_with("embed", tagged(&["batch-2"]));
        s.enqueue("embed");
    }
    // Pages of 10 over the tag's rows: every job once, none of another tag.
    let mut q = ListQuery {
        tag: Some("batch-1".into()),
        limit: 10,
        ..ListQuery::default()
    };
    let mut seen = Vec::new();
    loop {
        let page = s.q.list(&q).unwrap();
        assert!(page.jobs.len() <= 10);
        seen.extend(page.jobs.iter().map(|j| j.id));
        match page.next {
            Some(n) => q.after = Some(n),
            None => break,
        }
    }
    let mut want = mine.clone();
    want.sort();
    seen.sort();
    assert_eq!(seen, want);
    // Kind and scope filters; a state with no scope skip-scans the scopes.
    let q = ListQuery {
        tag: Some("batch-1".into()),
        kind: Some("mail".parse().unwrap()),
        ..ListQuery::default()
    };
    assert_eq!(s.q.list(&q).unwrap().jobs.len(), 5);
    let q = ListQuery {
        tag: Some("batch-1".into()),
        scope: Some(scope(1)),
        ..ListQuery::default()
    };
    assert_eq!(s.q.list(&q).unwrap().jobs.len(), 13);
    assert_eq!(ids_tagged(&s, "batch-1", Some(State::Pending)).len(), 25);
    assert!(ids_tagged(&s, "batch-1", Some(State::Leased)).is_empty());
    assert_eq!(
        s.q.count_tag("batch-1", Some(scope(2))).unwrap().pending,
        12
    );
    assert_eq!(count(&s, "nothing"), StateCounts::default());
    // A job's own cursor (a jobs key) resumes after that job; garbage is
    // InvalidArgument.
    let all = s.q.list(&ListQuery {
        tag: Some("batch-1".into()),
        ..ListQuery::default()
    });
    let all = all.unwrap().jobs;
    let q = ListQuery {
        tag: Some("batch-1".into()),
        after: Some(all[9].cursor.clone()),
        ..ListQuery::default()
    };
    let rest: Vec<JobId> = s.q.list(&q).unwrap().jobs.iter().map(|j| j.id).collect();
    let want: Vec<JobId> = all[10..].iter().map(|j| j.id).collect();
    assert_eq!(rest, want);
    for bad in ["00".repeat(42), "zz".into(), "00".repeat(5)] {
        let q = ListQuery {
            tag: Some("batch-1".into()),
            after: Some(bad),
            ..ListQuery::default()
        };
        expect_err(s.q.list(&q), ErrorKind::InvalidArgument);
    }
}

#[test]
fn bad_tags_and_metadata_are_invalid_argument_naming_the_limit_and_write_nothing() {
    let s = TestStore::new();
    let seventeen: Vec<String> = (0..17).map(|i| format!("t{i}")).collect();
    let cases: Vec<(EnqueueOptions, &str)> = vec![
        (
            EnqueueOptions {
                tags: seventeen,
                ..EnqueueOptions::default()
            },
            "at most 16 tags",
        ),
        (
            EnqueueOptions::default().tag("x".repeat(65)),
            "1 to 64 bytes",
        ),
        (EnqueueOptions::default().tag(""), "1 to 64 bytes"),
        (
            EnqueueOptions::default().tag("a\u{7}b"),
            "control character",
        ),
        (
            EnqueueOptions::default().meta("k", "v".repeat(5 * 1024)),
            "limit of 4096 bytes",
        ),
        (EnqueueOptions::default().meta("", "v"), "metadata key"),
    ];
    for (o, needle) in cases {
        let e = expect_err(
            s.q.enqueue("embed", b"x", o.clone()),
            ErrorKind::InvalidArgument,
        );
        assert!(e.to_string().contains(needle), "{e}");
        // In a batch with good jobs: nothing of the batch is written.
        let jobs = vec![
            NewJob::new("embed", b"x".to_vec()).with(tagged(&["ok"])),
            NewJob::new("embed", b"x".to_vec()).with(o),
        ];
        expect_err(s.q.enqueue_many(jobs), ErrorKind::InvalidArgument);
    }
    assert_eq!(s.q.stats().unwrap().total.total(), 0);
    assert_eq!(count(&s, "ok"), StateCounts::default());
    expect_err(s.q.count_tag("a\nb", None), ErrorKind::InvalidArgument);
    let q = ListQuery {
        tag: Some("x".repeat(65)),
        ..ListQuery::default()
    };
    expect_err(s.q.list(&q), ErrorKind::InvalidArgument);
    assert_consistent(&s.q);
}

#[test]
fn check_finds_a_missing_and_an_extra_tag_index_row() {
    let mut s = TestStore::new();
    let id = s.enqueue_with("embed", tagged(&["gone", "kept"]));
    assert_consistent(&s.q);
    s.q.close();
    let scope0 = Scope::SYSTEM;
    {
        let db = raw_db(s.path());
        let meta = db.cf_handle("meta").unwrap();
        let row = |t: &str| telha_jobs::store::keys::tag_key(t, &scope0, &id);
        db.delete_cf(meta, row("gone")).unwrap();
        db.put_cf(meta, row("extra"), b"").unwrap();
    }
    s.reopen();
    let problems = s.q.check().unwrap().problems;
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems
            .iter()
            .any(|p| p.contains("missing from the tag index") && p.contains("gone")),
        "{problems:#?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("tag index row \"extra\" names job")),
        "{problems:#?}"
    );
    // `list` never answers a job under a tag its record does not carry.
    let q = ListQuery {
        tag: Some("extra".into()),
        ..ListQuery::default()
    };
    let page = s.q.list(&q).unwrap();
    assert!(page.jobs.is_empty());
    assert_eq!(page.corrupt.len(), 1);
}

#[test]
fn a_row_naming_no_job_is_reported_by_list_and_check_and_not_counted() {
    // What an older build leaves when it prunes or deletes a tagged job
    // (it knows no tag index).
    let mut s = TestStore::new();
    let id = s.enqueue_with("embed", tagged(&["order-4711"]));
    s.q.close();
    let ghost = JobId::from_bytes([7; 16]);
    {
        let db = raw_db(s.path());
        let meta = db.cf_handle("meta").unwrap();
        let k = telha_jobs::store::keys::tag_key("order-4711", &Scope::SYSTEM, &ghost);
        db.put_cf(meta, k, b"").unwrap();
    }
    s.reopen();
    assert_eq!(count(&s, "order-4711").total(), 1);
    let q = ListQuery {
        tag: Some("order-4711".into()),
        ..ListQuery::default()
    };
    let page = s.q.list(&q).unwrap();
    assert_eq!(page.jobs.iter().map(|j| j.id).collect::<Vec<_>>(), [id]);
    assert_eq!(page.corrupt.len(), 1);
    assert!(
        page.corrupt[0].error.contains("which is not there"),
        "{:?}",
        page.corrupt
    );
    let problems = s.q.check().unwrap().problems;
    assert_eq!(problems.len(), 1, "{problems:#?}");
}

#[test]
fn the_open_rebuilds_an_index_of_slice_1s_layout() {
    // Slice 1 keyed rows `tag scope state id` and wrote no layout marker:
    // the open deletes those rows and writes this layout's from the jobs.
    let mut s = TestStore::new();
    let a = s.enqueue_with("embed", tagged(&["order-4711", "upload-9"]));
    let b = s.enqueue_with("embed", tagged(&["order-4711"]));
    let j = s.must_lease("w");
    s.q.complete(&j.token(), None).unwrap();
    s.q.close();
    {
        let db = raw_db(s.path());
        let meta = db.cf_handle("meta").unwrap();
        let mut rows = Vec::new();
        let it = db.prefix_iterator_cf(meta, b"tag/");
        for kv in it {
            let (k, _) = kv.unwrap();
            if !k.starts_with(b"tag/") {
                break;
            }
            rows.push(k.to_vec());
        }
        assert_eq!(rows.len(), 3);
        for k in rows {
            db.delete_cf(meta, &k).unwrap();
            // The same row with a state byte before the id, as slice 1 wrote.
            let (head, id) = k.split_at(k.len() - 16);
            let state = if id == a.as_bytes() {
                State::Completed
            } else {
                State::Pending
            };
            let mut old = head.to_vec();
            old.push(state.byte());
            old.extend_from_slice(id);
            db.put_cf(meta, old, b"").unwrap();
        }
        db.delete_cf(meta, b"tag-layout").unwrap();
    }
    s.reopen();
    assert_consistent(&s.q);
    let c = count(&s, "order-4711");
    assert_eq!((c.completed, c.pending), (1, 1));
    assert_eq!(ids_tagged(&s, "upload-9", None), [a]);
    assert_eq!(ids_tagged(&s, "order-4711", Some(State::Pending)), [b]);
}

#[test]
fn cancel_many_by_tag_walks_the_index_in_pages_and_touches_nothing_else() {
    let s = TestStore::new();
    // 2,500 jobs of the tag (three pages of 1,000), 300 of another.
    let batch = |tag: &str, n: usize| {
        (0..n)
            .map(|_| NewJob::new("embed", b"x".to_vec()).with(tagged(&[tag])))
            .collect::<Vec<_>>()
    };
    s.q.enqueue_many(batch("upload-7", 2500)).unwrap();
    s.q.enqueue_many(batch("upload-8", 300)).unwrap();
    let held = s.must_lease("w");
    assert!(held.tags.contains(&"upload-7".to_string()));
    let f = |tag: &str| CancelFilter {
        tag: Some(tag.into()),
        reason: "the upload failed".into(),
        ..CancelFilter::default()
    };
    let r = s.q.cancel_many(&f("upload-7")).unwrap();
    assert_eq!((r.cancelled, r.requested, r.corrupt), (2499, 1, 0));
    let c = count(&s, "upload-7");
    assert_eq!((c.cancelled, c.leased), (2499, 1));
    assert_eq!(count(&s, "upload-8").pending, 300);
    assert_eq!(
        s.get(&held.id).cancel_requested.as_deref(),
        Some("the upload failed")
    );
    // Again: only the request on the leased one is answered.
    let r = s.q.cancel_many(&f("upload-7")).unwrap();
    assert_eq!((r.cancelled, r.requested), (0, 1));
    // A bad tag: InvalidArgument, nothing changed.
    expect_err(s.q.cancel_many(&f("a\nb")), ErrorKind::InvalidArgument);
    assert_eq!(count(&s, "upload-8").pending, 300);
    assert_consistent(&s.q);
}

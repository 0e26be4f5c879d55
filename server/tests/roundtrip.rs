//! Every RPC through `RemoteQueue` against an in-process server, answers
//! compared with the embedded queue's.

mod common;

use std::time::{Duration, Instant};

use telha_jobs::{
    payload, CancelWait, Completion, Encoding, EnqueueOptions, ErrorKind, JobStore, KindConfig,
    LeaseOptions, ListQuery, NewJob, Scope, State,
};
use telha_jobs_server::ServeOptions;

#[test]
fn every_rpc_round_trips_through_remote_queue() {
    let s = common::served();
    let c = s.client();
    let scope = Scope::from_bytes([9; 16]);

    // Enqueue (single, with options) and EnqueueMany.
    let e = c
        .enqueue(
            "embed",
            b"one",
            EnqueueOptions::default()
                .scope(scope)
                .priority(3)
                .idempotency_key("k1")
                .max_attempts(2),
        )
        .unwrap();
    assert!(e.created);
    let again = c
        .enqueue(
            "embed",
            b"dup",
            EnqueueOptions::default().scope(scope).idempotency_key("k1"),
        )
        .unwrap();
    assert_eq!(again.id, e.id);
    assert!(!again.created);
    let many = c
        .enqueue_many((0..5).map(|i| NewJob::new("ingest:pdf", vec![i])).collect())
        .unwrap();
    assert_eq!(many.len(), 5);
    assert!(many.iter().all(|m| m.created));

    // Get sees what the embedded queue sees.
    let info = c.get(&e.id).unwrap().unwrap();
    assert_eq!(info, s.queue.get(&e.id).unwrap().unwrap());
    assert_eq!(info.scope, scope);
    assert_eq!(info.priority, 3);
    assert_eq!(info.max_attempts, 2);
    assert_eq!(info.payload, b"one");

    // Lease with a filter, Heartbeat, Submit (complete).
    let opts = LeaseOptions::default().scope(scope).kind("embed").unwrap();
    let job = c.lease_next("w1", &opts).unwrap().unwrap();
    assert_eq!(job.id, e.id);
    assert_eq!(job.worker_id, "w1");
    let hb = c.extend(&[job.token()], "w1").unwrap();
    assert!(*hb[0].as_ref().unwrap() >= job.deadline);
    c.complete(&job.token(), Some(b"done")).unwrap();
    let done = c.get(&e.id).unwrap().unwrap();
    assert_eq!(done.state, State::Completed);
    assert_eq!(done.result.as_deref(), Some(&b"done"[..]));

    // Lease many by family, Release one, Fail one (not retryable → dead),
    // complete_many the rest.
    let fam = LeaseOptions::default().kind("ingest:*").unwrap();
    let jobs = c.lease_many("w2", 10, &fam).unwrap();
    assert_eq!(jobs.len(), 5);
    c.release(&jobs[0].token()).unwrap();
    c.fail(&jobs[1].token(), "broken", false).unwrap();
    let rest: Vec<_> = jobs[2..]
        .iter()
        .map(|j| (j.token(), Some(b"r".to_vec())))
        .collect();
    let answers = c
        .complete_many(rest.into_iter().map(Into::into).collect())
        .unwrap();
    assert!(answers.iter().all(|a| a.is_ok()), "{answers:?}");
    let dead = c.get(&jobs[1].id).unwrap().unwrap();
    assert_eq!(dead.state, State::Dead);
    assert_eq!(dead.last_error.as_deref(), Some("broken"));

    // Retry the dead job; List by state; Stats; Metrics.
    c.retry(&jobs[1].id).unwrap();
    assert_eq!(c.get(&jobs[1].id).unwrap().unwrap().state, State::Pending);
    let page = c
        .list(&ListQuery {
            state: Some(State::Pending),
            ..ListQuery::default()
        })
        .unwrap();
    assert_eq!(
        page,
        s.queue
            .list(&ListQuery {
                state: Some(State::Pending),
                ..ListQuery::default()
            })
            .unwrap()
    );
    assert_eq!(page.jobs.len(), 2);
    let stats = c.stats().unwrap();
    assert_eq!(stats, s.queue.stats().unwrap());
    assert_eq!(stats.total.completed, 4);
    let m = c.metrics().unwrap();
    assert!(m.contains("telha_server_rpcs_total"), "{m}");

    // Reap and Purge.
    let rep = c.reap().unwrap();
    assert_eq!(rep.expired, 0);
    let purged = c.purge(State::Completed, u64::MAX).unwrap();
    assert_eq!(purged.purged, 4);
    assert_eq!(c.stats().unwrap().total.completed, 0);

    // PollJobs: the two pending jobs arrive on the stream.
    let mut stream = c.poll_jobs("w3", &LeaseOptions::default(), 10).unwrap();
    let mut got = Vec::new();
    while got.len() < 2 {
        let batch = stream
            .next_batch(Some(Duration::from_secs(10)))
            .unwrap()
            .unwrap();
        assert!(!batch.is_empty(), "no lease pushed within 10 s");
        got.extend(batch);
    }
    for j in &got {
        c.complete(&j.token(), None).unwrap();
    }
    drop(stream);

    assert_eq!(c.location().unwrap(), s.url);
    c.close();
    assert!(c.is_closed());
    assert_eq!(c.stats().unwrap_err().kind(), ErrorKind::Closed);
    // Closing the client leaves the store open.
    assert!(!s.queue.is_closed());
}

#[test]
fn a_stale_submit_is_aborted_and_changes_nothing() {
    let s = common::served();
    let c = s.client();
    let id = c
        .enqueue("embed", b"x", EnqueueOptions::default())
        .unwrap()
        .id;
    let first = c
        .lease_next("w1", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    c.release(&first.token()).unwrap();
    let second = c
        .lease_next("w2", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    assert!(second.generation > first.generation);
    let before = c.get(&id).unwrap().unwrap();
    for e in [
        c.complete(&first.token(), Some(b"late")).unwrap_err(),
        c.fail(&first.token(), "late", true).unwrap_err(),
        c.release(&first.token()).unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::Aborted, "{e}");
    }
    let hb = c.extend(&[first.token()], "w1").unwrap();
    assert_eq!(hb[0].as_ref().unwrap_err().kind(), ErrorKind::Aborted);
    let batch = c.complete_many(vec![(first.token(), None).into()]).unwrap();
    assert_eq!(batch[0].as_ref().unwrap_err().kind(), ErrorKind::Aborted);
    let after = c.get(&id).unwrap().unwrap();
    assert_eq!(after.state, State::Leased);
    assert_eq!(after.generation, before.generation);
    assert_eq!(after.result, None);
    assert_eq!(after.worker_id.as_deref(), Some("w2"));
    c.complete(&second.token(), None).unwrap();
}

#[test]
fn error_kinds_map_back_exactly_with_the_servers_message() {
    let s = common::served();
    let c = s.client();
    // InvalidArgument: the core's own message.
    let e = c
        .enqueue("Bad Kind", b"", EnqueueOptions::default())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("Bad Kind"), "{e}");
    let e = c
        .enqueue("k", &[0u8; 5000], EnqueueOptions::default())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    // NotFound.
    let ghost = "0190a5a0-0000-7000-8000-000000000000".parse().unwrap();
    assert_eq!(c.retry(&ghost).unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(c.get(&ghost).unwrap(), None);
    // Bounds are the core's, with the core's words: the same as embedded.
    let remote = c.lease_many("w", 0, &LeaseOptions::default()).unwrap_err();
    let local = s
        .queue
        .lease_many("w", 0, &LeaseOptions::default())
        .unwrap_err();
    assert_eq!(remote.to_string(), local.to_string());
    let long = "w".repeat(telha_jobs::limits::MAX_WORKER_ID_LEN + 1);
    let remote = c.lease_next(&long, &LeaseOptions::default()).unwrap_err();
    let local = s
        .queue
        .lease_next(&long, &LeaseOptions::default())
        .unwrap_err();
    assert_eq!(remote.to_string(), local.to_string());
    let far = EnqueueOptions::default().run_at(telha_jobs::limits::MAX_INSTANT_MS + 1);
    let e = c.enqueue("embed", b"", far).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("run_at"), "{e}");
    // Aborted: above. The store closed under the server: the server is
    // closing, which its callers may retry (a restart answers).
    // The client retries that within its deadline (a restarted server would
    // answer), so ask through one with a short one.
    s.queue.close();
    let short = telha_jobs_client::RemoteQueue::connect(
        &s.url,
        telha_jobs_client::ConnectOptions::default().with_timeout(Duration::from_secs(1)),
    )
    .unwrap();
    // Its message is the last attempt's: "closing", or the deadline's.
    let e = short.stats().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    // Unavailable (retryable): nobody listening.
    let gone = telha_jobs_client::RemoteQueue::connect(
        "http://127.0.0.1:1",
        telha_jobs_client::ConnectOptions::default(),
    )
    .unwrap_err();
    assert_eq!(gone.kind(), ErrorKind::Unavailable);
    assert!(gone.kind().is_retryable());
    assert!(gone.to_string().contains("http://127.0.0.1:1"), "{gone}");
    // InvalidArgument: a bad URL.
    for bad in ["not a url", "ftp://127.0.0.1:7450", ""] {
        let e = telha_jobs_client::RemoteQueue::connect(bad, Default::default()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}: {e}");
    }
}

#[test]
fn a_waiting_lease_is_woken_by_enqueue_and_ended_by_cancel() {
    let s = common::served();
    let c = s.client();
    // Woken by an enqueue from another client.
    let c2 = s.client();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        c2.enqueue("embed", b"x", EnqueueOptions::default())
            .unwrap();
    });
    let start = Instant::now();
    let job = c
        .lease_next("w", &LeaseOptions::default().wait(Duration::from_secs(30)))
        .unwrap();
    assert!(job.is_some());
    assert!(start.elapsed() < Duration::from_secs(20));
    t.join().unwrap();
    // Ended by a CancelWait from another thread, promptly.
    let cancel = CancelWait::new();
    let c3 = cancel.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        c3.cancel();
    });
    let start = Instant::now();
    let none = c
        .lease_many(
            "w",
            1,
            &LeaseOptions::default()
                .wait(Duration::from_secs(30))
                .cancel(cancel),
        )
        .unwrap();
    assert!(none.is_empty());
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    t.join().unwrap();
    // The server's side of the abandoned wait ended too: a job enqueued
    // afterwards is never leased by it.
    std::thread::sleep(Duration::from_millis(300));
    let id = c
        .enqueue("embed", b"y", EnqueueOptions::default())
        .unwrap()
        .id;
    std::thread::sleep(Duration::from_millis(300));
    let info = c.get(&id).unwrap().unwrap();
    assert_eq!(info.state, State::Pending);
    assert_eq!(info.generation, 0, "the cancelled wait leased it");
}

#[test]
fn calling_from_inside_a_tokio_runtime_is_a_typed_error_not_a_panic() {
    let s = common::served();
    let c = s.client();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let e = rt.block_on(async { c.stats() }).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("spawn_blocking"), "{e}");
}

#[test]
fn poll_jobs_holds_at_most_capacity_unsettled_and_ends_on_shutdown() {
    let mut s = common::served();
    let c = s.client();
    c.enqueue_many((0..5).map(|i| NewJob::new("embed", vec![i])).collect())
        .unwrap();
    let mut stream = c.poll_jobs("w", &LeaseOptions::default(), 2).unwrap();
    let mut held = Vec::new();
    while held.len() < 2 {
        let b = stream
            .next_batch(Some(Duration::from_secs(10)))
            .unwrap()
            .unwrap();
        assert!(!b.is_empty(), "no lease pushed within 10 s");
        held.extend(b);
    }
    assert_eq!(held.len(), 2);
    // At capacity: nothing more is pushed while both are unsettled.
    let more = stream
        .next_batch(Some(Duration::from_millis(500)))
        .unwrap()
        .unwrap();
    assert!(more.is_empty(), "pushed past capacity: {more:?}");
    assert_eq!(s.queue.stats().unwrap().total.leased, 2);
    // Settling one (complete) and losing one (released) frees two slots.
    c.complete(&held[0].token(), None).unwrap();
    c.release(&held[1].token()).unwrap();
    let mut next = Vec::new();
    while next.len() < 2 {
        let b = stream
            .next_batch(Some(Duration::from_secs(10)))
            .unwrap()
            .unwrap();
        assert!(!b.is_empty(), "a freed slot was not refilled within 10 s");
        next.extend(b);
    }
    assert_eq!(next.len(), 2);
    let server = s.server.as_ref().unwrap();
    assert_eq!(server.stats().open_streams(), 1);
    assert_eq!(server.stats().rpcs("PollJobs", "OK"), 1);

    // Shutdown ends the stream promptly (no more batches, not an error);
    // the leases it had delivered stay leased until settled or reaped.
    let start = Instant::now();
    s.server.take().unwrap().shutdown(Duration::from_secs(5));
    assert!(start.elapsed() < Duration::from_secs(10));
    let end = stream.next_batch(Some(Duration::from_secs(10)));
    assert!(matches!(end, Ok(None) | Err(_)), "{end:?}");
    assert_eq!(s.queue.stats().unwrap().total.leased, 2);
    assert_eq!(s.queue.stats().unwrap().total.completed, 1);
}

#[test]
fn a_dropped_stream_is_closed_on_the_server() {
    let s = common::served();
    let c = s.client();
    let stream = c.poll_jobs("w", &LeaseOptions::default(), 4).unwrap();
    let server = s.server.as_ref().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.stats().open_streams() != 1 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(stream);
    while server.stats().open_streams() != 0 {
        assert!(
            Instant::now() < deadline,
            "the server kept the dropped stream open"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Nothing was leased for it afterwards.
    c.enqueue("embed", b"x", EnqueueOptions::default()).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(s.queue.stats().unwrap().total.pending, 1);
}

#[test]
fn serve_refuses_a_non_loopback_listener_without_a_token_and_bad_tls() {
    use telha_jobs_server::{serve, ServeOptions, TlsPem};
    let dir = tempfile::tempdir().unwrap();
    let q = telha_jobs::Queue::open(dir.path(), common::config()).unwrap();
    let e = serve(
        q.clone(),
        ServeOptions {
            listen: "0.0.0.0:0".into(),
            ..ServeOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("without a token"), "{e}");
    for (listen, token) in [("not an address", None), ("127.0.0.1:0", Some(" "))] {
        let e = serve(
            q.clone(),
            ServeOptions {
                listen: listen.into(),
                token: token.map(String::from),
                ..ServeOptions::default()
            },
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{listen}: {e}");
    }
    let e = serve(
        q.clone(),
        ServeOptions {
            listen: "127.0.0.1:0".into(),
            tls: Some(TlsPem {
                cert_pem: b"not a certificate".to_vec(),
                key_pem: b"not a key".to_vec(),
            }),
            ..ServeOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    // With a token, a non-loopback listener starts.
    let h = serve(
        q.clone(),
        ServeOptions {
            listen: "0.0.0.0:0".into(),
            token: Some("t".into()),
            ..ServeOptions::default()
        },
    )
    .unwrap();
    assert!(h.local_addr().unwrap().ip().is_unspecified());
    h.shutdown(Duration::from_secs(1));
    // A closed queue cannot be served.
    q.close();
    let e = serve(q, ServeOptions::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Closed);
}

#[test]
fn encodings_lease_ttls_and_cursors_survive_the_round_trip() {
    let mut config = common::config();
    config.lease_ttl = Duration::from_secs(45);
    config.kinds.insert(
        "ingest:pdf".into(),
        KindConfig {
            lease_ttl: Some(Duration::from_secs(90)),
            ..KindConfig::default()
        },
    );
    let s = common::served_with(config, ServeOptions::default());
    let c = s.client();
    // Bytes that look like the convention, recorded as bytes; a value.
    let looks = [0x01u8, 0x91, 0x01];
    let a = c
        .enqueue(
            "embed",
            &looks,
            EnqueueOptions::default().encoding(Encoding::Bytes),
        )
        .unwrap();
    let v = payload::encode(&payload::Value::from("doc")).unwrap();
    let many = c
        .enqueue_many(vec![NewJob::new("ingest:pdf", v.clone())
            .with(EnqueueOptions::default().encoding(Encoding::Value))])
        .unwrap();
    let b = many[0];

    // Lease (unary): the granted TTL and the payload's encoding.
    let embed = LeaseOptions::default().kind("embed").unwrap();
    let ja = c.lease_next("w1", &embed).unwrap().unwrap();
    assert_eq!(ja.id, a.id);
    assert_eq!(ja.lease_ttl_ms, 45_000);
    assert_eq!(ja.payload_encoding, Encoding::Bytes);
    assert_eq!(ja.payload, looks);
    // PollJobs: the kind's TTL.
    let pdf = LeaseOptions::default().kind("ingest:pdf").unwrap();
    let mut stream = c.poll_jobs("w2", &pdf, 1).unwrap();
    let jb = stream
        .next_batch(Some(Duration::from_secs(10)))
        .unwrap()
        .unwrap()
        .pop()
        .expect("a lease pushed within 10 s");
    assert_eq!(jb.id, b.id);
    assert_eq!(jb.lease_ttl_ms, 90_000);
    assert_eq!(jb.payload_encoding, Encoding::Value);
    drop(stream);

    // Submit and SubmitMany carry the result's encoding.
    c.complete_with(Completion {
        token: ja.token(),
        result: Some(v.clone()),
        encoding: Encoding::Bytes,
        then: Vec::new(),
    })
    .unwrap();
    let answers = c
        .complete_many(vec![Completion {
            token: jb.token(),
            result: Some(v.clone()),
            encoding: Encoding::Value,
            then: Vec::new(),
        }])
        .unwrap();
    assert!(answers[0].is_ok(), "{answers:?}");
    // Get: every field as the embedded queue has it.
    let ia = c.get(&a.id).unwrap().unwrap();
    assert_eq!(ia, s.queue.get(&a.id).unwrap().unwrap());
    assert_eq!(ia.payload_encoding, Encoding::Bytes);
    assert_eq!(ia.result_encoding, Encoding::Bytes);
    let ib = c.get(&b.id).unwrap().unwrap();
    assert_eq!(ib.payload_encoding, Encoding::Value);
    assert_eq!(ib.result_encoding, Encoding::Value);

    // A job's cursor lists what comes after it, remote as embedded.
    let all = c.list(&ListQuery::default()).unwrap();
    assert_eq!(all.jobs.len(), 2);
    assert!(!all.jobs[0].cursor.is_empty());
    let after = ListQuery {
        after: Some(all.jobs[0].cursor.clone()),
        ..ListQuery::default()
    };
    let rest = c.list(&after).unwrap();
    assert_eq!(rest, s.queue.list(&after).unwrap());
    assert_eq!(rest.jobs.len(), 1);
    assert_eq!(rest.jobs[0].id, all.jobs[1].id);
}

#[test]
fn a_lease_wait_too_long_to_represent_is_no_panic() {
    let s = common::served();
    let c = s.client();
    c.enqueue("embed", b"", EnqueueOptions::default()).unwrap();
    // The client adds the wait to its call deadline: Duration::MAX must
    // not overflow it (the server caps the wait anyway).
    let forever = LeaseOptions::default().wait(Duration::MAX);
    let j = c.lease_next("w", &forever).unwrap().expect("the ready job");
    c.complete(&j.token(), None).unwrap();
    let cancel = CancelWait::new();
    cancel.cancel();
    let none = c.lease_next("w", &forever.cancel(cancel)).unwrap();
    assert!(none.is_none());
}

#[test]
fn follow_up_jobs_travel_with_complete_and_complete_many() {
    let s = common::served();
    let c = s.client();
    for k in ["a", "b"] {
        c.enqueue(k, b"p", EnqueueOptions::default()).unwrap();
    }
    let opts = LeaseOptions::default();
    let ja = c.lease_next("w", &opts).unwrap().unwrap();
    let jb = c.lease_next("w", &opts).unwrap().unwrap();
    c.complete_with(
        Completion::new(ja.token(), None)
            .then(vec![telha_jobs::NewJob::new("child", b"of a".to_vec())]),
    )
    .unwrap();
    let answers = c
        .complete_many(vec![Completion::new(jb.token(), None)
            .then(vec![telha_jobs::NewJob::new("child", b"of b".to_vec())])])
        .unwrap();
    assert!(answers[0].is_ok(), "{answers:?}");
    for (parent, payload) in [(ja.id, &b"of a"[..]), (jb.id, &b"of b"[..])] {
        let kids = c
            .list(&ListQuery {
                parent: Some(parent),
                ..ListQuery::default()
            })
            .unwrap()
            .jobs;
        assert_eq!(kids.len(), 1);
        assert_eq!(
            (kids[0].parent, &kids[0].payload[..]),
            (Some(parent), payload)
        );
    }
    // The leased child says who its parent is, over the wire too.
    let child = c.lease_next("w", &opts).unwrap().unwrap();
    assert!(child.parent == Some(ja.id) || child.parent == Some(jb.id));
    // A bad follow-up refuses the completion: nothing changes.
    let jc = {
        c.enqueue("c", b"p", EnqueueOptions::default()).unwrap();
        c.lease_next("w", &LeaseOptions::default().kind("c").unwrap())
            .unwrap()
            .unwrap()
    };
    let bad = Completion::new(jc.token(), None)
        .then(vec![telha_jobs::NewJob::new("NOT A KIND", b"".to_vec())]);
    let e = c.complete_with(bad).unwrap_err();
    assert_eq!(e.kind(), telha_jobs::ErrorKind::InvalidArgument);
    assert_eq!(
        c.get(&jc.id).unwrap().unwrap().state,
        telha_jobs::State::Leased
    );
}

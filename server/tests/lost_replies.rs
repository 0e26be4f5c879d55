//! Issue 36 (d, e): a client that loses a reply, or meets a server that is
//! not the one to ask, repeats the call and gets the answer the first
//! attempt earned: no duplicate job, no spurious `Aborted`, a clean
//! `check()`. The faults come from the server's test hooks (feature
//! `test-hooks`): the handler runs, then its reply is dropped (the HTTP/2
//! stream is reset), and a stub answers `Unavailable` with a leader hint.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use telha_jobs::{
    Completion, EnqueueOptions, ErrorKind, JobStore, LeaseOptions, ListQuery, NewJob, State,
};
use telha_jobs_client::{ConnectOptions, RemoteQueue, RetryReason};
use telha_jobs_server::testing::{serve_hooked, Hooks, UnavailableStub};
use telha_jobs_server::{serve, ServeOptions, ServerHandle};

/// The kind a call that gave up answers (retryable, its outcome unknown).
const GAVE_UP: ErrorKind = ErrorKind::Unavailable;
const SLACK: Duration = Duration::from_secs(2);

struct Hooked {
    served: common::Served,
    hooks: Arc<Hooks>,
}

fn hooked() -> Hooked {
    let dir = tempfile::tempdir().unwrap();
    let queue = telha_jobs::Queue::open(dir.path(), common::config()).unwrap();
    let hooks = Hooks::new();
    let server = serve_hooked(queue.clone(), local(), hooks.clone()).unwrap();
    let url = server.url();
    Hooked {
        served: common::Served {
            queue,
            server: Some(server),
            url,
            dir,
        },
        hooks,
    }
}

fn local() -> ServeOptions {
    ServeOptions {
        listen: "127.0.0.1:0".into(),
        ..ServeOptions::default()
    }
}

impl Hooked {
    fn client(&self) -> RemoteQueue {
        self.served.client()
    }

    /// The store has `n` jobs and `check()` finds nothing wrong.
    fn assert_clean(&self, n: usize) {
        let page = self.served.queue.list(&ListQuery::default()).unwrap();
        assert_eq!(page.jobs.len(), n, "{:?}", page.jobs);
        let report = self.served.queue.check().unwrap();
        assert!(report.problems.is_empty(), "{:?}", report.problems);
    }
}

fn lease(c: &RemoteQueue) -> telha_jobs::Job {
    c.lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap()
}

#[test]
fn a_keyed_enqueue_whose_reply_is_lost_is_repeated_into_the_same_job() {
    let h = hooked();
    let c = h.client();
    h.hooks.drop_replies("Enqueue", 1);
    let keyed = EnqueueOptions {
        idempotency_key: Some("order-7".into()),
        ..EnqueueOptions::default()
    };
    let first = c.enqueue("embed", b"p", keyed.clone()).unwrap();
    assert_eq!(h.hooks.dropped(), 1);
    assert_eq!(c.retries(RetryReason::Transport), 1);
    let again = c.enqueue("embed", b"p", keyed).unwrap();
    assert_eq!(again.id, first.id);
    h.assert_clean(1);
}

#[test]
fn an_unkeyed_enqueue_to_one_server_is_not_repeated_after_a_lost_reply() {
    let h = hooked();
    let c = h.client();
    h.hooks.drop_replies("Enqueue", 1);
    let e = c
        .enqueue("embed", b"p", EnqueueOptions::default())
        .unwrap_err();
    assert_eq!(e.kind(), GAVE_UP, "{e}");
    assert!(e.to_string().contains("idempotency key"), "{e}");
    assert_eq!(c.retries(RetryReason::Transport), 0);
    // It took effect once: the caller was told it may have.
    h.assert_clean(1);
}

#[test]
fn a_complete_whose_reply_is_lost_answers_success_from_the_record() {
    let h = hooked();
    let c = h.client();
    let id = c
        .enqueue("embed", b"p", EnqueueOptions::default())
        .unwrap()
        .id;
    let job = lease(&c);
    h.hooks.drop_replies("Submit", 1);
    c.complete_with(
        Completion::new(job.token(), Some(b"done".to_vec()))
            .then(vec![NewJob::new("child", b"c".to_vec())]),
    )
    .unwrap();
    assert_eq!(h.hooks.dropped(), 1);
    assert_eq!(c.retries(RetryReason::Transport), 1);
    let info = c.get(&id).unwrap().unwrap();
    assert_eq!(info.state, State::Completed);
    assert_eq!(info.result.as_deref(), Some(&b"done"[..]));
    // The follow-up was staged once, by the first attempt.
    h.assert_clean(2);
}

#[test]
fn a_complete_many_whose_reply_is_lost_answers_every_item_as_the_first_did() {
    let h = hooked();
    let c = h.client();
    for _ in 0..3 {
        c.enqueue("embed", b"p", EnqueueOptions::default()).unwrap();
    }
    let jobs: Vec<_> = (0..3).map(|_| lease(&c)).collect();
    h.hooks.drop_replies("SubmitMany", 1);
    let items = jobs
        .iter()
        .map(|j| {
            Completion::new(j.token(), Some(b"r".to_vec()))
                .then(vec![NewJob::new("child", b"c".to_vec())])
        })
        .collect();
    let answers = c.complete_many(items).unwrap();
    assert_eq!(h.hooks.dropped(), 1);
    assert!(answers.iter().all(Result::is_ok), "{answers:?}");
    for j in &jobs {
        assert_eq!(c.get(&j.id).unwrap().unwrap().state, State::Completed);
    }
    h.assert_clean(6);
}

#[test]
fn a_fail_whose_reply_is_lost_answers_success_and_fails_once() {
    let h = hooked();
    let c = h.client();
    let id = c
        .enqueue("embed", b"p", EnqueueOptions::default())
        .unwrap()
        .id;
    let job = lease(&c);
    h.hooks.drop_replies("Submit", 1);
    c.fail(&job.token(), "broken", false).unwrap();
    assert_eq!(h.hooks.dropped(), 1);
    let info = c.get(&id).unwrap().unwrap();
    assert_eq!(info.state, State::Dead);
    assert_eq!(info.attempts, 1);
    h.assert_clean(1);
}

#[test]
fn a_release_and_a_snooze_whose_replies_are_lost_answer_success() {
    let h = hooked();
    let c = h.client();
    let id = c
        .enqueue("embed", b"p", EnqueueOptions::default())
        .unwrap()
        .id;
    let job = lease(&c);
    h.hooks.drop_replies("Release", 1);
    c.release(&job.token()).unwrap();
    assert_eq!(c.get(&id).unwrap().unwrap().state, State::Pending);
    let job = lease(&c);
    h.hooks.drop_replies("Release", 1);
    c.snooze(&job.token(), Duration::from_secs(3600)).unwrap();
    assert_eq!(h.hooks.dropped(), 2);
    assert_eq!(c.retries(RetryReason::Transport), 2);
    let info = c.get(&id).unwrap().unwrap();
    assert_eq!(info.state, State::Pending);
    // Snoozed: not ready now.
    assert!(c
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .is_none());
    h.assert_clean(1);
}

#[test]
fn a_lease_whose_reply_is_lost_is_repeated_and_the_orphan_lease_expires() {
    let h = hooked();
    let c = h.client();
    for _ in 0..2 {
        c.enqueue("embed", b"p", EnqueueOptions::default()).unwrap();
    }
    h.hooks.drop_replies("Lease", 1);
    let got = lease(&c);
    assert_eq!(h.hooks.dropped(), 1);
    // The first attempt leased the other job, whose reply was lost: it is
    // leased (to expire), not lost.
    let page = h.served.queue.list(&ListQuery::default()).unwrap();
    assert!(
        page.jobs.iter().all(|j| j.state == State::Leased),
        "{page:?}"
    );
    c.complete(&got.token(), None).unwrap();
    h.assert_clean(2);
}

#[test]
fn a_server_that_is_not_the_leader_hints_and_the_client_follows() {
    let h = hooked();
    let stub = UnavailableStub::start(Some(&h.served.url)).unwrap();
    let c = RemoteQueue::connect(stub.url(), ConnectOptions::default()).unwrap();
    let id = c
        .enqueue(
            "embed",
            b"p",
            EnqueueOptions {
                idempotency_key: Some("k".into()),
                ..EnqueueOptions::default()
            },
        )
        .unwrap()
        .id;
    assert_eq!(c.retries(RetryReason::LeaderHint), 1);
    assert_eq!(c.url(), h.served.url);
    assert!(stub.calls() >= 2, "the probe and the enqueue");
    assert!(h.served.queue.get(&id).unwrap().is_some());
    let text = c.metrics().unwrap();
    assert!(
        text.contains("telha_client_retries_total{reason=\"leader_hint\"} 1"),
        "{text}"
    );
    h.assert_clean(1);
}

#[test]
fn bad_endpoint_lists_are_invalid_arguments_naming_the_item() {
    let h = hooked();
    let u = &h.served.url;
    let many: Vec<String> = (0..1000)
        .map(|i| format!("http://127.0.0.1:{}", 20000 + i))
        .collect();
    for (list, says) in [
        (format!("{u},,{u}"), "item 2 is empty".to_string()),
        (format!("{u},ftp://127.0.0.1:1"), "ftp://127.0.0.1:1".into()),
        (format!("{u}, {u}/"), "repeats item 1".into()),
        (many.join(","), "1000 server URLs".into()),
    ] {
        let e = RemoteQueue::connect(&list, ConnectOptions::default()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.to_string().contains(&says), "{e}");
    }
}

/// Two addresses where nothing listens (bound, then closed).
fn dead_urls() -> String {
    let a = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let b = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let urls = format!(
        "http://{},http://{}",
        a.local_addr().unwrap(),
        b.local_addr().unwrap()
    );
    drop((a, b));
    urls
}

#[test]
fn an_unreachable_list_fails_unavailable_by_the_deadline() {
    let timeout = Duration::from_secs(1);
    let start = Instant::now();
    let e = RemoteQueue::connect(
        &dead_urls(),
        ConnectOptions::default().with_timeout(timeout),
    )
    .unwrap_err();
    let took = start.elapsed();
    println!("connect: {e} after {took:?}");
    assert_eq!(e.kind(), GAVE_UP, "{e}");
    assert!(took >= timeout && took <= timeout + SLACK, "{took:?}: {e}");
    assert!(e.to_string().contains("no telha server of"), "{e}");
}

#[test]
fn calls_move_to_the_next_server_of_the_list_and_streams_resume_there() {
    let dir = tempfile::tempdir().unwrap();
    let queue = telha_jobs::Queue::open(dir.path(), common::config()).unwrap();
    let a: ServerHandle = serve(queue.clone(), local()).unwrap();
    let b: ServerHandle = serve(queue.clone(), local()).unwrap();
    let list = format!("{},{}", a.url(), b.url());
    let c = RemoteQueue::connect(
        &list,
        ConnectOptions::default().with_timeout(Duration::from_secs(5)),
    )
    .unwrap();
    assert_eq!(c.url(), a.url());
    let mut stream = c.poll_jobs("w", &LeaseOptions::default(), 1).unwrap();
    a.shutdown(Duration::from_secs(1));
    // Unkeyed, but with two servers the client keys it: safe to repeat.
    let id = c
        .enqueue("embed", b"p", EnqueueOptions::default())
        .unwrap()
        .id;
    assert_eq!(c.url(), b.url());
    let got = loop {
        let batch = stream
            .next_batch(Some(Duration::from_secs(5)))
            .unwrap()
            .expect("the stream resumes on the second server");
        if let Some(j) = batch.into_iter().next() {
            break j;
        }
    };
    assert_eq!(got.id, id);
    assert!(c.retries(RetryReason::Resume) >= 1);
    c.complete(&got.token(), None).unwrap();
    assert_eq!(queue.get(&id).unwrap().unwrap().state, State::Completed);
    assert!(queue.check().unwrap().problems.is_empty());
    drop(stream);
    b.shutdown(Duration::from_secs(1));
    queue.close();
}

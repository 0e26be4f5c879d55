//! Requests on the wire: the token on every RPC of a non-loopback
//! listener, and malformed requests (bad ids, sizes, limits, encodings)
//! answered INVALID_ARGUMENT with the server staying up.

use telha_jobs::{ErrorKind, JobStore};
use telha_jobs_client::{ConnectOptions, RemoteQueue};
use telha_jobs_proto::v1 as pb;
use telha_jobs_proto::v1::jobs_client::JobsClient;
use tonic::Code;

use crate::support::{self, serve, telha};
async fn raw(
    url: &str,
    token: Option<&str>,
) -> JobsClient<
    tonic::service::interceptor::InterceptedService<
        tonic::transport::Channel,
        impl tonic::service::Interceptor,
    >,
> {
    let ch = tonic::transport::Endpoint::from_shared(url.to_string())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let header: Option<tonic::metadata::MetadataValue<_>> =
        token.map(|t| format!("Bearer {t}").parse().unwrap());
    JobsClient::with_interceptor(ch, move |mut r: tonic::Request<()>| {
        if let Some(h) = &header {
            r.metadata_mut().insert("authorization", h.clone());
        }
        Ok(r)
    })
    .max_encoding_message_size(usize::MAX)
}

fn tok(id: Vec<u8>) -> Option<pb::LeaseToken> {
    Some(pb::LeaseToken { id, generation: 1 })
}

/// Every RPC once, with harmless arguments: the code of each answer.
async fn every_rpc<I: tonic::service::Interceptor>(
    c: &mut JobsClient<
        tonic::service::interceptor::InterceptedService<tonic::transport::Channel, I>,
    >,
) -> Vec<(&'static str, Code)> {
    fn code<T>(r: Result<T, tonic::Status>) -> Code {
        r.err().map_or(Code::Ok, |s| s.code())
    }
    let id = vec![1u8; 16];
    let job = pb::NewJob {
        kind: "k".into(),
        ..Default::default()
    };
    vec![
        (
            "Enqueue",
            code(
                c.enqueue(pb::EnqueueRequest {
                    job: Some(job.clone()),
                })
                .await,
            ),
        ),
        (
            "EnqueueMany",
            code(
                c.enqueue_many(pb::EnqueueManyRequest { jobs: vec![job] })
                    .await,
            ),
        ),
        (
            "Lease",
            code(
                c.lease(pb::LeaseRequest {
                    worker_id: "w".into(),
                    max: 1,
                    ..Default::default()
                })
                .await,
            ),
        ),
        (
            "PollJobs",
            code(
                c.poll_jobs(pb::PollJobsRequest {
                    worker_id: "w".into(),
                    capacity: 1,
                    ..Default::default()
                })
                .await,
            ),
        ),
        (
            "Heartbeat",
            code(
                c.heartbeat(pb::HeartbeatRequest {
                    worker_id: "w".into(),
                    tokens: vec![],
                    progress: vec![],
                })
                .await,
            ),
        ),
        (
            "Submit",
            code(
                c.submit(pb::SubmitRequest {
                    token: tok(id.clone()),
                    outcome: Some(pb::submit_request::Outcome::Complete(pb::Complete {
                        result: None,
                        ..Default::default()
                    })),
                })
                .await,
            ),
        ),
        (
            "SubmitMany",
            code(c.submit_many(pb::SubmitManyRequest { items: vec![] }).await),
        ),
        (
            "Release",
            code(
                c.release(pb::ReleaseRequest {
                    token: tok(id.clone()),
                    delay_ms: None,
                })
                .await,
            ),
        ),
        (
            "Retry",
            code(c.retry(pb::RetryRequest { id: id.clone() }).await),
        ),
        ("Get", code(c.get(pb::GetRequest { id: id.clone() }).await)),
        (
            "List",
            code(
                c.list(pb::ListRequest {
                    limit: 10,
                    ..Default::default()
                })
                .await,
            ),
        ),
        ("Stats", code(c.stats(pb::StatsRequest::default()).await)),
        ("Metrics", code(c.metrics(pb::MetricsRequest {}).await)),
        ("Reap", code(c.reap(pb::ReapRequest {}).await)),
        (
            "Purge",
            code(
                c.purge(pb::PurgeRequest {
                    state: pb::JobState::Completed as i32,
                    cutoff_ms: 0,
                })
                .await,
            ),
        ),
    ]
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_non_loopback_listener_needs_a_token_and_checks_it_on_every_rpc() {
    let dir = tempfile::tempdir().unwrap();
    // Refused at start without a token.
    let e = support::try_serve(dir.path(), &["--listen", "0.0.0.0:0"], &[])
        .err()
        .unwrap();
    assert!(
        e.contains("exit status: 2") && e.contains("without a token"),
        "{e}"
    );

    let tf = dir.path().join("token");
    std::fs::write(&tf, "s3cret-token\n").unwrap();
    let s = serve(
        &dir.path().join("db"),
        &[
            "--listen",
            "0.0.0.0:0",
            "--token-file",
            tf.to_str().unwrap(),
        ],
        &[],
    );
    let port = s.addr.rsplit(':').next().unwrap();
    let url = format!("http://127.0.0.1:{port}");
    rt().block_on(async {
        for token in [None, Some("wrong"), Some("s3cret-token-but-longer")] {
            let mut c = raw(&url, token).await;
            for (rpc, code) in every_rpc(&mut c).await {
                assert_eq!(code, Code::Unauthenticated, "{rpc} with token {token:?}");
            }
        }
        let mut c = raw(&url, Some("s3cret-token")).await;
        for (rpc, code) in every_rpc(&mut c).await {
            assert!(
                matches!(code, Code::Ok | Code::NotFound),
                "{rpc} with the right token: {code:?}"
            );
        }
    });
    // The client maps UNAUTHENTICATED to InvalidArgument; TELHA_TOKEN works too.
    let c = RemoteQueue::connect(&url, ConnectOptions::default()).unwrap();
    let e = c.stats().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("unauthenticated"), "{e}");
    let out = telha()
        .args(["--server", &url, "jobs", "stats", "--json"])
        .env("TELHA_TOKEN", "s3cret-token")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let out = telha()
        .args(["--server", &url, "jobs", "stats"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn malformed_requests_are_invalid_argument_and_the_server_stays_up() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(
        dir.path(),
        &["--listen", "127.0.0.1:0"],
        &[("TELHA_JOBS_MAX_PAYLOAD_BYTES", "1024")],
    );
    rt().block_on(async {
        let mut c = raw(&s.url, None).await;
        let bad_id = vec![1u8; 15];
        let job = |kind: &str, payload: usize| pb::NewJob {
            kind: kind.into(),
            payload: vec![0; payload],
            ..Default::default()
        };
        let checks: Vec<(&str, Result<(), tonic::Status>)> = vec![
            (
                "get 15-byte id",
                c.get(pb::GetRequest { id: bad_id.clone() })
                    .await
                    .map(|_| ()),
            ),
            (
                "retry empty id",
                c.retry(pb::RetryRequest { id: vec![] }).await.map(|_| ()),
            ),
            (
                "submit 17-byte token id",
                c.submit(pb::SubmitRequest {
                    token: tok(vec![1; 17]),
                    outcome: Some(pb::submit_request::Outcome::Fail(pb::Fail {
                        reason: "x".into(),
                        retryable: true,
                        retry_in_ms: None,
                    })),
                })
                .await
                .map(|_| ()),
            ),
            (
                "submit without outcome",
                c.submit(pb::SubmitRequest {
                    token: tok(vec![1; 16]),
                    outcome: None,
                })
                .await
                .map(|_| ()),
            ),
            (
                "release without token",
                c.release(pb::ReleaseRequest {
                    token: None,
                    delay_ms: None,
                })
                .await
                .map(|_| ()),
            ),
            (
                "heartbeat bad token",
                c.heartbeat(pb::HeartbeatRequest {
                    worker_id: "w".into(),
                    tokens: vec![pb::LeaseToken {
                        id: bad_id.clone(),
                        generation: 1,
                    }],
                    progress: vec![],
                })
                .await
                .map(|_| ()),
            ),
            (
                "enqueue empty kind",
                c.enqueue(pb::EnqueueRequest {
                    job: Some(job("", 1)),
                })
                .await
                .map(|_| ()),
            ),
            (
                "enqueue no job",
                c.enqueue(pb::EnqueueRequest { job: None })
                    .await
                    .map(|_| ()),
            ),
            (
                "enqueue oversized payload",
                c.enqueue(pb::EnqueueRequest {
                    job: Some(job("k", 1025)),
                })
                .await
                .map(|_| ()),
            ),
            (
                "enqueue priority 300",
                c.enqueue(pb::EnqueueRequest {
                    job: Some(pb::NewJob {
                        priority: Some(300),
                        ..job("k", 1)
                    }),
                })
                .await
                .map(|_| ()),
            ),
            (
                "enqueue 16-byte-less scope",
                c.enqueue(pb::EnqueueRequest {
                    job: Some(pb::NewJob {
                        scope: Some(vec![1, 2, 3]),
                        ..job("k", 1)
                    }),
                })
                .await
                .map(|_| ()),
            ),
            (
                "enqueue_many 10,001 jobs",
                c.enqueue_many(pb::EnqueueManyRequest {
                    jobs: vec![job("k", 0); 10_001],
                })
                .await
                .map(|_| ()),
            ),
            (
                "submit_many 10,001 items",
                c.submit_many(pb::SubmitManyRequest {
                    items: vec![
                        pb::SubmitRequest {
                            token: tok(vec![1; 16]),
                            outcome: Some(pb::submit_request::Outcome::Complete(pb::Complete {
                                result: None,
                                ..Default::default()
                            }))
                        };
                        10_001
                    ],
                })
                .await
                .map(|_| ()),
            ),
            (
                "lease max 0",
                c.lease(pb::LeaseRequest {
                    worker_id: "w".into(),
                    max: 0,
                    ..Default::default()
                })
                .await
                .map(|_| ()),
            ),
            (
                "lease max 1,000,000",
                c.lease(pb::LeaseRequest {
                    worker_id: "w".into(),
                    max: 1_000_000,
                    ..Default::default()
                })
                .await
                .map(|_| ()),
            ),
            (
                "lease empty worker",
                c.lease(pb::LeaseRequest {
                    worker_id: "".into(),
                    max: 1,
                    ..Default::default()
                })
                .await
                .map(|_| ()),
            ),
            (
                "lease bad kind",
                c.lease(pb::LeaseRequest {
                    worker_id: "w".into(),
                    max: 1,
                    kinds: vec!["".into()],
                    ..Default::default()
                })
                .await
                .map(|_| ()),
            ),
            (
                "poll capacity 0",
                c.poll_jobs(pb::PollJobsRequest {
                    worker_id: "w".into(),
                    capacity: 0,
                    ..Default::default()
                })
                .await
                .map(|_| ()),
            ),
            (
                "poll bad scope",
                c.poll_jobs(pb::PollJobsRequest {
                    worker_id: "w".into(),
                    capacity: 1,
                    scopes: vec![vec![0; 3]],
                    ..Default::default()
                })
                .await
                .map(|_| ()),
            ),
            (
                "list limit 0",
                c.list(pb::ListRequest {
                    limit: 0,
                    ..Default::default()
                })
                .await
                .map(|_| ()),
            ),
            (
                "list unknown state",
                c.list(pb::ListRequest {
                    limit: 1,
                    state: Some(42),
                    ..Default::default()
                })
                .await
                .map(|_| ()),
            ),
            (
                "purge unspecified state",
                c.purge(pb::PurgeRequest {
                    state: 0,
                    cutoff_ms: 0,
                })
                .await
                .map(|_| ()),
            ),
        ];
        for (what, r) in checks {
            let st = r.expect_err(what);
            assert_eq!(st.code(), Code::InvalidArgument, "{what}: {st:?}");
            assert!(!st.message().is_empty(), "{what}");
        }
        // Still up, and nothing was enqueued by the refused calls.
        let stats = c
            .stats(pb::StatsRequest::default())
            .await
            .unwrap()
            .into_inner();
        assert_eq!(stats.total.unwrap_or_default().pending, 0);
    });
}

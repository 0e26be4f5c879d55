//! The transports: Unix-domain sockets beside TCP (modes, stale and live
//! sockets, cleanup), and the client's caller-driven runtime (idle spells,
//! many threads on one client, drops inside a runtime).

mod common;

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::time::Duration;

use common::config;
use telha_jobs::{EnqueueOptions, ErrorKind, JobStore, LeaseOptions, Queue};
use telha_jobs_client::{ConnectOptions, RemoteQueue};
use telha_jobs_server::{serve, ListenAddr, ServeOptions, ServerHandle};

fn open(dir: &std::path::Path) -> Queue {
    Queue::open(dir.join("store"), config()).unwrap()
}

fn serve_on(q: &Queue, listen: &str, also: &[&str]) -> telha_jobs::Result<ServerHandle> {
    serve(
        q.clone(),
        ServeOptions {
            listen: listen.into(),
            also_listen: also.iter().map(|a| a.to_string()).collect(),
            ..ServeOptions::default()
        },
    )
}

fn connect(url: &str) -> RemoteQueue {
    RemoteQueue::connect(url, ConnectOptions::default()).unwrap()
}

fn lifecycle(c: &RemoteQueue, worker: &str) {
    let e = c
        .enqueue("k", b"over a socket", EnqueueOptions::default())
        .unwrap();
    let job = c
        .lease_next(worker, &LeaseOptions::default())
        .unwrap()
        .expect("the job just enqueued");
    assert_eq!(job.id, e.id);
    assert_eq!(job.payload, b"over a socket");
    c.complete(&job.token(), Some(b"done")).unwrap();
}

#[test]
fn a_unix_socket_serves_the_same_queue_as_tcp_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let q = open(dir.path());
    let sock = dir.path().join("telha.sock");
    let unix = format!("unix:{}", sock.display());
    let h = serve_on(&q, &unix, &["127.0.0.1:0"]).unwrap();
    assert_eq!(h.address(), &ListenAddr::Unix(sock.clone()));
    assert_eq!(h.url(), unix);
    assert_eq!(h.addresses().len(), 2);
    let tcp = h.local_addr().expect("the TCP listener");
    assert_eq!(h.addresses()[1], ListenAddr::Tcp(tcp));

    let over_unix = connect(&unix);
    let over_tcp = connect(&format!("http://{tcp}"));
    lifecycle(&over_unix, "w-unix");
    lifecycle(&over_tcp, "w-tcp");
    // One queue behind both: a job enqueued over TCP is leased over Unix.
    let e = over_tcp
        .enqueue("cross", b"x", EnqueueOptions::default())
        .unwrap();
    let j = over_unix
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!(j.id, e.id);
    over_unix.complete(&j.token(), None).unwrap();
    // unix:// is the same address.
    let slashes = connect(&format!("unix://{}", sock.display()));
    assert!(slashes.stats().unwrap().by_kind.contains_key("cross"));

    h.shutdown(Duration::from_secs(2));
    assert!(!sock.exists(), "the socket file is removed at shutdown");
    q.close();
}

#[test]
fn the_socket_gets_its_mode_and_the_token_still_applies() {
    let dir = tempfile::tempdir().unwrap();
    let q = open(dir.path());
    for (mode, expect) in [(None, 0o600), (Some(0o660), 0o660)] {
        let sock = dir.path().join(format!("m{expect:o}.sock"));
        let h = serve(
            q.clone(),
            ServeOptions {
                listen: format!("unix:{}", sock.display()),
                socket_mode: mode.unwrap_or(telha_jobs_server::SOCKET_MODE_DEFAULT),
                token: Some("s3cret".into()),
                ..ServeOptions::default()
            },
        )
        .unwrap();
        let m = std::fs::metadata(&sock).unwrap();
        assert!(m.file_type().is_socket());
        assert_eq!(m.permissions().mode() & 0o777, expect);
        let url = h.url();
        let anon = connect(&url);
        let e = anon.stats().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        let with = RemoteQueue::connect(
            &url,
            ConnectOptions {
                token: Some("s3cret".into()),
                ..ConnectOptions::default()
            },
        )
        .unwrap();
        with.stats().unwrap();
        h.shutdown(Duration::from_secs(2));
    }
    let e = serve(
        q.clone(),
        ServeOptions {
            listen: format!("unix:{}", dir.path().join("x.sock").display()),
            socket_mode: 0o1777,
            ..ServeOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    q.close();
}

#[test]
fn a_live_socket_is_refused_a_stale_one_replaced_and_a_file_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let q = open(dir.path());
    let sock = dir.path().join("s.sock");
    let unix = format!("unix:{}", sock.display());

    let live = serve_on(&q, &unix, &[]).unwrap();
    let e = serve_on(&q, &unix, &[]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Storage, "{e}");
    assert!(e.to_string().contains("another server is listening"), "{e}");
    // The refused server did not remove the live one's socket.
    connect(&unix).stats().unwrap();
    live.shutdown(Duration::from_secs(2));

    // A socket nobody accepts on (its server died without cleaning up).
    drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
    assert!(sock.exists());
    let h = serve_on(&q, &unix, &[]).unwrap();
    connect(&unix).stats().unwrap();
    h.shutdown(Duration::from_secs(2));

    // Not a socket: refused, and the file is not touched.
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, b"keep me").unwrap();
    let e = serve_on(&q, &format!("unix:{}", file.display()), &[]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert_eq!(std::fs::read(&file).unwrap(), b"keep me");

    // No path; a missing directory; /metrics on a socket.
    let e = serve_on(&q, "unix:", &[]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let e = serve_on(
        &q,
        &format!("unix:{}/no/such/dir.sock", dir.path().display()),
        &[],
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Storage, "{e}");
    let e = serve(
        q.clone(),
        ServeOptions {
            listen: "127.0.0.1:0".into(),
            metrics_listen: Some(format!("unix:{}", dir.path().join("m.sock").display())),
            ..ServeOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    // A failed second listener leaves no socket file behind.
    let first = dir.path().join("first.sock");
    let e = serve_on(&q, &format!("unix:{}", first.display()), &["256.0.0.1:1"]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(!first.exists());
    q.close();
}

#[test]
fn unix_urls_with_bad_parts_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (url, kind) in [
        ("unix:", ErrorKind::InvalidArgument),
        ("unix://", ErrorKind::InvalidArgument),
        ("ftp://127.0.0.1:1", ErrorKind::InvalidArgument),
    ] {
        let e = RemoteQueue::connect(url, ConnectOptions::default()).unwrap_err();
        assert_eq!(e.kind(), kind, "{url}: {e}");
    }
    let missing = format!("unix:{}", dir.path().join("nobody.sock").display());
    let e = RemoteQueue::connect(
        &missing,
        ConnectOptions {
            connect_timeout: Duration::from_secs(2),
            ..ConnectOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.to_string().contains(&missing), "{e}");
    let e = RemoteQueue::connect(
        &missing,
        ConnectOptions {
            ca_cert_pem: Some(b"-----BEGIN CERTIFICATE-----".to_vec()),
            ..ConnectOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
}

#[test]
fn a_client_works_after_idle_spells_and_from_many_threads_at_once() {
    let s = common::served();
    let c = s.client();
    lifecycle(&c, "w0");
    // Past the driver's linger: the keeper thread has the runtime, and the
    // next call takes it back.
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(450));
        lifecycle(&c, "w-idle");
    }
    // Eight threads on one client (one connection, one runtime).
    std::thread::scope(|sc| {
        for t in 0..8 {
            let c = c.clone();
            sc.spawn(move || {
                for _ in 0..50 {
                    c.enqueue("many", b"p", EnqueueOptions::default()).unwrap();
                }
                let w = format!("t{t}");
                let mut done = 0;
                while done < 50 {
                    let jobs = c
                        .lease_many(&w, 5, &LeaseOptions::default().kind("many").unwrap())
                        .unwrap();
                    for j in &jobs {
                        c.complete(&j.token(), None).unwrap();
                    }
                    done += jobs.len();
                    if jobs.is_empty() {
                        break;
                    }
                }
            });
        }
    });
    // Whatever the threads left (each stops when it finds none) is drained.
    loop {
        let jobs = c
            .lease_many("drain", 100, &LeaseOptions::default())
            .unwrap();
        if jobs.is_empty() {
            break;
        }
        for j in &jobs {
            c.complete(&j.token(), None).unwrap();
        }
    }
    let st = c.stats().unwrap();
    let many = &st.by_kind["many"];
    assert_eq!(many.completed, 400, "{many:?}");
    assert_eq!(many.pending + many.leased, 0, "{many:?}");
}

#[test]
fn the_last_clone_dropped_inside_a_runtime_does_not_panic() {
    let s = common::served();
    let c = s.client();
    c.stats().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async move {
        drop(c);
    });
    // The server is unaffected; a new client works.
    s.client().stats().unwrap();
}

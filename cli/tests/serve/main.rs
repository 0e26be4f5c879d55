//! `telha serve` as a process, and clients of it: crashes (a client or the
//! server killed with SIGKILL), auth, malformed requests, TLS, /metrics,
//! the CLI's `--server`, locking and graceful shutdown.

mod backup;
mod control;
mod format;
mod lists;
mod requests;
mod schedules;
mod support;
mod ui;
mod unix;
mod watch;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use support::{serve, telha, FAST_LEASES};
use telha_jobs::{EnqueueOptions, ErrorKind, JobStore, LeaseOptions, LeaseToken, NewJob, State};
use telha_jobs_client::{ConnectOptions, RemoteQueue};

fn lease_within(c: &RemoteQueue, worker: &str, max: usize, secs: u64) -> Vec<telha_jobs::Job> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let jobs = c
            .lease_many(
                worker,
                max,
                &LeaseOptions::default().wait(Duration::from_millis(500)),
            )
            .unwrap();
        if !jobs.is_empty() || Instant::now() > deadline {
            return jobs;
        }
    }
}

/// The helper the SIGKILL test runs as a child process (`--ignored`):
/// lease one job through the server, print its token, then hang mid-job.
#[test]
#[ignore = "helper process for a_client_killed_mid_job_loses_its_lease_and_its_late_submit_is_aborted"]
fn helper_lease_and_hang() {
    let url = std::env::var("TELHA_TEST_URL").unwrap();
    let c = RemoteQueue::connect(&url, ConnectOptions::default()).unwrap();
    let job = c
        .lease_next(
            "doomed",
            &LeaseOptions::default().wait(Duration::from_secs(10)),
        )
        .unwrap()
        .expect("a job to lease");
    println!("TOKEN {}", job.token());
    std::io::stdout().flush().unwrap();
    std::thread::sleep(Duration::from_secs(600));
}

#[test]
fn a_client_killed_mid_job_loses_its_lease_and_its_late_submit_is_aborted() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &["--listen", "127.0.0.1:0"], FAST_LEASES);
    let c = s.client();
    let id = c
        .enqueue("embed", b"work", EnqueueOptions::default())
        .unwrap()
        .id;

    // The worker: this test binary re-run as the ignored helper.
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "helper_lease_and_hang",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("TELHA_TEST_URL", &s.url)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut token = None;
    let mut line = String::new();
    while std::io::BufRead::read_line(&mut out, &mut line).unwrap() > 0 {
        // libtest may print "test helper_lease_and_hang ... " first on the line.
        if let Some(t) = line.split("TOKEN ").nth(1) {
            token = Some(t.trim().parse::<LeaseToken>().unwrap());
            break;
        }
        line.clear();
    }
    let Some(token) = token else {
        let _ = child.kill();
        panic!("the helper did not print its lease token");
    };
    assert_eq!(token.id, id);
    assert_eq!(c.get(&id).unwrap().unwrap().state, State::Leased);
    child.kill().unwrap(); // SIGKILL, mid-job
    child.wait().unwrap();

    // The lease expires (1 s TTL, reaper every 200 ms); another client gets the job.
    let other = s.client();
    let jobs = lease_within(&other, "rescuer", 1, 20);
    assert_eq!(jobs.len(), 1, "the job was not re-leased within 20 s");
    assert_eq!(jobs[0].id, id);
    assert!(jobs[0].generation > token.generation);
    other.complete(&jobs[0].token(), Some(b"rescued")).unwrap();

    // The dead worker's submit, replayed from its token on a new connection.
    let replay = s.client();
    let e = replay.complete(&token, Some(b"late")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Aborted, "{e}");
    let e = replay.fail(&token, "late", true).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Aborted, "{e}");
    let info = c.get(&id).unwrap().unwrap();
    assert_eq!(info.state, State::Completed);
    assert_eq!(info.result.as_deref(), Some(&b"rescued"[..]));
}

#[test]
fn the_server_killed_and_restarted_keeps_every_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = serve(dir.path(), &["--listen", "127.0.0.1:0"], FAST_LEASES);
    let c = s.client();
    let ids: Vec<_> = c
        .enqueue_many(
            (0..300u32)
                .map(|i| NewJob::new("ingest:doc", i.to_be_bytes().to_vec()))
                .collect(),
        )
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    let single = c
        .enqueue("embed", b"one", EnqueueOptions::default())
        .unwrap()
        .id;
    let leased = c.lease_many("w", 80, &LeaseOptions::default()).unwrap();
    assert_eq!(leased.len(), 80);
    let (done, held) = leased.split_at(50);
    let answers = c
        .complete_many(
            done.iter()
                .map(|j| (j.token(), Some(b"ok".to_vec())).into())
                .collect(),
        )
        .unwrap();
    assert!(answers.iter().all(Result::is_ok));
    c.complete(&held[0].token(), None).unwrap();
    let completed: Vec<_> = done.iter().map(|j| j.id).chain([held[0].id]).collect();
    let held = &held[1..]; // 29 leases open at the crash

    s.kill9();
    drop(c);
    let s = serve(dir.path(), &["--listen", "127.0.0.1:0"], FAST_LEASES);
    let c = s.client();
    let stats = c.stats().unwrap();
    assert_eq!(stats.total.total(), 301, "{stats:?}");
    assert_eq!(stats.total.completed, 51, "{stats:?}");
    for id in &completed {
        assert_eq!(c.get(id).unwrap().unwrap().state, State::Completed);
    }
    for id in ids.iter().chain([&single]) {
        assert!(
            c.get(id).unwrap().is_some(),
            "acknowledged enqueue {id} lost"
        );
    }
    // The leases held at the crash are reaped after the TTL and completed
    // by a new client, with everything else.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut rescued = 0;
    while c.stats().unwrap().total.completed < 301 {
        assert!(Instant::now() < deadline, "{:?}", c.stats().unwrap());
        let jobs = c
            .lease_many(
                "after",
                100,
                &LeaseOptions::default().wait(Duration::from_millis(300)),
            )
            .unwrap();
        rescued += jobs
            .iter()
            .filter(|j| held.iter().any(|h| h.id == j.id))
            .count();
        for j in &jobs {
            if held.iter().any(|h| h.id == j.id) {
                assert!(j.generation > 1, "a reaped job is leased anew");
            }
        }
        let r = c
            .complete_many(jobs.iter().map(|j| (j.token(), None).into()).collect())
            .unwrap();
        assert!(r.iter().all(Result::is_ok));
    }
    assert_eq!(rescued, held.len());
}

#[test]
fn tls_with_a_self_signed_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cp, kp) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cp, cert.cert.pem()).unwrap();
    std::fs::write(&kp, cert.signing_key.serialize_pem()).unwrap();
    let s = serve(
        &dir.path().join("db"),
        &[
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            cp.to_str().unwrap(),
            "--tls-key",
            kp.to_str().unwrap(),
        ],
        &[],
    );
    assert!(s.url.starts_with("https://"), "{}", s.url);
    let port = s.addr.rsplit(':').next().unwrap();
    let c = RemoteQueue::connect(
        &format!("https://localhost:{port}"),
        ConnectOptions {
            ca_cert_pem: Some(cert.cert.pem().into_bytes()),
            ..ConnectOptions::default()
        },
    )
    .unwrap();
    let id = c
        .enqueue("embed", b"secret", EnqueueOptions::default())
        .unwrap()
        .id;
    assert_eq!(c.get(&id).unwrap().unwrap().payload, b"secret");
    // Without trusting the certificate, or in plain text: no service.
    let untrusted = RemoteQueue::connect(
        &format!("https://localhost:{port}"),
        ConnectOptions::default(),
    );
    let e = untrusted.and_then(|c| c.stats()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Storage, "{e}");
    let plain = RemoteQueue::connect(
        &format!("http://127.0.0.1:{port}"),
        ConnectOptions::default(),
    );
    assert!(plain.and_then(|c| c.stats()).is_err());
}

fn http_get(addr: &str, auth: Option<&str>) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let extra = auth
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{extra}\r\n"
    )
    .unwrap();
    // `Connection: close`: else the server keeps the connection for its
    // 10 s header-read timeout and this read races that against its own.
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn metrics_endpoint_serves_the_prometheus_text() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(
        dir.path(),
        &["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"],
        &[],
    );
    let c = s.client();
    c.enqueue("embed", b"x", EnqueueOptions::default()).unwrap();
    let m = s.metrics.clone().expect("a metrics line");
    let addr = m.trim_start_matches("http://").trim_end_matches("/metrics");
    let body = http_get(addr, None);
    assert!(body.starts_with("HTTP/1.1 200 OK"), "{body}");
    assert!(body.contains("text/plain; version=0.0.4"), "{body}");
    assert!(body.contains("telha_jobs"), "{body}");
    assert!(
        body.contains("telha_server_rpcs_total{method=\"Enqueue\",code=\"OK\"} 1"),
        "{body}"
    );

    // With a token, /metrics asks for it too.
    let tf = dir.path().join("t");
    std::fs::write(&tf, "tok").unwrap();
    let s2 = serve(
        &dir.path().join("db2"),
        &[
            "--listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
            "--token-file",
            tf.to_str().unwrap(),
        ],
        &[],
    );
    let m2 = s2.metrics.clone().unwrap();
    let a2 = m2
        .trim_start_matches("http://")
        .trim_end_matches("/metrics");
    assert!(http_get(a2, None).starts_with("HTTP/1.1 401"));
    assert!(http_get(a2, Some("tok")).starts_with("HTTP/1.1 200"));
}

fn cli(url: &str, args: &[&str]) -> (i32, String, String) {
    let out = telha()
        .arg("--server")
        .arg(url)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn the_cli_works_through_the_server_while_it_holds_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let url = s.url.clone();
    // Locally, writes are locked out (exit 3) while the server holds the store.
    let out = telha()
        .arg("--db")
        .arg(dir.path())
        .args(["jobs", "enqueue", "embed"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");

    let (code, out, err) = cli(
        &url,
        &[
            "jobs",
            "enqueue",
            "embed",
            "--payload-json",
            "{\"doc\": 7}",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let id = serde_json::from_str::<serde_json::Value>(&out).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, out, _) = cli(&url, &["jobs", "enqueue", "fragile", "--max-attempts", "1"]);
    assert_eq!(code, 0);
    assert!(!out.is_empty());

    let (code, out, err) = cli(&url, &["jobs", "ls"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&id) && out.contains("fragile"), "{out}");
    let (code, out, _) = cli(&url, &["jobs", "show", &id, "--json"]);
    assert_eq!(code, 0);
    let shown: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(shown["kind"], "embed");
    let (code, out, _) = cli(&url, &["jobs", "stats", "--json"]);
    assert_eq!(code, 0);
    assert!(out.contains("\"pending\": 2"), "{out}");
    let (code, out, _) = cli(&url, &["jobs", "metrics"]);
    assert_eq!(code, 0);
    assert!(out.contains("telha_"), "{out}");

    // A job goes dead through a worker; retry and purge through the server.
    let c = s.client();
    let j = c
        .lease_next("w", &LeaseOptions::default().kind("fragile").unwrap())
        .unwrap()
        .unwrap();
    c.fail(&j.token(), "boom", true).unwrap();
    assert_eq!(c.get(&j.id).unwrap().unwrap().state, State::Dead);
    let (code, _, err) = cli(&url, &["jobs", "retry", &j.id.to_string()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(c.get(&j.id).unwrap().unwrap().state, State::Pending);
    let j = c
        .lease_next("w", &LeaseOptions::default().kind("fragile").unwrap())
        .unwrap()
        .unwrap();
    c.complete(&j.token(), None).unwrap();
    let (code, out, err) = cli(
        &url,
        &[
            "jobs",
            "purge",
            "--state",
            "completed",
            "--older-than",
            "0s",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1"), "{out}");
    assert!(c.get(&j.id).unwrap().is_none());
    // Same exit codes: a missing job is 1, an unreachable server 4.
    let (code, _, _) = cli(
        &url,
        &["jobs", "show", "0190a5a0-0000-7000-8000-000000000000"],
    );
    assert_eq!(code, 1);
    let (code, _, err) = cli("http://127.0.0.1:1", &["jobs", "stats"]);
    assert_eq!(code, 4, "{err}");
}

#[test]
fn a_second_server_on_a_held_store_exits_3_and_sigterm_stops_gracefully() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let e = support::try_serve(dir.path(), &["--listen", "127.0.0.1:0"], &[])
        .err()
        .unwrap();
    assert!(e.contains("exit status: 3"), "{e}");
    assert!(e.contains(&format!("pid {}", s.child.id())), "{e}");

    let c = s.client();
    c.enqueue("embed", b"x", EnqueueOptions::default()).unwrap();
    // A worker waiting on a lease when SIGTERM comes is answered, not hung.
    let waiter = {
        let c = s.client();
        std::thread::spawn(move || {
            c.lease_many(
                "w",
                5,
                &LeaseOptions::default()
                    .kind("nothing")
                    .unwrap()
                    .wait(Duration::from_secs(60)),
            )
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let st = s.terminate();
    assert!(st.success(), "{st:?}: {}", s.stderr());
    let r = waiter.join().unwrap();
    assert!(r.map(|v| v.is_empty()).unwrap_or(true));
    // The store is released and intact.
    let q = telha_jobs::Queue::open(dir.path(), telha_jobs::Config::default()).unwrap();
    assert_eq!(q.stats().unwrap().total.pending, 1);
}

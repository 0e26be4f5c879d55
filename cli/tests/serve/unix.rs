//! `telha serve --listen unix:PATH`: a Unix socket beside a TCP port, the
//! CLI and clients through it, its mode, stale and live sockets, and
//! `$TELHA_LISTEN`; every server a child process stopped by pid.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::process::Output;

use telha_jobs::{JobStore, LeaseOptions};
use telha_jobs_client::{ConnectOptions, RemoteQueue};

use crate::support::{serve, telha, try_serve};

fn cli(url: &str, args: &[&str]) -> Output {
    telha()
        .arg("--server")
        .arg(url)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn serve_on_tcp_and_a_unix_socket_at_once_and_clean_up_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("telha.sock");
    let unix = format!("unix:{}", sock.display());
    let mut s = serve(
        &dir.path().join("db"),
        &[
            "--listen",
            "127.0.0.1:0",
            "--listen",
            &unix,
            "--socket-mode",
            "660",
        ],
        &[],
    );
    assert!(s.url.starts_with("http://127.0.0.1:"), "{}", s.url);
    let m = std::fs::metadata(&sock).unwrap();
    assert!(m.file_type().is_socket());
    assert_eq!(m.permissions().mode() & 0o777, 0o660);

    // The CLI through the socket, read back through TCP.
    let o = cli(
        &unix,
        &["jobs", "enqueue", "embed", "--payload-json", "{\"doc\": 1}"],
    );
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let o = cli(&s.url, &["jobs", "stats", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("\"pending\": 1"));
    // A client through the socket leases and completes it.
    let c = RemoteQueue::connect(&unix, ConnectOptions::default()).unwrap();
    let job = c
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .expect("the job enqueued through the socket");
    c.complete(&job.token(), None).unwrap();
    drop(c);

    assert!(s.terminate().success());
    assert!(!sock.exists(), "the socket file is removed on SIGTERM");
}

#[test]
fn a_live_socket_is_refused_and_a_killed_servers_stale_one_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("s.sock");
    let unix = format!("unix:{}", sock.display());
    let mut first = serve(&dir.path().join("db1"), &["--listen", &unix], &[]);
    assert_eq!(first.url, unix);
    assert_eq!(
        std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777,
        0o600,
        "owner only by default"
    );

    let e = match try_serve(&dir.path().join("db2"), &["--listen", &unix], &[]) {
        Ok(_) => panic!("a second server took a live socket"),
        Err(e) => e,
    };
    assert!(e.contains("another server is listening"), "{e}");
    // The live server still answers on its socket.
    let o = cli(&unix, &["jobs", "stats"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");

    // SIGKILL leaves the socket file behind; the next server replaces it.
    first.kill9();
    assert!(sock.exists());
    let mut second = serve(&dir.path().join("db2"), &["--listen", &unix], &[]);
    let o = cli(&unix, &["jobs", "stats"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(second.terminate().success());
    assert!(!sock.exists());
}

#[test]
fn telha_listen_names_the_addresses_and_bad_ones_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("env.sock");
    let unix = format!("unix:{}", sock.display());
    let mut s = serve(
        &dir.path().join("db"),
        &[],
        &[("TELHA_LISTEN", &format!("{unix}, 127.0.0.1:0"))],
    );
    assert_eq!(s.url, unix);
    let o = cli(&unix, &["jobs", "stats"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(s.terminate().success());

    for (args, env, says) in [
        (vec!["--socket-mode", "999"], vec![], "permission mode"),
        (vec![], vec![("TELHA_LISTEN", " , ")], "TELHA_LISTEN"),
        (vec!["--listen", "unix:"], vec![], "needs a path"),
    ] {
        let mut c = telha();
        c.arg("--db")
            .arg(dir.path().join("db"))
            .arg("serve")
            .args(&args);
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
        assert!(String::from_utf8_lossy(&o.stderr).contains(says), "{o:?}");
    }
}

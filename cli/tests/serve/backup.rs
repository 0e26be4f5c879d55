//! `telha jobs backup DIR --server URL`: the server writes the backup on
//! its own filesystem, over TCP loopback and over its Unix socket; the
//! backup opens as a store once written, while the server goes on; a
//! taken DIR answers INVALID_ARGUMENT (exit 2) naming it.

use std::process::Output;

use telha_jobs::{EnqueueOptions, ErrorKind, JobStore, Queue};
use telha_jobs_client::{ConnectOptions, RemoteQueue};

use crate::support::{serve, telha};

fn cli(url: &str, args: &[&str]) -> Output {
    telha()
        .arg("--server")
        .arg(url)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_served_store_is_backed_up_on_the_servers_filesystem() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("telha.sock");
    let unix = format!("unix:{}", sock.display());
    let s = serve(
        &dir.path().join("db"),
        &["--listen", "127.0.0.1:0", "--listen", &unix],
        &[],
    );
    let c = RemoteQueue::connect(&s.url, ConnectOptions::default()).unwrap();
    for i in 0..10u8 {
        c.enqueue("mail", &[i], EnqueueOptions::default()).unwrap();
    }
    let b1 = dir.path().join("b1");
    let o = cli(&s.url, &["--json", "jobs", "backup", b1.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        out["path"],
        b1.canonicalize().unwrap().display().to_string()
    );

    // Through the socket, with the client's call.
    let b2 = dir.path().join("b2");
    let u = RemoteQueue::connect(&unix, ConnectOptions::default()).unwrap();
    let info = u.backup(&b2).unwrap();
    assert!(
        info.sequence >= out["sequence"].as_u64().unwrap(),
        "{info:?} {out}"
    );
    let e = u.backup(&b2).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(
        e.to_string().contains("b2") && e.to_string().contains("not empty"),
        "{e}"
    );
    let o = cli(&s.url, &["jobs", "backup", b1.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");

    // The server goes on; each backup opens as a store with the 10 jobs.
    c.enqueue("mail", b"after", EnqueueOptions::default())
        .unwrap();
    for b in [&b1, &b2] {
        let q = Queue::open(b, telha_jobs::Config::default()).unwrap();
        assert_eq!(q.stats().unwrap().total.pending, 10);
        assert!(q.check().unwrap().problems.is_empty());
        q.close();
    }
}

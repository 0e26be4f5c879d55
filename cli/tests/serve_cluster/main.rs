//! `telha serve --cluster` (issue 40): three real processes on loopback
//! ports, bootstrapped; writes through the leader with `RemoteQueue`; a
//! follower's `UNAVAILABLE` with the `telha-leader-*` metadata; the leader
//! SIGKILLed, a new one within seconds with every acknowledged job; the
//! killed node restarted catches up (equal store digests, clean checks).
//! And bad input refused before anything is written.

mod support;

use std::time::{Duration, Instant};

use support::{hint, spawn_and_wait, telha, Cluster};
use telha_jobs::replica::ReplicaStore;
use telha_jobs::{Config, EnqueueOptions, JobId, JobStore, LeaseOptions};
use telha_jobs_client::{ConnectOptions, RemoteQueue};
use tonic::Code;

/// A client of one node (it follows a `telha-leader` hint); every call
/// bounded, so a stuck cluster fails the test rather than hangs it.
fn client(url: &str) -> RemoteQueue {
    let o = ConnectOptions {
        request_timeout: Some(Duration::from_secs(15)),
        ..ConnectOptions::default()
    };
    RemoteQueue::connect(url, o).unwrap()
}

/// `n` keyed enqueues through `url`, half of them leased and completed.
fn write(url: &str, round: &str, n: usize) -> Vec<JobId> {
    let q = client(url);
    let ids: Vec<JobId> = (0..n)
        .map(|i| {
            let o = EnqueueOptions {
                idempotency_key: Some(format!("{round}-{i}")),
                ..Default::default()
            };
            q.enqueue("a", b"x", o).unwrap().id
        })
        .collect();
    let opts = LeaseOptions::default().kind("a").unwrap();
    let jobs = q.lease_many("w", n / 2, &opts).unwrap();
    assert_eq!(jobs.len(), n / 2);
    for j in jobs {
        q.complete(&j.token(), None).unwrap();
    }
    ids
}

fn assert_present(url: &str, ids: &[JobId]) {
    let q = client(url);
    for id in ids {
        assert!(q.get(id).unwrap().is_some(), "job {id} lost");
    }
}

#[test]
fn three_processes_elect_serve_fail_over_and_catch_up() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = Cluster::start(tmp.path());
    let leader = c.leader(Duration::from_secs(20));
    let mut ids = write(&c.urls[&leader].clone(), "before", 20);

    // A follower answers UNAVAILABLE naming the leader (once it has heard
    // from it).
    for f in c.nodes.keys().copied().filter(|&id| id != leader) {
        let end = Instant::now() + Duration::from_secs(5);
        let s = loop {
            let s = c.probe(f).expect_err("a follower answered");
            if hint(&s).1.is_some() || Instant::now() > end {
                break s;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let (code, id, url) = hint(&s);
        assert_eq!(code, Code::Unavailable, "{s:?}");
        assert_eq!(id, Some(leader.to_string()), "{s:?}");
        assert_eq!(url.as_deref(), Some(c.urls[&leader].as_str()), "{s:?}");
        assert!(s.message().contains(&format!("node {leader}")), "{s:?}");
    }

    // `telha cluster status --json` against a follower of the real
    // processes: the Admin service is mounted beside Jobs and Raft.
    let f = c.nodes.keys().copied().find(|&id| id != leader).unwrap();
    let out = telha()
        .args(["cluster", "status", "--json", "--url", &c.urls[&f]])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["leader"]["id"], serde_json::json!(leader), "{v}");
    assert_eq!(
        v["leader"]["url"],
        serde_json::json!(c.urls[&leader]),
        "{v}"
    );

    // The leader SIGKILLed: a new one, with every acknowledged job.
    c.kill9(leader);
    let t = Instant::now();
    let new = c.leader(Duration::from_secs(10));
    let took = t.elapsed();
    assert_ne!(new, leader);
    eprintln!("node {leader} killed; node {new} serves after {took:?}");
    assert!(took < Duration::from_secs(10), "failover took {took:?}");
    let url = c.urls[&new].clone();
    assert_present(&url, &ids);
    ids.extend(write(&url, "during", 20));

    // Restarted (no --bootstrap: its directory holds its log), it catches up.
    c.spawn(leader, &[]);
    ids.extend(write(&url, "after", 20));
    assert_present(&url, &ids);
    // Quiet for a moment, so every replica applied everything; then
    // stopped, followers first (no new leader then, so no new epoch), and
    // the three stores compared.
    std::thread::sleep(Duration::from_secs(2));
    let order = [1, 2, 3].into_iter().filter(|&i| i != new).chain([new]);
    for id in order {
        let (st, err) = c.terminate(id);
        assert!(st.success(), "node {id}: {st}: {err}");
    }
    let mut digests = Vec::new();
    for (id, d) in &c.dirs {
        let s = ReplicaStore::open_read_only(&d.join("store")).unwrap();
        let r = s.check(Config::default()).unwrap();
        assert_eq!(r.problems, Vec::<String>::new(), "node {id}");
        digests.push((*id, s.digest().unwrap()));
    }
    assert!(
        digests.windows(2).all(|w| w[0].1 == w[1].1),
        "replicas differ: {digests:?}"
    );

    // A peer list that disagrees with the stored membership is refused.
    let peers = format!("1={},2={},4=http://127.0.0.1:1", c.urls[&1], c.urls[&2]);
    let out = telha().args(c.args(1, &peers)).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("membership"), "{err}");
}

/// `telha serve --cluster ARGS` fails with exit 2 and a message holding
/// `want`, leaving `dir` as it was.
fn refused(args: &[&str], env: &[(&str, &str)], dir: &std::path::Path, want: &str) {
    let before = listing(dir);
    let mut cmd = telha();
    cmd.arg("serve").arg("--cluster").args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(want), "{args:?}: wanted {want:?} in {err}");
    assert_eq!(listing(dir), before, "{args:?} wrote to {}", dir.display());
}

fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = match std::fs::read_dir(dir) {
        Ok(r) => r
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect(),
        Err(_) => vec!["<none>".into()],
    };
    v.sort();
    v
}

#[test]
fn bad_input_is_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("node");
    let ds = d.to_str().unwrap();
    let peers = "1=http://127.0.0.1:7461,2=http://127.0.0.1:7462";
    let base = |id: &'static str, peers: &'static str| {
        vec![
            "--node-id",
            id,
            "--peers",
            peers,
            "--data-dir",
            ds,
            "--bootstrap",
            "--listen",
            "127.0.0.1:0",
        ]
    };
    refused(&base("3", peers), &[], &d, "--node-id 3 is not in --peers");
    refused(&base("1", "1=127.0.0.1:7461"), &[], &d, "http://host:port");
    refused(&base("1", "1:http://a:1"), &[], &d, "not ID=URL");
    refused(
        &base("1", "1=http://a:1,1=http://b:1"),
        &[],
        &d,
        "node 1 twice",
    );
    refused(
        &base("1", "1=http://a:1,2=http://a:1"),
        &[],
        &d,
        "http://a:1 twice",
    );
    let mut no_id = base("1", peers);
    no_id.drain(0..2);
    refused(&no_id, &[], &d, "--node-id");
    // --db is for a single store.
    let out = telha()
        .args(["--db", ds, "serve", "--cluster"])
        .args(base("1", peers))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--db"));
    assert_eq!(listing(&d), vec!["<none>".to_string()]);
    // Off loopback without a peer token (the client token is there).
    let mut open = base("1", peers);
    open[8] = "0.0.0.0:0";
    refused(&open, &[("TELHA_TOKEN", "client-token")], &d, "peer token");
    // An empty data directory without --bootstrap.
    std::fs::create_dir(&d).unwrap();
    refused(&base("1", peers)[..6], &[], &d, "is empty");
    // Another node's directory.
    std::fs::write(d.join("node.toml"), "node_id = 2\n").unwrap();
    refused(&base("1", peers), &[], &d, "belongs to node 2");
    // The config file's [cluster] table: the same checks.
    let cfg = tmp.path().join("telha.toml");
    std::fs::write(
        &cfg,
        format!("[cluster]\nnode_id = 5\npeers = \"{peers}\"\ndata_dir = \"{ds}\"\n"),
    )
    .unwrap();
    refused(
        &["--listen", "127.0.0.1:0"],
        &[("TELHA_JOBS_CONFIG", cfg.to_str().unwrap())],
        &d,
        "--node-id 5 is not in --peers",
    );
}

#[test]
fn a_restart_with_bootstrap_is_a_logged_no_op() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = Cluster::start(tmp.path());
    let leader = c.leader(Duration::from_secs(20));
    let ids = write(&c.urls[&leader].clone(), "once", 4);
    let follower = (1..=3).find(|&i| i != leader).unwrap();
    let (st, _) = c.terminate(follower);
    assert!(st.success());
    let mut cmd = telha();
    cmd.args(c.args(follower, &c.peers())).arg("--bootstrap");
    let p = spawn_and_wait(cmd).unwrap();
    c.nodes.insert(follower, p);
    let (st, err) = c.terminate(follower);
    assert!(st.success(), "{err}");
    assert!(err.contains("already initialized, nothing done"), "{err}");
    assert_present(&c.urls[&leader].clone(), &ids);
}

//! `telha cluster` (the real binary) against three nodes in this process,
//! each on a tonic server with the `Admin` service beside its `Raft`
//! service (the cluster crate's test support): init, status as text and
//! JSON, a learner added through a follower, bad input refused with a
//! clear message and a non-zero exit, nothing changed.

#[path = "../../cluster/tests/admin/mod.rs"]
mod admin;

use std::process::Command;

use admin::{GrpcNodes, CLIENT_TOKEN, WITHIN};
use telha_jobs_cluster::node::EmptyDir;

/// `telha cluster ARGS --url URL`: (exit code, stdout, stderr).
fn telha(url: &str, token: Option<&str>, args: &[&str]) -> (i32, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_telha"));
    c.arg("cluster").args(args).args(["--url", url]);
    c.env_remove("TELHA_TOKEN");
    if let Some(t) = token {
        c.args(["--token", t]);
    }
    let out = c.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn telha_cluster_inits_shows_status_adds_and_refuses_bad_input() {
    let g = GrpcNodes::start("telha_cluster_inits_shows_status_adds", 3, 1);
    let tok = Some(CLIENT_TOKEN);
    let members: Vec<String> = (1..=3).map(|i| format!("{i}={}", g.url(i))).collect();
    let mut init: Vec<&str> = vec!["init"];
    init.extend(members.iter().map(String::as_str));
    // Without the token: refused (usage), nothing written.
    let (rc, _, err) = telha(&g.url(1), None, &init);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("authorization"), "{err}");
    let (rc, out, err) = telha(&g.url(1), tok, &init);
    assert_eq!(rc, 0, "{err}");
    assert!(
        out.starts_with("cluster initialized with members [1, 2, 3]"),
        "{out}"
    );
    let (rc, _, err) = telha(&g.url(2), tok, &init);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains("already belongs to an initialized cluster"),
        "{err}"
    );
    let leader = g.leader(WITHIN);
    let follower = (1..=3).find(|&i| i != leader).unwrap();
    // Status as JSON on the leader.
    let (rc, out, err) = telha(&g.url(leader), tok, &["status", "--json"]);
    assert_eq!(rc, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["role"], "leader");
    assert_eq!(j["leader"]["url"], g.url(leader));
    assert_eq!(j["members"].as_array().unwrap().len(), 3);
    assert_eq!(j["joint"], false);
    // As text on a follower: it names the leader.
    let (rc, out, err) = telha(&g.url(follower), tok, &["status"]);
    assert_eq!(rc, 0, "{err}");
    assert!(
        out.starts_with(&format!("node {follower} (follower)")),
        "{out}"
    );
    assert!(
        out.contains(&format!("leader      {leader} {}", g.url(leader))),
        "{out}"
    );
    assert!(out.contains("ID     ROLE"), "{out}");
    // Add through the follower: the hint is followed.
    g.start_node(4, EmptyDir::Join);
    let (rc, out, err) = telha(&g.url(follower), tok, &["add", "4", &g.url(4)]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("node 4 added as a learner"), "{out}");
    // Bad input: clear errors, non-zero exits, nothing changed.
    let (_, before, _) = telha(&g.url(leader), tok, &["status", "--json"]);
    let (rc, _, err) = telha(&g.url(leader), tok, &["promote", "9"]);
    assert_eq!(rc, 1, "{err}");
    assert!(err.contains("node 9 is not a member"), "{err}");
    let (rc, _, err) = telha(&g.url(leader), tok, &["add", "4", &g.url(4)]);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("already a learner"), "{err}");
    let (rc, _, err) = telha(&g.url(leader), tok, &["add", "5", "10.0.0.5:7450"]);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("is not a URL"), "{err}");
    let (rc, _, err) = telha(&g.url(leader), tok, &["remove", "1", "2", "3"]);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("without a voter"), "{err}");
    let (_, after, _) = telha(&g.url(leader), tok, &["status", "--json"]);
    let members =
        |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap()["members"].clone();
    assert_eq!(members(&before), members(&after));
    // Remove the learner; the change is printed.
    let (rc, out, err) = telha(&g.url(leader), tok, &["remove", "4", "--json"]);
    assert_eq!(rc, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["membership"]["learners"], serde_json::json!([]));
    assert_eq!(j["membership"]["removed"], serde_json::json!([4]));
}

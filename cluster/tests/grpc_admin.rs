//! The operator's `Admin` service (issue 40 slice 3) on three nodes in one
//! process, each served over gRPC beside its `Raft` service: init, status
//! (as `telha cluster status` renders it, text and JSON), a learner added
//! through a follower (the client follows the leader hint), promoted, a
//! follower replaced and removed, the leader removed (it steps down), an
//! interrupted change shown joint and finished; bad input refused with a
//! typed status, nothing changed.

mod admin;

use std::collections::BTreeSet;
use std::time::Duration;

use admin::{client_rt, ids, refused, serve_admin, wait_for, GrpcNodes, CLIENT_TOKEN, WITHIN};
use openraft::ChangeMembers;
use telha_jobs_cluster::harness::{options, TestCluster};
use telha_jobs_cluster::node::EmptyDir;
use telha_jobs_cluster::transport::admin_render::{status_json, status_text};
use telha_jobs_cluster::transport::{cluster_id, AdminClient, LEADER_ID_METADATA};
use tonic::Code;

fn set(ids: &[u64]) -> BTreeSet<u64> {
    ids.iter().copied().collect()
}

#[test]
fn init_then_status_shows_members_leader_and_lag_in_text_and_json() {
    let g = GrpcNodes::start("init_then_status_shows_members_leader_and_lag", 3, 0);
    let rt = client_rt();
    let c2 = g.client(&rt, 2);
    // Before init: no leader, no members.
    let s = rt.block_on(c2.status()).unwrap();
    assert_eq!((s.node_id, s.leader_id), (2, None), "{s:?}");
    // A malformed URL, or the node itself missing: refused, nothing written.
    let bad = vec![(1, g.url(1)), (2, "127.0.0.1:7450".to_string())];
    let e = refused(rt.block_on(c2.init(&bad)), Code::InvalidArgument);
    assert!(e.message.contains("http://"), "{e}");
    let e = refused(
        rt.block_on(c2.init(&[(1, g.url(1)), (3, g.url(3))])),
        Code::InvalidArgument,
    );
    assert_eq!(e.name.as_deref(), Some("not_a_member"), "{e}");
    assert!(cluster_id(&g.node(2)).unwrap().is_none(), "nothing written");
    let members: Vec<(u64, String)> = (1..=3).map(|i| (i, g.url(i))).collect();
    let done = rt.block_on(c2.init(&members)).unwrap();
    assert!(done.changed);
    let leader = g.leader(WITHIN);
    // Init again, on any node: refused.
    for id in [2, leader] {
        let e = refused(
            rt.block_on(g.client(&rt, id).init(&members)),
            Code::FailedPrecondition,
        );
        assert_eq!(e.name.as_deref(), Some("already_initialized"), "{e}");
    }
    let cl = g.client(&rt, leader);
    wait_for("followers caught up", WITHIN, || {
        let s = rt.block_on(cl.status()).unwrap();
        s.followers.len() == 2 && s.followers.iter().all(|f| f.lag == 0)
    });
    let s = rt.block_on(cl.status()).unwrap();
    assert_eq!(s.role, "leader");
    assert_eq!(s.leader_url, g.url(leader));
    assert!(s.engine_open);
    assert_eq!(s.committed, s.last_log_index);
    let m = s.membership.as_ref().unwrap();
    assert_eq!(ids(&m.voters), [1, 2, 3]);
    assert!(m.voters.iter().all(|v| v.url == g.url(v.id)), "{m:?}");
    assert!(m.committed && m.configs.len() == 1);
    // The cluster id is known where init ran.
    assert!(!rt.block_on(c2.status()).unwrap().cluster_id.is_empty());
    // Text: a table with every member, its URL, matched and lag.
    let text = status_text(&s);
    assert!(
        text.starts_with(&format!("node {leader} (leader)")),
        "{text}"
    );
    for id in 1..=3 {
        let row = text
            .lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("no row {id}:\n{text}"));
        let cols: Vec<&str> = row.split_whitespace().collect();
        let role = if id == leader { "voter*" } else { "voter" };
        let last = s.last_log_index.unwrap().to_string();
        assert_eq!(
            cols,
            [&id.to_string(), role, &g.url(id), &last, "0"],
            "{text}"
        );
    }
    // JSON: the documented schema.
    let j = status_json(&s);
    assert_eq!(j["leader"]["id"], leader);
    assert_eq!(j["leader"]["url"], g.url(leader));
    assert_eq!(j["joint"], false);
    assert_eq!(j["members"].as_array().unwrap().len(), 3);
    assert_eq!(j["members"][0]["lag"], 0);
    // A follower names the leader; it has no follower rows.
    let f = if leader == 1 { 2 } else { 1 };
    let fs = rt.block_on(g.client(&rt, f).status()).unwrap();
    assert_eq!((fs.role.as_str(), fs.leader_id), ("follower", Some(leader)));
    assert_eq!(fs.leader_url, g.url(leader));
    assert!(fs.followers.is_empty() && fs.committed.is_none(), "{fs:?}");
    // Auth: the client token, as `authorization: Bearer`.
    for token in [None, Some("wrong")] {
        let c = rt
            .block_on(AdminClient::connect(
                &g.url(f),
                token,
                Duration::from_secs(5),
            ))
            .unwrap();
        refused(rt.block_on(c.status()), Code::Unauthenticated);
    }
    eprintln!("{text}");
}

#[test]
fn a_learner_added_through_a_follower_is_promoted_replaces_and_removals_follow() {
    let g = GrpcNodes::start("a_learner_added_through_a_follower_is_promoted", 3, 2);
    let rt = client_rt();
    let members: Vec<(u64, String)> = (1..=3).map(|i| (i, g.url(i))).collect();
    rt.block_on(g.client(&rt, 1).init(&members)).unwrap();
    let leader = g.leader(WITHIN);
    let follower = (1..=3).find(|&i| i != leader).unwrap();
    let cf = g.client(&rt, follower);
    // A membership call on a follower: UNAVAILABLE with the hint, which
    // the client follows once.
    g.start_node(4, EmptyDir::Join);
    let p = rt.block_on(cf.add_learner(4, &g.url(4), WITHIN)).unwrap();
    assert!(p.caught_up, "{p:?}");
    let m = p.membership.unwrap();
    assert_eq!(ids(&m.learners), [4]);
    assert_eq!(m.learners[0].url, g.url(4));
    let s = rt.block_on(g.client(&rt, leader).status()).unwrap();
    assert!(s.followers.iter().any(|f| f.id == 4), "{s:?}");
    assert!(status_text(&s).contains(&format!("4      learner   {}", g.url(4))));
    // Bad input: typed, nothing changed.
    let cl = g.client(&rt, leader);
    let before = rt.block_on(cl.status()).unwrap().membership;
    let e = refused(rt.block_on(cl.promote(&[9], WITHIN)), Code::NotFound);
    assert_eq!(e.name.as_deref(), Some("unknown_node"));
    let e = refused(rt.block_on(cl.remove(&[9], WITHIN)), Code::NotFound);
    assert!(e.message.contains("node 9 is not a member"), "{e}");
    let e = refused(
        rt.block_on(cl.add_learner(4, &g.url(4), WITHIN)),
        Code::AlreadyExists,
    );
    assert_eq!(e.name.as_deref(), Some("already_member"));
    refused(
        rt.block_on(cl.add_learner(7, "http://nowhere", WITHIN)),
        Code::InvalidArgument,
    );
    let e = refused(
        rt.block_on(cl.remove(&[1, 2, 3], WITHIN)),
        Code::FailedPrecondition,
    );
    assert_eq!(e.name.as_deref(), Some("last_voter"), "{e}");
    let e = refused(
        rt.block_on(cl.replace(leader, leader, &g.url(leader), WITHIN)),
        Code::InvalidArgument,
    );
    assert_eq!(e.name.as_deref(), Some("same_id"));
    assert_eq!(rt.block_on(cl.status()).unwrap().membership, before);
    // Promote, through the follower again.
    let m = rt
        .block_on(cf.promote(&[4], WITHIN))
        .unwrap()
        .membership
        .unwrap();
    assert_eq!(ids(&m.voters), [1, 2, 3, 4]);
    assert!(m.learners.is_empty());
    // Replace a follower by 5 (a new id).
    g.start_node(5, EmptyDir::Join);
    let m = rt
        .block_on(cf.replace(follower, 5, &g.url(5), WITHIN))
        .unwrap()
        .membership
        .unwrap();
    let mut want: BTreeSet<u64> = set(&[1, 2, 3, 4, 5]);
    want.remove(&follower);
    assert_eq!(ids(&m.voters).into_iter().collect::<BTreeSet<_>>(), want);
    assert!(
        m.removed.contains(&follower) && m.configs.len() == 1,
        "{m:?}"
    );
    // The replaced id is never reused.
    let e = refused(
        rt.block_on(cl.add_learner(follower, &g.url(follower), WITHIN)),
        Code::FailedPrecondition,
    );
    assert_eq!(e.name.as_deref(), Some("removed_before"));
    // Remove a follower (4).
    let m = rt
        .block_on(cl.remove(&[4], WITHIN))
        .unwrap()
        .membership
        .unwrap();
    want.remove(&4);
    assert_eq!(ids(&m.voters).into_iter().collect::<BTreeSet<_>>(), want);
    // Remove the leader: it steps down, the other two elect.
    let m = rt
        .block_on(cl.remove(&[leader], WITHIN))
        .unwrap()
        .membership
        .unwrap();
    want.remove(&leader);
    assert_eq!(ids(&m.voters).into_iter().collect::<BTreeSet<_>>(), want);
    wait_for("the removed leader steps down", WITHIN, || {
        let n = g.node(leader);
        n.metrics().state != openraft::ServerState::Leader && n.queue().is_err()
    });
    let rest: Vec<u64> = want.iter().copied().collect();
    let new = rest[0];
    wait_for("a new leader among the rest", WITHIN, || {
        let s = rt.block_on(g.client(&rt, new).status()).unwrap();
        s.leader_id.is_some_and(|l| want.contains(&l))
    });
    let s = rt.block_on(g.client(&rt, new).status()).unwrap();
    let nl = s.leader_id.unwrap();
    let s = rt.block_on(g.client(&rt, nl).status()).unwrap();
    assert_eq!(s.role, "leader");
    assert_eq!(ids(&s.membership.unwrap().voters), rest);
    eprintln!("leader {leader} removed; node {nl} leads {rest:?}");
}

/// As the membership test's interrupted change, with the `Admin` service
/// on the survivors (Raft on the in-process router, whose links can be
/// cut one way): the status shows both halves, every verb but finish is
/// refused, finish makes it uniform.
#[test]
fn an_interrupted_change_is_shown_joint_then_finished_through_the_admin_service() {
    let _one = admin::serial();
    let test = "an_interrupted_change_is_shown_joint_then_finished_admin";
    let c = TestCluster::start(test, 3, options());
    c.join(4, WITHIN);
    let old = c.engine_leader(WITHIN);
    let rest: Vec<u64> = c.ids.iter().copied().filter(|&i| i != old).collect();
    let target: BTreeSet<u64> = rest.iter().copied().chain([4]).collect();
    for &f in rest.iter().chain([&4]) {
        c.router.cut(f, old);
    }
    let raft = c.node(old).raft().clone();
    let goal = target.clone();
    let interrupted = std::thread::spawn(move || {
        let rt = client_rt();
        let change = raft.change_membership(ChangeMembers::ReplaceAllVoters(goal), false);
        rt.block_on(async { tokio::time::timeout(Duration::from_secs(10), change).await })
    });
    wait_for("the joint entry on the followers", WITHIN, || {
        rest.iter().all(|&f| {
            let m = c.node(f).metrics();
            m.membership_config.membership().get_joint_config().len() == 2
        })
    });
    let term = c.term(old);
    c.crash(old);
    c.router.heal();
    let _ = interrupted.join().unwrap();
    let new = c.raft_leader(term, WITHIN);
    let served: Vec<_> = rest
        .iter()
        .chain([&4])
        .map(|&id| (id, serve_admin(c.node(id))))
        .collect();
    let rt = client_rt();
    let url = |id: u64| served.iter().find(|(i, _)| *i == id).unwrap().1 .0.clone();
    let connect = |id: u64| {
        rt.block_on(AdminClient::connect(
            &url(id),
            Some(CLIENT_TOKEN),
            Duration::from_secs(5),
        ))
        .unwrap()
    };
    let cl = connect(new);
    let mut s = rt.block_on(cl.status()).unwrap();
    wait_for("the joint entry committed", WITHIN, || {
        s = rt.block_on(cl.status()).unwrap();
        s.membership.as_ref().unwrap().committed
    });
    let text = status_text(&s);
    let halves = format!("joint [1, 2, 3] -> {:?}", target.iter().collect::<Vec<_>>());
    assert!(text.contains(&halves), "{text}");
    assert_eq!(status_json(&s)["joint"], true);
    let e = refused(
        rt.block_on(cl.remove(&[4], WITHIN)),
        Code::FailedPrecondition,
    );
    assert_eq!(e.name.as_deref(), Some("joint"), "{e}");
    assert!(e.message.contains("finish it first"), "{e}");
    let done = rt.block_on(cl.finish_joint(WITHIN)).unwrap();
    assert!(done.changed);
    let m = done.membership.unwrap();
    assert_eq!(m.configs.len(), 1);
    assert_eq!(ids(&m.voters).into_iter().collect::<BTreeSet<_>>(), target);
    // Finishing again changes nothing.
    let again = rt.block_on(cl.finish_joint(WITHIN)).unwrap();
    assert!(!again.changed);
    // A follower's answer to a membership call names the leader.
    let f = target.iter().copied().find(|&i| i != new).unwrap();
    let raw = rt.block_on(async {
        let mut stub =
            telha_jobs_cluster::transport::wire::admin_client::AdminClient::connect(url(f))
                .await
                .unwrap();
        let mut r = tonic::Request::new(telha_jobs_cluster::transport::wire::FinishJointRequest {
            wait_millis: 1000,
        });
        r.metadata_mut().insert(
            "authorization",
            format!("Bearer {CLIENT_TOKEN}").parse().unwrap(),
        );
        stub.finish_joint(r).await
    });
    let st = raw.unwrap_err();
    assert_eq!(st.code(), Code::Unavailable, "{st:?}");
    assert_eq!(
        st.metadata()
            .get(LEADER_ID_METADATA)
            .unwrap()
            .to_str()
            .unwrap(),
        new.to_string()
    );
    for (_, (_, srv)) in served {
        srv.shutdown_timeout(Duration::from_secs(2));
    }
}

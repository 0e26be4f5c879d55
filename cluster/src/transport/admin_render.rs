//! `telha cluster`'s output: a node's status and a membership as text (a
//! table) and as JSON (the schema in docs/operators.md, "telha cluster").
//! Here rather than in the CLI so the tests of this crate render what the
//! command prints.

use serde_json::{json, Value};

use super::wire;

fn log_id(l: &Option<wire::LogId>) -> Value {
    match l {
        Some(l) => json!({"term": l.term, "leader": l.leader, "index": l.index}),
        None => Value::Null,
    }
}

fn log_text(l: &Option<wire::LogId>) -> String {
    match l {
        Some(l) => format!("{} (term {})", l.index, l.term),
        None => "-".into(),
    }
}

fn opt(v: Option<u64>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

/// One member's row: id, role, URL, and on the leader matched and lag.
struct Row {
    id: u64,
    role: &'static str,
    url: String,
    matched: Option<u64>,
    lag: Option<u64>,
}

fn rows(s: &wire::StatusReply) -> Vec<Row> {
    let empty = wire::Membership::default();
    let m = s.membership.as_ref().unwrap_or(&empty);
    let on_leader = s.role == "leader";
    let progress = |id: u64| -> (Option<u64>, Option<u64>) {
        if !on_leader {
            return (None, None);
        }
        if id == s.node_id {
            return (s.last_log_index, Some(0));
        }
        match s.followers.iter().find(|f| f.id == id) {
            Some(f) => (f.matched, Some(f.lag)),
            None => (None, None),
        }
    };
    let mut out = Vec::new();
    for (members, role) in [(&m.voters, "voter"), (&m.learners, "learner")] {
        for mem in members {
            let (matched, lag) = progress(mem.id);
            out.push(Row {
                id: mem.id,
                role,
                url: mem.url.clone(),
                matched,
                lag,
            });
        }
    }
    out
}

fn configs_value(m: &wire::Membership) -> Value {
    Value::Array(m.configs.iter().map(|c| json!(c.ids)).collect())
}

fn configs_text(m: &wire::Membership) -> String {
    let sets: Vec<String> = m.configs.iter().map(|c| format!("{:?}", c.ids)).collect();
    if sets.len() > 1 {
        format!(
            "joint {} (finish it: telha cluster finish)",
            sets.join(" -> ")
        )
    } else {
        format!("uniform {}", sets.join(""))
    }
}

/// The status as the JSON document `telha cluster status --json` prints.
pub fn status_json(s: &wire::StatusReply) -> Value {
    let empty = wire::Membership::default();
    let m = s.membership.as_ref().unwrap_or(&empty);
    let members: Vec<Value> = rows(s)
        .into_iter()
        .map(|r| {
            json!({
                "id": r.id,
                "role": r.role,
                "url": r.url,
                "leader": s.leader_id == Some(r.id),
                "matched": r.matched,
                "lag": r.lag,
            })
        })
        .collect();
    json!({
        "node_id": s.node_id,
        "cluster_id": Some(&s.cluster_id).filter(|c| !c.is_empty()),
        "role": s.role,
        "leader": s.leader_id.map(|id| json!({"id": id, "url": s.leader_url})),
        "term": s.term,
        "last_log_index": s.last_log_index,
        "committed": s.committed,
        "applied": log_id(&s.applied),
        "snapshot": log_id(&s.snapshot),
        "purged": log_id(&s.purged),
        "engine_open": s.engine_open,
        "millis_since_quorum_ack": s.millis_since_quorum_ack,
        "members": members,
        "joint": m.configs.len() > 1,
        "configs": configs_value(m),
        "membership_log_id": log_id(&m.log_id),
        "membership_committed": m.committed,
        "removed": m.removed,
    })
}

/// The status as `telha cluster status` prints it.
pub fn status_text(s: &wire::StatusReply) -> String {
    let empty = wire::Membership::default();
    let m = s.membership.as_ref().unwrap_or(&empty);
    let mut t = format!("node {} ({})", s.node_id, s.role);
    if !s.cluster_id.is_empty() {
        t.push_str(&format!(" of cluster {}", s.cluster_id));
    }
    t.push('\n');
    let leader = match s.leader_id {
        Some(l) if s.leader_url.is_empty() => l.to_string(),
        Some(l) => format!("{l} {}", s.leader_url),
        None => "none known".into(),
    };
    t.push_str(&format!("leader      {leader}\n"));
    t.push_str(&format!("term        {}\n", s.term));
    t.push_str(&format!(
        "log         last {}, committed {}, applied {}\n",
        opt(s.last_log_index),
        opt(s.committed),
        log_text(&s.applied)
    ));
    t.push_str(&format!(
        "membership  {}{}\n",
        configs_text(m),
        if m.committed {
            ""
        } else {
            ", not committed yet"
        }
    ));
    if !m.removed.is_empty() {
        t.push_str(&format!("removed     {:?}\n", m.removed));
    }
    t.push_str(&format!(
        "engine      {}\n\n",
        if s.engine_open {
            "open (serves clients)"
        } else {
            "not open here"
        }
    ));
    t.push_str(&members_table(&rows(s), s.leader_id));
    t
}

fn members_table(rows: &[Row], leader: Option<u64>) -> String {
    let url_w = rows.iter().map(|r| r.url.len()).max().unwrap_or(0).max(3);
    let mut t = format!(
        "{:<6} {:<9} {:<url_w$} {:>8} {:>6}\n",
        "ID", "ROLE", "URL", "MATCHED", "LAG"
    );
    for r in rows {
        let role = if leader == Some(r.id) {
            format!("{}*", r.role)
        } else {
            r.role.to_string()
        };
        let url = if r.url.is_empty() { "-" } else { &r.url };
        t.push_str(&format!(
            "{:<6} {:<9} {:<url_w$} {:>8} {:>6}\n",
            r.id,
            role,
            url,
            opt(r.matched),
            opt(r.lag)
        ));
    }
    if leader.is_some() {
        t.push_str("(* the leader)\n");
    }
    t
}

/// A membership as JSON (what the change commands print).
pub fn membership_json(m: &wire::Membership) -> Value {
    let list = |ms: &[wire::Member]| -> Value {
        Value::Array(
            ms.iter()
                .map(|x| json!({"id": x.id, "url": x.url}))
                .collect(),
        )
    };
    json!({
        "voters": list(&m.voters),
        "learners": list(&m.learners),
        "joint": m.configs.len() > 1,
        "configs": configs_value(m),
        "log_id": log_id(&m.log_id),
        "committed": m.committed,
        "removed": m.removed,
    })
}

/// A membership as text: one line per member, then the configuration.
pub fn membership_text(m: &wire::Membership) -> String {
    let mut t = String::new();
    for (ms, role) in [(&m.voters, "voter"), (&m.learners, "learner")] {
        for x in ms {
            let url = if x.url.is_empty() { "-" } else { &x.url };
            t.push_str(&format!("  {:<6} {:<8} {url}\n", x.id, role));
        }
    }
    t.push_str(&format!("  {}\n", configs_text(m)));
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: u64) -> wire::Member {
        wire::Member {
            id,
            url: format!("http://10.0.0.{id}:7450"),
        }
    }

    fn leader_status() -> wire::StatusReply {
        wire::StatusReply {
            node_id: 1,
            cluster_id: "c-1".into(),
            role: "leader".into(),
            leader_id: Some(1),
            leader_url: "http://10.0.0.1:7450".into(),
            term: 4,
            last_log_index: Some(40),
            committed: Some(38),
            applied: Some(wire::LogId {
                term: 4,
                leader: 1,
                index: 38,
            }),
            membership: Some(wire::Membership {
                voters: vec![member(1), member(2), member(3)],
                learners: vec![member(4)],
                configs: vec![wire::VoterSet { ids: vec![1, 2, 3] }],
                committed: true,
                ..Default::default()
            }),
            followers: vec![
                wire::Follower {
                    id: 2,
                    matched: Some(40),
                    lag: 0,
                },
                wire::Follower {
                    id: 3,
                    matched: Some(35),
                    lag: 5,
                },
                wire::Follower {
                    id: 4,
                    matched: None,
                    lag: 40,
                },
            ],
            engine_open: true,
            ..Default::default()
        }
    }

    #[test]
    fn the_status_table_shows_roles_urls_matched_and_lag() {
        let t = status_text(&leader_status());
        assert!(t.starts_with("node 1 (leader) of cluster c-1\n"), "{t}");
        assert!(
            t.contains("log         last 40, committed 38, applied 38 (term 4)"),
            "{t}"
        );
        assert!(t.contains("membership  uniform [1, 2, 3]\n"), "{t}");
        let row = |id: u64| {
            t.lines()
                .find(|l| l.starts_with(&format!("{id} ")))
                .unwrap_or_else(|| panic!("no row {id}: {t}"))
                .split_whitespace()
                .collect::<Vec<_>>()
        };
        assert_eq!(row(1), ["1", "voter*", "http://10.0.0.1:7450", "40", "0"]);
        assert_eq!(row(3), ["3", "voter", "http://10.0.0.3:7450", "35", "5"]);
        assert_eq!(row(4), ["4", "learner", "http://10.0.0.4:7450", "-", "40"]);
    }

    #[test]
    fn the_status_json_has_the_documented_fields() {
        let j = status_json(&leader_status());
        assert_eq!(j["leader"], json!({"id": 1, "url": "http://10.0.0.1:7450"}));
        assert_eq!(j["committed"], 38);
        assert_eq!(j["joint"], false);
        assert_eq!(j["configs"], json!([[1, 2, 3]]));
        assert_eq!(
            j["members"][2],
            json!({"id": 3, "role": "voter", "url": "http://10.0.0.3:7450",
                   "leader": false, "matched": 35, "lag": 5})
        );
        assert_eq!(j["members"][3]["role"], "learner");
        assert_eq!(j["members"][3]["matched"], Value::Null);
    }

    #[test]
    fn a_joint_membership_is_shown_with_both_halves() {
        let mut s = leader_status();
        let m = s.membership.as_mut().unwrap();
        m.configs = vec![
            wire::VoterSet { ids: vec![1, 2, 3] },
            wire::VoterSet { ids: vec![2, 3, 4] },
        ];
        let t = status_text(&s);
        assert!(t.contains("joint [1, 2, 3] -> [2, 3, 4]"), "{t}");
        assert_eq!(status_json(&s)["configs"], json!([[1, 2, 3], [2, 3, 4]]));
        assert_eq!(status_json(&s)["joint"], true);
    }
}

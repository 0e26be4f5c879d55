//! `telha jobs limits ls | set | rm`, the limits under `stats`, and
//! `ls --parent` (real `telha` processes).

use telha_jobs::{Completion, LeaseOptions, NewJob, Queue};

use crate::support::{config, telha};

#[test]
fn limits_are_set_listed_shown_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    telha(db, &["jobs", "enqueue", "embed"]).ok();
    let out = telha(
        db,
        &[
            "jobs",
            "limits",
            "set",
            "kind:embed",
            "--concurrency",
            "8",
            "--rate",
            "2.5",
        ],
    );
    assert_eq!(
        out.ok(),
        "set kind:embed: concurrency 8, rate 2.5/s (burst 3)\n"
    );
    telha(db, &["jobs", "limits", "set", "scope:*", "--weight", "3"]).ok();
    let ls = telha(db, &["jobs", "limits", "ls"]);
    let text = ls.ok();
    assert!(text.starts_with("TARGET"), "{text}");
    assert!(
        text.contains("kind:embed") && text.contains("2.5/s (3)"),
        "{text}"
    );
    let v = telha(db, &["--json", "jobs", "limits", "ls"]).json();
    assert_eq!(v["limits"][0]["target"], "kind:embed");
    assert_eq!(v["limits"][0]["limit"]["concurrency"], 8);
    assert_eq!(v["limits"][1]["limit"]["weight"], 3);
    assert_eq!(v["limits"][1]["leased"], 0);
    // `stats` shows them under the counts.
    let st = telha(db, &["jobs", "stats"]);
    assert!(st.ok().contains("kind:embed"), "{}", st.ok());
    let sj = telha(db, &["--json", "jobs", "stats"]).json();
    assert_eq!(sj["limits"].as_array().map(Vec::len), Some(2));
    // They are durable: the core sees them.
    {
        let q = Queue::open(db, config()).unwrap();
        assert_eq!(q.limits().unwrap().len(), 2);
    }
    let rm = telha(db, &["jobs", "limits", "rm", "kind:embed"]);
    assert_eq!(rm.ok(), "removed the limit on kind:embed\n");
    let again = telha(db, &["jobs", "limits", "rm", "kind:embed"]);
    assert_eq!(again.ok(), "kind:embed had no limit\n");
}

#[test]
fn bad_limits_are_usage_or_invalid_argument_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    telha(db, &["jobs", "enqueue", "embed"]).ok();
    telha(
        db,
        &["jobs", "limits", "set", "tenant:x", "--concurrency", "1"],
    )
    .fails(2, "limit target");
    telha(db, &["jobs", "limits", "set", "kind:embed"]).fails(2, "sets nothing");
    telha(
        db,
        &["jobs", "limits", "set", "kind:embed", "--concurrency", "0"],
    )
    .fails(2, "concurrency");
    telha(
        db,
        &["jobs", "limits", "set", "kind:embed", "--weight", "2"],
    )
    .fails(2, "weight");
    telha(db, &["jobs", "limits", "set", "kind:embed", "--burst", "2"]).fails(2, "--rate");
    telha(db, &["jobs", "limits", "rm", "nope"]).fails(2, "limit target");
    let v = telha(db, &["--json", "jobs", "limits", "ls"]).json();
    assert_eq!(v["limits"], serde_json::json!([]));
}

#[test]
fn ls_lists_the_follow_ups_of_a_parent() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let parent = {
        let q = Queue::open(db, config()).unwrap();
        let id = q.enqueue("ingest", b"p", Default::default()).unwrap().id;
        let j = q
            .lease_next("w", &LeaseOptions::default())
            .unwrap()
            .unwrap();
        let then = vec![
            NewJob::new("embed", b"a".to_vec()),
            NewJob::new("embed", b"b".to_vec()),
        ];
        q.complete_with(Completion::new(j.token(), None).then(then))
            .unwrap();
        q.enqueue("other", b"o", Default::default()).unwrap();
        id
    };
    let v = telha(
        db,
        &["--json", "jobs", "ls", "--parent", &parent.to_string()],
    )
    .json();
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    assert!(jobs.iter().all(|j| j["parent"] == parent.to_string()));
    let show = telha(
        db,
        &["--json", "jobs", "show", jobs[0]["id"].as_str().unwrap()],
    )
    .json();
    assert_eq!(show["parent"], parent.to_string());
    telha(db, &["jobs", "ls", "--parent", "nope"]).fails(2, "parent");
}

#[test]
fn job_keys_and_ordered_key_limits() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    telha(db, &["jobs", "enqueue", "embed", "--key", "customer-7"]).ok();
    telha(db, &["jobs", "enqueue", "embed", "--key", ""]).fails(2, "job key");
    let out = telha(
        db,
        &[
            "jobs",
            "limits",
            "set",
            "key:*",
            "--concurrency",
            "1",
            "--ordered",
        ],
    );
    assert_eq!(out.ok(), "set key:*: concurrency 1, ordered\n");
    telha(
        db,
        &[
            "jobs",
            "limits",
            "set",
            "key:customer-7",
            "--concurrency",
            "2",
            "--ordered",
        ],
    )
    .fails(2, "ordered");
    let v = telha(db, &["--json", "jobs", "limits", "ls"]).json();
    assert_eq!(v["limits"][0]["target"], "key:*");
    assert_eq!(v["limits"][0]["limit"]["ordered"], true);
    let q = Queue::open(db, config()).unwrap();
    let j = q
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!(j.key.as_deref(), Some("customer-7"));
    drop(q);
    let id = j.id.to_string();
    let out = telha(db, &["jobs", "show", &id]);
    let shown = out.ok();
    assert!(shown.contains("customer-7"), "{shown}");
}

//! `telha jobs enqueue --after ID --on-child-dead`, `jobs ls --state
//! waiting` and `jobs show` listing a parent's children (issue 43), on a
//! store (real `telha` processes); an unknown id is refused.

use crate::support::{json_ids, telha};

#[test]
fn a_parent_waits_and_shows_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let id = |args: &[&str]| -> String {
        let j = telha(db, args).json();
        j["id"].as_str().unwrap().to_string()
    };
    let a = id(&["--json", "jobs", "enqueue", "page"]);
    let b = id(&["--json", "jobs", "enqueue", "page"]);
    let p = id(&[
        "--json",
        "jobs",
        "enqueue",
        "index",
        "--after",
        &a,
        "--after",
        &b,
        "--on-child-dead",
        "ignore",
    ]);
    let ls = telha(db, &["--json", "jobs", "ls", "--state", "waiting"]).json();
    let ids: Vec<String> = json_ids(&ls["jobs"])
        .iter()
        .map(|i| i.to_string())
        .collect();
    assert_eq!(ids, std::slice::from_ref(&p));
    let show = telha(db, &["jobs", "show", &p]);
    let text = show.ok();
    assert!(
        text.contains("2 of 2 unfinished (on_child_dead ignore)"),
        "{text}"
    );
    assert!(
        text.contains(&format!("child         {a} pending")),
        "{text}"
    );
    let j = telha(db, &["--json", "jobs", "show", &p]).json();
    assert_eq!(j["state"], "waiting");
    assert_eq!(j["fan_in"]["unfinished"], 2, "{j}");
    assert_eq!(j["children"][1]["id"], b.as_str(), "{j}");
    let st = telha(db, &["--json", "jobs", "stats"]).json();
    assert_eq!(st["total"]["waiting"], 1, "{st}");

    let ghost = "0192e7a0-0000-7000-8000-000000000000";
    telha(db, &["jobs", "enqueue", "index", "--after", ghost]).fails(1, "does not exist");
    telha(
        db,
        &[
            "jobs",
            "enqueue",
            "index",
            "--after",
            &a,
            "--on-child-dead",
            "maybe",
        ],
    )
    .fails(2, "--on-child-dead");
}

//! `telha jobs ls --key` on a store (real `telha` processes): a key's
//! unfinished jobs from the key index, in enqueue order, paged; a
//! finished one is gone from it; bad input exits 2.

use telha_jobs::{LeaseOptions, Queue};

use crate::support::{config, json_ids, telha};

#[test]
fn ls_by_key_lists_the_keys_unfinished_jobs_in_enqueue_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let mut ids = Vec::new();
    for key in ["cust-7", "cust-8", "cust-7", "cust-7"] {
        let v = telha(db, &["--json", "jobs", "enqueue", "mail", "--key", key]).json();
        ids.push(
            v["id"]
                .as_str()
                .unwrap()
                .parse::<telha_jobs::JobId>()
                .unwrap(),
        );
    }
    telha(db, &["jobs", "enqueue", "mail"]).ok();
    // The oldest cust-7 job completes: it leaves the key index.
    {
        let q = Queue::open(db, config()).unwrap();
        let j = q
            .lease_next("w", &LeaseOptions::default())
            .unwrap()
            .unwrap();
        assert_eq!(j.id, ids[0]);
        q.complete(&j.token(), None).unwrap();
        q.close();
    }
    let ls = telha(db, &["--json", "jobs", "ls", "--key", "cust-7"]).json();
    assert_eq!(json_ids(&ls["jobs"]), vec![ids[2], ids[3]], "{ls}");
    assert_eq!(ls["jobs"][0]["key"], "cust-7", "{ls}");
    assert!(ls["next"].is_null(), "{ls}");
    let ls = telha(db, &["--json", "jobs", "ls", "--key", "cust-8"]).json();
    assert_eq!(json_ids(&ls["jobs"]), vec![ids[1]]);
    let text = telha(db, &["jobs", "ls", "--key", "cust-9"]);
    assert!(text.ok().contains("no jobs"), "{}", text.ok());

    // Paged: one job a page, the cursor carries on within the key.
    let p1 = telha(
        db,
        &["--json", "jobs", "ls", "--key", "cust-7", "--limit", "1"],
    )
    .json();
    assert_eq!(json_ids(&p1["jobs"]), vec![ids[2]]);
    let next = p1["next"].as_str().expect("a next cursor").to_string();
    let p2 = telha(
        db,
        &[
            "--json", "jobs", "ls", "--key", "cust-7", "--limit", "1", "--after", &next,
        ],
    )
    .json();
    assert_eq!(json_ids(&p2["jobs"]), vec![ids[3]]);
    // With a state filter (unfinished states only).
    let ls = telha(
        db,
        &[
            "--json", "jobs", "ls", "--key", "cust-7", "--state", "pending",
        ],
    )
    .json();
    assert_eq!(json_ids(&ls["jobs"]).len(), 2);

    // Bad input: exit 2.
    telha(db, &["jobs", "ls", "--key", ""]).fails(2, "job key");
    telha(
        db,
        &["jobs", "ls", "--key", "cust-7", "--state", "completed"],
    )
    .fails(2, "unfinished jobs only");
    telha(db, &["jobs", "ls", "--key", "cust-7", "--tag", "t"]).fails(2, "cannot be used with");
    telha(db, &["jobs", "ls", "--key", "cust-7", "--after", "zz"]).fails(2, "cursor");
}

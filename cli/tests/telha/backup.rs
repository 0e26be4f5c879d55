//! `telha jobs backup DIR` on a local store (the real binary): the backup
//! opens as a store with the jobs in it; a taken DIR is refused by name
//! (exit 2) with nothing changed.

use telha_jobs::Queue;

use crate::support::{config, telha};

#[test]
fn backup_of_a_local_store_opens_and_a_taken_dir_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    telha(&db, &["jobs", "enqueue", "mail", "--tag", "t1"]).ok();
    telha(&db, &["jobs", "enqueue", "mail"]).ok();
    let to = dir.path().join("b1");
    let out = telha(&db, &["--json", "jobs", "backup", to.to_str().unwrap()]).json();
    assert_eq!(
        out["path"],
        to.canonicalize().unwrap().display().to_string()
    );
    assert!(out["files"].as_u64().unwrap() >= 4, "{out}");
    assert!(out["bytes"].as_u64().unwrap() > 0 && out["sequence"].as_u64().unwrap() > 0);

    let text = telha(
        &db,
        &["jobs", "backup", dir.path().join("b2").to_str().unwrap()],
    );
    assert!(text.ok().starts_with("backup at "), "{text:#?}");
    telha(&db, &["jobs", "backup", to.to_str().unwrap()]).fails(2, "not empty");
    // The store itself is refused as a target.
    telha(&db, &["jobs", "backup", db.join("x").to_str().unwrap()]).fails(2, "inside the store");

    let q = Queue::open(&to, config()).unwrap();
    assert_eq!(q.stats().unwrap().total.pending, 2);
    assert!(q.check().unwrap().problems.is_empty());
    assert_eq!(q.count_tag("t1", None).unwrap().pending, 1);
    q.close();
}

//! `telha jobs enqueue --tag --meta`, `jobs ls --tag`, `jobs count --tag`
//! and `jobs show` on a store (real `telha` processes); bad tags and
//! metadata are refused with nothing written.

use crate::support::{core_view, json_ids, telha};

#[test]
fn enqueue_with_tags_then_list_count_and_show_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let a = telha(
        db,
        &[
            "--json",
            "jobs",
            "enqueue",
            "mail",
            "--tag",
            "order-4711",
            "--tag",
            "eu",
            "--meta",
            "trace=00-abc=01",
        ],
    )
    .json();
    let a = a["id"].as_str().unwrap().to_string();
    telha(db, &["jobs", "enqueue", "mail", "--tag", "order-9"]).ok();
    telha(db, &["jobs", "enqueue", "mail"]).ok();

    let ls = telha(db, &["--json", "jobs", "ls", "--tag", "order-4711"]).json();
    let ids: Vec<String> = json_ids(&ls["jobs"])
        .iter()
        .map(|i| i.to_string())
        .collect();
    assert_eq!(ids, std::slice::from_ref(&a));
    assert_eq!(
        ls["jobs"][0]["tags"],
        serde_json::json!(["order-4711", "eu"])
    );
    assert_eq!(
        ls["jobs"][0]["metadata"]["trace"], "00-abc=01",
        "split at the first ="
    );

    let c = telha(db, &["--json", "jobs", "count", "--tag", "eu"]).json();
    assert_eq!(c["counts"]["pending"], 1, "{c}");
    assert_eq!(c["counts"]["total"], 1, "{c}");
    let text = telha(db, &["jobs", "count", "--tag", "nothing"]);
    assert!(text.ok().contains("total       0"), "{}", text.ok());
    let show = telha(db, &["jobs", "show", &a]);
    assert!(show.ok().contains("order-4711, eu"), "{}", show.ok());
    assert!(show.ok().contains("trace=00-abc=01"), "{}", show.ok());

    // Bad input: exit 2, nothing written.
    let long = "x".repeat(65);
    telha(db, &["jobs", "enqueue", "mail", "--tag", &long]).fails(2, "1 to 64 bytes");
    telha(db, &["jobs", "enqueue", "mail", "--meta", "novalue"]).fails(2, "KEY=VALUE");
    let big = format!("k={}", "v".repeat(5 * 1024));
    telha(db, &["jobs", "enqueue", "mail", "--meta", &big]).fails(2, "4096 bytes");
    telha(db, &["jobs", "count", "--tag", ""]).fails(2, "1 to 64 bytes");
    let q = core_view(db);
    assert_eq!(q.stats().unwrap().total.pending, 3);
}

#[test]
fn cancel_by_tag_cancels_the_tags_jobs_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    for tag in ["upload-7", "upload-7", "upload-8"] {
        telha(db, &["jobs", "enqueue", "mail", "--tag", tag]).ok();
    }
    // No terminal and no --yes: counted, nothing changed, exit 2.
    telha(db, &["jobs", "cancel", "--tag", "upload-7"]).fails(2, "2 unfinished job(s) tagged");
    let out = telha(
        db,
        &["--json", "jobs", "cancel", "--tag", "upload-7", "--yes"],
    )
    .json();
    assert_eq!(
        (out["matched"].as_u64(), out["cancelled"].as_u64()),
        (Some(2), Some(2)),
        "{out}"
    );
    let c = telha(db, &["--json", "jobs", "count", "--tag", "upload-8"]).json();
    assert_eq!(c["counts"]["pending"], 1, "{c}");
    telha(db, &["jobs", "cancel", "--tag", "a\tb", "--yes"]).fails(2, "control character");
    let q = core_view(db);
    let st = q.stats().unwrap().total;
    assert_eq!((st.pending, st.cancelled), (1, 2));
}

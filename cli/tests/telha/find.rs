//! `telha jobs find TEXT` on a store (real `telha` processes): a text
//! answered as a job id, an idempotency key and a tag, side by side.

use crate::support::{json_ids, telha};

#[test]
fn find_answers_an_id_a_key_and_a_tag() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let enq = |args: &[&str]| {
        let mut a = vec!["--json", "jobs", "enqueue", "mail"];
        a.extend_from_slice(args);
        telha(db, &a).json()["id"].as_str().unwrap().to_string()
    };
    let keyed = enq(&["--idempotency-key", "order-4711"]);
    let t1 = enq(&["--tag", "order-4711"]);
    let t2 = enq(&["--tag", "order-4711"]);
    enq(&["--tag=-dash"]);

    let r = telha(db, &["--json", "jobs", "find", "order-4711"]).json();
    assert_eq!(r["matched"], serde_json::json!(["key", "tag"]), "{r}");
    assert_eq!(r["by_key"]["id"], keyed.as_str());
    assert_eq!(r["by_id"], serde_json::Value::Null);
    let tagged: Vec<String> = json_ids(&r["by_tag"]["jobs"])
        .iter()
        .map(|i| i.to_string())
        .collect();
    assert_eq!(tagged, [t1.clone(), t2.clone()]);

    let r = telha(
        db,
        &["--json", "jobs", "find", "order-4711", "--limit", "1"],
    )
    .json();
    let next = r["by_tag"]["next"].as_str().expect("a cursor").to_string();
    let rest = telha(
        db,
        &[
            "--json",
            "jobs",
            "ls",
            "--tag",
            "order-4711",
            "--after",
            &next,
        ],
    )
    .json();
    assert_eq!(json_ids(&rest["jobs"])[0].to_string(), t2);

    let text = telha(db, &["jobs", "find", &t1]);
    assert!(text.ok().starts_with("job id:\n"), "{}", text.ok());
    assert!(text.ok().contains(&t1), "{}", text.ok());
    let text = telha(db, &["jobs", "find", "order-4711", "--limit", "1"]);
    assert!(text.ok().contains("idempotency key:"), "{}", text.ok());
    assert!(
        text.ok().contains("more: telha jobs ls --tag"),
        "{}",
        text.ok()
    );
    let dash = telha(db, &["--json", "jobs", "find", "--", "-dash"]).json();
    assert_eq!(dash["matched"], serde_json::json!(["tag"]), "{dash}");
    let none = telha(db, &["jobs", "find", "order-47"]);
    assert!(none.ok().starts_with("no match"), "{}", none.ok());
    // In another scope: nothing (the key is the system scope's).
    let other = "00000000-0000-0000-0000-0000000000aa";
    let r = telha(
        db,
        &["--json", "jobs", "find", "order-4711", "--scope", other],
    )
    .json();
    assert_eq!(r["matched"], serde_json::json!([]), "{r}");

    telha(db, &["jobs", "find", ""]).fails(2, "1 to 512 bytes");
    telha(db, &["jobs", "find", "a\tb"]).fails(2, "control character");
    telha(db, &["jobs", "find", &"x".repeat(513)]).fails(2, "got 513 bytes");
    telha(db, &["jobs", "find", "a", "--limit", "0"]).fails(2, "find limit");
}

//! `telha jobs check`: the store's format and a consistency scan.

use crate::support::{run_cmd, seeded, telha, telha_cmd};

#[test]
fn check_reports_the_format_and_the_scan_in_text_and_json() {
    let s = seeded();
    let text = telha(&s.path, &["jobs", "check"]).ok().to_string();
    assert!(text.contains("format    3 (compatible from 2)"), "{text}");
    assert!(text.contains(&format!("jobs      {}", s.total)), "{text}");
    assert!(text.contains("no problems"), "{text}");
    assert!(text.contains("ingest:pdf"), "{text}");
    let v = telha(&s.path, &["--json", "jobs", "check"]).json();
    assert_eq!(v["format"], 3);
    assert_eq!(v["compatible_from"], 2);
    assert_eq!(v["format_marker"], true);
    assert_eq!(v["jobs"].as_u64(), Some(s.total as u64));
    assert_eq!(v["ok"], true);
    assert_eq!(v["scanned"]["ingest:pdf"]["dead"], 3);
    assert_eq!(v["problems"].as_array().map(Vec::len), Some(0));
}

#[test]
fn check_exits_4_listing_what_disagrees() {
    let s = seeded();
    // Drop one job's id-index entry behind the engine's back.
    {
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(false);
        let cfs = telha_jobs::store::ALL_CFS.iter().map(|name| {
            let mut o = rocksdb::Options::default();
            if *name == telha_jobs::store::CF_COUNTERS {
                o.set_merge_operator_associative(
                    telha_jobs::store::COUNTERS_MERGE_NAME,
                    telha_jobs::store::counters_merge,
                );
            }
            rocksdb::ColumnFamilyDescriptor::new(*name, o)
        });
        let db = rocksdb::DB::open_cf_descriptors(&opts, &s.path, cfs).unwrap();
        let ids = db.cf_handle(telha_jobs::store::CF_IDS).unwrap();
        db.delete_cf(ids, s.failed.as_bytes()).unwrap();
    }
    let out = telha(&s.path, &["jobs", "check"]);
    assert_eq!(out.code, 4, "{out:#?}");
    assert!(out.stdout.contains("problem(s):"), "{out:#?}");
    assert!(
        out.stdout
            .contains(&format!("job {} missing from the id index", s.failed)),
        "{out:#?}"
    );
    let out = telha(&s.path, &["--json", "jobs", "check"]);
    assert_eq!(out.code, 4);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert!(!v["problems"].as_array().unwrap().is_empty());
}

#[test]
fn check_needs_the_store_itself_not_a_server() {
    let mut c = telha_cmd();
    c.args(["--server", "http://127.0.0.1:1", "jobs", "check"]);
    run_cmd(c).fails(2, "check scans the store itself");
}

#[test]
fn check_of_a_store_of_a_newer_format_exits_5_untouched() {
    let s = seeded();
    let marker = s.path.join("telha.format");
    std::fs::write(&marker, "format = 9\ncompatible_from = 9\n").unwrap();
    let before = std::fs::read_dir(&s.path).unwrap().count();
    telha(&s.path, &["jobs", "check"]).fails(5, "format");
    assert_eq!(std::fs::read_dir(&s.path).unwrap().count(), before);
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap(),
        "format = 9\ncompatible_from = 9\n"
    );
}

//! `telha serve` on a store written in a newer format: refused at once,
//! with the typed exit code, and the store left as it was.

use crate::support::telha;

#[test]
fn serve_refuses_a_store_of_a_newer_format_with_exit_5_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    telha_jobs::Queue::open(&db, telha_jobs::Config::default())
        .unwrap()
        .close();
    let marker = db.join("telha.format");
    std::fs::write(&marker, "format = 9\ncompatible_from = 9\n").unwrap();
    let files = |p: &std::path::Path| {
        let mut v: Vec<_> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| {
                let p = e.unwrap().path();
                (p.clone(), std::fs::read(&p).unwrap_or_default())
            })
            .collect();
        v.sort();
        v
    };
    let before = files(&db);
    let out = telha()
        .arg("--db")
        .arg(&db)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains('9'), "{err}");
    assert_eq!(files(&db), before);
}

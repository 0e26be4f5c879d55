//! `telha serve --ui`: the page and its API on the HTTP listener, the
//! flags' rules, read-only mode, the token.

use std::io::{Read, Write};
use std::time::Duration;

use crate::support::{serve, telha, try_serve};
use telha_jobs::{EnqueueOptions, JobStore};

/// One request; the answer's status line and body.
fn http(addr: &str, method: &str, path: &str, headers: &str, body: &str) -> (String, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{headers}\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
}

fn addr_of(ui: &str) -> String {
    ui.trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string()
}

#[test]
fn ui_serves_the_page_and_the_api_beside_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(
        dir.path(),
        &[
            "--listen",
            "127.0.0.1:0",
            "--ui",
            "--http-listen",
            "127.0.0.1:0",
        ],
        &[],
    );
    s.client()
        .enqueue("embed", b"x", EnqueueOptions::default())
        .unwrap();
    let ui = s.ui.clone().expect("a `ui on` line");
    assert_eq!(s.metrics.as_deref(), Some(&*format!("{ui}metrics")));
    let a = addr_of(&ui);
    let (status, page) = http(&a, "GET", "/", "", "");
    assert!(status.contains("200"), "{status}");
    assert!(page.contains("/assets/app.js"), "{page}");
    let (status, body) = http(&a, "GET", "/api/v1/stats", "", "");
    assert!(status.contains("200"), "{status}");
    assert!(body.contains("\"embed\":{\"pending\":1"), "{body}");
    let (status, metrics) = http(&a, "GET", "/metrics", "", "");
    assert!(
        status.contains("200") && metrics.contains("telha_jobs"),
        "{status}"
    );
}

#[test]
fn read_only_and_token_rules_hold_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let tf = dir.path().join("t");
    std::fs::write(&tf, "tok\n").unwrap();
    let s = serve(
        &dir.path().join("db"),
        &[
            "--listen",
            "127.0.0.1:0",
            "--ui",
            "--ui-read-only",
            "--http-listen",
            "127.0.0.1:0",
            "--token-file",
            tf.to_str().unwrap(),
        ],
        &[],
    );
    let a = addr_of(s.ui.as_deref().unwrap());
    let (status, _) = http(&a, "GET", "/api/v1/stats", "", "");
    assert!(status.contains("401"), "{status}");
    let bearer = "Authorization: Bearer tok\r\n";
    let (status, _) = http(&a, "GET", "/api/v1/stats", bearer, "");
    assert!(status.contains("200"), "{status}");
    let (status, body) = http(
        &a,
        "POST",
        "/api/v1/pause",
        bearer,
        r#"{"target":"kind:x"}"#,
    );
    assert!(
        status.contains("403") && body.contains("READ_ONLY"),
        "{status} {body}"
    );
}

#[test]
fn ui_flags_are_checked() {
    let out = telha()
        .args(["--db", "/nonexistent/x", "serve", "--ui-read-only"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "--ui-read-only needs --ui");
    let dir = tempfile::tempdir().unwrap();
    let bad = try_serve(
        dir.path(),
        &[
            "--listen",
            "127.0.0.1:0",
            "--ui",
            "--http-listen",
            "unix:/tmp/x.sock",
        ],
        &[],
    );
    let err = bad.err().expect("a Unix HTTP address is refused");
    assert!(err.contains("TCP only"), "{err}");
}

//! Issue 36 (d): the CLI takes several servers, as repeated `--server`
//! flags, a comma list or `$TELHA_SERVER`; the first that answers is used.

use crate::support::{serve, telha};

/// An address where nothing listens (bound, then closed).
fn dead_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}", l.local_addr().unwrap())
}

fn run(c: &mut std::process::Command) -> (i32, String, String) {
    let out = c.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn repeated_servers_a_comma_list_and_telha_server_all_reach_the_live_one() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let dead = dead_url();
    let (code, out, err) = run(telha()
        .args(["--server", &dead, "--server", &s.url])
        .args(["jobs", "enqueue", "embed", "--json"]));
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(telha()
        .args(["--server", &format!("{dead},{}", s.url)])
        .args(["jobs", "enqueue", "embed", "--json"]));
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(telha()
        .env("TELHA_SERVER", format!("{dead},{}", s.url))
        .args(["jobs", "stats", "--json"]));
    assert_eq!(code, 0, "{out}{err}");
    let stats: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(stats["total"]["pending"], 2, "{stats}");
}

#[test]
fn a_bad_server_list_is_a_usage_error_naming_the_item() {
    let (code, _, err) = run(telha()
        .args(["--server", "http://127.0.0.1:1,,http://127.0.0.1:2"])
        .args(["jobs", "stats"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("item 2 is empty"), "{err}");
    let (code, _, err) = run(telha()
        .args([
            "--server",
            "http://127.0.0.1:1",
            "--server",
            "http://127.0.0.1:1",
        ])
        .args(["jobs", "stats"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("repeats item 1"), "{err}");
}

#[test]
fn jobs_find_goes_through_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let (code, out, err) = run(telha().args(["--server", &s.url]).args([
        "--json",
        "jobs",
        "enqueue",
        "embed",
        "--idempotency-key",
        "upload-7",
        "--tag",
        "upload-7",
    ]));
    assert_eq!(code, 0, "{out}{err}");
    let id = serde_json::from_str::<serde_json::Value>(&out).unwrap()["id"].clone();
    let (code, out, err) = run(telha()
        .args(["--server", &s.url])
        .args(["--json", "jobs", "find", "upload-7"]));
    assert_eq!(code, 0, "{out}{err}");
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["matched"], serde_json::json!(["key", "tag"]), "{r}");
    assert_eq!(r["by_key"]["id"], id);
    assert_eq!(r["by_tag"]["jobs"][0]["id"], id);
    let (code, _, err) = run(telha()
        .args(["--server", &s.url])
        .args(["jobs", "find", "a\u{7}b"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("control character U+0007"), "{err}");
}

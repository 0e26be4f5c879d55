//! `telha schedules …` through `--server` against a real `telha serve`
//! (started and stopped by pid): the same answers and exit codes as on a
//! store, the server's own scheduler firing the slots, and what it did
//! still there after it stops.

use std::time::{Duration, Instant};

use serde_json::Value as Json;

use crate::support::{serve, telha};

fn cli(url: &str, args: &[&str]) -> (i32, String, String) {
    let out = telha()
        .arg("--server")
        .arg(url)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[track_caller]
fn ok_json(url: &str, args: &[&str]) -> Json {
    let mut a = vec!["--json"];
    a.extend(args);
    let (code, out, err) = cli(url, &a);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

#[test]
fn schedules_work_through_the_server_and_its_scheduler_fires_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let url = s.url.clone();

    // Locally, writes are locked out (exit 3) while the server holds the store.
    let out = telha()
        .arg("--db")
        .arg(dir.path())
        .args(["schedules", "put", "x", "--every", "1s", "--kind", "k"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");

    let v = ok_json(
        &url,
        &[
            "schedules",
            "put",
            "tick",
            "--every",
            "1s",
            "--kind",
            "tick",
            "--payload-json",
            "{\"n\": 1}",
        ],
    );
    assert_eq!(v["created"], true);
    assert_eq!(v["payload"]["value"]["n"], 1);
    let (code, out, err) = cli(
        &url,
        &[
            "schedules",
            "put",
            "nightly",
            "--cron",
            "0 3 * * *",
            "--tz",
            "Europe/Lisbon",
            "--kind",
            "report",
            "--paused",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("created schedule nightly\n"), "{out}");

    let (code, out, _) = cli(&url, &["schedules", "ls"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("nightly") && out.contains("Europe/Lisbon") && out.contains("(paused)"),
        "{out}"
    );
    let (code, out, _) = cli(&url, &["schedules", "show", "nightly"]);
    assert_eq!(code, 0);
    assert!(out.contains("paused          yes"), "{out}");

    // The server's scheduler thread fires the 1 s schedule by itself.
    let deadline = Instant::now() + Duration::from_secs(20);
    let jobs = loop {
        let v = ok_json(&url, &["jobs", "ls", "--schedule", "tick"]);
        let jobs = v["jobs"].as_array().unwrap().clone();
        if jobs.len() >= 2 {
            break jobs;
        }
        assert!(Instant::now() < deadline, "the server fired no slots: {v}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(jobs.iter().all(|j| j["schedule"]["name"] == "tick"));
    let id = jobs[0]["id"].as_str().unwrap();
    let (code, out, _) = cli(&url, &["jobs", "show", id]);
    assert_eq!(code, 0);
    assert!(out.contains("schedule        tick (slot "), "{out}");

    // pause stops it; run and resume answer; next is computed by the server.
    let v = ok_json(&url, &["schedules", "pause", "tick"]);
    assert_eq!(v["paused"], true);
    let v = ok_json(&url, &["schedules", "run"]);
    assert_eq!(v["enqueued"], 0, "{v}");
    let (code, out, _) = cli(&url, &["schedules", "run"]);
    assert_eq!(code, 0);
    assert!(out.contains("enqueued 0 job(s)"), "{out}");
    let paused_count = ok_json(&url, &["schedules", "show", "tick"])["enqueued"].clone();
    let v = ok_json(&url, &["schedules", "resume", "nightly"]);
    assert_eq!(v["paused"], false);
    let next = [
        "schedules",
        "next",
        "0 3 * * *",
        "--tz",
        "Europe/Lisbon",
        "-n",
        "3",
        "--after",
        "2026-03-28T00:00:00Z",
    ];
    let (code, remote, err) = cli(&url, &next);
    assert_eq!(code, 0, "{err}");
    let local = telha()
        .arg("--db")
        .arg(dir.path().join("none"))
        .args(next)
        .output()
        .unwrap();
    assert_eq!(remote, String::from_utf8_lossy(&local.stdout));
    assert_eq!(
        remote,
        "2026-03-28T03:00:00.000Z\n2026-03-29T02:00:00.000Z\n2026-03-30T02:00:00.000Z\n"
    );

    // The same exit codes as on a store.
    for (args, code, needle) in [
        (
            &["schedules", "show", "nope"][..],
            1,
            "no schedule \"nope\"",
        ),
        (&["schedules", "rm", "nope"], 1, "no schedule \"nope\""),
        (&["schedules", "pause", "nope"], 1, "no schedule \"nope\""),
        (
            &[
                "schedules",
                "put",
                "x",
                "--cron",
                "61 * * * *",
                "--kind",
                "k",
            ],
            2,
            "is not a cron pattern",
        ),
        (
            &[
                "schedules",
                "put",
                "x",
                "--every",
                "5m",
                "--tz",
                "UTC",
                "--kind",
                "k",
            ],
            2,
            "applies to cron specs only",
        ),
        (
            &["schedules", "next", "@daily", "--tz", "Nowhere/Land"],
            2,
            "unknown time zone",
        ),
        (
            &["jobs", "ls", "--schedule", ""],
            2,
            "schedule name is empty",
        ),
    ] {
        let (c, out, err) = cli(&url, args);
        assert_eq!(c, code, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
    }
    let (code, _, err) = cli("http://127.0.0.1:1", &["schedules", "ls"]);
    assert_eq!(code, 4, "{err}");

    let (code, out, _) = cli(&url, &["schedules", "rm", "nightly"]);
    assert_eq!((code, out.as_str()), (0, "deleted schedule nightly\n"));

    // Stopped by pid (SIGTERM): what the schedules did is in the store.
    let st = s.terminate();
    assert!(st.success(), "{st:?}: {}", s.stderr());
    let out = telha()
        .arg("--db")
        .arg(dir.path())
        .args(["--json", "schedules", "ls"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: Json = serde_json::from_slice(&out.stdout).unwrap();
    let all = v.as_array().unwrap();
    assert_eq!(all.len(), 1, "{v}");
    assert_eq!(all[0]["name"], "tick");
    assert_eq!(all[0]["paused"], true);
    assert_eq!(all[0]["enqueued"], paused_count, "a paused schedule fired");
}

//! `telha schedules ls | show | put | rm | pause | resume | next | run` on a
//! store (real `telha` processes), `jobs ls --schedule` and a scheduled
//! job's `show`; bad input's exit codes and messages.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use telha_jobs::{ManualClock, Queue, Schedule};

use crate::support::{config, telha};

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[test]
fn put_ls_show_and_rm_with_and_without_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = &dir.path().join("db");
    let out = telha(
        db,
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
            "--payload-json",
            r#"{"day": "yesterday"}"#,
            "--priority",
            "7",
            "--max-attempts",
            "2",
            "--expires-in",
            "10m",
            "--catch-up",
            "all",
            "--max-catch-up",
            "5",
        ],
    );
    let text = out.ok();
    assert!(text.starts_with("created schedule nightly\n"), "{text}");
    assert!(text.contains("Europe/Lisbon") && text.contains("all (at most 5)"));
    let v = telha(
        db,
        &[
            "--json",
            "schedules",
            "put",
            "tick",
            "--every",
            "5m",
            "--kind",
            "tick",
            "--scope",
            crate::support::SCOPE_A,
        ],
    )
    .json();
    assert_eq!(v["created"], true);
    assert_eq!(v["spec"], "every 5m");
    assert_eq!(v["scope"], crate::support::SCOPE_A);
    // Put again: a replace, not a second schedule.
    let v = telha(
        db,
        &[
            "--json",
            "schedules",
            "put",
            "tick",
            "--every",
            "5m",
            "--kind",
            "tock",
        ],
    )
    .json();
    assert_eq!(v["created"], false);
    assert_eq!(v["kind"], "tock");
    assert!(telha(
        db,
        &[
            "schedules",
            "put",
            "tick",
            "--every",
            "5m",
            "--kind",
            "tock"
        ]
    )
    .ok()
    .starts_with("replaced schedule tick\n"));

    let ls = telha(db, &["schedules", "ls"]);
    let lines: Vec<&str> = ls.ok().lines().collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    for h in [
        "NAME",
        "SPEC",
        "TZ",
        "KIND",
        "NEXT",
        "LAST",
        "ENQUEUED",
        "SKIPPED",
        "PAUSED",
        "LAST ERROR",
    ] {
        assert!(lines[0].contains(h), "{}", lines[0]);
    }
    assert!(
        lines[1].starts_with("nightly  0 3 * * *  Europe/Lisbon  report"),
        "{}",
        lines[1]
    );
    assert!(lines[2].starts_with("tick "), "{}", lines[2]);
    let v = telha(db, &["--json", "schedules", "ls"]).json();
    let all = v.as_array().unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0]["name"], "nightly");
    assert_eq!(all[0]["payload"]["value"]["day"], "yesterday");
    assert_eq!(all[0]["priority"], 7);
    assert_eq!(all[0]["max_attempts"], 2);
    assert_eq!(all[0]["expires_in_ms"], 600_000);
    assert_eq!(all[0]["catch_up"], "all");
    assert_eq!(all[0]["enqueued"], 0);
    assert!(all[0]["next_slot_ms"].as_u64().unwrap() > now_ms());
    assert_eq!(all[1]["timezone"], serde_json::Value::Null);

    let show = telha(db, &["schedules", "show", "nightly"]);
    let t = show.ok();
    for f in [
        "name            nightly",
        "spec            0 3 * * *",
        "payload         {\"day\":\"yesterday\"}",
        "next slot",
        "last slot       -",
        "expires in      10m after its slot",
    ] {
        assert!(t.contains(f), "{f:?} missing: {t}");
    }
    let v = telha(db, &["--json", "schedules", "show", "tick"]).json();
    assert_eq!(v["kind"], "tock");
    assert_eq!(v["timezone"], serde_json::Value::Null);

    assert_eq!(
        telha(db, &["schedules", "rm", "tick"]).ok(),
        "deleted schedule tick\n"
    );
    let v = telha(db, &["--json", "schedules", "rm", "nightly"]).json();
    assert_eq!(v, serde_json::json!({"name": "nightly", "deleted": true}));
    assert_eq!(telha(db, &["schedules", "ls"]).ok(), "no schedules\n");
    assert_eq!(
        telha(db, &["--json", "schedules", "ls"]).json(),
        serde_json::json!([])
    );
    telha(db, &["schedules", "rm", "tick"]).fails(1, "no schedule \"tick\"");
}

#[test]
fn pause_and_resume_show_in_ls_and_show() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    telha(
        db,
        &[
            "schedules",
            "put",
            "s",
            "--every",
            "1h",
            "--kind",
            "k",
            "--paused",
        ],
    )
    .ok();
    let row = telha(db, &["schedules", "ls"])
        .ok()
        .lines()
        .nth(1)
        .unwrap()
        .to_string();
    assert!(row.contains("(paused)") && row.contains(" yes "), "{row}");
    let out = telha(db, &["schedules", "resume", "s"]);
    assert!(out.ok().starts_with("resumed schedule s\n"), "{out:?}");
    assert!(out.ok().contains("paused          no"));
    let v = telha(db, &["--json", "schedules", "pause", "s"]).json();
    assert_eq!(v["paused"], true);
    let v = telha(db, &["--json", "schedules", "resume", "s"]).json();
    assert_eq!(v["paused"], false);
    assert!(v["next_slot_ms"].as_u64().is_some());
    telha(db, &["schedules", "pause", "nope"]).fails(1, "no schedule \"nope\"");
    telha(db, &["schedules", "resume", "nope"]).fails(1, "no schedule \"nope\"");
}

#[test]
fn next_lists_fire_times_without_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = &dir.path().join("never-created");
    // Lisbon leaves winter time on 2026-03-29: 03:00 local is 03:00Z, then 02:00Z.
    let args = [
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
    assert_eq!(
        telha(db, &args).ok(),
        "2026-03-28T03:00:00.000Z\n2026-03-29T02:00:00.000Z\n2026-03-30T02:00:00.000Z\n"
    );
    let mut json_args = vec!["--json"];
    json_args.extend(args);
    let v = telha(db, &json_args).json();
    assert_eq!(
        v["times_ms"],
        serde_json::json!([
            1_774_666_800_000u64,
            1_774_749_600_000u64,
            1_774_836_000_000u64
        ])
    );
    assert_eq!(v["times"][1], "2026-03-29T02:00:00.000Z");
    // An interval on its anchor's grid; ms since the epoch work as times.
    let out = telha(
        db,
        &[
            "schedules",
            "next",
            "every 90s",
            "--anchor",
            "30000",
            "--after",
            "0",
            "-n",
            "2",
        ],
    );
    assert_eq!(
        out.ok(),
        "1970-01-01T00:00:30.000Z\n1970-01-01T00:02:00.000Z\n"
    );
    // The default: five times from now.
    let v = telha(db, &["--json", "schedules", "next", "@hourly"]).json();
    assert_eq!(v["times_ms"].as_array().unwrap().len(), 5);
    assert!(!db.exists(), "next opened a store");
}

#[test]
fn run_enqueues_due_slots_once_and_jobs_show_their_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    // Put three hours ago (an injected clock), as if nothing ran since.
    {
        let q = Queue::open_with_clock(
            db,
            config(),
            Arc::new(ManualClock::new(now_ms() - 3 * 3_600_000)),
        )
        .unwrap();
        q.schedule_put(&Schedule::new("hourly", "every 1h", "report"))
            .unwrap();
        q.schedule_put(&Schedule::new("later", "@yearly", "report"))
            .unwrap();
        q.close();
    }
    let v = telha(db, &["--json", "schedules", "run"]).json();
    assert_eq!(v["schedules"], 1, "{v}");
    assert_eq!(
        v["enqueued"], 1,
        "the default catch-up runs one job for the missed slots"
    );
    assert_eq!(
        telha(db, &["schedules", "run"]).ok(),
        "0 schedule(s) due: enqueued 0 job(s), skipped 0 slot(s)\n"
    );

    let ls = telha(db, &["--json", "jobs", "ls", "--schedule", "hourly"]).json();
    let jobs = ls["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "{ls}");
    let r = &jobs[0]["schedule"];
    assert_eq!(r["name"], "hourly");
    assert!(r["missed"].as_u64().unwrap() >= 1, "{r}");
    assert_eq!(r["slot_ms"].as_u64().unwrap() % 3_600_000, 0);
    let id = jobs[0]["id"].as_str().unwrap();
    assert!(telha(db, &["jobs", "ls", "--schedule", "later"])
        .ok()
        .starts_with("no jobs"));
    let show = telha(db, &["jobs", "show", id]);
    let line = show
        .ok()
        .lines()
        .find(|l| l.starts_with("schedule "))
        .unwrap()
        .to_string();
    assert!(
        line.contains("hourly (slot ") && line.contains("missed slot(s) before it"),
        "{line}"
    );
    let info = telha(db, &["--json", "schedules", "show", "hourly"]).json();
    assert_eq!(info["enqueued"], 1);
    assert_eq!(info["last_job"], id);
    assert!(info["skipped"].as_u64().unwrap() >= 1);
}

#[test]
fn bad_schedule_input_is_a_usage_error_that_creates_no_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = &dir.path().join("db");
    let put = |extra: &[&str]| {
        let mut a = vec!["schedules", "put"];
        a.extend(extra);
        telha(db, &a)
    };
    put(&["x", "--cron", "61 * * * *", "--kind", "k"]).fails(2, "is not a cron pattern");
    put(&[
        "x",
        "--cron",
        "0 3 * * *",
        "--tz",
        "Mars/Olympus",
        "--kind",
        "k",
    ])
    .fails(2, "unknown time zone \"Mars/Olympus\"");
    put(&["x", "--every", "5m", "--tz", "UTC", "--kind", "k"])
        .fails(2, "a time zone (\"UTC\") applies to cron specs only");
    put(&["x", "--every", "500ms", "--kind", "k"]).fails(2, "at least 1s");
    put(&["x", "--every", "soon", "--kind", "k"]).fails(2, "is not a duration");
    put(&["x", "--cron", "@daily", "--anchor", "0", "--kind", "k"])
        .fails(2, "an anchor applies to intervals only");
    put(&["", "--every", "5m", "--kind", "k"]).fails(2, "schedule name is empty");
    put(&["x", "--every", "5m", "--kind", "Bad Kind"]).fails(2, "kind \"Bad Kind\"");
    put(&["x", "--every", "5m", "--kind", "k", "--max-attempts", "0"])
        .fails(2, "max_attempts must be at least 1");
    put(&[
        "x",
        "--every",
        "5m",
        "--kind",
        "k",
        "--max-catch-up",
        "10001",
    ])
    .fails(2, "max_catch_up must be 1 to 10000");
    put(&[
        "x",
        "--every",
        "5m",
        "--kind",
        "k",
        "--payload-json",
        "{nope",
    ])
    .fails(2, "--payload-json is not valid JSON");
    put(&[
        "x",
        "--every",
        "5m",
        "--kind",
        "k",
        "--payload-file",
        "/nonexistent/p",
    ])
    .fails(2, "--payload-file /nonexistent/p");
    // What clap refuses, before anything runs.
    put(&["x", "--every", "5m", "--kind", "k", "--catch-up", "most"])
        .fails(2, "catch_up must be \"skip\", \"one\" or \"all\"");
    put(&["x", "--every", "5m", "--cron", "@daily", "--kind", "k"]).fails(2, "cannot be used with");
    put(&["x", "--kind", "k"]).fails(2, "--cron <PATTERN>|--every <DURATION>");
    put(&["x", "--every", "5m"]).fails(2, "--kind");
    put(&["x", "--every", "5m", "--kind", "k", "--priority", "256"]).fails(2, "--priority");
    put(&["x", "--every", "5m", "--kind", "k", "--anchor", "yesterday"]).fails(2, "is not a time");
    put(&[
        "x",
        "--every",
        "5m",
        "--kind",
        "k",
        "--payload-json",
        "1",
        "--payload-file",
        "f",
    ])
    .fails(2, "cannot be used with");
    let long = "t".repeat(65);
    put(&["x", "--every", "5m", "--kind", "k", "--tag", &long]).fails(2, "1 to 64 bytes");
    put(&["x", "--every", "5m", "--kind", "k", "--meta", "nokey"]).fails(2, "KEY=VALUE");
    assert!(!db.exists(), "a refused put created the store");

    telha(
        db,
        &["schedules", "next", "0 3 * * *", "--tz", "Nowhere/Land"],
    )
    .fails(2, "unknown time zone");
    telha(db, &["schedules", "next", "@daily", "-n", "1001"]).fails(2, "1..=1000");
    // No store: read and write commands say so (exit 1).
    telha(db, &["schedules", "ls"]).fails(1, "no store at");
    telha(db, &["schedules", "run"]).fails(1, "no store at");
    telha(db, &["schedules", "show", "x"]).fails(1, "no store at");

    put(&["x", "--every", "5m", "--kind", "k"]).ok();
    telha(db, &["schedules", "show", "nope"]).fails(1, "no schedule \"nope\"");
    telha(db, &["jobs", "ls", "--schedule", ""]).fails(2, "schedule name is empty");
}

#[test]
fn put_with_tags_and_metadata_shows_them_and_its_jobs_carry_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let args = [
        "schedules",
        "put",
        "tagged",
        "--every",
        "1h",
        "--kind",
        "report",
        "--tag",
        "nightly",
        "--tag",
        "team-a",
        "--tag",
        "nightly",
        "--meta",
        "owner=ops",
    ];
    let out = telha(db, &args);
    let text = out.ok();
    assert!(text.contains("tags            nightly, team-a\n"), "{text}");
    assert!(text.contains("meta            owner=ops\n"), "{text}");
    let v = telha(db, &["--json", "schedules", "show", "tagged"]).json();
    assert_eq!(v["tags"], serde_json::json!(["nightly", "team-a"]));
    assert_eq!(v["metadata"]["owner"], "ops");
    // Two hours on: its slot's job is listed under each tag.
    {
        let q = Queue::open_with_clock(
            db,
            config(),
            Arc::new(ManualClock::new(now_ms() + 2 * 3_600_000)),
        )
        .unwrap();
        assert_eq!(q.run_schedules().unwrap().enqueued, 1);
        q.close();
    }
    for tag in ["nightly", "team-a"] {
        let ls = telha(db, &["--json", "jobs", "ls", "--tag", tag]).json();
        let jobs = ls["jobs"].as_array().unwrap();
        assert_eq!(jobs.len(), 1, "{ls}");
        assert_eq!(jobs[0]["schedule"]["name"], "tagged");
        assert_eq!(jobs[0]["metadata"]["owner"], "ops");
    }
}

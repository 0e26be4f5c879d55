//! Bad input: clear messages, the documented exit codes, and nothing
//! created or changed.

use telha_jobs::State;

use crate::support::*;

#[test]
fn malformed_ids_are_usage_errors() {
    let s = seeded();
    for cmd in ["show", "retry"] {
        telha(&s.path, &["jobs", cmd, "not-a-uuid"]).fails(2, "malformed job id \"not-a-uuid\"");
        telha(&s.path, &["jobs", cmd, "01a2297d-e8cb-7612-a44d"]).fails(2, "malformed job id");
    }
    telha(&s.path, &["jobs", "ls", "--scope", "tenant-7"]).fails(2, "malformed scope \"tenant-7\"");
    telha(&s.path, &["jobs", "ls", "--after", "zz"]).fails(2, "invalid argument");
    assert_eq!(ids_in(&s.path, State::Dead), s.dead());
}

#[test]
fn unknown_or_unfit_states_are_usage_errors() {
    let s = seeded();
    telha(&s.path, &["jobs", "ls", "--state", "zombie"]).fails(
        2,
        "unknown state \"zombie\"; one of pending, leased, failed, completed, dead",
    );
    telha(&s.path, &["jobs", "retry", "--state", "dead-ish"]).fails(2, "unknown state");
    telha(&s.path, &["jobs", "retry", "--state", "pending", "--yes"])
        .fails(2, "retry moves dead or failed jobs, not pending ones");
    telha(
        &s.path,
        &["jobs", "purge", "--state", "leased", "--older-than", "1d"],
    )
    .fails(
        2,
        "purge deletes completed, dead or cancelled jobs, not leased ones",
    );
    telha(&s.path, &["jobs", "ls", "--kind", "Ingest:PDF"]).fails(2, "kinds use lowercase");
    assert_eq!(ids_in(&s.path, State::Pending).len(), s.pending.len());
}

#[test]
fn bad_durations_are_usage_errors() {
    let s = seeded();
    for bad in ["7x", "seven days", "", "-1d"] {
        let arg = format!("--older-than={bad}");
        telha(&s.path, &["jobs", "purge", "--state", "dead", &arg]).fails(2, "is not a duration");
    }
    telha(&s.path, &["jobs", "enqueue", "embed", "--delay", "soon"]).fails(2, "is not a duration");
    assert_eq!(ids_in(&s.path, State::Dead), s.dead());
}

#[test]
fn a_missing_store_is_not_found_and_no_command_but_enqueue_creates_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("no-such-store");
    let id = "01a2297d-e8cb-7612-a44d-31321cfe28b2";
    let cases: [&[&str]; 7] = [
        &["jobs", "ls"],
        &["jobs", "show", id],
        &["jobs", "stats"],
        &["jobs", "metrics"],
        &["--json", "jobs", "ls"],
        &["jobs", "retry", id],
        &["jobs", "purge", "--state", "dead", "--older-than", "7d"],
    ];
    for args in cases {
        telha(&db, args).fails(1, &format!("no store at {}", db.display()));
        assert!(!db.exists(), "{args:?} created the store directory");
    }
    telha(&db, &["jobs", "retry", "--state", "dead", "--yes"]).fails(1, "no store at");
    // Bad enqueue arguments are refused before the store would be created.
    telha(&db, &["jobs", "enqueue", "Bad Kind"]).fails(2, "kinds use lowercase");
    telha(
        &db,
        &["jobs", "enqueue", "embed", "--payload-json", "{oops"],
    )
    .fails(2, "not valid JSON");
    telha(&db, &["jobs", "enqueue", "embed", "--max-attempts", "0"]).fails(2, "at least 1");
    telha(&db, &["jobs", "enqueue", "embed", "--backoff-base", "0s"]).fails(2, "at least 1ms");
    telha(&db, &["jobs", "enqueue", "embed", "--unique-for", "1h"])
        .fails(2, "needs --idempotency-key");
    telha(
        &db,
        &[
            "jobs",
            "enqueue",
            "embed",
            "--idempotency-key",
            "k",
            "--unique-for",
            "0s",
        ],
    )
    .fails(2, "at least 1ms");
    telha(
        &db,
        &[
            "jobs",
            "enqueue",
            "embed",
            "--idempotency-key",
            "k",
            "--unique-for",
            "1h",
            "--unique-states",
            "done",
        ],
    )
    .fails(2, "unique_states must be");
    telha(&db, &["jobs", "enqueue", "embed", "--debounce", "1s"])
        .fails(2, "debounce needs an idempotency_key");
    telha(&db, &["jobs", "enqueue", "embed", "--debounce-max", "1s"]).fails(2, "--debounce");
    let deb = [
        "jobs",
        "enqueue",
        "embed",
        "--idempotency-key",
        "k",
        "--debounce",
    ];
    telha(&db, &[&deb[..], &["10s", "--debounce-max", "1s"]].concat())
        .fails(2, "must be at least debounce (10s)");
    telha(&db, &[&deb[..], &["0s"]].concat()).fails(2, "debounce must be at least 1ms");
    telha(&db, &[&deb[..], &["1s", "--delay", "1s"]].concat())
        .fails(2, "debounce cannot be combined with delay");
    telha(&db, &["jobs", "enqueue", "embed", "--backoff-base", "200y"])
        .fails(2, "at most 100 years");
    telha(&db, &["jobs", "enqueue", "embed", "--priority", "256"]).fails(2, "256");
    telha(&db, &["jobs", "enqueue", "embed", "--priority", "-1"]).fails(2, "-1");
    telha(
        &db,
        &["jobs", "enqueue", "embed", "--max-attempts", "4294967296"],
    )
    .fails(2, "4294967296");
    // A delay past the latest time the core keeps (9999-12-31), and one too
    // large for a duration at all.
    telha(&db, &["jobs", "enqueue", "embed", "--delay", "8000y"]).fails(
        2,
        "--delay of 8000years puts the time after 9999-12-31T23:59:59.999Z",
    );
    telha(
        &db,
        &[
            "jobs",
            "enqueue",
            "embed",
            "--delay",
            "99999999999999999999s",
        ],
    )
    .fails(2, "is not a duration");
    let long_key = "k".repeat(513);
    telha(
        &db,
        &["jobs", "enqueue", "embed", "--idempotency-key", &long_key],
    )
    .fails(2, "idempotency key must be 1 to 512 bytes, got 513");
    telha(&db, &["jobs", "enqueue", "embed", "--idempotency-key", ""])
        .fails(2, "idempotency key must be 1 to 512 bytes, got 0");
    assert!(!db.exists());
}

#[test]
fn usage_mistakes_exit_2_and_help_exits_0() {
    let s = seeded();
    telha(&s.path, &["jobs"]).fails(2, "Usage");
    telha(&s.path, &["jobs", "frobnicate"]).fails(2, "unrecognized subcommand");
    telha(&s.path, &["jobs", "retry"]).fails(2, "required");
    let id = s.dead_pdf_a[0].to_string();
    telha(&s.path, &["jobs", "retry", &id, "--state", "dead"]).fails(2, "cannot be used with");
    telha(&s.path, &["jobs", "retry", &id, "--yes"]).fails(2, "give --state instead of an id");
    telha(&s.path, &["jobs", "retry", &id, "--kind", "embed"]).fails(2, "give --state");
    telha(&s.path, &["jobs", "ls", "--limit", "0"]).fails(2, "--limit");
    telha(&s.path, &["jobs", "ls", "--limit", "10001"]).fails(2, "--limit");
    let help = telha(&s.path, &["jobs", "--help"]);
    assert!(help.ok().contains("retry"), "{help:?}");
    assert_eq!(ids_in(&s.path, State::Dead), s.dead());
}

#[test]
fn a_store_that_does_not_open_is_exit_4() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("broken");
    std::fs::create_dir(&db).unwrap();
    // A CURRENT file naming a manifest that is not there.
    std::fs::write(db.join("CURRENT"), "MANIFEST-000042\n").unwrap();
    telha(&db, &["jobs", "ls"]).fails(4, "telha: ");
    telha(&db, &["jobs", "retry", "--state", "dead", "--yes"]).fails(4, "telha: ");
}

#[test]
fn a_write_under_a_configuration_that_does_not_load_is_a_usage_error() {
    let s = seeded();
    let mut c = telha_cmd();
    c.env("TELHA_JOBS_LEASE_TTL", "forever")
        .arg("--db")
        .arg(&s.path)
        .args(["jobs", "retry", "--state", "dead", "--yes"]);
    run_cmd(c).fails(2, "configuration: invalid argument: TELHA_JOBS_LEASE_TTL");
    assert_eq!(ids_in(&s.path, State::Dead), s.dead());
}

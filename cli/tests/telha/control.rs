//! `telha jobs cancel | delete | pause | resume` on a store, and what `ls`,
//! `show` and `stats` show of them afterwards (real `telha` processes).

use std::path::Path;
use telha_jobs::{EnqueueOptions, JobId, LeaseOptions, Queue};

use crate::support::{config, scope, telha, SCOPE_A, SCOPE_B};

/// Two pending `embed` (scope A), one pending `ingest:pdf` (scope B), one
/// leased `embed` (A, the default lease), one completed `embed`.
struct Store {
    _dir: tempfile::TempDir,
    pending: Vec<JobId>,
    pdf: JobId,
    leased: JobId,
    completed: JobId,
}

fn store() -> Store {
    let dir = tempfile::tempdir().unwrap();
    let q = Queue::open(dir.path(), config()).unwrap();
    let a = || EnqueueOptions::default().scope(scope(SCOPE_A));
    let done = q.enqueue("embed", b"c", a()).unwrap().id;
    let leased = q.enqueue("embed", b"l", a()).unwrap().id;
    let opts = LeaseOptions::default();
    let j = q.lease_next("w", &opts).unwrap().unwrap();
    assert_eq!(j.id, done);
    q.complete(&j.token(), None).unwrap();
    let j = q.lease_next("w", &opts).unwrap().unwrap();
    assert_eq!(j.id, leased);
    let pending = (0..2)
        .map(|_| q.enqueue("embed", b"p", a()).unwrap().id)
        .collect();
    let b = EnqueueOptions::default().scope(scope(SCOPE_B));
    let pdf = q.enqueue("ingest:pdf", b"d", b).unwrap().id;
    q.close();
    drop(q);
    Store {
        _dir: dir,
        pending,
        pdf,
        leased,
        completed: done,
    }
}

fn state_of(db: &Path, id: &JobId) -> String {
    let v = telha(db, &["--json", "jobs", "show", &id.to_string()]).json();
    v["state"].as_str().unwrap().to_string()
}

#[test]
fn cancel_by_id_cancels_pending_requests_leased_and_refuses_finished() {
    let s = store();
    let db = s._dir.path();
    let (p, l, c) = (
        s.pending[0].to_string(),
        s.leased.to_string(),
        s.completed.to_string(),
    );
    let out = telha(db, &["--json", "jobs", "cancel", &p, &l]).json();
    assert_eq!(out["results"][0]["outcome"], "cancelled", "{out}");
    assert_eq!(out["results"][1]["outcome"], "requested", "{out}");
    assert_eq!(state_of(db, &s.pending[0]), "cancelled");
    let show = telha(db, &["--json", "jobs", "show", &l]).json();
    assert_eq!(show["state"], "leased");
    assert_eq!(show["cancel_requested"], "cancelled by an operator");
    let text = telha(db, &["jobs", "show", &l]).ok().to_string();
    assert!(
        text.contains("requested: cancelled by an operator"),
        "{text}"
    );
    // Finished: wrong state, exit 2, the job untouched; the rest still run.
    let r = telha(db, &["jobs", "cancel", &c, &s.pending[1].to_string()]);
    assert_eq!(r.code, 2, "{r:#?}");
    assert!(r.stderr.contains("wrong state"), "{r:#?}");
    assert!(
        r.stdout.contains(&format!("cancelled {}", s.pending[1])),
        "{r:#?}"
    );
    assert_eq!(state_of(db, &s.completed), "completed");
    let r = telha(db, &["jobs", "cancel", &p]);
    assert_eq!(r.code, 2, "cancelling twice: {r:#?}");
    // Unknown id: exit 1; malformed: usage, exit 2, before any store opens.
    telha(
        db,
        &["jobs", "cancel", "01890a5d-ac96-774b-bcce-b302099a8057"],
    )
    .fails(1, "not found");
    telha(db, &["jobs", "cancel", "nope"]).fails(2, "malformed job id");
    let st = telha(db, &["--json", "jobs", "stats"]).json();
    assert_eq!(st["total"]["cancelled"], 2, "{st}");
    assert_eq!(st["total"]["leased"], 1, "{st}");
}

#[test]
fn a_filter_cancel_asks_and_without_a_terminal_refuses_unless_yes() {
    let s = store();
    let db = s._dir.path();
    let r = telha(db, &["jobs", "cancel", "--kind", "embed"]);
    r.fails(2, "would be cancelled; nothing changed (pass --yes");
    assert_eq!(state_of(db, &s.pending[0]), "pending");
    // --kind and --scope: scope B has no embed jobs.
    let out = telha(
        db,
        &[
            "--json", "jobs", "cancel", "--kind", "embed", "--scope", SCOPE_B, "--yes",
        ],
    )
    .json();
    assert_eq!(out["cancelled"], 0, "{out}");
    let out = telha(
        db,
        &[
            "--json", "jobs", "cancel", "--kind", "embed", "--state", "pending", "--yes",
        ],
    )
    .json();
    assert_eq!(
        (out["cancelled"].as_u64(), out["requested"].as_u64()),
        (Some(2), Some(0)),
        "{out}"
    );
    assert_eq!(state_of(db, &s.pdf), "pending");
    assert_eq!(state_of(db, &s.leased), "leased");
    let out = telha(
        db,
        &["--json", "jobs", "cancel", "--kind", "embed", "--yes"],
    )
    .json();
    assert_eq!(out["requested"], 1, "{out}");
    // Finished states are not a cancel filter; bad kinds and scopes are usage.
    telha(db, &["jobs", "cancel", "--state", "dead", "--yes"]).fails(2, "not dead ones");
    telha(db, &["jobs", "cancel", "--kind", "Embed", "--yes"]).fails(2, "lowercase");
    telha(db, &["jobs", "cancel", "--scope", "x", "--yes"]).fails(2, "--scope");
    telha(db, &["jobs", "cancel"]).fails(2, "cancel needs job ids");
    let id = s.pdf.to_string();
    telha(db, &["jobs", "cancel", &id, "--kind", "embed"]).fails(2, "cannot be used with");
}

#[test]
fn delete_removes_unleased_jobs_and_refuses_a_leased_one() {
    let s = store();
    let db = s._dir.path();
    let (p, c) = (s.pending[0].to_string(), s.completed.to_string());
    let out = telha(db, &["jobs", "delete", &p, &c]).ok().to_string();
    assert!(out.contains(&format!("deleted {p}")), "{out}");
    telha(db, &["jobs", "show", &p]).fails(1, "no job");
    telha(db, &["jobs", "show", &c]).fails(1, "no job");
    let r = telha(db, &["jobs", "delete", &s.leased.to_string()]);
    r.fails(2, "cancel it first");
    assert_eq!(state_of(db, &s.leased), "leased");
    telha(db, &["jobs", "delete", &p]).fails(1, "not found");
    telha(db, &["jobs", "delete"]).fails(2, "required");
    telha(db, &["jobs", "delete", "{bad}"]).fails(2, "malformed job id");
    let q = Queue::open(db, config()).unwrap();
    assert!(q.check().unwrap().problems.is_empty());
}

#[test]
fn pause_and_resume_kinds_families_and_scopes_show_in_ls_show_and_stats() {
    let s = store();
    let db = s._dir.path();
    assert_eq!(
        telha(db, &["jobs", "pause", "--kind", "ingest:*"]).ok(),
        "paused kind:ingest:*\n"
    );
    assert!(telha(db, &["jobs", "pause", "--kind", "ingest:*"])
        .ok()
        .contains("paused already"));
    telha(db, &["jobs", "pause", "--scope", SCOPE_A]).ok();
    let ls = telha(db, &["jobs", "ls"]).ok().to_string();
    assert!(
        ls.starts_with(&format!("paused: kind:ingest:*, scope:{SCOPE_A}\n")),
        "{ls}"
    );
    assert!(ls.contains("pending (paused)"), "{ls}");
    let v = telha(db, &["--json", "jobs", "show", &s.pdf.to_string()]).json();
    assert_eq!(v["paused"], true, "{v}");
    let st = telha(db, &["jobs", "stats"]).ok().to_string();
    assert!(st.contains("paused: kind:ingest:*"), "{st}");
    let st = telha(db, &["--json", "jobs", "stats"]).json();
    assert_eq!(st["paused"]["kinds"][0], "ingest:*", "{st}");
    // Durable: a worker opening the store leases nothing paused.
    {
        let q = Queue::open(db, config()).unwrap();
        assert!(q
            .lease_next("w", &LeaseOptions::default())
            .unwrap()
            .is_none());
    }
    telha(db, &["jobs", "resume", "--scope", SCOPE_A]).ok();
    assert!(telha(db, &["jobs", "resume", "--scope", SCOPE_A])
        .ok()
        .contains("was not paused"));
    let v = telha(db, &["--json", "jobs", "ls"]).json();
    assert_eq!(v["paused"]["scopes"].as_array().unwrap().len(), 0, "{v}");
    let q = Queue::open(db, config()).unwrap();
    let j = q
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!(j.kind, "embed");
    drop(q);
    telha(db, &["jobs", "pause"]).fails(2, "--kind");
    telha(db, &["jobs", "pause", "--kind", "a", "--scope", SCOPE_A])
        .fails(2, "cannot be used with");
    telha(db, &["jobs", "pause", "--kind", "x*"]).fails(2, "--kind");
    telha(db, &["jobs", "resume", "--scope", "not-a-scope"]).fails(2, "--scope");
}

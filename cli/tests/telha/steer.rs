//! `telha jobs promote | reschedule | priority` on a store (real `telha`
//! processes): each moves the job as the core says, a leased job is
//! refused (exit 2, the others still done), bad input is a usage error
//! with nothing written.

use telha_jobs::{EnqueueOptions, LeaseOptions, Queue, State};

use crate::support::{config, core_view, telha};

#[test]
fn promote_reschedule_and_priority_steer_waiting_jobs_and_refuse_a_leased_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let q = Queue::open(db, config()).unwrap();
    let leased = q.enqueue("embed", b"l", Default::default()).unwrap().id;
    q.lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    let later = EnqueueOptions::default().delay(std::time::Duration::from_secs(3600));
    let a = q.enqueue("embed", b"a", later.clone()).unwrap().id;
    let b = q.enqueue("embed", b"b", later).unwrap().id;
    q.close();
    drop(q);
    let (a_s, b_s, l_s) = (a.to_string(), b.to_string(), leased.to_string());

    let out = telha(db, &["--json", "jobs", "promote", &a_s]).json();
    assert_eq!(out["results"][0]["outcome"], "promoted", "{out}");
    let out = telha(db, &["--json", "jobs", "priority", &a_s, &b_s, "--to", "3"]).json();
    assert_eq!(out["results"][1]["outcome"], "reprioritized", "{out}");
    let text = telha(
        db,
        &["jobs", "reschedule", &b_s, "--at", "2030-01-01T00:00:00Z"],
    );
    assert_eq!(text.ok(), format!("rescheduled {b_s}\n"));

    // A leased job among others: the others are done, exit 2 (wrong state).
    let run = telha(db, &["jobs", "promote", &l_s, &b_s]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("leased"), "{run:#?}");
    assert!(run.stdout.contains(&format!("promoted {b_s}")), "{run:#?}");

    // Bad input: usage errors, nothing written.
    telha(db, &["jobs", "priority", &a_s, "--to", "256"]).fails(2, "256");
    telha(db, &["jobs", "reschedule", &a_s]).fails(2, "--at");
    telha(
        db,
        &["jobs", "reschedule", &a_s, "--at", "99999-01-01T00:00:00Z"],
    )
    .fails(2, "time");

    let q = core_view(db);
    let (ia, ib) = (q.get(&a).unwrap().unwrap(), q.get(&b).unwrap().unwrap());
    assert_eq!((ia.state, ia.priority), (State::Pending, 3));
    assert_eq!((ib.state, ib.priority), (State::Pending, 3));
    assert!(
        ib.state_ts < 1_893_456_000_000,
        "promoted after the reschedule"
    );
    let ts: Vec<_> = ia.events.iter().map(|e| e.transition.as_str()).collect();
    assert_eq!(ts, ["enqueued", "promoted", "reprioritized"]);
    assert_eq!(q.get(&leased).unwrap().unwrap().state, State::Leased);
    assert!(q.check().unwrap().problems.is_empty());
}

#[test]
fn enqueue_with_debounce_updates_the_keys_pending_job() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let args = |p: &'static str| {
        [
            "--json",
            "jobs",
            "enqueue",
            "digest",
            "--idempotency-key",
            "doc-1",
            "--debounce",
            "1h",
            "--debounce-max",
            "2h",
            "--payload-json",
            p,
        ]
    };
    let first = telha(db, &args("1")).json();
    assert_eq!(
        (&first["created"], &first["debounced"]),
        (&true.into(), &false.into())
    );
    let again = telha(db, &args("2")).json();
    assert_eq!(again["id"], first["id"], "{again}");
    assert_eq!(
        (&again["created"], &again["debounced"]),
        (&false.into(), &true.into())
    );
    let text = telha(
        db,
        &[
            "jobs",
            "enqueue",
            "digest",
            "--idempotency-key",
            "doc-1",
            "--debounce",
            "1h",
        ],
    );
    assert!(text.ok().starts_with("debounced "), "{text:#?}");
    let q = Queue::open(db, config()).unwrap();
    let id: telha_jobs::JobId = first["id"].as_str().unwrap().parse().unwrap();
    let info = q.get(&id).unwrap().unwrap();
    assert_eq!(info.state, State::Pending);
    assert!(info.payload.is_empty(), "the last enqueue had no payload");
    let events: Vec<_> = info.events.iter().map(|e| e.transition.as_str()).collect();
    assert_eq!(events, ["enqueued", "debounced", "debounced"]);
}

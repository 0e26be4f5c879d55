//! The operator API's steering actions (issue 44): promote, reschedule and
//! priority on a job, each answering the job as it is after the move;
//! a leased job is 409 WRONG_STATE; bad bodies are 400 with nothing
//! written; the CSRF token is needed as for every action.

mod common;

use serde_json::json;
use telha_jobs::{EnqueueOptions, LeaseOptions};
use telha_jobs_server::ServeOptions;

#[test]
fn promote_reschedule_and_priority_move_a_waiting_job_and_refuse_a_leased_one() {
    let (s, h) = common::ui(ServeOptions::default());
    let q = &s.queue;
    let leased = q.enqueue("embed", b"l", Default::default()).unwrap().id;
    q.lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    let later = EnqueueOptions::default().delay(std::time::Duration::from_secs(3600));
    let id = q.enqueue("embed", b"x", later).unwrap().id;
    let path = |verb: &str| format!("/api/v1/jobs/{id}/{verb}");

    assert_eq!(
        h.post(&path("promote"), "").code(),
        "FORBIDDEN",
        "no CSRF token"
    );
    let csrf = h.get("/api/v1/info").json()["csrf"]
        .as_str()
        .unwrap()
        .to_string();
    let c = h.with("x-csrf-token", &csrf);

    let r = c
        .post(&path("reschedule"), r#"{"run_at":"2031-01-01T00:00:00Z"}"#)
        .json();
    assert_eq!(r["job"]["state_ts_ms"], json!(1_924_992_000_000u64), "{r}");
    let r = c.post(&path("priority"), r#"{"priority":4}"#).json();
    assert_eq!(r["job"]["priority"], json!(4), "{r}");
    let r = c.post(&path("promote"), "").json();
    assert_eq!(r["job"]["state"], json!("pending"));
    let due = r["job"]["state_ts_ms"].as_u64().unwrap();
    assert!(due < 1_924_992_000_000, "ready now: {r}");
    let r = c.post(&path("reschedule"), r#"{"delay":"2h"}"#).json();
    assert!(r["job"]["state_ts_ms"].as_u64().unwrap() > due, "{r}");

    // Bad bodies: 400, nothing written.
    let before = q.get(&id).unwrap().unwrap();
    for (verb, body) in [
        ("priority", r#"{"priority":256}"#),
        ("priority", r#"{"priority":-1}"#),
        ("priority", r#"{}"#),
        ("reschedule", r#"{"run_at":"soon"}"#),
        ("reschedule", r#"{"run_at":253402300800000}"#),
        ("reschedule", r#"{"delay":"2h","run_at":1}"#),
        ("reschedule", r#"{"delay":"-2h"}"#),
        ("promote", r#"{"x":1}"#),
    ] {
        let a = c.post(&path(verb), body);
        assert_eq!(
            (a.status, a.code().as_str()),
            (400, "INVALID_ARGUMENT"),
            "{verb} {body}"
        );
    }
    assert_eq!(q.get(&id).unwrap().unwrap(), before, "nothing written");

    let l = c.post(&format!("/api/v1/jobs/{leased}/promote"), "");
    assert_eq!((l.status, l.code().as_str()), (409, "WRONG_STATE"));
    let none = c.post(
        "/api/v1/jobs/00000000-0000-0000-0000-000000000009/priority",
        r#"{"priority":1}"#,
    );
    assert_eq!(none.status, 404);
    assert!(q.check().unwrap().problems.is_empty());
}

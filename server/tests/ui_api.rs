//! The operator JSON API (`/api/v1/`) without a browser: every endpoint's
//! answer shape, paging, filters, typed errors and CSRF (the token and
//! read-only mode: ui_auth.rs), against a real server on a real store.

mod common;

use std::collections::HashSet;

use serde_json::{json, Value as Json};
use telha_jobs::{EnqueueOptions, LeaseOptions, NewJob, Schedule, Scope};
use telha_jobs_server::ServeOptions;

use common::{csrf, dead, ui};

#[test]
fn every_read_answers_its_documented_shape() {
    let (s, h) = ui(ServeOptions::default());
    let q = &s.queue;
    q.enqueue("embed", b"{}", EnqueueOptions::default())
        .unwrap();
    let d = dead(q, "ingest", 2, "boom");
    let held = q
        .lease_next("w-7", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    q.schedule_put(&Schedule::new("nightly", "0 3 * * *", "report").tag("reports"))
        .unwrap();
    q.set_limit(
        &"kind:ingest".parse().unwrap(),
        telha_jobs::Limit::rate(2.5, 4),
    )
    .unwrap();

    let info = h.get("/api/v1/info").json();
    assert_eq!(info["auth_required"], json!(false));
    assert_eq!(info["read_only"], json!(false));
    assert!(info["csrf"].as_str().unwrap().len() >= 32);

    let o = h.get("/api/v1/overview");
    assert_eq!(o.status, 200);
    assert!(o
        .header("content-security-policy")
        .unwrap()
        .contains("script-src 'self'"));
    let o = o.json();
    assert_eq!(o["stats"]["by_kind"]["ingest"]["dead"], json!(2));
    assert_eq!(o["stats"]["total"]["leased"], json!(1));
    let nil = "00000000-0000-0000-0000-000000000000";
    assert_eq!(
        o["stats"]["by_scope"][nil]["total"],
        json!(3),
        "counts per scope"
    );
    assert_eq!(o["leased_in_flight"], json!(1));
    // Per kind with work waiting: the backlog (pending + failed) and the
    // oldest due job's age (null when none is due).
    for (k, c) in o["stats"]["by_kind"].as_object().unwrap() {
        let backlog = c["pending"].as_u64().unwrap() + c["failed"].as_u64().unwrap();
        let r = &o["ready"][k];
        if backlog == 0 {
            assert!(r.is_null(), "{k}: {r}");
        } else {
            assert_eq!(r["backlog"], json!(backlog), "{k}");
            assert!(r["oldest_ready_ms"].is_u64() || r["oldest_ready_ms"].is_null());
        }
    }
    assert_eq!(o["schedules"], json!(1));
    let limit = json!({
        "target": "kind:ingest",
        "limit": {"concurrency": null, "rate": 2.5, "burst": 4, "weight": null, "ordered": false},
        "leased": 0, "held": 0, "throttled": {"concurrency": 0, "rate": 0},
    });
    assert_eq!(o["limits"], json!([limit]));
    assert_eq!(h.get("/api/v1/limits").json(), json!({ "limits": [limit] }));
    assert!(o["throughput"]["points"].is_array());
    assert_eq!(h.get("/api/v1/stats").json(), o["stats"]);
    assert_eq!(o["stats"]["scope_order"], json!("pending"));
    assert_eq!(o["stats"]["scopes_next"], Json::Null, "every scope fits");
    let sc = h.get("/api/v1/scopes").json();
    assert_eq!(sc["order"], json!("name"));
    assert_eq!(sc["next"], Json::Null);
    let rows = sc["scopes"].as_array().unwrap();
    assert_eq!(rows[0]["scope"], json!(nil));
    assert_eq!(rows[0]["counts"]["total"], json!(3));
    let first = h.get("/api/v1/scopes?limit=1&order=dead").json();
    assert_eq!(first["scopes"].as_array().unwrap().len(), 1);
    let after = first["next"].as_str().map(str::to_string);
    if let Some(after) = after {
        let rest = h
            .get(&format!("/api/v1/scopes?order=dead&after={after}"))
            .json();
        assert!(rest["scopes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["scope"] != first["scopes"][0]["scope"]));
    }
    let st = h.get("/api/v1/stats?limit=0").json();
    assert_eq!(st["by_scope"], json!({}));
    assert_eq!(st["by_kind"], o["stats"]["by_kind"], "kinds stay whole");
    assert_eq!(h.get("/api/v1/stats?limit=5000").status, 400);
    assert_eq!(h.get("/api/v1/scopes?prefix=xyz").status, 400);
    assert_eq!(
        h.get("/api/v1/throughput").json()["interval_ms"],
        json!(5000)
    );

    let page = h.get("/api/v1/jobs?state=dead").json();
    assert_eq!(page["jobs"].as_array().unwrap().len(), 2);
    assert_eq!(page["next"], Json::Null);
    assert_eq!(page["jobs"][0]["last_error"], json!("boom"));
    assert!(
        page["jobs"][0].get("payload").is_none(),
        "list pages are light"
    );

    let j = h.get(&format!("/api/v1/jobs/{}", d[0])).json();
    assert_eq!(j["state"], json!("dead"));
    assert_eq!(
        j["payload"],
        json!({"encoding": "utf8", "value": "ingest-0"})
    );
    assert_eq!(j["payload_size"], json!(8));
    let events: Vec<&str> = j["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["transition"].as_str().unwrap())
        .collect();
    assert_eq!(events.first(), Some(&"enqueued"));
    assert!(events.contains(&"dead"), "{events:?}");

    let raw = h.get(&format!("/api/v1/jobs/{}/payload", d[0]));
    assert_eq!(raw.status, 200);
    assert_eq!(raw.body, b"ingest-0");
    assert_eq!(raw.header("content-type"), Some("application/octet-stream"));
    let none = h.get(&format!("/api/v1/jobs/{}/result", d[0]));
    assert_eq!((none.status, none.code().as_str()), (404, "NOT_FOUND"));

    let l = h.get("/api/v1/leases").json();
    assert_eq!(l["workers"][0]["worker_id"], json!("w-7"));
    assert_eq!(
        l["workers"][0]["leases"][0]["id"],
        json!(held.id.to_string())
    );
    assert_eq!(l["truncated"], json!(false));

    let sch = h.get("/api/v1/schedules").json();
    assert_eq!(sch["schedules"][0]["name"], json!("nightly"));
    assert!(sch["schedules"][0]["next_slot_ms"].is_u64());
    assert_eq!(sch["schedules"][0]["tags"], json!(["reports"]));
    assert_eq!(sch["schedules"][0]["metadata"], json!({}));

    let api = h.get("/api/v1/openapi.json").json();
    assert_eq!(api["openapi"].as_str().map(|v| &v[..2]), Some("3."));
    let page = h.get("/");
    assert_eq!(page.status, 200);
    assert!(page
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    for a in [
        "/assets/app.js",
        "/assets/dom.js",
        "/assets/scopes.js",
        "/assets/find.js",
        "/assets/app.css",
        "/assets/favicon.svg",
    ] {
        assert_eq!(h.get(a).status, 200, "{a}");
    }
    let m = h.get("/metrics");
    assert!(String::from_utf8_lossy(&m.body)
        .contains("telha_jobs_jobs{kind=\"ingest\",state=\"dead\"} 2"));
}

#[test]
fn pages_and_filters_cover_every_job_once() {
    let (s, h) = ui(ServeOptions::default());
    let a: Scope = "00000000-0000-0000-0000-00000000000a".parse().unwrap();
    let b: Scope = "00000000-0000-0000-0000-00000000000b".parse().unwrap();
    let mut jobs = Vec::new();
    for i in 0..120 {
        let kind = if i % 3 == 0 { "mail.send" } else { "embed" };
        let scope = if i % 2 == 0 { a } else { b };
        jobs.push(NewJob {
            options: EnqueueOptions {
                scope: Some(scope),
                ..EnqueueOptions::default()
            },
            ..NewJob::new(kind, vec![])
        });
    }
    s.queue.enqueue_many(jobs).unwrap();
    let all = |filter: &str| {
        let mut seen = Vec::new();
        let mut after: Option<String> = None;
        let mut pages = 0;
        loop {
            let mut path = format!("/api/v1/jobs?limit=50{filter}");
            if let Some(c) = &after {
                path.push_str(&format!("&after={c}"));
            }
            let p = h.get(&path).json();
            pages += 1;
            for j in p["jobs"].as_array().unwrap() {
                seen.push(j["id"].as_str().unwrap().to_string());
            }
            match p["next"].as_str() {
                Some(n) => after = Some(n.to_string()),
                None => return (seen, pages),
            }
        }
    };
    let (ids, pages) = all("");
    assert_eq!(ids.len(), 120);
    assert_eq!(
        ids.iter().collect::<HashSet<_>>().len(),
        120,
        "no job twice"
    );
    assert!(pages >= 3);
    assert_eq!(all("&kind=mail.send").0.len(), 40);
    assert_eq!(all("&kind=mail:*").0.len(), 0, "a family is its own prefix");
    assert_eq!(all(&format!("&scope={a}")).0.len(), 60);
    assert_eq!(
        all(&format!("&scope={b}&kind=embed&state=pending")).0.len(),
        40
    );
    assert_eq!(all("&state=dead").0.len(), 0);
}

#[test]
fn bad_input_gets_typed_errors() {
    let (_s, h) = ui(ServeOptions::default());
    let h = csrf(&h);
    let cases = [
        (
            "GET",
            "/api/v1/jobs/not-a-uuid",
            "",
            400,
            "INVALID_ARGUMENT",
        ),
        (
            "GET",
            "/api/v1/jobs/01a23bf2-5b63-75f9-9b56-dba50174b41b",
            "",
            404,
            "NOT_FOUND",
        ),
        (
            "GET",
            "/api/v1/jobs?state=bogus",
            "",
            400,
            "INVALID_ARGUMENT",
        ),
        ("GET", "/api/v1/jobs?scope=x", "", 400, "INVALID_ARGUMENT"),
        ("GET", "/api/v1/jobs?limit=0", "", 400, "INVALID_ARGUMENT"),
        ("GET", "/api/v1/jobs?limit=501", "", 400, "INVALID_ARGUMENT"),
        ("GET", "/api/v1/jobs?color=red", "", 400, "INVALID_ARGUMENT"),
        ("GET", "/api/v1/jobs?after=%ff", "", 400, "INVALID_ARGUMENT"),
        ("GET", "/api/v1/nothing", "", 404, "NOT_FOUND"),
        (
            "POST",
            "/api/v1/retry",
            "{not json",
            400,
            "INVALID_ARGUMENT",
        ),
        ("POST", "/api/v1/retry", "[1]", 400, "INVALID_ARGUMENT"),
        (
            "POST",
            "/api/v1/retry",
            r#"{"state":"pending"}"#,
            400,
            "INVALID_ARGUMENT",
        ),
        (
            "POST",
            "/api/v1/retry",
            r#"{"kind":7}"#,
            400,
            "INVALID_ARGUMENT",
        ),
        (
            "POST",
            "/api/v1/retry",
            r#"{"colour":"x"}"#,
            400,
            "INVALID_ARGUMENT",
        ),
        ("POST", "/api/v1/pause", "{}", 400, "INVALID_ARGUMENT"),
        (
            "POST",
            "/api/v1/pause",
            r#"{"target":"tenant:9"}"#,
            400,
            "INVALID_ARGUMENT",
        ),
        (
            "POST",
            "/api/v1/purge",
            r#"{"state":"pending"}"#,
            400,
            "INVALID_ARGUMENT",
        ),
        (
            "POST",
            "/api/v1/purge",
            r#"{"state":"dead","older_than_ms":-1}"#,
            400,
            "INVALID_ARGUMENT",
        ),
        (
            "POST",
            "/api/v1/jobs/01a23bf2-5b63-75f9-9b56-dba50174b41b/retry",
            "",
            404,
            "NOT_FOUND",
        ),
        ("POST", "/api/v1/schedules/nope/pause", "", 404, "NOT_FOUND"),
        ("POST", "/api/v1/frobnicate", "{}", 404, "NOT_FOUND"),
        ("DELETE", "/api/v1/jobs", "", 405, "METHOD_NOT_ALLOWED"),
    ];
    for (m, path, body, status, code) in cases {
        let a = h.request(m, path, Some(body));
        assert_eq!(
            (a.status, a.code()),
            (status, code.to_string()),
            "{m} {path} {body}"
        );
    }
    // Every bad request above left the server answering.
    let info = h.get("/api/v1/info");
    assert_eq!(info.status, 200);
}

#[test]
fn actions_move_jobs_and_need_the_csrf_token() {
    let (s, h) = ui(ServeOptions::default());
    let q = &s.queue;
    let d = dead(q, "ingest", 3, "boom");
    dead(q, "embed", 2, "bad");
    let id = &d[0];
    // No CSRF token, a wrong one, a cross-site Origin: refused, nothing moved.
    let path = format!("/api/v1/jobs/{id}/retry");
    assert_eq!(h.post(&path, "{}").code(), "FORBIDDEN");
    assert_eq!(
        h.with("x-csrf-token", "0").post(&path, "{}").code(),
        "FORBIDDEN"
    );
    let c = csrf(&h);
    let forged = c.with("origin", "http://evil.example");
    assert_eq!(forged.post(&path, "{}").code(), "FORBIDDEN");
    assert_eq!(q.stats().unwrap().by_kind["ingest"].dead, 3);

    let r = c.post(&path, "{}").json();
    assert_eq!(r["job"]["state"], json!("pending"));
    assert_eq!(q.stats().unwrap().by_kind["ingest"].dead, 2);
    let again = c.post(&path, "{}");
    // A pending job is not retryable: the core says so (its code, as is).
    assert_eq!(
        (again.status, again.code().as_str()),
        (400, "INVALID_ARGUMENT")
    );

    let bulk = c.post("/api/v1/retry", r#"{"kind":"ingest"}"#).json();
    assert_eq!(bulk, json!({"retried": 2, "errors": 0}));
    let st = q.stats().unwrap();
    assert_eq!(
        (st.by_kind["ingest"].dead, st.by_kind["ingest"].pending),
        (0, 3)
    );
    assert_eq!(st.by_kind["embed"].dead, 2, "another kind untouched");

    let p = c
        .post("/api/v1/pause", r#"{"target":"kind:ingest"}"#)
        .json();
    assert_eq!(
        p,
        json!({"changed": true, "paused": {"kinds": ["ingest"], "scopes": []}})
    );
    assert_eq!(
        h.get("/api/v1/stats").json()["paused"]["kinds"],
        json!(["ingest"])
    );
    let r = c
        .post("/api/v1/resume", r#"{"target":"kind:ingest"}"#)
        .json();
    assert_eq!(r["changed"], json!(true));

    let cancel = c
        .post(
            &format!("/api/v1/jobs/{}/cancel", d[1]),
            r#"{"reason":"operator"}"#,
        )
        .json();
    assert_eq!(cancel["outcome"], json!("cancelled"));
    assert_eq!(cancel["job"]["state"], json!("cancelled"));
    assert_eq!(
        c.post(&format!("/api/v1/jobs/{}/delete", d[1]), "").json(),
        json!({"ok": true})
    );
    assert_eq!(h.get(&format!("/api/v1/jobs/{}", d[1])).status, 404);

    let many = c
        .post("/api/v1/cancel", r#"{"kind":"ingest","state":"pending"}"#)
        .json();
    assert_eq!(many["cancelled"], json!(2));
    let purged = c.post("/api/v1/purge", r#"{"state":"cancelled"}"#).json();
    assert_eq!(purged["purged"], json!(2));

    q.schedule_put(&Schedule::new("nightly", "0 3 * * *", "report"))
        .unwrap();
    let sp = c.post("/api/v1/schedules/nightly/pause", "").json();
    assert_eq!(sp["paused"], json!(true));
    let sr = c.post("/api/v1/schedules/nightly/resume", "").json();
    assert_eq!(sr["paused"], json!(false));
}

#[test]
fn the_openapi_document_names_every_route() {
    let (_s, h) = ui(ServeOptions::default());
    let doc = h.get("/api/v1/openapi.json").json();
    let paths = doc["paths"].as_object().unwrap();
    for p in [
        "/info",
        "/login",
        "/logout",
        "/overview",
        "/stats",
        "/scopes",
        "/throughput",
        "/jobs",
        "/find",
        "/jobs/{id}",
        "/jobs/{id}/payload",
        "/jobs/{id}/result",
        "/jobs/{id}/retry",
        "/jobs/{id}/cancel",
        "/jobs/{id}/delete",
        "/jobs/{id}/promote",
        "/jobs/{id}/reschedule",
        "/jobs/{id}/priority",
        "/retry",
        "/cancel",
        "/purge",
        "/pause",
        "/resume",
        "/leases",
        "/limits",
        "/schedules",
        "/schedules/{name}/pause",
        "/schedules/{name}/resume",
    ] {
        assert!(paths.contains_key(p), "openapi.json lacks {p}");
    }
    assert_eq!(
        paths.len(),
        28,
        "a route in openapi.json that the tests do not know"
    );
}

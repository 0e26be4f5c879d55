//! The operator API's access rules without a browser: a token server
//! needs a login or the bearer, read-only mode shows but refuses every
//! action, an open server answers only loopback host names; against a
//! real server on a real store.

mod common;

use common::http::Http;
use common::{csrf, dead, ui};
use serde_json::{json, Value as Json};
use telha_jobs_server::ServeOptions;

#[test]
fn a_token_server_needs_a_login_or_the_bearer() {
    let (s, h) = ui(ServeOptions {
        token: Some("s3cret".into()),
        ..ServeOptions::default()
    });
    let d = dead(&s.queue, "ingest", 1, "boom");
    let info = h.get("/api/v1/info").json();
    assert_eq!(
        (info["auth_required"].clone(), info["authenticated"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!(info["csrf"], Json::Null);
    assert_eq!(
        h.get("/").status,
        200,
        "the page loads, to show its login form"
    );
    for p in [
        "/api/v1/overview",
        "/api/v1/jobs",
        "/api/v1/leases",
        &format!("/api/v1/jobs/{}", d[0]),
    ] {
        let a = h.get(p);
        assert_eq!(
            (a.status, a.code()),
            (401, "UNAUTHENTICATED".to_string()),
            "{p}"
        );
    }
    assert_eq!(h.get("/metrics").status, 401);
    assert_eq!(h.post("/api/v1/login", r#"{"token":"wrong"}"#).status, 401);
    assert_eq!(
        h.with("cookie", "telha_session=forged")
            .get("/api/v1/stats")
            .status,
        401
    );

    let login = h.post("/api/v1/login", r#"{"token":"s3cret"}"#);
    assert_eq!(login.status, 200);
    let cookie = login.header("set-cookie").unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let session = h.with("cookie", cookie.split(';').next().unwrap());
    let csrf = login.json()["csrf"].as_str().unwrap().to_string();
    assert_eq!(session.get("/api/v1/stats").status, 200);
    assert_eq!(session.get("/api/v1/info").json()["csrf"], json!(csrf));
    let retry = format!("/api/v1/jobs/{}/retry", d[0]);
    assert_eq!(
        session.post(&retry, "{}").code(),
        "FORBIDDEN",
        "a session's POST needs its CSRF token"
    );
    assert_eq!(s.queue.stats().unwrap().total.dead, 1);
    let acting = session.with("x-csrf-token", &csrf);
    assert_eq!(acting.post(&retry, "{}").status, 200);

    // API clients: the bearer header, no CSRF token needed.
    let bearer = h.with("authorization", "Bearer s3cret");
    assert_eq!(
        bearer.get("/api/v1/stats").json()["total"]["pending"],
        json!(1)
    );
    assert_eq!(
        bearer
            .post("/api/v1/pause", r#"{"target":"kind:x"}"#)
            .status,
        200
    );
    assert_eq!(
        h.with("authorization", "Bearer nope")
            .get("/api/v1/stats")
            .status,
        401
    );

    // Logging out ends the session.
    assert_eq!(session.post("/api/v1/logout", "").status, 200);
    assert_eq!(session.get("/api/v1/stats").status, 401);
}

#[test]
fn read_only_mode_shows_but_refuses_every_action() {
    let (s, h) = ui(ServeOptions {
        ui_read_only: true,
        ..ServeOptions::default()
    });
    let d = dead(&s.queue, "ingest", 1, "boom");
    assert_eq!(h.get("/api/v1/info").json()["read_only"], json!(true));
    assert_eq!(h.get(&format!("/api/v1/jobs/{}", d[0])).status, 200);
    let c = csrf(&h);
    for (path, body) in [
        (format!("/api/v1/jobs/{}/retry", d[0]), "{}"),
        (format!("/api/v1/jobs/{}/delete", d[0]), "{}"),
        ("/api/v1/retry".to_string(), "{}"),
        ("/api/v1/pause".to_string(), r#"{"target":"kind:ingest"}"#),
        ("/api/v1/purge".to_string(), r#"{"state":"dead"}"#),
    ] {
        let a = c.post(&path, body);
        assert_eq!(
            (a.status, a.code()),
            (403, "READ_ONLY".to_string()),
            "{path}"
        );
    }
    assert_eq!(s.queue.stats().unwrap().total.dead, 1);
}

#[test]
fn without_a_token_only_loopback_host_names_are_answered() {
    let (_s, h) = ui(ServeOptions::default());
    // A DNS-rebinding page: its Host is the attacker's name.
    let rebound = Http {
        headers: vec![("host".into(), "evil.example:7451".into())],
        ..h.clone()
    };
    let a = rebound.get("/api/v1/info");
    assert_eq!((a.status, a.code().as_str()), (403, "FORBIDDEN"));
    assert_eq!(
        h.with("host", "localhost:1").get("/api/v1/info").status,
        200
    );
}

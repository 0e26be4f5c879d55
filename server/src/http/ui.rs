//! The operator page's routes: the embedded files, then `/api/v1/…` behind
//! the session and CSRF checks of [`Sessions`].

use std::sync::Arc;

use hyper::header::HeaderValue;
use hyper::{Method, Response};
use serde_json::{json, Value as Json};

use super::reply::{error, ok, Body};
use super::session::{loopback_host, Access, Sessions, COOKIE, SESSION_TTL};
use super::throughput::Samples;
use super::{actions, api, assets, Http, Req};
use crate::auth::Check;

pub(crate) struct Ui {
    pub sessions: Sessions,
    pub read_only: bool,
    pub throughput: Arc<Samples>,
    /// Served over TLS: the cookie gets `Secure`.
    secure: bool,
}

impl Ui {
    pub fn new(check: Check, token_required: bool, read_only: bool, secure: bool) -> Self {
        Ui {
            sessions: Sessions::new(check, token_required),
            read_only,
            throughput: Arc::default(),
            secure,
        }
    }

    pub async fn route(&self, http: &Http, req: Req) -> Response<Body> {
        // Without a token the listener is loopback; a Host that is not
        // loopback is a DNS-rebinding page pretending to be same-origin.
        if !self.sessions.required() && !loopback_host(req.header("host")) {
            return error(
                403,
                "FORBIDDEN",
                "this server has no token, so it answers loopback Host names only",
            );
        }
        if req.method == Method::GET {
            if let Some(a) = assets::get(&req.path) {
                return a;
            }
        }
        let Some(rest) = req.path.strip_prefix("/api/v1/") else {
            return error(404, "NOT_FOUND", &format!("no page {}", req.path));
        };
        let access = self.sessions.access(&req);
        match (&req.method, rest) {
            (&Method::GET, "info") => return self.info(&access),
            (&Method::POST, "login") => return self.login(&req),
            (&Method::POST, "logout") => {
                self.sessions.logout(&req);
                return cookie(ok(&json!({"ok": true})), "", 0, self.secure);
            }
            _ => {}
        }
        if access == Access::Denied {
            return error(
                401,
                "UNAUTHENTICATED",
                "log in (POST /api/v1/login) or send `authorization: Bearer <token>`",
            );
        }
        // In cluster mode, this term's engine; a follower answers 503 with
        // the leader in the message.
        let q = match http.shared.source.queue() {
            Ok(q) => q,
            Err(nl) => return super::reply::core_error(&nl.to_error()),
        };
        match req.method {
            Method::GET => api::get(self, q, rest, &req).await,
            Method::POST => {
                if !self.sessions.csrf_ok(&access, &req) {
                    return error(
                        403,
                        "FORBIDDEN",
                        "a state-changing request needs the X-CSRF-Token header \
                         (from GET /api/v1/info) and a same-origin Origin",
                    );
                }
                if self.read_only {
                    return error(403, "READ_ONLY", "this server's page is read-only");
                }
                actions::post(q, rest, &req).await
            }
            _ => error(405, "METHOD_NOT_ALLOWED", "GET or POST only"),
        }
    }

    fn info(&self, access: &Access) -> Response<Body> {
        ok(&json!({
            "version": env!("CARGO_PKG_VERSION"),
            "read_only": self.read_only,
            "auth_required": self.sessions.required(),
            "authenticated": *access != Access::Denied,
            "csrf": self.sessions.csrf(access),
            "assets_bytes": assets::total_bytes(),
        }))
    }

    fn login(&self, req: &Req) -> Response<Body> {
        let token = serde_json::from_slice::<Json>(&req.body)
            .ok()
            .and_then(|v| v.get("token").and_then(Json::as_str).map(str::to_string));
        let Some(token) = token else {
            return error(
                400,
                "INVALID_ARGUMENT",
                "the body must be {\"token\": \"...\"}",
            );
        };
        if !self.sessions.required() {
            return ok(&json!({"ok": true, "csrf": self.sessions.csrf(&Access::Open)}));
        }
        match self.sessions.login(&token) {
            Some((id, csrf)) => cookie(
                ok(&json!({"ok": true, "csrf": csrf})),
                &id,
                SESSION_TTL.as_secs(),
                self.secure,
            ),
            None => error(401, "UNAUTHENTICATED", "wrong token"),
        }
    }
}

/// Set (or, with `max_age` 0, clear) the session cookie: HttpOnly (no
/// script reads it), SameSite=Strict (no other site's request carries it).
/// Over TLS also `Secure` (never sent in plain text).
fn cookie(mut r: Response<Body>, id: &str, max_age: u64, secure: bool) -> Response<Body> {
    let secure = if secure { "; Secure" } else { "" };
    let c = format!("{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}");
    if let Ok(v) = HeaderValue::from_str(&c) {
        r.headers_mut().insert("set-cookie", v);
    }
    r
}

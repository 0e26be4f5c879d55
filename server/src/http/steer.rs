//! The page's steering actions (issue 44): `POST /api/v1/jobs/{id}/promote`
//! (no body), `/reschedule` (`{"run_at": RFC 3339 or ms}` or `{"delay":
//! "2h"}`), `/priority` (`{"priority": 0..255}`). Each answers the job as it
//! is after the move. The caller ([`super::actions::post`]) has checked
//! the session, the CSRF token and read-only mode.

use hyper::Response;
use serde_json::{json, Map, Value as Json};
use telha_jobs::limits::{check_instant, instant_after};
use telha_jobs::{JobId, Queue};

use super::actions::body;
use super::api::{blocking, full_json, load, tri};
use super::reply::{bad, ok, Body};
use super::Req;
use crate::service::now_ms;

/// What a steering request asks.
enum Move {
    Promote,
    Reschedule(u64),
    Priority(u8),
}

/// `POST /api/v1/jobs/{id}/<verb>` for `promote`, `reschedule`, `priority`.
pub(crate) async fn post(q: Queue, id: JobId, verb: &str, req: &Req) -> Response<Body> {
    let m = match verb {
        "promote" => {
            tri!(body(req, &[]));
            Move::Promote
        }
        "reschedule" => {
            let b = tri!(body(req, &["run_at", "delay"]));
            Move::Reschedule(tri!(run_at(&b)))
        }
        _ => {
            let b = tri!(body(req, &["priority"]));
            Move::Priority(tri!(priority(&b)))
        }
    };
    let q2 = q.clone();
    tri!(
        blocking(move || match m {
            Move::Promote => q2.promote(&id),
            Move::Reschedule(at) => q2.reschedule(&id, at),
            Move::Priority(p) => q2.set_priority(&id, p),
        })
        .await
    );
    let j = tri!(load(q, id).await);
    ok(&json!({"ok": true, "job": full_json(&j)}))
}

/// `run_at` (RFC 3339 text or ms since the epoch) or `delay` (`90s`, `2h`).
fn run_at(b: &Map<String, Json>) -> Result<u64, Response<Body>> {
    let at = match (b.get("run_at"), b.get("delay")) {
        (Some(_), Some(_)) => return Err(bad("give run_at or delay, not both")),
        (Some(Json::Number(n)), None) => n
            .as_u64()
            .ok_or_else(|| bad(format!("run_at must be ms since the epoch, not {n}")))?,
        (Some(Json::String(s)), None) => {
            let t = humantime::parse_rfc3339_weak(s.trim())
                .map_err(|e| bad(format!("run_at {s:?} is not an RFC 3339 time: {e}")))?;
            let d = t
                .duration_since(std::time::UNIX_EPOCH)
                .map_err(|_| bad(format!("run_at {s:?} is before 1970")))?;
            u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
        }
        (None, Some(Json::String(s))) => {
            let d = humantime::parse_duration(s.trim())
                .map_err(|e| bad(format!("delay {s:?} is not a duration: {e}")))?;
            instant_after("delay", now_ms(), d).map_err(|e| bad(e.to_string()))?
        }
        (None, None) => return Err(bad("run_at or delay is required")),
        (Some(v), None) => return Err(bad(format!("run_at must be a string or ms, not {v}"))),
        (None, Some(v)) => return Err(bad(format!("delay must be a string (\"2h\"), not {v}"))),
    };
    check_instant("run_at", at).map_err(|e| bad(e.to_string()))
}

/// `priority`: an integer 0 to 255 (or its decimal text, as a form sends).
fn priority(b: &Map<String, Json>) -> Result<u8, Response<Body>> {
    let n = match b.get("priority") {
        Some(Json::Number(n)) => n.as_u64(),
        Some(Json::String(s)) => s.trim().parse::<u64>().ok(),
        None | Some(Json::Null) => return Err(bad("priority is required (0 to 255)")),
        Some(_) => None,
    };
    let raw = b
        .get("priority")
        .map(ToString::to_string)
        .unwrap_or_default();
    n.and_then(|n| u8::try_from(n).ok())
        .ok_or_else(|| bad(format!("priority must be an integer 0 to 255, not {raw}")))
}

//! The API's actions (`POST /api/v1/…`, JSON bodies): retry, cancel and
//! delete one job (promote, reschedule and priority in `steer.rs`); retry,
//! cancel and purge by filter; pause and resume a kind or scope; pause and
//! resume a schedule. The caller ([`super::Ui`])
//! has checked the session, the CSRF token and read-only mode.

use hyper::Response;
use serde_json::{json, Map, Value as Json};
use telha_jobs::{CancelFilter, KindPattern, ListQuery, PauseTarget, Queue, Scope, State};

use super::api::{blocking, full_json, job_id, load, parse, tri};
use super::reply::{bad, error, ok, Body};
use super::Req;
use crate::json::{paused_json, schedule_json};
use crate::service::now_ms;

/// The body as a JSON object whose keys are all in `allowed` (an empty
/// body is `{}`).
pub(crate) fn body(req: &Req, allowed: &[&str]) -> Result<Map<String, Json>, Response<Body>> {
    if req.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    let v: Json =
        serde_json::from_slice(&req.body).map_err(|e| bad(format!("the body is not JSON: {e}")))?;
    let Json::Object(m) = v else {
        return Err(bad("the body must be a JSON object"));
    };
    if let Some(k) = m.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(bad(format!(
            "unknown field {k:?} (fields: {})",
            allowed.join(", ")
        )));
    }
    Ok(m)
}

/// A string field, `None` when absent, null or empty.
fn field<'a>(m: &'a Map<String, Json>, k: &str) -> Result<Option<&'a str>, Response<Body>> {
    match m.get(k) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) if s.is_empty() => Ok(None),
        Some(Json::String(s)) => Ok(Some(s)),
        Some(other) => Err(bad(format!("{k} must be a string, not {other}"))),
    }
}

/// `POST /api/v1/<rest>`.
pub(crate) async fn post(q: Queue, rest: &str, req: &Req) -> Response<Body> {
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        ["jobs", id, "retry"] => {
            tri!(body(req, &[]));
            let id = tri!(job_id(id));
            let q2 = q.clone();
            tri!(blocking(move || q2.retry(&id)).await);
            let j = tri!(load(q, id).await);
            ok(&json!({"ok": true, "job": full_json(&j)}))
        }
        ["jobs", id, "cancel"] => {
            let m = tri!(body(req, &["reason"]));
            let reason = tri!(field(&m, "reason"))
                .unwrap_or("cancelled from the web page")
                .to_string();
            let id = tri!(job_id(id));
            let q2 = q.clone();
            let outcome = tri!(blocking(move || q2.cancel(&id, &reason)).await);
            let j = tri!(load(q, id).await);
            ok(&json!({"outcome": outcome.name(), "job": full_json(&j)}))
        }
        ["jobs", id, "delete"] => {
            tri!(body(req, &[]));
            let id = tri!(job_id(id));
            tri!(blocking(move || q.delete(&id)).await);
            ok(&json!({"ok": true}))
        }
        ["jobs", id, verb @ ("promote" | "reschedule" | "priority")] => {
            let id = tri!(job_id(id));
            super::steer::post(q, id, verb, req).await
        }
        ["retry"] => retry_many(q, req).await,
        ["cancel"] => cancel_many(q, req).await,
        ["purge"] => purge(q, req).await,
        [verb @ ("pause" | "resume")] => {
            let m = tri!(body(req, &["target"]));
            let Some(t) = tri!(field(&m, "target")) else {
                return bad("target is required (kind:NAME, kind:FAMILY:* or scope:UUID)");
            };
            let target = tri!(PauseTarget::parse(t).map_err(|e| bad(format!("target: {e}"))));
            let pause = *verb == "pause";
            let (changed, paused) = tri!(
                blocking(move || {
                    let c = if pause {
                        q.pause(&target)?
                    } else {
                        q.resume(&target)?
                    };
                    Ok((c, q.paused()?))
                })
                .await
            );
            ok(&json!({"changed": changed, "paused": paused_json(&paused)}))
        }
        ["schedules", name, verb @ ("pause" | "resume")] => {
            tri!(body(req, &[]));
            let (name, pause) = (name.to_string(), *verb == "pause");
            let info = tri!(
                blocking(move || if pause {
                    q.schedule_pause(&name)
                } else {
                    q.schedule_resume(&name)
                })
                .await
            );
            ok(&schedule_json(&info))
        }
        _ => error(
            404,
            "NOT_FOUND",
            &format!("no endpoint POST /api/v1/{rest}"),
        ),
    }
}

/// Retry every dead (or failed) job matching kind and scope, page by page.
async fn retry_many(q: Queue, req: &Req) -> Response<Body> {
    let m = tri!(body(req, &["state", "kind", "scope"]));
    let state = tri!(parse::<State>("state", tri!(field(&m, "state")))).unwrap_or(State::Dead);
    if !matches!(state, State::Dead | State::Failed) {
        return bad(format!("retry moves dead or failed jobs, not {state} ones"));
    }
    let kind = tri!(parse::<KindPattern>("kind", tri!(field(&m, "kind"))));
    let scope = tri!(parse::<Scope>("scope", tri!(field(&m, "scope"))));
    let (retried, errors) = tri!(
        blocking(move || {
            let mut query = ListQuery {
                state: Some(state),
                scope,
                kind,
                limit: 1000,
                ..ListQuery::default()
            };
            let mut ids = Vec::new();
            loop {
                let page = q.list(&query)?;
                ids.extend(page.jobs.iter().map(|j| j.id));
                match page.next {
                    Some(n) => query.after = Some(n),
                    None => break,
                }
            }
            // A job another caller moved meanwhile answers an error: counted,
            // not fatal (the rest are still retried).
            let mut done = (0u64, 0u64);
            for id in &ids {
                match q.retry(id) {
                    Ok(()) => done.0 += 1,
                    Err(e) if e.kind() == telha_jobs::ErrorKind::Storage => return Err(e),
                    Err(_) => done.1 += 1,
                }
            }
            Ok(done)
        })
        .await
    );
    ok(&json!({"retried": retried, "errors": errors}))
}

async fn cancel_many(q: Queue, req: &Req) -> Response<Body> {
    let m = tri!(body(req, &["state", "kind", "scope", "reason", "tag"]));
    let filter = CancelFilter {
        kind: tri!(parse::<KindPattern>("kind", tri!(field(&m, "kind")))),
        scope: tri!(parse::<Scope>("scope", tri!(field(&m, "scope")))),
        state: tri!(parse::<State>("state", tri!(field(&m, "state")))),
        reason: tri!(field(&m, "reason"))
            .unwrap_or("cancelled from the web page")
            .to_string(),
        tag: tri!(field(&m, "tag")).map(str::to_string),
    };
    let r = tri!(blocking(move || q.cancel_many(&filter)).await);
    ok(&json!({"cancelled": r.cancelled, "requested": r.requested, "corrupt": r.corrupt}))
}

async fn purge(q: Queue, req: &Req) -> Response<Body> {
    let m = tri!(body(req, &["state", "older_than_ms"]));
    let Some(state) = tri!(parse::<State>("state", tri!(field(&m, "state")))) else {
        return bad("state is required (completed, dead or cancelled)");
    };
    let older = match m.get("older_than_ms") {
        None | Some(Json::Null) => 0,
        Some(v) => match v.as_u64() {
            Some(n) => n,
            None => {
                return bad(format!(
                    "older_than_ms must be a whole number of ms, not {v}"
                ))
            }
        },
    };
    // Got there at or before now - older_than_ms (the core's cutoff is
    // exclusive).
    let cutoff = now_ms().saturating_sub(older).saturating_add(1);
    let r = tri!(blocking(move || q.purge(state, cutoff)).await);
    ok(&json!({"purged": r.purged, "corrupt": r.corrupt.len()}))
}

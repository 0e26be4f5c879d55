//! The API's reads (`GET /api/v1/…`). Every one is a counter read, point
//! reads or one bounded `list` page: none scans the store (the overview's counts are
//! the exact per-kind counters and the top [`OVERVIEW_SCOPES`] scopes; the
//! scopes view pages by cursor; the leases view reads the leased rows,
//! bounded by [`MAX_LEASES_SHOWN`]).

use std::collections::BTreeMap;
use std::str::FromStr;

use hyper::body::Bytes;
use hyper::Response;
use serde_json::{json, Value as Json};
use telha_jobs::scopes::STATS_SCOPE_LIMIT_DEFAULT;
use telha_jobs::{
    FindQuery, JobId, JobInfo, KindPattern, ListQuery, Queue, Scope, ScopeOrder, State, StatsQuery,
};

use super::reply::{bad, core_error, error, ok, with_type, Body};
use super::{Req, Ui};
use crate::json::{counts_json, job_json, limit_status_json, schedule_json, stats_json, time};
use crate::service::now_ms;

/// Payloads and results larger than this are not inlined in a job's
/// document (`{"encoding": "truncated", "size": N}`): the raw view
/// (`/api/v1/jobs/<id>/payload`) has them.
pub(crate) const INLINE_MAX: usize = 64 * 1024;
/// A jobs page holds at most this many jobs.
pub(crate) const MAX_PAGE: usize = 500;
/// The leases view shows at most this many leases.
pub(crate) const MAX_LEASES_SHOWN: usize = 2000;
/// The overview shows this many scopes (the most pending first); the
/// scopes view pages through the rest.
pub(crate) const OVERVIEW_SCOPES: usize = 20;
/// A scopes page holds at most this many scopes.
pub(crate) const MAX_SCOPE_PAGE: usize = 1000;

/// Run a core call on the blocking pool; its error as an answer.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> telha_jobs::Result<T> + Send + 'static,
) -> Result<T, Response<Body>> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(core_error(&e)),
        Err(e) => Err(error(500, "INTERNAL", &format!("the call failed: {e}"))),
    }
}

macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(r) => return r,
        }
    };
}
pub(crate) use tri;

pub(crate) fn parse<T: FromStr<Err = telha_jobs::Error>>(
    what: &str,
    v: Option<&str>,
) -> Result<Option<T>, Response<Body>> {
    v.map(|s| T::from_str(s).map_err(|e| bad(format!("{what}: {e}"))))
        .transpose()
}

/// `GET /api/v1/<rest>`.
pub(crate) async fn get(ui: &Ui, q: Queue, rest: &str, req: &Req) -> Response<Body> {
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        ["overview"] => overview(ui, q).await,
        ["stats"] => {
            let query = tri!(stats_query(req, STATS_SCOPE_LIMIT_DEFAULT));
            let s = tri!(blocking(move || q.stats_with(&query)).await);
            ok(&stats_json(&s))
        }
        ["scopes"] => scopes(q, req).await,
        ["throughput"] => ok(&ui.throughput.json()),
        ["jobs"] => jobs(q, req).await,
        ["find"] => find(q, req).await,
        ["jobs", id] => job(q, id).await,
        ["jobs", id, what @ ("payload" | "result")] => raw(q, id, what).await,
        ["leases"] => leases(q).await,
        ["limits"] => {
            let all = tri!(blocking(move || q.limits()).await);
            ok(&json!({"limits": all.iter().map(limit_status_json).collect::<Vec<_>>()}))
        }
        ["schedules"] => {
            let all = tri!(blocking(move || q.schedule_list()).await);
            ok(&json!({"schedules": all.iter().map(schedule_json).collect::<Vec<_>>()}))
        }
        _ => error(404, "NOT_FOUND", &format!("no endpoint GET /api/v1/{rest}")),
    }
}

/// The per-scope part of a stats request: `order` (pending, leased, dead,
/// name), `limit`, `after` (the previous page's `scopes_next`), `prefix`.
fn stats_query(req: &Req, limit: usize) -> Result<StatsQuery, Response<Body>> {
    const FILTERS: [&str; 4] = ["order", "limit", "after", "prefix"];
    if let Some((k, _)) = req
        .query
        .iter()
        .find(|(k, _)| !FILTERS.contains(&k.as_str()))
    {
        return Err(bad(format!(
            "unknown parameter {k:?} (parameters: {})",
            FILTERS.join(", ")
        )));
    }
    let scope_limit = match req.param("limit") {
        None => limit,
        Some(l) => match l.parse::<usize>() {
            Ok(n) if n <= MAX_SCOPE_PAGE => n,
            _ => {
                return Err(bad(format!(
                    "limit: {l:?} is not a number from 0 to {MAX_SCOPE_PAGE}"
                )))
            }
        },
    };
    Ok(StatsQuery {
        scope_order: parse::<ScopeOrder>("order", req.param("order"))?.unwrap_or_default(),
        scope_limit,
        scopes_after: req.param("after").map(str::to_string),
        scope_prefix: req.param("prefix").map(str::to_string),
        // O(bands): the page does not ask (see `StatsQuery::oldest_ready`).
        oldest_ready: false,
    })
}

/// `GET /api/v1/scopes`: one page of per-scope counts (default: by name,
/// 50 a page), without the per-kind counts.
async fn scopes(q: Queue, req: &Req) -> Response<Body> {
    let mut query = tri!(stats_query(req, 50));
    if req.param("order").is_none() {
        query.scope_order = ScopeOrder::Name;
    }
    let s = tri!(blocking(move || q.stats_with(&query)).await);
    let scopes: Vec<Json> = s
        .scopes_ranked()
        .iter()
        .map(|(sc, c)| json!({"scope": sc.to_string(), "counts": counts_json(c)}))
        .collect();
    ok(&json!({
        "scopes": scopes,
        "order": s.scope_order.as_str(),
        "next": s.scopes_next,
        "paused": s.paused.scopes.iter().map(ToString::to_string).collect::<Vec<_>>(),
    }))
}

async fn overview(ui: &Ui, q: Queue) -> Response<Body> {
    let (s, schedules, limits) = tri!(
        blocking(move || {
            // The per-kind backlog and oldest ready job's age: O(scopes
            // with ready work), ~40–60 ms at 100,000 of them, once a poll.
            let top = StatsQuery {
                scope_limit: OVERVIEW_SCOPES,
                oldest_ready: true,
                ..StatsQuery::default()
            };
            let s = q.stats_with(&top)?;
            Ok((s, q.schedule_list()?.len(), q.limits()?))
        })
        .await
    );
    ok(&json!({
        "stats": stats_json(&s),
        "ready": overview_ready(&s),
        "throughput": ui.throughput.json(),
        "leased_in_flight": s.total.leased,
        "schedules": schedules,
        "limits": limits.iter().map(limit_status_json).collect::<Vec<_>>(),
        "now_ms": now_ms(),
    }))
}

/// Per kind with jobs waiting to run: `backlog` (pending + failed, due or
/// not) and `oldest_ready_ms`, how long its oldest due job has waited
/// (null when none is due).
fn overview_ready(s: &telha_jobs::Stats) -> Json {
    let ready: serde_json::Map<String, Json> = s
        .by_kind
        .iter()
        .filter(|(_, c)| c.pending + c.failed > 0)
        .map(|(k, c)| {
            let oldest = s.oldest_ready_ms.get(k).copied();
            let v = json!({"backlog": c.pending + c.failed, "oldest_ready_ms": oldest});
            (k.clone(), v)
        })
        .collect();
    Json::Object(ready)
}

const JOB_FILTERS: [&str; 8] = [
    "state", "kind", "scope", "schedule", "parent", "tag", "limit", "after",
];

async fn jobs(q: Queue, req: &Req) -> Response<Body> {
    if let Some((k, _)) = req
        .query
        .iter()
        .find(|(k, _)| !JOB_FILTERS.contains(&k.as_str()))
    {
        return bad(format!(
            "unknown filter {k:?} (filters: {})",
            JOB_FILTERS.join(", ")
        ));
    }
    let limit = match req.param("limit") {
        None => 50,
        Some(l) => match l.parse::<usize>() {
            Ok(n) if (1..=MAX_PAGE).contains(&n) => n,
            _ => return bad(format!("limit: {l:?} is not a number from 1 to {MAX_PAGE}")),
        },
    };
    let query = ListQuery {
        state: tri!(parse::<State>("state", req.param("state"))),
        scope: tri!(parse::<Scope>("scope", req.param("scope"))),
        kind: tri!(parse::<KindPattern>("kind", req.param("kind"))),
        schedule: req.param("schedule").map(str::to_string),
        parent: tri!(parse::<JobId>("parent", req.param("parent"))),
        tag: req.param("tag").map(str::to_string),
        key: None,
        limit,
        after: req.param("after").map(str::to_string),
    };
    let page = tri!(blocking(move || q.list(&query)).await);
    ok(&json!({
        "jobs": page.jobs.iter().map(|j| job_json(j, false)).collect::<Vec<_>>(),
        "next": page.next,
        "corrupt": page.corrupt.len(),
    }))
}

const FIND_PARAMS: [&str; 3] = ["text", "scope", "limit"];

/// `GET /api/v1/find?text=`: the text as a job id, an idempotency key
/// (in `scope`, else the default scope) and a tag (its first page), each
/// from its index (the core's `find`): what the search box asks.
async fn find(q: Queue, req: &Req) -> Response<Body> {
    if let Some((k, _)) = req
        .query
        .iter()
        .find(|(k, _)| !FIND_PARAMS.contains(&k.as_str()))
    {
        return bad(format!(
            "unknown parameter {k:?} (parameters: {})",
            FIND_PARAMS.join(", ")
        ));
    }
    let limit = match req.param("limit") {
        None => 50,
        Some(l) => match l.parse::<usize>() {
            Ok(n) if (1..=MAX_PAGE).contains(&n) => n,
            _ => return bad(format!("limit: {l:?} is not a number from 1 to {MAX_PAGE}")),
        },
    };
    let query = FindQuery {
        text: req.param("text").unwrap_or_default().to_string(),
        scope: tri!(parse::<Scope>("scope", req.param("scope"))),
        limit,
    };
    let text = query.text.clone();
    let r = tri!(blocking(move || q.find(&query)).await);
    ok(&json!({
        "text": text,
        "matched": r.matched(),
        "by_id": r.by_id.as_ref().map(|j| job_json(j, false)),
        "by_key": r.by_key.as_ref().map(|j| job_json(j, false)),
        "by_tag": {
            "jobs": r.by_tag.jobs.iter().map(|j| job_json(j, false)).collect::<Vec<_>>(),
            "next": r.by_tag.next,
            "corrupt": r.by_tag.corrupt.len(),
        },
    }))
}

pub(crate) fn job_id(id: &str) -> Result<JobId, Response<Body>> {
    JobId::from_str(id).map_err(|e| bad(format!("job id: {e}")))
}

pub(crate) async fn load(q: Queue, id: JobId) -> Result<JobInfo, Response<Body>> {
    blocking(move || q.get(&id))
        .await?
        .ok_or_else(|| error(404, "NOT_FOUND", &format!("no job {id}")))
}

/// A job's whole document, payload and result inlined up to
/// [`INLINE_MAX`].
pub(crate) fn full_json(j: &JobInfo) -> Json {
    let mut o = job_json(j, true);
    o["payload_size"] = json!(j.payload.len());
    o["result_size"] = json!(j.result.as_ref().map(Vec::len));
    if j.payload.len() > INLINE_MAX {
        o["payload"] = json!({"encoding": "truncated", "size": j.payload.len()});
    }
    if let Some(r) = j.result.as_ref().filter(|r| r.len() > INLINE_MAX) {
        o["result"] = json!({"encoding": "truncated", "size": r.len()});
    }
    o
}

async fn job(q: Queue, id: &str) -> Response<Body> {
    let id = tri!(job_id(id));
    let j = tri!(load(q, id).await);
    ok(&full_json(&j))
}

async fn raw(q: Queue, id: &str, what: &str) -> Response<Body> {
    let id = tri!(job_id(id));
    let j = tri!(load(q, id).await);
    let bytes = if what == "payload" {
        Some(j.payload)
    } else {
        j.result
    };
    let Some(b) = bytes else {
        return error(404, "NOT_FOUND", &format!("job {id} has no result"));
    };
    let mut r = with_type(200, "application/octet-stream", Bytes::from(b));
    if let Ok(v) = format!("attachment; filename=\"{id}.{what}\"").parse() {
        r.headers_mut().insert("content-disposition", v);
    }
    r
}

async fn leases(q: Queue) -> Response<Body> {
    let (held, truncated) = tri!(
        blocking(move || {
            let mut query = ListQuery {
                state: Some(State::Leased),
                limit: 500,
                ..ListQuery::default()
            };
            let mut held = Vec::new();
            loop {
                let page = q.list(&query)?;
                held.extend(page.jobs);
                match page.next {
                    Some(n) if held.len() < MAX_LEASES_SHOWN => query.after = Some(n),
                    Some(_) => return Ok((held, true)),
                    None => return Ok((held, false)),
                }
            }
        })
        .await
    );
    let mut by: BTreeMap<String, Vec<Json>> = BTreeMap::new();
    for j in &held {
        by.entry(j.worker_id.clone().unwrap_or_default())
            .or_default()
            .push(json!({
                "id": j.id.to_string(), "kind": j.kind, "scope": j.scope.to_string(),
                "attempts": j.attempts, "generation": j.generation,
                "lease_deadline_ms": j.lease_deadline,
                "lease_deadline": j.lease_deadline.map(time),
            }));
    }
    let workers: Vec<Json> = by
        .into_iter()
        .map(|(w, l)| json!({"worker_id": w, "leases": l}))
        .collect();
    ok(&json!({"workers": workers, "truncated": truncated}))
}

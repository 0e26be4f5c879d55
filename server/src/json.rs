//! The JSON documents of jobs, counts, pauses and schedules, shared by the
//! operator HTTP API (`/api/v1`) and the CLI's `--json` output, so a field
//! has one name everywhere. Times are ms since the epoch (`*_ms`) and RFC
//! 3339 UTC text beside them.

use std::fmt::Write;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{json, Map, Value as Json};
use telha_jobs::limits::MAX_INSTANT_MS;
use telha_jobs::payload::{self, Encoding, Value as Mp};
use telha_jobs::{JobInfo, LogEntry, Paused, ScheduleInfo, StateCounts, Stats};

/// `2026-11-29T23:40:01.123Z`; any u64 renders: a time after the latest the
/// core accepts (9999-12-31T23:59:59.999Z, which RFC 3339 cannot go past;
/// only a store written before that limit holds one) shows as its number.
pub fn time(ms: u64) -> String {
    if ms > MAX_INSTANT_MS {
        return format!("{ms} ms since the epoch (after year 9999)");
    }
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

/// A payload or result for JSON: the decoded value when it was written as
/// a convention value (or, not recorded, follows the convention), else
/// UTF-8 text, else hex.
pub fn bytes_json(b: &[u8], encoding: Encoding) -> Json {
    if let Some(v) = payload::read(b, encoding) {
        json!({"encoding": "msgpack", "value": mp_to_json(&v)})
    } else if let Ok(s) = std::str::from_utf8(b) {
        json!({"encoding": "utf8", "value": s})
    } else {
        json!({"encoding": "hex", "value": hex(b)})
    }
}

/// Lower-case hex of `b`.
pub fn hex(b: &[u8]) -> String {
    b.iter()
        .fold(String::with_capacity(b.len() * 2), |mut s, x| {
            let _ = write!(s, "{x:02x}");
            s
        })
}

/// msgpack → JSON. Binary becomes `{"$binary": "<hex>"}`; a map key that is
/// not a string is written as its JSON text; non-finite floats become null.
pub fn mp_to_json(v: &Mp) -> Json {
    match v {
        Mp::Nil => Json::Null,
        Mp::Boolean(b) => Json::Bool(*b),
        Mp::Integer(i) => i
            .as_i64()
            .map(Json::from)
            .or_else(|| i.as_u64().map(Json::from))
            .unwrap_or(Json::Null),
        Mp::F32(f) => serde_json::Number::from_f64(f64::from(*f)).map_or(Json::Null, Json::Number),
        Mp::F64(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Mp::String(s) => Json::String(s.as_str().map_or_else(
            || String::from_utf8_lossy(s.as_bytes()).into_owned(),
            str::to_string,
        )),
        Mp::Binary(b) => json!({"$binary": hex(b)}),
        Mp::Array(a) => Json::Array(a.iter().map(mp_to_json).collect()),
        Mp::Map(m) => Json::Object(
            m.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Mp::String(s) => s.as_str().map_or_else(
                            || String::from_utf8_lossy(s.as_bytes()).into_owned(),
                            str::to_string,
                        ),
                        other => mp_to_json(other).to_string(),
                    };
                    (key, mp_to_json(v))
                })
                .collect::<Map<_, _>>(),
        ),
        Mp::Ext(t, b) => json!({"$ext": t, "data": hex(b)}),
    }
}

/// JSON → msgpack, for `enqueue --payload-json`: integers stay integers
/// (i64, or u64 above i64::MAX), other numbers become float64.
pub fn json_to_mp(v: &Json) -> Mp {
    match v {
        Json::Null => Mp::Nil,
        Json::Bool(b) => Mp::Boolean(*b),
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                Mp::from(i)
            } else if let Some(u) = n.as_u64() {
                Mp::from(u)
            } else {
                Mp::F64(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Json::String(s) => Mp::from(s.as_str()),
        Json::Array(a) => Mp::Array(a.iter().map(json_to_mp).collect()),
        Json::Object(o) => Mp::Map(
            o.iter()
                .map(|(k, v)| (Mp::from(k.as_str()), json_to_mp(v)))
                .collect(),
        ),
    }
}

/// One entry of a job's event log.
pub fn event_json(e: &LogEntry) -> Json {
    let mut o =
        json!({"ts_ms": e.ts, "at": time(e.ts), "transition": e.transition, "detail": e.detail});
    if e.transition == LogEntry::ATTEMPT {
        // One earlier attempt folded into a summary (ts: when it was leased).
        o["folded"] = json!(true);
    }
    o
}

/// A job as JSON. `full` adds the payload, the result and the event log.
pub fn job_json(j: &JobInfo, full: bool) -> Json {
    let mut o = json!({
        "id": j.id.to_string(),
        "scope": j.scope.to_string(),
        "kind": j.kind,
        "state": j.state.as_str(),
        "priority": j.priority,
        "state_ts_ms": j.state_ts,
        "state_at": time(j.state_ts),
        "attempts": j.attempts,
        "max_attempts": j.max_attempts,
        "generation": j.generation,
        "worker_id": j.worker_id,
        "lease_deadline_ms": j.lease_deadline,
        "last_error": j.last_error,
        "idempotency_key": j.idempotency_key,
        "created_at_ms": j.created_at,
        "created_at": time(j.created_at),
        "cursor": j.cursor,
        "paused": j.paused,
        "cancel_requested": j.cancel_requested,
        "snoozes": j.snoozes,
        "expires_at_ms": j.expires_at,
        "expires_at": j.expires_at.map(time),
        "progress": j
            .progress
            .as_deref()
            .map_or(Json::Null, |p| bytes_json(p, Encoding::Unknown)),
        "schedule": j.schedule.as_ref().map_or(Json::Null, |r| json!({
            "name": r.name, "slot_ms": r.slot, "slot": time(r.slot), "missed": r.missed,
        })),
        "parent": j.parent.map(|p| p.to_string()),
        "tags": j.tags,
        "metadata": j.metadata,
        "key": j.key,
        "fan_in": j.fan_in.map_or(Json::Null, |f| json!({
            "unfinished": f.unfinished, "total": f.total, "on_child_dead": f.policy.as_str(),
        })),
    });
    if full {
        o["payload"] = bytes_json(&j.payload, j.payload_encoding);
        o["payload_encoding"] = json!(j.payload_encoding.as_str());
        o["result"] = j
            .result
            .as_deref()
            .map_or(Json::Null, |r| bytes_json(r, j.result_encoding));
        o["result_encoding"] = json!(j.result.as_ref().map(|_| j.result_encoding.as_str()));
        o["events"] = Json::Array(j.events.iter().map(event_json).collect());
        o["dropped_events"] = json!(j.dropped_events);
    }
    o
}

/// The seven states' counts and their total.
pub fn counts_json(c: &StateCounts) -> Json {
    json!({
        "pending": c.pending, "leased": c.leased, "failed": c.failed,
        "completed": c.completed, "dead": c.dead, "cancelled": c.cancelled,
        "waiting": c.waiting,
        "total": c.total(),
    })
}

/// What is paused, as `kind:`/`scope:` labels and as lists.
pub fn paused_json(p: &Paused) -> Json {
    json!({
        "kinds": p.kinds.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "scopes": p.scopes.iter().map(ToString::to_string).collect::<Vec<_>>(),
    })
}

/// `stats`: the counts per kind and over all, one page of per-scope counts
/// (in the page's order; `scopes_next` is the next page's cursor, null at
/// the end), and what is paused.
pub fn stats_json(s: &Stats) -> Json {
    let by_kind: Map<String, Json> = s
        .by_kind
        .iter()
        .map(|(k, c)| (k.clone(), counts_json(c)))
        .collect();
    let by_scope: Map<String, Json> = s
        .scopes_ranked()
        .iter()
        .map(|(sc, c)| (sc.to_string(), counts_json(c)))
        .collect();
    json!({
        "by_kind": by_kind, "by_scope": by_scope, "scope_order": s.scope_order.as_str(),
        "scopes_next": s.scopes_next, "total": counts_json(&s.total),
        "paused": paused_json(&s.paused),
    })
}

/// Per kind with jobs waiting to run: `backlog` (pending + failed, due or
/// not) and `oldest_ready_ms` (how long its oldest due job has waited; 0
/// when none is due), what autoscalers read. For stats taken with
/// `StatsQuery::oldest_ready` (`telha jobs stats --json` adds it).
pub fn ready_json(s: &Stats) -> Json {
    let ready: Map<String, Json> = s
        .by_kind
        .iter()
        .filter(|(_, c)| c.pending + c.failed > 0)
        .map(|(k, c)| {
            let oldest = s.oldest_ready_ms.get(k).copied().unwrap_or(0);
            let v = json!({"backlog": c.pending + c.failed, "oldest_ready_ms": oldest});
            (k.clone(), v)
        })
        .collect();
    Json::Object(ready)
}

fn opt_time(t: Option<u64>) -> Json {
    t.map_or(Json::Null, |t| json!(time(t)))
}

/// A schedule as JSON: every field of what was put and of its progress,
/// times as ms and as RFC 3339.
pub fn schedule_json(i: &ScheduleInfo) -> Json {
    let s = &i.schedule;
    json!({
        "name": s.name, "spec": s.spec, "timezone": s.timezone, "anchor_ms": s.anchor,
        "kind": s.kind,
        "payload": bytes_json(&s.payload, s.encoding),
        "payload_encoding": s.encoding.as_str(),
        "scope": s.scope.map(|x| x.to_string()),
        "priority": s.priority, "max_attempts": s.max_attempts,
        "expires_in_ms": s.expires_in.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        "catch_up": s.catch_up.name(), "max_catch_up": s.max_catch_up,
        "paused": s.paused, "tags": s.tags, "metadata": s.metadata,
        "created_at_ms": i.created_at, "created_at": time(i.created_at),
        "updated_at_ms": i.updated_at, "updated_at": time(i.updated_at),
        "cursor_ms": i.cursor, "cursor": time(i.cursor),
        "next_slot_ms": i.next_slot, "next_slot": opt_time(i.next_slot),
        "last_slot_ms": i.last_slot, "last_slot": opt_time(i.last_slot),
        "last_job": i.last_job.map(|j| j.to_string()),
        "last_fired_at_ms": i.last_fired_at, "last_fired_at": opt_time(i.last_fired_at),
        "enqueued": i.enqueued, "skipped": i.skipped, "last_error": i.last_error,
    })
}

/// A limit's settings: `burst` is the bucket size in effect (the rate
/// rounded up when none was given), null without a rate.
pub fn limit_json(l: &telha_jobs::Limit) -> Json {
    json!({
        "concurrency": l.concurrency,
        "rate": l.rate,
        "burst": l.effective_burst(),
        "weight": l.weight,
        "ordered": l.ordered,
    })
}

/// One limit with its use now (`limits`, the page's overview).
pub fn limit_status_json(s: &telha_jobs::LimitStatus) -> Json {
    json!({
        "target": s.target.label(),
        "limit": limit_json(&s.limit),
        "leased": s.leased,
        "held": s.held,
        "throttled": {"concurrency": s.throttled_concurrency, "rate": s.throttled_rate},
    })
}

//! Human tables and JSON documents. Times are ms since the epoch in the
//! core; humans get RFC 3339 UTC, JSON gets both the ms and the text.

use std::fmt::Write;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{json, Map, Value as Json};
use telha_jobs::limits::MAX_INSTANT_MS;
use telha_jobs::payload::{self, Encoding, Value as Mp};
use telha_jobs::{CheckReport, JobInfo, LogEntry, PauseTarget, Paused, State, StateCounts, Stats};

/// `2026-11-29T23:40:01.123Z`; any u64 renders: a time after the latest the
/// core accepts (9999-12-31T23:59:59.999Z, which RFC 3339 cannot go past;
/// only a store written before that limit holds one) shows as its number.
pub fn time(ms: u64) -> String {
    if ms > MAX_INSTANT_MS {
        return format!("{ms} ms since the epoch (after year 9999)");
    }
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

/// A left-aligned table with a header row; columns sized to their widest
/// cell, two spaces apart, no trailing spaces.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let mut l = String::new();
        for (i, (c, w)) in cells.iter().zip(&width).enumerate() {
            if i + 1 == cells.len() {
                l.push_str(c);
            } else {
                let _ = write!(l, "{c:<w$}  ");
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(header.to_vec());
    for r in rows {
        line(r.iter().map(String::as_str).collect());
    }
    out
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

/// A payload or result for a human: JSON text of the decoded value (as
/// [`bytes_json`] decides), the UTF-8 text, or hex, cut to `max` characters.
pub fn bytes_text(b: &[u8], encoding: Encoding, max: usize) -> String {
    let s = if b.is_empty() {
        "(empty)".to_string()
    } else if let Some(v) = payload::read(b, encoding) {
        mp_to_json(&v).to_string()
    } else if let Ok(s) = std::str::from_utf8(b) {
        format!("{s:?}")
    } else {
        format!("0x{} ({} bytes)", hex(b), b.len())
    };
    cut(&s, max)
}

pub fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
    t.push('…');
    t
}

fn hex(b: &[u8]) -> String {
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

fn event_json(e: &LogEntry) -> Json {
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

/// `show`: the job's fields, then its event log with offsets from the
/// first event.
pub fn job_text(j: &JobInfo) -> String {
    let mut o = String::new();
    let mut field = |k: &str, v: String| {
        let _ = writeln!(o, "{k:<16}{v}");
    };
    field("id", j.id.to_string());
    field("kind", j.kind.clone());
    field("state", j.state.to_string());
    field("scope", j.scope.to_string());
    field("priority", j.priority.to_string());
    field(
        "attempts",
        format!("{} failed of {} allowed", j.attempts, j.max_attempts),
    );
    field("created", time(j.created_at));
    let when = match j.state {
        telha_jobs::State::Pending => "ready at",
        telha_jobs::State::Leased => "lease deadline",
        telha_jobs::State::Failed => "retry at",
        telha_jobs::State::Completed => "completed at",
        telha_jobs::State::Dead => "dead since",
        telha_jobs::State::Cancelled => "cancelled at",
        _ => "state since",
    };
    field(when, time(j.state_ts));
    if j.paused {
        field("paused", "yes (its kind, family or scope is paused)".into());
    }
    if let Some(r) = &j.cancel_requested {
        let why = if r.is_empty() {
            String::new()
        } else {
            format!(": {r}")
        };
        field("cancel", format!("requested{why}"));
    }
    if j.snoozes > 0 {
        field("snoozes", j.snoozes.to_string());
    }
    if let Some(e) = j.expires_at {
        field("expires", time(e));
    }
    if let Some(w) = &j.worker_id {
        field("worker", w.clone());
    }
    if let Some(p) = &j.progress {
        field("progress", bytes_text(p, Encoding::Unknown, 200));
    }
    if let Some(r) = &j.schedule {
        let missed = match r.missed {
            0 => String::new(),
            n => format!(", standing for {n} missed slot(s) before it"),
        };
        field(
            "schedule",
            format!("{} (slot {}{missed})", r.name, time(r.slot)),
        );
    }
    if let Some(k) = &j.idempotency_key {
        field("idempotency key", k.clone());
    }
    if let Some(e) = &j.last_error {
        field("last error", e.clone());
    }
    field("payload", bytes_text(&j.payload, j.payload_encoding, 200));
    if let Some(r) = &j.result {
        field("result", bytes_text(r, j.result_encoding, 200));
    }
    let _ = writeln!(o, "\nevents ({}):", j.events.len());
    if j.dropped_events > 0 {
        let _ = writeln!(o, "  ({} older events dropped)", j.dropped_events);
    }
    let start = j.events.first().map_or(0, |e| e.ts);
    let folded = j
        .events
        .iter()
        .take_while(|e| e.transition == LogEntry::ATTEMPT)
        .count();
    for (i, e) in j.events.iter().enumerate() {
        if folded > 0 && i == 0 {
            let _ = writeln!(
                o,
                "  earlier attempts, one line each (the time each was leased):"
            );
        }
        if folded > 0 && i == folded {
            let _ = writeln!(o, "  then in full:");
        }
        let off = e.ts.saturating_sub(start) as f64 / 1000.0;
        let line = format!(
            "  {}  +{off:>9.3}s  {:<14} {}",
            time(e.ts),
            e.transition,
            e.detail
        );
        let _ = writeln!(o, "{}", line.trim_end());
    }
    o
}

/// The store's format, in words.
fn format_words(r: &CheckReport) -> String {
    match r.format {
        Some(f) => format!("{} (compatible from {})", f.format, f.compatible_from),
        None => "1 (no telha.format marker: written before the format was recorded)".into(),
    }
}

/// `check`: the format, the rows scanned per state, every problem found.
pub fn check_text(path: &Path, r: &CheckReport) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "store     {}", path.display());
    let _ = writeln!(o, "format    {}", format_words(r));
    let _ = writeln!(o, "jobs      {}", r.jobs);
    let rows: Vec<Vec<String>> = r
        .scanned
        .iter()
        .map(|(k, c)| {
            let mut row = vec![k.clone()];
            row.extend(State::ALL.iter().map(|s| c[*s].to_string()));
            row
        })
        .collect();
    if !rows.is_empty() {
        let mut header = vec!["KIND"];
        header.extend(State::ALL.iter().map(|s| s.as_str()));
        let header: Vec<String> = header.iter().map(|h| h.to_ascii_uppercase()).collect();
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        o.push('\n');
        o.push_str(&table(&header, &rows));
    }
    if r.problems.is_empty() {
        let _ = writeln!(o, "\nno problems: rows, indexes and counters agree");
    } else {
        let _ = writeln!(o, "\n{} problem(s):", r.problems.len());
        for p in &r.problems {
            let _ = writeln!(o, "  {p}");
        }
    }
    o
}

pub fn check_json(path: &Path, r: &CheckReport) -> Json {
    let scanned: Map<String, Json> = r
        .scanned
        .iter()
        .map(|(k, c)| {
            let by: Map<String, Json> = State::ALL
                .iter()
                .map(|s| (s.as_str().to_string(), json!(c[*s])))
                .collect();
            (k.clone(), Json::Object(by))
        })
        .collect();
    json!({
        "path": path.display().to_string(),
        "format": r.format.map_or(1, |f| f.format),
        "compatible_from": r.format.map_or(1, |f| f.compatible_from),
        "format_marker": r.format.is_some(),
        "jobs": r.jobs,
        "scanned": scanned,
        "problems": r.problems,
        "ok": r.problems.is_empty(),
    })
}

fn counts_json(c: &StateCounts) -> Json {
    json!({
        "pending": c.pending, "leased": c.leased, "failed": c.failed,
        "completed": c.completed, "dead": c.dead, "cancelled": c.cancelled,
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

/// `kind:embed, scope:<uuid>`, or `None` when nothing is paused.
pub fn paused_line(p: &Paused) -> Option<String> {
    if p.is_empty() {
        return None;
    }
    let kinds = p.kinds.iter().map(|k| PauseTarget::Kind(k.clone()).label());
    let scopes = p.scopes.iter().map(|s| PauseTarget::Scope(*s).label());
    Some(kinds.chain(scopes).collect::<Vec<_>>().join(", "))
}

pub fn stats_json(s: &Stats) -> Json {
    let by_kind: Map<String, Json> = s
        .by_kind
        .iter()
        .map(|(k, c)| (k.clone(), counts_json(c)))
        .collect();
    json!({"by_kind": by_kind, "total": counts_json(&s.total), "paused": paused_json(&s.paused)})
}

pub fn stats_text(s: &Stats) -> String {
    let row = |name: &str, c: &StateCounts| {
        let mut r = vec![name.to_string()];
        r.extend(
            [
                c.pending,
                c.leased,
                c.failed,
                c.completed,
                c.dead,
                c.cancelled,
                c.total(),
            ]
            .iter()
            .map(u64::to_string),
        );
        r
    };
    let mut rows: Vec<Vec<String>> = s.by_kind.iter().map(|(k, c)| row(k, c)).collect();
    rows.push(row("(all kinds)", &s.total));
    let mut out = table(
        &[
            "KIND",
            "PENDING",
            "LEASED",
            "FAILED",
            "COMPLETED",
            "DEAD",
            "CANCELLED",
            "TOTAL",
        ],
        &rows,
    );
    if let Some(p) = paused_line(&s.paused) {
        let _ = writeln!(out, "paused: {p}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_payloads_round_trip_through_msgpack() {
        let j: Json =
            serde_json::from_str(r#"{"doc":"a.pdf","pages":12,"big":18446744073709551615,"neg":-3,"f":0.5,"tags":["x",null,true]}"#)
                .unwrap();
        let bytes = payload::encode(&json_to_mp(&j)).unwrap();
        let back = payload::decode(&bytes).unwrap();
        assert_eq!(mp_to_json(&back), j);
    }

    #[test]
    fn bytes_outside_the_convention_show_as_text_or_hex() {
        let u = Encoding::Unknown;
        assert_eq!(
            bytes_json(b"s3://x", u),
            json!({"encoding": "utf8", "value": "s3://x"})
        );
        assert_eq!(
            bytes_json(&[0xff, 0x00], u),
            json!({"encoding": "hex", "value": "ff00"})
        );
        assert_eq!(bytes_text(&[0xff, 0x00], u, 80), "0xff00 (2 bytes)");
        assert_eq!(bytes_text(b"", u, 80), "(empty)");
    }

    #[test]
    fn bytes_recorded_as_bytes_never_decode_as_a_value() {
        let looks = [0x01u8, 0x91, 0x01]; // the convention's [1]
        assert_eq!(
            bytes_json(&looks, Encoding::Unknown),
            json!({"encoding": "msgpack", "value": [1]})
        );
        assert_eq!(
            bytes_json(&looks, Encoding::Bytes),
            json!({"encoding": "hex", "value": "019101"})
        );
        assert_eq!(bytes_text(&looks, Encoding::Value, 80), "[1]");
    }

    #[test]
    fn every_u64_renders_as_a_time() {
        assert_eq!(time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(time(MAX_INSTANT_MS), "9999-12-31T23:59:59.999Z");
        for ms in [MAX_INSTANT_MS + 1, 1 << 53, 1 << 63, u64::MAX] {
            let t = time(ms);
            assert!(t.starts_with(&ms.to_string()), "{t}");
            assert!(t.contains("after year 9999"), "{t}");
        }
    }

    #[test]
    fn tables_align_columns_without_trailing_spaces() {
        let t = table(
            &["A", "BB"],
            &[vec!["xyz".into(), "1".into()], vec!["q".into(), "".into()]],
        );
        assert_eq!(t, "A    BB\nxyz  1\nq\n");
    }

    #[test]
    fn long_text_is_cut_with_an_ellipsis() {
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
    }
}

//! Human tables and JSON documents. Times are ms since the epoch in the
//! core; humans get RFC 3339 UTC, JSON gets both the ms and the text.

use std::fmt::Write;
use std::path::Path;

use serde_json::{json, Map, Value as Json};
use telha_jobs::payload::{self, Encoding};
use telha_jobs::{
    CheckReport, JobInfo, LogEntry, PauseTarget, Paused, Scope, State, StateCounts, Stats,
};

// The JSON documents live in the server crate (the HTTP API serves the same
// ones); the CLI's `--json` output is built from them.
pub use telha_jobs_server::json::{
    bytes_json, hex, job_json, json_to_mp, mp_to_json, paused_json, stats_json, time,
};

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

/// `show`: the job's fields, then its event log with offsets from the
/// first event.
/// A parent's children for `jobs show`: one line each, id and state.
pub fn children_text(p: &telha_jobs::ChildPage) -> String {
    let mut o = String::new();
    for c in &p.children {
        let st = c.state.map_or("gone", |s| s.as_str());
        let _ = writeln!(o, "  child         {} {st}", c.id);
    }
    if p.next.is_some() {
        let _ = writeln!(o, "  (more children)");
    }
    o
}

/// A parent's children as JSON: id, state (null once gone), last error.
pub fn children_json(p: &telha_jobs::ChildPage) -> Json {
    Json::Array(
        p.children
            .iter()
            .map(|c| {
                json!({
                    "id": c.id.to_string(),
                    "state": c.state.map(|s| s.as_str()),
                    "last_error": c.last_error,
                })
            })
            .collect(),
    )
}

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
    if !j.tags.is_empty() {
        field("tags", j.tags.join(", "));
    }
    if let Some(k) = &j.key {
        field("key", k.clone());
    }
    if let Some(f) = &j.fan_in {
        field(
            "children",
            format!(
                "{} of {} unfinished (on_child_dead {})",
                f.unfinished, f.total, f.policy
            ),
        );
    }
    for (k, v) in &j.metadata {
        field("meta", format!("{k}={v}"));
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

/// `kind:embed, scope:<uuid>`, or `None` when nothing is paused.
pub fn paused_line(p: &Paused) -> Option<String> {
    if p.is_empty() {
        return None;
    }
    let kinds = p.kinds.iter().map(|k| PauseTarget::Kind(k.clone()).label());
    let scopes = p.scopes.iter().map(|s| PauseTarget::Scope(*s).label());
    Some(kinds.chain(scopes).collect::<Vec<_>>().join(", "))
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
                c.waiting,
                c.total(),
            ]
            .iter()
            .map(u64::to_string),
        );
        r
    };
    let header = |first: &'static str| {
        [
            first,
            "PENDING",
            "LEASED",
            "FAILED",
            "COMPLETED",
            "DEAD",
            "CANCELLED",
            "WAITING",
            "TOTAL",
        ]
    };
    // Per kind, the backlog (pending + failed) and how long its oldest due
    // job has been ready (`-`: none is due).
    let ready = |mut r: Vec<String>, c: &StateCounts, oldest: Option<u64>| {
        r.push((c.pending + c.failed).to_string());
        r.push(oldest.map_or("-".into(), age));
        r
    };
    let mut rows: Vec<Vec<String>> = s
        .by_kind
        .iter()
        .map(|(k, c)| ready(row(k, c), c, s.oldest_ready_ms.get(k).copied()))
        .collect();
    let oldest = s.oldest_ready_ms.values().max().copied();
    rows.push(ready(row("(all kinds)", &s.total), &s.total, oldest));
    let mut kind_header = header("KIND").to_vec();
    kind_header.extend(["BACKLOG", "OLDEST READY"]);
    let mut out = table(&kind_header, &rows);
    // Per scope only when there is more than the default scope.
    if s.by_scope.keys().any(|sc| *sc != Scope::default()) || s.scopes_next.is_some() {
        let rows: Vec<Vec<String>> = s
            .scopes_ranked()
            .iter()
            .map(|(sc, c)| row(&sc.to_string(), c))
            .collect();
        out.push('\n');
        out.push_str(&table(&header("SCOPE"), &rows));
        if s.scopes_next.is_some() {
            let by = match s.scope_order.state() {
                Some(st) => format!("the {} with the most {st} jobs", rows.len()),
                None => format!("the first {} by id", rows.len()),
            };
            let _ = writeln!(
                out,
                "(scopes: {by}; more exist: --scopes all lists every one)"
            );
        }
    }
    if let Some(p) = paused_line(&s.paused) {
        let _ = writeln!(out, "paused: {p}");
    }
    out
}

/// A wait as the stats table shows it: `850ms`, `12.3s`, `4m05s`, `2h03m`.
fn age(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms}ms"),
        1_000..60_000 => format!("{:.1}s", ms as f64 / 1000.0),
        60_000..3_600_000 => format!("{}m{:02}s", ms / 60_000, ms / 1000 % 60),
        _ => format!("{}h{:02}m", ms / 3_600_000, ms / 60_000 % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use telha_jobs::limits::MAX_INSTANT_MS;

    #[test]
    fn ages_read_at_a_glance() {
        assert_eq!(age(850), "850ms");
        assert_eq!(age(12_345), "12.3s");
        assert_eq!(age(245_000), "4m05s");
        assert_eq!(age(7_380_000), "2h03m");
    }

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

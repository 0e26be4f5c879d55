//! `telha jobs watch`: the server's committed transitions, one line each,
//! as they happen (a `tail -f` for the queue).

use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::json;
use telha_jobs::watch::{EventFilter, JobEvent};
use telha_jobs::{Encoding, SubscribeOptions};

use crate::args::WatchArgs;
use crate::commands::Output;
use crate::render;
use crate::store::{self, Exit, Failure, Target};

/// How long one receive waits before the loop looks at `--for` again.
const TICK: Duration = Duration::from_millis(250);

pub fn watch(t: &Target, a: WatchArgs, json: bool) -> Result<Output, Failure> {
    if matches!(t, Target::Local(_)) {
        return Err(Failure::usage(
            "watch follows the process that owns the store: give --server URL \
             (or TELHA_SERVER) of its `telha serve`",
        ));
    }
    if a.count == Some(0) {
        return Ok(Output::Text(String::new()));
    }
    let q = store::open_read(t)?;
    let sub = q.subscribe(SubscribeOptions {
        filter: EventFilter {
            kinds: a.kind,
            scopes: a.scope,
            events: a.transition,
        },
        ..Default::default()
    })?;
    let deadline = a.duration.and_then(|d| Instant::now().checked_add(d));
    let mut seen = 0u64;
    let mut out = std::io::stdout().lock();
    loop {
        let wait = deadline.map_or(TICK, |d| {
            d.saturating_duration_since(Instant::now()).min(TICK)
        });
        match sub.recv(Some(wait)) {
            Ok(Some(ev)) => {
                let line = if json { line_json(&ev) } else { line_text(&ev) };
                if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
                    if e.kind() == std::io::ErrorKind::BrokenPipe {
                        break;
                    }
                    return Err(Failure {
                        exit: Exit::Storage,
                        message: format!("cannot write output: {e}"),
                    });
                }
                seen += 1;
                if a.count.is_some_and(|n| seen >= n) {
                    break;
                }
            }
            Ok(None) => {}
            // The server ended the stream (it is shutting down).
            Err(e) if e.kind() == telha_jobs::ErrorKind::Closed => break,
            Err(e) => return Err(e.into()),
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
    }
    Ok(Output::Text(String::new()))
}

fn line_text(e: &JobEvent) -> String {
    let mut s = format!(
        "{} #{} {:<16} {} {} attempt={}",
        render::time(e.ts),
        e.seq,
        e.event.name(),
        e.id,
        e.kind,
        e.attempt
    );
    if !e.scope.is_system() {
        s.push_str(&format!(" scope={}", e.scope));
    }
    if let Some(w) = &e.worker_id {
        s.push_str(&format!(" worker={w}"));
    }
    if let Some(p) = &e.progress {
        s.push_str(&format!(
            " progress={}",
            render::bytes_text(p, Encoding::Unknown, 200)
        ));
    }
    if e.missed > 0 {
        s.push_str(&format!(" (missed {} before this)", e.missed));
    }
    s
}

fn line_json(e: &JobEvent) -> String {
    json!({
        "seq": e.seq,
        "ts_ms": e.ts,
        "id": e.id.to_string(),
        "kind": &*e.kind,
        "scope": e.scope.to_string(),
        "transition": e.event.name(),
        "attempt": e.attempt,
        "worker_id": e.worker_id.as_deref(),
        "progress": e.progress.as_deref().map(|p| render::bytes_json(p, Encoding::Unknown)),
        "missed": e.missed,
    })
    .to_string()
}

//! The job-control commands: `telha jobs cancel`, `delete`, `pause` and
//! `resume`, locally or through `--server` (everything goes through
//! `JobStore`, so both paths answer alike).

use std::io::IsTerminal;

use serde_json::json;
use telha_jobs::{CancelFilter, JobId, PauseTarget, State};

use crate::args::{CancelArgs, PauseArgs};
use crate::commands::{confirm, matching_ids, Output};
use crate::store::{self, Exit, Failure, Target};

/// One result per id; the first failure's exit code after all were tried.
pub(crate) fn per_id(
    ids: &[JobId],
    json: bool,
    mut each: impl FnMut(&JobId) -> Result<String, Failure>,
) -> Output {
    let mut rows = Vec::new();
    let mut text = String::new();
    let mut exit = Exit::Ok;
    for id in ids {
        match each(id) {
            Ok(done) => {
                text.push_str(&format!("{done} {id}\n"));
                rows.push(json!({"id": id.to_string(), "outcome": done}));
            }
            Err(f) => {
                eprintln!("telha: {id}: {}", f.message);
                if exit == Exit::Ok {
                    exit = f.exit;
                }
                rows.push(json!({"id": id.to_string(), "error": f.message, "exit": f.exit as u8}));
            }
        }
    }
    let out = if json {
        Output::Json(json!({ "results": rows }))
    } else {
        Output::Text(text)
    };
    if exit == Exit::Ok {
        out
    } else {
        Output::Exit(Box::new(out), exit)
    }
}

pub fn cancel(db: &Target, a: CancelArgs, json: bool) -> Result<Output, Failure> {
    if !a.ids.is_empty() {
        let q = store::open_write(db, true)?;
        return Ok(per_id(&a.ids, json, |id| {
            Ok(q.cancel(id, &a.reason)?.name().to_string())
        }));
    }
    if a.kind.is_none() && a.scope.is_none() && a.state.is_none() && a.tag.is_none() {
        return Err(Failure::usage(
            "cancel needs job ids, or a filter: --kind, --tag, --state and/or --scope",
        ));
    }
    if let Some(s) = a.state {
        if !matches!(
            s,
            State::Pending | State::Failed | State::Leased | State::Waiting
        ) {
            return Err(Failure::usage(format!(
                "cancel takes pending, failed, leased or waiting jobs, not {s} ones"
            )));
        }
    }
    let q = store::open_write(db, true)?;
    let states = match a.state {
        Some(s) => vec![s],
        None => vec![State::Pending, State::Failed, State::Leased, State::Waiting],
    };
    let mut matched = 0usize;
    for s in &states {
        matched += matching_ids(q.as_ref(), *s, a.scope, a.kind.clone(), a.tag.clone())?.len();
    }
    let what = describe(&a);
    let go = a.yes
        || (!json
            && matched > 0
            && std::io::stdin().is_terminal()
            && confirm(&format!("cancel {matched} {what}?")));
    if !go {
        if matched == 0 {
            return Ok(if json {
                Output::Json(json!({"matched": 0, "cancelled": 0, "requested": 0}))
            } else {
                Output::Text(format!("no {what}; nothing to cancel\n"))
            });
        }
        return Err(Failure::usage(format!(
            "{matched} {what} would be cancelled; nothing changed (pass --yes to cancel them)"
        )));
    }
    let r = q.cancel_many(&CancelFilter {
        kind: a.kind.clone(),
        scope: a.scope,
        state: a.state,
        reason: a.reason.clone(),
        tag: a.tag.clone(),
    })?;
    if r.corrupt > 0 {
        eprintln!(
            "telha: warning: {} matching record(s) did not decode and were left alone",
            r.corrupt
        );
    }
    Ok(if json {
        Output::Json(json!({
            "matched": matched, "cancelled": r.cancelled,
            "requested": r.requested, "corrupt": r.corrupt,
        }))
    } else {
        Output::Text(format!(
            "cancelled {} {what}; {} leased job(s) got a cancel request\n",
            r.cancelled, r.requested
        ))
    })
}

fn describe(a: &CancelArgs) -> String {
    let mut s = match a.state {
        Some(st) => format!("{st} job(s)"),
        None => "unfinished job(s)".to_string(),
    };
    if let Some(k) = &a.kind {
        s.push_str(&format!(" of kind {k}"));
    }
    if let Some(t) = &a.tag {
        s.push_str(&format!(" tagged {t:?}"));
    }
    if let Some(sc) = &a.scope {
        s.push_str(&format!(" in scope {sc}"));
    }
    s
}

pub fn delete(db: &Target, ids: &[JobId], json: bool) -> Result<Output, Failure> {
    let q = store::open_write(db, true)?;
    Ok(per_id(ids, json, |id| {
        q.delete(id)?;
        Ok("deleted".to_string())
    }))
}

fn target(a: &PauseArgs) -> PauseTarget {
    match (&a.kind, &a.scope) {
        (Some(k), _) => PauseTarget::Kind(k.clone()),
        (None, Some(s)) => PauseTarget::Scope(*s),
        (None, None) => unreachable!("clap requires --kind or --scope"),
    }
}

pub fn pause(db: &Target, a: &PauseArgs, on: bool, json: bool) -> Result<Output, Failure> {
    let t = target(a);
    let q = store::open_write(db, true)?;
    let changed = if on { q.pause(&t)? } else { q.resume(&t)? };
    let paused = q.paused()?;
    let label = t.label();
    Ok(if json {
        Output::Json(json!({
            "target": label, "paused": on, "changed": changed,
            "now_paused": crate::render::paused_json(&paused),
        }))
    } else {
        let verb = if on { "paused" } else { "resumed" };
        Output::Text(if changed {
            format!("{verb} {label}\n")
        } else if on {
            format!("{label} was paused already\n")
        } else {
            format!("{label} was not paused\n")
        })
    })
}

//! One function per `telha jobs` command. Each returns what to print on
//! stdout (a table or one JSON document) or a [`Failure`]; the queue
//! handle is dropped (and the store closed) before `main` exits. With
//! `--server`, the same commands run through a `RemoteQueue`: same output,
//! same exit codes.

use std::io::{BufRead, IsTerminal, Write};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value as Json};
use telha_jobs::limits::MAX_SCOPE_LIMIT;
use telha_jobs::{
    CorruptRecord, EnqueueOptions, JobId, JobInfo, JobStore, KindPattern, ListPage, ListQuery,
    Scope, State, StatsQuery,
};

use crate::args::{
    CountArgs, EnqueueArgs, Jobs, LsArgs, PurgeArgs, RetryArgs, ScopeCount, StatsArgs,
};
use crate::control;
use crate::render;
use crate::store::{self, Exit, Failure, Target};

/// What a command that ran prints on stdout.
pub enum Output {
    Text(String),
    Json(Json),
    /// Printed like the inner output, then the process exits with this code
    /// (`check` finding problems).
    Exit(Box<Output>, Exit),
}

pub fn run(cmd: Jobs, db: &Target, json: bool) -> Result<Output, Failure> {
    match cmd {
        Jobs::Ls(a) => ls(db, a, json),
        Jobs::Show { id } => show(db, id, json),
        Jobs::Retry(a) => match a.id {
            Some(_) if a.kind.is_some() || a.scope.is_some() || a.yes => Err(Failure::usage(
                "--kind, --scope and --yes select jobs for a bulk retry: give --state instead of an id",
            )),
            Some(id) => retry_one(db, id, json),
            None => retry_bulk(db, a, json),
        },
        Jobs::Purge(a) => purge(db, a, json),
        Jobs::Stats(a) => stats(db, &a, json),
        Jobs::Metrics => metrics(db, json),
        Jobs::Check => check(db, json),
        Jobs::Enqueue(a) => enqueue(db, a, json),
        Jobs::Count(a) => count(db, &a, json),
        Jobs::Find(a) => crate::find::find(db, &a, json),
        Jobs::Backup { dir } => backup(db, &dir, json),
        Jobs::Cancel(a) => control::cancel(db, a, json),
        Jobs::Delete { ids } => control::delete(db, &ids, json),
        Jobs::Promote(a) => crate::steer::promote(db, &a, json),
        Jobs::Reschedule(a) => crate::steer::reschedule(db, &a, json),
        Jobs::Priority(a) => crate::steer::priority(db, &a, json),
        Jobs::Pause(a) => control::pause(db, &a, true, json),
        Jobs::Resume(a) => control::pause(db, &a, false, json),
        Jobs::Limits(c) => crate::limits::run(db, c, json),
        Jobs::Watch(a) => crate::watch::watch(db, a, json),
    }
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn warn_corrupt(corrupt: &[CorruptRecord]) {
    for c in corrupt {
        eprintln!(
            "telha: warning: skipped a record that does not decode (key {}{}): {}",
            c.key,
            c.id.map(|i| format!(", job {i}")).unwrap_or_default(),
            c.error
        );
    }
}

fn corrupt_json(corrupt: &[CorruptRecord]) -> Json {
    Json::Array(
        corrupt
            .iter()
            .map(|c| json!({"key": c.key, "id": c.id.map(|i| i.to_string()), "error": c.error}))
            .collect(),
    )
}

fn ls(db: &Target, a: LsArgs, json: bool) -> Result<Output, Failure> {
    let q = store::open_read(db)?;
    let query = ListQuery {
        state: a.state,
        scope: a.scope,
        kind: a.kind,
        schedule: a.schedule,
        parent: a.parent,
        tag: a.tag,
        key: a.key,
        limit: usize::try_from(a.limit).unwrap_or(usize::MAX),
        after: a.after,
    };
    // The core's paging rule: a person asking for 50 jobs of a rare kind
    // gets 50 (or the end), not one short page per 100,000 rows read.
    let ListPage {
        jobs,
        next,
        corrupt,
    } = q.list_full(&query)?;
    let paused = q.paused()?;
    if json {
        return Ok(Output::Json(json!({
            "jobs": jobs.iter().map(|j| render::job_json(j, false)).collect::<Vec<_>>(),
            "next": next,
            "corrupt": corrupt_json(&corrupt),
            "paused": render::paused_json(&paused),
        })));
    }
    warn_corrupt(&corrupt);
    let paused_line = render::paused_line(&paused).map(|p| format!("paused: {p}\n"));
    if jobs.is_empty() {
        return Ok(Output::Text(format!(
            "{}no jobs\n",
            paused_line.unwrap_or_default()
        )));
    }
    let rows: Vec<Vec<String>> = jobs
        .iter()
        .map(|j| {
            vec![
                j.id.to_string(),
                match (j.paused, &j.cancel_requested) {
                    (_, Some(_)) => format!("{} (cancel requested)", j.state),
                    (true, None) => format!("{} (paused)", j.state),
                    (false, None) => j.state.to_string(),
                },
                j.kind.clone(),
                j.priority.to_string(),
                format!("{}/{}", j.attempts, j.max_attempts),
                render::time(j.state_ts),
                j.scope.to_string(),
            ]
        })
        .collect();
    let mut out = paused_line.unwrap_or_default();
    out += &render::table(
        &[
            "ID",
            "STATE",
            "KIND",
            "PRI",
            "ATTEMPTS",
            "SINCE/DUE",
            "SCOPE",
        ],
        &rows,
    );
    if let Some(n) = next {
        out.push_str(&format!("more: add --after {n}\n"));
    }
    Ok(Output::Text(out))
}

fn get(q: &dyn JobStore, id: JobId) -> Result<JobInfo, Failure> {
    q.get(&id)?
        .ok_or_else(|| Failure::not_found(format!("no job {id}")))
}

fn show(db: &Target, id: JobId, json: bool) -> Result<Output, Failure> {
    let q = store::open_read(db)?;
    let j = get(q.as_ref(), id)?;
    // A fan-in parent's children (the first page; a store that does not
    // serve them yet shows none).
    let children = match j.fan_in {
        Some(_) => q
            .results_of_children(&id, None, telha_jobs::fanin::MAX_CHILDREN_PAGE)
            .ok(),
        None => None,
    };
    Ok(if json {
        let mut v = render::job_json(&j, true);
        if let Some(c) = &children {
            v["children"] = render::children_json(c);
        }
        Output::Json(v)
    } else {
        let mut t = render::job_text(&j);
        if let Some(c) = &children {
            t.push_str(&render::children_text(c));
        }
        Output::Text(t)
    })
}

fn retry_one(db: &Target, id: JobId, json: bool) -> Result<Output, Failure> {
    let q = store::open_write(db, true)?;
    let before = get(q.as_ref(), id)?.state;
    q.retry(&id)?;
    Ok(if json {
        Output::Json(json!({"id": id.to_string(), "from": before.as_str(), "to": "pending"}))
    } else {
        Output::Text(format!(
            "retried {id}: {before} -> pending, attempts reset\n"
        ))
    })
}

/// Every job matching the filters, by `list` pages.
pub fn matching_ids(
    q: &dyn JobStore,
    state: State,
    scope: Option<Scope>,
    kind: Option<KindPattern>,
    tag: Option<String>,
) -> Result<Vec<JobId>, Failure> {
    let mut query = ListQuery {
        state: Some(state),
        scope,
        kind,
        schedule: None,
        parent: None,
        tag,
        key: None,
        limit: 1000,
        after: None,
    };
    let mut ids = Vec::new();
    loop {
        let page = q.list(&query)?;
        warn_corrupt(&page.corrupt);
        ids.extend(page.jobs.iter().map(|j| j.id));
        match page.next {
            Some(n) => query.after = Some(n),
            None => return Ok(ids),
        }
    }
}

/// Ask on the terminal; anything but y/yes is no.
pub fn confirm(question: &str) -> bool {
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

fn retry_bulk(db: &Target, a: RetryArgs, json: bool) -> Result<Output, Failure> {
    let state = a.state.expect("clap requires an id or --state");
    if !matches!(state, State::Dead | State::Failed) {
        return Err(Failure::usage(format!(
            "retry moves dead or failed jobs, not {state} ones"
        )));
    }
    // Hold the store for the whole command: nothing else can move the
    // matching jobs between the count and the retries.
    let q = store::open_write(db, true)?;
    let ids = matching_ids(q.as_ref(), state, a.scope, a.kind.clone(), None)?;
    let what = describe(state, a.scope.as_ref(), a.kind.as_ref());
    let go = a.yes
        || (!json
            && !ids.is_empty()
            && std::io::stdin().is_terminal()
            && confirm(&format!("retry {} {what}?", ids.len())));
    if !go {
        return Ok(if json {
            Output::Json(json!({"matched": ids.len(), "retried": 0, "dry_run": true}))
        } else {
            Output::Text(format!(
                "{} {what} would move to pending; nothing changed (pass --yes to retry them)\n",
                ids.len()
            ))
        });
    }
    let mut moved = 0usize;
    for id in &ids {
        q.retry(id).map_err(|e| {
            let mut f = Failure::from(e);
            f.message = format!(
                "{} (retried {moved} of {} before this error)",
                f.message,
                ids.len()
            );
            f
        })?;
        moved += 1;
    }
    Ok(if json {
        Output::Json(json!({"matched": ids.len(), "retried": moved, "dry_run": false}))
    } else {
        Output::Text(format!("retried {moved} {what}: now pending\n"))
    })
}

fn describe(state: State, scope: Option<&Scope>, kind: Option<&KindPattern>) -> String {
    let mut s = format!("{state} job(s)");
    if let Some(k) = kind {
        s.push_str(&format!(" of kind {k}"));
    }
    if let Some(sc) = scope {
        s.push_str(&format!(" in scope {sc}"));
    }
    s
}

fn backup(db: &Target, dir: &std::path::Path, json: bool) -> Result<Output, Failure> {
    let q = store::open_write(db, true)?;
    let b = q.backup(dir)?;
    if json {
        return Ok(Output::Json(json!({
            "path": b.path.display().to_string(),
            "bytes": b.bytes,
            "files": b.files,
            "took_us": u64::try_from(b.took.as_micros()).unwrap_or(u64::MAX),
            "sequence": b.sequence,
        })));
    }
    Ok(Output::Text(format!(
        "backup at {}: {} files, {} bytes, sequence {}, took {:.1} ms\n",
        b.path.display(),
        b.files,
        b.bytes,
        b.sequence,
        b.took.as_secs_f64() * 1e3
    )))
}

fn purge(db: &Target, a: PurgeArgs, json: bool) -> Result<Output, Failure> {
    if !a.state.is_terminal() {
        return Err(Failure::usage(format!(
            "purge deletes completed, dead or cancelled jobs, not {} ones",
            a.state
        )));
    }
    let q = store::open_write(db, true)?;
    let older = u64::try_from(a.older_than.as_millis()).unwrap_or(u64::MAX);
    let cutoff = now_ms().saturating_sub(older);
    let r = q.purge(a.state, cutoff)?;
    let older = humantime::format_duration(a.older_than);
    if json {
        return Ok(Output::Json(json!({
            "state": a.state.as_str(),
            "purged": r.purged,
            "cutoff_ms": cutoff,
            "cutoff": render::time(cutoff),
            "corrupt": corrupt_json(&r.corrupt),
        })));
    }
    warn_corrupt(&r.corrupt);
    Ok(Output::Text(format!(
        "purged {} {} job(s) older than {older} (before {})\n",
        r.purged,
        a.state,
        render::time(cutoff)
    )))
}

/// The counts, with one page of scopes or (`--scopes all`) every page
/// merged.
fn stats(db: &Target, a: &StatsArgs, json: bool) -> Result<Output, Failure> {
    let q = store::open_read(db)?;
    let mut query = StatsQuery {
        scope_order: a.scope_order,
        scope_limit: match a.scopes {
            ScopeCount::Top(n) => n,
            ScopeCount::All => MAX_SCOPE_LIMIT,
        },
        scope_prefix: a.scope_prefix.clone(),
        oldest_ready: true,
        ..StatsQuery::default()
    };
    let mut s = q.stats_with(&query)?;
    query.oldest_ready = false;
    if a.scopes == ScopeCount::All {
        while let Some(next) = s.scopes_next.take() {
            query.scopes_after = Some(next);
            let page = q.stats_with(&query)?;
            s.by_scope.extend(page.by_scope);
            s.scopes_next = page.scopes_next;
        }
    }
    let limits = q.limits()?;
    Ok(if json {
        let mut o = render::stats_json(&s);
        o["ready"] = telha_jobs_server::json::ready_json(&s);
        o["limits"] = serde_json::Value::Array(
            limits
                .iter()
                .map(telha_jobs_server::json::limit_status_json)
                .collect(),
        );
        Output::Json(o)
    } else {
        let mut t = render::stats_text(&s);
        if !limits.is_empty() {
            t.push('\n');
            t.push_str(&crate::limits::table(&limits));
        }
        Output::Text(t)
    })
}

fn metrics(db: &Target, json: bool) -> Result<Output, Failure> {
    let text = store::open_read(db)?.metrics()?;
    Ok(if json {
        Output::Json(crate::prom::to_json(&text).map_err(|e| {
            Failure::storage(format!(
                "the metrics text did not parse ({e}); this is a bug"
            ))
        })?)
    } else {
        Output::Text(text)
    })
}

fn check(db: &Target, json: bool) -> Result<Output, Failure> {
    let Target::Local(path) = db else {
        return Err(Failure::usage(
            "check scans the store itself: run it where the store is, with --db, not through --server",
        ));
    };
    let r = store::open_read_local(path)?.check()?;
    let out = if json {
        Output::Json(render::check_json(path, &r))
    } else {
        Output::Text(render::check_text(path, &r))
    };
    Ok(if r.problems.is_empty() {
        out
    } else {
        Output::Exit(Box::new(out), Exit::Storage)
    })
}

fn enqueue(db: &Target, a: EnqueueArgs, json: bool) -> Result<Output, Failure> {
    // Check what can be checked before the store is opened (and, when it
    // does not exist yet, created).
    telha_jobs::job::validate_kind(&a.kind).map_err(|e| Failure::usage(e.to_string()))?;
    if a.max_attempts == Some(0) {
        return Err(Failure::usage("--max-attempts must be at least 1"));
    }
    if let Some(d) = a.delay {
        telha_jobs::limits::instant_after("--delay", now_ms(), d)?;
    }
    if let Some(k) = &a.idempotency_key {
        telha_jobs::limits::validate_idempotency_key(k)?;
    }
    if let Some(b) = a.backoff_base {
        if b.as_millis() == 0 {
            return Err(Failure::usage("--backoff-base must be at least 1ms"));
        }
        telha_jobs::limits::check_duration("--backoff-base", b)?;
    }
    let unique_states = a
        .unique_states
        .as_deref()
        .map(|s| s.parse::<telha_jobs::UniqueStates>())
        .transpose()
        .map_err(|e| Failure::usage(format!("--unique-states: {e}")))?;
    if let Some(d) = a.unique_for {
        if a.idempotency_key.is_none() {
            return Err(Failure::usage(
                "--unique-for needs --idempotency-key: the window is the key's",
            ));
        }
        if d.as_millis() == 0 {
            return Err(Failure::usage("--unique-for must be at least 1ms"));
        }
        telha_jobs::limits::instant_after("--unique-for", now_ms(), d)?;
    }
    let payload = match &a.payload_json {
        None => Vec::new(),
        Some(text) => {
            let v: Json = serde_json::from_str(text)
                .map_err(|e| Failure::usage(format!("--payload-json is not valid JSON: {e}")))?;
            telha_jobs::payload::encode(&render::json_to_mp(&v))?
        }
    };
    telha_jobs::tags::normalize_tags(&a.tags)?;
    if let Some(k) = &a.key {
        telha_jobs::flow::validate_key(k)?;
    }
    let metadata: std::collections::BTreeMap<String, String> = a.meta.into_iter().collect();
    telha_jobs::tags::validate_metadata(&metadata)?;
    let on_child_dead = a
        .on_child_dead
        .as_deref()
        .map(|s| s.parse::<telha_jobs::ChildDeadPolicy>())
        .transpose()
        .map_err(|e| Failure::usage(format!("--on-child-dead: {e}")))?;
    let opts = EnqueueOptions {
        scope: a.scope,
        priority: a.priority,
        delay: a.delay,
        idempotency_key: a.idempotency_key,
        max_attempts: a.max_attempts,
        backoff_base: a.backoff_base,
        unique_for: a.unique_for,
        unique_states,
        tags: a.tags,
        metadata,
        debounce: a.debounce,
        debounce_max: a.debounce_max,
        after: a.after,
        on_child_dead,
        key: a.key,
        ..EnqueueOptions::default()
    };
    opts.check_debounce(now_ms())
        .map_err(|e| Failure::usage(format!("--debounce: {e}")))?;
    let q = store::open_write(db, false)?;
    let r = q.enqueue(&a.kind, &payload, opts)?;
    Ok(if json {
        Output::Json(
            json!({"id": r.id.to_string(), "created": r.created, "debounced": r.debounced}),
        )
    } else if r.created {
        Output::Text(format!("enqueued {} ({})\n", r.id, a.kind))
    } else if r.debounced {
        Output::Text(format!(
            "debounced {} (the key's pending job: payload replaced, run time moved)\n",
            r.id
        ))
    } else {
        Output::Text(format!(
            "exists {} (the idempotency key matched; nothing enqueued)\n",
            r.id
        ))
    })
}

/// `jobs count --tag T`: the tag's jobs per state, from the tag index.
fn count(db: &Target, a: &CountArgs, json: bool) -> Result<Output, Failure> {
    telha_jobs::tags::validate_tag(&a.tag)?;
    let q = store::open_read(db)?;
    let c = q.count_tag(&a.tag, a.scope)?;
    Ok(if json {
        Output::Json(json!({"tag": a.tag, "counts": telha_jobs_server::json::counts_json(&c)}))
    } else {
        let mut o = format!("{:<12}{}\n", "tag", a.tag);
        for s in telha_jobs::State::ALL {
            o.push_str(&format!("{:<12}{}\n", s.as_str(), c.get(s)));
        }
        o.push_str(&format!("{:<12}{}\n", "total", c.total()));
        Output::Text(o)
    })
}

//! `telha schedules ls | show | put | rm | pause | resume | next | run`,
//! on a store or through `--server` (everything but `next` goes through
//! `JobStore`, so both paths answer alike; `next` needs no store).

use std::fmt::Write;

use serde_json::{json, Value as Json};
use telha_jobs::payload::Encoding;
use telha_jobs::schedule::{next_times, Spec};
use telha_jobs::{RunReport, Schedule, ScheduleInfo};

use crate::args::{NextArgs, PutArgs, Schedules};
use crate::commands::Output;
use crate::render::{self, bytes_text, cut, time};
use crate::store::{self, Failure, Target};
pub use telha_jobs_server::json::schedule_json as info_json;

pub fn run(cmd: Schedules, db: &Target, json: bool) -> Result<Output, Failure> {
    match cmd {
        Schedules::Ls => ls(db, json),
        Schedules::Show { name } => {
            let i = store::open_read(db)?.schedule_get(&name)?;
            Ok(one(&i, json, None))
        }
        Schedules::Put(a) => put(db, a, json),
        Schedules::Rm { name } => {
            store::open_write(db, true)?.schedule_delete(&name)?;
            Ok(if json {
                Output::Json(json!({"name": name, "deleted": true}))
            } else {
                Output::Text(format!("deleted schedule {name}\n"))
            })
        }
        Schedules::Pause { name } => {
            let i = store::open_write(db, true)?.schedule_pause(&name)?;
            Ok(one(&i, json, Some("paused")))
        }
        Schedules::Resume { name } => {
            let i = store::open_write(db, true)?.schedule_resume(&name)?;
            Ok(one(&i, json, Some("resumed")))
        }
        Schedules::Next(a) => next(db, a, json),
        Schedules::Run => {
            let r = store::open_write(db, true)?.run_schedules()?;
            Ok(run_output(&r, json))
        }
    }
}

/// A schedule's answer: JSON, or (after a change) one line and its detail.
fn one(i: &ScheduleInfo, json: bool, verb: Option<&str>) -> Output {
    if json {
        return Output::Json(info_json(i));
    }
    let mut t = String::new();
    if let Some(v) = verb {
        let _ = writeln!(t, "{v} schedule {}\n", i.schedule.name);
    }
    t.push_str(&info_text(i));
    Output::Text(t)
}

fn ls(db: &Target, json: bool) -> Result<Output, Failure> {
    let all = store::open_read(db)?.schedule_list()?;
    if json {
        // An array: a list has nothing else to say (no paging, no cursor).
        return Ok(Output::Json(Json::Array(
            all.iter().map(info_json).collect(),
        )));
    }
    if all.is_empty() {
        return Ok(Output::Text("no schedules\n".into()));
    }
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|i| {
            let s = &i.schedule;
            vec![
                s.name.clone(),
                s.spec.clone(),
                zone(s),
                s.kind.clone(),
                next_slot(i),
                i.last_slot.map_or_else(|| "-".into(), time),
                i.enqueued.to_string(),
                i.skipped.to_string(),
                if s.paused { "yes" } else { "no" }.into(),
                i.last_error
                    .as_deref()
                    .map_or_else(|| "-".into(), |e| cut(e, 60)),
            ]
        })
        .collect();
    Ok(Output::Text(render::table(
        &[
            "NAME",
            "SPEC",
            "TZ",
            "KIND",
            "NEXT",
            "LAST",
            "ENQUEUED",
            "SKIPPED",
            "PAUSED",
            "LAST ERROR",
        ],
        &rows,
    )))
}

/// The zone a cron spec is read in; `-` for an interval (it has none).
fn zone(s: &Schedule) -> String {
    match Spec::parse(&s.spec, s.timezone.as_deref(), s.anchor) {
        Ok(Spec::Every { .. }) => "-".into(),
        _ => s.timezone.clone().unwrap_or_else(|| "UTC".into()),
    }
}

fn next_slot(i: &ScheduleInfo) -> String {
    match i.next_slot {
        _ if i.schedule.paused => "(paused)".into(),
        Some(t) => time(t),
        None => "(never)".into(),
    }
}

fn put(db: &Target, a: PutArgs, json: bool) -> Result<Output, Failure> {
    let (payload, encoding) = match (&a.payload_json, &a.payload_file) {
        (Some(text), _) => {
            let v: Json = serde_json::from_str(text)
                .map_err(|e| Failure::usage(format!("--payload-json is not valid JSON: {e}")))?;
            (
                telha_jobs::payload::encode(&render::json_to_mp(&v))?,
                Encoding::Value,
            )
        }
        (None, Some(f)) => (
            std::fs::read(f)
                .map_err(|e| Failure::usage(format!("--payload-file {}: {e}", f.display())))?,
            Encoding::Bytes,
        ),
        (None, None) => (Vec::new(), Encoding::Unknown),
    };
    let spec = match (a.cron, a.every) {
        (Some(c), _) => c,
        (None, Some(e)) => format!("every {e}"),
        (None, None) => unreachable!("clap requires --cron or --every"),
    };
    let s = Schedule {
        name: a.name,
        spec,
        timezone: a.tz,
        anchor: a.anchor,
        kind: a.kind,
        payload,
        encoding,
        scope: a.scope,
        priority: a.priority,
        max_attempts: a.max_attempts,
        expires_in: a.expires_in,
        catch_up: a.catch_up,
        max_catch_up: a.max_catch_up,
        paused: a.paused,
        tags: a.tags,
        metadata: a.meta.into_iter().collect(),
    };
    // A local put checks the schedule before the store is opened (and,
    // when there is none yet, created); a server's core checks it there.
    if matches!(db, Target::Local(_)) {
        s.validate()?;
    }
    let q = store::open_write(db, false)?;
    let created = matches!(
        q.schedule_get(&s.name),
        Err(e) if e.kind() == telha_jobs::ErrorKind::NotFound
    );
    let i = q.schedule_put(&s)?;
    Ok(if json {
        let mut o = info_json(&i);
        o["created"] = json!(created);
        Output::Json(o)
    } else {
        let verb = if created { "created" } else { "replaced" };
        one(&i, false, Some(verb))
    })
}

fn next(db: &Target, a: NextArgs, json: bool) -> Result<Output, Failure> {
    let n = usize::try_from(a.n).unwrap_or(usize::MAX);
    let after = a.after.unwrap_or_else(now_ms);
    let times = match db {
        Target::Local(_) => next_times(&a.spec, a.tz.as_deref(), a.anchor, after, n)?,
        Target::Remote {
            url,
            token,
            timeout,
        } => store::connect_remote(url, token, *timeout)?.schedule_next_times(
            &a.spec,
            a.tz.as_deref(),
            a.anchor,
            Some(after),
            n,
        )?,
    };
    if json {
        return Ok(Output::Json(json!({
            "spec": a.spec, "timezone": a.tz, "anchor_ms": a.anchor, "after_ms": after,
            "times_ms": times, "times": times.iter().map(|t| time(*t)).collect::<Vec<_>>(),
        })));
    }
    if times.is_empty() {
        return Ok(Output::Text(format!(
            "{:?} does not fire after {}\n",
            a.spec,
            time(after)
        )));
    }
    let mut t = String::new();
    for x in &times {
        let _ = writeln!(t, "{}", time(*x));
    }
    if times.len() < n {
        let _ = writeln!(t, "(and never again)");
    }
    Ok(Output::Text(t))
}

fn run_output(r: &RunReport, json: bool) -> Output {
    if json {
        return Output::Json(json!({
            "schedules": r.schedules, "enqueued": r.enqueued,
            "skipped": r.skipped, "failed": r.failed,
        }));
    }
    let mut t = format!(
        "{} schedule(s) due: enqueued {} job(s), skipped {} slot(s)",
        r.schedules, r.enqueued, r.skipped
    );
    if r.failed > 0 {
        let _ = write!(
            t,
            ", {} slot(s) failed (see `telha schedules ls`, LAST ERROR)",
            r.failed
        );
    }
    t.push('\n');
    Output::Text(t)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `show`: the schedule's fields, then what it has done.
pub fn info_text(i: &ScheduleInfo) -> String {
    let s = &i.schedule;
    let mut o = String::new();
    let mut field = |k: &str, v: String| {
        let _ = writeln!(o, "{k:<16}{v}");
    };
    field("name", s.name.clone());
    field("spec", s.spec.clone());
    field("timezone", zone(s));
    if let Some(a) = s.anchor {
        field("anchor", time(a));
    }
    field("kind", s.kind.clone());
    field("payload", bytes_text(&s.payload, s.encoding, 200));
    if let Some(sc) = s.scope {
        field("scope", sc.to_string());
    }
    if let Some(p) = s.priority {
        field("priority", p.to_string());
    }
    if let Some(m) = s.max_attempts {
        field("max attempts", m.to_string());
    }
    if !s.tags.is_empty() {
        field("tags", s.tags.join(", "));
    }
    for (k, v) in &s.metadata {
        field("meta", format!("{k}={v}"));
    }
    if let Some(d) = s.expires_in {
        field(
            "expires in",
            format!("{} after its slot", humantime::format_duration(d)),
        );
    }
    field(
        "catch up",
        match s.catch_up {
            telha_jobs::CatchUp::All => {
                format!("all (at most {})", s.catch_up_limit())
            }
            c => c.name().to_string(),
        },
    );
    field("paused", if s.paused { "yes" } else { "no" }.into());
    field("next slot", next_slot(i));
    match (i.last_slot, i.last_job) {
        (Some(slot), job) => {
            let mut v = time(slot);
            if let Some(j) = job {
                let _ = write!(v, " (job {j}");
                if let Some(at) = i.last_fired_at {
                    let _ = write!(v, ", enqueued {}", time(at));
                }
                v.push(')');
            }
            field("last slot", v);
        }
        (None, _) => field("last slot", "-".into()),
    }
    field("enqueued", i.enqueued.to_string());
    field("skipped", i.skipped.to_string());
    field("done through", time(i.cursor));
    field("created", time(i.created_at));
    field("updated", time(i.updated_at));
    if let Some(e) = &i.last_error {
        field("last error", e.clone());
    }
    o
}

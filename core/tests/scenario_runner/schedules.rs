//! The schedule steps: schedule_put, _get, _list, _delete, _pause,
//! _resume, schedule_next, run_schedules.

use std::time::Duration;

use serde_json::{json, Value as Json};
use telha_jobs::{CatchUp, Error, Schedule, ScheduleInfo};

use super::args::uint;
use super::Run;

fn text(s: &Json, k: &str) -> Option<String> {
    s.get(k).and_then(Json::as_str).map(str::to_string)
}

fn opt_uint(s: &Json, k: &str) -> Result<Option<u64>, Error> {
    match s.get(k) {
        None | Some(Json::Null) => Ok(None),
        Some(v) => uint(v).map(Some).map_err(Error::Storage),
    }
}

/// `name`, or `name_size` that many `n`s.
fn name(s: &Json) -> Result<String, Error> {
    match opt_uint(s, "name_size")? {
        Some(n) => Ok("n".repeat(n as usize)),
        None => Ok(text(s, "name").unwrap_or_default()),
    }
}

fn narrow<T: TryFrom<u64>>(v: Option<u64>, what: &str) -> Result<Option<T>, Error> {
    v.map(|x| {
        T::try_from(x).map_err(|_| Error::InvalidArgument(format!("{what} {x} is out of range")))
    })
    .transpose()
}

pub(crate) fn info_json(i: &ScheduleInfo) -> Json {
    let s = &i.schedule;
    json!({
        "name": s.name, "spec": s.spec, "timezone": s.timezone, "kind": s.kind,
        "priority": s.priority, "max_attempts": s.max_attempts,
        "catch_up": s.catch_up.name(), "max_catch_up": s.max_catch_up,
        "paused": s.paused, "enqueued": i.enqueued, "skipped": i.skipped,
        "has_next": i.next_slot.is_some(), "has_last": i.last_slot.is_some(),
        "last_error": i.last_error, "tags": s.tags, "metadata": s.metadata,
    })
}

impl Run {
    pub(crate) fn schedule_put(&self, s: &Json) -> Result<Json, Error> {
        let catch_up = match text(s, "catch_up") {
            Some(c) => CatchUp::parse(&c)?,
            None => CatchUp::default(),
        };
        let sched = Schedule {
            name: name(s)?,
            spec: text(s, "spec").unwrap_or_default(),
            timezone: text(s, "timezone"),
            anchor: opt_uint(s, "anchor_ms")?,
            kind: text(s, "kind").unwrap_or_default(),
            payload: text(s, "payload").unwrap_or_default().into_bytes(),
            scope: text(s, "scope").map(|x| x.parse()).transpose()?,
            priority: narrow(opt_uint(s, "priority")?, "priority")?,
            max_attempts: narrow(opt_uint(s, "max_attempts")?, "max_attempts")?,
            expires_in: opt_uint(s, "expires_in_ms")?.map(Duration::from_millis),
            catch_up,
            max_catch_up: narrow(opt_uint(s, "max_catch_up")?, "max_catch_up")?,
            paused: s.get("paused").and_then(Json::as_bool).unwrap_or(false),
            ..Schedule::default()
        };
        // Tags, metadata and `metadata_size` as an enqueue's.
        let (_, _, o) = super::args::new_job_args(s)?;
        let sched = Schedule {
            tags: o.tags,
            metadata: o.metadata,
            ..sched
        };
        let q = self.q().map_err(Error::Storage)?;
        Ok(info_json(&q.schedule_put(&sched)?))
    }

    pub(crate) fn schedule_op(&self, op: &str, s: &Json) -> Result<Json, Error> {
        let q = self.q().map_err(Error::Storage)?;
        let n = name(s)?;
        match op {
            "schedule_get" => Ok(info_json(&q.schedule_get(&n)?)),
            "schedule_pause" => Ok(info_json(&q.schedule_pause(&n)?)),
            "schedule_resume" => Ok(info_json(&q.schedule_resume(&n)?)),
            "schedule_delete" => q.schedule_delete(&n).map(|()| Json::Null),
            "schedule_list" => {
                let names: Vec<String> = q
                    .schedule_list()?
                    .into_iter()
                    .map(|i| i.schedule.name)
                    .collect();
                Ok(json!({ "names": names }))
            }
            "run_schedules" => {
                let r = q.run_schedules()?;
                Ok(json!({"schedules": r.schedules, "enqueued": r.enqueued,
                          "skipped": r.skipped, "failed": r.failed}))
            }
            _ => Err(Error::Storage(format!("unknown schedule op {op:?}"))),
        }
    }

    pub(crate) fn schedule_next(&self, s: &Json) -> Result<Json, Error> {
        let n = opt_uint(s, "n")?.unwrap_or(5);
        let times = telha_jobs::schedule::next_times(
            &text(s, "spec").unwrap_or_default(),
            text(s, "timezone").as_deref(),
            opt_uint(s, "anchor_ms")?,
            opt_uint(s, "after_ms")?.unwrap_or(0),
            usize::try_from(n).unwrap_or(usize::MAX),
        )?;
        Ok(json!({ "times": times }))
    }
}

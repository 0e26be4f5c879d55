//! Schedules ⇄ protocol messages. As in [`crate::convert`], the `*_from_pb`
//! direction checks only what the wire cannot say (a 16-byte scope or job
//! id, a priority ≤ 255, a known catch-up policy) and answers
//! `InvalidArgument` naming the field; the schedule itself (spec, zone,
//! name, numbers) is the core's to check, with the core's messages.

use std::time::Duration;

use telha_jobs::{CatchUp, Error, Result, RunReport, Schedule, ScheduleInfo, ScheduleRef};

use crate::convert::{duration_ms, encoding_from_pb, encoding_to_pb, id_from_pb, scope_from_pb};
use crate::v1 as pb;

fn invalid(msg: String) -> Error {
    Error::InvalidArgument(msg)
}

/// The wire form of a catch-up policy.
pub fn catch_up_to_pb(c: CatchUp) -> pb::CatchUp {
    match c {
        CatchUp::Skip => pb::CatchUp::Skip,
        CatchUp::One => pb::CatchUp::One,
        CatchUp::All => pb::CatchUp::All,
        // A policy this protocol version does not know yet.
        _ => pb::CatchUp::Unspecified,
    }
}

/// A catch-up policy from the wire: unspecified is the core's default
/// (`one`); a number this version does not know is `InvalidArgument`.
pub fn catch_up_from_pb(c: i32) -> Result<CatchUp> {
    match pb::CatchUp::try_from(c) {
        Ok(pb::CatchUp::Unspecified) => Ok(CatchUp::default()),
        Ok(pb::CatchUp::Skip) => Ok(CatchUp::Skip),
        Ok(pb::CatchUp::One) => Ok(CatchUp::One),
        Ok(pb::CatchUp::All) => Ok(CatchUp::All),
        Err(_) => Err(invalid(format!(
            "catch_up {c} is not one of skip (1), one (2), all (3)"
        ))),
    }
}

fn priority_from_pb(p: Option<u32>) -> Result<Option<u8>> {
    p.map(|p| u8::try_from(p).map_err(|_| invalid(format!("priority must be 0 to 255, got {p}"))))
        .transpose()
}

/// The wire form of a schedule.
pub fn schedule_to_pb(s: &Schedule) -> pb::Schedule {
    pb::Schedule {
        name: s.name.clone(),
        spec: s.spec.clone(),
        timezone: s.timezone.clone(),
        anchor_ms: s.anchor,
        kind: s.kind.clone(),
        payload: s.payload.clone(),
        payload_encoding: encoding_to_pb(s.encoding),
        scope: s.scope.map(|x| x.as_bytes().to_vec()),
        priority: s.priority.map(u32::from),
        max_attempts: s.max_attempts,
        expires_in_ms: s.expires_in.map(duration_ms),
        catch_up: catch_up_to_pb(s.catch_up) as i32,
        max_catch_up: s.max_catch_up,
        paused: s.paused,
        tags: s.tags.clone(),
        metadata: s.metadata.clone().into_iter().collect(),
    }
}

/// A schedule from the wire (the core checks the rest at put).
pub fn schedule_from_pb(s: pb::Schedule) -> Result<Schedule> {
    Ok(Schedule {
        catch_up: catch_up_from_pb(s.catch_up)?,
        scope: s.scope.as_deref().map(scope_from_pb).transpose()?,
        priority: priority_from_pb(s.priority)?,
        name: s.name,
        spec: s.spec,
        timezone: s.timezone,
        anchor: s.anchor_ms,
        kind: s.kind,
        payload: s.payload,
        encoding: encoding_from_pb(s.payload_encoding),
        max_attempts: s.max_attempts,
        expires_in: s.expires_in_ms.map(Duration::from_millis),
        max_catch_up: s.max_catch_up,
        paused: s.paused,
        tags: s.tags,
        metadata: s.metadata.into_iter().collect(),
    })
}

/// The wire form of a stored schedule.
pub fn schedule_info_to_pb(i: &ScheduleInfo) -> pb::ScheduleInfo {
    pb::ScheduleInfo {
        schedule: Some(schedule_to_pb(&i.schedule)),
        created_at_ms: i.created_at,
        updated_at_ms: i.updated_at,
        cursor_ms: i.cursor,
        last_slot_ms: i.last_slot,
        last_job: i.last_job.map(|j| j.as_bytes().to_vec()),
        last_fired_at_ms: i.last_fired_at,
        next_slot_ms: i.next_slot,
        enqueued: i.enqueued,
        skipped: i.skipped,
        last_error: i.last_error.clone(),
    }
}

/// A stored schedule from the wire; one without its schedule is `Storage`
/// (a server never answers that).
pub fn schedule_info_from_pb(i: pb::ScheduleInfo) -> Result<ScheduleInfo> {
    let s = i.schedule.ok_or_else(|| {
        Error::Storage("the server answered a schedule without its fields".into())
    })?;
    Ok(ScheduleInfo {
        schedule: schedule_from_pb(s)?,
        created_at: i.created_at_ms,
        updated_at: i.updated_at_ms,
        cursor: i.cursor_ms,
        last_slot: i.last_slot_ms,
        last_job: i.last_job.as_deref().map(id_from_pb).transpose()?,
        last_fired_at: i.last_fired_at_ms,
        next_slot: i.next_slot_ms,
        enqueued: i.enqueued,
        skipped: i.skipped,
        last_error: i.last_error,
    })
}

/// A schedule answer (put, get, pause, resume) from the wire.
pub fn schedule_response_from_pb(r: pb::ScheduleResponse) -> Result<ScheduleInfo> {
    schedule_info_from_pb(
        r.schedule
            .ok_or_else(|| Error::Storage("the server answered no schedule".into()))?,
    )
}

/// The wire form of a job's schedule.
pub fn schedule_ref_to_pb(r: ScheduleRef) -> pb::ScheduleRef {
    pb::ScheduleRef {
        name: r.name,
        slot_ms: r.slot,
        missed: r.missed,
    }
}

/// A job's schedule from the wire.
pub fn schedule_ref_from_pb(r: pb::ScheduleRef) -> ScheduleRef {
    ScheduleRef {
        name: r.name,
        slot: r.slot_ms,
        missed: r.missed,
    }
}

/// The wire form of a scheduler pass's report.
pub fn run_report_to_pb(r: RunReport) -> pb::RunReport {
    pb::RunReport {
        schedules: r.schedules,
        enqueued: r.enqueued,
        skipped: r.skipped,
        failed: r.failed,
    }
}

/// A scheduler pass's report from the wire (absent: nothing was due).
pub fn run_report_from_pb(r: Option<pb::RunReport>) -> RunReport {
    let r = r.unwrap_or_default();
    RunReport {
        schedules: r.schedules,
        enqueued: r.enqueued,
        skipped: r.skipped,
        failed: r.failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use telha_jobs::{Encoding, ErrorKind, JobId, Scope};

    fn full() -> Schedule {
        Schedule {
            timezone: Some("Europe/Lisbon".into()),
            payload: b"p".to_vec(),
            encoding: Encoding::Bytes,
            scope: Some(Scope::from_bytes([3; 16])),
            priority: Some(7),
            max_attempts: Some(2),
            expires_in: Some(Duration::from_millis(600_000)),
            catch_up: CatchUp::All,
            max_catch_up: Some(5),
            paused: true,
            ..Schedule::new("nightly", "0 3 * * *", "report")
                .tag("nightly")
                .tag("team-a")
                .meta("owner", "ops")
        }
    }

    #[test]
    fn a_schedule_round_trips_with_every_field() {
        for s in [full(), Schedule::new("n", "every 5m", "k")] {
            assert_eq!(schedule_from_pb(schedule_to_pb(&s)).unwrap(), s);
        }
    }

    #[test]
    fn a_schedule_info_round_trips() {
        let i = ScheduleInfo {
            schedule: full(),
            created_at: 1,
            updated_at: 2,
            cursor: 3,
            last_slot: Some(4),
            last_job: Some(JobId::from_bytes([9; 16])),
            last_fired_at: Some(5),
            next_slot: None,
            enqueued: 6,
            skipped: 7,
            last_error: Some("too big".into()),
        };
        assert_eq!(schedule_info_from_pb(schedule_info_to_pb(&i)).unwrap(), i);
    }

    #[test]
    fn catch_up_policies_round_trip_and_unknown_numbers_are_refused() {
        for c in CatchUp::ALL {
            assert_eq!(catch_up_from_pb(catch_up_to_pb(c) as i32).unwrap(), c);
        }
        assert_eq!(catch_up_from_pb(0).unwrap(), CatchUp::One);
        for bad in [4, -1, i32::MAX] {
            let e = catch_up_from_pb(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        }
    }

    #[test]
    fn what_the_wire_cannot_say_is_an_invalid_argument() {
        let mut bad = schedule_to_pb(&full());
        bad.priority = Some(256);
        assert_eq!(
            schedule_from_pb(bad).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        let mut bad = schedule_to_pb(&full());
        bad.scope = Some(vec![1; 15]);
        assert_eq!(
            schedule_from_pb(bad).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }
}

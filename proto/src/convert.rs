//! Core types ⇄ protocol messages. The `*_from_pb` direction checks what the
//! wire cannot (ids and scopes exactly 16 bytes, known states, priorities
//! ≤ 255, kind syntax) and answers `InvalidArgument` naming the field, so a
//! server never hands the core a value it would misread.

use std::time::Duration;

use telha_jobs::{
    ChildDeadPolicy, CorruptRecord, Encoding, EnqueueOptions, Enqueued, Error, FanInInfo, Job,
    JobId, JobInfo, KindPattern, LeaseToken, ListPage, ListQuery, LogEntry, NewJob, Result, Scope,
    State, UniqueStates,
};

use crate::v1 as pb;

// The operator and job-control conversions (stats, pauses, cancel, reap,
// purge) live in control.rs; re-exported so callers name one module.
pub use crate::control::*;

pub(crate) fn invalid(msg: String) -> Error {
    Error::InvalidArgument(msg)
}

fn bytes16(b: &[u8], what: &str) -> Result<[u8; 16]> {
    b.try_into()
        .map_err(|_| invalid(format!("{what} must be exactly 16 bytes, got {}", b.len())))
}

/// A job id from its 16 wire bytes.
pub fn id_from_pb(b: &[u8]) -> Result<JobId> {
    Ok(JobId::from_bytes(bytes16(b, "job id")?))
}

/// A scope from its 16 wire bytes.
pub fn scope_from_pb(b: &[u8]) -> Result<Scope> {
    Ok(Scope::from_bytes(bytes16(b, "scope")?))
}

/// The wire form of an encoding.
pub fn encoding_to_pb(e: Encoding) -> i32 {
    (match e {
        Encoding::Bytes => pb::Encoding::Bytes,
        Encoding::Value => pb::Encoding::Value,
        _ => pb::Encoding::Unknown,
    }) as i32
}

/// An encoding from the wire; an unknown number reads as unknown (look at
/// the bytes), as in a stored record.
pub fn encoding_from_pb(e: i32) -> Encoding {
    match pb::Encoding::try_from(e) {
        Ok(pb::Encoding::Bytes) => Encoding::Bytes,
        Ok(pb::Encoding::Value) => Encoding::Value,
        _ => Encoding::Unknown,
    }
}

/// The wire form of a lease token.
pub fn token_to_pb(t: &LeaseToken) -> pb::LeaseToken {
    pb::LeaseToken {
        id: t.id.as_bytes().to_vec(),
        generation: t.generation,
    }
}

/// A lease token from the wire; a missing one is `InvalidArgument`.
pub fn token_from_pb(t: Option<&pb::LeaseToken>) -> Result<LeaseToken> {
    let t = t.ok_or_else(|| invalid("lease token is missing".into()))?;
    Ok(LeaseToken {
        id: id_from_pb(&t.id)?,
        generation: t.generation,
    })
}

/// The wire form of a job to enqueue.
pub fn new_job_to_pb(j: NewJob) -> pb::NewJob {
    let o = j.options;
    pb::NewJob {
        kind: j.kind,
        payload: j.payload,
        scope: o.scope.map(|s| s.as_bytes().to_vec()),
        priority: o.priority.map(u32::from),
        run_at_ms: o.run_at,
        delay_ms: o.delay.map(duration_ms),
        idempotency_key: o.idempotency_key,
        max_attempts: o.max_attempts,
        payload_encoding: encoding_to_pb(o.encoding),
        expires_at_ms: o.expires_at,
        expires_in_ms: o.expires_in.map(duration_ms),
        backoff_base_ms: o.backoff_base.map(duration_ms),
        unique_for_ms: o.unique_for.map(duration_ms),
        debounce_ms: o.debounce.map(duration_ms),
        debounce_max_ms: o.debounce_max.map(duration_ms),
        unique_states: match o.unique_states {
            None => pb::UniqueStates::Unspecified,
            Some(UniqueStates::Active) => pb::UniqueStates::Active,
            Some(_) => pb::UniqueStates::Any,
        } as i32,
        tags: o.tags,
        metadata: o.metadata.into_iter().collect(),
        after: o.after.iter().map(|id| id.as_bytes().to_vec()).collect(),
        on_child_dead: policy_to_pb(o.on_child_dead) as i32,
        key: o.key,
    }
}

/// A duration in whole ms for the wire, saturating (the core bounds every
/// duration it accepts far below).
pub fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A priority from the wire: `InvalidArgument` past 255.
pub fn priority_from_pb(p: u32) -> Result<u8> {
    u8::try_from(p).map_err(|_| invalid(format!("priority must be 0 to 255, got {p}")))
}

/// A job to enqueue from the wire (the core checks kind, sizes and key).
pub fn new_job_from_pb(j: pb::NewJob) -> Result<NewJob> {
    let priority = j.priority.map(priority_from_pb).transpose()?;
    Ok(NewJob {
        kind: j.kind,
        payload: j.payload,
        options: EnqueueOptions {
            scope: j.scope.as_deref().map(scope_from_pb).transpose()?,
            priority,
            run_at: j.run_at_ms,
            delay: j.delay_ms.map(Duration::from_millis),
            idempotency_key: j.idempotency_key,
            max_attempts: j.max_attempts,
            encoding: encoding_from_pb(j.payload_encoding),
            expires_at: j.expires_at_ms,
            expires_in: j.expires_in_ms.map(Duration::from_millis),
            backoff_base: j.backoff_base_ms.map(Duration::from_millis),
            unique_for: j.unique_for_ms.map(Duration::from_millis),
            debounce: j.debounce_ms.map(Duration::from_millis),
            debounce_max: j.debounce_max_ms.map(Duration::from_millis),
            unique_states: match pb::UniqueStates::try_from(j.unique_states) {
                Ok(pb::UniqueStates::Unspecified) => None,
                Ok(pb::UniqueStates::Any) => Some(UniqueStates::Any),
                Ok(pb::UniqueStates::Active) => Some(UniqueStates::Active),
                Err(_) => {
                    return Err(invalid(format!(
                        "unique_states {} is not one of any (1), active (2)",
                        j.unique_states
                    )))
                }
            },
            tags: j.tags,
            metadata: j.metadata.into_iter().collect(),
            key: j.key,
            after: j
                .after
                .iter()
                .map(|b| id_from_pb(b))
                .collect::<Result<_>>()?,
            on_child_dead: policy_from_pb(j.on_child_dead)?,
        },
    })
}

/// A fan-in policy from the wire (unspecified: not given).
pub fn policy_from_pb(p: i32) -> Result<Option<ChildDeadPolicy>> {
    match pb::ChildDeadPolicy::try_from(p) {
        Ok(pb::ChildDeadPolicy::Unspecified) => Ok(None),
        Ok(pb::ChildDeadPolicy::Fail) => Ok(Some(ChildDeadPolicy::Fail)),
        Ok(pb::ChildDeadPolicy::CancelRest) => Ok(Some(ChildDeadPolicy::CancelRest)),
        Ok(pb::ChildDeadPolicy::Ignore) => Ok(Some(ChildDeadPolicy::Ignore)),
        Err(_) => Err(invalid(format!(
            "on_child_dead {p} is not one of fail (1), cancel_rest (2), ignore (3)"
        ))),
    }
}

/// The wire form of a fan-in policy.
pub fn policy_to_pb(p: Option<ChildDeadPolicy>) -> pb::ChildDeadPolicy {
    match p {
        None => pb::ChildDeadPolicy::Unspecified,
        Some(ChildDeadPolicy::CancelRest) => pb::ChildDeadPolicy::CancelRest,
        Some(ChildDeadPolicy::Ignore) => pb::ChildDeadPolicy::Ignore,
        Some(_) => pb::ChildDeadPolicy::Fail,
    }
}

/// The wire form of an enqueue answer.
pub fn enqueued_to_pb(e: &Enqueued) -> pb::Enqueued {
    pb::Enqueued {
        id: e.id.as_bytes().to_vec(),
        created: e.created,
        debounced: e.debounced,
    }
}

/// An enqueue answer from the wire.
pub fn enqueued_from_pb(e: &pb::Enqueued) -> Result<Enqueued> {
    Ok(Enqueued {
        id: id_from_pb(&e.id)?,
        created: e.created,
        debounced: e.debounced,
    })
}

/// The wire form of a leased job.
pub fn job_to_pb(j: Job) -> pb::Job {
    pb::Job {
        id: j.id.as_bytes().to_vec(),
        kind: j.kind,
        scope: j.scope.as_bytes().to_vec(),
        payload: j.payload,
        attempts: j.attempts,
        max_attempts: j.max_attempts,
        generation: j.generation,
        deadline_ms: j.deadline,
        priority: u32::from(j.priority),
        worker_id: j.worker_id,
        lease_ttl_ms: j.lease_ttl_ms,
        payload_encoding: encoding_to_pb(j.payload_encoding),
        timeout_ms: j.timeout_ms,
        schedule: j.schedule.map(crate::schedules::schedule_ref_to_pb),
        parent: j.parent.map(|p| p.as_bytes().to_vec()),
        tags: j.tags,
        metadata: j.metadata.into_iter().collect(),
        key: j.key,
    }
}

/// A leased job from the wire.
pub fn job_from_pb(j: pb::Job) -> Result<Job> {
    Ok(Job {
        id: id_from_pb(&j.id)?,
        kind: j.kind,
        scope: scope_from_pb(&j.scope)?,
        payload: j.payload,
        attempts: j.attempts,
        max_attempts: j.max_attempts,
        generation: j.generation,
        deadline: j.deadline_ms,
        lease_ttl_ms: j.lease_ttl_ms,
        payload_encoding: encoding_from_pb(j.payload_encoding),
        priority: u8::try_from(j.priority).unwrap_or(u8::MAX),
        worker_id: j.worker_id,
        timeout_ms: j.timeout_ms,
        schedule: j.schedule.map(crate::schedules::schedule_ref_from_pb),
        parent: j.parent.as_deref().map(id_from_pb).transpose()?,
        tags: j.tags,
        metadata: j.metadata.into_iter().collect(),
        key: j.key,
    })
}

/// The wire form of a lease filter's scopes.
pub fn scopes_to_pb(s: &[Scope]) -> Vec<Vec<u8>> {
    s.iter().map(|s| s.as_bytes().to_vec()).collect()
}

/// The wire form of a lease filter's kinds.
pub fn kinds_to_pb(k: &[KindPattern]) -> Vec<String> {
    k.iter().map(ToString::to_string).collect()
}

/// A lease filter from the wire: every scope 16 bytes, every kind a valid
/// kind or `family:*`, at most [`telha_jobs::limits::MAX_BATCH`] of each.
pub fn filter_from_pb(
    scopes: &[Vec<u8>],
    kinds: &[String],
) -> Result<(Vec<Scope>, Vec<KindPattern>)> {
    if scopes.len() > telha_jobs::limits::MAX_BATCH || kinds.len() > telha_jobs::limits::MAX_BATCH {
        return Err(invalid(format!(
            "at most {} scopes and {} kinds per lease",
            telha_jobs::limits::MAX_BATCH,
            telha_jobs::limits::MAX_BATCH
        )));
    }
    let scopes = scopes
        .iter()
        .map(|s| scope_from_pb(s))
        .collect::<Result<_>>()?;
    let kinds = kinds.iter().map(|k| k.parse()).collect::<Result<_>>()?;
    Ok((scopes, kinds))
}

/// The wire form of a state.
pub fn state_to_pb(s: State) -> pb::JobState {
    match s {
        State::Pending => pb::JobState::Pending,
        State::Leased => pb::JobState::Leased,
        State::Failed => pb::JobState::Failed,
        State::Completed => pb::JobState::Completed,
        State::Dead => pb::JobState::Dead,
        State::Cancelled => pb::JobState::Cancelled,
        State::Waiting => pb::JobState::Waiting,
        // A state this protocol version does not know yet.
        _ => pb::JobState::Unspecified,
    }
}

/// A state from the wire; unspecified or unknown is `InvalidArgument`.
pub fn state_from_pb(s: i32) -> Result<State> {
    match pb::JobState::try_from(s) {
        Ok(pb::JobState::Pending) => Ok(State::Pending),
        Ok(pb::JobState::Leased) => Ok(State::Leased),
        Ok(pb::JobState::Failed) => Ok(State::Failed),
        Ok(pb::JobState::Completed) => Ok(State::Completed),
        Ok(pb::JobState::Dead) => Ok(State::Dead),
        Ok(pb::JobState::Cancelled) => Ok(State::Cancelled),
        Ok(pb::JobState::Waiting) => Ok(State::Waiting),
        _ => Err(invalid(format!(
            "job state {s} is not one of pending (1), leased (2), failed (3), completed (4), dead (5), cancelled (6), waiting (7)"
        ))),
    }
}

/// The wire form of everything known about a job.
pub fn job_info_to_pb(j: JobInfo) -> pb::JobInfo {
    pb::JobInfo {
        id: j.id.as_bytes().to_vec(),
        scope: j.scope.as_bytes().to_vec(),
        kind: j.kind,
        state: state_to_pb(j.state) as i32,
        priority: u32::from(j.priority),
        state_ts_ms: j.state_ts,
        attempts: j.attempts,
        max_attempts: j.max_attempts,
        generation: j.generation,
        worker_id: j.worker_id,
        lease_deadline_ms: j.lease_deadline,
        payload: j.payload,
        result: j.result,
        last_error: j.last_error,
        idempotency_key: j.idempotency_key,
        created_at_ms: j.created_at,
        events: j
            .events
            .into_iter()
            .map(|e| pb::Event {
                ts_ms: e.ts,
                transition: e.transition,
                detail: e.detail,
            })
            .collect(),
        dropped_events: j.dropped_events,
        payload_encoding: encoding_to_pb(j.payload_encoding),
        result_encoding: encoding_to_pb(j.result_encoding),
        cursor: j.cursor,
        cancel_requested: j.cancel_requested,
        snoozes: j.snoozes,
        expires_at_ms: j.expires_at,
        paused: j.paused,
        progress: j.progress,
        schedule: j.schedule.map(crate::schedules::schedule_ref_to_pb),
        parent: j.parent.map(|p| p.as_bytes().to_vec()),
        tags: j.tags,
        metadata: j.metadata.into_iter().collect(),
        fan_in: j.fan_in.map(|f| pb::FanIn {
            unfinished: f.unfinished,
            total: f.total,
            on_child_dead: policy_to_pb(Some(f.policy)) as i32,
        }),
        key: j.key,
    }
}

/// Everything known about a job, from the wire.
pub fn job_info_from_pb(j: pb::JobInfo) -> Result<JobInfo> {
    Ok(JobInfo {
        id: id_from_pb(&j.id)?,
        scope: scope_from_pb(&j.scope)?,
        kind: j.kind,
        state: state_from_pb(j.state)?,
        priority: u8::try_from(j.priority).unwrap_or(u8::MAX),
        state_ts: j.state_ts_ms,
        attempts: j.attempts,
        max_attempts: j.max_attempts,
        generation: j.generation,
        worker_id: j.worker_id,
        lease_deadline: j.lease_deadline_ms,
        payload: j.payload,
        result: j.result,
        last_error: j.last_error,
        idempotency_key: j.idempotency_key,
        created_at: j.created_at_ms,
        events: j
            .events
            .into_iter()
            .map(|e| LogEntry {
                ts: e.ts_ms,
                transition: e.transition,
                detail: e.detail,
            })
            .collect(),
        dropped_events: j.dropped_events,
        payload_encoding: encoding_from_pb(j.payload_encoding),
        result_encoding: encoding_from_pb(j.result_encoding),
        cursor: j.cursor,
        cancel_requested: j.cancel_requested,
        snoozes: j.snoozes,
        expires_at: j.expires_at_ms,
        paused: j.paused,
        progress: j.progress,
        schedule: j.schedule.map(crate::schedules::schedule_ref_from_pb),
        parent: j.parent.as_deref().map(id_from_pb).transpose()?,
        tags: j.tags,
        metadata: j.metadata.into_iter().collect(),
        fan_in: j
            .fan_in
            .map(|f| -> Result<FanInInfo> {
                Ok(FanInInfo::new(
                    f.unfinished,
                    f.total,
                    policy_from_pb(f.on_child_dead)?.unwrap_or_default(),
                ))
            })
            .transpose()?,
        key: j.key,
    })
}

/// The wire form of a list query.
pub fn list_query_to_pb(q: &ListQuery) -> pb::ListRequest {
    pb::ListRequest {
        state: q.state.map(|s| state_to_pb(s) as i32),
        scope: q.scope.map(|s| s.as_bytes().to_vec()),
        kind: q.kind.as_ref().map(ToString::to_string),
        limit: u32::try_from(q.limit).unwrap_or(u32::MAX),
        after: q.after.clone(),
        schedule: q.schedule.clone(),
        parent: q.parent.map(|p| p.as_bytes().to_vec()),
        tag: q.tag.clone(),
        key: q.key.clone(),
    }
}

/// A list query from the wire (the core checks `limit`).
pub fn list_query_from_pb(q: pb::ListRequest) -> Result<ListQuery> {
    Ok(ListQuery {
        state: q.state.map(state_from_pb).transpose()?,
        scope: q.scope.as_deref().map(scope_from_pb).transpose()?,
        kind: q.kind.as_deref().map(str::parse).transpose()?,
        schedule: q.schedule,
        parent: q.parent.as_deref().map(id_from_pb).transpose()?,
        tag: q.tag,
        key: q.key,
        limit: q.limit as usize,
        after: q.after,
    })
}

/// The wire form of a corrupt record.
pub fn corrupt_to_pb(c: CorruptRecord) -> pb::CorruptRecord {
    pb::CorruptRecord {
        key: c.key,
        id: c.id.map(|i| i.as_bytes().to_vec()),
        error: c.error,
    }
}

/// A corrupt record from the wire.
pub fn corrupt_from_pb(c: pb::CorruptRecord) -> Result<CorruptRecord> {
    Ok(CorruptRecord {
        key: c.key,
        id: c.id.as_deref().map(id_from_pb).transpose()?,
        error: c.error,
    })
}

/// The wire form of a list page.
pub fn list_page_to_pb(p: ListPage) -> pb::ListResponse {
    pb::ListResponse {
        jobs: p.jobs.into_iter().map(job_info_to_pb).collect(),
        next: p.next,
        corrupt: p.corrupt.into_iter().map(corrupt_to_pb).collect(),
    }
}

/// A list page from the wire.
pub fn list_page_from_pb(p: pb::ListResponse) -> Result<ListPage> {
    Ok(ListPage {
        jobs: p
            .jobs
            .into_iter()
            .map(job_info_from_pb)
            .collect::<Result<_>>()?,
        next: p.next,
        corrupt: p
            .corrupt
            .into_iter()
            .map(corrupt_from_pb)
            .collect::<Result<_>>()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_scopes_must_be_16_bytes() {
        for bad in [&[][..], &[1u8; 15][..], &[1u8; 17][..]] {
            let e = id_from_pb(bad).unwrap_err();
            assert_eq!(e.kind(), telha_jobs::ErrorKind::InvalidArgument);
            assert!(e.to_string().contains("16 bytes"), "{e}");
            assert!(scope_from_pb(bad).is_err());
        }
        assert!(id_from_pb(&[7u8; 16]).is_ok());
    }

    #[test]
    fn a_new_job_round_trips_with_its_options() {
        let j = NewJob::new("ingest:pdf", b"p".to_vec()).with(
            EnqueueOptions::default()
                .scope(Scope::from_bytes([3; 16]))
                .priority(7)
                .delay(Duration::from_millis(1500))
                .idempotency_key("k")
                .key("customer-7")
                .max_attempts(2)
                .encoding(Encoding::Bytes),
        );
        assert_eq!(new_job_from_pb(new_job_to_pb(j.clone())).unwrap(), j);
        let mut bad = new_job_to_pb(j);
        bad.priority = Some(256);
        assert!(new_job_from_pb(bad).is_err());
    }

    #[test]
    fn encodings_round_trip_and_unknown_numbers_read_as_unknown() {
        for e in [Encoding::Unknown, Encoding::Bytes, Encoding::Value] {
            assert_eq!(encoding_from_pb(encoding_to_pb(e)), e);
        }
        assert_eq!(encoding_from_pb(99), Encoding::Unknown);
    }

    #[test]
    fn states_round_trip_and_unspecified_is_refused() {
        for s in State::ALL {
            assert_eq!(state_from_pb(state_to_pb(s) as i32).unwrap(), s);
        }
        assert!(state_from_pb(0).is_err());
        assert!(state_from_pb(99).is_err());
    }
}

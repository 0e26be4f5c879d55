//! Core types ⇄ protocol messages for the operator and job-control calls:
//! counts and stats, pauses, cancel filters and outcomes, reap and purge
//! reports (re-exported by [`crate::convert`]).

use telha_jobs::scopes::STATS_SCOPE_LIMIT_DEFAULT;
use telha_jobs::{
    CancelFilter, CancelOutcome, Error, PauseTarget, Paused, PerState, PurgeReport, ReapReport,
    Result, ScopeOrder, State, StateCounts, Stats, StatsQuery,
};

use crate::convert::{
    corrupt_from_pb, corrupt_to_pb, filter_from_pb, invalid, scope_from_pb, scopes_to_pb,
    state_from_pb, state_to_pb,
};
use crate::v1 as pb;

/// The wire form of counts per state.
pub fn counts_to_pb(c: &StateCounts) -> pb::StateCounts {
    pb::StateCounts {
        pending: c.pending,
        leased: c.leased,
        failed: c.failed,
        completed: c.completed,
        dead: c.dead,
        cancelled: c.cancelled,
        waiting: c.waiting,
    }
}

/// Counts per state from the wire.
pub fn counts_from_pb(c: &pb::StateCounts) -> StateCounts {
    let mut a = PerState::<i64>::default();
    let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    a[State::Pending] = n(c.pending);
    a[State::Leased] = n(c.leased);
    a[State::Failed] = n(c.failed);
    a[State::Completed] = n(c.completed);
    a[State::Dead] = n(c.dead);
    a[State::Cancelled] = n(c.cancelled);
    a[State::Waiting] = n(c.waiting);
    StateCounts::from_per_state(&a)
}

/// The wire form of a `count_tag` call.
pub fn count_tag_to_pb(tag: &str, scope: Option<telha_jobs::Scope>) -> pb::CountTagRequest {
    pb::CountTagRequest {
        tag: tag.to_string(),
        scope: scope.map(|s| s.as_bytes().to_vec()),
    }
}

/// A `count_tag` call from the wire (the core checks the tag).
pub fn count_tag_from_pb(r: pb::CountTagRequest) -> Result<(String, Option<telha_jobs::Scope>)> {
    Ok((r.tag, r.scope.as_deref().map(scope_from_pb).transpose()?))
}

/// The wire form of a finished backup.
pub fn backup_to_pb(b: &telha_jobs::BackupInfo) -> pb::BackupResponse {
    pb::BackupResponse {
        path: b.path.to_string_lossy().into_owned(),
        bytes: b.bytes,
        files: b.files,
        took_us: u64::try_from(b.took.as_micros()).unwrap_or(u64::MAX),
        sequence: b.sequence,
    }
}

/// A finished backup from the wire (its path is on the server's filesystem).
pub fn backup_from_pb(r: pb::BackupResponse) -> telha_jobs::BackupInfo {
    telha_jobs::BackupInfo {
        path: r.path.into(),
        bytes: r.bytes,
        files: r.files,
        took: std::time::Duration::from_micros(r.took_us),
        sequence: r.sequence,
    }
}

/// The wire form of a scope order.
pub fn scope_order_to_pb(o: ScopeOrder) -> pb::ScopeOrder {
    match o {
        ScopeOrder::Leased => pb::ScopeOrder::Leased,
        ScopeOrder::Dead => pb::ScopeOrder::Dead,
        ScopeOrder::Name => pb::ScopeOrder::Name,
        _ => pb::ScopeOrder::Pending,
    }
}

/// A scope order from the wire (unspecified: pending).
pub fn scope_order_from_pb(o: i32) -> Result<ScopeOrder> {
    match pb::ScopeOrder::try_from(o) {
        Ok(pb::ScopeOrder::Unspecified | pb::ScopeOrder::Pending) => Ok(ScopeOrder::Pending),
        Ok(pb::ScopeOrder::Leased) => Ok(ScopeOrder::Leased),
        Ok(pb::ScopeOrder::Dead) => Ok(ScopeOrder::Dead),
        Ok(pb::ScopeOrder::Name) => Ok(ScopeOrder::Name),
        Err(_) => Err(invalid(format!(
            "scope order {o} is not one of pending (1), leased (2), dead (3), name (4)"
        ))),
    }
}

/// A stats query for the wire.
pub fn stats_query_to_pb(q: &StatsQuery) -> pb::StatsRequest {
    pb::StatsRequest {
        scope_order: scope_order_to_pb(q.scope_order) as i32,
        scope_limit: Some(u32::try_from(q.scope_limit).unwrap_or(u32::MAX)),
        scopes_after: q.scopes_after.clone(),
        scope_prefix: q.scope_prefix.clone(),
        oldest_ready: q.oldest_ready,
    }
}

/// A stats query from the wire (an empty request is the default query).
pub fn stats_query_from_pb(r: &pb::StatsRequest) -> Result<StatsQuery> {
    Ok(StatsQuery {
        scope_order: scope_order_from_pb(r.scope_order)?,
        scope_limit: r
            .scope_limit
            .map_or(STATS_SCOPE_LIMIT_DEFAULT, |n| n as usize),
        scopes_after: r.scopes_after.clone(),
        scope_prefix: r.scope_prefix.clone(),
        oldest_ready: r.oldest_ready,
    })
}

/// The wire form of the counts (the scopes in the page's order).
pub fn stats_to_pb(s: &Stats) -> pb::StatsResponse {
    pb::StatsResponse {
        by_kind: s
            .by_kind
            .iter()
            .map(|(k, c)| (k.clone(), counts_to_pb(c)))
            .collect(),
        total: Some(counts_to_pb(&s.total)),
        paused_kinds: s.paused.kinds.iter().map(ToString::to_string).collect(),
        paused_scopes: scopes_to_pb(&s.paused.scopes),
        by_scope: s
            .scopes_ranked()
            .iter()
            .map(|(sc, c)| pb::ScopeCounts {
                scope: sc.as_bytes().to_vec(),
                counts: Some(counts_to_pb(c)),
            })
            .collect(),
        scopes_next: s.scopes_next.clone(),
        scope_order: scope_order_to_pb(s.scope_order) as i32,
        oldest_ready_ms: s
            .oldest_ready_ms
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect(),
    }
}

/// The counts from the wire.
pub fn stats_from_pb(s: &pb::StatsResponse) -> Result<Stats> {
    Ok(Stats {
        by_kind: s
            .by_kind
            .iter()
            .map(|(k, c)| (k.clone(), counts_from_pb(c)))
            .collect(),
        by_scope: s
            .by_scope
            .iter()
            .map(|b| {
                let c = b.counts.as_ref().map(counts_from_pb).unwrap_or_default();
                Ok((scope_from_pb(&b.scope)?, c))
            })
            .collect::<Result<_>>()?,
        scopes_next: s.scopes_next.clone(),
        scope_order: scope_order_from_pb(s.scope_order)?,
        total: s.total.as_ref().map(counts_from_pb).unwrap_or_default(),
        paused: paused_from_pb(&s.paused_kinds, &s.paused_scopes)?,
        oldest_ready_ms: s
            .oldest_ready_ms
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect(),
    })
}

/// What is paused, for the wire.
pub fn paused_to_pb(p: &Paused) -> pb::PausedResponse {
    pb::PausedResponse {
        kinds: p.kinds.iter().map(ToString::to_string).collect(),
        scopes: scopes_to_pb(&p.scopes),
    }
}

/// What is paused, from the wire.
pub fn paused_from_pb(kinds: &[String], scopes: &[Vec<u8>]) -> Result<Paused> {
    let (scopes, kinds) = filter_from_pb(scopes, kinds)?;
    Ok(Paused { kinds, scopes })
}

/// A pause target for the wire.
pub fn pause_to_pb(t: &PauseTarget) -> pb::PauseRequest {
    pb::PauseRequest {
        target: Some(match t {
            PauseTarget::Kind(k) => pb::pause_request::Target::Kind(k.to_string()),
            PauseTarget::Scope(s) => pb::pause_request::Target::Scope(s.as_bytes().to_vec()),
        }),
    }
}

/// A pause target from the wire; a missing one is `InvalidArgument`.
pub fn pause_from_pb(r: &pb::PauseRequest) -> Result<PauseTarget> {
    match &r.target {
        Some(pb::pause_request::Target::Kind(k)) => Ok(PauseTarget::Kind(k.parse()?)),
        Some(pb::pause_request::Target::Scope(s)) => Ok(PauseTarget::Scope(scope_from_pb(s)?)),
        None => Err(invalid("pause names a kind or a scope".into())),
    }
}

/// A cancel filter for the wire.
pub fn cancel_filter_to_pb(f: &CancelFilter) -> pb::CancelManyRequest {
    pb::CancelManyRequest {
        kind: f.kind.as_ref().map(ToString::to_string),
        scope: f.scope.map(|s| s.as_bytes().to_vec()),
        state: f.state.map(|s| state_to_pb(s) as i32),
        reason: f.reason.clone(),
        tag: f.tag.clone(),
    }
}

/// A cancel filter from the wire.
pub fn cancel_filter_from_pb(r: pb::CancelManyRequest) -> Result<CancelFilter> {
    Ok(CancelFilter {
        kind: r.kind.as_deref().map(str::parse).transpose()?,
        scope: r.scope.as_deref().map(scope_from_pb).transpose()?,
        state: r.state.map(state_from_pb).transpose()?,
        reason: r.reason,
        tag: r.tag,
    })
}

/// A cancel's outcome for the wire.
pub fn cancel_outcome_to_pb(o: CancelOutcome) -> pb::CancelOutcome {
    match o {
        CancelOutcome::Cancelled => pb::CancelOutcome::Cancelled,
        CancelOutcome::Requested => pb::CancelOutcome::Requested,
        _ => pb::CancelOutcome::Unspecified,
    }
}

/// A cancel's outcome from the wire.
pub fn cancel_outcome_from_pb(o: i32) -> Result<CancelOutcome> {
    match pb::CancelOutcome::try_from(o) {
        Ok(pb::CancelOutcome::Cancelled) => Ok(CancelOutcome::Cancelled),
        Ok(pb::CancelOutcome::Requested) => Ok(CancelOutcome::Requested),
        _ => Err(Error::Storage(format!(
            "the server answered cancel outcome {o}"
        ))),
    }
}

/// The wire form of a reaper pass's report.
pub fn reap_to_pb(r: ReapReport) -> pb::ReapResponse {
    pb::ReapResponse {
        expired: r.expired as u64,
        dead: r.dead as u64,
        pruned: r.pruned as u64,
        corrupt: r.corrupt.into_iter().map(corrupt_to_pb).collect(),
        expired_unstarted: r.expired_unstarted as u64,
    }
}

/// A reaper pass's report from the wire.
pub fn reap_from_pb(r: pb::ReapResponse) -> Result<ReapReport> {
    Ok(ReapReport {
        expired: r.expired as usize,
        dead: r.dead as usize,
        pruned: r.pruned as usize,
        expired_unstarted: r.expired_unstarted as usize,
        corrupt: r
            .corrupt
            .into_iter()
            .map(corrupt_from_pb)
            .collect::<Result<_>>()?,
    })
}

/// The wire form of a purge's report.
pub fn purge_to_pb(r: PurgeReport) -> pb::PurgeResponse {
    pb::PurgeResponse {
        purged: r.purged as u64,
        corrupt: r.corrupt.into_iter().map(corrupt_to_pb).collect(),
    }
}

/// A purge's report from the wire.
pub fn purge_from_pb(r: pb::PurgeResponse) -> Result<PurgeReport> {
    Ok(PurgeReport {
        purged: r.purged as usize,
        corrupt: r
            .corrupt
            .into_iter()
            .map(corrupt_from_pb)
            .collect::<Result<_>>()?,
    })
}

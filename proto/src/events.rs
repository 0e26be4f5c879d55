//! Events and waits on the wire: [`telha_jobs::JobEvent`] ⇄
//! [`pb::JobEvent`], [`telha_jobs::EventFilter`] ⇄ [`pb::WatchEventsRequest`].

use std::sync::Arc;

use telha_jobs::watch::{EventFilter, JobEvent, SubscribeOptions, DEFAULT_EVENT_BUFFER};
use telha_jobs::{Error, Event, Result};

use crate::convert::{id_from_pb, kinds_to_pb, scope_from_pb, scopes_to_pb};
use crate::v1 as pb;

/// The wire form of an event.
pub fn event_to_pb(e: &JobEvent) -> pb::JobEvent {
    pb::JobEvent {
        seq: e.seq,
        ts_ms: e.ts,
        id: e.id.as_bytes().to_vec(),
        kind: e.kind.to_string(),
        scope: e.scope.as_bytes().to_vec(),
        transition: e.event.name().to_string(),
        attempt: e.attempt,
        worker_id: e.worker_id.as_deref().map(str::to_string),
        progress: e.progress.as_deref().map(<[u8]>::to_vec),
        missed: e.missed,
    }
}

/// An event from the wire; `InvalidArgument` for a malformed id or scope
/// or a transition this build does not know.
pub fn event_from_pb(e: pb::JobEvent) -> Result<JobEvent> {
    Ok(JobEvent {
        seq: e.seq,
        ts: e.ts_ms,
        id: id_from_pb(&e.id)?,
        kind: Arc::from(e.kind.as_str()),
        scope: scope_from_pb(&e.scope)?,
        event: transition_from_pb(&e.transition)?,
        attempt: e.attempt,
        worker_id: e.worker_id.as_deref().map(Arc::from),
        progress: e.progress.as_deref().map(Arc::from),
        missed: e.missed,
    })
}

fn transition_from_pb(name: &str) -> Result<Event> {
    Event::from_name(name)
        .ok_or_else(|| Error::InvalidArgument(format!("unknown transition {name:?}")))
}

/// The wire form of a subscription's options.
pub fn subscribe_to_pb(o: &SubscribeOptions) -> pb::WatchEventsRequest {
    pb::WatchEventsRequest {
        kinds: kinds_to_pb(&o.filter.kinds),
        scopes: scopes_to_pb(&o.filter.scopes),
        transitions: o
            .filter
            .events
            .iter()
            .map(|e| e.name().to_string())
            .collect(),
        buffer: u32::try_from(o.buffer).unwrap_or(u32::MAX),
    }
}

/// A subscription's options from the wire (buffer 0: the default); every
/// kind, scope and transition checked, the buffer's range too.
pub fn subscribe_from_pb(r: &pb::WatchEventsRequest) -> Result<SubscribeOptions> {
    let (scopes, kinds) = crate::convert::filter_from_pb(&r.scopes, &r.kinds)?;
    let events = r
        .transitions
        .iter()
        .map(|t| transition_from_pb(t))
        .collect::<Result<Vec<_>>>()?;
    let o = SubscribeOptions {
        filter: EventFilter {
            kinds,
            scopes,
            events,
        },
        buffer: if r.buffer == 0 {
            DEFAULT_EVENT_BUFFER
        } else {
            r.buffer as usize
        },
    };
    o.validate()?;
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use telha_jobs::{JobId, Scope};

    #[test]
    fn events_and_filters_round_trip_and_bad_ones_are_refused() {
        let e = JobEvent {
            seq: 7,
            ts: 1,
            id: JobId::from_bytes([4; 16]),
            kind: "ingest:pdf".into(),
            scope: Scope::from_bytes([5; 16]),
            event: Event::Progress,
            attempt: 2,
            worker_id: Some("w".into()),
            progress: Some(Arc::from(&b"\x01\x05"[..])),
            missed: 3,
        };
        assert_eq!(event_from_pb(event_to_pb(&e)).unwrap(), e);
        let mut bad = event_to_pb(&e);
        bad.transition = "exploded".into();
        assert!(event_from_pb(bad).is_err());
        let o = SubscribeOptions {
            filter: EventFilter::default()
                .kind("ingest:*")
                .unwrap()
                .event(Event::Dead),
            buffer: 5,
        };
        assert_eq!(subscribe_from_pb(&subscribe_to_pb(&o)).unwrap(), o);
        let mut r = subscribe_to_pb(&o);
        r.buffer = 2_000_000;
        assert!(subscribe_from_pb(&r).is_err());
        r.buffer = 0;
        assert_eq!(subscribe_from_pb(&r).unwrap().buffer, DEFAULT_EVENT_BUFFER);
    }
}

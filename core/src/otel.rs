//! OpenTelemetry trace context through the queue (issue 45), compiled only
//! with the `otel` feature: what Python's `telha_jobs._otel` and Node's
//! `lib/otel.js` do, with the same span name and attributes.
//!
//! - At enqueue ([`crate::Queue::enqueue`], `enqueue_many`,
//!   `enqueue_group`, and `telha-jobs-client`'s `RemoteQueue` with its own
//!   `otel` feature), [`inject_current`] writes the current context's
//!   `traceparent`/`tracestate` into the job's metadata through the global
//!   text map propagator, unless the caller set either key (an explicit
//!   context is kept whole, never half-overwritten).
//! - The [`crate::Worker`] runs each handler attempt inside a CONSUMER span
//!   `process <kind>` ([`ProcessSpan`]) whose parent and link are the
//!   producer's context read from the metadata: one trace from producer to
//!   handler, and every attempt its own span linked to the producer's (a
//!   retry is never a child of the attempt before it). No context in the
//!   metadata: the span's parent is the handler thread's current context
//!   (a root span when none is active).

use crate::trace_context::{validate_traceparent, TRACEPARENT, TRACESTATE};
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry::{global, Context};
use std::collections::{BTreeMap, HashMap};

/// Add the current OpenTelemetry context's `traceparent` (and `tracestate`
/// when not empty) to `meta`, as the global text map propagator writes
/// them. Nothing when `meta` already holds either key, when no valid span
/// context is current, or when the propagator writes no valid
/// `traceparent` (the default global propagator writes nothing: an
/// application that propagates sets one, e.g. the SDK's
/// `TraceContextPropagator`).
pub fn inject_current(meta: &mut BTreeMap<String, String>) {
    if meta.contains_key(TRACEPARENT) || meta.contains_key(TRACESTATE) {
        return;
    }
    let cx = Context::current();
    if !cx.span().span_context().is_valid() {
        return;
    }
    let mut carrier: HashMap<String, String> = HashMap::new();
    global::get_text_map_propagator(|p| p.inject_context(&cx, &mut carrier));
    let Some(parent) = carrier.remove(TRACEPARENT) else {
        return;
    };
    if validate_traceparent(&parent).is_err() {
        return;
    }
    meta.insert(TRACEPARENT.to_string(), parent);
    if let Some(state) = carrier.remove(TRACESTATE).filter(|s| !s.is_empty()) {
        meta.insert(TRACESTATE.to_string(), state);
    }
}

/// The producer's span context in a job's metadata (remote, sampled as its
/// flags say), or `None` when it has no valid `traceparent`. An unparsable
/// `tracestate` is dropped, the `traceparent` kept.
pub fn producer_context(meta: &BTreeMap<String, String>) -> Option<SpanContext> {
    let v = meta.get(TRACEPARENT)?;
    validate_traceparent(v).ok()?;
    let trace_id = TraceId::from_hex(&v[3..35]).ok()?;
    let span_id = SpanId::from_hex(&v[36..52]).ok()?;
    let flags = u8::from_str_radix(&v[53..55], 16).ok()?;
    let state = meta
        .get(TRACESTATE)
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    let sc = SpanContext::new(trace_id, span_id, TraceFlags::new(flags), true, state);
    sc.is_valid().then_some(sc)
}

#[cfg(feature = "rocksdb")]
pub(crate) use process::ProcessSpan;

#[cfg(feature = "rocksdb")]
mod process {
    use super::producer_context;
    use crate::job::Job;
    use crate::worker::Outcome;
    use opentelemetry::trace::{Link, SpanKind, Status, TraceContextExt, Tracer};
    use opentelemetry::{global, Context, ContextGuard, InstrumentationScope, KeyValue};

    /// One handler attempt's CONSUMER span, current on the handler's thread
    /// from [`ProcessSpan::start`] until [`ProcessSpan::end`].
    pub(crate) struct ProcessSpan {
        cx: Context,
        _current: ContextGuard,
    }

    impl ProcessSpan {
        /// Start `process <kind>` for this lease of `job` and make it current.
        pub(crate) fn start(job: &Job) -> ProcessSpan {
            let scope = InstrumentationScope::builder("telha-jobs")
                .with_version(env!("CARGO_PKG_VERSION"))
                .build();
            let tracer = global::tracer_with_scope(scope);
            let producer = producer_context(&job.metadata);
            let parent = match &producer {
                Some(sc) => Context::new().with_remote_span_context(sc.clone()),
                None => Context::current(),
            };
            let attributes = vec![
                KeyValue::new("messaging.system", "telha"),
                KeyValue::new("messaging.operation.type", "process"),
                KeyValue::new("messaging.operation.name", "process"),
                KeyValue::new("messaging.destination.name", job.kind.clone()),
                KeyValue::new("messaging.message.id", job.id.to_string()),
                KeyValue::new("telha.job.kind", job.kind.clone()),
                KeyValue::new("telha.job.attempt", i64::from(job.attempts) + 1),
            ];
            let links = producer.map(Link::with_context).into_iter().collect();
            let span = tracer
                .span_builder(format!("process {}", job.kind))
                .with_kind(SpanKind::Consumer)
                .with_attributes(attributes)
                .with_links(links)
                .start_with_context(&tracer, &parent);
            let cx = parent.with_span(span);
            let current = cx.clone().attach();
            ProcessSpan {
                cx,
                _current: current,
            }
        }

        /// End the span with the handler's outcome: a failure (a retry, a
        /// panic) sets status ERROR with its reason.
        pub(crate) fn end(self, outcome: &Outcome) {
            let span = self.cx.span();
            match outcome {
                Outcome::Fail { error, .. } | Outcome::Retry { error, .. } => {
                    span.set_status(Status::error(error.clone()));
                }
                _ => {}
            }
            span.end();
        }
    }
}

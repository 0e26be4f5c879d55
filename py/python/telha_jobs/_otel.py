"""OpenTelemetry trace context across the queue (W3C ``traceparent`` /
``tracestate`` in a job's metadata), used only when the application has
imported OpenTelemetry itself.

telha_jobs never imports ``opentelemetry`` first: every entry point checks
``sys.modules`` for ``opentelemetry.trace`` (a dict lookup) and does
nothing more when it is absent. An application that traces has imported it
(a tracer provider or an active span needs it), so nothing is lost, and a
process that does not trace neither imports it nor takes any other path.

- At enqueue (the native ``Queue``'s every enqueue path calls
  :func:`carrier` through ``args::new_job``): when a span context is
  active, its ``traceparent`` and ``tracestate`` go into the job's
  metadata, unless the caller set either key (an explicit context wins,
  never half-overwritten).
- In a Worker and an AsyncWorker, :func:`process_span` wraps each handler
  call in a CONSUMER span ``process <kind>`` whose parent and link are the
  producer's context from the metadata (so one trace, and every attempt is
  its own span linked to the producer's: a retry is never a child of the
  previous attempt), with OpenTelemetry's messaging attributes.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, ContextManager, Optional

# The module an application that traces has imported (a span, a tracer
# provider and the propagators all live under it).
_WATCHED = "opentelemetry.trace"

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"

_NOTHING: ContextManager[None] = contextlib.nullcontext()
_tracer: Any = None


def carrier() -> Optional[dict[str, str]]:
    """The active span context as ``{"traceparent": ..., "tracestate": ...}``
    (``tracestate`` only when it is not empty), or None when OpenTelemetry
    was not imported or no valid span context is active."""
    if _WATCHED not in sys.modules:
        return None
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    if not trace.get_current_span().get_span_context().is_valid:
        return None
    out: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(out)
    return out or None


def process_span(job: Any) -> ContextManager[Any]:
    """The context a Worker runs ``handler(job)`` in: a CONSUMER span made
    current for the handler (ended, with the exception recorded, when it
    returns or raises), or a shared no-op when OpenTelemetry was not
    imported."""
    if _WATCHED not in sys.modules:
        return _NOTHING
    return _span(job)


def _span(job: Any) -> ContextManager[Any]:
    global _tracer
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    if _tracer is None:
        from . import __version__

        _tracer = trace.get_tracer("telha_jobs", __version__)
    meta = job.metadata
    parent: Any = None
    links: list[Any] = []
    if TRACEPARENT in meta:
        ctx = TraceContextTextMapPropagator().extract(
            {k: meta[k] for k in (TRACEPARENT, TRACESTATE) if k in meta}
        )
        producer = trace.get_current_span(ctx).get_span_context()
        if producer.is_valid:
            # The producer's context is the parent (one trace from request
            # to handler) and a link (the messaging conventions' creation
            # context); each attempt is a new span beside the others.
            parent = ctx
            links.append(trace.Link(producer))
    return _tracer.start_as_current_span(  # type: ignore[no-any-return]
        f"process {job.kind}",
        context=parent,
        kind=trace.SpanKind.CONSUMER,
        links=links,
        attributes={
            "messaging.system": "telha",
            "messaging.operation.type": "process",
            "messaging.operation.name": "process",
            "messaging.destination.name": job.kind,
            "messaging.message.id": job.id,
            "telha.job.kind": job.kind,
            "telha.job.attempt": job.attempts + 1,  # 1 for the first
        },
    )

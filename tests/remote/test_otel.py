"""Issue 45 across languages: a Node producer enqueues inside a span
(tests/remote/node_trace_producer.js, its SDK's in-memory exporter) through
a real ``telha serve``; a Python Worker (``connect()``, spans to the Python
SDK's in-memory exporter) runs the jobs. The two sides share one trace:
each consumer span's parent and link are the producer's span, and the job
whose first attempt fails shows two linked process spans, neither a child
of the other. Every process is started and stopped here, by pid."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import telha_jobs
from telha_jobs import _otel
from test_control import Proc
from test_wait import server  # noqa: F401 - the fixture: a `telha serve` process

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def test_a_node_producer_and_a_python_worker_give_one_trace(
    server: str, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    env = dict(os.environ, TELHA_NODE_PKG=str(ROOT / "node"))
    producer = Proc(["node", str(HERE / "node_trace_producer.js"), server], env)
    try:
        made = producer.event("ids", 120.0)
        producer.p.wait(60.0)
    finally:
        producer.stop()
    assert producer.p.returncode == 0
    trace_id, span_id = int(made["traceId"], 16), int(made["spanId"], 16)
    one, two = made["ids"]

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(_otel, "_tracer", provider.get_tracer("telha_jobs"))

    def handler(job: telha_jobs.Job) -> Any:
        if job.payload.get("flaky") and job.attempts == 0:
            raise RuntimeError("flaky once")
        return job.payload["n"]

    with telha_jobs.connect(server, timeout=10.0) as q:
        assert q.get(one).metadata["traceparent"] == f"00-{made['traceId']}-{made['spanId']}-01"  # type: ignore[union-attr]
        with telha_jobs.Worker(q, handler, concurrency=1, poll_wait=0.05):
            end = time.monotonic() + 60
            while len(exporter.get_finished_spans()) < 3:
                assert time.monotonic() < end, exporter.get_finished_spans()
                time.sleep(0.02)
        assert [q.get(i).state for i in (one, two)] == ["completed", "completed"]  # type: ignore[union-attr]
    spans = sorted(exporter.get_finished_spans(), key=lambda s: s.start_time or 0)
    by_job: dict[str, list[Any]] = {}
    for s in spans:
        attrs = dict(s.attributes or {})
        assert s.name == "process traced" and attrs["messaging.system"] == "telha"
        assert attrs["messaging.operation.type"] == "process"
        # One trace with the Node producer: its span is the parent and the link.
        assert s.context is not None and s.context.trace_id == trace_id
        assert s.parent is not None and s.parent.span_id == span_id
        assert [(link.context.trace_id, link.context.span_id) for link in s.links] == [(trace_id, span_id)]
        by_job.setdefault(str(attrs["messaging.message.id"]), []).append(s)
    assert sorted(by_job) == sorted([one, two])
    assert len(by_job[one]) == 1
    first, second = by_job[two]
    assert [dict(s.attributes or {})["telha.job.attempt"] for s in (first, second)] == [1, 2]
    assert first.status.status_code == trace.StatusCode.ERROR
    assert second.parent is not None and first.context is not None
    assert second.parent.span_id != first.context.span_id  # a retry is not the first's child
    print(f"\none trace {made['traceId']}: producer {made['spanId']}, "
          f"{len(spans)} process spans ({len(by_job[two])} for the retried job)")
    provider.shutdown()

"""Trace context across the queue (issue 45): an enqueue inside a span puts
its W3C ``traceparent`` / ``tracestate`` into the job's metadata, and the
Workers run each handler in a CONSUMER span whose parent and link are that
context, every attempt a span of its own. Spans go to the SDK's in-memory
exporter through a provider of the test's own (never the global one, so
other suites are not traced); without OpenTelemetry imported nothing of it
is imported (checked in fresh interpreters)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags, TraceState

import telha_jobs
from telha_jobs import _otel
from telha_jobs.aio import AsyncQueue, AsyncWorker

from .conftest import Target
from .test_worker import wait_for

TRACE_ID = 0x0AF7651916CD43DD8448EB211C80319C
SPAN_ID = 0xB7AD6B7169203331
TRACEPARENT = f"00-{TRACE_ID:032x}-{SPAN_ID:016x}-01"


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """The Workers' tracer, on a provider of the test's own."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(_otel, "_tracer", provider.get_tracer("telha_jobs"))
    yield exporter
    provider.shutdown()


def producer_context(state: str | None = "vendor=abc") -> Any:
    """A context whose active span is a known remote producer's."""
    sc = SpanContext(
        TRACE_ID, SPAN_ID, is_remote=True, trace_flags=TraceFlags(1),
        trace_state=TraceState.from_header([state]) if state else None,
    )
    return trace.set_span_in_context(NonRecordingSpan(sc))


def in_span(state: str | None = "vendor=abc") -> Any:
    return trace.use_span(trace.get_current_span(producer_context(state)))


def test_an_enqueue_inside_a_span_carries_its_traceparent_and_tracestate(queue: telha_jobs.Queue) -> None:
    with in_span():
        one = queue.enqueue("mail", {"n": 1})
        many = queue.enqueue_many([("mail", 2), {"kind": "mail", "payload": 3, "metadata": {"a": "b"}}])
    untraced = queue.enqueue("mail", 4)
    for i in [one, *many]:
        job = queue.get(i)
        assert job is not None
        assert job.metadata.get("traceparent") == TRACEPARENT
        assert job.metadata.get("tracestate") == "vendor=abc"
    assert queue.get(many[1]).metadata["a"] == "b"  # type: ignore[union-attr]
    assert queue.get(untraced).metadata == {}  # type: ignore[union-attr]
    with in_span(state=None):
        bare = queue.enqueue("mail", 5)
    assert queue.get(bare).metadata == {"traceparent": TRACEPARENT}  # type: ignore[union-attr]


def test_a_callers_own_trace_keys_are_kept_whole(queue: telha_jobs.Queue) -> None:
    mine = f"00-{1:032x}-{2:016x}-00"
    with in_span():
        a = queue.enqueue("mail", 1, metadata={"traceparent": mine})
        b = queue.enqueue("mail", 2, metadata={"tracestate": "only=me"})
    assert queue.get(a).metadata == {"traceparent": mine}  # type: ignore[union-attr]
    assert queue.get(b).metadata == {"tracestate": "only=me"}  # type: ignore[union-attr]


def test_an_asyncio_enqueue_carries_the_tasks_span(target: Target) -> None:
    async def main() -> None:
        q = AsyncQueue(target.open(reaper_interval=0))
        with in_span():
            i = await q.enqueue("mail", 1)
            [j] = await q.enqueue_many([("mail", 2)])
        k = await q.enqueue("mail", 3)
        for x in (i, j):
            got = await q.get(x)
            assert got is not None and got.metadata["traceparent"] == TRACEPARENT
        got = await q.get(k)
        assert got is not None and got.metadata == {}
        q._pool.shutdown(wait=True)

    asyncio.run(main())


def process_spans(exporter: InMemorySpanExporter, n: int) -> list[ReadableSpan]:
    wait_for(lambda: len(exporter.get_finished_spans()) >= n)
    return sorted(exporter.get_finished_spans(), key=lambda s: s.start_time or 0)


def check_process_span(s: ReadableSpan, job_id: str, attempt: int) -> None:
    assert s.name == "process mail" and s.kind == SpanKind.CONSUMER
    attrs = dict(s.attributes or {})
    assert attrs["messaging.system"] == "telha"
    assert attrs["messaging.operation.type"] == "process"
    assert attrs["messaging.message.id"] == job_id
    assert attrs["messaging.destination.name"] == "mail"
    assert attrs["telha.job.attempt"] == attempt
    # One trace: the producer's context is the parent, and the link.
    assert s.context is not None and s.context.trace_id == TRACE_ID
    assert s.parent is not None and s.parent.span_id == SPAN_ID
    assert [(link.context.trace_id, link.context.span_id) for link in s.links] == [(TRACE_ID, SPAN_ID)]


def test_a_worker_runs_each_attempt_in_a_consumer_span_linked_to_the_producer(
    target: Target, spans: InMemorySpanExporter
) -> None:
    with target.open(reaper_interval=0, backoff_base=0.001) as q:
        with in_span():
            job_id = q.enqueue("mail", {"n": 1})
        seen: list[str] = []

        def handler(job: telha_jobs.Job) -> Any:
            # The handler runs inside its span: a job it enqueues is a child.
            ctx = trace.get_current_span().get_span_context()
            seen.append(f"{ctx.span_id:016x}")
            if job.attempts == 0:
                raise RuntimeError("transient")
            return q.enqueue("followup", None)

        with telha_jobs.Worker(q, handler, kinds="mail", concurrency=1, poll_wait=0.05):
            first, second = process_spans(spans, 2)
            wait_for(lambda: len(q.list(kind="followup")) == 1)
        follow = [j.metadata.get("traceparent") for j in q.list(kind="followup")]
    check_process_span(first, job_id, 1)
    check_process_span(second, job_id, 2)
    # A retry is a span of its own beside the first, not its child.
    assert first.context is not None and second.context is not None
    assert first.context.span_id != second.context.span_id
    assert second.parent is not None and second.parent.span_id != first.context.span_id
    assert first.status.status_code == trace.StatusCode.ERROR
    assert [e.name for e in first.events] == ["exception"]
    assert seen == [f"{first.context.span_id:016x}", f"{second.context.span_id:016x}"]
    assert follow == [f"00-{TRACE_ID:032x}-{second.context.span_id:016x}-01"]


def test_an_async_worker_runs_each_attempt_in_a_consumer_span(
    target: Target, spans: InMemorySpanExporter
) -> None:
    async def main() -> str:
        q = AsyncQueue(target.open(reaper_interval=0, backoff_base=0.001))
        with in_span():
            job_id = await q.enqueue("mail", 1)

        async def handler(job: telha_jobs.Job) -> Any:
            await asyncio.sleep(0)
            if job.attempts == 0:
                raise RuntimeError("transient")
            return None

        w = AsyncWorker(q, handler, concurrency=2, poll_wait=0.05)
        task = asyncio.ensure_future(w.run())
        while len(spans.get_finished_spans()) < 2:
            await asyncio.sleep(0.01)
        await w.stop()
        await task
        q._pool.shutdown(wait=True)
        return job_id

    job_id = asyncio.run(main())
    first, second = process_spans(spans, 2)
    check_process_span(first, job_id, 1)
    check_process_span(second, job_id, 2)


def test_a_job_without_trace_context_gets_a_root_process_span(
    queue: telha_jobs.Queue, spans: InMemorySpanExporter
) -> None:
    job_id = queue.enqueue("mail", 1)
    with telha_jobs.Worker(queue, lambda job: None, concurrency=1, poll_wait=0.05):
        [s] = process_spans(spans, 1)
    assert s.parent is None and list(s.links) == []
    assert dict(s.attributes or {})["messaging.message.id"] == job_id


RUN_WITHOUT_OTEL = textwrap.dedent(
    """
    import sys, tempfile, telha_jobs
    {block}
    with tempfile.TemporaryDirectory() as d, telha_jobs.Queue(d, reaper_interval=0) as q:
        q.enqueue("mail", 1)
        q.enqueue_many([("mail", 2)])
        w = telha_jobs.Worker(q, lambda job: None, concurrency=1, poll_wait=0.05)
        w.start()
        while q.stats()["total"]["completed"] < 2:
            pass
        w.stop(5.0)
        assert [j.metadata for j in q.list(kind="mail")] == [{{}}, {{}}]
    print(sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry"))
    """
)

BLOCK_IMPORT = """
class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "opentelemetry":
            raise ImportError("no opentelemetry here")
        return None
sys.meta_path.insert(0, NotInstalled())
"""


@pytest.mark.parametrize("installed", [True, False])
def test_without_opentelemetry_imported_nothing_of_it_is_imported(installed: bool) -> None:
    code = RUN_WITHOUT_OTEL.format(block="" if installed else BLOCK_IMPORT)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"

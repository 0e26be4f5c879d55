"""Issue 51: what a handler produces that the queue cannot store (a result,
a follow-up job, a progress value) fails that job for good with the encoding
error as its reason; every other job goes on, and no Worker thread or task
dies. Both Workers, embedded and over ``connect()`` (``target``: a server
in this process, reached through the gRPC client; a remote Worker leases
ahead and settles in ``complete_many`` batches, where one bad completion
must not fail the others of its batch)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import telha_jobs
from telha_jobs.aio import AsyncQueue, AsyncWorker

from .conftest import Target

JOBS = 300
MODES = ["result", "follow_up", "progress"]
WITHIN = 60.0  # seconds for all the jobs to settle (a dead Worker thread leaves them pending)


def left(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


class Weird:
    """A value of a plain class: no payload encoding takes it."""


@pytest.fixture
def thread_deaths(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """What ``threading.excepthook`` was told: a thread that ended on an exception."""
    seen: list[Any] = []
    monkeypatch.setattr(threading, "excepthook", seen.append)
    yield seen


def produce(mode: str, n: int) -> Any:
    """The handler's work for job ``n``: every third one produces a value
    that cannot be stored, the way ``mode`` says."""
    if n % 3 == 0:
        lease = telha_jobs.current_lease()
        assert lease is not None
        if mode == "result":
            return {"n": n, "bad": Weird()}
        if mode == "follow_up":
            lease.follow_up([("next", {"w": Weird()})])
        else:
            lease.progress({"w": Weird()})  # raises TypeError: the handler lets it go
    return {"n": n}


def check(q: telha_jobs.Queue, mode: str, ids: list[str], infos: list[telha_jobs.JobInfo],
          counts: dict[str, int], deaths: list[Any]) -> None:
    for n, (job_id, info) in enumerate(zip(ids, infos)):
        assert info.id == job_id
        if n % 3 == 0:
            assert info.state == "dead" and info.attempts == 1, (n, info.state, info.last_error)
            want = ("Permanent: the handler's progress value cannot be stored: TypeError: "
                    if mode == "progress" else
                    "Permanent: the handler's result or follow-up jobs cannot be stored: TypeError: ")
            assert info.last_error is not None and info.last_error.startswith(want), info.last_error
            assert "cannot encode a Weird value" in info.last_error, info.last_error
        else:
            assert info.state == "completed" and info.result == {"n": n}, (n, info.state, info.last_error)
    # No follow-up of a job that did not complete exists.
    total = q.stats()["total"]
    assert total["pending"] == 0 and total["completed"] == 200 and total["dead"] == 100, total
    assert counts == {**dict.fromkeys(counts, 0), "completed": 200, "failed": 100}, counts
    assert deaths == []


@pytest.mark.parametrize("mode", MODES)
def test_the_worker_fails_only_the_jobs_whose_values_cannot_be_stored(
    target: Target, thread_deaths: list[Any], mode: str
) -> None:
    q = target.open(reaper_interval=0, max_attempts=3)
    ids = [str(i) for i in q.enqueue_many([("doc", {"n": n}) for n in range(JOBS)])]

    def handle(job: telha_jobs.Job) -> Any:
        return produce(mode, job.payload["n"])

    # A long linger on a remote queue: completions gather into batches that
    # mix good and bad ones.
    w = telha_jobs.Worker(q, handle, concurrency=8, poll_wait=0.05, settle_batch=16, settle_linger=0.05)
    w.start()
    try:
        deadline = time.monotonic() + WITHIN
        infos = [q.wait(job_id, timeout=left(deadline)) for job_id in ids]
    finally:
        w.stop(10.0)
    assert w.stop_reason is None
    if target.remote:
        batch = w._batch
        assert batch is not None and batch.calls < batch.sent  # batches of several completions
    check(q, mode, ids, infos, w.counts, thread_deaths)


@pytest.mark.parametrize("mode", MODES)
def test_the_async_worker_fails_only_the_jobs_whose_values_cannot_be_stored(
    target: Target, thread_deaths: list[Any], mode: str
) -> None:
    q = target.open(reaper_interval=0, max_attempts=3)
    ids = [str(i) for i in q.enqueue_many([("doc", {"n": n}) for n in range(JOBS)])]
    loop_errors: list[dict[str, Any]] = []

    async def handle(job: telha_jobs.Job) -> Any:
        await asyncio.sleep(0)
        return produce(mode, job.payload["n"])

    async def main() -> tuple[list[telha_jobs.JobInfo], AsyncWorker]:
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: loop_errors.append(ctx))
        aq = AsyncQueue(q)
        w = AsyncWorker(aq, handle, concurrency=8, poll_wait=0.05, settle_batch=16, settle_linger=0.05)
        runner = asyncio.create_task(w.run())
        try:
            deadline = time.monotonic() + WITHIN
            infos = [await aq.wait(job_id, timeout=left(deadline)) for job_id in ids]
        finally:
            await w.stop(10.0)
            await asyncio.wait_for(runner, 10.0)
        return infos, w

    infos, w = asyncio.run(main())
    assert w.stop_reason is None and loop_errors == []
    assert w.settle_calls < w.settle_sent  # batches of several completions
    check(q, mode, ids, infos, w.counts, thread_deaths)


def test_a_worker_whose_queue_closes_stops_and_says_why(target: Target, thread_deaths: list[Any]) -> None:
    q = target.open(reaper_interval=0)
    q.enqueue("doc", 1)
    started = threading.Event()

    def handle(job: telha_jobs.Job) -> None:
        started.set()

    w = telha_jobs.Worker(q, handle, concurrency=2, poll_wait=0.05)
    w.start()
    assert started.wait(30.0)
    q.close()
    assert w.join(30.0), "the Worker did not stop when its queue closed"
    assert not w.running
    assert w.stop_reason is not None and "closed" in w.stop_reason, w.stop_reason
    assert w.counts["errors"] == 0 and thread_deaths == []


def test_an_async_worker_whose_queue_closes_stops_and_says_why(target: Target) -> None:
    q = target.open(reaper_interval=0)
    q.enqueue("doc", 1)
    loop_errors: list[dict[str, Any]] = []

    async def main() -> AsyncWorker:
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: loop_errors.append(ctx))
        aq = AsyncQueue(q)
        started = asyncio.Event()

        async def handle(job: telha_jobs.Job) -> None:
            started.set()

        w = AsyncWorker(aq, handle, concurrency=2, poll_wait=0.05)
        runner = asyncio.create_task(w.run())
        await asyncio.wait_for(started.wait(), 30.0)
        await aq.close()
        await asyncio.wait_for(runner, 30.0)  # run() returns: the Worker stopped by itself
        return w

    w = asyncio.run(main())
    assert w.stop_reason is not None and "closed" in w.stop_reason, w.stop_reason
    assert w.counts["errors"] == 0 and loop_errors == []

"""Job control under the Workers (issue 16): a cancel from another handle or
another process stops a long handler within one heartbeat interval and the
job ends cancelled; a handler that never returns is bounded by its kind's
timeout; ``raise Snooze`` and ``raise Retry(after=...)``. Both Worker and
AsyncWorker, embedded and over connect."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

import telha_jobs
from telha_jobs import Retry, Snooze, current_lease
from telha_jobs.aio import AsyncQueue, AsyncWorker

from .conftest import Target, spawn
from .test_worker import wait_for

TTL = 0.9  # heartbeats every TTL / 3 = 0.3 s
BEAT = TTL / 3
SLACK = 1.0  # scheduling on a shared 2-core machine

# Another process cancels a job through the server: what `telha jobs
# cancel --server` does, through the same client.
CANCELLER = """
import sys, telha_jobs
q = telha_jobs.connect(sys.argv[1], timeout=10)
print(q.cancel(sys.argv[2], "from another process"), flush=True)
q.close()
"""


def cancel_elsewhere(target: Target, q: telha_jobs.Queue, job_id: str) -> float:
    """Cancel `job_id` from another process (remote: a child connecting to
    the server) or another handle on the same store (embedded: the store is
    locked to this process). Returns when the cancel was answered."""
    if target.remote:
        assert q.location.startswith("http")
        p = spawn(CANCELLER, q.location, job_id)
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert out.strip() == "requested"
    else:
        # Same settings: the process shares one store per path.
        other = telha_jobs.Queue(target.local().path, reaper_interval=0, lease_ttl=TTL)
        assert other.cancel(job_id, "from another handle") == "requested"
        other.close()
    return time.monotonic()


def test_a_cancel_stops_a_long_handler_within_one_heartbeat(target: Target) -> None:
    seen: dict[str, Any] = {}
    started = threading.Event()

    def handler(job: telha_jobs.Job) -> str:
        lease = current_lease()
        assert lease is not None
        started.set()
        try:
            while True:  # a long job that checks between steps
                lease.check()
                time.sleep(0.01)
        except telha_jobs.LeaseLostError as e:
            seen["at"] = time.monotonic()
            seen["error"] = e
            seen["cancelled"] = lease.cancelled
            raise

    with target.open(reaper_interval=0, lease_ttl=TTL) as q:
        job_id = q.enqueue("embed")
        with telha_jobs.Worker(q, handler, concurrency=1, poll_wait=0.1) as w:
            assert started.wait(20)
            time.sleep(0.2)
            at = cancel_elsewhere(target, q, job_id)
            wait_for(lambda: w.counts["cancelled"] == 1)
        assert isinstance(seen["error"], telha_jobs.CancelledError) and seen["cancelled"]
        assert seen["at"] - at <= BEAT + SLACK, f"the handler stopped {seen['at'] - at:.2f}s after the cancel"
        info = q.get(job_id)
        assert info is not None and info.state == "cancelled"
        assert "cancel_requested" in [e[1] for e in info.events]
        assert w.counts["failed"] == 0 and w.counts["completed"] == 0


def test_a_cancel_stops_a_long_async_handler_within_one_heartbeat(target: Target) -> None:
    seen: dict[str, Any] = {}

    async def handler(job: telha_jobs.Job) -> str:
        lease = current_lease()
        assert lease is not None
        seen["started"] = True
        while not lease.lost:
            await asyncio.sleep(0.01)
        seen["at"] = time.monotonic()
        seen["cancelled"] = lease.cancelled
        try:
            lease.check()
        except telha_jobs.CancelledError:
            seen["raised"] = True
        return "finished anyway"  # the settle records it cancelled

    with target.open(reaper_interval=0, lease_ttl=TTL) as q:
        job_id = q.enqueue("embed")

        async def main() -> dict[str, int]:
            aq = AsyncQueue(q)
            w = AsyncWorker(aq, handler, concurrency=1, poll_wait=0.1)
            run = asyncio.create_task(w.run())
            while "started" not in seen:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)
            seen["cancel"] = await asyncio.get_running_loop().run_in_executor(
                None, cancel_elsewhere, target, q, job_id)
            while w.counts["cancelled"] == 0:
                await asyncio.sleep(0.01)
            await w.stop()
            await run
            return dict(w.counts)

        counts = asyncio.run(main())
        assert seen["cancelled"] and seen["raised"]
        assert seen["at"] - seen["cancel"] <= BEAT + SLACK
        info = q.get(job_id)
        assert info is not None and info.state == "cancelled"
        assert info.result == "finished anyway"  # a complete after the request keeps its result
        assert counts["cancelled"] == 1 and counts["completed"] == 0


def test_a_handler_that_never_returns_is_bounded_by_the_kinds_timeout(target: Target) -> None:
    release = threading.Event()
    told: list[bool] = []

    def handler(job: telha_jobs.Job) -> None:
        lease = current_lease()
        assert lease is not None and job.timeout == pytest.approx(0.4)
        lease.wait_lost(30)  # a hung handler would not even do this; it only records
        told.append(lease.timed_out)
        release.wait(60)  # never returns while the test looks

    with target.open(reaper_interval=0, lease_ttl=30.0, backoff_base=3600.0, backoff_cap=3600.0,
                     kinds={"slow": {"timeout": 0.4}}) as q:
        job_id = q.enqueue("slow")
        w = telha_jobs.Worker(q, handler, concurrency=1, poll_wait=0.1, stop_timeout=0.1)
        w.start()
        t0 = time.monotonic()
        try:
            wait_for(lambda: w.counts["timed_out"] == 1)
            took = time.monotonic() - t0
            info = q.get(job_id)
            assert info is not None and info.state == "failed" and info.attempts == 1
            assert info.last_error is not None and info.last_error.startswith("timed out after 0.4s")
            assert took < 0.4 + SLACK + 1.0, f"failed {took:.2f}s after it started"
            wait_for(lambda: told == [True])
        finally:
            release.set()
            w.stop()
        assert w.counts["completed"] == 0


def test_an_async_handler_past_its_timeout_is_told_lost_and_its_job_failed(target: Target) -> None:
    async def handler(job: telha_jobs.Job) -> None:
        lease = current_lease()
        assert lease is not None
        while not lease.lost:
            await asyncio.sleep(0.01)
        with pytest.raises(telha_jobs.LeaseLostError):
            lease.check()

    with target.open(reaper_interval=0, lease_ttl=30.0, backoff_base=3600.0, backoff_cap=3600.0,
                     kinds={"slow": {"timeout": 0.3}}) as q:
        job_id = q.enqueue("slow")

        async def main() -> dict[str, int]:
            w = AsyncWorker(AsyncQueue(q), handler, concurrency=1, poll_wait=0.1)
            run = asyncio.create_task(w.run())
            while w.counts["timed_out"] == 0:
                await asyncio.sleep(0.01)
            await w.stop()
            await run
            return dict(w.counts)

        counts = asyncio.run(main())
        assert counts["timed_out"] == 1 and counts["completed"] == 0
        info = q.get(job_id)
        assert info is not None and info.state == "failed"
        assert info.last_error is not None and "timed out after" in info.last_error


def test_a_job_without_a_timeout_is_not_timed(target: Target) -> None:
    with target.open(reaper_interval=0, kinds={"slow": {"timeout": False}}) as q:
        q.enqueue("slow")
        job = q.lease_next("w")
        assert job is not None and job.timeout is None


def test_snooze_and_retry_from_a_handler(target: Target) -> None:
    calls: dict[str, int] = {}

    def handler(job: telha_jobs.Job) -> str:
        n = calls[job.kind] = calls.get(job.kind, 0) + 1
        if n == 1 and job.kind == "snoozer":
            raise Snooze(0.05)
        if n == 1 and job.kind == "retrier":
            raise Retry(ValueError("rate limited"), after=0.05)
        return "ok"

    # An hour of backoff: only Retry's own delay brings the job back.
    with target.open(reaper_interval=0, backoff_base=3600.0, backoff_cap=3600.0) as q:
        s = q.enqueue("snoozer")
        r = q.enqueue("retrier")
        with telha_jobs.Worker(q, handler, concurrency=2, poll_wait=0.05) as w:
            wait_for(lambda: w.counts["completed"] == 2)
        si, ri = q.get(s), q.get(r)
        assert si is not None and si.state == "completed" and si.snoozes == 1 and si.attempts == 0
        assert ri is not None and ri.state == "completed" and ri.attempts == 1
        assert ri.last_error == "ValueError: rate limited"
        assert w.counts["snoozed"] == 1 and w.counts["failed"] == 1


def test_snooze_and_retry_from_an_async_handler(target: Target) -> None:
    calls: dict[str, int] = {}

    async def handler(job: telha_jobs.Job) -> str:
        n = calls[job.kind] = calls.get(job.kind, 0) + 1
        if n == 1 and job.kind == "snoozer":
            raise Snooze(0.05)
        if n == 1 and job.kind == "retrier":
            raise Retry("try later", after=0)
        return "ok"

    with target.open(reaper_interval=0, backoff_base=3600.0, backoff_cap=3600.0) as q:
        s = q.enqueue("snoozer")
        r = q.enqueue("retrier")

        async def main() -> dict[str, int]:
            w = AsyncWorker(AsyncQueue(q), handler, concurrency=2, poll_wait=0.05)
            run = asyncio.create_task(w.run())
            while w.counts["completed"] < 2:
                await asyncio.sleep(0.01)
            await w.stop()
            await run
            return dict(w.counts)

        counts = asyncio.run(main())
        assert counts["snoozed"] == 1 and counts["failed"] == 1
        si, ri = q.get(s), q.get(r)
        assert si is not None and si.snoozes == 1 and si.attempts == 0
        assert ri is not None and ri.attempts == 1 and ri.last_error == "try later"


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "5", True])
def test_snooze_and_retry_refuse_bad_delays(bad: Any) -> None:
    err = TypeError if isinstance(bad, (str, bool)) else telha_jobs.InvalidArgumentError
    with pytest.raises(err):
        Snooze(bad)
    with pytest.raises(err):
        Retry("x", after=bad)


def test_a_hung_handler_that_keeps_heartbeating_loses_its_job_after_max_lease_total(target: Target) -> None:
    hang = threading.Event()
    told: list[bool] = []

    def hung(job: telha_jobs.Job) -> str:
        lease = current_lease()
        assert lease is not None
        told.append(lease.wait_lost(30))  # the heartbeat thread keeps beating meanwhile
        hang.wait(60)
        return "too late"

    with target.open(reaper_interval=0, lease_ttl=0.3, backoff_base=0.001, backoff_cap=0.001,
                     kinds={"slow": {"max_lease_total": 0.6}}) as q:
        job_id = q.enqueue("slow")
        w = telha_jobs.Worker(q, hung, concurrency=1, poll_wait=0.1, stop_timeout=0.1)
        w.start()
        try:
            wait_for(lambda: told == [True])  # extend stopped renewing: lost
            rescued = None
            end = time.monotonic() + 20
            while rescued is None and time.monotonic() < end:
                q.reap()  # the ordinary expiry path
                rescued = q.lease_next("rescuer", wait=0.1)
            assert rescued is not None and rescued.id == job_id
            if q.remote:
                # The hung worker leases ahead: its stream may have taken the
                # reaped job and released it unstarted (stale in the prefetch
                # behind the hung handler), never spending an attempt.
                assert rescued.generation >= 2 and rescued.attempts == 1, rescued
            else:
                assert rescued.generation == 2
            q.complete(rescued, "done")
        finally:
            hang.set()
            wait_for(lambda: w.counts["lost"] == 1)  # its late result was refused
            w.stop()
        assert told == [True]  # the hung handler ran once: nothing else reached it
        info = q.get(job_id)
        assert info is not None and info.state == "completed" and info.result == "done"

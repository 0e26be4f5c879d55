"""asyncio: AsyncQueue never blocks the event loop; AsyncWorker."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

import telha_jobs
from telha_jobs.aio import AsyncQueue, AsyncWorker

from .conftest import Target
from .test_worker import RELAPSE_SETTINGS, check_the_job_completed_by_its_last_delivery, hold_the_gil_past


def run(coro: object) -> object:
    return asyncio.run(coro)  # type: ignore[arg-type]


async def aopen(target: Target, **settings: Any) -> AsyncQueue:
    """An AsyncQueue over the target's queue (embedded, or remote)."""
    return AsyncQueue(target.open(**settings))


def test_async_queue_open_opens_an_embedded_store(store: Path) -> None:
    async def main() -> None:
        async with await AsyncQueue.open(store, reaper_interval=0, max_attempts=2) as q:
            assert q.path is not None and q.settings()["max_attempts"] == 2
            job_id = await q.enqueue("embed")
            assert (await q.get(job_id)) is not None
        assert q.queue.closed

    run(main())


def test_the_queue_api_as_coroutines(target: Target) -> None:
    async def main() -> None:
        async with await aopen(target, reaper_interval=0) as q:
            job_id = await q.enqueue("embed", {"n": 1}, priority=3)
            ids = await q.enqueue_many([("embed", 2), ("embed", 3)])
            job = await q.lease_next("w")
            assert job is not None and job.id == job_id
            assert await q.extend([job], "w") == [True]
            await q.complete(job, "ok")
            info = await q.get(job_id)
            assert info is not None and info.result == "ok"
            jobs = await q.lease_many("w", 10)
            assert [j.id for j in jobs] == ids
            await q.fail(jobs[0], "nope", retryable=False)
            await q.retry(jobs[0].id)
            await q.release(jobs[1])
            assert (await q.stats())["total"]["pending"] == 2
            assert len(await q.list(state="pending")) == 2
            assert "telha_jobs_jobs" in await q.metrics()
            assert (await q.reap())["expired"] == 0
            assert await q.purge("completed", time.time() - 60) == 0
            assert await q.purge("completed", time.time() + 60) == 1
            assert await q.get(job_id) is None
            with pytest.raises(telha_jobs.InvalidArgumentError):
                await q.purge("pending", time.time())  # type: ignore[arg-type]

    run(main())


def test_fail_many_and_release_many_as_coroutines(target: Target) -> None:
    async def main() -> None:
        async with await aopen(target, reaper_interval=0) as q:
            ids = await q.enqueue_many([("embed", 1), ("embed", 2), ("embed", 3)])
            jobs = await q.lease_many("w", 3)
            out = await q.fail_many(jobs[:2], "boom", retryable=[True, False], retry_in=30)
            assert out == [None, None]
            assert [(await q.get(i)).state for i in ids[:2]] == ["failed", "dead"]  # type: ignore[union-attr]
            out = await q.release_many([jobs[2], jobs[0]])
            assert out[0] is None and isinstance(out[1], telha_jobs.LeaseLostError)
            assert (await q.get(ids[2])).state == "pending"  # type: ignore[union-attr]

    run(main())


def test_a_waiting_lease_does_not_block_the_event_loop(target: Target) -> None:
    async def main() -> None:
        async with await aopen(target, reaper_interval=0) as q:
            ticks = 0

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    ticks += 1
                    await asyncio.sleep(0.01)

            t = asyncio.create_task(ticker())
            waiter = asyncio.create_task(q.lease_next("w", wait=30.0))
            await asyncio.sleep(0.3)
            assert not waiter.done() and ticks >= 5  # the loop kept running
            await q.enqueue("embed", "wake")
            job = await asyncio.wait_for(waiter, 10.0)
            assert job is not None and job.payload == "wake"
            t.cancel()

    run(main())


def test_cancelling_a_waiting_lease_ends_it_promptly(target: Target) -> None:
    async def main() -> None:
        async with await aopen(target, reaper_interval=0) as q:
            waiter = asyncio.create_task(q.lease_next("w", wait=120.0))
            await asyncio.sleep(0.1)
            t0 = time.monotonic()
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
            assert time.monotonic() - t0 < 10.0
            # Nothing was left leased by the cancelled call.
            await q.enqueue("embed")
            assert (await q.stats())["total"]["leased"] == 0

    run(main())


def test_the_async_worker_processes_jobs_and_stops(target: Target) -> None:
    async def main() -> None:
        async with await aopen(target, reaper_interval=0, backoff_base=0.001, max_attempts=1) as q:
            await q.enqueue_many([("embed", i) for i in range(100)])
            await q.enqueue("embed", -1)

            async def handler(job: telha_jobs.Job) -> int:
                assert telha_jobs.current_lease() is not None
                await asyncio.sleep(0)
                if job.payload < 0:
                    raise ValueError("negative")
                return int(job.payload) * 2

            w = AsyncWorker(q, handler, concurrency=4, poll_wait=0.05)
            runner = asyncio.create_task(w.run())
            while (await q.stats())["total"]["completed"] < 100:
                await asyncio.sleep(0.02)
            await w.stop(5.0)
            await asyncio.wait_for(runner, 10.0)
            stats = (await q.stats())["total"]
            assert stats["completed"] == 100 and stats["dead"] == 1
            assert w.counts["completed"] == 100 and w.counts["failed"] == 1

    run(main())


def test_async_stop_releases_handlers_past_the_timeout(target: Target) -> None:
    async def main() -> None:
        async with await aopen(target, reaper_interval=0) as q:
            job_id = await q.enqueue("embed")
            started = asyncio.Event()

            async def handler(job: telha_jobs.Job) -> None:
                started.set()
                await asyncio.sleep(60)

            w = AsyncWorker(q, handler, concurrency=1, poll_wait=0.05)
            runner = asyncio.create_task(w.run())
            await asyncio.wait_for(started.wait(), 10.0)
            await w.stop(0.1)
            await asyncio.wait_for(runner, 10.0)
            info = await q.get(job_id)
            assert info is not None and info.state == "pending" and info.attempts == 0
            assert w.counts["released"] == 1

    run(main())


def test_the_async_worker_heartbeats_a_long_handler_past_its_ttl(target: Target) -> None:
    async def main() -> None:
        async with await aopen(target, lease_ttl=1.0, reaper_interval=0.05) as q:
            job_id = await q.enqueue("embed")
            flags: list[bool] = []

            async def handler(job: telha_jobs.Job) -> str:
                lease = telha_jobs.current_lease()
                assert lease is not None
                for _ in range(30):  # 3 s, three TTLs
                    flags.append(lease.lost)
                    await asyncio.sleep(0.1)
                return "held"

            w = AsyncWorker(q, handler, concurrency=1, poll_wait=0.05)
            runner = asyncio.create_task(w.run())
            while (info := await q.get(job_id)) is not None and info.state != "completed":
                await asyncio.sleep(0.05)
            await w.stop(5.0)
            await asyncio.wait_for(runner, 10.0)
            info = await q.get(job_id)
            assert info is not None and info.result == "held" and info.attempts == 0
            assert [e[1] for e in info.events] == ["enqueued", "leased", "completed"]
            assert flags and not any(flags)

    run(main())


def test_the_async_worker_heartbeats_a_lease_taken_while_idle_in_time(target: Target) -> None:
    # With no lease held, the heartbeat task sleeps up to 0.5 s; a lease
    # taken meanwhile must wake it (as Worker's heartbeat thread is woken),
    # or a TTL under that expires before its first heartbeat. The job is
    # ready before the worker starts: it is leased just after the heartbeat
    # task first finds nothing to do.
    async def main() -> None:
        async with await aopen(
            target, lease_ttl=0.3, reaper_interval=0.05, backoff_base=0.01, backoff_cap=0.01
        ) as q:
            job_id = await q.enqueue("embed")
            flags: list[bool] = []

            async def handler(job: telha_jobs.Job) -> str:
                lease = telha_jobs.current_lease()
                assert lease is not None
                for _ in range(10):  # 1 s, three TTLs
                    flags.append(lease.lost)
                    await asyncio.sleep(0.1)
                return "held"

            w = AsyncWorker(q, handler, concurrency=1, poll_wait=0.05)
            runner = asyncio.create_task(w.run())
            end = time.monotonic() + 30.0
            while (info := await q.get(job_id)) is not None and info.state != "completed":
                assert time.monotonic() < end, f"not completed: {info.state}, attempts {info.attempts}"
                await asyncio.sleep(0.05)
            await w.stop(5.0)
            await asyncio.wait_for(runner, 10.0)
            info = await q.get(job_id)
            assert info is not None and info.result == "held"
            assert [e[1] for e in info.events] == ["enqueued", "leased", "completed"]
            assert flags and not any(flags)

    run(main())


def check_an_async_relapsed_lease_completes(q: telha_jobs.Queue, local: telha_jobs.Queue) -> None:
    """The AsyncWorker's case of test_worker's relapsed lease (issue 14): the
    first delivery blocks the event loop (and every other thread) past its
    TTL, then awaits until a second poller of the same AsyncWorker has
    leased the job again; delivery 1's refused settle must leave delivery 2
    heartbeated and its result kept."""
    job_id = q.enqueue("embed")
    calls: list[tuple[int, telha_jobs.Lease]] = []
    lost_at_return: dict[int, bool] = {}  # by generation (a heartbeat in flight may flag it later)
    again = asyncio.Event()

    async def handler(job: telha_jobs.Job) -> Any:
        lease = telha_jobs.current_lease()
        assert lease is not None and lease.job.generation == job.generation
        calls.append((job.generation, lease))
        call = len(calls)
        if call == 1:
            hold_the_gil_past(job.deadline)
            await asyncio.wait_for(again.wait(), 20.0)
        else:
            again.set()
            await asyncio.sleep(1.0)
        lost_at_return[job.generation] = lease.lost
        return {"call": call, "generation": job.generation}

    async def main() -> dict[str, int]:
        aq = AsyncQueue(q)
        w = AsyncWorker(aq, handler, concurrency=2, poll_wait=0.05)
        runner = asyncio.create_task(w.run())
        end = time.monotonic() + 30.0
        try:
            while time.monotonic() < end:
                info = await aq.get(job_id)
                if info is None or info.state in ("completed", "dead"):
                    break
                await asyncio.sleep(0.05)
        finally:
            await w.stop(5.0)
            await asyncio.wait_for(runner, 10.0)
            aq._pool.shutdown(wait=False)  # the queue itself stays open: the caller's
        return dict(w.counts)

    counts = asyncio.run(main())
    check_the_job_completed_by_its_last_delivery(local, job_id, calls, lost_at_return, counts)


def test_a_lease_lost_under_an_async_handler_and_leased_again_completes(target: Target) -> None:
    with target.open(**RELAPSE_SETTINGS) as q:
        check_an_async_relapsed_lease_completes(q, target.local())


def test_async_queue_serve_shares_the_store_and_stops_off_the_loop(store: Path) -> None:
    async def main() -> None:
        async with await AsyncQueue.open(store, reaper_interval=0) as q:
            async with await q.serve("127.0.0.1:0", metrics_listen="127.0.0.1:0", ui=True) as server:
                assert server.running and server.url.startswith("http://127.0.0.1:")
                assert server.ui_url is not None and server.metrics_address is not None
                async with await AsyncQueue.connect(server.url) as remote:
                    job_id = await remote.enqueue("embed", {"n": 1})
                    with pytest.raises(telha_jobs.InvalidArgumentError):
                        await remote.serve("127.0.0.1:0")  # a remote queue cannot be served
                job = await q.lease_next("w")
                assert job is not None and job.id == job_id
                await q.complete(job)
            assert not server.running
            with pytest.raises(telha_jobs.InvalidArgumentError):
                await q.serve("0.0.0.0:0")  # off loopback without a token

    run(main())


def test_handlers_that_never_wait_run_in_their_own_context(store: Path) -> None:
    """A handler that finishes without awaiting runs without a task of its
    own (issue 52): it still sees its own lease, a context variable it sets
    stays its own, and one that raises at once is failed as any other."""
    import contextvars

    mark: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="unset")
    seen: list[tuple[str, str, str]] = []

    async def handler(job: telha_jobs.Job) -> Any:
        lease = telha_jobs.current_lease()
        assert lease is not None
        seen.append((job.payload, lease.job.id == job.id and "own" or "other", mark.get()))
        mark.set(job.payload)
        if job.payload == "boom":
            raise ValueError("at once")
        if job.payload == "wait":
            await asyncio.sleep(0.01)
            assert telha_jobs.current_lease() is lease and mark.get() == "wait"
        return job.payload

    async def main() -> None:
        async with await AsyncQueue.open(store, reaper_interval=0, max_attempts=1) as q:
            ids = [await q.enqueue("embed", p) for p in ["a", "boom", "wait", "b"]]
            w = AsyncWorker(q, handler, concurrency=4, poll_wait=0.05)
            runner = asyncio.create_task(w.run())
            for _ in range(500):
                if w.counts["completed"] + w.counts["failed"] >= 4:
                    break
                await asyncio.sleep(0.01)
            await w.stop()
            await runner
            assert mark.get() == "unset"  # nothing leaked into the caller's context
            states = [(await q.get(i)).state for i in ids]  # type: ignore[union-attr]
            assert states == ["completed", "dead", "completed", "completed"], states
            info = await q.get(ids[0])
            assert info is not None and info.result == "a"

    run(main())
    assert sorted(seen) == [("a", "own", "unset"), ("b", "own", "unset"), ("boom", "own", "unset"), ("wait", "own", "unset")]


def test_each_handler_runs_as_its_own_current_task(store: Path) -> None:
    """Every handler, one that never waits included (it may start eagerly on
    Python >= 3.12), runs as a task of its own: ``asyncio.current_task()``
    is a task no other job or the Worker shares, and an ``asyncio.timeout``
    that expires in a handler times out that handler only (with the wrong
    current task it would cancel the Worker's lease loop instead)."""
    tasks: dict[str, asyncio.Task[Any] | None] = {}

    async def handler(job: telha_jobs.Job) -> Any:
        tasks[job.payload] = asyncio.current_task()
        if job.payload.startswith("slow"):
            try:
                async with asyncio.timeout(0.01):
                    await asyncio.sleep(5)
            except TimeoutError:
                return "timed out"
        return "ok"

    async def main() -> None:
        async with await AsyncQueue.open(store, reaper_interval=0) as q:
            payloads = ["a", "slow1", "b", "slow2", "c", "d"]
            ids = [await q.enqueue("embed", p) for p in payloads]
            w = AsyncWorker(q, handler, concurrency=2, poll_wait=0.05)
            runner = asyncio.create_task(w.run())
            for _ in range(500):
                if w.counts["completed"] >= len(ids):
                    break
                await asyncio.sleep(0.01)
            assert w.counts["completed"] == len(ids), w.counts
            assert w._lease_task is not None and not w._lease_task.done(), "the lease loop was cancelled"
            await w.stop()
            await runner
            results = [(await q.get(i)).result for i in ids]  # type: ignore[union-attr]
            assert results == ["ok", "timed out", "ok", "timed out", "ok", "ok"], results
            seen = [tasks[p] for p in payloads]
            assert all(t is not None for t in seen)
            assert len({id(t) for t in seen}) == len(payloads), "two jobs shared a task"
            assert w._lease_task not in seen and runner not in seen

    run(main())

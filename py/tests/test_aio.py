"""asyncio: AsyncQueue never blocks the event loop; AsyncWorker."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

import telha_jobs
from telha_jobs.aio import AsyncQueue, AsyncWorker


def run(coro: object) -> object:
    return asyncio.run(coro)  # type: ignore[arg-type]


def test_the_queue_api_as_coroutines(store: Path) -> None:
    async def main() -> None:
        async with await AsyncQueue.open(store, reaper_interval=0) as q:
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

    run(main())


def test_a_waiting_lease_does_not_block_the_event_loop(store: Path) -> None:
    async def main() -> None:
        async with await AsyncQueue.open(store, reaper_interval=0) as q:
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


def test_cancelling_a_waiting_lease_ends_it_promptly(store: Path) -> None:
    async def main() -> None:
        async with await AsyncQueue.open(store, reaper_interval=0) as q:
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


def test_the_async_worker_processes_jobs_and_stops(store: Path) -> None:
    async def main() -> None:
        async with await AsyncQueue.open(store, reaper_interval=0, backoff_base=0.001, max_attempts=1) as q:
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


def test_async_stop_releases_handlers_past_the_timeout(store: Path) -> None:
    async def main() -> None:
        async with await AsyncQueue.open(store, reaper_interval=0) as q:
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


def test_the_async_worker_heartbeats_a_long_handler_past_its_ttl(store: Path) -> None:
    async def main() -> None:
        async with await AsyncQueue.open(store, lease_ttl=1.0, reaper_interval=0.05) as q:
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

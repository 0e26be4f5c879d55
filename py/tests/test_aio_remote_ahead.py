"""A remote AsyncWorker's freed slot takes its next job from the prefetch at
once (`Prefetch.take_ready`, on the loop), not through the lease task
(issue 52)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import telha_jobs
from telha_jobs import _remote
from telha_jobs._remote import Prefetch
from telha_jobs.aio import AsyncQueue, AsyncWorker


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[telha_jobs.Queue, telha_jobs.Queue]]:
    """(the embedded queue, a client connected to it through a server)."""
    local = telha_jobs.Queue(tmp_path / "store", reaper_interval=0)
    server = local.serve("127.0.0.1:0")
    remote = telha_jobs.connect(server.url)
    yield local, remote
    remote.close()
    server.stop(grace=1.0)
    local.close()


def test_freed_slots_start_their_next_job_from_the_prefetch(
    served: tuple[telha_jobs.Queue, telha_jobs.Queue], monkeypatch: pytest.MonkeyPatch
) -> None:
    local, remote = served
    n = 120
    local.enqueue_many([("k", i) for i in range(n)])
    taken: list[int] = []
    real = Prefetch.take_ready

    def spy(self: Prefetch, most: int) -> Any:
        got, stale = real(self, most)
        taken.append(len(got))
        return got, stale

    monkeypatch.setattr(Prefetch, "take_ready", spy)

    async def handler(job: telha_jobs.Job) -> int:
        await asyncio.sleep(0.005)
        return int(job.payload)

    async def main() -> AsyncWorker:
        w = AsyncWorker(AsyncQueue(remote), handler, concurrency=8, poll_wait=0.05)
        runner = asyncio.create_task(w.run())
        while w.counts["completed"] < n:
            await asyncio.sleep(0.01)
        await w.stop()
        await runner
        return w

    w = asyncio.run(main())
    total = local.stats()["total"]
    assert total["completed"] == n and total["leased"] == 0
    assert w.counts["completed"] == n and w.counts["errors"] == 0
    # Most jobs after the first batch started as a slot freed.
    assert sum(taken) >= n // 2, taken


def test_take_ready_never_waits_and_hands_stale_leases_to_the_caller(
    served: tuple[telha_jobs.Queue, telha_jobs.Queue], monkeypatch: pytest.MonkeyPatch
) -> None:
    local, remote = served
    counted: list[str] = []
    p = Prefetch(remote, "w", 10, None, None, counted.append)
    try:
        t = time.monotonic()
        assert p.take_ready(5) == ([], [])  # nothing here yet: no wait
        assert time.monotonic() - t < 0.5
        local.enqueue_many([("k", i) for i in range(3)])
        deadline = time.monotonic() + 10
        while p.waiting < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert p.waiting == 3
        monkeypatch.setattr(_remote, "fresh", lambda job, arrived, now: job.payload != 1)
        got, stale = p.take_ready(1)
        assert [j.payload for j, _ in got] == [0] and stale == []
        got, stale = p.take_ready(5)
        assert [j.payload for j, _ in got] == [2] and [j.payload for j in stale] == [1]
        assert counted == []  # the caller gives stale ones back, not take_ready
        assert local.stats()["total"]["leased"] == 3
        remote.release_many([stale[0], got[0][0]])
        p.stop()
        assert p.take_ready(5) == ([], [])
    finally:
        p.close()

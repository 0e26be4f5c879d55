"""AsyncWorker's carried call (issue 52): while handlers finish without
waiting, one `_complete_then_lease` per batch completes the last batch and
leases the next (embedded queue)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import telha_jobs
from telha_jobs import _aio_settle
from telha_jobs._native import _complete_then_lease
from telha_jobs.aio import AsyncQueue, AsyncWorker


def test_complete_then_lease_answers_each_part(store: Path) -> None:
    q = telha_jobs.Queue(store, reaper_interval=0)
    q.enqueue_many([("k", n) for n in range(1, 5)])
    a, b = q.lease_many("w", 2)
    done, leased = _complete_then_lease(q, [a, b], ["ra", "rb"], [[("child", 9)], None], "w", 1)
    assert done == [None, None]
    assert isinstance(leased, list) and [j.payload for j in leased] == [3]
    info = q.get(a.id)
    assert info is not None and info.state == "completed" and info.result == "ra"
    children = q.list(kind="child")
    assert [c.parent for c in children] == [a.id]
    # A stale lease (released) answers alone; the others complete; the
    # lease goes on.
    c = leased[0]
    d = q.lease_next("w")
    assert d is not None
    q.release(c)
    done, leased = _complete_then_lease(q, [c, d], None, None, "w", 5)
    assert isinstance(done, list) and isinstance(done[0], telha_jobs.LeaseLostError) and done[1] is None
    assert isinstance(leased, list) and sorted(j.payload for j in leased) == [3, 9]
    # A result that cannot be stored refuses the completions as a whole
    # (none done); the lease is still taken.
    q.enqueue("k", 5)
    done, more = _complete_then_lease(q, leased, [object(), None], None, "w", 5)
    assert isinstance(done, TypeError)
    assert isinstance(more, list) and [j.payload for j in more] == [5]
    assert q.stats()["total"]["leased"] == 3  # 3 and 9 (refused), 5
    # Bad arguments raise before anything is done.
    with pytest.raises(telha_jobs.InvalidArgumentError):
        _complete_then_lease(q, [], None, None, "w", 0)
    q.close()
    done, leased = _complete_then_lease(q, more, None, None, "w", 1)
    assert isinstance(done, telha_jobs.QueueClosedError) and isinstance(leased, telha_jobs.QueueClosedError)


def spy_carried(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of completions each carried call sent, as it is made."""
    sent: list[int] = []

    def spy(queue: Any, jobs: Any, *rest: Any, **kw: Any) -> Any:
        sent.append(len(jobs))
        return _complete_then_lease(queue, jobs, *rest, **kw)

    monkeypatch.setattr(_aio_settle, "_complete_then_lease", spy)
    return sent


def test_handlers_that_never_wait_complete_in_carried_calls(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sent = spy_carried(monkeypatch)
    n = 3000
    q = telha_jobs.Queue(store, reaper_interval=0)
    q.enqueue_many([("k", i) for i in range(n)])

    async def handler(job: telha_jobs.Job) -> Any:
        lease = telha_jobs.current_lease()
        assert lease is not None and lease.job is job
        if job.payload % 100 == 0:
            lease.follow_up([("child", job.payload)])
        return {"n": job.payload}

    async def main() -> AsyncWorker:
        w = AsyncWorker(AsyncQueue(q), handler, kinds="k", concurrency=16, poll_wait=0.05)
        runner = asyncio.create_task(w.run())
        while w.counts["completed"] < n:
            await asyncio.sleep(0.01)
        await w.stop()
        await runner
        return w

    w = asyncio.run(main())
    stats = q.stats()["by_kind"]
    assert stats["k"]["completed"] == n and stats["k"]["leased"] == 0
    assert w.counts["completed"] == n and w.counts["errors"] == 0
    # Most completions rode on the carried calls, many per call.
    assert sum(sent) >= n // 2, (sum(sent), len(sent))
    assert len(sent) <= n // 8
    info = q.get(q.list(kind="k", state="completed", limit=1)[0].id)
    assert info is not None and info.result == {"n": info.payload}
    children = q.list(kind="child", limit=100)
    assert sorted(c.payload for c in children) == list(range(0, n, 100))
    q.close()


def test_a_stop_while_carrying_leaves_nothing_leased(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sent = spy_carried(monkeypatch)
    n = 5000
    q = telha_jobs.Queue(store, reaper_interval=0)
    q.enqueue_many([("k", i) for i in range(n)])

    async def handler(job: telha_jobs.Job) -> None:
        return None

    async def main() -> AsyncWorker:
        w = AsyncWorker(AsyncQueue(q), handler, concurrency=16, poll_wait=0.05)
        runner = asyncio.create_task(w.run())
        while w.counts["completed"] < 500:
            await asyncio.sleep(0)
        await w.stop()
        await runner
        return w

    w = asyncio.run(main())
    total = q.stats()["total"]
    assert sent, "no carried call was made"
    assert total["leased"] == 0
    assert total["completed"] == w.counts["completed"] and total["completed"] < n
    assert total["pending"] == n - total["completed"]
    q.close()


def test_cancelling_run_from_outside_counts_what_the_carried_calls_completed(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = spy_carried(monkeypatch)
    n = 5000
    q = telha_jobs.Queue(store, reaper_interval=0)
    q.enqueue_many([("k", i) for i in range(n)])

    async def handler(job: telha_jobs.Job) -> None:
        return None

    async def main() -> AsyncWorker:
        w = AsyncWorker(AsyncQueue(q), handler, concurrency=16, poll_wait=0.05)
        runner = asyncio.create_task(w.run())
        while w.counts["completed"] < 500:
            await asyncio.sleep(0)
        runner.cancel()  # not stop(): run()'s task cancelled while carried calls are out
        with pytest.raises(asyncio.CancelledError):
            await runner
        return w

    w = asyncio.run(main())
    total = q.stats()["total"]
    assert sent, "no carried call was made"
    # Every completion the store holds is counted, and what finished was sent.
    assert total["completed"] == w.counts["completed"] and total["completed"] < n
    assert total["leased"] == 0
    q.close()

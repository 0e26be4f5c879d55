"""stats() pages its per-scope counts (issue 49), embedded and over connect
(the ``target`` fixture), sync and asyncio: the totals and per-kind counts
stay whole, a walk of the pages visits every scope once, the default is the
top 100 by pending with ``scopes_next`` saying more exist."""

from __future__ import annotations

import asyncio
import time

import pytest

import telha_jobs
from telha_jobs.aio import AsyncQueue

from .conftest import Target

SCOPES = 2_500


def nth(i: int) -> str:
    return f"0c000000-0000-0000-0000-{i:012x}"


def seed(q: telha_jobs.Queue) -> None:
    # Scope i < 10 holds 12 - i jobs (the known top), every other one 1.
    items = [{"kind": "embed", "scope": nth(i)} for i in range(SCOPES) for _ in range(12 - i if i < 10 else 1)]
    for at in range(0, len(items), 1000):
        q.enqueue_many(items[at : at + 1000])


def test_stats_pages_through_every_scope_once(target: Target) -> None:
    with target.open(reaper_interval=0) as q:
        seed(q)
        total = SCOPES - 10 + sum(range(3, 13))
        st = q.stats()
        assert st["total"]["pending"] == total and st["by_kind"]["embed"]["pending"] == total
        assert st["scope_order"] == "pending" and len(st["by_scope"]) == 100
        assert st["scopes_next"] is not None
        top = list(st["by_scope"].items())[:10]
        assert [s for s, _ in top] == [nth(i) for i in range(10)], "most pending first"
        assert [c["pending"] for _, c in top] == [12 - i for i in range(10)]

        seen: list[str] = []
        after = None
        while True:
            page = q.stats(scope_order="name", scope_limit=700, scopes_after=after)
            assert len(page["by_scope"]) <= 700
            seen += page["by_scope"]
            after = page["scopes_next"]
            if after is None:
                break
        assert seen == [nth(i) for i in range(SCOPES)]

        found = q.stats(scope_order="name", scope_prefix=nth(0)[:35])
        assert list(found["by_scope"]) == [nth(i) for i in range(16)]
        assert q.stats(scope_limit=0)["by_scope"] == {}
        with pytest.raises(ValueError):
            q.stats(scope_order="oldest")
        with pytest.raises(ValueError):
            q.stats(scope_limit=10_001)
        with pytest.raises(TypeError):
            q.stats(scope_limit="10")


def test_stats_pages_as_coroutines(target: Target) -> None:
    async def main() -> None:
        async with AsyncQueue(target.open(reaper_interval=0)) as q:
            await q.enqueue_many([{"kind": "embed", "scope": nth(i)} for i in range(30)])
            seen: list[str] = []
            after = None
            while True:
                page = await q.stats(scope_order="dead", scope_limit=7, scopes_after=after)
                seen += page["by_scope"]
                after = page["scopes_next"]
                if after is None:
                    break
            assert sorted(seen) == [nth(i) for i in range(30)] and len(set(seen)) == 30

    asyncio.run(main())


def test_stats_oldest_ready_only_when_asked(target: Target) -> None:
    # Ages measured against run_at hours in the past: only lower bounds and
    # which kinds appear are checked (no clock is injectable from Python).
    # Whole seconds: a float run_at is rounded to the nearest ms by the
    # binding, which can land it up to 0.5 ms late (an age 1 ms short).
    with target.open(reaper_interval=0) as q:
        now = int(time.time())
        q.enqueue("ocr", None, run_at=now - 7200)
        q.enqueue("ocr", None, run_at=now - 3600)
        q.enqueue("embed", None, run_at=now - 600)
        q.enqueue("later", None, run_at=now + 3600)
        plain = q.stats()
        assert plain["oldest_ready_ms"] == {}
        st = q.stats(oldest_ready=True)
        assert sorted(st["oldest_ready_ms"]) == ["embed", "ocr"], "a kind with nothing due is omitted"
        assert st["oldest_ready_ms"]["ocr"] >= 7_200_000, "the older of the two"
        assert 600_000 <= st["oldest_ready_ms"]["embed"] < st["oldest_ready_ms"]["ocr"]
        assert st["by_kind"]["later"]["pending"] == 1
        job = q.lease_next("w", kinds=["ocr"])
        assert job is not None
        q.complete(job)
        assert 3_600_000 <= q.stats(oldest_ready=True)["oldest_ready_ms"]["ocr"] < 7_200_000
        with pytest.raises(TypeError, match="oldest_ready"):
            q.stats(oldest_ready=1)


def test_stats_oldest_ready_as_a_coroutine(target: Target) -> None:
    async def main() -> None:
        async with AsyncQueue(target.open(reaper_interval=0)) as q:
            await q.enqueue("ocr", None, run_at=int(time.time()) - 60)
            st = await q.stats(oldest_ready=True)
            assert list(st["oldest_ready_ms"]) == ["ocr"] and st["oldest_ready_ms"]["ocr"] >= 60_000
            assert (await q.stats())["oldest_ready_ms"] == {}

    asyncio.run(main())

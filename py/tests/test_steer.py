"""Steering waiting jobs (issue 44) on Queue and AsyncQueue, embedded and
over connect (the ``target`` fixture runs each test both ways): promote,
reschedule and set_priority move a pending or failed job within its state;
a leased job is WrongStateError; bad input a typed error with nothing
written."""

from __future__ import annotations

import asyncio
import datetime
import time

import pytest

import telha_jobs
from telha_jobs.aio import AsyncQueue

from .conftest import Target


def test_promote_reschedule_and_set_priority(target: Target) -> None:
    with target.open(reaper_interval=0, backoff_base=3600.0, backoff_cap=3600.0) as q:
        a = q.enqueue("embed", delay=3600)
        b = q.enqueue("embed", delay=3600)
        assert q.lease_next("w") is None
        q.set_priority(b, 0)
        q.promote(b)
        q.promote(b)  # already due: nothing written
        info = q.get(b)
        assert info is not None
        assert (info.state, info.priority) == ("pending", 0)
        assert [e[1] for e in info.events] == ["enqueued", "reprioritized", "promoted"]
        q.reschedule(a, time.time() - 1)
        first = q.lease_next("w")
        assert first is not None and first.id == b
        second = q.lease_next("w")
        assert second is not None and second.id == a
        # A retry-waiting job: promote keeps it failed, ready now.
        q.fail(second, "boom")
        assert q.lease_next("w") is None
        q.promote(a)
        again = q.lease_next("w")
        assert again is not None and again.id == a and again.attempts == 1
        # Into the future: a ready job becomes delayed.
        c = q.enqueue("embed")
        q.reschedule(c, datetime.datetime(2100, 1, 1, tzinfo=datetime.timezone.utc))
        assert q.lease_next("w") is None


def test_leased_unknown_and_bad_input_are_refused_with_nothing_written(target: Target) -> None:
    with target.open(reaper_interval=0) as q:
        leased = q.enqueue("embed")
        assert q.lease_next("w") is not None
        with pytest.raises(telha_jobs.WrongStateError):
            q.promote(leased)
        with pytest.raises(telha_jobs.WrongStateError):
            q.set_priority(leased, 1)
        with pytest.raises(telha_jobs.NotFoundError):
            q.reschedule("0190c0de-0000-7000-8000-000000000000", time.time())
        waiting = q.enqueue("embed", delay=3600)
        before = q.get(waiting)
        with pytest.raises(telha_jobs.InvalidArgumentError):
            q.set_priority(waiting, 256)
        with pytest.raises(telha_jobs.InvalidArgumentError):
            q.set_priority(waiting, -1)
        with pytest.raises(TypeError):
            q.set_priority(waiting, "1")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            q.set_priority(waiting, True)
        with pytest.raises(telha_jobs.InvalidArgumentError):
            q.reschedule(waiting, -5)
        with pytest.raises(telha_jobs.InvalidArgumentError):
            q.reschedule(waiting, 1e20)
        with pytest.raises(telha_jobs.InvalidArgumentError):
            q.promote("not-a-uuid")
        after = q.get(waiting)
        assert after is not None and before is not None
        assert (after.priority, after.events) == (before.priority, before.events)


def test_async_steering(target: Target) -> None:
    async def main() -> None:
        async with AsyncQueue(target.open(reaper_interval=0)) as q:
            a = await q.enqueue("embed", delay=3600)
            await q.set_priority(a, 9)
            await q.reschedule(a, time.time() + 7200)
            await q.promote(a)
            info = await q.get(a)
            assert info is not None and info.priority == 9
            assert info.events[-1][1] == "promoted"
            job = await q.lease_next("w")
            assert job is not None and job.id == a
            with pytest.raises(telha_jobs.WrongStateError):
                await q.promote(a)

    asyncio.run(main())

"""Job keys and ``ordered`` limits (issue 43: flow control by key),
embedded and through a server, sync and asyncio; the behaviour in depth is
the core's (core/tests/keys.rs) and conformance case 105."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import telha_jobs
from telha_jobs.aio import AsyncQueue

from .conftest import Target


def test_a_jobs_key_comes_back_on_the_job_its_info_and_its_follow_ups(target: Target) -> None:
    q = target.open(reaper_interval=0)
    a = q.enqueue("mail", 1, key="customer-7")
    [b, c] = q.enqueue_many([{"kind": "mail", "payload": 2, "key": "customer-8"}, ("mail", 3)])
    for id_, want in [(a, "customer-7"), (b, "customer-8"), (c, None)]:
        info = q.get(id_)
        assert info is not None and info.key == want
    job = q.lease_next("w", kinds="mail")
    assert job is not None and (job.id, job.key) == (a, "customer-7")
    q.complete(job, then=[{"kind": "mail", "payload": 4, "key": "customer-7"}])
    keys = sorted((j.key or "") for j in q.list(state="pending"))
    assert keys == ["", "customer-7", "customer-8"]


@pytest.mark.parametrize(
    "key,error,message",
    [
        ("", telha_jobs.InvalidArgumentError, "1 to 128 bytes"),
        ("k" * 129, telha_jobs.InvalidArgumentError, "1 to 128 bytes"),
        ("a\nb", telha_jobs.InvalidArgumentError, "control character"),
        (7, TypeError, "key must be a str"),
    ],
)
def test_a_bad_key_is_refused_and_nothing_is_written(
    target: Target, key: Any, error: type[Exception], message: str
) -> None:
    q = target.open(reaper_interval=0)
    with pytest.raises(error, match=message):
        q.enqueue("mail", 1, key=key)
    with pytest.raises(error, match=message):
        q.enqueue_many([{"kind": "mail", "payload": 1, "key": "ok"},
                        {"kind": "mail", "payload": 2, "key": key}])
    assert q.stats()["total"]["pending"] == 0


def test_a_key_cap_holds_a_keys_second_job_while_another_key_runs(target: Target) -> None:
    q = target.open(reaper_interval=0)
    q.set_limit("key:*", concurrency=1)
    a1 = q.enqueue("mail", 1, key="a")
    a2 = q.enqueue("mail", 2, key="a")
    b1 = q.enqueue("mail", 3, key="b")
    got = q.lease_many("w", 3)
    assert [j.id for j in got] == [a1, b1]
    assert q.lease_next("w") is None
    [limit] = q.limits()
    assert (limit.target, limit.concurrency, limit.ordered) == ("key:*", 1, False)
    assert limit.leased == 2
    q.complete(got[0])
    nxt = q.lease_next("w")
    assert nxt is not None and (nxt.id, nxt.key) == (a2, "a")


def test_an_ordered_key_leases_in_enqueue_order_one_at_a_time(target: Target) -> None:
    q = target.open(reaper_interval=0)
    q.set_limit("key:doc-1", concurrency=1, ordered=True)
    [limit] = q.limits()
    assert (limit.target, limit.ordered) == ("key:doc-1", True)
    ids = [q.enqueue("edit", i, key="doc-1", priority=10 * i) for i in range(4)]
    other = q.enqueue("edit", 9, key="doc-2", priority=255)
    first = q.lease_many("w", 10)
    assert sorted(j.id for j in first) == sorted([ids[0], other])
    q.complete(next(j for j in first if j.id == other))
    done = [ids[0]]
    q.complete(next(j for j in first if j.id == ids[0]))
    for _ in range(3):
        got = q.lease_many("w", 10)
        assert len(got) == 1
        done.append(got[0].id)
        q.complete(got[0])
    assert done == ids


def test_ordered_needs_a_key_target_with_concurrency_1(target: Target) -> None:
    q = target.open(reaper_interval=0)
    with pytest.raises(telha_jobs.InvalidArgumentError, match="ordered"):
        q.set_limit("kind:edit", concurrency=1, ordered=True)
    with pytest.raises(telha_jobs.InvalidArgumentError, match="ordered"):
        q.set_limit("key:*", concurrency=2, ordered=True)
    assert q.limits() == []


def test_asyncio_carries_keys_and_ordered_limits(store: Any) -> None:
    async def main() -> None:
        async with await AsyncQueue.open(store, reaper_interval=0) as aq:
            await aq.set_limit("key:*", concurrency=1, ordered=True)
            [limit] = await aq.limits()
            assert limit.ordered
            e = await aq.enqueue("mail", 1, key="upload-7")
            info = await aq.get(e)
            assert info is not None and info.key == "upload-7"
            with pytest.raises(telha_jobs.InvalidArgumentError, match="1 to 128 bytes"):
                await aq.enqueue("mail", 1, key="")

    asyncio.run(main())

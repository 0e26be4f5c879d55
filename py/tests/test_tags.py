"""Tags and metadata (issue 42), embedded and through a server, sync and
asyncio; the behaviour in depth is the core's
(core/tests/behaviour/tags.rs) and conformance case 098."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import telha_jobs
from telha_jobs.aio import AsyncQueue

from .conftest import Target


def test_tags_and_metadata_come_back_and_find_the_job(target: Target) -> None:
    q = target.open(reaper_interval=0)
    a = q.enqueue("mail", {"n": 1}, tags=["order-4711", "eu", "order-4711"],
                  metadata={"trace": "00-abc-01"})
    [b] = q.enqueue_many([{"kind": "mail", "payload": 2, "tags": ("order-4711",)}])
    q.enqueue("mail", 3, tags=["order-9"])
    info = q.get(a)
    assert info is not None
    assert info.tags == ["order-4711", "eu"]
    assert info.metadata == {"trace": "00-abc-01"}
    job = q.lease_next("w", kinds="mail")
    assert job is not None and job.id == a
    assert (job.tags, job.metadata) == (["order-4711", "eu"], {"trace": "00-abc-01"})
    found = q.list(tag="order-4711")
    assert sorted(j.id for j in found) == sorted([a, b])
    assert [j.id for j in q.list(tag="order-4711", state="leased")] == [a]
    page = q.list(tag="order-4711", limit=1)
    assert len(page) == 1 and page.next is not None
    rest = q.list(tag="order-4711", after=page.next)
    assert [j.id for j in page] + [j.id for j in rest] == [j.id for j in found]
    counts = q.count_tag("order-4711")
    assert (counts["pending"], counts["leased"]) == (1, 1)
    assert sum(q.count_tag("nothing").values()) == 0
    q.complete(job, then=[{"kind": "mail", "payload": 4, "tags": ["order-4711"]}])
    assert q.count_tag("order-4711")["completed"] == 1
    assert q.count_tag("order-4711")["pending"] == 2


@pytest.mark.parametrize(
    "options,error,message",
    [
        ({"tags": [f"t{i}" for i in range(17)]}, telha_jobs.InvalidArgumentError, "at most 16 tags"),
        ({"tags": ["x" * 65]}, telha_jobs.InvalidArgumentError, "1 to 64 bytes"),
        ({"tags": ["a\nb"]}, telha_jobs.InvalidArgumentError, "control character"),
        ({"metadata": {"k": "v" * 5 * 1024}}, telha_jobs.InvalidArgumentError, "4096 bytes"),
        ({"tags": "order-4711"}, TypeError, "list of str"),
        ({"tags": [1]}, TypeError, "every tag must be a str"),
        ({"metadata": {"k": 1}}, TypeError, "must be str"),
        ({"metadata": ["k"]}, TypeError, "dict of str"),
    ],
)
def test_bad_tags_and_metadata_are_refused_and_nothing_is_written(
    target: Target, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    q = target.open(reaper_interval=0)
    with pytest.raises(error, match=message):
        q.enqueue("mail", 1, **options)
    with pytest.raises(error, match=message):
        q.enqueue_many([{"kind": "mail", "payload": 1, "tags": ["ok"]},
                        {"kind": "mail", "payload": 2, **options}])
    assert q.stats()["total"]["pending"] == 0
    assert q.count_tag("ok")["pending"] == 0
    with pytest.raises(telha_jobs.InvalidArgumentError):
        q.count_tag("")


def test_asyncio_lists_and_counts_by_tag(store: Any) -> None:
    async def main() -> None:
        async with await AsyncQueue.open(store, reaper_interval=0) as aq:
            e = await aq.enqueue("mail", 1, tags=["upload-7"], metadata={"by": "ops"})
            [info] = await aq.list(tag="upload-7")
            assert info.id == e and info.metadata == {"by": "ops"}
            assert (await aq.count_tag("upload-7"))["pending"] == 1

    asyncio.run(main())

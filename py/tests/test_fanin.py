"""Fan-in (issue 43) in Python: ``after=`` / ``on_child_dead=``,
``enqueue_group``, ``results_of_children`` and ``JobInfo.fan_in``, embedded
and through a server (the ``target`` fixture), sync and asyncio, and a
Worker whose handler reads its children's results. The behaviour in depth
is the core's (core/tests/behaviour/fanin.rs)."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest

import telha_jobs
from telha_jobs.aio import AsyncQueue

from .conftest import Target


def children(q: telha_jobs.Queue, n: int) -> list[str]:
    return [str(e) for e in q.enqueue_many([("page", {"n": i}) for i in range(n)])]


def lease(q: telha_jobs.Queue, job_id: str) -> telha_jobs.Job:
    """Lease the page `job_id` (releasing the other pages leased with it)."""
    found = None
    for j in q.lease_many("w", 1000, kinds="page"):
        if j.id == job_id:
            found = j
        else:
            q.release(j)
    assert found is not None, f"{job_id} not leasable"
    return found


def complete(q: telha_jobs.Queue, job_id: str) -> None:
    q.complete(lease(q, job_id), {"page": job_id})


def state(q: telha_jobs.Queue, job_id: str) -> str:
    info = q.get(job_id)
    assert info is not None
    return info.state


def test_the_parent_waits_until_its_last_child_completes(target: Target) -> None:
    q = target.open(reaper_interval=0)
    kids = children(q, 3)
    p = q.enqueue("index", "doc-1", after=kids)
    info = q.get(p)
    assert info is not None and info.state == "waiting"
    assert info.fan_in == telha_jobs.FanIn(unfinished=3, total=3, policy="fail")
    assert q.stats()["total"]["waiting"] == 1
    assert [j.id for j in q.list(state="waiting")] == [p]
    assert q.lease_next("w", kinds="index") is None
    complete(q, kids[1])
    complete(q, kids[0])
    assert state(q, p) == "waiting"
    fan_in = q.get(p).fan_in  # type: ignore[union-attr]
    assert fan_in is not None and fan_in.unfinished == 1
    complete(q, kids[2])
    info = q.get(p)
    assert info is not None and info.state == "pending"
    assert info.fan_in is not None and info.fan_in.unfinished == 0
    assert [e[1] for e in info.events].count("children_done") == 1
    job = q.lease_next("w", kinds="index")
    assert job is not None and job.id == p and job.payload == "doc-1"
    results = q.results_of_children(job)
    assert results.next is None
    assert [(c.id, c.state, c.result) for c in results] == [
        (k, "completed", {"page": k}) for k in kids
    ]
    assert results[0].result_encoding == "value" and results[0].last_error is None
    assert results[0].raw_result == telha_jobs.encode_payload({"page": kids[0]})


def test_fail_kills_the_parent_with_the_childs_id_and_error(target: Target) -> None:
    q = target.open(reaper_interval=0)
    kids = children(q, 3)
    p = q.enqueue("index", None, after=kids, on_child_dead="fail")
    complete(q, kids[0])
    q.fail(lease(q, kids[1]), "page 1 unreadable", retryable=False)
    info = q.get(p)
    assert info is not None and info.state == "dead"
    assert info.last_error is not None
    assert kids[1] in info.last_error and "page 1 unreadable" in info.last_error
    complete(q, kids[2])
    assert state(q, p) == "dead"
    page = q.results_of_children(p)
    assert [c.state for c in page] == ["completed", "dead", "completed"]
    assert page[1].last_error == "page 1 unreadable" and page[1].result is None


def test_cancel_rest_cancels_the_parent_then_its_unfinished_children(target: Target) -> None:
    q = target.open(reaper_interval=0)
    kids = children(q, 4)
    p = q.enqueue("index", None, after=kids, on_child_dead="cancel_rest")
    assert q.get(p).fan_in.policy == "cancel_rest"  # type: ignore[union-attr]
    complete(q, kids[0])
    q.fail(lease(q, kids[1]), "boom", retryable=False)
    assert state(q, p) == "cancelled"
    target.local().reap()
    assert [state(q, k) for k in kids] == ["completed", "dead", "cancelled", "cancelled"]


def test_ignore_runs_the_parent_after_every_child_whatever_the_outcome(target: Target) -> None:
    q = target.open(reaper_interval=0)
    kids = children(q, 3)
    p = q.enqueue("index", None, after=kids, on_child_dead="ignore")
    q.fail(lease(q, kids[0]), "boom", retryable=False)
    q.cancel(kids[1], "not needed")
    assert state(q, p) == "waiting"
    complete(q, kids[2])
    assert state(q, p) == "pending"
    assert [c.state for c in q.results_of_children(p)] == ["dead", "cancelled", "completed"]


def test_a_parent_cancelled_while_waiting_leaves_its_children(target: Target) -> None:
    q = target.open(reaper_interval=0)
    kids = children(q, 2)
    p = q.enqueue("index", None, after=kids)
    assert q.cancel(p) == "cancelled"
    assert state(q, p) == "cancelled"
    assert [state(q, k) for k in kids] == ["pending", "pending"]
    complete(q, kids[0])
    complete(q, kids[1])
    assert state(q, p) == "cancelled"


def test_a_group_enqueues_children_and_parent_in_one_batch(target: Target) -> None:
    q = target.open(reaper_interval=0)
    kids, p = q.enqueue_group(
        [("page", 1), {"kind": "page", "payload": 2, "priority": 3}],
        {"kind": "index", "payload": "doc", "on_child_dead": "ignore"},
    )
    assert len(kids) == 2 and all(k.created for k in kids) and p.created
    info = q.get(p)
    assert info is not None and info.state == "waiting"
    assert info.fan_in == telha_jobs.FanIn(2, 2, "ignore")
    assert [c.id for c in q.results_of_children(p)] == kids
    complete(q, kids[0])
    complete(q, kids[1])
    assert state(q, p) == "pending"
    # The parent may also wait on jobs enqueued before the group.
    older = children(q, 1)
    kids2, p2 = q.enqueue_group([("page", 3)], ("index", None))
    assert q.get(p2).fan_in.total == 1  # type: ignore[union-attr]
    kids3, p3 = q.enqueue_group([("page", 4)], {"kind": "index", "after": older})
    assert [c.id for c in q.results_of_children(p3)] == older + kids3
    assert kids2 != kids3


def test_results_of_children_pages_in_enqueue_order(target: Target) -> None:
    q = target.open(reaper_interval=0)
    kids = children(q, 25)
    p = q.enqueue("index", None, after=kids)
    got: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = q.results_of_children(p, cursor=cursor, limit=10)
        assert isinstance(page, telha_jobs.ChildPage) and len(page) <= 10
        got += [c.id for c in page]
        pages += 1
        cursor = page.next
        if cursor is None:
            break
    assert got == kids and pages == 3
    assert all(c.state == "pending" for c in q.results_of_children(p, limit=1000))


@pytest.mark.parametrize(
    "call,error,message",
    [
        (lambda q, k: q.enqueue("index", None, after=[str(uuid.uuid4())]),
         telha_jobs.NotFoundError, None),
        (lambda q, k: q.enqueue_many([("page", 1), {"kind": "index", "after": [*k, str(uuid.uuid4())]}]),
         telha_jobs.NotFoundError, None),
        (lambda q, k: q.enqueue_group([("page", 1)], {"kind": "index", "after": [str(uuid.uuid4())]}),
         telha_jobs.NotFoundError, None),
        (lambda q, k: q.enqueue("index", None, after=k, on_child_dead="retry"),
         telha_jobs.InvalidArgumentError, "cancel_rest"),
        (lambda q, k: q.enqueue_group([("page", 1)], {"kind": "index", "on_child_dead": "x"}),
         telha_jobs.InvalidArgumentError, "on_child_dead"),
        (lambda q, k: q.enqueue_group([], ("index", None)), telha_jobs.InvalidArgumentError, None),
        (lambda q, k: q.enqueue("index", None, after=k[0]), TypeError, "list of job ids"),
        (lambda q, k: q.enqueue("index", None, after=["nope"]), telha_jobs.InvalidArgumentError, None),
        (lambda q, k: q.enqueue("index", None, after=k, on_child_dead=1), TypeError, "on_child_dead"),
        (lambda q, k: q.enqueue_group("page", ("index", None)), TypeError, "list of"),
    ],
)
def test_bad_fan_in_input_is_refused_and_nothing_is_written(
    target: Target, call: Any, error: type[Exception], message: str | None
) -> None:
    q = target.open(reaper_interval=0)
    kids = children(q, 2)
    before = q.stats()["total"]
    with pytest.raises(error, match=message):
        call(q, kids)
    assert q.stats()["total"] == before
    assert before["waiting"] == 0 and before["pending"] == 2


def test_results_of_children_of_bad_parents(target: Target) -> None:
    q = target.open(reaper_interval=0)
    kids = children(q, 1)
    p = q.enqueue("index", None, after=kids)
    with pytest.raises(telha_jobs.NotFoundError):
        q.results_of_children(str(uuid.uuid4()))
    with pytest.raises(telha_jobs.InvalidArgumentError):
        q.results_of_children(p, limit=0)
    with pytest.raises(telha_jobs.InvalidArgumentError):
        q.results_of_children(p, cursor="not a cursor")
    # A job that waits on nothing has no children and no fan_in.
    assert q.results_of_children(kids[0]) == []
    assert q.get(kids[0]).fan_in is None  # type: ignore[union-attr]


def test_a_worker_handler_reads_its_childrens_results(target: Target) -> None:
    q = target.open(reaper_interval=0)
    kids, p = q.enqueue_group([("page", i) for i in range(3)], ("index", "doc"))
    seen: dict[str, Any] = {}

    def handler(job: telha_jobs.Job) -> Any:
        if job.kind == "page":
            return job.payload * 10
        # The idiom of docs/python.md: the queue the worker holds, paged.
        seen["results"] = [c.result for c in w.queue.results_of_children(job)]
        return "indexed"

    w = telha_jobs.Worker(q, handler, concurrency=1, poll_wait=0.05)
    w.start()
    try:
        deadline = time.monotonic() + 30
        while state(q, p) != "completed":
            assert time.monotonic() < deadline, "the parent never ran"
            time.sleep(0.01)
    finally:
        w.stop(5.0)
    assert seen["results"] == [0, 10, 20]
    assert [state(q, k) for k in kids] == ["completed"] * 3


def test_asyncio_fan_in(target: Target) -> None:
    async def main() -> None:
        async with AsyncQueue(target.open(reaper_interval=0)) as aq:
            kids, p = await aq.enqueue_group([("page", 1), ("page", 2)], ("index", None))
            p2 = await aq.enqueue("index", None, after=kids, on_child_dead="ignore")
            info = await aq.get(p2)
            assert info is not None and info.state == "waiting"
            assert info.fan_in == telha_jobs.FanIn(2, 2, "ignore")
            for j in await aq.lease_many("w", 10, kinds="page"):
                await aq.complete(j, j.payload + 100)
            assert (await aq.get(p)).state == "pending"  # type: ignore[union-attr]
            page = await aq.results_of_children(p, limit=1)
            assert [c.result for c in page] == [101] and page.next is not None
            rest = await aq.results_of_children(p, page.next)
            assert [c.result for c in rest] == [102] and rest.next is None
            with pytest.raises(telha_jobs.NotFoundError):
                await aq.enqueue("index", None, after=[str(uuid.uuid4())])

    asyncio.run(main())

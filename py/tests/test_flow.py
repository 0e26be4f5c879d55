"""Flow control (``set_limit`` / ``remove_limit`` / ``limits``) and
follow-up jobs (``complete(..., then=[...])``, ``Job.parent``,
``list(parent=...)``), on embedded and remote queues (the ``queue``
fixture runs each test against both), and through ``AsyncQueue``."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any
from pathlib import Path

import pytest

import telha_jobs
from telha_jobs.aio import AsyncQueue

S1 = "0190c0de-0000-7000-8000-0000000000a1"
S2 = "0190c0de-0000-7000-8000-0000000000a2"


def lease_all(q: telha_jobs.Queue, **kw: object) -> list[telha_jobs.Job]:
    out = []
    while (j := q.lease_next("w", **kw)) is not None:  # type: ignore[arg-type]
        out.append(j)
    return out


# -- limits ----------------------------------------------------------------------


def test_a_kind_cap_holds_leases_back_and_frees_a_slot_on_settle(queue: telha_jobs.Queue) -> None:
    queue.enqueue_many([("embed", b"")] * 5 + [("other", b"")])
    queue.set_limit("kind:embed", concurrency=2)
    got = lease_all(queue)
    assert sorted(j.kind for j in got) == ["embed", "embed", "other"]
    [info] = queue.limits()
    assert isinstance(info, telha_jobs.LimitInfo)
    assert dataclasses.asdict(info) | {"throttled_concurrency": 0} == {
        "target": "kind:embed", "concurrency": 2, "rate": None, "burst": None, "weight": None,
        "leased": 2, "held": 1, "throttled_concurrency": 0, "throttled_rate": 0, "ordered": False,
    }
    assert info.throttled_concurrency >= 1
    embed = [j for j in got if j.kind == "embed"]
    queue.complete(embed[0])
    nxt = queue.lease_next("w")
    assert nxt is not None and nxt.kind == "embed"
    assert queue.lease_next("w") is None
    assert queue.remove_limit("kind:embed") is True
    assert queue.remove_limit("kind:embed") is False
    assert len(lease_all(queue)) == 2
    assert queue.limits() == []


def test_a_family_and_a_per_scope_cap(queue: telha_jobs.Queue) -> None:
    queue.enqueue_many([{"kind": "img:resize", "scope": s} for s in (S1, S1, S2, S2)])
    queue.set_limit("scope:*/kind:img:*", concurrency=1)
    got = lease_all(queue)
    assert sorted(j.scope for j in got) == [S1, S2]
    [info] = queue.limits()
    assert (info.target, info.leased, info.held) == ("scope:*/kind:img:*", 2, 2)


def test_a_rate_lets_the_burst_go_then_one_lease_per_token(queue: telha_jobs.Queue) -> None:
    queue.enqueue_many([("embed", b"")] * 4)
    queue.set_limit("kind:embed", rate=5, burst=2)
    assert len(lease_all(queue)) == 2
    [info] = queue.limits()
    assert (info.rate, info.burst, info.concurrency, info.held) == (5.0, 2, None, 1)
    time.sleep(0.25)  # one token (every 0.2 s)
    assert len(lease_all(queue)) == 1
    assert queue.limits()[0].throttled_rate >= 1


def test_scope_weights_share_leases_while_both_scopes_have_work(queue: telha_jobs.Queue) -> None:
    queue.enqueue_many([{"kind": "embed", "scope": s} for s in [S1] * 6 + [S2] * 6])
    queue.set_limit(f"scope:{S2}", weight=2)
    got = [queue.lease_next("w") for _ in range(6)]
    scopes = [j.scope for j in got if j is not None]
    assert (scopes.count(S1), scopes.count(S2)) == (2, 4)
    assert [(l.target, l.weight) for l in queue.limits()] == [(f"scope:{S2}", 2)]


def test_limits_are_sorted_by_target_and_durable(tmp_path: Path) -> None:
    q = telha_jobs.Queue(tmp_path / "s", reaper_interval=0)
    q.set_limit("scope:*", concurrency=3, weight=2)
    q.set_limit("kind:b", rate=0.5)
    q.set_limit("kind:a", concurrency=1)
    q.set_limit("kind:a", concurrency=4)  # replaces
    q.close()
    q = telha_jobs.Queue(tmp_path / "s", reaper_interval=0)
    got = [(l.target, l.concurrency, l.rate, l.burst, l.weight) for l in q.limits()]
    assert got == [("kind:a", 4, None, None, None), ("kind:b", None, 0.5, None, None),
                   ("scope:*", 3, None, None, 2)]
    q.close()


@pytest.mark.parametrize("label, kw", [
    ("tenant:x", {"concurrency": 1}),
    ("kind:", {"concurrency": 1}),
    ("scope:nope", {"concurrency": 1}),
    ("scope:*/embed", {"concurrency": 1}),
    ("kind:embed", {}),
    ("kind:embed", {"concurrency": 0}),
    ("kind:embed", {"concurrency": 1_000_001}),
    ("kind:embed", {"concurrency": 2**70}),
    ("kind:embed", {"concurrency": -1}),
    ("kind:embed", {"rate": 0}),
    ("kind:embed", {"rate": float("nan")}),
    ("kind:embed", {"rate": float("inf")}),
    ("kind:embed", {"concurrency": 1, "burst": 2}),
    ("kind:embed", {"weight": 2}),
    ("scope:*", {"weight": 1001}),
])
def test_bad_limits_are_invalid_argument_and_change_nothing(
    queue: telha_jobs.Queue, label: str, kw: dict[str, object]
) -> None:
    with pytest.raises(telha_jobs.InvalidArgumentError):
        queue.set_limit(label, **kw)  # type: ignore[arg-type]
    assert queue.limits() == []


def test_wrong_types_are_type_errors(queue: telha_jobs.Queue) -> None:
    for call in (
        lambda: queue.set_limit(1, concurrency=1),  # type: ignore[arg-type]
        lambda: queue.set_limit("kind:a", concurrency="1"),  # type: ignore[arg-type]
        lambda: queue.set_limit("kind:a", concurrency=True),  # type: ignore[arg-type]
        lambda: queue.set_limit("kind:a", rate="fast"),  # type: ignore[arg-type]
        lambda: queue.remove_limit(None),  # type: ignore[arg-type]
    ):
        with pytest.raises(TypeError):
            call()
    with pytest.raises(telha_jobs.InvalidArgumentError):
        queue.remove_limit("bogus")


# -- follow-up jobs --------------------------------------------------------------


def test_complete_with_then_enqueues_follow_ups_with_their_parent(queue: telha_jobs.Queue) -> None:
    p = queue.enqueue("ingest", {"doc": 1})
    job = queue.lease_next("w")
    assert job is not None and job.parent is None
    queue.complete(job, {"ok": True}, then=[
        ("embed", {"doc": 1}),
        {"kind": "index", "payload": b"raw", "scope": S1, "priority": 3, "idempotency_key": "k"},
    ])
    assert queue.get(p).state == "completed"  # type: ignore[union-attr]
    kids = queue.list(parent=p)
    assert sorted(i.kind for i in kids) == ["embed", "index"]
    assert all(i.parent == p for i in kids)
    assert len(queue.list(parent=job)) == 2  # a Job works too
    assert len(queue.list(parent=queue.get(p))) == 2  # and a JobInfo
    a = queue.lease_next("w", kinds="embed")
    b = queue.lease_next("w", kinds="index")
    assert a is not None and a.parent == p and a.payload == {"doc": 1}
    assert b is not None and (b.parent, b.scope, b.priority, b.payload) == (p, S1, 3, b"raw")
    assert queue.get(b.id).idempotency_key == "k"  # type: ignore[union-attr]
    assert queue.list(parent=a) == []


def test_a_bad_follow_up_refuses_the_completion_and_changes_nothing(queue: telha_jobs.Queue) -> None:
    p = queue.enqueue("ingest")
    job = queue.lease_next("w")
    assert job is not None
    with pytest.raises(telha_jobs.InvalidArgumentError):
        queue.complete(job, then=[("embed", b""), ("BAD KIND", b"")])
    with pytest.raises(telha_jobs.InvalidArgumentError, match="then item 0"):
        queue.complete(job, then=[{"kind": "embed", "colour": "red"}])
    with pytest.raises(TypeError, match="then item 0"):
        queue.complete(job, then=["embed"])
    with pytest.raises(TypeError):
        queue.complete(job, then="embed")  # type: ignore[arg-type]
    assert queue.get(p).state == "leased"  # type: ignore[union-attr]
    assert queue.stats()["total"]["pending"] == 0
    queue.complete(job, then=[])
    # A repeat (a retry) answers as the first did and stages no follow-ups.
    queue.complete(job, then=[("embed", b"")])
    assert queue.list(parent=p) == []
    with pytest.raises(telha_jobs.LeaseLostError):  # another settle: stale
        queue.release(job)


def test_a_cancel_requested_completion_creates_no_follow_ups(queue: telha_jobs.Queue) -> None:
    p = queue.enqueue("ingest")
    job = queue.lease_next("w")
    assert job is not None
    assert queue.cancel(p) == "requested"
    try:
        queue.complete(job, then=[("embed", b"")])
    except telha_jobs.CancelledError:
        pass
    assert queue.get(p).state == "cancelled"  # type: ignore[union-attr]
    assert queue.list(parent=p) == [] and queue.stats()["total"]["pending"] == 0


def test_complete_many_takes_follow_ups_per_job(queue: telha_jobs.Queue) -> None:
    ids = queue.enqueue_many([("ingest", b"")] * 3)
    jobs = queue.lease_many("w", 3)
    stale = jobs[2]
    queue.release(stale)
    answers = queue.complete_many(jobs, then=[[("a", b"")], None, [("c", b"")]])
    assert answers[:2] == [None, None] and isinstance(answers[2], telha_jobs.LeaseLostError)
    by = {j.id: j for j in jobs}
    assert [i.kind for i in queue.list(parent=by[ids[0]].id)] == ["a"]
    assert queue.list(parent=ids[1]) == [] and queue.list(parent=ids[2]) == []
    with pytest.raises(telha_jobs.InvalidArgumentError, match="then has 1 entries for 2"):
        queue.complete_many([stale, stale], then=[None])


# -- asyncio ---------------------------------------------------------------------


def test_the_async_queue_has_limits_and_follow_ups(queue: telha_jobs.Queue) -> None:
    async def main() -> None:
        aq = AsyncQueue(queue)
        await aq.set_limit("kind:embed", concurrency=1, rate=100.0, burst=5)
        assert [l.target for l in await aq.limits()] == ["kind:embed"]
        with pytest.raises(telha_jobs.InvalidArgumentError):
            await aq.set_limit("kind:embed")
        p = await aq.enqueue("ingest")
        job = await aq.lease_next("w")
        assert job is not None
        await aq.complete(job, None, then=[("embed", b"1"), ("embed", b"2")])
        kids = await aq.list(parent=p)
        assert len(kids) == 2
        a = await aq.lease_next("w")
        assert a is not None and a.parent == p
        assert await aq.lease_next("w") is None  # the cap
        assert await aq.complete_many([a], then=[[("done", b"")]]) == [None]
        assert len(await aq.list(parent=a.id)) == 1
        assert await aq.remove_limit("kind:embed") is True
        assert await aq.limits() == []

    asyncio.run(main())


def _wait(cond: Any, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


def test_a_worker_handler_completes_with_follow_ups(queue: telha_jobs.Queue) -> None:
    # Over connect() the Worker batches completions: the follow-ups ride
    # along in complete_many; embedded, each goes with its own complete.
    for n in range(6):
        queue.enqueue("ingest", {"n": n})

    def handler(job: telha_jobs.Job) -> Any:
        lease = telha_jobs.current_lease()
        assert lease is not None
        if job.kind == "ingest":
            n = job.payload["n"]
            lease.follow_up([("embed", {"n": n})])
            lease.follow_up([{"kind": "index", "payload": {"n": n}}])
            if n == 5:
                raise telha_jobs.PermanentError("the handler failed: no follow-ups")
        return "ok"

    w = telha_jobs.Worker(queue, handler, concurrency=2, poll_wait=0.05)
    w.start()
    _wait(lambda: queue.stats()["total"]["completed"] == 15 and queue.stats()["total"]["dead"] == 1)
    w.stop(5.0)
    for p in queue.list(kind="ingest"):
        kids = queue.list(parent=p)
        if p.state == "completed":
            assert sorted(k.kind for k in kids) == ["embed", "index"], p
            assert all(k.payload == p.payload for k in kids)
        else:
            assert p.state == "dead" and kids == []


def test_follow_up_takes_a_list_of_items() -> None:
    lease = telha_jobs.Lease.__new__(telha_jobs.Lease)
    lease._then = None
    with pytest.raises(TypeError):
        lease.follow_up(("embed", b""))
    with pytest.raises(TypeError):
        lease.follow_up("embed")
    lease.follow_up([])
    assert lease._then is None


def test_an_async_worker_handler_completes_with_follow_ups(queue: telha_jobs.Queue) -> None:
    from telha_jobs.aio import AsyncWorker

    async def main() -> None:
        aq = AsyncQueue(queue)
        for n in range(4):
            await aq.enqueue("ingest", n)

        async def handler(job: telha_jobs.Job) -> None:
            if job.kind == "ingest":
                lease = telha_jobs.current_lease()
                assert lease is not None
                lease.follow_up([("embed", job.payload)])

        w = AsyncWorker(aq, handler, concurrency=2, poll_wait=0.05)
        runner = asyncio.create_task(w.run())
        while (await aq.stats())["total"]["completed"] < 8:
            await asyncio.sleep(0.02)
        await w.stop(5.0)
        await asyncio.wait_for(runner, 10.0)
        for p in await aq.list(kind="ingest"):
            kids = await aq.list(parent=p)
            assert [k.payload for k in kids] == [p.payload]

    asyncio.run(main())

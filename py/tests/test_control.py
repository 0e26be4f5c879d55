"""Job control (issue 16) on Queue and AsyncQueue, embedded and over
connect (the ``target`` fixture runs each test both ways): cancel in each
state, cancel_many, delete, snooze, fail with retry_in, expiry before start,
pause / resume / paused, and hostile input to every one of them."""

from __future__ import annotations

import asyncio
import datetime
import math
import time
import uuid
from typing import Any, Callable

import pytest

import telha_jobs
from telha_jobs.aio import AsyncQueue

from .conftest import Target

SCOPE = "0190c0de-0000-7000-8000-0000000000a1"


def state(q: telha_jobs.Queue, job_id: str) -> str:
    info = q.get(job_id)
    assert info is not None
    return info.state


def test_cancel_in_each_state(target: Target) -> None:
    with target.open(reaper_interval=0, backoff_base=3600.0, backoff_cap=3600.0) as q:
        pending = q.enqueue("embed")
        scheduled = q.enqueue("embed", delay=3600)
        failed = q.enqueue("other")
        job = q.lease_next("w", kinds="other")
        assert job is not None
        q.fail(job, "boom")
        assert state(q, failed) == "failed"
        for job_id in (pending, scheduled, failed):
            assert q.cancel(job_id, "operator") == "cancelled"
            assert state(q, job_id) == "cancelled"
        assert q.stats()["total"]["cancelled"] == 3
        assert [i.id for i in q.list(state="cancelled")] == sorted([pending, scheduled, failed])
        # A cancelled job is not cancelled again, nor leased.
        with pytest.raises(telha_jobs.WrongStateError):
            q.cancel(pending)
        assert q.lease_next("w") is None
        with pytest.raises(telha_jobs.NotFoundError):
            q.cancel("0190c0de-0000-7000-8000-000000000000")


def test_cancel_a_leased_job_is_a_request_its_holder_sees(target: Target) -> None:
    with target.open(reaper_interval=0) as q:
        job_id = q.enqueue("embed")
        job = q.lease_next("w")
        assert job is not None
        assert q.cancel(job_id, "wrong batch") == "requested"
        info = q.get(job_id)
        assert info is not None and info.state == "leased" and info.cancel_requested == "wrong batch"
        assert q.extend_answers([job], "w") == ["cancelled"]
        assert q.extend([job], "w") == [False]
        with pytest.raises(telha_jobs.CancelledError) as e:
            q.complete(job, {"done": True})
        assert isinstance(e.value, telha_jobs.LeaseLostError) and e.value.code == "CANCELLED"
        info = q.get(job_id)
        assert info is not None and info.state == "cancelled" and info.result == {"done": True}
        assert "cancelled" in [ev[1] for ev in info.events]
        with pytest.raises(telha_jobs.WrongStateError):
            q.cancel(job_id)
        # Completed jobs are refused too.
        done = q.enqueue("embed")
        j2 = q.lease_next("w")
        assert j2 is not None and j2.id == done
        q.complete(j2)
        with pytest.raises(telha_jobs.WrongStateError):
            q.cancel(done)


@pytest.mark.parametrize("settle", ["fail", "release", "snooze"])
def test_every_settle_of_a_cancelled_lease_records_it_cancelled(target: Target, settle: str) -> None:
    with target.open(reaper_interval=0) as q:
        job_id = q.enqueue("embed")
        job = q.lease_next("w")
        assert job is not None
        q.cancel(job_id)
        with pytest.raises(telha_jobs.CancelledError):
            if settle == "fail":
                q.fail(job, "x")
            elif settle == "release":
                q.release(job)
            else:
                q.snooze(job, 1.0)
        assert state(q, job_id) == "cancelled"


def test_cancel_many_by_kind_scope_and_state(target: Target) -> None:
    with target.open(reaper_interval=0) as q:
        a = [q.enqueue("embed") for _ in range(3)]
        s = q.enqueue("embed", scope=SCOPE)
        other = q.enqueue("ingest:pdf")
        r = q.cancel_many(kind="embed", scope=uuid.UUID(SCOPE), state="pending", reason="x")
        assert r == {"cancelled": 1, "requested": 0, "corrupt": 0}
        assert state(q, s) == "cancelled"
        leased = q.lease_next("w", kinds="embed")
        assert leased is not None
        r = q.cancel_many(kind="embed")
        assert r == {"cancelled": 2, "requested": 1, "corrupt": 0}
        assert q.cancel_many(kind="ingest:*") == {"cancelled": 1, "requested": 0, "corrupt": 0}
        assert state(q, other) == "cancelled"
        assert all(state(q, i) in ("cancelled", "leased") for i in a)
        with pytest.raises(telha_jobs.InvalidArgumentError):
            q.cancel_many(state="completed")
        with pytest.raises(telha_jobs.InvalidArgumentError):
            q.cancel_many(kind="Not A Kind")


def test_delete_each_state_and_a_leased_job_is_refused(target: Target) -> None:
    with target.open(reaper_interval=0) as q:
        ids = [q.enqueue("embed") for _ in range(3)]
        job = q.lease_next("w")
        assert job is not None and job.id == ids[0]
        with pytest.raises(telha_jobs.WrongStateError, match="cancel"):
            q.delete(job.id)
        q.complete(job)
        q.cancel(ids[1])
        for job_id in ids:
            q.delete(job_id)
            assert q.get(job_id) is None
        with pytest.raises(telha_jobs.NotFoundError):
            q.delete(ids[0])
        assert sum(q.stats()["total"].values()) == 0


def test_snooze_keeps_attempts_and_returns_after_the_delay(target: Target) -> None:
    with target.open(reaper_interval=0) as q:
        job_id = q.enqueue("embed")
        job = q.lease_next("w")
        assert job is not None
        q.snooze(job, datetime.timedelta(milliseconds=300))
        info = q.get(job_id)
        assert info is not None and info.state == "pending" and info.snoozes == 1 and info.attempts == 0
        assert "snoozed" in [e[1] for e in info.events]
        assert q.lease_next("w") is None
        again = q.lease_next("w", wait=5.0)
        assert again is not None and again.id == job_id and again.attempts == 0
        with pytest.raises(telha_jobs.LeaseLostError):
            q.snooze(job, 0)  # the old lease


def test_fail_with_retry_in_overrides_the_backoff(target: Target) -> None:
    with target.open(reaper_interval=0, backoff_base=3600.0, backoff_cap=3600.0) as q:
        job_id = q.enqueue("embed")
        job = q.lease_next("w")
        assert job is not None
        q.fail(job, "later", retry_in=0.05)
        info = q.get(job_id)
        assert info is not None and info.state == "failed" and info.attempts == 1
        assert info.state_at < time.time() + 60, "the backoff's hour was used"
        job = q.lease_next("w", wait=5.0)
        assert job is not None and job.attempts == 1
        q.fail(job, "later", retry_in=datetime.timedelta(seconds=0))
        assert q.lease_next("w", wait=5.0) is not None


def test_expiry_before_start(target: Target) -> None:
    with target.open(reaper_interval=0) as q:
        soon = q.enqueue("embed", expires_in=0.2)
        later = q.enqueue("embed", expires_at=datetime.datetime.now() + datetime.timedelta(hours=1))
        at = q.enqueue("embed", expires_at=time.time() + 3600)
        info = q.get(soon)
        assert info is not None and info.expires_at is not None
        assert info.expires_at == pytest.approx(time.time() + 0.2, abs=5)
        time.sleep(0.3)
        assert q.reap()["expired_unstarted"] == 1
        info = q.get(soon)
        assert info is not None and info.state == "dead" and info.last_error == "expired before start"
        leased = {j.id for j in q.lease_many("w", 10)}
        assert leased == {later, at}
        with pytest.raises(telha_jobs.InvalidArgumentError):
            q.enqueue("embed", expires_at=time.time() - 10)
        with pytest.raises(telha_jobs.InvalidArgumentError):
            q.enqueue("embed", expires_in=0)
        with pytest.raises(telha_jobs.InvalidArgumentError):
            q.enqueue("embed", delay=60, expires_in=1)  # not after its run-at
        ids = q.enqueue_many([{"kind": "embed", "expires_in": 60}])
        info = q.get(ids[0])
        assert info is not None and info.expires_at is not None


def test_pause_and_resume_kinds_families_and_scopes(target: Target) -> None:
    with target.open(reaper_interval=0) as q:
        e = q.enqueue("embed")
        p = q.enqueue("ingest:pdf")
        s = q.enqueue("other", scope=SCOPE)
        assert q.pause(kind="embed") is True
        assert q.pause("kind:embed") is False
        assert q.pause(kind="ingest:*") is True
        assert q.pause(scope=uuid.UUID(SCOPE)) is True
        assert q.paused() == {"kinds": ["embed", "ingest:*"], "scopes": [SCOPE]}
        assert q.stats()["paused"] == q.paused()
        metrics = q.metrics()
        assert 'telha_jobs_paused{kind="ingest:*"} 1' in metrics
        assert f'telha_jobs_paused{{scope="{SCOPE}"}} 1' in metrics
        for job_id in (e, p, s):
            info = q.get(job_id)
            assert info is not None and info.paused
        assert q.lease_next("w") is None
        assert q.resume(f"scope:{SCOPE}") is True
        job = q.lease_next("w")
        assert job is not None and job.id == s
        assert q.resume(kind="ingest:*") is True and q.resume(kind="ingest:*") is False
        job = q.lease_next("w")
        assert job is not None and job.id == p
        q.resume(kind="embed")
        assert q.paused() == {"kinds": [], "scopes": []}
        assert q.lease_next("w") is not None


def test_pause_and_resume_need_exactly_one_target(target: Target) -> None:
    with target.open(reaper_interval=0) as q:
        for bad in [dict(), dict(kind="embed", scope=SCOPE)]:
            with pytest.raises(telha_jobs.InvalidArgumentError):
                q.pause(**bad)  # type: ignore[arg-type]
        with pytest.raises(telha_jobs.InvalidArgumentError):
            q.pause("embed")  # a label names its kind: "kind:embed"
        with pytest.raises(TypeError):
            q.pause(5)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            q.resume(kind=5)  # type: ignore[arg-type]


BAD_IDS: list[Any] = ["", "nope", "0190c0de-0000-7000-8000-00000000000g", "../../etc/passwd",
                      "\x00" * 36, "a" * 10_000]
BAD_DELAYS: list[Any] = [math.nan, -1, -0.001, math.inf, 1e300, 10**400, 4e12]


def hostile_calls(q: telha_jobs.Queue, job: telha_jobs.Job) -> list[tuple[str, Callable[[], Any]]]:
    calls: list[tuple[str, Callable[[], Any]]] = []
    for bad in BAD_IDS:
        calls += [(f"cancel({bad[:20]!r})", lambda b=bad: q.cancel(b)),
                  (f"delete({bad[:20]!r})", lambda b=bad: q.delete(b))]
    for bad in ["", "Bad Kind", "a:b:*", "x" * 10_000, "*"]:
        calls += [(f"pause(kind={bad[:20]!r})", lambda b=bad: q.pause(kind=b)),
                  (f"cancel_many(kind={bad[:20]!r})", lambda b=bad: q.cancel_many(kind=b))]
    for bad in ["", "x", SCOPE + "0", "kind:"]:
        calls += [(f"resume(scope={bad!r})", lambda b=bad: q.resume(scope=b)),
                  (f"cancel_many(scope={bad!r})", lambda b=bad: q.cancel_many(scope=b)),
                  (f"pause({bad!r})", lambda b=bad: q.pause(b))]
    calls.append(("cancel_many(state='nonsense')", lambda: q.cancel_many(state="nonsense")))
    for d in BAD_DELAYS:
        calls += [(f"snooze({d!r})", lambda d=d: q.snooze(job, d)),
                  (f"fail(retry_in={d!r})", lambda d=d: q.fail(job, "x", retry_in=d)),
                  (f"enqueue(expires_in={d!r})", lambda d=d: q.enqueue("embed", expires_in=d))]
    for t in [math.nan, -1, math.inf, 1e300]:
        calls.append((f"enqueue(expires_at={t!r})", lambda t=t: q.enqueue("embed", expires_at=t)))
    return calls


def test_hostile_job_control_input_is_a_typed_error_and_the_store_stays_usable(target: Target) -> None:
    with target.open(reaper_interval=0) as q:
        job_id = q.enqueue("embed")
        job = q.lease_next("w")
        assert job is not None
        for what, call in hostile_calls(q, job):
            with pytest.raises(telha_jobs.InvalidArgumentError):
                call()
                pytest.fail(f"{what} was accepted")
        for what, call in [("cancel(5)", lambda: q.cancel(5)),  # type: ignore[arg-type]
                           ("snooze('1')", lambda: q.snooze(job, "1")),  # type: ignore[arg-type]
                           ("fail(retry_in=True)", lambda: q.fail(job, "x", retry_in=True)),
                           ("cancel_many(state=3)", lambda: q.cancel_many(state=3))]:  # type: ignore[arg-type]
            with pytest.raises(TypeError):
                call()
                pytest.fail(f"{what} was accepted")
        # Untouched, and the store still works.
        info = q.get(job_id)
        assert info is not None and info.state == "leased" and info.attempts == 0 and info.snoozes == 0
        assert q.paused() == {"kinds": [], "scopes": []}
        q.complete(job)
        assert q.stats()["total"]["completed"] == 1
        assert q.enqueue("embed", expires_in=60) and q.pause(kind="embed") and q.resume(kind="embed")


def test_the_job_control_api_as_coroutines(target: Target) -> None:
    async def main() -> None:
        async with AsyncQueue(target.open(reaper_interval=0, backoff_base=3600.0)) as q:
            a = await q.enqueue("embed", expires_in=3600)
            b = await q.enqueue("embed")
            c = await q.enqueue("ingest:pdf")
            assert await q.pause(kind="ingest:*") is True
            assert await q.paused() == {"kinds": ["ingest:*"], "scopes": []}
            job = await q.lease_next("w")
            assert job is not None and job.id == a
            assert await q.cancel(a, "stop") == "requested"
            assert await q.extend_answers([job], "w") == ["cancelled"]
            with pytest.raises(telha_jobs.CancelledError):
                await q.complete(job)
            job = await q.lease_next("w")
            assert job is not None and job.id == b
            await q.snooze(job, 0)
            job = await q.lease_next("w", wait=5.0)
            assert job is not None and job.id == b and job.attempts == 0
            await q.fail(job, "again", retry_in=0)
            job = await q.lease_next("w", wait=5.0)
            assert job is not None and job.attempts == 1
            await q.complete(job)
            assert await q.resume(kind="ingest:*") is True
            assert await q.cancel_many(kind="ingest:*") == {"cancelled": 1, "requested": 0, "corrupt": 0}
            await q.delete(c)
            assert await q.get(c) is None
            with pytest.raises(telha_jobs.WrongStateError):
                await q.cancel(b)
            st = (await q.stats())["total"]
            assert st["cancelled"] == 1 and st["completed"] == 1

    asyncio.run(main())

"""Issue 18 in Python: waiting for a job, watching the queue, progress.

Most tests take ``queue`` / ``target`` (conftest): they run against an
embedded queue and through ``connect()`` to one served in this process.
The last ones do the same through a server in another process (started and
stopped by pid here)."""

from __future__ import annotations

import _thread
import asyncio
import math
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import telha_jobs
from telha_jobs import limits
from telha_jobs.aio import AsyncQueue, AsyncWorker

from .conftest import Target
from .test_worker import wait_for


def later(delay: float, fn: Any, *args: Any) -> threading.Thread:
    """Run ``fn(*args)`` on a thread after ``delay`` seconds."""

    def go() -> None:
        time.sleep(delay)
        fn(*args)

    t = threading.Thread(target=go, daemon=True, name=f"later-{getattr(fn, '__name__', fn)}")
    t.start()
    return t


def complete_next(q: telha_jobs.Queue, result: Any = None) -> None:
    job = q.lease_next("finisher", wait=10.0)
    assert job is not None
    q.complete(job, result)


def read(sub: telha_jobs.Subscription, n: int, timeout: float = 10.0) -> list[telha_jobs.Event]:
    end = time.monotonic() + timeout
    got: list[telha_jobs.Event] = []
    while len(got) < n:
        ev = sub.next(timeout=max(end - time.monotonic(), 0.0))
        if ev is None:
            break
        got.append(ev)
    return got


# -- wait -------------------------------------------------------------------------


def test_wait_answers_a_terminal_job_at_once(queue: telha_jobs.Queue) -> None:
    job_id = queue.enqueue("embed", {"n": 1})
    job = queue.lease_next("w")
    assert job is not None
    queue.complete(job, {"ok": True})
    t0 = time.monotonic()
    info = queue.wait(job_id, timeout=30.0)
    assert info.state == "completed" and info.result == {"ok": True} and info.id == job_id
    # A Job, a JobInfo, a UUID and a zero timeout work too.
    assert queue.wait(job).state == "completed"
    assert queue.wait(info, timeout=0).state == "completed"
    assert queue.wait(uuid.UUID(job_id), timeout=0.0).result == {"ok": True}
    assert time.monotonic() - t0 < 5.0


def test_wait_is_woken_by_the_transition(queue: telha_jobs.Queue) -> None:
    job_id = queue.enqueue("embed")
    t = later(0.3, complete_next, queue, "done")
    t0 = time.monotonic()
    info = queue.wait(job_id, timeout=30.0)
    took = time.monotonic() - t0
    t.join()  # the completing call has had its answer (the test closes the queue next)
    assert info.state == "completed" and info.result == "done"
    assert 0.2 < took < 10.0, took


def test_wait_times_out_with_the_current_state(queue: telha_jobs.Queue) -> None:
    job_id = queue.enqueue("embed")
    t0 = time.monotonic()
    info = queue.wait(job_id, timeout=0.3)
    took = time.monotonic() - t0
    assert info.state == "pending" and info.attempts == 0
    assert 0.25 <= took < 5.0, took
    job = queue.lease_next("w7")
    assert job is not None
    info = queue.wait(job_id, timeout=0.05)
    assert info.state == "leased" and info.worker_id == "w7"


def test_wait_on_a_job_that_goes_dead_returns_its_error(queue: telha_jobs.Queue) -> None:
    job_id = queue.enqueue("embed", max_attempts=1)

    def fail() -> None:
        job = queue.lease_next("w", wait=10.0)
        assert job is not None
        queue.fail(job, "bad input", retryable=False)

    t = later(0.1, fail)
    info = queue.wait(job_id, timeout=30.0)
    assert info.state == "dead" and info.last_error == "bad input"
    cancelled = queue.enqueue("embed")
    t2 = later(0.1, queue.cancel, cancelled, "not needed")
    assert queue.wait(cancelled, timeout=30.0).state == "cancelled"
    t.join()
    t2.join()


def test_wait_refuses_unknown_ids_and_bad_arguments(queue: telha_jobs.Queue) -> None:
    with pytest.raises(telha_jobs.NotFoundError):
        queue.wait("01890000-0000-7000-8000-000000000000", timeout=0.05)
    with pytest.raises(telha_jobs.InvalidArgumentError):
        queue.wait("not-a-uuid")
    with pytest.raises(TypeError):
        queue.wait(42)  # type: ignore[arg-type]
    job_id = queue.enqueue("embed")
    for bad in (-1.0, math.nan):
        with pytest.raises(telha_jobs.InvalidArgumentError, match="timeout"):
            queue.wait(job_id, timeout=bad)
    with pytest.raises(TypeError):
        queue.wait(job_id, timeout="1")  # type: ignore[arg-type]
    queue.delete(job_id)
    with pytest.raises(telha_jobs.NotFoundError):
        queue.wait(job_id, timeout=0.05)


def test_several_waiters_on_one_job(queue: telha_jobs.Queue) -> None:
    job_id = queue.enqueue("embed")
    got: list[telha_jobs.JobInfo] = []
    lock = threading.Lock()

    def waiter() -> None:
        info = queue.wait(job_id, timeout=30.0)
        with lock:
            got.append(info)

    threads = [threading.Thread(target=waiter) for _ in range(8)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    complete_next(queue, {"n": 8})
    for t in threads:
        t.join(30.0)
    assert len(got) == 8 and all(i.state == "completed" and i.result == {"n": 8} for i in got)


def test_enqueue_and_wait(queue: telha_jobs.Queue) -> None:
    t = later(0.1, complete_next, queue, b"raw result")
    info = queue.enqueue_and_wait("embed", {"doc": 1}, timeout=30.0, priority=5)
    t.join()
    assert info.state == "completed" and info.result == b"raw result" and info.priority == 5
    info = queue.enqueue_and_wait("embed", timeout=0.05)
    assert info.state == "pending"
    with pytest.raises(telha_jobs.InvalidArgumentError, match="unknown option"):
        queue.enqueue_and_wait("embed", nope=1)


def test_ctrl_c_ends_a_wait_and_a_subscription_read(queue: telha_jobs.Queue) -> None:
    job_id = queue.enqueue("embed")
    sub = queue.subscribe(kinds="nothing")
    for call in (lambda: queue.wait(job_id), lambda: sub.next(), lambda: next(iter(sub))):
        t0 = time.monotonic()
        later(0.3, _thread.interrupt_main)
        with pytest.raises(KeyboardInterrupt):
            call()
        assert time.monotonic() - t0 < 5.0
    # The queue carries on.
    assert queue.wait(job_id, timeout=0).state == "pending"
    sub.close()


def test_closing_the_queue_ends_a_wait(target: Target) -> None:
    q = target.open(reaper_interval=0)
    job_id = q.enqueue("embed")
    later(0.3, q.close)
    with pytest.raises(telha_jobs.QueueClosedError):
        q.wait(job_id, timeout=30.0)
    with pytest.raises(telha_jobs.QueueClosedError):
        q.wait(job_id, timeout=0)


# -- asyncio wait -------------------------------------------------------------------


def test_async_wait_never_blocks_the_loop_and_cancellation_ends_it(queue: telha_jobs.Queue) -> None:
    async def main() -> None:
        aq = AsyncQueue(queue)
        job_id = await aq.enqueue("embed")
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.create_task(tick())
        t = later(0.3, complete_next, queue, "async done")
        info = await aq.wait(job_id, timeout=30.0)
        t.join()
        assert info.state == "completed" and info.result == "async done"
        assert ticks >= 10, ticks  # the loop ran meanwhile
        # At the timeout: the current state.
        other = await aq.enqueue("embed")
        t0 = time.monotonic()
        assert (await aq.wait(other, timeout=0.2)).state == "pending"
        assert 0.15 <= time.monotonic() - t0 < 5.0
        # Cancellation ends the wait at once.
        task = asyncio.create_task(aq.wait(other))
        await asyncio.sleep(0.2)
        t0 = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert time.monotonic() - t0 < 2.0
        # Many waits, no thread each: all woken by their completions.
        ids = await aq.enqueue_many([("batch", i) for i in range(50)])
        waits = [asyncio.create_task(aq.wait(i, timeout=60.0)) for i in ids]
        await asyncio.sleep(0.1)
        jobs = await aq.lease_many("w", 50, kinds="batch")
        await aq.complete_many(jobs, [j.payload for j in jobs])
        infos = await asyncio.gather(*waits)
        assert [i.result for i in infos] == list(range(50))
        with pytest.raises(telha_jobs.NotFoundError):
            await aq.wait("01890000-0000-7000-8000-000000000000")
        with pytest.raises(telha_jobs.InvalidArgumentError):
            await aq.wait(other, timeout=-1)
        ticker.cancel()
        done = await aq.enqueue_and_wait("embed", timeout=0.05, priority=1)
        assert done.state == "pending" and done.priority == 1

    asyncio.run(main())


def test_closing_an_async_queue_ends_its_waits(target: Target) -> None:
    async def main() -> None:
        aq = AsyncQueue(target.open(reaper_interval=0))
        job_id = await aq.enqueue("embed")
        task = asyncio.create_task(aq.wait(job_id))
        await asyncio.sleep(0.2)
        await aq.close()
        with pytest.raises(telha_jobs.QueueClosedError):
            await asyncio.wait_for(task, 10.0)

    asyncio.run(main())


# -- subscribe ----------------------------------------------------------------------


def test_a_subscription_sees_each_transition_in_commit_order(queue: telha_jobs.Queue) -> None:
    early = queue.enqueue("embed")
    with queue.subscribe() as sub:
        assert sub.next(timeout=0.05) is None  # nothing from before
        mail = queue.enqueue("mail", {"to": "a"})
        job = queue.lease_next("w1", kinds="embed")
        assert job is not None
        assert queue.extend([job], "w1", progress=[{"pct": 50}]) == [True]
        time.sleep(0.005)  # a later deadline (ms): an extend in the same ms writes nothing
        assert queue.extend([job], "w1") == [True]
        queue.complete(job, "ok")
        evs = read(sub, 5)
        assert [(e.job_id, e.transition) for e in evs] == [
            (mail, "enqueued"), (early, "leased"), (early, "progress"), (early, "extended"),
            (early, "completed"),
        ]
        assert [e.seq for e in evs] == [1, 2, 3, 4, 5]  # this subscription's own count
        assert all(e.missed == 0 for e in evs)
        assert evs[0].kind == "mail" and evs[0].attempt == 0 and evs[0].worker_id is None
        assert evs[1].attempt == 1 and evs[1].worker_id == "w1"
        assert evs[2].progress == {"pct": 50} and evs[2].raw_progress == telha_jobs.encode_payload({"pct": 50})
        assert evs[3].progress is None and evs[3].raw_progress is None
        assert abs(evs[0].time - time.time()) < 60 and evs[0].ts == round(evs[0].time * 1000)
        assert evs[0].scope == "00000000-0000-0000-0000-000000000000"
        assert "transition='enqueued'" in repr(evs[0])
    assert sub.closed
    assert list(sub) == []  # closed: iteration ends
    with pytest.raises(telha_jobs.QueueClosedError):
        sub.next(timeout=0)


def test_subscription_filters(queue: telha_jobs.Queue) -> None:
    mail = queue.subscribe(kinds="mail:*")
    ends = queue.subscribe(transitions=["completed", "dead"])
    scoped = queue.subscribe(scopes=str(uuid.UUID(int=7)))
    queue.enqueue("mail:send")
    queue.enqueue("embed")
    queue.enqueue("embed", scope=uuid.UUID(int=7))
    for _ in range(3):
        job = queue.lease_next("w")
        assert job is not None
        queue.complete(job)
    mails = read(mail, 3)
    assert [e.kind for e in mails] == ["mail:send"] * 3 and [e.seq for e in mails] == [1, 2, 3]
    assert [e.transition for e in read(ends, 3)] == ["completed"] * 3
    assert [e.transition for e in read(scoped, 3)] == ["enqueued", "leased", "completed"]
    for s in (mail, ends, scoped):
        assert s.next(timeout=0.05) is None
        s.close()
    with pytest.raises(telha_jobs.InvalidArgumentError, match="unknown transition"):
        queue.subscribe(transitions="nope")
    with pytest.raises(telha_jobs.InvalidArgumentError):
        queue.subscribe(kinds="Bad Kind!")
    for b in (0, limits.MAX_EVENT_BUFFER + 1):
        with pytest.raises(telha_jobs.InvalidArgumentError, match="buffer"):
            queue.subscribe(buffer=b)
    with pytest.raises(TypeError):
        queue.subscribe(buffer=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        queue.subscribe(transitions=3)  # type: ignore[arg-type]


def test_iteration_ends_when_the_queue_closes(target: Target) -> None:
    q = target.open(reaper_interval=0)
    sub = q.subscribe()
    q.enqueue("embed")
    later(0.5, q.close)
    got = [e.transition for e in sub]  # blocks until the close
    assert got == ["enqueued"]


def test_a_slow_subscriber_learns_exactly_how_many_events_it_missed(queue: telha_jobs.Queue) -> None:
    sub = queue.subscribe(buffer=10)
    queue.enqueue_many([("embed", i) for i in range(100)])
    wait_for(lambda: sub.buffered == 10)
    time.sleep(0.3)  # everything the queue published has been offered by now
    got = read(sub, 10)  # what fitted; the other 90 were dropped, never waited for
    last = queue.enqueue("embed", "last")
    got += read(sub, 1)
    assert len(got) == 11 and got[-1].job_id == last
    # Every lost event is counted, on the next one delivered.
    assert [e.missed for e in got] == [0] * 10 + [90]
    for a, b in zip(got, got[1:]):
        assert b.seq == a.seq + 1 + b.missed
    assert sub.next(timeout=0.05) is None
    sub.close()


def test_async_subscribe(queue: telha_jobs.Queue) -> None:
    async def main() -> list[str]:
        aq = AsyncQueue(queue)
        seen: list[str] = []
        async with await aq.subscribe(kinds="embed") as sub:
            assert await sub.next(timeout=0.05) is None
            job_id = await aq.enqueue("embed")
            t = later(0.2, complete_next, queue, None)
            async for ev in sub:
                assert ev.job_id == job_id
                seen.append(ev.transition)
                if ev.transition == "completed":
                    break
            t.join()
            # Cancelling a task reading it ends the read.
            task = asyncio.create_task(sub.next())
            await asyncio.sleep(0.1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            sub.close()
            assert [e async for e in sub] == []
            with pytest.raises(telha_jobs.QueueClosedError):
                await sub.next(timeout=0)
        return seen

    assert asyncio.run(main()) == ["enqueued", "leased", "completed"]


# -- progress -----------------------------------------------------------------------


def test_progress_rides_on_extend_and_shows_in_get(queue: telha_jobs.Queue) -> None:
    a, b = queue.enqueue("embed"), queue.enqueue("embed")
    ja, jb = queue.lease_next("w"), queue.lease_next("w")
    assert ja is not None and jb is not None
    assert queue.get(a).progress is None  # type: ignore[union-attr]
    assert queue.extend_answers([ja, jb], "w", progress=[{"page": 3, "of": 10}, None]) == ["renewed"] * 2
    ia, ib = queue.get(a), queue.get(b)
    assert ia is not None and ib is not None
    assert ia.progress == {"page": 3, "of": 10} and ib.progress is None
    assert [e[1] for e in ia.events] == ["enqueued", "leased"]  # not in the job's log
    assert queue.extend([ja], "w", progress=[b"\x00raw"]) == [True]
    assert queue.get(a).progress == b"\x00raw"  # type: ignore[union-attr]
    assert queue.extend([ja], "w", progress=["55%"]) == [True]
    assert queue.get(a).progress == "55%"  # type: ignore[union-attr]
    with pytest.raises(telha_jobs.InvalidArgumentError):
        queue.extend([ja], "w", progress=[b"x" * (limits.MAX_PROGRESS_BYTES + 1)])
    with pytest.raises(telha_jobs.InvalidArgumentError):
        queue.extend([ja], "w", progress=["x", "y"])
    with pytest.raises(TypeError, match="progress must be a list"):
        queue.extend([ja], "w", progress="55%")  # type: ignore[arg-type]
    assert queue.get(a).progress == "55%"  # type: ignore[union-attr]
    queue.release(ja)
    again = queue.lease_next("w")
    assert again is not None and again.id == a
    assert queue.get(a).progress is None  # type: ignore[union-attr]


def test_lease_progress_is_encoded_at_once() -> None:
    with pytest.raises(telha_jobs.InvalidArgumentError, match="MAX_PROGRESS_BYTES"):
        telha_jobs._native._encode_progress("x" * limits.MAX_PROGRESS_BYTES)
    with pytest.raises(TypeError):
        telha_jobs._native._encode_progress(object())
    assert telha_jobs._native._encode_progress(b"ab") == b"ab"
    assert telha_jobs._native._encode_progress({"a": 1}) == telha_jobs.encode_payload({"a": 1})


def progress_events(sub: telha_jobs.Subscription, job_id: str) -> list[telha_jobs.Event]:
    evs: list[telha_jobs.Event] = []
    while True:
        ev = sub.next(timeout=10.0)
        assert ev is not None, [e.transition for e in evs]
        if ev.job_id == job_id:
            evs.append(ev)
        if ev.job_id == job_id and ev.transition == "completed":
            return evs


def check_progress(q: telha_jobs.Queue, job_id: str, evs: list[telha_jobs.Event], seen: list[Any]) -> None:
    reports = [e.progress["i"] for e in evs if e.transition == "progress"]
    beats = [e for e in evs if e.transition in ("progress", "extended")]
    # Seen in events and in get while the job ran, rising, in order.
    assert len(reports) >= 3, [e.transition for e in evs]
    assert reports == sorted(reports) and set(reports) <= set(range(1, 101))
    assert any(s is not None for s in seen), seen
    # No write beyond the heartbeats: far fewer than 100, one event per beat.
    assert len(beats) < 60, len(beats)
    info = q.get(job_id)
    assert info is not None and info.state == "completed"
    assert info.progress == {"i": reports[-1]}  # the last report sent stays on the record
    assert "progress" not in [e[1] for e in info.events]  # not in the job's log


def test_a_worker_handler_reports_progress_100_times(target: Target) -> None:
    q = target.open(reaper_interval=0, lease_ttl=0.3)
    sub = q.subscribe(kinds="long")
    job_id = q.enqueue("long")
    seen: list[Any] = []

    def handler(job: telha_jobs.Job) -> str:
        lease = telha_jobs.current_lease()
        assert lease is not None
        for i in range(1, 101):
            lease.progress({"i": i})
            time.sleep(0.015)
            if i % 20 == 0:
                seen.append(q.get(job.id).progress)  # type: ignore[union-attr]
        with pytest.raises(telha_jobs.InvalidArgumentError):
            lease.progress("x" * limits.MAX_PROGRESS_BYTES)
        return "done"

    with telha_jobs.Worker(q, handler, concurrency=1, poll_wait=0.05, kinds="long"):
        evs = progress_events(sub, job_id)
    check_progress(q, job_id, evs, seen)
    sub.close()


def test_an_async_worker_handler_reports_progress(target: Target) -> None:
    q = target.open(reaper_interval=0, lease_ttl=0.3)
    sub = q.subscribe(kinds="long")
    job_id = q.enqueue("long")
    seen: list[Any] = []

    async def handler(job: telha_jobs.Job) -> str:
        lease = telha_jobs.current_lease()
        assert lease is not None
        for i in range(1, 101):
            lease.progress({"i": i})
            await asyncio.sleep(0.015)
            if i % 20 == 0:
                seen.append((await aq.get(job.id)).progress)  # type: ignore[union-attr]
        return "done"

    async def main() -> None:
        w = AsyncWorker(aq, handler, concurrency=1, poll_wait=0.05, kinds="long")
        runner = asyncio.create_task(w.run())
        await aq.wait(job_id, timeout=60.0)
        await w.stop(5.0)
        await runner

    aq = AsyncQueue(q)
    asyncio.run(main())
    check_progress(q, job_id, progress_events(sub, job_id), seen)
    sub.close()


# -- through a server in another process ----------------------------------------------

SERVER = """
import sys, telha_jobs
q = telha_jobs.Queue(sys.argv[1], reaper_interval=0)
server = q.serve("127.0.0.1:0")
print(server.url, flush=True)
sys.stdin.read()
server.stop(grace=1.0)
q.close()
"""


@pytest.fixture
def server_process(tmp_path: Path) -> Iterator[str]:
    """A server in a child process (stopped by closing its stdin, killed by
    pid if it does not exit); yields its URL."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    child = subprocess.Popen([sys.executable, "-c", SERVER, str(tmp_path / "store")],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        assert url.startswith("http://"), url
        yield url
    finally:
        assert child.stdin is not None
        child.stdin.close()
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()


def test_wait_and_subscribe_through_a_server_in_another_process(server_process: str) -> None:
    with telha_jobs.connect(server_process, timeout=10.0) as q, \
            telha_jobs.connect(server_process, timeout=10.0) as worker:
        sub = q.subscribe()
        job_id = q.enqueue("embed", {"n": 1})
        t0 = time.monotonic()
        assert q.wait(job_id, timeout=0.3).state == "pending"
        assert 0.25 <= time.monotonic() - t0 < 5.0
        t = later(0.2, complete_next, worker, {"ok": 1})
        info = q.wait(job_id, timeout=30.0)
        t.join()
        assert info.state == "completed" and info.result == {"ok": 1}
        assert [e.transition for e in read(sub, 3)] == ["enqueued", "leased", "completed"]

        async def main() -> telha_jobs.JobInfo:
            aq = AsyncQueue(q)
            other = await aq.enqueue("embed")
            asub = await aq.subscribe(transitions="completed")
            t = later(0.2, complete_next, worker, "async")
            got = await aq.wait(other, timeout=30.0)
            t.join()
            ev = await asub.next(timeout=10.0)
            assert ev is not None and ev.job_id == other
            asub.close()
            return got

        assert asyncio.run(main()).result == "async"
        sub.close()

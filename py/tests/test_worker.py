"""The Worker: results, failures, auto-heartbeat, lost leases, graceful stop."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import telha_jobs

from .conftest import Target, spawn


def wait_for(cond: Any, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)


def test_results_failures_and_permanent_failures(target: Target) -> None:
    with target.open(reaper_interval=0, max_attempts=2, backoff_base=0.001) as q:
        ok = q.enqueue("embed", {"n": 2})
        flaky = q.enqueue("embed", {"n": -1})
        bad = q.enqueue("embed", {"n": -2})

        def handler(job: telha_jobs.Job) -> Any:
            n = job.payload["n"]
            if n == -1:
                raise RuntimeError("transient")
            if n == -2:
                raise telha_jobs.PermanentError("bad document")
            return {"square": n * n}

        w = telha_jobs.Worker(q, handler, concurrency=2, poll_wait=0.05)
        w.start()
        wait_for(lambda: q.stats()["total"]["completed"] == 1 and q.stats()["total"]["dead"] == 2)
        w.stop(5.0)
        assert q.get(ok).result == {"square": 4}  # type: ignore[union-attr]
        f = q.get(flaky)
        assert f is not None and f.state == "dead" and f.attempts == 2
        assert f.last_error == "RuntimeError: transient"
        b = q.get(bad)
        assert b is not None and b.state == "dead" and b.attempts == 1
        assert b.last_error == "PermanentError: bad document"
        assert w.counts == {"completed": 1, "failed": 3, "lost": 0, "released": 0,
                            "cancelled": 0, "snoozed": 0, "timed_out": 0, "prefetch_released": 0,
                            "errors": 0}


def test_auto_heartbeat_keeps_a_job_leased_well_past_its_ttl(target: Target) -> None:
    # TTL 1 s with a reaper every 50 ms: an un-heartbeated lease would be
    # expired within ~1.05 s (the next test shows it). The handler holds it
    # for 3.5 s, heartbeats come every ~0.33 s.
    with target.open(lease_ttl=1.0, reaper_interval=0.05) as q:
        job_id = q.enqueue("embed")
        seen: list[bool] = []

        def handler(job: telha_jobs.Job) -> str:
            lease = telha_jobs.current_lease()
            assert lease is not None and lease.job.id == job.id
            end = time.monotonic() + 3.5
            while time.monotonic() < end:
                seen.append(lease.lost)
                time.sleep(0.05)
            return "survived"

        with telha_jobs.Worker(q, handler, concurrency=1, poll_wait=0.05):
            wait_for(lambda: q.get(job_id).state == "completed")  # type: ignore[union-attr]
        info = q.get(job_id)
        assert info is not None and info.result == "survived" and info.attempts == 0
        assert [e[1] for e in info.events] == ["enqueued", "leased", "completed"]
        assert seen and not any(seen)


def test_without_a_heartbeat_the_same_lease_is_lost(target: Target) -> None:
    # The control for the test above: same TTL and reaper, no Worker.
    with target.open(lease_ttl=1.0, reaper_interval=0.05, backoff_base=0.001) as q:
        job_id = q.enqueue("embed")
        job = q.lease_next("w")
        assert job is not None
        wait_for(lambda: q.get(job_id).state != "leased")  # type: ignore[union-attr]
        with pytest.raises(telha_jobs.LeaseLostError):
            q.complete(job)


def test_a_lease_lost_under_a_handler_sets_its_flag(target: Target) -> None:
    with target.open(lease_ttl=0.3, reaper_interval=0) as q:
        job_id = q.enqueue("embed")
        held: list[telha_jobs.Lease] = []

        def handler(job: telha_jobs.Job) -> None:
            lease = telha_jobs.current_lease()
            assert lease is not None
            held.append(lease)
            assert lease.wait_lost(20.0)
            with pytest.raises(telha_jobs.LeaseLostError):
                lease.check()

        w = telha_jobs.Worker(q, handler, concurrency=1, poll_wait=0.05)
        w.start()
        wait_for(lambda: bool(held))
        # Someone else takes the job away (as a reaper would): the next
        # heartbeat finds the lease gone and raises the flag.
        q.release(held[0].job)
        wait_for(lambda: held[0].lost)
        wait_for(lambda: w.counts["lost"] == 1)
        w.stop(5.0)
        assert q.get(job_id).state in ("pending", "leased")  # type: ignore[union-attr]


def test_graceful_stop_releases_running_jobs_without_spending_attempts(target: Target) -> None:
    with target.open(reaper_interval=0) as q:
        ids = q.enqueue_many([("embed", i) for i in range(2)])
        gate = threading.Event()
        started: list[str] = []

        def handler(job: telha_jobs.Job) -> None:
            started.append(job.id)
            gate.wait(30.0)

        w = telha_jobs.Worker(q, handler, concurrency=2, poll_wait=0.05)
        w.start()
        wait_for(lambda: len(started) == 2)
        t0 = time.monotonic()
        w.stop(timeout=0.2)
        assert time.monotonic() - t0 < 10.0
        assert not w.running
        for i in ids:
            info = q.get(i)
            assert info is not None and info.state == "pending" and info.attempts == 0
            assert info.events[-1][1] == "released"
        gate.set()  # the handlers finish late: their results are refused, quietly
        time.sleep(0.1)
        assert w.counts["released"] == 2 and w.counts["completed"] == 0
        assert q.stats()["total"]["pending"] == 2


def test_stop_waits_for_handlers_that_finish_in_time(target: Target) -> None:
    with target.open(reaper_interval=0) as q:
        job_id = q.enqueue("embed")
        started = threading.Event()

        def handler(job: telha_jobs.Job) -> str:
            started.set()
            time.sleep(0.3)
            return "finished"

        w = telha_jobs.Worker(q, handler, concurrency=1, poll_wait=0.05)
        w.start()
        assert started.wait(20.0)
        w.stop(timeout=20.0)
        assert q.get(job_id).result == "finished"  # type: ignore[union-attr]
        assert w.counts["released"] == 0


WORKER_UNTIL_SIGNAL = """
import sys, threading, telha_jobs
q = telha_jobs.Queue(sys.argv[1], reaper_interval=0)
def handler(job):
    print("handling", job.id, flush=True)
    threading.Event().wait(60)
w = telha_jobs.Worker(q, handler, concurrency=1, poll_wait=0.05, stop_timeout=0.2)
w.run()
print("stopped", w.counts["released"], flush=True)
q.close()
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_sigint_stop_a_running_worker_gracefully(store: Path, sig: int) -> None:
    with telha_jobs.Queue(store, reaper_interval=0) as q:
        job_id = q.enqueue("embed")
    child = spawn(WORKER_UNTIL_SIGNAL, str(store))
    try:
        assert child.stdout is not None
        assert child.stdout.readline().split() == ["handling", job_id]
        os.kill(child.pid, sig)
        out, err = child.communicate(timeout=30)
        assert child.returncode == 0, err
        assert out.split() == ["stopped", "1"]
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
    with telha_jobs.Queue(store, reaper_interval=0) as q:
        info = q.get(job_id)
        assert info is not None and info.state == "pending" and info.attempts == 0


LONG_WAIT = """
import sys, telha_jobs
q = telha_jobs.Queue(sys.argv[1], reaper_interval=0)
print("waiting", flush=True)
try:
    q.lease_next("w", wait=120.0)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_ctrl_c_ends_a_long_lease_wait_promptly(store: Path) -> None:
    child = spawn(LONG_WAIT, str(store))
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "waiting"
        time.sleep(0.3)  # let it block in the wait
        t0 = time.monotonic()
        os.kill(child.pid, signal.SIGINT)
        out, err = child.communicate(timeout=30)
        assert time.monotonic() - t0 < 10.0  # generous: the wait was 120 s
        assert out.strip() == "interrupted", err
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()


def test_cancel_wait_ends_a_lease_wait_from_another_thread(queue: telha_jobs.Queue) -> None:
    cancel = telha_jobs.CancelWait()
    out: list[object] = []
    t = threading.Thread(target=lambda: out.append(queue.lease_next("w", wait=120.0, cancel=cancel)))
    t.start()
    time.sleep(0.1)
    cancel.cancel()
    t.join(10.0)
    assert not t.is_alive() and out == [None] and cancel.cancelled


def test_worker_rejects_bad_arguments(queue: telha_jobs.Queue) -> None:
    with pytest.raises(TypeError):
        telha_jobs.Worker("not a queue", lambda j: None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        telha_jobs.Worker(queue, "not callable")  # type: ignore[arg-type]
    with pytest.raises(telha_jobs.InvalidArgumentError):
        telha_jobs.Worker(queue, lambda j: None, concurrency=0)
    with pytest.raises(telha_jobs.InvalidArgumentError):
        telha_jobs.Worker(queue, lambda j: None, min_prefetch=-1)
    with pytest.raises(TypeError):
        telha_jobs.Worker(queue, lambda j: None, min_prefetch="1")  # type: ignore[arg-type]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_handler_raising_system_exit_hands_its_job_back(target: Target) -> None:
    with target.open(reaper_interval=0) as q:
        job_id = q.enqueue("embed")

        def handler(job: telha_jobs.Job) -> None:
            raise SystemExit(3)

        w = telha_jobs.Worker(q, handler, concurrency=1, poll_wait=0.05)
        w.start()
        wait_for(lambda: w.counts["released"] == 1)
        w.stop(5.0)
        info = q.get(job_id)
        assert info is not None and info.state == "pending" and info.attempts == 0
        assert q.stats()["total"]["leased"] == 0


# -- a lease lost under its handler, leased again by the same Worker (issue 14) --

RELAPSE_SETTINGS: dict[str, Any] = dict(
    lease_ttl=0.3, reaper_interval=0.05, backoff_base=0.01, backoff_factor=1.0, backoff_cap=0.01
)


def hold_the_gil_past(deadline: float) -> None:
    """A first delivery's handler: 0.8 s of pure Python with thread switches
    off (switch interval 5 s), and at least 0.5 s past the lease's deadline
    however late it started: no heartbeat thread runs, so the reaper (every
    50 ms) expires the lease under it."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(5.0)
    try:
        end = max(time.time() + 0.8, deadline + 0.5)
        while time.time() < end:
            pass
    finally:
        sys.setswitchinterval(old)


def check_the_job_completed_by_its_last_delivery(
    local: telha_jobs.Queue,
    job_id: str,
    calls: list[tuple[int, telha_jobs.Lease]],
    lost_at_return: dict[int, bool],
    counts: dict[str, int],
) -> None:
    info = local.get(job_id)
    assert info is not None
    assert info.state == "completed", (
        f"the job ended {info.state} after {info.attempts} attempts (last error: {info.last_error})"
    )
    assert calls[0][0] == 1
    assert "lease_expired" in [e[1] for e in info.events], "the first lease did not expire under its handler"
    assert info.generation >= 2 and len(calls) >= 2
    # The result of the delivery that held the lease last: normally the
    # second (a loaded machine may expire a later one too).
    assert info.result == {"call": info.generation, "generation": info.generation}
    assert info.attempts == info.generation - 1, "every earlier lease expired once"
    # Each earlier delivery's late settle was refused as lost, and none of
    # them touched the delivery that completed.
    assert [g for g, _ in calls] == list(range(1, info.generation + 1))
    assert all(lease.lost for _, lease in calls[:-1])
    assert lost_at_return[info.generation] is False, "the delivery that completed was flagged lost"
    assert counts == {"completed": 1, "failed": 0, "lost": info.generation - 1, "released": 0,
                      "cancelled": 0, "snoozed": 0, "timed_out": 0, "prefetch_released": 0,
                      "errors": 0}


def check_a_relapsed_lease_completes(q: telha_jobs.Queue, local: telha_jobs.Queue) -> None:
    """The first delivery holds the GIL past its TTL (no heartbeat runs, the
    reaper expires the lease), then blocks without the GIL (I/O, say) until
    the same Worker's other thread has leased the job again as generation 2,
    and only then returns. Delivery 1's refused settle must not take
    delivery 2's place: tracked by job id alone, it removed delivery 2's
    lease (never heartbeated again, its result dropped) and the job expired
    attempt after attempt until it was dead. (Returning straight from the
    busy loop does not show it: the thread holding the GIL drops its own
    entry before any other thread can add the new one.)"""
    job_id = q.enqueue("embed")
    calls: list[tuple[int, telha_jobs.Lease]] = []
    lost_at_return: dict[int, bool] = {}  # by generation (a heartbeat in flight may flag it later)
    again = threading.Event()

    def handler(job: telha_jobs.Job) -> Any:
        lease = telha_jobs.current_lease()
        assert lease is not None and lease.job.generation == job.generation
        calls.append((job.generation, lease))
        call = len(calls)
        if call == 1:
            hold_the_gil_past(job.deadline)
            assert again.wait(20.0), "the job was not leased again"
        else:
            again.set()
            time.sleep(1.0)
        lost_at_return[job.generation] = lease.lost
        return {"call": call, "generation": job.generation}

    w = telha_jobs.Worker(q, handler, concurrency=2, poll_wait=0.05)
    w.start()
    try:
        wait_for(lambda: local.get(job_id).state in ("completed", "dead"), timeout=30.0)  # type: ignore[union-attr]
    finally:
        w.stop(5.0)
    check_the_job_completed_by_its_last_delivery(local, job_id, calls, lost_at_return, w.counts)


def test_a_lease_lost_under_its_handler_and_leased_again_completes(target: Target) -> None:
    with target.open(**RELAPSE_SETTINGS) as q:
        check_a_relapsed_lease_completes(q, target.local())


# -- heartbeats follow the granted TTL, not the deadline (issue 13) ---------------


class SkewedJob:
    """Stands in for a Job leased from a server whose clock is an hour
    ahead: its deadline is an hour past this process's clock, its TTL 0.3 s."""

    id = "0190a000-0000-7000-8000-000000000001"
    generation = 1
    lease_ttl = 0.3
    timeout = None

    def __init__(self, skew: float) -> None:
        self.deadline = time.time() + skew + self.lease_ttl


@pytest.mark.parametrize("skew", [3600.0, -3600.0])
def test_a_lease_schedules_heartbeats_from_its_ttl_not_its_deadline(skew: float) -> None:
    from telha_jobs._lease import Lease

    t0 = time.time()
    lease = Lease(SkewedJob(skew))  # type: ignore[arg-type]
    t1 = time.time()
    assert lease.ttl == 0.3
    assert t0 + 0.1 <= lease.next_beat <= t1 + 0.1
    # When it runs out unless renewed, by this process's clock.
    assert t0 + 0.3 <= lease.expires <= t1 + 0.3


def test_a_leased_job_carries_the_ttl_it_was_granted(target: Target) -> None:
    with target.open(reaper_interval=0, lease_ttl=7.5, kinds={"slow": {"lease_ttl": 90.0}}) as q:
        q.enqueue("embed")
        q.enqueue("slow")
        jobs = {j.kind: j for j in q.lease_many("w", 2)}
        assert jobs["embed"].lease_ttl == 7.5 and jobs["slow"].lease_ttl == 90.0

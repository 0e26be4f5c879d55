"""A process killed with SIGKILL while holding a lease loses no job; a second
process gets StoreLockedError naming the path."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

import telha_jobs

from .conftest import spawn

LEASE_AND_HANG = """
import sys, time, telha_jobs
q = telha_jobs.Queue(sys.argv[1], lease_ttl=1.0, reaper_interval=0)
job = q.lease_next("doomed", wait=10.0)
print("leased", job.id, flush=True)
time.sleep(600)
"""


def test_a_job_leased_by_a_killed_process_is_re_leased_and_completed(store: Path) -> None:
    with telha_jobs.Queue(store, reaper_interval=0) as q:
        job_id = q.enqueue("ingest:pdf", {"doc": "a.pdf"})
        others = q.enqueue_many([("embed", i) for i in range(10)])

    child = spawn(LEASE_AND_HANG, str(store))
    try:
        assert child.stdout is not None
        line = child.stdout.readline().split()
        assert line == ["leased", job_id], child.stderr.read() if child.stderr else ""

        # While the child owns the store, this process cannot open it.
        with pytest.raises(telha_jobs.StoreLockedError) as exc:
            telha_jobs.Queue(store)
        assert str(store.resolve()) in str(exc.value) or str(store) in str(exc.value)
        assert exc.value.path is not None and Path(exc.value.path).resolve() == store.resolve()
        assert isinstance(exc.value, telha_jobs.TelhaError)
        assert exc.value.code == "STORE_LOCKED"

        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()

    with telha_jobs.Queue(store, reaper_interval=0, backoff_base=0.05) as q:
        info = q.get(job_id)
        assert info is not None and info.state == "leased" and info.worker_id == "doomed"
        # Every acknowledged enqueue survived the kill.
        assert all(q.get(i) is not None for i in others)
        assert q.lease_next("rescuer", kinds="ingest:*") is None  # still held
        # Wait out the child's 1 s TTL, then let the reaper hand it back.
        assert info.deadline is not None
        time.sleep(max(info.deadline - time.time(), 0) + 0.05)
        assert q.reap()["expired"] == 1
        job = q.lease_next("rescuer", kinds="ingest:*", wait=30.0)  # after its backoff
        assert job is not None and job.id == job_id
        assert job.attempts == 1 and job.generation == 2
        q.complete(job, "done")
        info = q.get(job_id)
        assert info is not None and info.state == "completed" and info.result == "done"
        assert [e[1] for e in info.events] == ["enqueued", "leased", "lease_expired", "leased", "completed"]


def test_a_second_open_in_the_same_process_shares_the_engine(store: Path) -> None:
    a = telha_jobs.Queue(store, reaper_interval=0)
    b = telha_jobs.Queue(store, reaper_interval=0)
    try:
        job_id = a.enqueue("embed", 1)
        job = b.lease_next("w")
        assert job is not None and job.id == job_id
        with pytest.raises(telha_jobs.InvalidArgumentError):
            telha_jobs.Queue(store, reaper_interval=0, max_attempts=9)  # a different config
        a.close()
        with pytest.raises(telha_jobs.QueueClosedError):
            a.enqueue("embed")
        b.complete(job)  # the other handle keeps working
    finally:
        a.close()
        b.close()

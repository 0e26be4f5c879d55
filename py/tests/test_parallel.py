"""Threads really run in parallel: the GIL is released around store calls."""

from __future__ import annotations

import threading
from collections import Counter

import telha_jobs

JOBS = 20_000
THREADS = 8


def test_eight_threads_lease_20000_jobs_with_zero_double_leases(queue: telha_jobs.Queue) -> None:
    for start in range(0, JOBS, 1000):
        queue.enqueue_many([("ingest:pdf", {"n": i}) for i in range(start, start + 1000)])

    leased: list[list[str]] = [[] for _ in range(THREADS)]
    completed: list[list[int]] = [[] for _ in range(THREADS)]
    errors: list[BaseException] = []
    go = threading.Barrier(THREADS)

    def poller(i: int) -> None:
        try:
            go.wait()
            while (job := queue.lease_next(f"w{i}")) is not None:
                leased[i].append(job.id)
                queue.complete(job)
                completed[i].append(job.payload["n"])
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=poller, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    all_leases = [j for per in leased for j in per]
    doubles = [j for j, n in Counter(all_leases).items() if n > 1]
    assert doubles == []
    assert len(all_leases) == JOBS
    assert sorted(n for per in completed for n in per) == list(range(JOBS))
    total = queue.stats()["total"]
    assert total["completed"] == JOBS
    assert total["pending"] == total["leased"] == total["failed"] == total["dead"] == 0
    # Every thread got work: the pollers ran side by side, not one at a time.
    assert all(len(per) > 0 for per in leased)


def test_a_waiting_lease_releases_the_gil(queue: telha_jobs.Queue) -> None:
    result: list[object] = []
    waiter = threading.Thread(
        target=lambda: result.append(queue.lease_next("w", kinds="never", wait=30.0))
    )
    waiter.start()
    # While the waiter blocks in Rust, this thread keeps running Python and
    # using the store: it would stall here if the wait held the GIL.
    for i in range(200):
        queue.enqueue("other", {"i": i})
        job = queue.lease_next("main", kinds="other")
        assert job is not None
        queue.complete(job)
    assert waiter.is_alive()
    queue.enqueue("never")
    waiter.join(10.0)
    assert not waiter.is_alive()
    assert isinstance(result[0], telha_jobs.Job)

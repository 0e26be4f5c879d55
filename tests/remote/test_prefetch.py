"""Issue 15: the Worker on a remote queue leases ahead (PollJobs) and
settles completions in batches. Through a real ``telha serve`` process
(started and stopped here, by pid) with a 2 s lease TTL:

- a prefetched lease that waited past a quarter of its TTL is released
  back, never handed to a handler (every handler starts with at least
  three quarters of a TTL left on the server's deadline);
- completions go in ``complete_many`` batches and each job is completed
  once;
- ``stop()`` sends the completions still gathered in a batch;
- a slow Worker or AsyncWorker (default prefetch) leaves a small backlog
  to a fast Worker: the window follows the handlers (issue 37);
- a worker process killed (SIGKILL) while holding prefetched leases loses
  no job: the leases expire and another worker completes every job once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import telha_jobs
from test_control import TELHA, Proc

HERE = Path(__file__).resolve().parent
TTL_S = 2.0

CONFIG = """
[jobs]
lease_ttl = "2s"
reaper_interval = "100ms"
[jobs.backoff]
base = "50ms"
cap = "50ms"
"""


@contextlib.contextmanager
def serve(tmp_path: Path, config: str) -> Iterator[str]:
    """A `telha serve` process on a fresh store with ``config``; yields its URL."""
    if not Path(TELHA).exists():
        pytest.fail(f"the telha binary is not built at {TELHA} (make build-cli)")
    cfg = tmp_path / "telha.toml"
    cfg.write_text(config)
    env = dict(os.environ, TELHA_JOBS_CONFIG=str(cfg))
    server = Proc([TELHA, "--db", str(tmp_path / "store"), "serve", "--listen", "127.0.0.1:0"], env)
    try:
        line = server.line(60.0)
        assert line.startswith("listening on "), line
        yield line.split("listening on ", 1)[1].strip()
    finally:
        server.stop()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """A `telha serve` process with a 2 s lease TTL; yields its URL."""
    with serve(tmp_path, CONFIG) as url:
        yield url


def wait_for(cond: Any, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, f"not within {timeout} s: {what}"
        time.sleep(0.02)


def completed_once(q: telha_jobs.Queue, ids: list[str]) -> list[telha_jobs.JobInfo]:
    infos = []
    for job_id in ids:
        info = q.get(job_id)
        assert info is not None and info.state == "completed", (job_id, info)
        assert [e[1] for e in info.events].count("completed") == 1, info.events
        infos.append(info)
    return infos


def test_a_prefetched_lease_past_a_quarter_of_its_ttl_is_released_not_run(served: str) -> None:
    q = telha_jobs.connect(served, timeout=10.0)
    ids = [e for e in q.enqueue_many([("slow", {"n": i}) for i in range(6)])]
    starts: list[tuple[str, int, float]] = []

    def handler(job: telha_jobs.Job) -> Any:
        info = q.get(job.id)
        assert info is not None and info.deadline is not None
        # Seconds left on the server's deadline as the handler starts.
        starts.append((job.id, job.generation, info.deadline - time.time()))
        time.sleep(0.8)  # past a quarter of the TTL: what waits behind it goes stale
        return {"n": job.payload["n"]}

    # min_prefetch=prefetch: a fixed window (else the server keeps about
    # 100 ms of these handlers' work ahead: none here).
    w = telha_jobs.Worker(q, handler, concurrency=1, prefetch=5, min_prefetch=5, poll_wait=0.1)
    assert w.prefetch == 5
    w.start()
    try:
        wait_for(lambda: q.stats()["total"]["completed"] == 6, 60.0, "6 jobs completed")
    finally:
        w.stop()
    counts = w.counts
    assert counts["completed"] == 6 and counts["failed"] == 0 and counts["lost"] == 0, counts
    # The jobs waiting behind a 0.8 s handler waited past 0.5 s (a quarter
    # of 2 s): released back unstarted and leased again.
    assert counts["prefetch_released"] >= 1, counts
    infos = completed_once(q, ids)
    assert max(i.generation for i in infos) > 1
    assert all(i.attempts <= 1 for i in infos), [i.attempts for i in infos]
    # No handler started on a lease that had used more than a quarter of
    # its TTL (0.3 s of slack for the calls on a loaded machine).
    assert len(starts) == 6
    assert min(left for _, _, left in starts) >= TTL_S * 0.75 - 0.3, starts
    q.close()


def test_completions_go_in_batches_each_job_completed_once(served: str) -> None:
    q = telha_jobs.connect(served, timeout=10.0)
    n = 2000
    ids: list[str] = []
    for at in range(0, n, 500):
        ids += q.enqueue_many([("fast", {"n": i}) for i in range(at, at + 500)])
    w = telha_jobs.Worker(
        q, lambda job: {"n": job.payload["n"]}, concurrency=4, prefetch=60, settle_batch=50,
        settle_linger=1.0, poll_wait=0.1,
    )
    w.start()
    try:
        wait_for(lambda: q.stats()["total"]["completed"] == n, 120.0, f"{n} jobs completed")
    finally:
        w.stop()
    assert w.counts["completed"] == n and w.counts["prefetch_released"] == 0, w.counts
    batch = w._batch
    assert batch is not None and batch.sent == n
    # Batched: far fewer calls than jobs (a batch goes when full, or when
    # every handler waits with nothing to run).
    assert batch.calls * 4 <= n, (batch.calls, n)
    for info in completed_once(q, ids[:200]):
        assert info.result == {"n": ids.index(info.id)}
    q.close()


def test_stop_sends_the_completions_gathered_in_a_batch(served: str) -> None:
    q = telha_jobs.connect(served, timeout=10.0)
    quick, slow, later = q.enqueue_many([("a", "quick"), ("a", "slow"), ("a", "later")])
    release = threading.Event()

    def handler(job: telha_jobs.Job) -> Any:
        if job.payload == "slow":
            release.wait(30.0)
        return job.payload

    # A linger far past the test: only a full batch, every handler idle, or
    # stop() sends it. A batch lingers only while prefetched leases wait
    # ("later", behind the slow one); the one handler stays busy, so only
    # stop() can send it.
    w = telha_jobs.Worker(q, handler, concurrency=1, prefetch=2, min_prefetch=2, settle_linger=600.0,
                          poll_wait=0.1)
    w.start()
    stopper = None
    try:
        wait_for(lambda: w.counts["completed"] == 0 and q.get(slow).state == "leased"  # type: ignore[union-attr]
                 and q.get(quick).state == "leased", 30.0, "both leased")  # type: ignore[union-attr]
        time.sleep(1.0)
        # The quick job's handler returned long ago; its completion waits in the batch.
        assert q.get(quick).state == "leased"  # type: ignore[union-attr]
        stopper = threading.Thread(target=w.stop, args=(30.0,))
        stopper.start()
        time.sleep(0.2)
        release.set()
        stopper.join(30.0)
        assert not stopper.is_alive()
    finally:
        release.set()
        w.stop()
    assert w.counts["completed"] == 2, w.counts
    infos = completed_once(q, [quick, slow])
    assert [i.result for i in infos] == ["quick", "slow"]
    # Never started: released back (at stop, or as it went stale), no attempt spent.
    info = q.get(later)
    assert info is not None and info.state == "pending" and info.attempts == 0, info
    q.close()


def test_a_killed_worker_process_with_prefetched_leases_loses_no_job(served: str, tmp_path: Path) -> None:
    q = telha_jobs.connect(served, timeout=10.0)
    ids = q.enqueue_many([("k", {"n": i}) for i in range(20)])
    # A worker process whose handler hangs on its first job while its
    # stream prefetches 8 more; killed without a chance to release them.
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    p = subprocess.Popen([sys.executable, str(HERE / "prefetch_worker.py"), served, "hang"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "ready"
        wait_for(lambda: q.stats()["total"]["leased"] == 9, 30.0, "9 leases held by the process")
        held = [j.id for j in q.list(state="leased", limit=100)]
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
    assert len(held) == 9
    w = telha_jobs.Worker(q, lambda job: "done", concurrency=2, poll_wait=0.1)
    w.start()
    try:
        # The killed process's leases expire (2 s) and are leased again.
        wait_for(lambda: q.stats()["total"]["completed"] == 20, 60.0, "20 jobs completed")
    finally:
        w.stop()
    infos = completed_once(q, ids)
    again = {i.id: i.generation for i in infos if i.id in held}
    assert all(g >= 2 for g in again.values()), again
    assert w.counts["completed"] == 20, w.counts
    q.close()


def test_the_async_worker_leases_ahead_and_batches_too(served: str) -> None:
    from telha_jobs.aio import AsyncQueue, AsyncWorker

    q = telha_jobs.connect(served, timeout=10.0)
    n = 1000
    ids = q.enqueue_many([("async", {"n": i}) for i in range(n)])

    async def handle(job: telha_jobs.Job) -> Any:
        await asyncio.sleep(0)
        return {"n": job.payload["n"]}

    async def main() -> AsyncWorker:
        w = AsyncWorker(AsyncQueue(q), handle, concurrency=4, prefetch=40, settle_batch=32,
                        settle_linger=1.0, poll_wait=0.1)
        assert w.prefetch == 40
        run = asyncio.ensure_future(w.run())
        end = time.monotonic() + 120.0
        while q.stats()["total"]["completed"] < n:
            assert time.monotonic() < end and not run.done(), q.stats()
            await asyncio.sleep(0.02)
        await w.stop()
        await run
        return w

    w = asyncio.run(main())
    assert w.counts["completed"] == n and w.counts["prefetch_released"] == 0, w.counts
    assert w.settle_sent == n and w.settle_calls * 4 <= n, (w.settle_calls, n)
    for info in completed_once(q, ids[:100]):
        assert info.result == {"n": ids.index(info.id)}
    assert q.stats()["total"]["leased"] == 0
    q.close()


class Slow:
    """A Worker (``"sync"``) or an AsyncWorker (``"async"``, on a loop in a
    thread of its own) of concurrency 1 and the default prefetch (256),
    whose handler takes ``secs`` a job."""

    def __init__(self, kind: str, q: telha_jobs.Queue, secs: float) -> None:
        from telha_jobs.aio import AsyncQueue, AsyncWorker

        self.ran = 0
        self.kind = kind
        if kind == "sync":
            def handler(job: telha_jobs.Job) -> None:
                self.ran += 1
                time.sleep(secs)

            self.worker: Any = telha_jobs.Worker(q, handler, worker_id="slow", concurrency=1, poll_wait=0.1)
            self.worker.start()
            return

        async def ahandler(job: telha_jobs.Job) -> None:
            self.ran += 1
            await asyncio.sleep(secs)

        self.loop = asyncio.new_event_loop()
        self.worker = AsyncWorker(AsyncQueue(q), ahandler, worker_id="slow", concurrency=1, poll_wait=0.1)
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self.worker.run(),))
        self.thread.start()

    def stop(self) -> None:
        if self.kind == "sync":
            self.worker.stop()
            return
        asyncio.run_coroutine_threadsafe(self.worker.stop(), self.loop).result(60.0)
        self.thread.join(60.0)
        assert not self.thread.is_alive()
        self.loop.close()


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_slow_worker_leaves_a_small_backlog_to_a_fast_one(tmp_path: Path, kind: str) -> None:
    """The window follows the handlers (issue 37): a Worker of concurrency
    1 whose handler takes 200 ms asks for floor = 1, so the server leases it
    about one job at a time instead of its whole default window (257), and
    a fast Worker that comes later takes most of a backlog of 20. Without
    the floor the slow one leased all 20 at once and the fast one got none
    (a 60 s TTL here: no prefetched lease goes stale and comes back)."""
    with serve(tmp_path, '[jobs]\nlease_ttl = "60s"\nreaper_interval = "100ms"\n') as url:
        q = telha_jobs.connect(url, timeout=10.0)
        ids = q.enqueue_many([("share", {"n": i}) for i in range(20)])
        slow = Slow(kind, q, 0.2)
        assert slow.worker.prefetch == 256 and slow.worker.min_prefetch == 0
        fast_ran = 0

        def fast_handler(job: telha_jobs.Job) -> None:
            nonlocal fast_ran
            fast_ran += 1

        fast = telha_jobs.Worker(q, fast_handler, worker_id="fast", concurrency=1, poll_wait=0.1)
        try:
            # The slow stream is open and its first job running: what it
            # leased by now it leased with nobody else asking.
            wait_for(lambda: slow.ran >= 1, 30.0, "the slow worker's first job")
            held = q.stats()["total"]["leased"]
            fast.start()
            wait_for(lambda: q.stats()["total"]["completed"] == 20, 60.0, "20 jobs completed")
        finally:
            fast.stop()
            slow.stop()
        assert held <= 3, f"the slow worker held {held} of 20"
        assert fast_ran >= 15 and fast_ran + slow.ran == 20, (fast_ran, slow.ran)
        assert slow.worker.counts["prefetch_released"] == 0, slow.worker.counts
        completed_once(q, ids)
        with pytest.raises(telha_jobs.InvalidArgumentError):
            telha_jobs.Worker(q, lambda job: None, prefetch=4, min_prefetch=5)
        with pytest.raises(telha_jobs.InvalidArgumentError):
            telha_jobs.Worker(q, lambda job: None, prefetch=0, min_prefetch=1)
        q.close()

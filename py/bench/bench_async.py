"""AsyncWorker throughput (issue 52): ``asyncio.sleep(0.005)`` handlers at
rising concurrency beside the ideal (concurrency x 200/s), and a no-op
handler beside the threaded Worker's; each on a fresh embedded store with
its backlog enqueued before the clock starts."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import telha_jobs
from telha_jobs.aio import AsyncQueue, AsyncWorker

PAYLOAD = b'{"doc":"s3://bucket/key/0001.pdf","tenant":42,"pages":12}'

# (concurrency, seconds of work at the ideal rate the backlog is sized for)
SLEEP_ROWS = [1, 16, 64, 500, 2000]
NOOP_CONCURRENCY = 64
HANDLER_S = 0.005


def backlog(q: telha_jobs.Queue, n: int) -> None:
    for i in range(0, n, 1000):
        q.enqueue_many([("bench", PAYLOAD)] * min(1000, n - i))


def jobs_for(concurrency: int, sleep: bool) -> int:
    """About a second at the ideal rate, at least 1,000 jobs, at most 40,000."""
    ideal = concurrency / HANDLER_S if sleep else 40_000
    return int(min(40_000, max(1_000, ideal * 1.0)))


def async_rate(path: Path, concurrency: int, sleep: bool) -> float:
    q = telha_jobs.Queue(path, reaper_interval=0)
    n = jobs_for(concurrency, sleep)
    backlog(q, n)

    async def handler(job: telha_jobs.Job) -> None:
        if sleep:
            await asyncio.sleep(HANDLER_S)

    async def main() -> float:
        aq = AsyncQueue(q)
        done = asyncio.Event()
        w = AsyncWorker(aq, handler, concurrency=concurrency, poll_wait=0.05)

        # Counted from the worker's own completions: no store call per check.
        async def watch() -> None:
            while w.counts["completed"] < n:
                await asyncio.sleep(0.002)
            done.set()

        t = time.perf_counter()
        runner = asyncio.create_task(w.run())
        watcher = asyncio.create_task(watch())
        await done.wait()
        elapsed = time.perf_counter() - t
        await w.stop(5.0)
        await runner
        await watcher
        aq._pool.shutdown(wait=False)
        return n / elapsed

    try:
        return asyncio.run(main())
    finally:
        q.close()


def loop_ceiling(concurrency: int) -> float:
    """The same handlers with no queue at all: ``concurrency`` tasks that
    each ``await asyncio.sleep(0.005)`` in turn, as many times in all as
    the row has jobs. What this loop on this machine allows, right now (a
    loaded machine wakes a 5 ms sleep late)."""
    n = jobs_for(concurrency, True)

    async def main() -> float:
        done = 0

        async def one() -> None:
            nonlocal done
            while done < n:
                done += 1
                await asyncio.sleep(HANDLER_S)

        t = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(concurrency)))
        return n / (time.perf_counter() - t)

    return asyncio.run(main())


def thread_rate(path: Path, concurrency: int) -> float:
    """The threaded Worker with a no-op handler, the same backlog."""
    q = telha_jobs.Queue(path, reaper_interval=0)
    n = jobs_for(concurrency, False)
    backlog(q, n)
    w = telha_jobs.Worker(q, lambda job: None, concurrency=concurrency, poll_wait=0.05)
    t = time.perf_counter()
    w.start()
    while w.counts["completed"] < n:
        time.sleep(0.001)
    elapsed = time.perf_counter() - t
    w.stop(5.0)
    q.close()
    return n / elapsed


def figures(base: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    for c in SLEEP_ROWS:
        out[f"async_sleep_{c}"] = async_rate(base / f"async-sleep-{c}", c, True)
        out[f"loop_sleep_{c}"] = loop_ceiling(c)
    out["async_noop"] = async_rate(base / "async-noop", NOOP_CONCURRENCY, False)
    out["thread_noop"] = thread_rate(base / "thread-noop", 4)
    return out


def report(py: dict[str, float], core_batch: float) -> list[str]:
    """Print the rows; return the targets missed."""
    short: list[str] = []
    print(f"AsyncWorker, asyncio.sleep({HANDLER_S}) handlers (issue 52), jobs/s; 'no queue': the same")
    print("sleeps in bare tasks, the ceiling this loop and machine allow in this run:")
    print(f"  {'concurrency':>11}{'AsyncWorker':>14}{'ideal':>11}{'ratio':>8}{'no queue':>11}{'ratio':>8}  target")
    last = 0.0
    for c in SLEEP_ROWS:
        got = py[f"async_sleep_{c}"]
        ideal = c / HANDLER_S
        goal = ""
        if c in (16, 64):
            ok = got >= 0.8 * ideal
            goal = f">= 0.8x ideal {'ok' if ok else 'BELOW'}"
        elif c == 500:
            floor = min(20_000.0, core_batch)
            ok = got >= floor
            goal = f">= {floor:,.0f}/s (20,000 or the core's batched lifecycle) {'ok' if ok else 'BELOW'}"
        else:
            ok = True
        if c > 1 and got < last:
            goal += f"; FELL from {last:,.0f}"
            ok = False
        if not ok:
            short.append(f"AsyncWorker at concurrency {c}")
        bare = py[f"loop_sleep_{c}"]
        print(f"  {c:>11}{got:>14,.0f}{ideal:>11,.0f}{got / ideal:>7.2f}x{bare:>11,.0f}{bare / ideal:>7.2f}x  {goal}")
        last = max(last, got)
    print(f"  {'core batched lifecycle (enqueue_many + lease_many + complete_many, Rust)':<74}{core_batch:>10,.0f}")
    a, t = py["async_noop"], py["thread_noop"]
    mark = "ok" if a >= t else "BELOW"
    print(f"  {f'no-op handler: AsyncWorker, concurrency {NOOP_CONCURRENCY}':<48}{a:>10,.0f}")
    print(f"  {'no-op handler: Worker, 4 threads':<48}{t:>10,.0f}   AsyncWorker >= Worker {mark}")
    if a < t:
        short.append("AsyncWorker no-op")
    return short


def median_figures(runs: list[dict[str, float]]) -> dict[str, Any]:
    import statistics

    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}

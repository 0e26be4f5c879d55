"""AsyncWorker ÷ threads Worker with a no-op handler (issue 52), the two
alternating round by round on fresh embedded stores, with CPU per job
(``os.times()`` over the timed part), and optionally the
``asyncio.sleep(0.005)`` rows at concurrency 16 and 64. Run it under
``chrt -f 1`` on a shared machine so rounds compare:

    chrt -f 1 python py/bench/bench_async_noop.py --rounds 7 [--sleep]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import telha_jobs
from telha_jobs.aio import AsyncQueue, AsyncWorker

from bench_async import HANDLER_S, NOOP_CONCURRENCY, backlog, jobs_for


def cpu() -> float:
    t = os.times()
    return t.user + t.system


def async_rate(path: Path, concurrency: int, sleep: bool) -> tuple[float, float]:
    """(jobs/s, µs of process CPU per job)."""
    q = telha_jobs.Queue(path, reaper_interval=0)
    n = jobs_for(concurrency, sleep)
    backlog(q, n)

    async def handler(job: telha_jobs.Job) -> None:
        if sleep:
            await asyncio.sleep(HANDLER_S)

    async def main() -> tuple[float, float]:
        aq = AsyncQueue(q)
        w = AsyncWorker(aq, handler, concurrency=concurrency, poll_wait=0.05)
        c0, t = cpu(), time.perf_counter()
        runner = asyncio.create_task(w.run())
        while w.counts["completed"] < n:
            await asyncio.sleep(0.002)
        elapsed, used = time.perf_counter() - t, cpu() - c0
        await w.stop(5.0)
        await runner
        aq._pool.shutdown(wait=False)
        return n / elapsed, used / n * 1e6

    try:
        return asyncio.run(main())
    finally:
        q.close()


def thread_rate(path: Path, concurrency: int) -> tuple[float, float]:
    q = telha_jobs.Queue(path, reaper_interval=0)
    n = jobs_for(NOOP_CONCURRENCY, False)
    backlog(q, n)
    w = telha_jobs.Worker(q, lambda job: None, concurrency=concurrency, poll_wait=0.05)
    c0, t = cpu(), time.perf_counter()
    w.start()
    while w.counts["completed"] < n:
        time.sleep(0.001)
    elapsed, used = time.perf_counter() - t, cpu() - c0
    w.stop(5.0)
    q.close()
    return n / elapsed, used / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sleep", action="store_true", help="also the asyncio.sleep rows at 16 and 64")
    a = ap.parse_args()
    ratios: list[float] = []
    rows: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="telha-py-bench") as d:
        for r in range(a.rounds):
            aw = async_rate(Path(d) / f"a{r}", NOOP_CONCURRENCY, False)
            tw = thread_rate(Path(d) / f"t{r}", 4)
            rows.setdefault("async", []).append(aw)
            rows.setdefault("threads", []).append(tw)
            ratios.append(aw[0] / tw[0])
            print(f"round {r}: AsyncWorker {aw[0]:8,.0f}/s {aw[1]:5.1f} µs/job   "
                  f"Worker {tw[0]:8,.0f}/s {tw[1]:5.1f} µs/job   ratio {ratios[-1]:.2f}", flush=True)
            if a.sleep:
                for c in (16, 64):
                    s = async_rate(Path(d) / f"s{c}-{r}", c, True)
                    rows.setdefault(f"sleep {c}", []).append(s)
                    print(f"round {r}: sleep, concurrency {c}: {s[0]:8,.0f}/s ({s[0] * HANDLER_S / c:.2f}x ideal)", flush=True)
    for k, v in rows.items():
        rate, per = statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)
        print(f"median {k}: {rate:,.0f}/s, {per:.1f} µs of CPU per job")
    print(f"AsyncWorker ÷ Worker, no-op: median {statistics.median(ratios):.2f} "
          f"({min(ratios):.2f}–{max(ratios):.2f}); load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

"""Python binding benchmark (`make bench`): each figure in jobs/s beside the
Rust core's figure for the same workload, measured in the same run by the
core's `bench_ref` example (same 60-byte payload, reaper off).

    python py/bench/bench.py --ref "cargo run --release -q -p telha-jobs --example bench_ref --" [--n 20000]

Targets: batch forms >= 0.8x Rust, single calls >= 0.5x Rust (issue 15:
single `enqueue` >= 0.8x, `lease_next` + `complete` >= 0.7x; issue 37: a
small dict's `enqueue` >= 0.8x the core's, the Worker at concurrency 4 >=
1.0x this process's 4-thread hand loop). After the
table, where a single call's time goes: a bare binding call, the GIL
released and taken back around it, and a payload converted (bytes, and the
plain dict the 60 bytes decode to), in microseconds per call beside the
core's time per enqueue and per lease + complete pair.

    python py/bench/bench.py --json [--n 20000] [--batch 100]

measures one round of the two figures of `make bench`'s table
(scripts/bench_table.py) and prints them as one JSON object: "lifecycle"
(enqueue + lease_next + complete, one job at a time) and "batch_lifecycle"
(enqueue_many, lease_many, then complete each: the Python Queue has no
complete_many).

After them, AsyncWorker's rates (bench_async.py, issue 52): handlers that
``await asyncio.sleep(0.005)`` at concurrency 1 to 2,000 beside the ideal
(concurrency x 200/s) and the core's batched lifecycle, and a no-op handler
beside the threaded Worker's; ``--async-only`` measures just those (with the
core's figures for the comparison).
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import bench_async
import telha_jobs

# bench_ref.rs's PAYLOAD, byte for byte.
PAYLOAD = b'{"doc":"s3://bucket/key/0001.pdf","tenant":42,"pages":12}'


def rate(n: int, fn: Callable[[], None]) -> float:
    t = time.perf_counter()
    fn()
    return n / (time.perf_counter() - t)


# PAYLOAD as the plain object a caller passes instead of bytes.
PAYLOAD_OBJ = json.loads(PAYLOAD)


def call_costs(n: int) -> dict[str, float]:
    """Microseconds per call of the crossings a store call makes, without
    the store (telha_jobs._native._call_cost)."""
    from telha_jobs import _native

    probe = _native._call_cost

    def us(fn: Callable[[], None]) -> float:
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) / n * 1e6

    def loop(payload: object = None, detach: bool = False) -> Callable[[], None]:
        def run() -> None:
            for _ in range(n):
                probe(payload, detach)
        return run

    def empty() -> None:
        for _ in range(n):
            pass

    return {
        "loop": us(empty),
        "call": us(loop()),
        "detach": us(loop(detach=True)),
        "bytes": us(loop(PAYLOAD)),
        "object": us(loop(PAYLOAD_OBJ)),
    }


def python_figures(base: Path, n: int, batch: int) -> dict[str, float]:
    def store(name: str) -> telha_jobs.Queue:
        return telha_jobs.Queue(base / name, reaper_interval=0)

    out: dict[str, float] = {}
    q = store("single")

    def enqueue() -> None:
        for _ in range(n):
            q.enqueue("bench", PAYLOAD)

    out["enqueue"] = rate(n, enqueue)


    def lease_complete() -> None:
        for _ in range(n):
            job = q.lease_next("w")
            assert job is not None
            q.complete(job)

    out["lease_complete"] = rate(n, lease_complete)
    q.close()

    q = store("single_dict")

    def enqueue_dict() -> None:
        for _ in range(n):
            q.enqueue("bench", PAYLOAD_OBJ)

    out["enqueue_dict"] = rate(n, enqueue_dict)
    q.close()

    q = store("batch")

    def enqueue_batch() -> None:
        items = [("bench", PAYLOAD)] * batch
        for _ in range(n // batch):
            q.enqueue_many(items)

    out["enqueue_batch"] = rate(n // batch * batch, enqueue_batch)

    def lease_batch_complete() -> None:
        done = 0
        while done < n // batch * batch:
            jobs = q.lease_many("w", batch)
            assert jobs, f"backlog ran dry at {done}"
            for job in jobs:
                q.complete(job)
            done += len(jobs)

    out["lease_batch_complete"] = rate(n // batch * batch, lease_batch_complete)
    q.close()

    q = store("lifecycle")

    def lifecycle() -> None:
        for _ in range(n):
            q.enqueue("bench", PAYLOAD)
            job = q.lease_next("w")
            assert job is not None
            q.complete(job)

    out["lifecycle"] = rate(n, lifecycle)
    q.close()

    q = store("pollers")
    for _ in range(n // 1000):
        q.enqueue_many([("bench", PAYLOAD)] * 1000)

    def pollers4() -> None:
        def poll(w: int) -> None:
            while (job := q.lease_next(f"w{w}")) is not None:
                q.complete(job)

        ts = [threading.Thread(target=poll, args=(w,)) for w in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    out["pollers4"] = rate(n // 1000 * 1000, pollers4)
    q.close()

    q = store("worker")
    total = n // 1000 * 1000
    for _ in range(total // 1000):
        q.enqueue_many([("bench", PAYLOAD)] * 1000)
    worker = telha_jobs.Worker(q, lambda job: None, concurrency=4, poll_wait=0.05)

    def worker4() -> None:
        worker.start()
        while q.stats()["total"]["completed"] < total:
            time.sleep(0.001)

    out["worker4"] = rate(total, worker4)
    worker.stop(5.0)
    q.close()
    return out


def table_figures(base: Path, n: int, batch: int) -> dict[str, float]:
    """The two figures of `make bench`'s table, one round."""
    out: dict[str, float] = {}
    q = telha_jobs.Queue(base / "lifecycle", reaper_interval=0)

    def lifecycle() -> None:
        for _ in range(n):
            q.enqueue("bench", PAYLOAD)
            job = q.lease_next("w")
            assert job is not None
            q.complete(job)

    out["lifecycle"] = rate(n, lifecycle)
    q.close()

    q = telha_jobs.Queue(base / "batch_lifecycle", reaper_interval=0)
    items = [("bench", PAYLOAD)] * batch

    def batch_lifecycle() -> None:
        for _ in range(n // batch):
            q.enqueue_many(items)
            jobs = q.lease_many("w", batch)
            assert len(jobs) == batch, f"lease_many took {len(jobs)} of {batch}"
            for job in jobs:
                q.complete(job)

    out["batch_lifecycle"] = rate(n // batch * batch, batch_lifecycle)
    q.close()
    return out


ROWS: list[tuple[str, str, str, float | None]] = [
    # (label, python key, rust key, target ratio)
    ("enqueue, 1 call per job", "enqueue", "enqueue", 0.5),
    ("enqueue_many ({batch} per call)", "enqueue_batch", "enqueue_batch", 0.8),
    ("lease_next + complete", "lease_complete", "lease_complete", 0.5),
    ("lease_many({batch}) + complete each", "lease_batch_complete", "lease_batch_complete", 0.8),
    ("lifecycle enqueue -> lease -> complete", "lifecycle", "lifecycle", 0.5),
    ("4 threads lease_next + complete", "pollers4", "pollers4", 0.5),
    # The Worker adds per-job bookkeeping (lease registry, contextvar,
    # heartbeat); beside Rust's 4 bare pollers, for scale, with no target.
    ("Worker, 4 threads (no-op handler)", "worker4", "pollers4", None),
]


# Issue 15's targets for the single calls.
ISSUE15: list[tuple[str, str, str, float]] = [
    ("enqueue, 1 call per job", "enqueue", "enqueue", 0.8),
    ("lease_next + complete", "lease_complete", "lease_complete", 0.7),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", help="command printing the Rust reference JSON (bench_ref)")
    ap.add_argument("--json", action="store_true", help="one round of the table's two figures, as JSON (no reference)")
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3, help="alternating Rust/Python rounds; the median of each figure is shown")
    ap.add_argument("--async-only", action="store_true", help="only the AsyncWorker rows (and the core's figures)")
    a = ap.parse_args()
    if a.json:
        with tempfile.TemporaryDirectory(prefix="telha-py-bench") as d:
            figures = table_figures(Path(d), a.n, a.batch)
        print(json.dumps({"n": a.n, "batch": a.batch, **{k: round(v) for k, v in figures.items()}}))
        return
    if not a.ref:
        ap.error("--ref is required (unless --json)")

    # The machines are shared and noisy: alternate the two sides and keep
    # each figure's median round, so one side is not measured in a lull and
    # the other in a storm, and one lucky round does not set the figure.
    rust_runs: list[dict[str, float]] = []
    py_runs: list[dict[str, float]] = []
    cost_runs: list[dict[str, float]] = []
    async_runs: list[dict[str, float]] = []
    for r in range(a.rounds):
        with tempfile.TemporaryDirectory(prefix="telha-py-bench") as d:
            cmd = [*shlex.split(a.ref), "--n", str(a.n), "--batch", str(a.batch), "--dir", d]
            got = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            rust_runs.append({k: float(v) for k, v in got.items()})
            if not a.async_only:
                py_runs.append(python_figures(Path(d) / f"py{r}", a.n, a.batch))
                cost_runs.append(call_costs(4 * a.n))
            async_runs.append(bench_async.figures(Path(d) / f"async{r}"))
    rust = {k: statistics.median(run[k] for run in rust_runs) for k in rust_runs[0]}
    if a.async_only:
        print(f"telha-jobs AsyncWorker benchmark: median of {a.rounds} rounds, Rust core measured in the same run")
        short = bench_async.report(bench_async.median_figures(async_runs), rust["batch_lifecycle"])
        if short:
            print(f"below target this run: {', '.join(short)}")
        return
    py = {k: statistics.median(run[k] for run in py_runs) for k in py_runs[0]}

    print(
        f"telha-jobs Python benchmark: {a.n} jobs, 60-byte payload, jobs/s, median of {a.rounds} "
        "alternating rounds; Rust core measured in the same run"
    )
    print(f"{'figure':<42}{'Python':>12}{'Rust':>12}{'ratio':>9}  target")
    short = []
    for label, pk, rk, target in ROWS:
        ratio = py[pk] / rust[rk]
        if target is None:
            goal = "(no target)"
        else:
            goal = f">= {target}x " + ("ok" if ratio >= target else "BELOW")
            if ratio < target:
                short.append(label.format(batch=a.batch))
        print(f"{label.format(batch=a.batch):<42}{py[pk]:>12,.0f}{rust[rk]:>12,.0f}{ratio:>8.2f}x  {goal}")
    print(f"{'raw RocksDB single-put batch (ceiling)':<42}{'':>12}{rust['raw_put']:>12,.0f}")
    for label, pk, rk, target in ISSUE15:
        ratio = py[pk] / rust[rk]
        mark = "ok" if ratio >= target else "BELOW"
        print(f"issue 15: {label:<32}{ratio:>6.2f}x  >= {target}x {mark}")
        if ratio < target:
            short.append(f"{label} (issue 15)")
    # Issue 37: a small dict's single enqueue beside the core's (bytes)
    # enqueue, and the Worker beside this process's own 4-thread hand loop.
    for label, num, den, target in (
        ("enqueue of a small dict vs the core's enqueue", py["enqueue_dict"], rust["enqueue"], 0.8),
        ("Worker(concurrency=4) vs the 4-thread hand loop", py["worker4"], py["pollers4"], 1.0),
    ):
        ratio = num / den
        print(f"issue 37: {label:<48}{ratio:>6.2f}x  >= {target}x " + ("ok" if ratio >= target else "BELOW"))
        if ratio < target:
            short.append(f"{label} (issue 37)")
    cost = {k: statistics.median(run[k] for run in cost_runs) for k in cost_runs[0]}
    print("where a single call's time goes (us per call, median of the rounds):")
    print(f"  {'a bare binding call (guard, arguments, answer)':<58}{cost['call'] - cost['loop']:>7.3f}")
    print(f"  {'+ the GIL released and taken back (every store call)':<58}{cost['detach'] - cost['call']:>7.3f}")
    print(f"  {'+ a 60-byte bytes payload copied':<58}{cost['bytes'] - cost['call']:>7.3f}")
    print(f"  {'+ the same payload as a dict, encoded':<58}{cost['object'] - cost['call']:>7.3f}")
    print(f"  {'Python enqueue (bytes payload), whole call':<58}{1e6 / py['enqueue']:>7.3f}")
    print(f"  {'Rust core enqueue':<58}{1e6 / rust['enqueue']:>7.3f}")
    print(f"  {'Python lease_next + complete, whole pair':<58}{1e6 / py['lease_complete']:>7.3f}")
    print(f"  {'Rust core lease_next + complete':<58}{1e6 / rust['lease_complete']:>7.3f}")
    short += bench_async.report(bench_async.median_figures(async_runs), rust["batch_lifecycle"])
    if short:
        print(f"below target this run: {', '.join(short)}")


if __name__ == "__main__":
    main()

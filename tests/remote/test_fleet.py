"""Issue #8's fleet: 4 Python worker processes and 2 Node worker processes
lease 20,000 jobs from one server; zero double leases, each job completed
exactly once.

The server is this test process: an embedded queue served in-process
(``Queue.serve``). The workers are child processes started and stopped (by
pid) here, each recording every lease it got: (job id, generation, worker,
lease time, settle time, accepted). Run by ``make test`` (mk/remote.mk).
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import telha_jobs

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
JOBS = 20_000
DEADLINE_S = 300.0  # generous: the fleet takes well under a minute

# (language, mode): Python and Node each run the Worker class and a
# hand-written lease / complete loop (Python also one that completes in batches).
FLEET = [
    ("py", "loop"),
    ("py", "batch"),
    ("py", "worker"),
    ("py", "worker"),
    ("node", "loop"),
    ("node", "worker"),
]


def start(lang: str, mode: str, n: int, url: str, records: Path) -> tuple[str, subprocess.Popen[str]]:
    worker = f"{lang}-{mode}-{n}"
    if lang == "py":
        cmd = [sys.executable, str(HERE / "py_worker.py"), url, worker, mode, str(records)]
    else:
        cmd = ["node", str(HERE / "node_worker.js"), url, worker, mode, str(records)]
    env = dict(os.environ, PYTHONUNBUFFERED="1", TELHA_NODE_PKG=str(ROOT / "node"))
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    return worker, p


def stop_all(procs: list[tuple[str, subprocess.Popen[str]]]) -> None:
    for _, p in procs:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGTERM)
    for _, p in procs:
        try:
            p.wait(30.0)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()


def test_six_worker_processes_in_two_languages_share_20000_jobs_with_zero_double_leases(
    tmp_path: Path,
) -> None:
    # A TTL far longer than the run: every lease is settled by its holder, so
    # a second lease of a job could only be a double lease.
    local = telha_jobs.Queue(tmp_path / "store", lease_ttl=120.0, reaper_interval=1.0)
    server = local.serve("127.0.0.1:0")
    procs: list[tuple[str, subprocess.Popen[str]]] = []
    files: dict[str, Path] = {}
    try:
        for n, (lang, mode) in enumerate(FLEET):
            records = tmp_path / f"records-{n}.jsonl"
            worker, p = start(lang, mode, n, server.url, records)
            procs.append((worker, p))
            files[worker] = records
        for worker, p in procs:
            assert p.stdout is not None
            line = p.stdout.readline().strip()
            assert line == "ready", f"{worker} did not start: {line!r} {p.stderr.read() if p.stderr else ''}"

        # Enqueued through a client too, in batches, while the fleet polls.
        producer = telha_jobs.connect(server.url)
        ids: list[str] = []
        for start_at in range(0, JOBS, 500):
            ids += producer.enqueue_many([("embed", {"n": i}) for i in range(start_at, start_at + 500)])
        assert len(set(ids)) == JOBS

        t0 = time.monotonic()
        end = t0 + DEADLINE_S
        while local.stats()["total"]["completed"] < JOBS:
            assert time.monotonic() < end, f"not done in {DEADLINE_S} s: {local.stats()['total']}"
            for worker, p in procs:
                assert p.poll() is None, f"{worker} exited early ({p.returncode}): {p.stderr.read() if p.stderr else ''}"
            time.sleep(0.05)
        took = time.monotonic() - t0
        producer.close()
    finally:
        stop_all(procs)
        server.stop(grace=2.0)
    for worker, p in procs:
        assert p.returncode == 0, f"{worker} exit {p.returncode}: {p.stderr.read() if p.stderr else ''}"

    records: list[dict[str, Any]] = []
    for worker, f in files.items():
        for line in f.read_text().splitlines():
            r = json.loads(line)
            assert r["worker"] == worker
            records.append(r)
    by_job: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in records:
        by_job[r["id"]].append(r)
    assert set(by_job) == set(ids), "a job was never leased, or an unknown one was"

    # The server's final word on each job: completed, by whom, under which lease.
    final: dict[str, telha_jobs.JobInfo] = {}
    after: telha_jobs.JobInfo | None = None
    while True:
        page = local.list(state="completed", limit=10_000, after=after)
        final.update((j.id, j) for j in page)
        if len(page) < 10_000:
            break
        after = page[-1]
    assert len(final) == JOBS and local.stats()["total"]["completed"] == JOBS

    double = []
    for job_id, rs in by_job.items():
        info = final[job_id]
        # Zero double leases: no (job, generation) handed out twice, and no
        # two leases of one job held at the same time.
        gens = [r["gen"] for r in rs]
        if len(set(gens)) != len(gens):
            double.append((job_id, rs))
            continue
        rs.sort(key=lambda r: r["leased_at"])
        for a, b in zip(rs, rs[1:]):
            # b leased while a still held the job; fine only if a's lease had
            # expired (then a's settle was refused), never with this TTL.
            if b["leased_at"] < a["settled_at"] and a["ok"] is not False:
                double.append((job_id, rs))
        # Completed exactly once: the accepted lease is the one the server
        # recorded, and the loops saw every other settle refused.
        accepted = [r for r in rs if r["ok"] is True or (r["ok"] is None and r["gen"] == info.generation)]
        assert len(accepted) == 1, (job_id, rs)
        assert accepted[0]["worker"] == info.worker_id and accepted[0]["gen"] == info.generation
        assert info.result == {"by": info.worker_id}
        assert [e[1] for e in info.events].count("completed") == 1
    assert not double, f"{len(double)} jobs leased twice at once, e.g. {double[:3]}"

    per_worker = collections.Counter(r["worker"] for r in records)
    print(
        f"\nfleet: {JOBS} jobs enqueued and completed in {took:.1f} s ({JOBS / took:,.0f} jobs/s);"
        f" {len(records)} leases; per worker: {dict(per_worker)}"
    )
    assert all(per_worker[w] > 0 for w, _ in procs), f"a worker got no jobs: {per_worker}"
    local.close()

"""Issue 18 across processes: a Node producer enqueues 1,000 jobs and waits
for each (``q.wait(id, { timeoutMs })``); two Python Worker processes
complete them; a real ``telha serve`` owns the store. Every wait must
answer the right result, a job that goes dead must answer its error, and a
wait with a short timeout on a job nobody works must come back at about the
timeout, pending. Then the same from Python: ``wait`` and ``subscribe``
through ``connect()``.

Every process is started and stopped here, by pid (tests/remote/
wait_worker.py, node_producer.js).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

import telha_jobs
from telha_jobs.aio import AsyncQueue
from test_control import TELHA, Proc

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
JOBS = 1000
FAILING = sum(1 for n in range(JOBS) if n % 97 == 7)  # node_producer.js marks these

CONFIG = """
[jobs]
lease_ttl = "3s"
reaper_interval = "200ms"
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """A `telha serve` process on a fresh store; yields its URL."""
    if not Path(TELHA).exists():
        pytest.fail(f"the telha binary is not built at {TELHA} (make build-cli)")
    cfg = tmp_path / "telha.toml"
    cfg.write_text(CONFIG)
    env = dict(os.environ, TELHA_JOBS_CONFIG=str(cfg))
    p = Proc([TELHA, "--db", str(tmp_path / "store"), "serve", "--listen", "127.0.0.1:0"], env)
    try:
        line = p.line(60.0)
        assert line.startswith("listening on "), line
        yield line.split("listening on ", 1)[1].strip()
    finally:
        p.stop()


def workers(url: str, n: int) -> list[Proc]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    procs = [Proc([sys.executable, str(HERE / "wait_worker.py"), url, f"py-wait-{i}"], env) for i in range(n)]
    for w in procs:
        assert w.line(60.0) == "ready"
    return procs


def test_a_node_producer_waits_for_1000_jobs_python_workers_complete(server: str) -> None:
    procs = workers(server, 2)
    control = telha_jobs.connect(server, timeout=10.0)
    # Paused until the producer's waits are in place: they are woken by
    # the completions, not answered at once.
    control.pause(kind="calc")
    try:
        env = dict(os.environ, TELHA_NODE_PKG=str(ROOT / "node"))
        t0 = time.monotonic()
        producer = Proc(["node", str(HERE / "node_producer.js"), server, str(JOBS)], env)
        try:
            assert producer.event("waiting", 120.0)["waiting"] > 0
            assert control.stats()["total"]["pending"] == JOBS
            time.sleep(0.5)
            control.resume(kind="calc")
            out = producer.event("completed", 600.0)
            producer.p.wait(60.0)  # it closes its queue and exits
        finally:
            producer.stop()
        took = time.monotonic() - t0
        assert producer.p.returncode == 0, producer.p.stderr.read() if producer.p.stderr else ""
        print(f"\nnode producer: {out} ({took:.1f} s)")
        assert out["bad"] == 0, out["badSample"]
        assert (out["completed"], out["dead"]) == (JOBS - FAILING, FAILING)
        assert out["allMs"] >= 500  # the first waits waited out the pause
        # The short wait came back at its timeout with the current state.
        assert out["idleState"] == "pending"
        assert 250 <= out["idleMs"] < 3000, out
        assert out["aborted"] is not None and out["abortMs"] < 3000, out
    finally:
        for w in procs:
            w.stop()
    counts = [w.event("completed", 15.0) for w in procs]  # each Worker's counts, printed on SIGTERM
    assert sum(c["completed"] for c in counts) == JOBS - FAILING, counts
    assert sum(c["failed"] for c in counts) == FAILING, counts
    assert all(c["completed"] > 0 for c in counts), counts  # both workers took part
    assert all(w.p.returncode == 0 for w in procs)
    total = control.stats()["total"]
    assert (total["completed"], total["dead"], total["pending"]) == (JOBS - FAILING, FAILING, 1)
    control.close()


def test_python_waits_and_subscribes_through_telha_serve(server: str) -> None:
    procs = workers(server, 1)
    try:
        with telha_jobs.connect(server, timeout=10.0) as q:
            sub = q.subscribe(kinds="calc", transitions=["completed", "dead"])
            ids = q.enqueue_many([("calc", {"n": n, "fail": n == 3}) for n in range(10)])
            infos = [q.wait(i, timeout=60.0) for i in ids]
            assert [i.state for i in infos] == ["completed"] * 3 + ["dead"] + ["completed"] * 6
            assert infos[3].last_error == "PermanentError: bad 3"
            assert [i.result["sq"] for i in infos if i.state == "completed"] == [
                n * n for n in range(10) if n != 3
            ]
            ends = []
            while len(ends) < 10:
                ev = sub.next(timeout=30.0)
                assert ev is not None, ends
                ends.append((ev.job_id, ev.transition))
            assert sorted(ends) == sorted((i.id, "dead" if i.state == "dead" else "completed") for i in infos)
            sub.close()
            idle = q.enqueue("idle")
            t0 = time.monotonic()
            assert q.wait(idle, timeout=0.3).state == "pending"
            assert 0.25 <= time.monotonic() - t0 < 3.0

            async def main() -> telha_jobs.JobInfo:
                return await AsyncQueue(q).enqueue_and_wait("calc", {"n": 12}, timeout=60.0)

            assert asyncio.run(main()).result["sq"] == 144
    finally:
        for w in procs:
            w.stop()

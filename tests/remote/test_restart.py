"""Issue 36 (d): worker processes ride out a `telha serve` that is SIGKILLed
and restarted three times on the same store, alternating between the two
addresses of their endpoint list. One Python and one Node Worker (one job
at a time) work 600 jobs; the test kills the server when 20 %, 40 % and
60 % are done. Zero errors reach the Workers (no `errors`, no lost
leases), every job is completed, and the ledger the handlers keep shows
each job run exactly once (no double lease).

Every process is started and stopped here, by pid.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import socket
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import telha_jobs
from test_control import TELHA, Proc

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
JOBS = 600

CONFIG = """
[jobs]
lease_ttl = "5s"
reaper_interval = "200ms"
"""


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_server(db: Path, port: int, env: dict[str, str]) -> Proc:
    p = Proc([TELHA, "--db", str(db), "serve", "--listen", f"127.0.0.1:{port}"], env)
    line = p.line(60.0)
    assert line.startswith("listening on "), line
    return p


def completed(q: telha_jobs.Queue) -> int:
    return int(q.stats()["total"]["completed"])


def wait_completed(q: telha_jobs.Queue, n: int, timeout: float) -> None:
    end = time.monotonic() + timeout
    while completed(q) < n:
        assert time.monotonic() < end, f"{completed(q)} of {n} completed after {timeout} s"
        time.sleep(0.05)


def test_workers_ride_out_three_server_kills_with_no_error_and_no_double_run(tmp_path: Path) -> None:
    if not Path(TELHA).exists():
        pytest.fail(f"the telha binary is not built at {TELHA} (make build-cli)")
    cfg = tmp_path / "telha.toml"
    cfg.write_text(CONFIG)
    env = dict(os.environ, TELHA_JOBS_CONFIG=str(cfg))
    db = tmp_path / "store"
    ports = [free_port(), free_port()]
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    server = start_server(db, ports[0], env)
    ledger = tmp_path / "ledger.jsonl"
    wenv = dict(os.environ, PYTHONUNBUFFERED="1", TELHA_NODE_PKG=str(ROOT / "node"))
    workers: list[Proc] = []
    try:
        q = telha_jobs.connect(urls, timeout=20.0)
        for n in range(JOBS):
            q.enqueue("restart", {"n": n})
        workers = [
            Proc([sys.executable, str(HERE / "restart_worker.py"), ",".join(urls), "py-1", str(ledger)], wenv),
            Proc(["node", str(HERE / "restart_worker.js"), ",".join(urls), "node-1", str(ledger)], wenv),
        ]
        for w in workers:
            assert w.line(60.0) == "ready"
        for k in range(3):
            wait_completed(q, JOBS * (k + 1) // 5, 120.0)
            os.kill(server.p.pid, signal.SIGKILL)
            server.p.wait()
            server = start_server(db, ports[(k + 1) % 2], env)
            print(f"kill {k + 1}: restarted on {urls[(k + 1) % 2]} at {completed(q)} completed")
        wait_completed(q, JOBS, 180.0)
        counts = []
        for w in workers:
            w.stop()
            counts.append(w.event("completed", 30.0) if w is workers[0] else w.event("counts", 30.0)["counts"])
        print("worker counts:", counts)
        for c in counts:
            assert c["errors"] == 0, counts
            assert c["lost"] == 0, counts
        assert sum(c["completed"] for c in counts) == JOBS, counts
        runs = Counter(json.loads(line)["id"] for line in ledger.read_text().splitlines())
        assert len(runs) == JOBS
        assert set(runs.values()) == {1}, [i for i, n in runs.items() if n > 1]
        stats = q.stats()["total"]
        assert stats["completed"] == JOBS, stats
        retries = [line for line in q.metrics().splitlines() if line.startswith("telha_client_retries_total")]
        print("the test's own client:", retries)
        q.close()
    finally:
        for w in workers:
            w.stop()
        server.stop()


def test_python_and_node_connect_refuse_a_bad_list_naming_the_item() -> None:
    for bad, says in [
        (["http://127.0.0.1:1", ""], "item 2 is empty"),
        ("http://127.0.0.1:1,http://127.0.0.1:1", "repeats item 1"),
        (["http://127.0.0.1:1", "ftp://127.0.0.1:2"], "ftp://127.0.0.1:2"),
    ]:
        with pytest.raises(telha_jobs.InvalidArgumentError, match=says):
            telha_jobs.connect(bad, timeout=1.0)
    script = (
        "const { Queue } = require(process.env.TELHA_NODE_PKG);"
        "Queue.connect(['http://127.0.0.1:1', ''], { timeoutMs: 1000 })"
        ".then(() => process.exit(1), (e) => { console.log(e.code + ' ' + e.message); })"
    )
    out = subprocess.run(
        ["node", "-e", script],
        env=dict(os.environ, TELHA_NODE_PKG=str(ROOT / "node")),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out
    assert out.stdout.startswith("INVALID_ARGUMENT") and "item 2 is empty" in out.stdout, out

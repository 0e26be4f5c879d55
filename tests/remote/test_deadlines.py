"""Issue 48: every remote call ends by its deadline whatever the server does.

Two servers that stop answering:

- a *silent listener* (a Python socket here that accepts TCP connections
  and never reads or writes a byte);
- a real ``telha serve`` paused with SIGSTOP (the kernel still accepts
  connections into its backlog and buffers what clients send).

Python (``connect(url, timeout=2)``), Node (``Queue.connect(url,
{ timeoutMs: 2000 })``, tests/remote/deadline_client.js) and the CLI
(``telha --server URL --timeout 2s``) calls against them fail with the
transport's error kind within their deadline plus ``SLACK_S`` (the
contract under test; the slack is for a loaded 2-core machine), and succeed
again once the server is continued (SIGCONT). A Python ``Worker`` whose
server is paused for 10 s does not run a job twice at once (it flags the
lease lost on its own clock once the TTL has passed unrenewed, before the
server can hand the job out again), and stops within its ``stop_timeout``
when asked during a pause.

Every process and listener is started and stopped here: a paused server is
always continued (SIGCONT) and then stopped, by pid, in ``finally``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import telha_jobs
from test_control import HERE, ROOT, TELHA, Proc

TIMEOUT_S = 2.0
SLACK_S = 1.0
# With timeout 2 s the client pings a silent connection after 2 s and drops
# it when the ping is not answered 2 s later.
KEEP_ALIVE_S = 2 * TIMEOUT_S

CONFIG = """
[jobs]
lease_ttl = "2s"
reaper_interval = "100ms"
[jobs.backoff]
base = "50ms"
cap = "50ms"
"""


class Served:
    """A ``telha serve`` process that the test can pause and continue."""

    def __init__(self, proc: Proc, url: str) -> None:
        self.proc = proc
        self.url = url
        self.pid = proc.p.pid

    def pause(self) -> None:
        os.kill(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.pid, signal.SIGCONT)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    if not Path(TELHA).exists():
        pytest.fail(f"the telha binary is not built at {TELHA} (make build-cli)")
    cfg = tmp_path / "telha.toml"
    cfg.write_text(CONFIG)
    env = dict(os.environ, TELHA_JOBS_CONFIG=str(cfg))
    proc = Proc([TELHA, "--db", str(tmp_path / "store"), "serve", "--listen", "127.0.0.1:0"], env)
    try:
        line = proc.line(60.0)
        assert line.startswith("listening on "), line
        yield Served(proc, line.split("listening on ", 1)[1].strip())
    finally:
        # A stopped process keeps SIGTERM pending: continue it first.
        if proc.p.poll() is None:
            os.kill(proc.p.pid, signal.SIGCONT)
        proc.stop()


@pytest.fixture
def silent() -> Iterator[str]:
    """A listener that accepts every connection and never answers."""
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(64)
    held: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            try:
                conn, _ = lsock.accept()
            except OSError:
                return
            held.append(conn)

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{lsock.getsockname()[1]}"
    finally:
        done.set()
        lsock.close()
        t.join(5.0)
        for c in held:
            c.close()


def fails_in_time(what: str, limit: float, call: Callable[[], Any]) -> str:
    """``call()`` raises UnavailableError within ``limit`` + SLACK_S; its message."""
    start = time.monotonic()
    with pytest.raises(telha_jobs.UnavailableError) as e:
        call()
    took = time.monotonic() - start
    print(f"{what}: UnavailableError after {took:.2f} s (deadline {limit:.1f} s): {e.value}")
    assert took <= limit + SLACK_S, f"{what}: {took:.2f} s, deadline {limit} s: {e.value}"
    return str(e.value)


def test_python_connect_to_a_silent_listener_fails_by_its_timeout(silent: str) -> None:
    msg = fails_in_time("connect", TIMEOUT_S, lambda: telha_jobs.connect(silent, timeout=TIMEOUT_S))
    assert "timed out after 2.0 s" in msg and silent in msg, msg


def test_python_calls_to_a_paused_server_fail_by_their_deadline_then_work_again(served: Served) -> None:
    q = telha_jobs.connect(served.url, timeout=TIMEOUT_S)
    job = q.enqueue("idle", b"x")
    assert q.stats()["total"]["pending"] == 1
    served.pause()
    try:
        msg = fails_in_time("stats", TIMEOUT_S, q.stats)
        assert "timed out after 2.0 s" in msg and served.url in msg, msg
        fails_in_time("enqueue", TIMEOUT_S, lambda: q.enqueue("idle", b"y"))
        fails_in_time("lease_next(wait=1)", 1 + TIMEOUT_S, lambda: q.lease_next("w", kinds="busy", wait=1))
        fails_in_time("wait(job, 1)", 1 + TIMEOUT_S, lambda: q.wait(job, timeout=1))
        fails_in_time("subscribe", TIMEOUT_S, lambda: q.subscribe())
        # A Worker's poll over connect(): its PollJobs stream opens in start().
        w = telha_jobs.Worker(q, lambda job: None, kinds="busy", poll_wait=1)
        fails_in_time("Worker.start (PollJobs)", TIMEOUT_S, w.start)
        fails_in_time("a new connect", TIMEOUT_S, lambda: telha_jobs.connect(served.url, timeout=TIMEOUT_S))
    finally:
        served.resume()
    # Continued: the same client works again (reconnecting if keep-alive
    # dropped the connection meanwhile), and so does a new one.
    assert q.stats()["total"]["pending"] >= 1
    q.enqueue("busy", b"z")
    got = q.lease_next("w", kinds="busy", wait=1)
    assert got is not None
    q.complete(got)
    assert q.wait(job, timeout=0).state == "pending"
    sub = q.subscribe(kinds="busy")
    q.enqueue("busy", b"again")
    assert sub.next(timeout=10) is not None
    sub.close()
    assert telha_jobs.connect(served.url, timeout=TIMEOUT_S).stats() is not None


def test_python_open_streams_end_when_the_server_goes_silent(served: Served) -> None:
    q = telha_jobs.connect(served.url, timeout=TIMEOUT_S)
    sub = q.subscribe()
    stream = q._poll_jobs("w", 4, kinds="busy")
    q.enqueue("other", b"x")
    assert sub.next(timeout=10) is not None
    served.pause()
    try:
        start = time.monotonic()
        # The event stream: next(timeout) answers None while the stream is
        # quiet, then raises once keep-alive has dropped the connection.
        with pytest.raises(telha_jobs.StorageError) as e:
            while sub.next(timeout=0.5) is None:
                assert time.monotonic() - start <= KEEP_ALIVE_S + SLACK_S, "the event stream is still open"
        took = time.monotonic() - start
        print(f"WatchEvents stream: StorageError {took:.2f} s after the pause: {e.value}")
        assert took <= KEEP_ALIVE_S + SLACK_S
        # The PollJobs stream on the same (dropped) connection ends too.
        with pytest.raises(telha_jobs.UnavailableError):
            while stream.next_batch(0.2) == []:
                assert time.monotonic() - start <= KEEP_ALIVE_S + SLACK_S, "the PollJobs stream is still open"
    finally:
        served.resume()
    assert q.stats() is not None


def test_cli_against_a_silent_listener_and_a_paused_server(silent: str, served: Served) -> None:
    def cli(url: str, *args: str, limit: float) -> subprocess.CompletedProcess[str]:
        start = time.monotonic()
        r = subprocess.run([TELHA, "--server", url, *args], capture_output=True, text=True, timeout=60)
        took = time.monotonic() - start
        print(f"telha {' '.join(args)} at {url}: exit {r.returncode} after {took:.2f} s: {r.stderr.strip()}")
        assert took <= limit + SLACK_S, (took, r.stderr)
        return r

    r = cli(silent, "--timeout", "2s", "jobs", "ls", limit=TIMEOUT_S)
    assert r.returncode == 4 and "timed out after 2.0 s" in r.stderr, r.stderr
    # Without --timeout, connecting is still bounded (10 s).
    r = cli(silent, "jobs", "stats", limit=10.0)
    assert r.returncode == 4, r.stderr
    r = cli(served.url, "--timeout", "2s", "jobs", "stats", limit=TIMEOUT_S)
    assert r.returncode == 0, r.stderr
    served.pause()
    try:
        r = cli(served.url, "--timeout", "2s", "jobs", "stats", limit=TIMEOUT_S)
        assert r.returncode == 4 and "timed out after 2.0 s" in r.stderr, r.stderr
        env_r = subprocess.run(
            [TELHA, "--server", served.url, "jobs", "ls"],
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(os.environ, TELHA_TIMEOUT="2s"),
        )
        assert env_r.returncode == 4 and "timed out after 2.0 s" in env_r.stderr, env_r.stderr
    finally:
        served.resume()
    r = cli(served.url, "--timeout", "2s", "jobs", "stats", limit=TIMEOUT_S)
    assert r.returncode == 0, r.stderr


def test_node_against_a_silent_listener_and_a_paused_server(silent: str, served: Served) -> None:
    env = dict(os.environ, TELHA_NODE_PKG=str(ROOT / "node"))
    # The Node client pauses and continues the server itself (and continues
    # it in its own finally); ours below covers a client that died.
    try:
        r = subprocess.run(
            ["node", str(HERE / "deadline_client.js"), served.url, silent, str(served.pid), str(TIMEOUT_S * 1000)],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
    finally:
        served.resume()
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout.strip().splitlines()[-1])
    print(f"node: {report}")
    for check in report["checks"]:
        assert check["code"] == "UNAVAILABLE", check
        assert check["took_ms"] <= check["deadline_ms"] + SLACK_S * 1000, check
    assert report["after_resume"] == "ok", report


def test_a_worker_paused_past_its_ttl_does_not_run_a_job_twice_and_stops_in_time(served: Served) -> None:
    q = telha_jobs.connect(served.url, timeout=1.0)
    runs: list[tuple[str, float, float, bool]] = []  # job id, start, end, saw lost
    lock = threading.Lock()

    def handler(job: telha_jobs.Job) -> str:
        lease = telha_jobs.current_lease()
        start = time.monotonic()
        lost = False
        with lock:
            again = any(r[0] == job.id for r in runs)
        # A first run works for up to 15 s, checking its lease as a long
        # handler should; a run after that finishes at once.
        while not again and time.monotonic() - start < 15.0:
            if lease.lost:
                lost = True
                break
            time.sleep(0.05)
        with lock:
            runs.append((job.id, start, time.monotonic(), lost))
        return "done"

    job = q.enqueue("long", b"x")
    w = telha_jobs.Worker(q, handler, kinds="long", concurrency=1, poll_wait=1, stop_timeout=3.0)
    w.start()
    paused_at = resumed_at = 0.0
    try:
        deadline = time.monotonic() + 10
        while q.get(job).state != "leased":
            assert time.monotonic() < deadline, "the job was never leased"
            time.sleep(0.05)
        served.pause()
        paused_at = time.monotonic()
        time.sleep(10.0)  # the pause under test: five TTLs
    finally:
        served.resume()
        resumed_at = time.monotonic()
    try:
        # After the pause the server re-leases the expired job (to this
        # worker, its only one); it runs again, to completion.
        end = time.monotonic() + 40
        while q.get(job).state != "completed":
            assert time.monotonic() < end, f"not completed: {q.get(job)} {runs}"
            time.sleep(0.1)
    finally:
        w.stop(5.0)
    with lock:
        mine = sorted((r for r in runs if r[0] == job), key=lambda r: r[1])
    print(f"runs: {[(round(s - paused_at, 2), round(e - paused_at, 2), lost) for _, s, e, lost in mine]}")
    assert len(mine) >= 2, mine
    # The first run gave up during the pause, before the server came back
    # (so before anyone could lease the job again): no two runs overlap.
    assert mine[0][3] and mine[0][2] < resumed_at, mine
    for a, b in zip(mine, mine[1:]):
        assert a[2] <= b[1], f"runs overlap: {a} {b}"
    info = q.get(job)
    assert [e[1] for e in info.events].count("completed") == 1, info.events

    # Stop during a pause: a job running, the server silent.
    job2 = q.enqueue("long", b"y")
    w2 = telha_jobs.Worker(q, handler, kinds="long", concurrency=1, poll_wait=1, stop_timeout=3.0)
    w2.start()
    try:
        end = time.monotonic() + 10
        while q.get(job2).state != "leased":
            assert time.monotonic() < end, "the second job was never leased"
            time.sleep(0.05)
        served.pause()
        start = time.monotonic()
        w2.stop()
        took = time.monotonic() - start
    finally:
        served.resume()
    print(f"Worker.stop during a pause: {took:.2f} s (stop_timeout 3 s)")
    assert took <= 3.0 + SLACK_S, took
    assert w2.join(0), "the worker did not report stopped"

"""What only a remote queue has: serving and connecting, tokens, TLS, a
server that goes away, a client killed mid-job, a server whose clock differs
from the client's. (The suites for the queue itself, the payloads, the
errors and both Workers run against a remote queue too: conftest's
``target`` / ``queue`` fixtures are parametrised over local and remote.)"""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import telha_jobs
from telha_jobs.aio import AsyncQueue, AsyncWorker

from .conftest import spawn

from .test_worker import wait_for

Served = tuple[telha_jobs.Queue, telha_jobs.Server]


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """``serve(**settings)``: an embedded queue with those settings, served
    on a free loopback port in this process. Stopped and closed after the test."""
    opened: list[Served] = []

    def start(token: str | None = None, **settings: Any) -> Served:
        settings.setdefault("reaper_interval", 0)
        local = telha_jobs.Queue(tmp_path / f"store{len(opened)}", **settings)
        server = local.serve("127.0.0.1:0", token=token)
        opened.append((local, server))
        return local, server

    yield start
    for local, server in opened:
        server.stop(grace=1.0)
        local.close()


# -- the remote queue itself ---------------------------------------------------


def test_serve_and_connect_in_one_process_share_the_queue(serve: Callable[..., Served]) -> None:
    local, server = serve()
    with server, telha_jobs.connect(server.url) as remote:
        assert isinstance(remote, telha_jobs.Queue) and remote.remote and not local.remote
        assert remote.path is None and local.path is not None
        assert remote.location == server.url and server.url == f"http://{server.address}"
        assert repr(remote) == f"telha_jobs.connect('{server.url}')"
        job_id = local.enqueue("embed", {"doc": 1})
        job = remote.lease_next("remote-1", wait=5.0)
        assert job is not None and job.id == job_id and job.payload == {"doc": 1}
        assert job.worker_id == "remote-1" and job.generation == 1
        assert remote.extend([job], "remote-1") == [True]
        remote.complete(job, {"ok": True})
        info = local.get(job_id)
        assert info is not None and info.state == "completed" and info.result == {"ok": True}
        assert remote.get(job_id).result == {"ok": True}  # type: ignore[union-attr]
        assert remote.stats()["total"]["completed"] == 1
        assert "telha_jobs" in remote.metrics()
        with pytest.raises(telha_jobs.InvalidArgumentError, match="embedded"):
            remote.serve("127.0.0.1:0")
    # The server stopped; the host's queue is still open, the client is cut off.
    assert not server.running and not local.closed
    assert local.stats()["total"]["completed"] == 1


def test_serve_with_metrics_listen_answers_prometheus_text(serve: Callable[..., Served]) -> None:
    local, _ = serve()
    local.enqueue("embed")
    with local.serve("127.0.0.1:0", metrics_listen="127.0.0.1:0") as server:
        assert server.metrics_address is not None
        with urllib.request.urlopen(f"http://{server.metrics_address}/metrics", timeout=10) as r:
            text = r.read().decode()
        assert "telha_jobs" in text and 'state="pending"' in text
    assert local.serve("127.0.0.1:0").metrics_address is None


def test_a_server_dropped_without_stop_stops(serve: Callable[..., Served]) -> None:
    local, _ = serve()
    server = local.serve("127.0.0.1:0")
    url = server.url
    assert telha_jobs.connect(url).stats()["total"]["pending"] == 0
    del server
    gc.collect()
    with pytest.raises(telha_jobs.UnavailableError):
        telha_jobs.connect(url, timeout=2.0).stats()
    assert not local.closed


def test_a_wrong_or_missing_token_is_refused_clearly(serve: Callable[..., Served]) -> None:
    _, server = serve(token="s3cret-token")
    for token in ("wrong", None):
        with pytest.raises(telha_jobs.InvalidArgumentError, match="(?i)unauthenticated|token"):
            telha_jobs.connect(server.url, token, timeout=5.0).stats()
    with telha_jobs.connect(server.url, "s3cret-token") as ok:
        assert ok.enqueue("embed")
        assert ok.stats()["total"]["pending"] == 1


def test_an_unreachable_server_is_a_clear_error_not_a_hang() -> None:
    t0 = time.monotonic()
    with pytest.raises(telha_jobs.UnavailableError, match="127.0.0.1:9"):
        telha_jobs.connect("http://127.0.0.1:9", timeout=1.0).stats()
    assert time.monotonic() - t0 < 30.0
    with pytest.raises(telha_jobs.InvalidArgumentError):
        telha_jobs.connect("not a url at all")


def test_serve_refuses_bad_addresses(serve: Callable[..., Served], tmp_path: Path) -> None:
    local, _ = serve()
    with pytest.raises(telha_jobs.InvalidArgumentError, match="nowhere"):
        local.serve("nowhere")
    with pytest.raises(telha_jobs.InvalidArgumentError, match="tls"):
        local.serve("127.0.0.1:0", tls_cert=tmp_path / "cert.pem")
    with pytest.raises(TypeError):
        local.serve(7450)  # type: ignore[arg-type]


# -- Workers over a remote queue -------------------------------------------------


def test_a_worker_cut_off_from_its_server_flags_its_lease_lost(
    serve: Callable[..., Served],
) -> None:
    # The network dies instead of the worker: no heartbeat gets through, so
    # the lease runs out on the server, and the handler is told when it does.
    local, server = serve(lease_ttl=1.0)
    q = telha_jobs.connect(server.url, timeout=1.0)
    job_id = q.enqueue("embed")
    held: list[telha_jobs.Lease] = []

    def handler(job: telha_jobs.Job) -> None:
        lease = telha_jobs.current_lease()
        assert lease is not None
        held.append(lease)
        lease.wait_lost(30.0)

    w = telha_jobs.Worker(q, handler, concurrency=1, poll_wait=0.05)
    w.start()
    wait_for(lambda: bool(held))
    deadline = held[0].job.deadline
    server.stop(grace=0)
    wait_for(lambda: held[0].lost, timeout=20.0)
    assert time.time() >= deadline - 0.05, "flagged lost while the lease was still good"
    w.stop(1.0)
    assert local.reap()["expired"] == 1  # the server side agrees: nobody renewed it
    info = local.get(job_id)
    assert info is not None and info.state == "pending" and info.attempts == 1
    q.close()


def test_the_async_queue_and_worker_over_a_remote_queue(serve: Callable[..., Served]) -> None:
    local, server = serve()

    async def main() -> list[Any]:
        async with await AsyncQueue.connect(server.url) as aq:
            ids = [await aq.enqueue("embed", {"n": n}) for n in range(5)]
            seen: list[Any] = []

            async def handler(job: telha_jobs.Job) -> Any:
                seen.append(job.payload["n"])
                return job.payload["n"] + 1

            w = AsyncWorker(aq, handler, concurrency=2, poll_wait=0.05)
            task = asyncio.create_task(w.run())
            while len(seen) < 5 or (await aq.stats())["total"]["completed"] < 5:
                await asyncio.sleep(0.02)
            await w.stop()
            await task
            return [(await aq.get(i)).result for i in ids]  # type: ignore[union-attr]

    assert asyncio.run(main()) == [1, 2, 3, 4, 5]


# -- a client killed mid-job -----------------------------------------------------------

HOLD_LEASE = """
import sys, time, telha_jobs
q = telha_jobs.connect(sys.argv[1])
job = q.lease_next("doomed", wait=30.0)
print(job.token if job else "none", flush=True)
time.sleep(120)
"""


def test_a_client_killed_mid_job_loses_its_lease_to_another_client(
    serve: Callable[..., Served],
) -> None:
    local, server = serve(lease_ttl=1.0, reaper_interval=0.1, backoff_base=0.001)
    job_id = local.enqueue("embed", {"doc": 7})
    child = spawn(HOLD_LEASE, server.url)
    try:
        assert child.stdout is not None
        token = child.stdout.readline().strip()
        assert token.startswith(job_id), (token, child.stderr.read() if child.stderr else "")
        assert local.get(job_id).state == "leased"  # type: ignore[union-attr]
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(10.0) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
    rescuer = telha_jobs.connect(server.url)
    # No heartbeats come any more: the lease expires after its 1 s TTL and
    # another client leases the job.
    job = rescuer.lease_next("rescuer", wait=20.0)
    assert job is not None and job.id == job_id and job.generation == 2
    # The dead client's token, replayed (a resumed process, a retried request).
    with pytest.raises(telha_jobs.LeaseLostError):
        rescuer.complete(token, "from the grave")
    assert rescuer.extend([token], "doomed") == [False]
    rescuer.complete(job, "rescued")
    info = local.get(job_id)
    assert info is not None and info.state == "completed" and info.result == "rescued"
    assert info.attempts == 1 and "expired" in (info.last_error or "")
    rescuer.close()


# -- a server whose clock is an hour ahead -------------------------------------

SKEWED_SERVER = """
import sys, telha_jobs
q = telha_jobs.Queue(sys.argv[1], lease_ttl=1.0, reaper_interval=0.05, backoff_base=60.0)
server = q.serve("127.0.0.1:0")
print(server.url, flush=True)
sys.stdin.read()
server.stop(grace=1.0)
q.close()
"""


@pytest.mark.parametrize("flavour", ["Worker", "AsyncWorker"])
def test_workers_heartbeat_from_the_ttl_when_the_servers_clock_is_ahead(tmp_path: Path, flavour: str) -> None:
    # The deadlines this client sees are an hour past its own clock; a
    # Worker that took `deadline - now` for the TTL would heartbeat in 20
    # minutes and lose the 1 s lease under its handler.
    faketime = shutil.which("faketime")
    if faketime is None:
        pytest.skip("faketime is needed (make py-venv installs it)")
    env = dict(os.environ, PYTHONUNBUFFERED="1", FAKETIME_DONT_FAKE_MONOTONIC="1")
    child = subprocess.Popen(
        [faketime, "-f", "+1h", sys.executable, "-c", SKEWED_SERVER, str(tmp_path / "store")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
    )
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        assert url.startswith("http://"), url
        with telha_jobs.connect(url, timeout=10.0) as q:
            job_id = q.enqueue("embed")
            seen: list[tuple[float, bool]] = []

            def hold(job: telha_jobs.Job) -> list[bool]:
                lease = telha_jobs.current_lease()
                assert lease is not None
                seen.append((job.deadline - time.time(), lease.lost))
                return [lease.lost]

            if flavour == "Worker":
                def handler(job: telha_jobs.Job) -> str:
                    for _ in range(30):  # 3 s: three TTLs
                        hold(job)
                        time.sleep(0.1)
                    return "held"

                with telha_jobs.Worker(q, handler, concurrency=1, poll_wait=0.05):
                    wait_for(lambda: q.get(job_id).state != "leased" and bool(seen), timeout=30.0)  # type: ignore[union-attr]
            else:
                async def ahandler(job: telha_jobs.Job) -> str:
                    for _ in range(30):
                        hold(job)
                        await asyncio.sleep(0.1)
                    return "held"

                async def main() -> None:
                    aq = AsyncQueue(q)
                    w = AsyncWorker(aq, ahandler, concurrency=1, poll_wait=0.05)
                    runner = asyncio.create_task(w.run())
                    end = time.monotonic() + 30.0
                    while time.monotonic() < end:
                        info = await aq.get(job_id)
                        if seen and info is not None and info.state != "leased":
                            break
                        await asyncio.sleep(0.05)
                    await w.stop(5.0)
                    await asyncio.wait_for(runner, 10.0)
                    aq._pool.shutdown(wait=False)

                asyncio.run(main())
            assert seen and seen[0][0] > 3000, "the server's clock is not ahead"
            info = q.get(job_id)
            assert info is not None
            assert info.state == "completed" and info.result == "held", (info.state, info.last_error)
            assert info.attempts == 0 and [e[1] for e in info.events] == ["enqueued", "leased", "completed"]
            assert not any(lost for _, lost in seen)
    finally:
        if child.stdin is not None:
            child.stdin.close()
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


# -- TLS ---------------------------------------------------------------------------


def test_serve_over_tls_and_connect_trusting_its_certificate(
    serve: Callable[..., Served], tmp_path: Path
) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is needed to make a test certificate")
    # A CA, and a server certificate it signs (webpki refuses a CA
    # certificate used as the server's own).
    ca, ca_key = tmp_path / "ca.pem", tmp_path / "ca-key.pem"
    cert, key, csr = tmp_path / "cert.pem", tmp_path / "key.pem", tmp_path / "req.csr"
    ext = tmp_path / "ext.cnf"
    ext.write_text("basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n")

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=telha test CA",
        "-keyout", str(ca_key), "-out", str(ca))
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(csr))
    run("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
        "-days", "2", "-extfile", str(ext), "-out", str(cert))
    local, _ = serve()
    with local.serve("127.0.0.1:0", tls_cert=cert, tls_key=key) as server:
        assert server.url == f"https://{server.address}"
        with telha_jobs.connect(server.url, ca_cert=ca, timeout=5.0) as remote:
            job_id = remote.enqueue("embed", {"tls": True})
            assert local.get(job_id).payload == {"tls": True}  # type: ignore[union-attr]
        # Without trusting the certificate, the client refuses the server.
        with pytest.raises(telha_jobs.TelhaError):
            telha_jobs.connect(server.url, timeout=5.0).stats()

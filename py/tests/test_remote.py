"""A remote queue (``telha_jobs.connect`` to a ``Queue.serve`` in this
process) behaves like a local one: the same API cases run against it, errors
map to the same classes, the Worker heartbeats and stops the same way, and a
client killed mid-job loses its lease to another client."""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import signal
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import telha_jobs
from telha_jobs.aio import AsyncQueue, AsyncWorker

from .conftest import spawn

# The core API cases, run again here against a remote queue: this module's
# `queue` fixture (below) overrides conftest's, so each imported test gets a
# client of a server instead of an embedded store.
from .test_errors import (  # noqa: F401
    test_a_handler_error_type_never_escapes_as_a_crash,
    test_settling_an_unknown_job_is_not_found,
)
from .test_payload import (  # noqa: F401
    test_a_payload_written_by_another_language_reads_as_a_dict,
    test_bytes_pass_through_untouched,
    test_tuples_encode_as_lists,
    test_values_round_trip_through_a_job,
)
from .test_parallel import test_a_waiting_lease_releases_the_gil  # noqa: F401
from .test_semantics import (  # noqa: F401
    test_a_delayed_job_is_leased_only_once_due,
    test_complete_many_completes_a_batch_and_reports_each_lost_lease,
    test_a_repeated_idempotency_key_returns_the_existing_job,
    test_lease_many_takes_a_batch,
    test_list_pages_with_after,
    test_metrics_and_stats_count_the_jobs,
    test_priority_kinds_and_scopes_select_what_is_leased,
    test_release_returns_a_job_without_spending_an_attempt,
    test_retry_brings_a_dead_job_back_with_attempts_reset,
    test_run_at_takes_epoch_seconds_or_a_datetime,
)
from .test_aio import check_an_async_relapsed_lease_completes
from .test_worker import (  # noqa: F401
    RELAPSE_SETTINGS,
    check_a_relapsed_lease_completes,
    test_cancel_wait_ends_a_lease_wait_from_another_thread,
    test_worker_rejects_bad_arguments,
    wait_for,
)

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


@pytest.fixture
def queue(serve: Callable[..., Served]) -> Iterator[telha_jobs.Queue]:
    _, server = serve()
    q = telha_jobs.connect(server.url, timeout=10.0)
    yield q
    q.close()


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
    with pytest.raises(telha_jobs.StorageError):
        telha_jobs.connect(url, timeout=2.0).stats()
    assert not local.closed


def test_a_stale_remote_complete_is_lease_lost_and_changes_nothing(
    serve: Callable[..., Served],
) -> None:
    local, server = serve(lease_ttl=0.05, backoff_base=0.001)
    slow = telha_jobs.connect(server.url)
    fast = telha_jobs.connect(server.url)
    job_id = slow.enqueue("embed", "x")
    stale = slow.lease_next("slow")
    assert stale is not None
    time.sleep(0.1)  # past the 50 ms lease
    assert local.reap()["expired"] == 1
    fresh = fast.lease_next("fast", wait=5.0)
    assert fresh is not None and fresh.id == job_id and fresh.generation == stale.generation + 1
    for settle in (
        lambda: slow.complete(stale, "late result"),
        lambda: slow.fail(stale, "late failure"),
        lambda: slow.release(stale),
    ):
        with pytest.raises(telha_jobs.LeaseLostError) as exc:
            settle()
        assert exc.value.code == "ABORTED"
    assert slow.extend([stale], "slow") == [False]
    info = fast.get(job_id)
    assert info is not None and info.state == "leased" and info.worker_id == "fast"
    fast.complete(fresh, "ok")
    assert local.get(job_id).result == "ok"  # type: ignore[union-attr]
    slow.close()
    fast.close()


def test_remote_errors_map_to_the_same_classes(queue: telha_jobs.Queue) -> None:
    with pytest.raises(telha_jobs.InvalidArgumentError):
        queue.enqueue("Not A Kind")
    with pytest.raises(telha_jobs.InvalidArgumentError):
        queue.enqueue("embed", b"x" * (17 * 1024 * 1024))
    with pytest.raises(telha_jobs.NotFoundError):
        queue.retry("01890a5d-ac96-774b-bcce-b302099a8057")
    assert queue.get("01890a5d-ac96-774b-bcce-b302099a8057") is None
    with pytest.raises(telha_jobs.InvalidArgumentError):
        queue.get("not-a-uuid")
    # The server is still up and serving.
    assert queue.enqueue("embed")
    queue.close()
    assert queue.closed
    with pytest.raises(telha_jobs.QueueClosedError):
        queue.stats()


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
    with pytest.raises(telha_jobs.StorageError, match="127.0.0.1:9"):
        telha_jobs.connect("http://127.0.0.1:9", timeout=1.0).stats()
    assert time.monotonic() - t0 < 30.0
    with pytest.raises(telha_jobs.InvalidArgumentError):
        telha_jobs.connect("not a url at all")


def test_serve_refuses_bad_addresses(serve: Callable[..., Served], tmp_path: Path) -> None:
    local, _ = serve()
    with pytest.raises(telha_jobs.InvalidArgumentError, match="listen"):
        local.serve("nowhere")
    with pytest.raises(telha_jobs.InvalidArgumentError, match="tls"):
        local.serve("127.0.0.1:0", tls_cert=tmp_path / "cert.pem")
    with pytest.raises(TypeError):
        local.serve(7450)  # type: ignore[arg-type]


# -- Workers over a remote queue -------------------------------------------------


def test_a_worker_over_a_remote_queue_heartbeats_past_the_ttl(
    serve: Callable[..., Served],
) -> None:
    local, server = serve(lease_ttl=1.0, reaper_interval=0.05)
    q = telha_jobs.connect(server.url)
    done = q.enqueue("embed", {"n": 2})
    long = q.enqueue("embed", {"hold": 2.5})
    bad = q.enqueue("embed", {"n": -1}, max_attempts=1)
    seen: list[bool] = []

    def handler(job: telha_jobs.Job) -> Any:
        if "hold" in job.payload:
            lease = telha_jobs.current_lease()
            assert lease is not None
            end = time.monotonic() + job.payload["hold"]
            while time.monotonic() < end:
                seen.append(lease.lost)
                time.sleep(0.05)
            return "survived"
        if job.payload["n"] < 0:
            raise ValueError("negative")
        return job.payload["n"] * 2

    with telha_jobs.Worker(q, handler, concurrency=2, poll_wait=0.1):
        wait_for(lambda: local.stats()["total"]["pending"] + local.stats()["total"]["leased"] == 0)
    assert local.get(done).result == 4  # type: ignore[union-attr]
    info = local.get(long)
    assert info is not None and info.result == "survived" and info.attempts == 0
    assert seen and not any(seen)
    bad_info = local.get(bad)
    assert bad_info is not None and bad_info.state == "dead" and "negative" in (bad_info.last_error or "")
    q.close()


def test_a_lost_remote_lease_sets_the_handlers_flag(serve: Callable[..., Served]) -> None:
    local, server = serve(lease_ttl=0.3)
    q = telha_jobs.connect(server.url)
    q.enqueue("embed")
    held: list[telha_jobs.Lease] = []

    def handler(job: telha_jobs.Job) -> None:
        lease = telha_jobs.current_lease()
        assert lease is not None
        held.append(lease)
        assert lease.wait_lost(20.0)

    w = telha_jobs.Worker(q, handler, concurrency=1, poll_wait=0.05)
    w.start()
    wait_for(lambda: bool(held))
    local.release(held[0].job)  # taken away behind the worker's back
    wait_for(lambda: held[0].lost)
    wait_for(lambda: w.counts["lost"] == 1)
    w.stop(5.0)
    q.close()


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


def test_a_remote_lease_lost_under_its_handler_and_leased_again_completes(
    serve: Callable[..., Served],
) -> None:
    local, server = serve(**RELAPSE_SETTINGS)
    with telha_jobs.connect(server.url, timeout=10.0) as q:
        check_a_relapsed_lease_completes(q, local)


def test_a_remote_lease_lost_under_an_async_handler_and_leased_again_completes(
    serve: Callable[..., Served],
) -> None:
    local, server = serve(**RELAPSE_SETTINGS)
    with telha_jobs.connect(server.url, timeout=10.0) as q:
        check_an_async_relapsed_lease_completes(q, local)


def test_stopping_a_remote_worker_releases_its_jobs(serve: Callable[..., Served]) -> None:
    local, server = serve()
    q = telha_jobs.connect(server.url)
    ids = q.enqueue_many([("embed", i) for i in range(2)])
    gate = threading.Event()
    started: list[str] = []

    def handler(job: telha_jobs.Job) -> None:
        started.append(job.id)
        gate.wait(30.0)

    w = telha_jobs.Worker(q, handler, concurrency=2, poll_wait=0.05)
    w.start()
    wait_for(lambda: len(started) == 2)
    t0 = time.monotonic()
    w.stop(timeout=0.2)
    assert time.monotonic() - t0 < 10.0 and not w.running
    for i in ids:
        info = local.get(i)
        assert info is not None and info.state == "pending" and info.attempts == 0
        assert info.events[-1][1] == "released"
    gate.set()
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

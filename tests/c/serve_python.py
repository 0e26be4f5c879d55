"""A C host serves its store; a Python process connects and works it (issue 46).

Run by `make test-c-python` (mk/c.mk) with the virtualenv's Python, where the
wheel is installed: argv[1] is examples/c/worker.c and argv[2]
tests/c/serve_host.c, both built with ASan + UBSan. Each C program is the
ASan host in a process of its own (ASAN_OPTIONS from the environment: a
leak or a bad access makes it exit non-zero, which fails the test); this
process is only a gRPC client (`telha_jobs.connect`), so nothing preloads
libasan into Python. Ends with "N passed, N failed" like the C programs.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable

import telha_jobs

# A guard against a hang, not a timed assertion: each wait ends as soon as
# its condition holds.
HANG_GUARD_S = 120.0


def start(argv: list[str], prefix: str, stdin: bool = False) -> tuple[subprocess.Popen[str], str]:
    """Start a C host; its first line ends with the URL it serves on
    (followed, for the worker, by the page's)."""
    host = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert host.stdout is not None
    first = host.stdout.readline()
    assert first.startswith(prefix), f"the host said {first!r}"
    url = first[len(prefix) :].split(" at ")[-1].split()[0]
    return host, url


def unavailable(call: Callable[[], object]) -> str:
    """The message of the UnavailableError `call` raises."""
    try:
        call()
    except telha_jobs.UnavailableError as e:
        return str(e)
    raise AssertionError("the call succeeded; wanted UnavailableError")


def python_completes_the_follow_ups_of_a_c_host_and_the_c_host_works_python_jobs(
    worker: str, tmp: Path
) -> None:
    own, ours = 50, 100
    host, url = start(
        [worker, str(tmp / "store"), str(own), "--until-signal"], "worker: serving "
    )
    try:
        q = telha_jobs.connect(url, timeout=10.0)
        probe = telha_jobs.connect(url, timeout=2.0)  # for the calls that must fail
        # Jobs for the C worker (kind ingest:*), enqueued from Python.
        ids = [q.enqueue("ingest:txt", f"py-{i}".encode()) for i in range(ours)]
        # Each ingest job the C host completes leaves a thumb:render
        # follow-up (enqueued by its complete_many): Python works those.
        done = 0
        deadline = time.monotonic() + HANG_GUARD_S
        while done < own + ours:
            assert time.monotonic() < deadline, f"{done} follow-ups after {HANG_GUARD_S} s"
            jobs = q.lease_many("worker-py", 16, kinds="thumb:*", wait=1.0)
            answers = q.complete_many(jobs, [{"thumb": j.raw_payload.hex()} for j in jobs])
            assert answers == [None] * len(jobs), answers
            done += len(jobs)
        assert q.lease_many("worker-py", 16, kinds="thumb:*") == []  # exactly one each
        for job_id in ids:
            info = q.get(job_id)
            assert info is not None and info.state == "completed", info
            want = f"{len(info.raw_payload)} bytes of ".encode()
            assert info.raw_result is not None and info.raw_result.startswith(want), info
    finally:
        host.send_signal(signal.SIGTERM)  # the host drains, stops serving, closes
        out, _ = host.communicate(timeout=HANG_GUARD_S)
    print(out, end="")
    assert host.returncode == 0, f"the C host exited {host.returncode}"
    assert f"worker: {own + ours} completed, 0 lost," in out, out
    assert f"1 cancelled, 1 timed out, {own + ours} follow-ups" in out, out
    # The server is gone: a call answers UnavailableError, it does not hang.
    unavailable(lambda: probe.stats())


def closing_the_c_hosts_queue_while_it_serves_answers_unavailable(
    serve_host: str, tmp: Path
) -> None:
    store = tmp / "store"
    host, url = start([serve_host, str(store)], "serving ", stdin=True)
    assert host.stdin is not None and host.stdout is not None

    def say(word: str, want: str) -> None:
        assert host.stdin is not None and host.stdout is not None
        host.stdin.write(word + "\n")
        host.stdin.flush()
        assert host.stdout.readline().strip() == want

    try:
        q = telha_jobs.connect(url, timeout=2.0)  # its calls here are quick, or must fail
        job_id = q.enqueue("served:py", {"n": 1})
        job = q.lease_next("worker-py", kinds="served:py")
        assert job is not None and job.id == job_id
        say("close", "closed")
        # Every call answers UNAVAILABLE ("the telha server is closing"),
        # retryable for the client, which retries it until its deadline
        # (so a slow retry may end on "timed out ..."); nothing is written.
        msg = unavailable(lambda: q.complete(job))
        assert "closing" in msg or "timed out" in msg, msg
        unavailable(lambda: q.enqueue("served:py", None))
        # The C host released the store while its server still runs:
        # another process (this one) opens it.
        with telha_jobs.Queue(str(store)) as mine:
            info = mine.get(job_id)
            assert info is not None and info.state == "leased", info  # the complete was refused
        say("free", "freed")  # tj_queue_free before tj_server_close: still safe
        unavailable(lambda: q.stats())
        say("stop", "stopped")
        unavailable(lambda: q.stats())  # nobody listens now
    finally:
        host.stdin.close()
        host.wait(timeout=HANG_GUARD_S)
    assert host.returncode == 0, f"the C host exited {host.returncode}"


def a_c_host_serves_with_a_token_over_tls(serve_host: str, tmp: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        print("  (openssl is needed to make a test certificate: the token alone)")
    ca, cert, key = tmp / "ca.pem", tmp / "cert.pem", tmp / "key.pem"
    if openssl is not None:
        # A CA, and a server certificate it signs (webpki refuses a CA
        # certificate used as the server's own).
        ext = tmp / "ext.cnf"
        ext.write_text("basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n")

        def run(*args: str) -> None:
            subprocess.run([openssl, *args], check=True, capture_output=True)

        run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
            "/CN=telha test CA", "-keyout", str(tmp / "ca-key.pem"), "-out", str(ca))
        run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout",
            str(key), "-out", str(tmp / "req.csr"))
        run("x509", "-req", "-in", str(tmp / "req.csr"), "-CA", str(ca), "-CAkey",
            str(tmp / "ca-key.pem"), "-CAcreateserial", "-days", "2", "-extfile", str(ext),
            "-out", str(cert))
    tls = [str(cert), str(key)] if openssl is not None else []
    host, url = start([serve_host, str(tmp / "store"), "s3cret", *tls], "serving ", stdin=True)
    try:
        assert url.startswith("https://" if tls else "http://"), url
        ca_cert = str(ca) if tls else None
        q = telha_jobs.connect(url, token="s3cret", ca_cert=ca_cert, timeout=10.0)
        job_id = q.enqueue("served:tls", {"tls": bool(tls)})
        job = q.lease_next("worker-py", kinds="served:tls")
        assert job is not None and job.id == job_id and job.payload == {"tls": bool(tls)}
        q.complete(job, {"ok": True})
        info = q.get(job_id)
        assert info is not None and info.state == "completed" and info.result == {"ok": True}
        # The C host's token is required.
        wrong = telha_jobs.connect(url, token="wrong", ca_cert=ca_cert, timeout=10.0)
        try:
            wrong.stats()
            raise AssertionError("a wrong token was accepted")
        except telha_jobs.InvalidArgumentError as e:
            assert "unauthenticated" in str(e).lower(), e
    finally:
        assert host.stdin is not None
        host.stdin.close()
        host.wait(timeout=HANG_GUARD_S)
    assert host.returncode == 0, f"the C host exited {host.returncode}"


def main() -> int:
    worker, serve_host = sys.argv[1], sys.argv[2]
    tests = [
        (python_completes_the_follow_ups_of_a_c_host_and_the_c_host_works_python_jobs, worker),
        (closing_the_c_hosts_queue_while_it_serves_answers_unavailable, serve_host),
        (a_c_host_serves_with_a_token_over_tls, serve_host),
    ]
    passed = failed = 0
    for test, program in tests:
        with tempfile.TemporaryDirectory(prefix="tj-c-py-") as tmp:
            try:
                test(program, Path(tmp))
                passed += 1
                print(f"ok   serve_python::{test.__name__}", flush=True)
            except Exception:
                failed += 1
                traceback.print_exc()
                print(f"FAIL serve_python::{test.__name__}", flush=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

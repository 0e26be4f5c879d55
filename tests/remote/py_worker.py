"""One Python worker process of the fleet test (test_fleet.py).

    python py_worker.py URL WORKER_ID MODE RECORDS_FILE

MODE "loop": lease_many / complete by hand; "batch": lease_many /
complete_many; "worker": telha_jobs.Worker.
Prints "ready" once connected, then works until SIGTERM. Every lease is
recorded in RECORDS_FILE as one JSON line: job id, generation, worker, lease
time, settle time (both epoch seconds) and whether the completion was
accepted. Records are written as they happen, so a crash loses none that
were settled.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from typing import Any, TextIO

import telha_jobs


def record(out: TextIO, lock: threading.Lock, job: telha_jobs.Job, worker: str,
           leased_at: float, settled_at: float, ok: bool | None) -> None:
    line = json.dumps({"id": job.id, "gen": job.generation, "worker": worker,
                       "leased_at": leased_at, "settled_at": settled_at, "ok": ok})
    with lock:
        out.write(line + "\n")
        out.flush()


def run_loop(q: telha_jobs.Queue, worker: str, out: TextIO, batch: bool) -> None:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    lock = threading.Lock()
    print("ready", flush=True)
    while not stop.is_set():
        jobs = q.lease_many(worker, 20, wait=0.2)
        leased_at = time.time()
        if batch and jobs:
            errors = q.complete_many(jobs, [{"by": worker}] * len(jobs))
            settled_at = time.time()
            for job, e in zip(jobs, errors):
                assert e is None or isinstance(e, telha_jobs.LeaseLostError), e
                record(out, lock, job, worker, leased_at, settled_at, e is None)
            continue
        for job in jobs:
            try:
                q.complete(job, {"by": worker})
                ok = True
            except telha_jobs.LeaseLostError:
                ok = False
            record(out, lock, job, worker, leased_at, time.time(), ok)


def run_worker(q: telha_jobs.Queue, worker: str, out: TextIO) -> None:
    lock = threading.Lock()

    def handler(job: telha_jobs.Job) -> Any:
        leased_at = time.time()
        # The Worker settles after the handler returns; whether the
        # completion was accepted is read back from the server by the test.
        record(out, lock, job, worker, leased_at, time.time(), None)
        return {"by": worker}

    w = telha_jobs.Worker(q, handler, worker_id=worker, concurrency=4, poll_wait=0.2)
    print("ready", flush=True)
    w.run()  # returns after SIGTERM, once running jobs settled
    print(json.dumps(w.counts), flush=True)


def main() -> None:
    url, worker, mode, path = sys.argv[1:5]
    q = telha_jobs.connect(url, timeout=10.0)
    with open(path, "a", encoding="utf-8") as out:
        if mode == "worker":
            run_worker(q, worker, out)
        else:
            run_loop(q, worker, out, batch=mode == "batch")
    q.close()


if __name__ == "__main__":
    main()

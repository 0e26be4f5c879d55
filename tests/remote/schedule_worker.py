"""A Python worker process for test_schedules.py.

    python schedule_worker.py URL WORKER_ID KIND

Leases KIND one job at a time through ``telha serve``, completes it, and
prints one JSON line per job: {"job": id, "schedule": name, "slot": slot}.
Prints "ready" first; runs until SIGTERM.
"""

from __future__ import annotations

import json
import signal
import sys

import telha_jobs


def main() -> None:
    url, worker, kind = sys.argv[1:4]
    q = telha_jobs.connect(url, timeout=10.0)
    stop = False

    def on_term(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    print(json.dumps({"ready": worker}), flush=True)
    while not stop:
        job = q.lease_next(worker, kinds=kind, wait=0.5)
        if job is None:
            continue
        ref = job.schedule
        q.complete(job)
        print(json.dumps({"job": job.id, "schedule": ref.name if ref else None,
                          "slot": ref.slot if ref else None}), flush=True)
    q.close()


if __name__ == "__main__":
    main()

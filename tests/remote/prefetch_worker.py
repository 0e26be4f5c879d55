"""A Python worker process for test_prefetch.py and the fleet bench.

    python prefetch_worker.py URL MODE [WORKER_ID [PREFETCH [CONCURRENCY]]]

MODE "hang": a Worker (concurrency 1, prefetch 8, a fixed window: min_prefetch 8) whose handler never
returns, so the process holds one running and eight prefetched leases until
it is killed. MODE "noop": a Worker (concurrency 4, the default prefetch)
whose handler returns at once, one job at a time (PREFETCH: the Worker's
``prefetch``, "default" or left out for its own; CONCURRENCY: its
``concurrency``, default 4); on SIGTERM it stops and prints its counts
as JSON. Prints "ready" once its Worker started. TELHA_BENCH_HANDLER_MS:
each handler sleeps that long; TELHA_BENCH_FIXED_WINDOW=1: min_prefetch =
prefetch (the fixed window of before issue 37's adaptive one).
"""

from __future__ import annotations

import json
import os
import sys
import time
import threading
from typing import Any

import telha_jobs


def main() -> None:
    url, mode = sys.argv[1:3]
    worker_id = sys.argv[3] if len(sys.argv) > 3 else None
    prefetch = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] != "default" else None
    concurrency = int(sys.argv[5]) if len(sys.argv) > 5 else 4
    q = telha_jobs.connect(url, timeout=10.0)
    if mode == "hang":
        forever = threading.Event()

        def hang(job: telha_jobs.Job) -> Any:
            forever.wait()

        w = telha_jobs.Worker(q, hang, worker_id=worker_id, concurrency=1, prefetch=8, min_prefetch=8,
                              poll_wait=0.1)
        w.start()
        print("ready", flush=True)
        forever.wait()
        return
    ms = float(os.environ.get("TELHA_BENCH_HANDLER_MS", "0"))

    def handler(job: telha_jobs.Job) -> None:
        if ms > 0:
            time.sleep(ms / 1000)

    w = telha_jobs.Worker(q, handler, worker_id=worker_id, concurrency=concurrency, poll_wait=0.2,
                          prefetch=prefetch)
    if os.environ.get("TELHA_BENCH_FIXED_WINDOW") == "1":
        w = telha_jobs.Worker(q, handler, worker_id=worker_id, concurrency=concurrency, poll_wait=0.2,
                              prefetch=prefetch, min_prefetch=w.prefetch)
    print("ready", flush=True)
    w.run()  # until SIGTERM; running jobs settle, queued completions are sent
    print(json.dumps(w.counts), flush=True)
    q.close()


if __name__ == "__main__":
    main()

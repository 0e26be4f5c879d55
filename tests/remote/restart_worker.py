"""One Python worker process of test_restart.py (issue 36).

    python restart_worker.py URL_LIST WORKER_ID LEDGER

Connects to a comma list of servers, prints "ready", then runs a
``telha_jobs.Worker`` (one job at a time) on kind ``restart`` until SIGTERM.
The handler appends one JSON line per run to LEDGER (the job id, its lease
generation, this worker) and completes with ``{"by": WORKER_ID}``. Prints
the Worker's counts as one JSON line when it stops.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import telha_jobs


def main() -> None:
    urls, worker, ledger = sys.argv[1:4]
    q = telha_jobs.connect(urls.split(","), timeout=20.0)
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def handler(job: telha_jobs.Job) -> Any:
        os.write(fd, (json.dumps({"id": str(job.id), "gen": job.generation, "worker": worker}) + "\n").encode())
        time.sleep(0.01)  # long enough that some kills land mid-job
        return {"by": worker}

    w = telha_jobs.Worker(q, handler, worker_id=worker, kinds="restart", concurrency=1, poll_wait=0.5)
    print("ready", flush=True)
    w.run()  # returns after SIGTERM, once the running job settled
    print(json.dumps(w.counts), flush=True)
    os.close(fd)
    q.close()


if __name__ == "__main__":
    main()

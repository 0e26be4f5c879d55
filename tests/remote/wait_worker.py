"""One Python worker process of test_wait.py (issue 18).

    python wait_worker.py URL WORKER_ID

Connects, prints "ready", then runs a ``telha_jobs.Worker`` on kind
``calc`` until SIGTERM: a job ``{"n": n}`` completes with ``{"n": n, "sq":
n * n, "by": WORKER_ID}``; one with ``"fail": true`` fails for good
(``PermanentError("bad <n>")``), so its waiter sees it dead with that error.
Each handler reports progress once (it rides on a heartbeat, if one comes).
Prints the Worker's counts as one JSON line when it stops.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import telha_jobs


def main() -> None:
    url, worker = sys.argv[1:3]
    q = telha_jobs.connect(url, timeout=10.0)

    def handler(job: telha_jobs.Job) -> Any:
        p = job.payload
        lease = telha_jobs.current_lease()
        if lease is not None:
            lease.progress({"n": p["n"], "step": "started"})
        if p.get("fail"):
            raise telha_jobs.PermanentError(f"bad {p['n']}")
        return {"n": p["n"], "sq": p["n"] * p["n"], "by": worker}

    w = telha_jobs.Worker(q, handler, worker_id=worker, kinds="calc", concurrency=4, poll_wait=0.2)
    print("ready", flush=True)
    w.run()  # returns after SIGTERM, once running jobs settled
    print(json.dumps(w.counts), flush=True)
    q.close()


if __name__ == "__main__":
    main()

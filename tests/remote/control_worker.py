"""A Python Worker process for test_control.py.

    python control_worker.py URL WORKER_ID KIND MODE

MODE "check": the handler checks its lease every 20 ms until told to stop;
"hang": it sleeps without checking (the Worker keeps heartbeating).
Prints "ready", then one JSON line per event: {"started": id} when a
handler begins, {"stopped": id, "error": class name or null} when it ends.
Runs until SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from typing import Any

import telha_jobs


def say(**kv: Any) -> None:
    print(json.dumps(kv), flush=True)


def main() -> None:
    url, worker, kind, mode = sys.argv[1:5]
    q = telha_jobs.connect(url, timeout=10.0)

    def handler(job: telha_jobs.Job) -> Any:
        say(started=job.id)
        try:
            if mode == "hang":
                time.sleep(30)
            else:
                lease = telha_jobs.current_lease()
                assert lease is not None
                for _ in range(3000):
                    lease.check()
                    time.sleep(0.02)
        except BaseException as e:  # reported, then re-raised to the Worker
            say(stopped=job.id, error=type(e).__name__)
            raise
        say(stopped=job.id, error=None)
        return {"by": worker}

    w = telha_jobs.Worker(q, handler, worker_id=worker, kinds=kind, concurrency=1, poll_wait=0.2)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    w.start()
    say(ready=True)
    stop.wait()
    # A hung handler never returns: give the others 2 s, then leave.
    w.stop(timeout=2.0)
    q.close()
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()

"""A remote Worker that stops while jobs keep coming leaves no lease held by
nobody: its PollJobs stream is stopped with the StopPoll handshake (the
server stops leasing for it and ends it; what was on the way is read to the
end and released), so another worker leases every waiting job at once."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import telha_jobs

from .test_worker import wait_for


def test_a_stopped_remote_worker_leaves_no_lease_with_nobody(tmp_path: Path) -> None:
    local = telha_jobs.Queue(tmp_path / "store", reaper_interval=0)
    server = local.serve("127.0.0.1:0")
    try:
        with telha_jobs.connect(server.url) as remote:
            for round_ in range(5):
                stop = threading.Event()

                def enqueue() -> None:
                    while not stop.is_set():
                        local.enqueue("embed", {"n": 1})
                        time.sleep(0.0005)

                feeder = threading.Thread(target=enqueue)
                feeder.start()
                ran: list[int] = []
                w = telha_jobs.Worker(remote, lambda job: ran.append(1), concurrency=2, poll_wait=0.05)
                w.start()
                wait_for(lambda: len(ran) >= 10)
                w.stop(timeout=5.0)
                stop.set()
                feeder.join()
                total = local.stats()["total"]
                got = remote.lease_many("w2", 10_000)
                assert len(got) == total["pending"], (round_, total)
                after = local.stats()["total"]
                # Nothing leased by nobody: every lease is the second worker's.
                assert after["leased"] == len(got), (round_, after)
                assert all(j.attempts == 0 for j in got)
                for j in got:
                    remote.complete(j)
    finally:
        server.stop(grace=1.0)
        local.close()

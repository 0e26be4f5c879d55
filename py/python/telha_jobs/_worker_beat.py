"""The heartbeat thread of :class:`~telha_jobs.Worker` (mixed in): every
due lease extended in one call, timeouts failed, the progress reports
riding along."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from ._errors import QueueClosedError
from ._lease import Lease
from ._native import Queue
from ._worker_rules import after_heartbeat, restore_progress, take_progress, timed_out, timeout_reason

log = logging.getLogger("telha_jobs")


class _Beats:
    """``_heartbeat`` and what it calls; the Worker has the rest."""

    queue: Queue
    worker_id: str
    _cond: threading.Condition
    _leases: dict[tuple[str, int], Lease]
    _stopping: threading.Event
    _stopped: threading.Event
    _beat_at: float
    _error: Callable[[str, BaseException], None]
    _fail_for: Callable[[Lease, str, bool, str], None]

    def _time_out(self, leases: Sequence[Lease]) -> None:
        """Fail the jobs whose handlers ran past their timeout (retryably)
        and tell the handlers their lease is lost."""
        for lease in leases:
            with self._cond:
                held = self._leases.pop(lease.key, None) is lease
            lease._mark_lost("timeout")
            if not held:
                continue
            log.warning("worker %s: job %s %s", self.worker_id, lease.job.id, timeout_reason(lease))
            self._fail_for(lease, timeout_reason(lease), True, "timed_out")

    def _heartbeat(self) -> None:
        while True:
            try:
                if not self._beat_once():
                    return
            except Exception as e:  # noqa: BLE001 - never lose the heartbeat thread
                self._error("heartbeat", e)
                self._stopping.wait(0.1)

    def _beat_once(self) -> bool:
        """One pass of the heartbeat thread; False when it should end."""
        q = self.queue
        with self._cond:
            if self._stopped.is_set() or (self._stopping.is_set() and not self._leases):
                return False
            now = time.time()
            late = timed_out(list(self._leases.values()), now)
            due = [l for l in self._leases.values() if l.next_beat <= now and l not in late]
            if not due and not late:
                nxt = min(
                    (min(l.next_beat, l.timeout_at) for l in self._leases.values()),
                    default=now + 0.5,
                )
                pause = min(max(nxt - now, 0.01), 0.5)
                self._beat_at = now + pause
                self._cond.wait(pause)
                self._beat_at = 0.0
                return True
        if late:
            self._time_out(late)
        if not due:
            return True
        sent = time.time()
        failed = False
        # The handlers' latest progress rides on this heartbeat.
        reports = take_progress(due)
        try:
            answers = q.extend_answers([l.job for l in due], self.worker_id, progress=reports)
        except Exception as e:  # noqa: BLE001 - counted; a closed queue stops the Worker
            restore_progress(due, reports)
            self._error("heartbeat", e)
            if self._stopping.is_set():
                return not isinstance(e, QueueClosedError)
            # Unrenewed past its deadline (the server unreachable, say),
            # a lease is lost: the handler is told, as when extend says so.
            failed = True
            answers = ["renewed" if time.time() < l.expires else "lost" for l in due]
        after_heartbeat(self.worker_id, due, answers, failed, sent)
        return True

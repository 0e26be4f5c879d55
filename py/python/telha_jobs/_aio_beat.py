"""The heartbeat task of :class:`~telha_jobs.aio.AsyncWorker` (mixed in):
every due lease extended in one call, timeouts failed, the progress reports
riding along."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from ._lease import Lease
from ._worker_rules import after_heartbeat, restore_progress, take_progress, timed_out, timeout_reason

if TYPE_CHECKING:
    from .aio import AsyncQueue

log = logging.getLogger("telha_jobs")


class _Heartbeats:
    """``_heartbeat`` and what it calls; the AsyncWorker has the rest."""

    queue: AsyncQueue
    worker_id: str
    _leases: dict[tuple[str, int], Lease]
    _wake: asyncio.Event | None
    _beat_at: float
    _error: Callable[[str, BaseException], None]
    _pause: Callable[[float], Awaitable[None]]
    _fail_for: Callable[[Lease, str, bool, str], Awaitable[None]]

    async def _time_out(self, leases: Sequence[Lease]) -> None:
        for lease in leases:
            held = self._leases.pop(lease.key, None) is lease
            lease._mark_lost("timeout")
            if not held:
                continue
            log.warning("worker %s: job %s %s", self.worker_id, lease.job.id, timeout_reason(lease))
            await self._fail_for(lease, timeout_reason(lease), True, "timed_out")

    async def _heartbeat(self) -> None:
        while True:
            try:
                await self._beat_once()
            except Exception as e:  # noqa: BLE001 - never lose the heartbeat task
                self._error("heartbeat", e)
                await self._pause(0.1)

    async def _beat_once(self) -> None:
        """One pass of the heartbeat task: every due lease in one call."""
        now = time.time()
        late = timed_out(list(self._leases.values()), now)
        if late:
            await self._time_out(late)
        due = [l for l in self._leases.values() if l.next_beat <= now]
        if due:
            sent = time.time()
            failed = False
            reports = take_progress(due)  # the handlers' latest progress rides along
            try:
                answers = await self.queue.extend_answers(
                    [l.job for l in due], self.worker_id, reports
                )
            except Exception as e:  # noqa: BLE001 - counted; a closed queue stops the Worker
                restore_progress(due, reports)
                self._error("heartbeat", e)
                # Unrenewed past its deadline, a lease is lost (see Worker).
                failed = True
                answers = ["renewed" if time.time() < l.expires else "lost" for l in due]
            now = after_heartbeat(self.worker_id, due, answers, failed, sent)
        nxt = min(
            (min(l.next_beat, l.timeout_at) for l in self._leases.values()), default=now + 0.5
        )
        pause = min(max(nxt - now, 0.01), 0.5)
        assert self._wake is not None
        self._wake.clear()
        self._beat_at = now + pause
        try:
            await asyncio.wait_for(self._wake.wait(), pause)
        except asyncio.TimeoutError:
            pass
        finally:
            self._beat_at = 0.0

"""The job-control and operator calls of :class:`~telha_jobs.aio.AsyncQueue`
(mixed in): cancel, delete, promote, reschedule, set_priority, pause, resume, retry, get, list, find, reap, purge, stats,
metrics and the flow-control limits (set_limit, remove_limit, limits), each the :class:`~telha_jobs.Queue` method of the same name run on
the queue's executor, so the event loop never blocks on the store."""

from __future__ import annotations

import builtins
import datetime
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ._native import JobInfo, Queue
from ._types import FindResult, JobList, LimitInfo

if TYPE_CHECKING:
    from ._native import _BackupInfo

T = TypeVar("T")


class _AsyncControl:
    """``cancel`` … ``metrics`` as coroutines."""

    queue: Queue

    async def _call(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        raise NotImplementedError  # AsyncQueue's

    async def cancel(self, job_id: str, reason: str = "") -> Literal["cancelled", "requested"]:
        """As :meth:`Queue.cancel`: "cancelled" or "requested"."""
        return await self._call(self.queue.cancel, job_id, reason)

    async def cancel_many(
        self,
        *,
        kind: str | None = None,
        scope: str | None = None,
        state: str | None = None,
        reason: str = "",
        tag: str | None = None,
    ) -> dict[str, int]:
        """As :meth:`Queue.cancel_many`."""
        return await self._call(
            self.queue.cancel_many, kind=kind, scope=scope, state=state, reason=reason, tag=tag
        )

    async def delete(self, job_id: str) -> None:
        """As :meth:`Queue.delete`."""
        await self._call(self.queue.delete, job_id)

    async def promote(self, job_id: str) -> None:
        """As :meth:`Queue.promote`."""
        await self._call(self.queue.promote, job_id)

    async def reschedule(self, job_id: str, run_at: float | int | datetime.datetime) -> None:
        """As :meth:`Queue.reschedule`."""
        await self._call(self.queue.reschedule, job_id, run_at)

    async def set_priority(self, job_id: str, priority: int) -> None:
        """As :meth:`Queue.set_priority`."""
        await self._call(self.queue.set_priority, job_id, priority)

    async def pause(
        self, target: str | None = None, *, kind: str | None = None, scope: str | None = None
    ) -> bool:
        """As :meth:`Queue.pause`."""
        return await self._call(self.queue.pause, target, kind=kind, scope=scope)

    async def resume(
        self, target: str | None = None, *, kind: str | None = None, scope: str | None = None
    ) -> bool:
        """As :meth:`Queue.resume`."""
        return await self._call(self.queue.resume, target, kind=kind, scope=scope)

    async def paused(self) -> dict[str, list[str]]:
        """As :meth:`Queue.paused`."""
        return await self._call(self.queue.paused)

    async def retry(self, job_id: str) -> None:
        await self._call(self.queue.retry, job_id)

    async def get(self, job_id: str) -> JobInfo | None:
        return await self._call(self.queue.get, job_id)

    async def list(self, **query: Any) -> JobList:
        """As :meth:`Queue.list` (keywords state, scope, kind, limit, after,
        schedule, parent, tag)."""
        return await self._call(self.queue.list, **query)

    async def count_tag(self, tag: str, *, scope: str | None = None) -> dict[str, int]:
        """As :meth:`Queue.count_tag`: the tag's jobs per state."""
        return await self._call(self.queue.count_tag, tag, scope=scope)

    async def find(
        self, text: str, *, scope: str | None = None, limit: int = 50
    ) -> FindResult:
        """As :meth:`Queue.find`: the text as a job id, an idempotency key
        and a tag, side by side."""
        return await self._call(self.queue.find, text, scope=scope, limit=limit)

    async def backup(self, dir: str | os.PathLike[str]) -> _BackupInfo:
        """As :meth:`Queue.backup`, on a worker thread."""
        return await self._call(self.queue.backup, dir)

    async def reap(self) -> dict[str, int]:
        return await self._call(self.queue.reap)

    async def purge(
        self,
        state: Literal["completed", "dead", "cancelled"],
        before: float | int | datetime.datetime,
    ) -> int:
        """As :meth:`Queue.purge`: delete the ``state`` jobs that got there
        before ``before`` (seconds since the epoch or a datetime); how many."""
        return await self._call(self.queue.purge, state, before)

    async def stats(
        self,
        *,
        scope_order: str | None = None,
        scope_limit: int | None = None,
        scopes_after: str | None = None,
        scope_prefix: str | None = None,
        oldest_ready: bool = False,
    ) -> dict[str, Any]:
        """As :meth:`Queue.stats`: whole totals and per-kind counts, one page
        of per-scope counts; ``oldest_ready=True`` adds each kind's oldest
        ready job's age (``oldest_ready_ms``)."""
        return await self._call(
            self.queue.stats,
            scope_order=scope_order,
            scope_limit=scope_limit,
            scopes_after=scopes_after,
            scope_prefix=scope_prefix,
            oldest_ready=oldest_ready,
        )

    async def metrics(self) -> str:
        return await self._call(self.queue.metrics)

    async def set_limit(
        self,
        target: str,
        *,
        concurrency: int | None = None,
        rate: float | None = None,
        burst: int | None = None,
        weight: int | None = None,
        ordered: bool = False,
    ) -> None:
        """As :meth:`Queue.set_limit`."""
        await self._call(
            self.queue.set_limit, target, concurrency=concurrency, rate=rate, burst=burst,
            weight=weight, ordered=ordered,
        )

    async def remove_limit(self, target: str) -> bool:
        """As :meth:`Queue.remove_limit`: whether there was one."""
        return await self._call(self.queue.remove_limit, target)

    async def limits(self) -> builtins.list[LimitInfo]:
        """As :meth:`Queue.limits`: every limit with its use now, by target."""
        return await self._call(self.queue.limits)

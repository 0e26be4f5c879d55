"""The schedule calls of :class:`~telha_jobs.aio.AsyncQueue` (mixed in):
each is the :class:`~telha_jobs.Queue` method of the same name run on the
queue's executor, so the event loop never blocks on the store."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ._native import Queue, RunReport, ScheduleInfo

T = TypeVar("T")


class _AsyncSchedules:
    """``schedule_put`` … ``run_schedules`` as coroutines."""

    queue: Queue

    async def _call(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        raise NotImplementedError  # AsyncQueue's

    async def schedule_put(self, name: str, spec: str, *, kind: str, **options: Any) -> ScheduleInfo:
        """As :meth:`Queue.schedule_put` (the same keywords)."""
        return await self._call(self.queue.schedule_put, name, spec, kind=kind, **options)

    async def schedule_get(self, name: str) -> ScheduleInfo:
        """As :meth:`Queue.schedule_get` (``NotFoundError`` for no such schedule)."""
        return await self._call(self.queue.schedule_get, name)

    async def schedule_list(self) -> list[ScheduleInfo]:
        """As :meth:`Queue.schedule_list`: every schedule, by name."""
        return await self._call(self.queue.schedule_list)

    async def schedule_delete(self, name: str) -> None:
        """As :meth:`Queue.schedule_delete`."""
        await self._call(self.queue.schedule_delete, name)

    async def schedule_pause(self, name: str) -> ScheduleInfo:
        """As :meth:`Queue.schedule_pause`."""
        return await self._call(self.queue.schedule_pause, name)

    async def schedule_resume(self, name: str) -> ScheduleInfo:
        """As :meth:`Queue.schedule_resume`."""
        return await self._call(self.queue.schedule_resume, name)

    async def run_schedules(self) -> RunReport:
        """As :meth:`Queue.run_schedules`: one scheduler pass now."""
        return await self._call(self.queue.run_schedules)

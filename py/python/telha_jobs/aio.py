"""asyncio front end: :class:`AsyncQueue`, whose calls never block the event
loop (each store call runs on a thread of the queue's executor, with the GIL
released while RocksDB works), and :class:`AsyncWorker` (``_aio_worker``)."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar

from ._aio_events import AsyncSubscription, wait
from ._aio_control import _AsyncControl
from ._aio_schedules import _AsyncSchedules
from ._aio_server import AsyncServer
from ._aio_worker import AsyncWorker
from ._errors import TelhaError
from ._native import CancelWait, Job, JobInfo, Queue, connect
from ._types import Enqueued

__all__ = ["AsyncQueue", "AsyncServer", "AsyncSubscription", "AsyncWorker"]

log = logging.getLogger("telha_jobs")
T = TypeVar("T")


class AsyncQueue(_AsyncControl, _AsyncSchedules):
    """The :class:`~telha_jobs.Queue` API as coroutines. Open one with
    ``await AsyncQueue.open(path, **settings)`` or wrap an open Queue with
    ``AsyncQueue(queue)``. An ``async with`` block closes it."""

    def __init__(self, queue: Queue, *, max_threads: int | None = None) -> None:
        if not isinstance(queue, Queue):
            raise TypeError(f"AsyncQueue wraps a telha_jobs.Queue, got {type(queue).__name__}")
        self.queue = queue
        # Lease waits hold a thread each: size the pool above the number of
        # concurrent waits you expect (an AsyncWorker adds its concurrency).
        self._pool = ThreadPoolExecutor(
            max_workers=max_threads or max(32, (os.cpu_count() or 2) * 4),
            thread_name_prefix="telha-jobs-aio",
        )
        self._waits: set[asyncio.Future[None]] = set()  # `wait`s in progress: `close` ends them

    @classmethod
    async def open(cls, path: str | os.PathLike[str] | None = None, **settings: Any) -> AsyncQueue:
        """Open (or create) a store off the event loop; ``settings`` are
        :class:`~telha_jobs.Queue`'s keywords."""
        loop = asyncio.get_running_loop()
        q = await loop.run_in_executor(None, functools.partial(Queue, path, **settings))
        return cls(q)

    @classmethod
    async def connect(
        cls, url: str | Sequence[str], token: str | None = None, *, timeout: float | None = None
    ) -> AsyncQueue:
        """Connect to a ``telha serve`` server off the event loop (see
        :func:`telha_jobs.connect`)."""
        loop = asyncio.get_running_loop()
        q = await loop.run_in_executor(None, functools.partial(connect, url, token, timeout=timeout))
        return cls(q)

    async def _call(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        loop = asyncio.get_running_loop()
        # In the caller's context (as asyncio.to_thread): an enqueue picks
        # up the task's active trace context (_otel.py).
        ctx = contextvars.copy_context()
        return await loop.run_in_executor(self._pool, functools.partial(ctx.run, fn, *args, **kw))

    async def serve(
        self,
        listen: str = "127.0.0.1:7450",
        *,
        token: str | None = None,
        tls_cert: str | os.PathLike[str] | None = None,
        tls_key: str | os.PathLike[str] | None = None,
        metrics_listen: str | None = None,
        ui: bool = False,
        ui_read_only: bool = False,
    ) -> AsyncServer:
        """Serve this embedded queue to other processes (gRPC) from this one,
        as :meth:`Queue.serve` does (``ui=True`` also serves the operator
        page); started off the event loop. A remote queue cannot be served
        (``InvalidArgumentError``)."""
        server = await self._call(
            self.queue.serve, listen, token=token, tls_cert=tls_cert, tls_key=tls_key,
            metrics_listen=metrics_listen, ui=ui, ui_read_only=ui_read_only,
        )
        return AsyncServer(server)

    async def close(self) -> None:
        """Close the queue handle; waits in progress end."""
        await self._call(self.queue.close)
        for f in list(self._waits):
            if not f.done():
                f.set_result(None)
        self._pool.shutdown(wait=False)

    async def __aenter__(self) -> AsyncQueue:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def path(self) -> str | None:
        """The store directory; None for a remote queue."""
        return self.queue.path

    @property
    def location(self) -> str:
        """The store directory, or the server URL of a remote queue."""
        return self.queue.location

    def settings(self) -> dict[str, Any]:
        """As :meth:`Queue.settings` (no store call: the settings in force)."""
        return self.queue.settings()

    async def enqueue(self, kind: str, payload: Any = None, **options: Any) -> Enqueued:
        """As :meth:`Queue.enqueue`."""
        return await self._call(self.queue.enqueue, kind, payload, **options)

    async def enqueue_many(self, items: Iterable[Any]) -> list[Enqueued]:
        """As :meth:`Queue.enqueue_many` (atomic)."""
        return await self._call(self.queue.enqueue_many, list(items))

    async def lease_many(
        self,
        worker_id: str,
        max: int,
        *,
        kinds: str | Sequence[str] | None = None,
        scope: str | Sequence[str] | None = None,
        wait: float = 0.0,
    ) -> list[Job]:
        """As :meth:`Queue.lease_many`. Cancelling the awaiting task ends
        the wait at once; a job leased in that instant is released."""
        cancel = CancelWait()
        fut = asyncio.ensure_future(
            self._call(
                self.queue.lease_many, worker_id, max, kinds=kinds, scope=scope, wait=wait, cancel=cancel
            )
        )
        try:
            return await asyncio.shield(fut)
        except asyncio.CancelledError:
            cancel.cancel()
            try:
                jobs = await fut
            except TelhaError:
                jobs = []
            for j in jobs:
                try:
                    await self._call(self.queue.release, j)
                except TelhaError:
                    pass
            raise

    async def lease_next(
        self,
        worker_id: str,
        *,
        kinds: str | Sequence[str] | None = None,
        scope: str | Sequence[str] | None = None,
        wait: float = 0.0,
    ) -> Job | None:
        """As :meth:`Queue.lease_next`; cancellable like :meth:`lease_many`."""
        jobs = await self.lease_many(worker_id, 1, kinds=kinds, scope=scope, wait=wait)
        return jobs[0] if jobs else None

    async def extend(
        self, jobs: Sequence[Job], worker_id: str, progress: Sequence[Any] | None = None
    ) -> list[bool]:
        """As :meth:`Queue.extend` (``progress``: one report per job, or None)."""
        return await self._call(self.queue.extend, list(jobs), worker_id, progress)

    async def extend_answers(
        self, jobs: Sequence[Job], worker_id: str, progress: Sequence[Any] | None = None
    ) -> list[Literal["renewed", "lost", "cancelled"]]:
        """As :meth:`Queue.extend_answers`: "renewed", "lost" or "cancelled" per job."""
        return await self._call(self.queue.extend_answers, list(jobs), worker_id, progress)

    async def wait(self, job: Job | JobInfo | str, timeout: float | None = None) -> JobInfo:
        """As :meth:`Queue.wait`, never blocking the loop (woken through the
        notifier thread, not a thread per wait); cancelling the awaiting
        task ends the wait (``asyncio.CancelledError``)."""
        return await wait(self, job, timeout)

    async def enqueue_and_wait(
        self, kind: str, payload: Any = None, timeout: float | None = None, **options: Any
    ) -> JobInfo:
        """:meth:`enqueue` (the same options), then :meth:`wait`."""
        return await wait(self, await self.enqueue(kind, payload, **options), timeout)

    async def subscribe(self, kinds: Any = None, scopes: Any = None, transitions: Any = None,
                        buffer: int | None = None) -> AsyncSubscription:
        """As :meth:`Queue.subscribe`: an async iterator of events."""
        sub = await self._call(self.queue.subscribe, kinds, scopes, transitions, buffer)
        return AsyncSubscription(sub)

    async def complete(
        self, job: Job, result: Any = None, *, then: Iterable[Any] | None = None
    ) -> None:
        """As :meth:`Queue.complete` (``then``: follow-up jobs, as
        ``enqueue_many`` items, enqueued in the completion's batch)."""
        await self._call(self.queue.complete, job, result, then=then)

    async def complete_many(
        self,
        jobs: Sequence[Job],
        results: Sequence[Any] | None = None,
        *,
        then: Sequence[Iterable[Any] | None] | None = None,
    ) -> list[TelhaError | None]:
        """As :meth:`Queue.complete_many` (``then``: one list of follow-ups,
        or None, per job)."""
        return await self._call(self.queue.complete_many, jobs, results, then=then)

    async def fail(
        self, job: Job, reason: str, *, retryable: bool = True, retry_in: Any = None
    ) -> None:
        """As :meth:`Queue.fail` (``retry_in``: the handler's retry delay)."""
        await self._call(self.queue.fail, job, reason, retryable=retryable, retry_in=retry_in)

    async def fail_many(
        self,
        jobs: Sequence[Job],
        reasons: str | Sequence[str],
        *,
        retryable: bool | Sequence[bool] | None = None,
        retry_in: Any = None,
    ) -> list[TelhaError | None]:
        """As :meth:`Queue.fail_many` (one write; per job None or why not)."""
        return await self._call(
            self.queue.fail_many, jobs, reasons, retryable=retryable, retry_in=retry_in
        )

    async def release(self, job: Job) -> None:
        await self._call(self.queue.release, job)

    async def release_many(self, jobs: Sequence[Job]) -> list[TelhaError | None]:
        """As :meth:`Queue.release_many` (one write; per job None or why not)."""
        return await self._call(self.queue.release_many, jobs)

    async def snooze(self, job: Job, delay: Any) -> None:
        """As :meth:`Queue.snooze`."""
        await self._call(self.queue.snooze, job, delay)

"""Waiting and watching from asyncio (:meth:`AsyncQueue.wait`,
:meth:`AsyncQueue.subscribe`) without a thread per wait and without ever
blocking the event loop.

A commit in the core does not call into Python: the native side hands the
news to its notifier thread (one per process), which takes the GIL and
calls the callback given here, which passes it to the loop with
``call_soon_threadsafe``. Store calls that may do I/O (creating the watch,
reading the job, opening a remote stream) run on the AsyncQueue's threads.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._errors import QueueClosedError
from ._native import Event, JobWaiter, Subscription
from ._worker_rules import seconds

if TYPE_CHECKING:
    from ._native import JobInfo
    from .aio import AsyncQueue

__all__ = ["AsyncSubscription", "wait"]


def _seconds(timeout: object) -> float | None:
    """A wait's timeout: None (no limit) for None or ``math.inf``, else
    seconds >= 0 (a timedelta too); a wrong type is TypeError, NaN or a
    negative InvalidArgumentError."""
    if timeout is None:
        return None
    t = seconds(timeout, "timeout")
    return None if math.isinf(t) else t


def _soon(loop: asyncio.AbstractEventLoop, fn: Callable[[], Any]) -> Callable[[], None]:
    """A callback for the notifier thread: run ``fn`` on ``loop``."""

    def notified() -> None:
        try:
            loop.call_soon_threadsafe(fn)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    return notified


async def wait(aq: AsyncQueue, job: Any, timeout: float | None) -> JobInfo:
    """:meth:`AsyncQueue.wait`'s body."""
    t = _seconds(timeout)
    loop = asyncio.get_running_loop()
    opening = asyncio.ensure_future(aq._call(aq.queue._watch, job))
    try:
        waiter: JobWaiter = await asyncio.shield(opening)
    except asyncio.CancelledError:
        # Opened in that instant: close it once it is there.
        opening.add_done_callback(
            lambda f: f.result().close() if not f.cancelled() and f.exception() is None else None
        )
        raise
    try:
        if not waiter.done:
            fired: asyncio.Future[None] = loop.create_future()

            def fire() -> None:
                if not fired.done():
                    fired.set_result(None)

            waiter.on_done(_soon(loop, fire))
            aq._waits.add(fired)
            try:
                # Cancelling the awaiting task raises CancelledError here.
                await asyncio.wait({fired}, timeout=t)
            finally:
                aq._waits.discard(fired)
        if aq.queue.closed:  # closed meanwhile (its threads too): this raises
            return waiter.job()
        return await aq._call(waiter.job)
    finally:
        waiter.close()


class AsyncSubscription:
    """:meth:`AsyncQueue.subscribe`'s stream: ``async for event in sub``
    (ends once it is closed or the queue closes), ``await sub.next(timeout)``
    (None at the timeout), ``close()``, ``async with``. Events wait in the
    native buffer; the loop is woken when one arrives, never blocked."""

    def __init__(self, sub: Subscription) -> None:
        self.subscription = sub
        self._ready = asyncio.Event()
        sub._set_notify(_soon(asyncio.get_running_loop(), self._ready.set))

    async def next(self, timeout: float | None = None) -> Event | None:
        """The next event within ``timeout`` seconds (None: no limit), or
        None. Once the subscription has ended and its buffer is drained:
        :class:`QueueClosedError` (``StorageError`` once first when a remote
        feed lost its connection)."""
        t = _seconds(timeout)
        loop = asyncio.get_running_loop()
        end = None if t is None else loop.time() + t
        while True:
            # Cleared before looking: an event that lands after the look
            # sets it again (the buffer went from empty to not).
            self._ready.clear()
            ev = self.subscription.try_next()
            if ev is not None:
                return ev
            left = None if end is None else end - loop.time()
            if left is not None and left <= 0:
                return None
            try:
                await asyncio.wait_for(self._ready.wait(), left)
            except asyncio.TimeoutError:
                return None

    def __aiter__(self) -> AsyncSubscription:
        return self

    async def __anext__(self) -> Event:
        try:
            ev = await self.next()
        except QueueClosedError:
            raise StopAsyncIteration from None
        assert ev is not None
        return ev

    def close(self) -> None:
        """End it (idempotent): buffered events can still be read, then the
        iteration stops."""
        self.subscription.close()

    @property
    def closed(self) -> bool:
        return self.subscription.closed

    async def __aenter__(self) -> AsyncSubscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

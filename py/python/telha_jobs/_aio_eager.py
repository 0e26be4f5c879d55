"""The first step of an ``AsyncWorker`` handler, run at once (issue 52).

A handler that finishes without waiting (a no-op, a cache hit, a handler
that only computes) needs no task of its own: ``AsyncWorker`` runs each
handler's coroutine up to its first real wait right where the job starts,
in a context of its own (so :func:`telha_jobs.current_lease` is the job's),
and only a coroutine that did wait gets a task, which goes on from there
(:class:`Resume` hands the task what the coroutine waits on, and every
later send or throw, cancellation included, back to the coroutine). This is
what Python 3.12's eager task factory does, for 3.9 and up; it saves the
task, its scheduling and a loop turn per job that needs none.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Coroutine, Generator
from typing import Any

from ._lease import Lease, _current


class Done:
    """The handler returned ``value`` without waiting."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class Raised:
    """The handler raised ``error`` before its first wait (its outcome is
    settled in a task, in ``context``)."""

    __slots__ = ("error", "context")

    def __init__(self, error: BaseException, context: contextvars.Context) -> None:
        self.error = error
        self.context = context


class Waiting:
    """The handler waits on ``yielded``: ``coro`` goes on in a task, in
    ``context``."""

    __slots__ = ("coro", "yielded", "context")

    def __init__(self, coro: Coroutine[Any, Any, Any], yielded: Any, context: contextvars.Context) -> None:
        self.coro = coro
        self.yielded = yielded
        self.context = context


class Later:
    """``awaitable`` is not a coroutine (a Future, an object with
    ``__await__``, or something that is not awaitable at all): awaited in a
    task as before, in ``context``."""

    __slots__ = ("awaitable", "context")

    def __init__(self, awaitable: Any, context: contextvars.Context) -> None:
        self.awaitable = awaitable
        self.context = context


def _step(handler: Callable[[Any], Any], lease: Lease, context: contextvars.Context) -> Done | Raised | Waiting | Later:
    _current.set(lease)
    try:
        got = handler(lease.job)
    except Exception as e:  # noqa: BLE001 - the handler's own error: its outcome
        return Raised(e, context)
    if not asyncio.iscoroutine(got):
        return Later(got, context)
    try:
        yielded = got.send(None)
    except StopIteration as stop:
        return Done(stop.value)
    except Exception as e:  # noqa: BLE001 - raised before its first wait
        return Raised(e, context)
    return Waiting(got, yielded, context)


def first_step(handler: Callable[[Any], Any], lease: Lease) -> Done | Raised | Waiting | Later:
    """Run ``handler(lease.job)`` up to its first wait, in a new context
    where the current lease is ``lease``."""
    context = contextvars.copy_context()
    return context.run(_step, handler, lease, context)


class Resume:
    """Await the rest of a coroutine whose first step already ran and
    yielded ``yielded``: the awaiting task waits on that, then every value
    (or exception, as a cancellation) it gets goes into the coroutine."""

    __slots__ = ("coro", "yielded")

    def __init__(self, coro: Coroutine[Any, Any, Any], yielded: Any) -> None:
        self.coro = coro
        self.yielded = yielded

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, yielded = self.coro, self.yielded
        while True:
            try:
                sent = yield yielded
            except GeneratorExit:  # the task is being closed: so is the coroutine
                coro.close()
                raise
            except BaseException as e:  # noqa: BLE001 - thrown in by the task: the coroutine's to handle
                try:
                    yielded = coro.throw(e)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    yielded = coro.send(sent)
                except StopIteration as stop:
                    return stop.value

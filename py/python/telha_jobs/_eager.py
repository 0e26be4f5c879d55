"""Eager handler tasks for :class:`~telha_jobs.aio.AsyncWorker`: Python
3.12's ``asyncio.Task(..., eager_start=True)``, and the same semantics on
3.11.

An eager task runs its coroutine's first step at once, inside the call that
creates it, as the current task: a handler that finishes without waiting (a
no-op, a cache hit) costs no scheduling and no loop turn. On 3.11 the task
is an ordinary ``asyncio.Task`` (the C one: every later step is the loop's
usual one); only its first step, which ``Task.__init__`` hands to
``loop.call_soon``, is taken and run right here instead, with the running
task left and the new one entered exactly as the loop would for that step.
So ``asyncio.current_task()`` is the handler's own task, its context is the
task's copy, and ``asyncio.timeout()`` / ``cancel()`` reach the handler, as
with 3.12's eager tasks. Where this cannot be done safely (a task factory of
the user's, a loop whose ``call_soon`` cannot be taken over for the moment
of the task's creation, e.g. uvloop's) the task is created as usual.
"""

from __future__ import annotations

import asyncio
import sys
from asyncio import tasks as _tasks
from collections.abc import Coroutine
from typing import Any

__all__ = ["NATIVE_EAGER", "eager_task", "new_grab"]

NATIVE_EAGER = sys.version_info >= (3, 12)


class _Grab:
    """Stands in for ``loop.call_soon`` while a Task is created: keeps the
    first step the Task schedules instead of scheduling it."""

    __slots__ = ("callback", "args", "context", "more")

    def __init__(self) -> None:
        self.callback: Any = None
        self.args: tuple[Any, ...] = ()
        self.context: Any = None
        self.more: list[tuple[Any, tuple[Any, ...], Any]] | None = None  # calls past the first

    def __call__(self, callback: Any, *args: Any, context: Any = None) -> None:
        if self.callback is None:
            self.callback, self.args, self.context = callback, args, context
        else:
            if self.more is None:
                self.more = []
            self.more.append((callback, args, context))


def new_grab() -> _Grab:
    """A `_Grab` for `eager_task` to use again and again on one loop."""
    return _Grab()


def _can_take_over(loop: asyncio.AbstractEventLoop) -> bool:
    """A loop whose ``call_soon`` an instance attribute may shadow for a moment."""
    d = getattr(loop, "__dict__", None)
    return isinstance(d, dict) and "call_soon" not in d


def eager_task(
    loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, None], grab: _Grab | None = None
) -> asyncio.Task[None]:
    """A task for ``coro`` on ``loop`` (the running loop, called from its
    thread) that has already run its first step when this returns: done,
    if the coroutine never waited. ``grab``: a `_Grab` of the caller's to
    use again (one per loop; it is free again before the step runs)."""
    if loop.get_task_factory() is not None:
        return loop.create_task(coro)  # the user's factory decides
    if NATIVE_EAGER:
        return asyncio.Task(coro, loop=loop, eager_start=True)  # type: ignore[call-arg,unused-ignore]
    if not _can_take_over(loop):
        return loop.create_task(coro)
    if grab is None:
        grab = _Grab()
    loop.call_soon = grab  # type: ignore[method-assign,assignment]  # shadows the method for this instance only
    try:
        task: asyncio.Task[None] = _Task(coro, loop=loop)
    finally:
        del loop.call_soon
    callback, args, context, more = grab.callback, grab.args, grab.context, grab.more
    grab.callback = grab.context = grab.more = None  # free for the next task
    if more is not None or context is None:  # not the one step expected: schedule what came, as usual
        if callback is not None:
            loop.call_soon(callback, *args, context=context)
        for callback, args, context in more or ():
            loop.call_soon(callback, *args, context=context)
        return task
    # The loop runs a task's step with no other task current: leave the
    # running one (the lease loop, or a handler whose end started this
    # job) for the step, as `Handle._run` would run it between the two.
    running = _current_task(loop)
    if running is not None:
        _leave_task(loop, running)
    try:
        context.run(callback, *args)
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as e:  # noqa: BLE001 - reported as the loop reports a callback's
        loop.call_exception_handler({"message": "Exception in eager task step", "exception": e, "task": task})
    finally:
        if running is not None:
            _enter_task(loop, running)
    return task


_Task = asyncio.Task
_current_task = _tasks.current_task
_enter_task = _tasks._enter_task
_leave_task = _tasks._leave_task

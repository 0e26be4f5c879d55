"""``eager_task`` (issue 52): an AsyncWorker's handler task runs its first
step inside the call that creates it, as its own current task, on 3.11 as
on >= 3.12; everything after that step is an ordinary task's."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest

from telha_jobs._eager import eager_task

var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")


def test_a_task_that_never_waits_is_done_when_created_as_its_own_current_task() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        outer = asyncio.current_task()
        seen: list[Any] = []

        async def handler() -> None:
            var.set("inside")
            seen.append((asyncio.current_task(), var.get()))

        t = eager_task(loop, handler())
        assert t.done() and t.exception() is None  # ran through, no loop turn
        assert seen == [(t, "inside")]
        assert asyncio.current_task() is outer  # the caller is current again
        assert var.get() == "unset"  # the step ran in the task's own context
        assert "call_soon" not in vars(loop)  # the loop's own call_soon is back
        assert t not in asyncio.all_tasks()

    asyncio.run(main())


def test_a_task_that_waits_goes_on_as_an_ordinary_task() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        steps: list[str] = []
        owners: list[Any] = []

        async def handler() -> None:
            steps.append("first")
            owners.append(asyncio.current_task())
            await asyncio.sleep(0.001)
            owners.append(asyncio.current_task())
            steps.append("second")

        t = eager_task(loop, handler())
        assert steps == ["first"] and not t.done()  # up to its first wait, right here
        assert t in asyncio.all_tasks()
        await t
        assert steps == ["first", "second"] and owners == [t, t]

    asyncio.run(main())


def test_a_timeout_entered_in_the_first_step_cancels_that_task_only() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        outer = asyncio.current_task()
        assert outer is not None

        async def handler() -> str:
            try:
                async with asyncio.timeout(0.01):
                    await asyncio.sleep(5)
            except TimeoutError:
                return "timed out"
            return "slept"

        t = eager_task(loop, handler())  # type: ignore[arg-type]
        assert await t == "timed out"
        assert outer.cancelling() == 0  # the caller was never cancelled

    asyncio.run(main())


def test_cancel_and_errors_reach_the_task() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()

        async def sleeper() -> None:
            await asyncio.sleep(5)

        t = eager_task(loop, sleeper())
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t

        async def boom() -> None:
            raise ValueError("at once")

        b = eager_task(loop, boom())
        assert b.done() and isinstance(b.exception(), ValueError)

    asyncio.run(main())


def test_a_task_factory_of_the_users_is_honoured() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        made: list[Any] = []

        def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Task[Any]:
            t = asyncio.Task(coro, loop=loop, **kw)
            made.append(t)
            return t

        loop.set_task_factory(factory)
        ran: list[str] = []

        async def handler() -> None:
            ran.append("ran")

        t = eager_task(loop, handler())
        assert made == [t] and ran == [] and not t.done()  # an ordinary, scheduled task
        await t
        assert ran == ["ran"]

    asyncio.run(main())

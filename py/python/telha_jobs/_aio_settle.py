"""The completions of :class:`~telha_jobs.aio.AsyncWorker` (mixed in):
gathered into ``complete_many`` calls, one per loop tick (embedded) or
``settle_linger`` after the first (remote); and, while handlers finish
without waiting, carried by the lease loop's one call per batch
(``_complete_then_lease``: the last batch completed and the next leased,
on a pool thread, while the loop runs the batch between)."""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ._errors import CancelledError, LeaseLostError, QueueClosedError
from ._lease import Lease
from ._native import MAX_BATCH, Job, _complete_then_lease
from ._remote import Prefetch, SettleBatch, lease_job_id, one_per_job
from ._worker_rules import outcome, refused

if TYPE_CHECKING:
    from ._native import CancelWait
    from .aio import AsyncQueue

log = logging.getLogger("telha_jobs")
T = TypeVar("T")

# An item waiting for a ``complete_many``: the lease, its job, the result.
Pending = tuple[Lease, Job, Any]

# A `_complete_then_lease` answer: complete_many's answers (or the
# exception that refused them all), the jobs leased (or the lease's).
Carried = tuple["list[object] | BaseException", "list[Job] | BaseException"]

# The most carried calls out at once (see AsyncWorker._lease_loop), and
# the Worker's threads that run them: side by side, the store's work for
# one call beside the other's (no-op handlers: one thread ran at 97 % while
# the loop waited for it; two, the same CPU per job, +5 % jobs/s, measured).
CARRIED = 2
CARRIERS = 2

# The most ``complete_many`` calls out at once (see AsyncWorker._pump).
SENDS = 4


def _answers(call: Callable[[], Sequence[object]], n: int) -> Sequence[object]:
    """A ``complete_many``'s answers, on a pool thread: one per job, or
    every job's the same when the call failed as a whole."""
    try:
        return call()
    except QueueClosedError as e:
        return [e] * n
    except Exception:  # noqa: BLE001 - a result that does not encode, the server unreachable
        return [SettleBatch.UNSENT] * n


def _started(started: threading.Event, call: Callable[[], T]) -> T:
    """Run ``call`` on a pool thread, saying first that it began."""
    started.set()
    return call()


class _Settling:
    """Completions and the carried call; the AsyncWorker has the rest."""

    queue: AsyncQueue
    worker_id: str
    kinds: str | Sequence[str] | None
    scope: Any
    counts: dict[str, int]
    settle_batch: int
    settle_linger: float
    settle_calls: int
    settle_sent: int
    _loop: asyncio.AbstractEventLoop
    _cancel: CancelWait
    _prefetch: Prefetch | None
    _leases: dict[tuple[str, int], Lease]
    _out: list[Pending]
    _sending: set[asyncio.Task[None]]
    _flush_at: asyncio.Handle | None
    _carrying: bool
    _carrier: ThreadPoolExecutor | None  # runs the carried calls (`CARRIERS` threads)
    _error: Callable[[str, BaseException], None]

    def _carry(self, most: int, wait: bool) -> tuple[list[Pending], asyncio.Future[Carried]]:
        """Send the gathered completions and the next lease (``most``, no
        waiting) in one call on the carrier thread (``wait``: it is idle,
        and the call starts now); completions gather for the next such
        call until `_end_carry`."""
        self._carrying = True
        batch: list[Pending] = []
        if self._out:
            if self._flush_at is not None:
                self._flush_at.cancel()
                self._flush_at = None
            batch, self._out = one_per_job(self._out, MAX_BATCH, lease_job_id)
            self.settle_calls += 1
            self.settle_sent += len(batch)
        then = [lease._then for lease, _, _ in batch]
        call = functools.partial(
            _complete_then_lease, self.queue.queue,
            [job for _, job, _ in batch], [r for _, _, r in batch],
            then if any(t is not None for t in then) else None,
            self.worker_id, most, kinds=self.kinds, scope=self.scope,
        )
        started = threading.Event()
        if self._carrier is None:
            self._carrier = ThreadPoolExecutor(CARRIERS, thread_name_prefix=f"{self.worker_id}-carry")
        fut: asyncio.Future[Carried] = self._loop.run_in_executor(self._carrier, _started, started, call)
        if wait:
            # Until the thread is inside the call: it needs the GIL to read
            # the call's arguments, which the batch about to run would hold
            # until the loop next waits (the store would then work after
            # the batch ran, not beside it).
            started.wait(0.002)
        return batch, fut

    async def _collect(
        self, calls: collections.deque[tuple[list[Pending], asyncio.Future[Carried]]]
    ) -> list[tuple[Job, float | None]]:
        """The answer of the first `_carry` call of ``calls``, taken off
        once answered: its completions booked, its leases. (Cancelled while
        it waits, the call stays first: the lease loop collects it as it
        ends, so its completions are counted exactly once.)"""
        batch, fut = calls[0]
        try:
            done, leased = await asyncio.shield(fut)
        except asyncio.CancelledError:
            self._cancel.cancel()
            raise
        except BaseException:
            calls.popleft()
            raise
        calls.popleft()
        if batch:
            if isinstance(done, QueueClosedError):
                done = [done] * len(batch)
            elif isinstance(done, BaseException):  # refused as a whole: a result that does not encode
                done = [SettleBatch.UNSENT] * len(batch)
            await self._book(batch, done)
        if isinstance(leased, BaseException):
            raise leased
        return [(job, None) for job in leased]

    def _give_back_carried(self, fut: asyncio.Future[Carried]) -> None:
        got = None if fut.cancelled() or fut.exception() is not None else fut.result()[1]
        for job in got if isinstance(got, list) else ():
            try:
                self.queue._pool.submit(self.queue.queue.release, job)
            except RuntimeError:  # the pool is shut down: the lease expires
                return

    def _end_carry(self) -> None:
        """The lease loop no longer carries completions: send what gathered."""
        if self._carrying:
            self._carrying = False
            if self._out:
                self._flush_now()

    async def _guarded(self, what: str, coro: Awaitable[None]) -> None:
        try:
            await coro
        except Exception as e:  # noqa: BLE001 - logged and counted, never a dead task
            self._error(what, e)

    def _complete(self, lease: Lease, result: Any) -> None:
        """Queue a completion for a ``complete_many``."""
        if self._leases.pop(lease.key, None) is not lease:
            return  # released by stop(), or failed for its timeout, already
        self._out.append((lease, lease.job, result))
        if self._carrying:
            return  # the lease loop's next call takes it (`_carry`)
        if len(self._out) >= self.settle_batch:
            self._pump()  # a full batch goes now
        elif not self._sending and self._flush_at is None:
            # After this loop tick (every completion it brings rides along);
            # on a remote queue `settle_linger` after the first while there
            # are prefetched leases to go on with (without, no lingering).
            loop = asyncio.get_running_loop()
            p = self._prefetch
            if p is not None and self.settle_linger > 0 and p.waiting:
                self._flush_at = loop.call_later(self.settle_linger, self._flush_now)
            else:
                self._flush_at = loop.call_soon(self._flush_now)

    def _flush_now(self) -> None:
        """Send what is gathered (the tick or the linger ended, or the
        prefetch ran dry: the batch's leases may hold the server back)."""
        if self._flush_at is not None:
            self._flush_at.cancel()
            self._flush_at = None
        self._pump()

    def _pump(self) -> None:
        """Start ``complete_many`` calls: a partial batch only when no call
        is out, full ones beside those out, up to `SENDS` at once (each call
        waits for the GIL to hand back its answer, up to 5 ms on a busy loop)."""
        if self._carrying:
            return  # the lease loop's next call takes them (`_carry`)
        while self._out and len(self._sending) < SENDS and (
            not self._sending or len(self._out) >= self.settle_batch
        ):
            batch, self._out = one_per_job(self._out, self.settle_batch, lease_job_id)
            task = asyncio.get_running_loop().create_task(
                self._guarded("sending completions", self._send(batch))
            )
            self._sending.add(task)
            task.add_done_callback(self._sent)

    def _sent(self, task: asyncio.Task[None]) -> None:
        self._sending.discard(task)
        self._pump()

    async def _drain(self) -> None:
        """Send every gathered completion (stop())."""
        self._carrying = False
        if self._flush_at is not None:
            self._flush_at.cancel()
            self._flush_at = None
        while self._sending or self._out:
            self._pump()
            if self._sending:
                await asyncio.wait(set(self._sending))

    def _complete_call(self, batch: list[Pending]) -> Callable[[], Sequence[object]]:
        """The ``complete_many`` call for ``batch``."""
        then = [lease._then for lease, _, _ in batch]
        return functools.partial(
            self.queue.queue.complete_many,
            [job for _, job, _ in batch],
            [r for _, _, r in batch],
            then=then if any(t is not None for t in then) else None,
        )

    async def _send(self, batch: list[Pending]) -> None:
        """One ``complete_many``."""
        self.settle_calls += 1
        self.settle_sent += len(batch)
        call = functools.partial(_answers, self._complete_call(batch), len(batch))
        await self._book(batch, await asyncio.get_running_loop().run_in_executor(self.queue._pool, call))

    async def _book(self, batch: list[Pending], errors: Sequence[object]) -> None:
        """Each job's answer booked on its own, so one that cannot be stored
        fails alone (a call refused as a whole, as for a result that does
        not encode, is retried job by job)."""
        if errors.count(None) == len(batch):  # the usual answer: all completed
            self.counts["completed"] += len(batch)
            return
        for (lease, _, result), err in zip(batch, errors):
            if err is None:
                self.counts["completed"] += 1
            elif err is SettleBatch.UNSENT:
                await self._guarded(f"completing {lease.job.id}", self._settle_now(lease, "complete", result, None))
            elif isinstance(err, Exception):
                await self._guarded(f"completing {lease.job.id}", self._settle_failed(lease, "complete", err))

    async def _settle_outcome(self, lease: Lease, e: Exception) -> None:
        how, arg, extra = outcome(e, lease)
        if self._leases.pop(lease.key, None) is not lease:
            return  # released by stop(), or failed for its timeout, already
        await self._settle_now(lease, how, arg, extra)

    async def _settle_now(self, lease: Lease, how: str, arg: Any, extra: Any) -> None:
        q = self.queue
        try:
            if how == "complete":
                await q.complete(lease.job, arg, then=lease._then)
                self.counts["completed"] += 1
            elif how == "snooze":
                await q.snooze(lease.job, arg)
                self.counts["snoozed"] += 1
            elif how == "retry":
                await q.fail(lease.job, arg, retryable=True, retry_in=extra)
                self.counts["failed"] += 1
            else:
                await q.fail(lease.job, arg, retryable=bool(extra))
                self.counts["failed"] += 1
        except Exception as e:  # noqa: BLE001 - a result that does not encode is one (see refusal)
            await self._settle_failed(lease, how, e)

    async def _settle_failed(self, lease: Lease, how: str, err: Exception) -> None:
        """Book a refused settle, as one job's answer (see `refused`)."""
        count, report, fail = refused(self.worker_id, lease, how, err, self.queue.queue.remote)
        if count is not None:
            self.counts[count] += 1
        if report is not None:
            self._error(report, err)
        if fail is not None:
            await self._fail_for(lease, fail[0], fail[1], "failed")

    async def _fail_for(self, lease: Lease, reason: str, retryable: bool, count: str) -> None:
        """Fail a job the Worker itself gave up on (see Worker._fail_for)."""
        try:
            await self.queue.fail(lease.job, reason, retryable=retryable)
            self.counts[count] += 1
        except CancelledError:
            self.counts["cancelled"] += 1
        except LeaseLostError:
            self.counts["lost"] += 1
        except Exception as e:  # noqa: BLE001 - logged and counted
            self._error(f"failing {lease.job.id}", e)

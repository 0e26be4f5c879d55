"""``AsyncWorker``: coroutine handlers on one event loop, leased for every
free slot at once and completed in batches.

One lease task takes as many jobs as there are idle handler slots in one
``lease_many`` (or, on a remote queue, one take from the prefetch), waiting
off the loop when nothing is ready (the store's commit notifier, or the
server, wakes that wait: no polling); each job runs in a handler task of
its own; completions gather into ``complete_many`` calls, one per loop tick
(an embedded queue) or ``settle_linger`` after the first (a remote one);
one heartbeat task extends every due lease in one call. Every store call
runs on a thread of the AsyncQueue's pool, never on the loop, and the hot
path (lease, run, complete) makes one thread hop per batch, not per job.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import math
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ._errors import CancelledError, LeaseLostError, QueueClosedError
from ._aio_beat import _Heartbeats
from ._eager import NATIVE_EAGER, eager_task
from ._lease import Lease, _current
from ._native import MAX_BATCH, CancelWait, Job, Queue
from ._remote import Prefetch, SettleBatch, fresh, one_per_job
from ._worker_rules import (
    NEW_COUNTS,
    default_worker_id,
    failure_reason,
    outcome,
    prefetch_size,
    refused,
    seconds,
    settle_batch_size,
)

if TYPE_CHECKING:
    from .aio import AsyncQueue

__all__ = ["AsyncWorker"]

log = logging.getLogger("telha_jobs")
T = TypeVar("T")

# An item waiting for a ``complete_many``: the lease, its job, the result.
Pending = tuple[Lease, Job, Any]

# The most ``complete_many`` calls out at once (see AsyncWorker._pump).
SENDS = 4


def _lease_job_id(item: Pending) -> str:
    """A pending completion's job id, as its lease keeps it (``Job.id``
    formats the UUID on every call)."""
    return item[0].key[0]


class AsyncWorker(_Heartbeats):
    """The :class:`~telha_jobs.Worker` for coroutine handlers: up to
    ``concurrency`` handlers run at once as tasks on the calling loop; a
    heartbeat task extends held leases at a third of the TTL each was
    granted with (``job.lease_ttl``, as :class:`~telha_jobs.Worker` does).
    ``await run()`` until ``await stop()`` (or SIGINT / SIGTERM when on the
    main thread). Cancel requests, :class:`~telha_jobs.Snooze`,
    :class:`~telha_jobs.Retry` and the kind's ``timeout`` work as in
    :class:`~telha_jobs.Worker` (a handler past its timeout is told its
    lease is lost, not cancelled: its task runs on until it checks).

    Jobs are leased for all free slots at once (refilled once a quarter of
    the slots are free, or when none runs), and completions go in
    ``complete_many`` batches of up to ``settle_batch`` (default: 64 on a
    remote queue, ``max(64, concurrency // 4)`` on an embedded one): once per loop tick
    on an embedded queue, ``settle_linger`` seconds after the first on a
    remote one (which also leases ahead: ``prefetch``). ``settle_calls`` /
    ``settle_sent`` count the ``complete_many`` calls made and the
    completions they carried."""

    def __init__(
        self,
        queue: AsyncQueue | Queue,
        handler: Callable[[Job], Awaitable[Any]],
        *,
        worker_id: str | None = None,
        kinds: str | Sequence[str] | None = None,
        scope: str | Sequence[str] | None = None,
        concurrency: int = 4,
        poll_wait: float = 1.0,
        stop_timeout: float = 30.0,
        prefetch: int | None = None,
        settle_batch: int | None = None,
        settle_linger: float = 0.002,
    ) -> None:
        from .aio import AsyncQueue

        if isinstance(queue, Queue):
            queue = AsyncQueue(queue)
        if not isinstance(queue, AsyncQueue):
            raise TypeError(f"queue must be an AsyncQueue, got {type(queue).__name__}")
        if not callable(handler):
            raise TypeError("handler must be an async callable: await handler(job)")
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise TypeError("concurrency must be an int >= 1")
        self.queue = queue
        self.handler = handler
        self.worker_id = worker_id or default_worker_id()
        self.kinds = kinds
        self.scope = scope
        self.concurrency = concurrency
        self.poll_wait = seconds(poll_wait, "poll_wait")
        self.stop_timeout = seconds(stop_timeout, "stop_timeout")
        self.prefetch = prefetch_size(prefetch, concurrency, queue.queue.remote)
        # A tick's completions in as few calls as they fit (on a busy loop
        # each answer waits for the GIL); remote: 64, a modest message.
        self.settle_batch = (
            settle_batch_size(settle_batch) if settle_batch is not None
            else 64 if queue.queue.remote else max(64, concurrency // 4)
        )
        self.settle_linger = seconds(settle_linger, "settle_linger")
        # With handlers running, a lease call waits until a quarter of the
        # slots (and the lease-ahead) are free. On an embedded queue it
        # leases that many ahead too (a remote one has its prefetch): a
        # freed slot starts a job at once, not after a lease round trip;
        # none waits here past the prefetch fraction of its TTL (`fresh`).
        self._refill_at = max(1, math.ceil(concurrency / 4))
        self._ahead_max = 0 if queue.queue.remote else self._refill_at
        self._ahead: collections.deque[tuple[Job, float]] = collections.deque()
        self._prefetch: Prefetch | None = None
        self._cancel = CancelWait()  # ends a waiting lease call when stopping
        # Running deliveries by (job id, generation), as in Worker.
        self._leases: dict[tuple[str, int], Lease] = {}
        self._handlers: dict[Lease, asyncio.Task[None]] = {}  # the running handler tasks
        self._running = 0  # handler slots in use
        self._starting = False  # inside `_start`: a task may run through eagerly
        self._slot: asyncio.Event | None = None  # set when a slot frees
        # Completions waiting for a complete_many, and the calls out.
        self._out: list[Pending] = []
        self._sending: set[asyncio.Task[None]] = set()
        self._flush_at: asyncio.Handle | None = None  # the scheduled start of a flush
        self._stopping: asyncio.Event | None = None
        self._done: asyncio.Event | None = None
        # Set to wake the heartbeat task early: a new lease is due before
        # the time it sleeps until (`_beat_at`; 0 while it is not sleeping).
        self._wake: asyncio.Event | None = None
        self._beat_at = 0.0
        self._lease_task: asyncio.Task[None] | None = None
        self.counts = dict.fromkeys(NEW_COUNTS, 0)
        # Why it stopped by itself (its queue was closed under it), or None.
        self.stop_reason: str | None = None
        self._halting: asyncio.Task[None] | None = None
        # Calls that carried completions, and the completions they carried.
        self.settle_calls = 0
        self.settle_sent = 0

    _loop: asyncio.AbstractEventLoop  # the loop run() runs on

    # -- lifecycle ---------------------------------------------------------

    async def run(self) -> None:
        """Lease and handle jobs until stopped."""
        self._loop = loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._done = asyncio.Event()
        self._wake = asyncio.Event()
        self._slot = asyncio.Event()
        self._cancel = CancelWait()
        sigs: list[signal.Signals] = []
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                try:
                    loop.add_signal_handler(sig, lambda: asyncio.ensure_future(self.stop()))
                    sigs.append(sig)
                except (NotImplementedError, RuntimeError):
                    pass
        if self.prefetch > 0:
            # Opens the stream first: a bad filter or an unreachable server raises here.
            self._prefetch = await self.queue._call(
                Prefetch, self.queue.queue, self.worker_id, self.concurrency + self.prefetch,
                self.kinds, self.scope, self._count_threadsafe(loop), 1,
                lambda: loop.call_soon_threadsafe(self._flush_now),
            )
        self._lease_task = asyncio.create_task(self._lease_loop())
        heart = asyncio.create_task(self._heartbeat())
        try:
            await self._done.wait()
        finally:
            for sig in sigs:
                loop.remove_signal_handler(sig)
            for t in (self._lease_task, heart):
                t.cancel()
            await asyncio.gather(self._lease_task, heart, return_exceptions=True)

    async def stop(self, timeout: float | None = None) -> None:
        """Stop leasing, give running handlers ``timeout`` seconds, send the
        gathered completions, then cancel the handlers still running and
        release their jobs (no attempt spent)."""
        if self._stopping is None or self._done is None:
            return
        if self._stopping.is_set():
            await self._done.wait()
            return
        self._stopping.set()
        self._cancel.cancel()  # a waiting lease call returns now
        assert self._slot is not None
        self._slot.set()
        if self._prefetch is not None:
            self._prefetch.stop()
        timeout = self.stop_timeout if timeout is None else seconds(timeout, "timeout")
        try:
            if self._lease_task is not None and self._lease_task is not asyncio.current_task():
                # It hands back what it leased as the stop began.
                await asyncio.wait({self._lease_task}, timeout=5.0)
            if self._handlers:
                await asyncio.wait(
                    set(self._handlers.values()), timeout=None if timeout == math.inf else timeout
                )
            await self._wind_down()
        finally:
            self._done.set()

    async def _wind_down(self) -> None:
        """stop()'s part after the handlers had their time."""
        # Completions go out before anything is released (see Worker.stop).
        await self._drain()
        if self._prefetch is not None:
            try:
                await self.queue._call(self._prefetch.close)
            except Exception as e:  # noqa: BLE001 - the AsyncQueue closed: its threads are gone
                log.warning("worker %s: stopping: %s", self.worker_id, failure_reason(e))
            await asyncio.sleep(0)  # its counts (call_soon_threadsafe) land
        ahead = [job for job, _ in self._ahead]  # leased ahead, never started
        self._ahead.clear()
        left = list(self._leases.values())
        self._leases.clear()
        for t in list(self._handlers.values()):
            t.cancel()
        for lease in left:
            lease._mark_lost()
        # Both in one release_many: one write (one round trip when remote).
        await self._release_all(ahead + [lease.job for lease in left])

    async def _release_all(self, jobs: list[Job]) -> None:
        """Release the jobs this worker still holds at stop, in one call."""
        if not jobs:
            return
        try:
            answers = await self.queue.release_many(jobs)
        except Exception as e:  # noqa: BLE001 - they expire and are leased again
            log.warning("worker %s: release of %d jobs failed: %s", self.worker_id, len(jobs), e)
            return
        for job, a in zip(jobs, answers):
            if a is None:
                self.counts["released"] += 1
            elif isinstance(a, CancelledError):  # the release recorded it cancelled
                self.counts["cancelled"] += 1
            else:
                log.warning("worker %s: release of %s failed: %s", self.worker_id, job.id, a)

    # -- errors --------------------------------------------------------------

    def _error(self, what: str, e: BaseException) -> None:
        """An exception from the Worker's own machinery: logged and counted
        (``counts["errors"]``); the task that met it goes on. A queue
        closed under the Worker stops it instead (:attr:`stop_reason`)."""
        if isinstance(e, QueueClosedError) or self.queue.queue.closed:
            self._halt(f"its queue was closed ({failure_reason(e)})")
            return
        log.error("worker %s: %s failed: %s", self.worker_id, what, failure_reason(e), exc_info=e)
        self.counts["errors"] += 1

    def _halt(self, why: str) -> None:
        """The Worker cannot go on: say why and stop it (in a task of its own)."""
        if self.stop_reason is not None or self._stopping is None or self._stopping.is_set():
            return
        self.stop_reason = why
        log.error("worker %s: stopping: %s", self.worker_id, why)
        self._halting = asyncio.ensure_future(self.stop())

    async def _pause(self, secs: float) -> None:
        """Wait ``secs`` or until the Worker stops."""
        assert self._stopping is not None
        try:
            await asyncio.wait_for(self._stopping.wait(), secs)
        except asyncio.TimeoutError:
            pass

    def _count_threadsafe(self, loop: asyncio.AbstractEventLoop) -> Callable[[str], None]:
        def count(what: str) -> None:
            loop.call_soon_threadsafe(self._bump, what)
        return count

    def _bump(self, what: str) -> None:
        self.counts[what] += 1

    # -- leasing -------------------------------------------------------------

    async def _lease_loop(self) -> None:
        assert self._stopping is not None and self._slot is not None
        while not self._stopping.is_set():
            free = self.concurrency + self._ahead_max - self._running - len(self._ahead)
            if free <= 0 or (self._running > 0 and free < self._refill_at):
                self._slot.clear()
                await self._slot.wait()
                continue
            try:
                got = await self._take(min(free, MAX_BATCH))
            except Exception as e:  # noqa: BLE001 - logged and counted, or it stops the Worker
                self._error("lease", e)
                await self._pause(1.0)
                continue
            if got is None:  # the prefetch ended
                if not self._stopping.is_set():  # by itself: the queue closed
                    self._halt("its lease stream ended: the queue was closed")
                return
            if self._stopping.is_set():
                # Leased in the instant the stop began: hand them straight back.
                for job, _ in got:
                    await self._give_back_now(job)
                return
            for job, since in got:
                if self._running < self.concurrency:
                    self._start(job, since)
                else:
                    self._ahead.append((job, time.time() if since is None else since))

    async def _take(self, most: int) -> list[tuple[Job, float | None]] | None:
        """Up to ``most`` leases, waiting off the loop (up to ``poll_wait``)
        when none is ready; None once the prefetch ended."""
        p = self._prefetch
        if p is None:
            jobs: list[Job] = await self._off_loop(functools.partial(
                self.queue.queue.lease_many, self.worker_id, most, kinds=self.kinds,
                scope=self.scope, wait=self.poll_wait, cancel=self._cancel,
            ))
            return [(job, None) for job in jobs]
        got: list[tuple[Job, float]] = await self._off_loop(functools.partial(p.take_many, most, self.poll_wait))
        if not got and p.ended:
            return None
        return list(got)

    async def _off_loop(self, call: Callable[[], T]) -> T:
        """A lease call on a pool thread."""
        fut = asyncio.get_running_loop().run_in_executor(self.queue._pool, call)
        try:
            return await asyncio.shield(fut)
        except asyncio.CancelledError:
            # Leases taken in that instant would have no handler: give them back.
            self._cancel.cancel()
            fut.add_done_callback(self._give_back)
            raise

    def _give_back(self, fut: asyncio.Future[Any]) -> None:
        got = None if fut.cancelled() or fut.exception() is not None else fut.result()
        for item in got or ():
            job = item[0] if isinstance(item, tuple) else item
            try:
                self.queue._pool.submit(self.queue.queue.release, job)
            except RuntimeError:  # the pool is shut down: the lease expires
                return

    async def _give_back_now(self, job: Job) -> None:
        """Release a job leased as the stop began (no handler ran it)."""
        try:
            await self.queue.release(job)
            self.counts["released"] += 1
        except Exception as e:  # noqa: BLE001 - it expires and is leased again
            log.warning("worker %s: release of %s failed: %s", self.worker_id, job.id, e)

    # -- running -------------------------------------------------------------

    def _start(self, job: Job, since: float | None) -> None:
        lease = Lease(job, since)
        self._leases[lease.key] = lease
        self._running += 1
        # Wake the heartbeat only when this lease is due before its next pass
        # (it sleeps up to 0.5 s: longer than a short TTL).
        if lease.next_beat < self._beat_at and self._wake is not None:
            self._wake.set()
        # Eagerly where the loop allows it (`eager_task`): a handler that
        # finishes without waiting runs through right here, no loop turn.
        # On 3.11 only while no other handler is waiting (this job is the
        # one running): there the by-hand eager start pays for handlers that
        # finish at once, and cost waiting ones (2,000 sleeping handlers)
        # about a fifth of their rate, measured.
        outer, self._starting = self._starting, True
        try:
            if NATIVE_EAGER or self._running == 1:
                task = eager_task(self._loop, self._run_one(lease))
            else:
                task = self._loop.create_task(self._run_one(lease))
        finally:
            self._starting = outer
        if not task.done():
            self._handlers[lease] = task

    async def _run_one(self, lease: Lease) -> None:
        _current.set(lease)  # this task's own context
        job = lease.job
        try:
            try:
                result = await self.handler(job)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                await self._guarded(f"settling {job.id}", self._settle_outcome(lease, e))
            else:
                try:
                    self._complete(lease, result)
                except Exception as e:  # noqa: BLE001 - never a dead task
                    self._error(f"settling {job.id}", e)
        finally:
            # Its slot is free (in the task, not a done-callback: one loop
            # turn less per job).
            self._handlers.pop(lease, None)
            self._running -= 1
            if not self._starting:
                # (Run through inside `_start`: its caller's loop starts the
                # next, rather than a recursion as deep as the lease-ahead.)
                self._start_ahead()
            assert self._slot is not None
            self._slot.set()

    def _start_ahead(self) -> None:
        """Start the jobs leased ahead while slots are free; release those
        that waited too long (no attempt spent)."""
        if self._stopping is not None and self._stopping.is_set():
            return  # released by stop()
        now = time.time()
        while self._ahead and self._running < self.concurrency:
            job, leased = self._ahead.popleft()
            if fresh(job, leased, now):
                self._start(job, leased)
                continue
            self.counts["prefetch_released"] += 1
            try:
                self.queue._pool.submit(self.queue.queue.release, job)
            except RuntimeError:  # the pool is shut down: the lease expires
                return

    async def _guarded(self, what: str, coro: Awaitable[None]) -> None:
        try:
            await coro
        except Exception as e:  # noqa: BLE001 - logged and counted, never a dead task
            self._error(what, e)

    # -- settling --------------------------------------------------------------

    def _complete(self, lease: Lease, result: Any) -> None:
        """Queue a completion for a ``complete_many``."""
        if self._leases.pop(lease.key, None) is not lease:
            return  # released by stop(), or failed for its timeout, already
        self._out.append((lease, lease.job, result))
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
        while self._out and len(self._sending) < SENDS and (
            not self._sending or len(self._out) >= self.settle_batch
        ):
            batch, self._out = one_per_job(self._out, self.settle_batch, _lease_job_id)
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
        if self._flush_at is not None:
            self._flush_at.cancel()
            self._flush_at = None
        while self._sending or self._out:
            self._pump()
            if self._sending:
                await asyncio.wait(set(self._sending))

    async def _send(self, batch: list[Pending]) -> None:
        """One ``complete_many``; each job's answer booked on its own, so one
        that cannot be stored fails alone (a call refused as a whole, as
        for a result that does not encode, is retried job by job)."""
        self.settle_calls += 1
        self.settle_sent += len(batch)
        then = [lease._then for lease, _, _ in batch]
        call = functools.partial(
            self.queue.queue.complete_many,
            [job for _, job, _ in batch],
            [r for _, _, r in batch],
            then=then if any(t is not None for t in then) else None,
        )
        errors: Sequence[object]
        try:
            errors = await asyncio.get_running_loop().run_in_executor(self.queue._pool, call)
        except QueueClosedError as e:
            errors = [e] * len(batch)
        except Exception:  # noqa: BLE001 - a result that does not encode, the server unreachable
            errors = [SettleBatch.UNSENT] * len(batch)
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

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
While handlers finish without waiting (embedded queue), one call per batch
completes the last batch and leases the next while the loop runs this one
(`_aio_settle._Settling._carry`).
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
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from ._errors import CancelledError, LeaseLostError, QueueClosedError
from ._aio_beat import _Heartbeats
from ._aio_settle import CARRIED, Carried, Pending, _Settling
from ._eager import NATIVE_EAGER, eager_task, new_grab
from ._lease import Lease, _current
from ._native import MAX_BATCH, CancelWait, Job, Queue
from ._otel import process_span
from ._remote import Prefetch, fresh
from ._worker_rules import (
    NEW_COUNTS,
    default_worker_id,
    failure_reason,
    outcome,
    min_prefetch_size,
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

class AsyncWorker(_Settling, _Heartbeats):
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
    remote one (which also leases ahead: ``prefetch``, at least
    ``min_prefetch`` kept ahead; the server sizes the window by the
    handlers' rate). ``settle_calls`` /
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
        min_prefetch: int = 0,
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
        self.min_prefetch = min_prefetch_size(min_prefetch, self.prefetch, queue.queue.remote)
        # A tick's completions in as few calls as they fit (on a busy loop
        # each answer waits for the GIL); remote: 64, a modest message.
        self.settle_batch = (
            settle_batch_size(settle_batch) if settle_batch is not None
            else 64 if queue.queue.remote else max(64, concurrency // 4)
        )
        self.settle_linger = seconds(settle_linger, "settle_linger")
        # With handlers running, a lease call waits until a quarter of the
        # slots (and the lease-ahead) are free. On an embedded queue it
        # leases twice that many ahead (a remote one has its prefetch), so
        # the refill is sent while a quarter's worth still waits here: a
        # freed slot starts a job at once, not after a lease round trip
        # (one quarter ahead: c=64 sleeping handlers 0.81x ideal, two:
        # 0.83x, measured); none waits here past the prefetch fraction of
        # its TTL (`fresh`).
        self._refill_at = max(1, math.ceil(concurrency / 4))
        self._ahead_max = 0 if queue.queue.remote else 2 * self._refill_at
        self._ahead: collections.deque[tuple[Job, float]] = collections.deque()
        self._prefetch: Prefetch | None = None
        self._cancel = CancelWait()  # ends a waiting lease call when stopping
        # Running deliveries by (job id, generation), as in Worker.
        self._leases: dict[tuple[str, int], Lease] = {}
        self._handlers: dict[Lease, asyncio.Task[None]] = {}  # the running handler tasks
        self._running = 0  # handler slots in use
        self._starting = False  # inside `_start`: a task may run through eagerly
        self._through = False  # every job of the last batch ran through in `_start`
        self._carrying = False  # the lease loop's next call carries the completions
        self._carrier: ThreadPoolExecutor | None = None  # runs the carried calls
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
    _grab: Any  # the loop's `eager_task` helper

    # -- lifecycle ---------------------------------------------------------

    async def run(self) -> None:
        """Lease and handle jobs until stopped."""
        self._loop = loop = asyncio.get_running_loop()
        self._grab = new_grab()
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
                self.concurrency + self.min_prefetch,
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
            # Cancelled from outside (not stop()): what finished still goes
            # out, and is counted.
            await self._drain()
            if self._carrier is not None:
                self._carrier.shutdown(wait=False)
                self._carrier = None

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
        # The next lease already on a pool thread (`_carry`): sent before a
        # batch starts when the batch before ran through (handlers that
        # finish without waiting), so the store leases the next batch, and
        # completes the last one's jobs, while the loop runs this one.
        # Up to `CARRIED` of them out at once, side by side on the Worker's
        # own threads (`CARRIERS`): the store goes on with one while the
        # loop takes the other's answer.
        calls: collections.deque[tuple[list[Pending], asyncio.Future[Carried]]] = collections.deque()
        try:
            while not self._stopping.is_set():
                free = self.concurrency + self._ahead_max - self._running - len(self._ahead)
                if not calls:
                    if free <= 0 or (self._running > 0 and free < self._refill_at):
                        self._slot.clear()
                        await self._slot.wait()
                        continue
                    pending: Awaitable[list[tuple[Job, float | None]] | None] = self._take(min(free, MAX_BATCH))
                else:
                    pending = self._collect(calls)
                try:
                    got = await pending
                except Exception as e:  # noqa: BLE001 - logged and counted, or it stops the Worker
                    self._end_carry()
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
                if got and self._through and not self.queue.queue.remote and free >= self._refill_at:
                    # The last batch ran through: this one likely will too,
                    # and leaves its slots free as it goes, so each call
                    # leases twice the room (fewer, larger writes: no-op
                    # handlers at concurrency 64 +12 %, measured; what a
                    # batch does not start waits in the lease-ahead).
                    while len(calls) < CARRIED:
                        calls.append(self._carry(min(2 * free, MAX_BATCH), wait=not calls))
                else:
                    self._end_carry()
                through = 0
                for job, since in got:
                    if self._running < self.concurrency:
                        through += self._start(job, since)
                    else:
                        self._ahead.append((job, time.time() if since is None else since))
                self._through = bool(got) and through == len(got)
        finally:
            self._carrying = False
            try:
                # Stopping, or this task cancelled (run()'s, from outside):
                # each call still out is collected, its completions counted
                # and what it leased given back unrun.
                while calls:
                    try:
                        left = await self._collect(calls)
                    except Exception:  # noqa: BLE001 - nothing was leased
                        left = []
                    for job, _ in left:
                        await self._give_back_now(job)
            except asyncio.CancelledError:
                # Cancelled again: what is still out goes back once answered.
                for _, fut in calls:
                    fut.add_done_callback(self._give_back_carried)
                raise

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

    def _start(self, job: Job, since: float | None, eager: bool = False) -> bool:
        """Start a handler task for ``job``; True when it already ran through.
        ``eager``: start it eagerly on 3.11 too (a slot's next job)."""
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
        # one running), or for the job a slot takes as its handler ends
        # (`eager`: it starts in that same loop step, not a loop turn later;
        # c=64 sleeping handlers 0.83x -> 0.88x ideal, measured): a whole
        # batch started eagerly by hand while others wait cost 2,000
        # sleeping handlers about a fifth of their rate, measured.
        outer, self._starting = self._starting, True
        try:
            if NATIVE_EAGER or eager or self._running == 1:
                task = eager_task(self._loop, self._run_one(lease), self._grab)
            else:
                task = self._loop.create_task(self._run_one(lease))
        finally:
            self._starting = outer
        if task.done():
            return True
        self._handlers[lease] = task
        return False

    async def _run_one(self, lease: Lease) -> None:
        _current.set(lease)  # this task's own context
        job = lease.job
        try:
            try:
                with process_span(job):  # a no-op unless the app imported OpenTelemetry
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
                self._start(job, leased, eager=True)
                continue
            self._release_stale(job)
        p = self._prefetch
        if p is not None and self._running < self.concurrency and p.waiting:
            # Remote: the prefetch's leases are this Worker's lease-ahead; a
            # freed slot takes its next job there at once, not through the
            # lease task (a loop turn, a quarter of the slots, a thread hop).
            got, stale = p.take_ready(self.concurrency - self._running)
            for job, leased in got:
                self._start(job, leased, eager=True)
            for job in stale:
                self._release_stale(job)

    def _release_stale(self, job: Job) -> None:
        """Give back a lease that waited here too long (no attempt spent)."""
        self.counts["prefetch_released"] += 1
        try:
            self.queue._pool.submit(self.queue.queue.release, job)
        except RuntimeError:  # the pool is shut down: the lease expires
            pass

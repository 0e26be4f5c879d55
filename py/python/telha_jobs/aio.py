"""asyncio front end: :class:`AsyncQueue`, whose calls never block the event
loop (each store call runs on a thread of the queue's executor, with the GIL
released while RocksDB works), and :class:`AsyncWorker`."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar

from ._aio_events import AsyncSubscription, wait
from ._aio_control import _AsyncControl
from ._aio_schedules import _AsyncSchedules
from ._errors import CancelledError, LeaseLostError, QueueClosedError, TelhaError
from ._lease import Lease, _current
from ._native import CancelWait, Job, JobInfo, Queue, connect
from ._remote import Prefetch, SettleBatch
from ._types import Enqueued
from .worker import (
    NEW_COUNTS,
    UNSTORABLE,
    after_heartbeat,
    default_worker_id,
    delivery,
    failure_reason,
    outcome,
    refusal,
    prefetch_size,
    restore_progress,
    seconds,
    settle_batch_size,
    take_progress,
    timed_out,
    timeout_reason,
)

__all__ = ["AsyncQueue", "AsyncSubscription", "AsyncWorker"]

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
        cls, url: str, token: str | None = None, *, timeout: float | None = None
    ) -> AsyncQueue:
        """Connect to a ``telha serve`` server off the event loop (see
        :func:`telha_jobs.connect`)."""
        loop = asyncio.get_running_loop()
        q = await loop.run_in_executor(None, functools.partial(connect, url, token, timeout=timeout))
        return cls(q)

    async def _call(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(fn, *args, **kw))

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

    async def release(self, job: Job) -> None:
        await self._call(self.queue.release, job)

    async def snooze(self, job: Job, delay: Any) -> None:
        """As :meth:`Queue.snooze`."""
        await self._call(self.queue.snooze, job, delay)


class AsyncWorker:
    """The :class:`~telha_jobs.Worker` for coroutine handlers: ``concurrency``
    tasks each lease a job and ``await handler(job)``; a heartbeat task
    extends held leases at a third of the TTL each was granted with
    (``job.lease_ttl``, as :class:`~telha_jobs.Worker` does). ``await run()`` until
    ``await stop()`` (or SIGINT / SIGTERM when on the main thread).
    Cancel requests, :class:`~telha_jobs.Snooze`, :class:`~telha_jobs.Retry`
    and the kind's ``timeout`` work as in :class:`~telha_jobs.Worker` (a
    handler past its timeout is told its lease is lost, not cancelled: its
    task runs on until it checks). On a remote queue it leases ahead and
    settles completions in batches as :class:`~telha_jobs.Worker` does
    (``prefetch``, ``settle_batch``, ``settle_linger``)."""

    def __init__(
        self,
        queue: AsyncQueue,
        handler: Callable[[Job], Awaitable[Any]],
        *,
        worker_id: str | None = None,
        kinds: str | Sequence[str] | None = None,
        scope: str | Sequence[str] | None = None,
        concurrency: int = 4,
        poll_wait: float = 1.0,
        stop_timeout: float = 30.0,
        prefetch: int | None = None,
        settle_batch: int = 64,
        settle_linger: float = 0.002,
    ) -> None:
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
        self.settle_batch = settle_batch_size(settle_batch)
        self.settle_linger = seconds(settle_linger, "settle_linger")
        self._prefetch: Prefetch | None = None
        self._batch: SettleBatch | None = None
        self._booking: set[asyncio.Task[Any]] = set()  # settles after a batch answer
        # Running deliveries by (job id, generation), as in Worker.
        self._leases: dict[tuple[str, int], Lease] = {}
        self._handlers: set[asyncio.Task[Any]] = set()
        self._stopping: asyncio.Event | None = None
        self._done: asyncio.Event | None = None
        # Set to wake the heartbeat task early: a new lease is due before
        # the time it sleeps until (`_beat_at`; 0 while it is not sleeping).
        self._wake: asyncio.Event | None = None
        self._beat_at = 0.0
        self.counts = dict.fromkeys(NEW_COUNTS, 0)
        # Why it stopped by itself (its queue was closed under it), or None.
        self.stop_reason: str | None = None
        self._halting: asyncio.Task[None] | None = None

    async def run(self) -> None:
        """Lease and handle jobs until stopped."""
        loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._done = asyncio.Event()
        self._wake = asyncio.Event()
        sigs: list[signal.Signals] = []
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                try:
                    loop.add_signal_handler(sig, lambda: asyncio.ensure_future(self.stop()))
                    sigs.append(sig)
                except (NotImplementedError, RuntimeError):
                    pass
        if self.prefetch > 0:
            self._batch = SettleBatch(
                self.queue.queue, self.worker_id,
                lambda lease, result, err: loop.call_soon_threadsafe(self._batched, lease, result, err),
                max_batch=self.settle_batch, linger=self.settle_linger,
            )
            try:
                self._prefetch = await self.queue._call(
                    Prefetch, self.queue.queue, self.worker_id, self.concurrency + self.prefetch,
                    self.kinds, self.scope, self._count_threadsafe(loop), self.concurrency,
                    self._batch.nudge,
                )
            except BaseException:
                self._batch.close()
                self._batch = None
                raise
        poll = self._poll if self._prefetch is None else self._poll_prefetched
        pollers = [asyncio.create_task(poll()) for _ in range(self.concurrency)]
        heart = asyncio.create_task(self._heartbeat())
        try:
            await self._done.wait()
        finally:
            for sig in sigs:
                loop.remove_signal_handler(sig)
            for t in [*pollers, heart]:
                t.cancel()
            await asyncio.gather(*pollers, heart, return_exceptions=True)

    async def stop(self, timeout: float | None = None) -> None:
        """Stop leasing, give running handlers ``timeout`` seconds, then
        cancel them and release their jobs (no attempt spent)."""
        if self._stopping is None or self._done is None:
            return
        if self._stopping.is_set():
            await self._done.wait()
            return
        self._stopping.set()
        if self._prefetch is not None:
            self._prefetch.stop()
        timeout = self.stop_timeout if timeout is None else seconds(timeout, "timeout")
        if self._handlers:
            await asyncio.wait(set(self._handlers), timeout=None if timeout == float("inf") else timeout)
        try:
            await self._wind_down()
        finally:
            self._done.set()

    async def _wind_down(self) -> None:
        """stop()'s part after the handlers had their time."""
        # Batched completions go out before anything is released (see Worker.stop).
        try:
            if self._batch is not None:
                await self.queue._call(self._batch.close)
                await asyncio.sleep(0)  # the answers' callbacks run
                if self._booking:
                    await asyncio.gather(*self._booking, return_exceptions=True)
            if self._prefetch is not None:
                await self.queue._call(self._prefetch.close)
                await asyncio.sleep(0)  # its counts (call_soon_threadsafe) land
        except Exception as e:  # noqa: BLE001 - the AsyncQueue closed: its threads are gone
            log.warning("worker %s: stopping: %s", self.worker_id, failure_reason(e))
        left = list(self._leases.values())
        self._leases.clear()
        for t in list(self._handlers):
            t.cancel()
        for lease in left:
            lease._mark_lost()
            try:
                await self.queue.release(lease.job)
                self.counts["released"] += 1
            except CancelledError:  # the release recorded it cancelled
                self.counts["cancelled"] += 1
            except Exception as e:  # noqa: BLE001 - the others are still released
                log.warning("worker %s: release of %s failed: %s", self.worker_id, lease.job.id, e)

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

    async def _poll(self) -> None:
        assert self._stopping is not None
        while not self._stopping.is_set():
            try:
                job = await self.queue.lease_next(
                    self.worker_id, kinds=self.kinds, scope=self.scope, wait=self.poll_wait
                )
            except Exception as e:  # noqa: BLE001 - logged and counted, or it stops the Worker
                self._error("lease", e)
                await self._pause(1.0)
                continue
            if job is None:
                continue
            if self._stopping.is_set():
                await self._give_back_now(job)
                return
            task = asyncio.create_task(self._run_one(job))
            self._handlers.add(task)
            try:
                await asyncio.shield(task)
            finally:
                self._handlers.discard(task)

    async def _pause(self, seconds: float) -> None:
        """Wait ``seconds`` or until the Worker stops."""
        assert self._stopping is not None
        try:
            await asyncio.wait_for(self._stopping.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def _give_back_now(self, job: Job) -> None:
        """Release a job leased as the stop began (no handler ran it)."""
        try:
            await self.queue.release(job)
            self.counts["released"] += 1
        except Exception as e:  # noqa: BLE001 - it expires and is leased again
            log.warning("worker %s: release of %s failed: %s", self.worker_id, job.id, e)

    def _count_threadsafe(self, loop: asyncio.AbstractEventLoop) -> Callable[[str], None]:
        def count(what: str) -> None:
            loop.call_soon_threadsafe(self._bump, what)
        return count

    def _bump(self, what: str) -> None:
        self.counts[what] += 1

    async def _poll_prefetched(self) -> None:
        assert self._stopping is not None and self._prefetch is not None
        p = self._prefetch
        loop = asyncio.get_running_loop()
        while not self._stopping.is_set():
            try:
                fut = loop.run_in_executor(self.queue._pool, p.take, self.poll_wait)
            except Exception as e:  # noqa: BLE001 - the AsyncQueue's threads are gone
                self._error("taking a prefetched lease", e)
                await self._pause(1.0)
                continue
            try:
                got = await asyncio.shield(fut)
            except asyncio.CancelledError:
                # A lease taken in that instant would have no handler: give it back.
                fut.add_done_callback(self._give_back)
                raise
            except Exception as e:  # noqa: BLE001 - logged and counted; the task goes on
                self._error("taking a prefetched lease", e)
                await self._pause(1.0)
                continue
            if got is None:
                if p.ended:
                    if not self._stopping.is_set():  # the feed ended by itself: the queue closed
                        self._halt("its lease stream ended: the queue was closed")
                    return
                continue
            if self._stopping.is_set():
                await self._give_back_now(got[0])
                return
            task = asyncio.create_task(self._run_one(*got))
            self._handlers.add(task)
            try:
                await asyncio.shield(task)
            finally:
                self._handlers.discard(task)

    def _give_back(self, fut: asyncio.Future[tuple[Job, float] | None]) -> None:
        got = None if fut.cancelled() or fut.exception() is not None else fut.result()
        if got is not None:
            try:
                self.queue._pool.submit(self.queue.queue.release, got[0])
            except RuntimeError:  # the pool is shut down: the lease expires
                pass

    def _batched(self, lease: Lease, result: Any, err: object) -> None:
        """A batched completion's answer (on the loop; see `SettleBatch`):
        each job booked on its own, so one that cannot be stored fails alone."""
        if err is None:
            self.counts["completed"] += 1
            return
        if err is SettleBatch.UNSENT:
            coro = self._settle_now(lease, "complete", result, None)
        elif isinstance(err, Exception):
            coro = self._settle_failed(lease, "complete", err)
        else:
            return
        task = asyncio.ensure_future(self._guarded(f"booking the completion of {lease.job.id}", coro))
        self._booking.add(task)
        task.add_done_callback(self._booking.discard)

    async def _guarded(self, what: str, coro: Awaitable[None]) -> None:
        try:
            await coro
        except Exception as e:  # noqa: BLE001 - logged and counted, never a dead task
            self._error(what, e)

    async def _run_one(self, job: Job, since: float | None = None) -> None:
        lease = Lease(job, since)
        self._leases[delivery(job)] = lease
        # Wake the heartbeat only when this lease is due before its next pass
        # (it sleeps up to 0.5 s: longer than a short TTL).
        if lease.next_beat < self._beat_at and self._wake is not None:
            self._wake.set()
        _current.set(lease)  # this task's own context
        try:
            result = await self.handler(job)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            await self._guarded(f"settling {job.id}", self._settle_outcome(lease, e))
        else:
            await self._guarded(f"settling {job.id}", self._settle(lease, "complete", result, None))

    async def _settle_outcome(self, lease: Lease, e: Exception) -> None:
        await self._settle(lease, *outcome(e, lease))

    async def _settle(self, lease: Lease, how: str, arg: Any, extra: Any) -> None:
        if self._leases.pop(delivery(lease.job), None) is not lease:
            return  # released by stop(), or failed for its timeout, already
        if how == "complete" and self._batch is not None and self._batch.add(lease, lease.job, arg):
            return  # booked by `_batched` once its batch is sent
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
        """Book a refused settle, as one job's answer (see Worker._settle_failed)."""
        why = refusal(how, err)
        if why == "cancelled":
            lease._mark_lost("cancelled")
            self.counts["cancelled"] += 1
        elif why == "lost":
            lease._mark_lost()
            self.counts["lost"] += 1
            log.warning(
                "worker %s: lease of %s (generation %d) was lost before it settled",
                self.worker_id,
                lease.job.id,
                lease.job.generation,
            )
        elif why == "closed":
            self._error(f"settling {lease.job.id}", err)
        elif why == "unstorable":
            reason = UNSTORABLE + failure_reason(err)
            log.error("worker %s: job %s: %s", self.worker_id, lease.job.id, reason)
            await self._fail_for(lease, reason, False, "failed")
        else:
            self._error(f"settling {lease.job.id} ({how})", err)
            if how != "fail":
                await self._fail_for(lease, f"could not {how}: {failure_reason(err)}", True, "failed")

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

    async def _time_out(self, leases: Sequence[Lease]) -> None:
        for lease in leases:
            held = self._leases.pop(delivery(lease.job), None) is lease
            lease._mark_lost("timeout")
            if not held:
                continue
            log.warning("worker %s: job %s %s", self.worker_id, lease.job.id, timeout_reason(lease))
            await self._fail_for(lease, timeout_reason(lease), True, "timed_out")

    async def _heartbeat(self) -> None:
        while True:
            try:
                await self._beat_once()
            except Exception as e:  # noqa: BLE001 - never lose the heartbeat task
                self._error("heartbeat", e)
                await self._pause(0.1)

    async def _beat_once(self) -> None:
        """One pass of the heartbeat task."""
        now = time.time()
        late = timed_out(list(self._leases.values()), now)
        if late:
            await self._time_out(late)
        due = [l for l in self._leases.values() if l.next_beat <= now]
        if due:
            sent = time.time()
            failed = False
            reports = take_progress(due)  # the handlers' latest progress rides along
            try:
                answers = await self.queue.extend_answers(
                    [l.job for l in due], self.worker_id, reports
                )
            except Exception as e:  # noqa: BLE001 - counted; a closed queue stops the Worker
                restore_progress(due, reports)
                self._error("heartbeat", e)
                # Unrenewed past its deadline, a lease is lost (see Worker).
                failed = True
                answers = ["renewed" if time.time() < l.expires else "lost" for l in due]
            now = after_heartbeat(self.worker_id, due, answers, failed, sent)
        nxt = min(
            (min(l.next_beat, l.timeout_at) for l in self._leases.values()), default=now + 0.5
        )
        pause = min(max(nxt - now, 0.01), 0.5)
        assert self._wake is not None
        self._wake.clear()
        self._beat_at = now + pause
        try:
            await asyncio.wait_for(self._wake.wait(), pause)
        except asyncio.TimeoutError:
            pass
        finally:
            self._beat_at = 0.0

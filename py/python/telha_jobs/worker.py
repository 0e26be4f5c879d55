"""``Worker``: a pool of threads that lease, run a handler, heartbeat and settle."""

from __future__ import annotations

import collections
import logging
import signal
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ._errors import CancelledError, InvalidArgumentError, LeaseLostError, QueueClosedError, TelhaError
from ._lease import Lease, PermanentError, Retry, Snooze, _current
from ._native import CancelWait, Job, Queue
from ._otel import process_span
from ._remote import TAKE_AHEAD, Prefetch, SettleBatch, fresh, lease_job_id
from ._worker_beat import _Beats
from ._worker_rules import (
    NEW_COUNTS,
    LeaseAhead,
    STOP_GRACE,
    default_worker_id,
    failure_reason,
    join_timeout,
    outcome,
    min_prefetch_size,
    prefetch_size,
    refused,
    seconds,
    settle_batch_default,
    settle_batch_size,
)

__all__ = ["Worker", "default_worker_id"]

log = logging.getLogger("telha_jobs")


class Worker(_Beats):
    """Runs ``handler(job)`` for leased jobs on ``concurrency`` threads.

    - A normal return completes the job, the return value as its result
      (bytes as they are, other values by the payload convention).
    - An exception fails it (retried with backoff until ``max_attempts``);
      :class:`PermanentError` fails it for good; :class:`Retry` fails it to
      be retried after its own delay; :class:`Snooze` snoozes it (no
      attempt spent).
    - A cancel requested while it runs is seen at the next heartbeat:
      ``current_lease().cancelled`` / ``.lost`` turn True and
      ``current_lease().check()`` raises :class:`CancelledError` (a
      :class:`LeaseLostError`); whatever the handler then does, the job ends
      ``cancelled``.
    - A handler running past its kind's ``timeout`` (``job.timeout``) is
      told its lease is lost (``check()`` raises) and the job is failed
      retryably with "timed out after ...", at once.
    - Every lease is heartbeated (``extend``) at a third of the TTL it was
      granted with (``job.lease_ttl``; never from the deadline, which over
      ``connect()`` is on the server's clock). A lost lease sets
      ``current_lease().lost`` so the handler can stop. The latest
      ``current_lease().progress(value)`` rides on the lease's next heartbeat.
    - :meth:`stop` stops leasing, lets running handlers finish within the
      timeout, then releases what is left without spending attempts.
      SIGINT / SIGTERM do the same while :meth:`run` blocks on the main thread.
    - On a remote queue (``connect()``) it leases ahead: the server pushes
      up to ``prefetch`` leases beyond the running ones through one PollJobs
      stream (default ``max(4 * concurrency, 256)``; 0: one ``lease_next``
      call per job). That is the upper bound: the window follows the
      handlers (the server keeps about 100 ms of their work unsettled, its
      settle rate × 100 ms, at least ``concurrency + min_prefetch``;
      ``min_prefetch`` default 0, equal to ``prefetch``: a fixed window), so
      slow handlers leave a backlog to other workers. A prefetched lease that waited past a
      quarter of its TTL is released back unstarted (no attempt spent;
      counted ``prefetch_released``) instead of reaching a handler.
      Completions are sent in ``complete_many`` batches of up to
      ``settle_batch`` (default: what the stream holds, ``concurrency +
      prefetch``, at least 64), ``settle_linger`` seconds after the first while
      prefetched leases wait (at once when none does); each
      job's answer is booked as a single ``complete``'s would be, and
      :meth:`stop` sends what is queued before it returns.
    - On an embedded queue each thread leases a few jobs at once (as many
      as its handler runs in about 5 ms, at most 16; one that waited past a
      quarter of its TTL is released unstarted) and completions go in
      ``complete_many`` batches (up to ``settle_batch``, default 64) of
      what gathered while the last call ran.

    Handlers run in threads: the queue releases the GIL around every store
    call, so leasing and settling overlap with Python work in other threads.
    """

    def __init__(
        self,
        queue: Queue,
        handler: Callable[[Job], Any],
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
        if not isinstance(queue, Queue):
            raise TypeError(f"queue must be a telha_jobs.Queue, got {type(queue).__name__}")
        if not callable(handler):
            raise TypeError("handler must be callable: handler(job) -> result")
        if isinstance(concurrency, bool) or not isinstance(concurrency, int):
            raise TypeError("concurrency must be an int")
        if concurrency < 1:
            raise InvalidArgumentError(f"concurrency must be >= 1, got {concurrency}")
        self.queue = queue
        self.handler = handler
        self.worker_id = worker_id or default_worker_id()
        self.kinds = list(kinds) if isinstance(kinds, (list, tuple)) else kinds
        self.scope = list(scope) if isinstance(scope, (list, tuple)) else scope
        self.concurrency = concurrency
        self.poll_wait = seconds(poll_wait, "poll_wait")
        self.stop_timeout = seconds(stop_timeout, "stop_timeout")
        self.prefetch = prefetch_size(prefetch, concurrency, queue.remote)
        self.min_prefetch = min_prefetch_size(min_prefetch, self.prefetch, queue.remote)
        self.settle_batch = (
            settle_batch_size(settle_batch) if settle_batch is not None
            else settle_batch_default(concurrency, self.prefetch, queue.remote)
        )
        self.settle_linger = seconds(settle_linger, "settle_linger")
        self._prefetch: Prefetch | None = None
        self._batch: SettleBatch | None = None
        self._cancel = CancelWait()
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._cond = threading.Condition()
        # Running deliveries by (job id, generation): see `delivery`.
        self._leases: dict[tuple[str, int], Lease] = {}
        # Prefetched leases each handler thread took and has not started.
        self._ahead: list[collections.deque[tuple[Job, float]]] = []
        self._threads: list[threading.Thread] = []
        self._heart: threading.Thread | None = None
        self._counts = dict.fromkeys(NEW_COUNTS, 0)
        self._beat_at = 0.0  # when the heartbeat thread next wakes by itself
        self._stop_begun = False
        self._stop_reason: str | None = None  # why it stopped by itself

    # -- lifecycle ---------------------------------------------------------

    @property
    def running(self) -> bool:
        """True between :meth:`start` and the end of :meth:`stop`."""
        return bool(self._threads) and not self._stopped.is_set()

    @property
    def stop_reason(self) -> str | None:
        """Why the Worker stopped by itself (its queue was closed under
        it), or None: it is running, or :meth:`stop` stopped it."""
        with self._cond:
            return self._stop_reason

    @property
    def counts(self) -> dict[str, int]:
        """Jobs this worker completed, failed, found lost, released on stop,
        saw cancelled, snoozed, and failed for running past their timeout;
        ``errors``: exceptions its own machinery met (a store call that
        failed, say), each logged, none of which ended a thread."""
        with self._cond:
            return dict(self._counts)

    def start(self) -> None:
        """Start the handler and heartbeat threads and return at once."""
        if self._threads:
            raise RuntimeError("Worker already started")
        # Completions go in complete_many batches: on a remote queue
        # lingering while there is other work (see SettleBatch); on an
        # embedded one a batch is what gathered while the previous call ran.
        remote = self.queue.remote
        if remote and self.prefetch == 0:
            pass  # one call per job, as asked
        else:
            self._batch = SettleBatch(
                self.queue,
                self.worker_id,
                self._batched,
                max_batch=self.settle_batch,
                linger=self.settle_linger if remote else 0.0,
                busy=self._has_work,
                all_done=self._all_completed,
                job_id=lease_job_id,
            )
        if self.prefetch > 0:
            assert self._batch is not None
            # Opens the stream first: a bad filter or an unreachable server raises here.
            try:
                self._prefetch = Prefetch(
                    self.queue,
                    self.worker_id,
                    self.concurrency + self.prefetch,
                    self.kinds,
                    self.scope,
                    self._count,
                    self.concurrency,
                    self._batch.nudge,
                    self.concurrency + self.min_prefetch,
                )
            except BaseException:
                self._batch.close()
                self._batch = None
                raise
        self._heart = threading.Thread(
            target=self._heartbeat, name=f"{self.worker_id}-heartbeat", daemon=True
        )
        self._heart.start()
        for i in range(self.concurrency):
            loop = self._loop if self._prefetch is None else self._loop_prefetched
            t = threading.Thread(target=loop, name=f"{self.worker_id}-{i}", daemon=True)
            self._threads.append(t)
            t.start()

    def run(self) -> None:
        """Start, then block until :meth:`stop` (from another thread) or
        SIGINT / SIGTERM (when called on the main thread) has stopped it."""
        requested = threading.Event()
        restore: dict[signal.Signals, Any] = {}
        # Handlers go in before any thread starts: a signal that lands while
        # the pool is still starting must stop it, not raise KeyboardInterrupt.
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                restore[sig] = signal.signal(sig, lambda *_: requested.set())
        try:
            self.start()
            while not self._stopped.is_set():
                if requested.wait(0.2):
                    log.info("worker %s: signal received, stopping", self.worker_id)
                    self.stop(self.stop_timeout)
        finally:
            for sig, h in restore.items():
                signal.signal(sig, h)

    def stop(self, timeout: float | None = None) -> None:
        """Stop leasing; wait up to ``timeout`` seconds (default
        ``stop_timeout``) for running handlers; send the completions
        gathered; release the jobs still held (no attempt spent). Returns
        within ``timeout`` (plus at most ``STOP_GRACE``, 0.5 s, for that
        network part) even when the server stops answering: the rest goes
        on in the background, and a lease never released expires after its
        TTL. Idempotent; callable from any thread."""
        timeout = self.stop_timeout if timeout is None else seconds(timeout, "timeout")
        with self._cond:
            begun, self._stop_begun = self._stop_begun, True
        if begun:  # another thread stops it: wait for that
            self._stopped.wait(join_timeout(timeout + 10.0))
            return
        self._stopping.set()
        self._cancel.cancel()
        if self._prefetch is not None:
            self._prefetch.stop()
        end = time.monotonic() + timeout
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(join_timeout(end - time.monotonic()))
        finish = threading.Thread(target=self._finish, name=f"{self.worker_id}-stop", daemon=True)
        finish.start()
        finish.join(join_timeout(max(STOP_GRACE, end - time.monotonic())))
        if finish.is_alive():
            log.warning("worker %s: stop timed out settling and releasing; going on in the background", self.worker_id)
        self._stopped.set()

    def _finish(self) -> None:
        """:meth:`stop`'s network half: the completions queued so far go out,
        then the prefetched leases go back, then the ones handlers hold."""
        if self._batch is not None:
            self._batch.close(5.0)
        if self._prefetch is not None:
            self._prefetch.close()
        with self._cond:
            left = list(self._leases.values())
            self._leases.clear()
            self._cond.notify_all()
        for lease in left:
            lease._mark_lost()
        self._release_all([lease.job for lease in left])
        if self._heart is not None and self._heart is not threading.current_thread():
            self._heart.join(5.0)

    def _release_all(self, jobs: list[Job]) -> None:
        """Release the jobs handlers still held at stop in one
        ``release_many`` (one write; over a remote queue one round trip)."""
        if not jobs:
            return
        try:
            answers = self.queue.release_many(jobs)
        except Exception as e:  # noqa: BLE001 - they expire and are leased again
            log.warning("worker %s: release of %d jobs failed: %s", self.worker_id, len(jobs), e)
            return
        for job, a in zip(jobs, answers):
            if a is None:
                self._count("released")
            elif isinstance(a, CancelledError):  # the release recorded it cancelled
                self._count("cancelled")
            else:
                log.warning("worker %s: release of %s failed: %s", self.worker_id, job.id, a)

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the worker has stopped; True when it has."""
        if timeout is not None:
            timeout = join_timeout(seconds(timeout, "timeout"))
        return self._stopped.wait(timeout)

    def __enter__(self) -> Worker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- threads -----------------------------------------------------------

    def _has_work(self) -> bool:
        """Whether a handler has another lease to go on with (a completion
        may then wait a little to ride in a larger batch)."""
        p = self._prefetch
        return p is not None and (p.waiting > 0 or any(self._ahead))

    def _count(self, what: str) -> None:
        with self._cond:
            self._counts[what] += 1

    def _error(self, what: str, e: BaseException) -> None:
        """An exception from the Worker's own machinery: logged and counted
        (``counts["errors"]``); the thread that met it goes on. A queue
        closed under the Worker is no such error: it stops the Worker."""
        if isinstance(e, QueueClosedError) or self.queue.closed:
            self._halt(f"its queue was closed ({failure_reason(e)})")
            return
        log.error("worker %s: %s failed: %s", self.worker_id, what, failure_reason(e), exc_info=e)
        self._count("errors")

    def _halt(self, why: str) -> None:
        """The Worker cannot go on (its queue was closed): say why, and stop
        it from a thread of its own (stop() joins the Worker's threads)."""
        with self._cond:
            if self._stop_reason is not None or self._stopping.is_set():
                return
            self._stop_reason = why
        log.error("worker %s: stopping: %s", self.worker_id, why)
        threading.Thread(target=self.stop, name=f"{self.worker_id}-halt", daemon=True).start()

    def _give_back(self, job: Job, what: str = "released") -> None:
        """Release a job leased as the stop began, or one that waited too
        long in a lease-ahead (no handler ran it)."""
        try:
            self.queue.release(job)
            self._count(what)
        except TelhaError:
            pass
        except Exception as e:  # noqa: BLE001 - never end the thread
            self._error("releasing a job", e)

    def _loop(self) -> None:
        """An embedded queue's handler thread: it leases a few jobs ahead
        (``LeaseAhead``: as many as its handler runs within a few
        milliseconds), so a fast handler costs one ``lease_many`` per
        handful of jobs instead of a ``lease_next`` each."""
        q = self.queue
        ahead = LeaseAhead()
        while not self._stopping.is_set():
            try:
                jobs = q.lease_many(
                    self.worker_id,
                    ahead.size,
                    kinds=self.kinds,
                    scope=self.scope,
                    wait=self.poll_wait,
                    cancel=self._cancel,
                )
            except Exception as e:  # noqa: BLE001 - logged and counted, or it stops the Worker
                self._error("lease", e)
                self._stopping.wait(1.0)
                continue
            if not jobs:
                continue
            leased = time.time()
            for i, job in enumerate(jobs):
                if self._stopping.is_set():
                    # Leased ahead, or in the instant the stop began: hand it straight back.
                    for rest in jobs[i:]:
                        self._give_back(rest)
                    return
                started = time.time()
                if i and not fresh(job, leased, started):
                    self._give_back(job, "prefetch_released")
                    continue
                self._run_one(job, leased if i else None)
                ahead.ran(time.time() - started)

    def _loop_prefetched(self) -> None:
        """A remote queue's handler thread. The only one (concurrency 1)
        takes the prefetched leases up to ``TAKE_AHEAD`` at a time (one lock
        per handful of jobs), checking each is still fresh before its
        handler starts; with more, one at a time (leases held by a thread
        whose handler is slow would wait while other threads idle)."""
        p = self._prefetch
        assert p is not None
        mine: collections.deque[tuple[Job, float]] = collections.deque()
        self._ahead.append(mine)  # seen by _has_work
        try:
            while not self._stopping.is_set():
                if mine:
                    job, arrived = mine.popleft()
                    if not fresh(job, arrived, time.time()):
                        self._give_back(job, "prefetch_released")
                        continue
                    self._run_one(job, arrived)
                    continue
                most = TAKE_AHEAD if self.concurrency == 1 else 1
                try:
                    got = p.take_many(most, self.poll_wait)
                except Exception as e:  # noqa: BLE001 - logged and counted; the thread goes on
                    self._error("taking a prefetched lease", e)
                    self._stopping.wait(1.0)
                    continue
                if not got:
                    if p.ended:
                        if not self._stopping.is_set():  # the feed ended by itself: the queue closed
                            self._halt("its lease stream ended: the queue was closed")
                        return
                    continue
                mine.extend(got)
        finally:
            # Stopping (or a handler's SystemExit): what this thread took
            # and did not start goes back, no attempt spent.
            left = [job for job, _ in mine]
            mine.clear()
            if left:
                p._give_back(left, "released")

    def _run_one(self, job: Job, since: float | None = None) -> None:
        lease = Lease(job, since)
        with self._cond:
            self._leases[lease.key] = lease
            # Wake the heartbeat only when this lease is due before its next pass.
            if lease.next_beat < self._beat_at:
                self._cond.notify_all()
        token = _current.set(lease)
        try:
            try:
                with process_span(job):  # a no-op unless the app imported OpenTelemetry
                    result = self.handler(job)
            except Exception as e:  # the handler's failure is the job's
                self._settle_guarded(lease, None, e)
            except BaseException:
                # SystemExit / KeyboardInterrupt raised in the handler is not
                # the job's fault: hand it back untouched, then let it end the thread.
                with self._cond:
                    held = self._leases.pop(lease.key, None) is lease
                if held:
                    self._give_back(job)
                raise
            else:
                self._settle_guarded(lease, result, None)
        finally:
            _current.reset(token)

    def _settle_guarded(self, lease: Lease, result: Any, raised: Exception | None) -> None:
        """Settle a handler's outcome; whatever goes wrong doing so is the
        Worker's error (logged, counted), never the end of its thread."""
        try:
            if raised is None:
                self._settle(lease, "complete", result, None)
            else:
                self._settle(lease, *outcome(raised, lease))
        except Exception as e:  # noqa: BLE001 - see the docstring
            self._error(f"settling {lease.job.id}", e)

    def _settle(self, lease: Lease, how: str, arg: Any, extra: Any) -> None:
        with self._cond:
            held = self._leases.pop(lease.key, None) is lease
        if not held:
            return  # released by stop(), or failed for its timeout, already
        if how == "complete" and self._batch is not None and self._batch.add(lease, lease.job, arg):
            if self._prefetch is not None and not self._has_work():
                self._batch.nudge()  # nothing else to do: no lingering
            return  # booked by `_batched` once its batch is sent
        self._settle_now(lease, how, arg, extra)

    def _all_completed(self, n: int) -> None:
        """A batch whose every completion was stored (see `SettleBatch`)."""
        with self._cond:
            self._counts["completed"] += n

    def _batched(self, lease: Lease, result: Any, err: object) -> None:
        """A batched completion's answer (see `SettleBatch`): each job is
        booked on its own, so one that cannot be stored fails alone."""
        try:
            if err is None:
                self._count("completed")
            elif err is SettleBatch.UNSENT:
                self._settle_now(lease, "complete", result, None)
            elif isinstance(err, Exception):
                self._settle_failed(lease, "complete", err)
        except Exception as e:  # noqa: BLE001 - never lose the settle thread
            self._error(f"booking the completion of {lease.job.id}", e)

    def _settle_now(self, lease: Lease, how: str, arg: Any, extra: Any) -> None:
        q = self.queue
        try:
            if how == "complete":
                q.complete(lease.job, arg, then=lease._then)
                self._count("completed")
            elif how == "snooze":
                q.snooze(lease.job, arg)
                self._count("snoozed")
            elif how == "retry":
                q.fail(lease.job, arg, retryable=True, retry_in=extra)
                self._count("failed")
            else:
                q.fail(lease.job, arg, retryable=bool(extra))
                self._count("failed")
        except Exception as e:  # noqa: BLE001 - a result that does not encode is one (see refusal)
            self._settle_failed(lease, how, e)

    def _settle_failed(self, lease: Lease, how: str, err: Exception) -> None:
        """Book a settle the queue refused, as one job's answer: the same
        whether it came from a single call or from a batch (see `refused`)."""
        count, report, fail = refused(self.worker_id, lease, how, err, self.queue.remote)
        if count is not None:
            self._count(count)
        if report is not None:
            self._error(report, err)
        if fail is not None:
            self._fail_for(lease, fail[0], fail[1], "failed")

    def _fail_for(self, lease: Lease, reason: str, retryable: bool, count: str) -> None:
        """Fail a job the Worker itself gave up on (``count``: what to count
        when the queue took it); a refusal is booked as any settle's."""
        try:
            self.queue.fail(lease.job, reason, retryable=retryable)
            self._count(count)
        except CancelledError:
            self._count("cancelled")
        except LeaseLostError:
            self._count("lost")
        except Exception as e:  # noqa: BLE001 - logged and counted
            self._error(f"failing {lease.job.id}", e)

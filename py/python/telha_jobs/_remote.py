"""What a :class:`~telha_jobs.Worker` on a remote queue (``connect()``) adds:
it leases ahead through the server's PollJobs stream (:class:`Prefetch`) and
settles completions in batches (:class:`SettleBatch`), so handler code that
takes one job at a time gets batch round trips.

Both run on one thread of their own; the handlers' threads only take from
and add to them.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ._errors import (
    CancelledError,
    LeaseLostError,
    QueueClosedError,
    StorageError,
    TelhaError,
    UnavailableError,
)
from ._lease import Lease
from ._native import Job, Queue

__all__ = ["PREFETCH_FRACTION", "TAKE_AHEAD", "Prefetch", "SettleBatch", "lease_job_id", "unanswered"]

log = logging.getLogger("telha_jobs")

# A prefetched lease is handed to a handler only within this fraction of its
# TTL after it arrived; later, it is released back (no attempt spent) for
# another worker. Released rather than extended: a lease that waited that
# long waited because every handler of this worker was busy, and extending
# it would keep it waiting here while other workers may be idle; released,
# it goes back to pending at once and the next free worker (this one too,
# through its stream) leases it fresh with a whole TTL. A quarter keeps the
# first heartbeat (due a third of the TTL after the lease) in the future.
PREFETCH_FRACTION = 0.25

# How long one stream wait lasts before the feeder looks around (stop,
# stale leases).
FEED_SLICE = 0.2

# The most prefetched leases the handler thread of a Worker of concurrency
# 1 takes at once: one lock per handful of jobs instead of one per job
# (1.2 µs a job taken one by one, 0.3 µs in 16s).
TAKE_AHEAD = 16


def unanswered(remote: bool, err: BaseException) -> bool:
    """A remote settle that got no answer (``UnavailableError``: timed out,
    connection lost, server restarting) or failed on the server's side
    (``StorageError``): it may have landed, so failing the job now could
    undo a completion; left alone, an unsettled lease expires after its TTL
    and the job runs again."""
    return remote and isinstance(err, (StorageError, UnavailableError))


def fresh(job: Job, arrived: float, now: float) -> bool:
    """Whether a prefetched lease may still go to a handler."""
    return now - arrived <= job.lease_ttl * PREFETCH_FRACTION


class Prefetch:
    """Leases pushed by the server for one worker, at most ``capacity``
    unsettled (running, waiting here or being settled) at once; handler
    threads :meth:`take` them one at a time. With ``floor`` (the worker's
    concurrency) the server sizes the window by time: about 100 ms of the
    handlers' work, at least ``floor``, at most ``capacity``.

    The stream is kept open until :meth:`close`: a server pushes leases
    ahead of time into its stream's buffer, and a stream dropped with leases
    in that buffer would leave them held until their TTL runs out (the job
    then retried as a failed attempt). So :meth:`close` stops the stream
    gracefully (``JobStream.close``: the server stops leasing for it and
    ends it; the client reads it to its end), then releases what it holds
    and what arrived meanwhile.

    ``count(what)`` is told of each lease given back: "prefetch_released"
    (waited too long), "released" (left over at :meth:`close`),
    "cancelled" (the release recorded a cancel), "lost"."""

    def __init__(
        self,
        queue: Queue,
        worker_id: str,
        capacity: int,
        kinds: Any,
        scope: Any,
        count: Callable[[str], None],
        takers: int = 1,
        on_idle: Callable[[], None] = lambda: None,
        floor: int | None = None,
    ) -> None:
        self._queue = queue
        self._takers = takers
        self._idle = 0  # takers waiting with nothing to take
        self._on_idle = on_idle
        # The server keeps between ``floor`` (the worker's concurrency) and
        # ``capacity`` leases unsettled, following the handlers' settle
        # rate: slow handlers leave a backlog to other workers.
        self._open: Callable[[], Any] = lambda: queue._poll_jobs(
            worker_id, capacity, kinds=kinds, scope=scope, floor=floor
        )
        self._worker_id = worker_id
        self._count = count
        self._stream = self._open()  # errors (a bad filter) raise here
        self._buf: collections.deque[tuple[Job, float]] = collections.deque()
        self._cond = threading.Condition()
        self._capacity = capacity
        self._taking = True  # False once the worker stops: takers get None
        self._stopping = False  # the feeder ends
        self._slice = FEED_SLICE
        self._feeder = threading.Thread(target=self._feed, name=f"{worker_id}-prefetch", daemon=True)
        self._feeder.start()

    @property
    def ended(self) -> bool:
        """Whether it stopped (:meth:`stop`, or the queue was closed)."""
        with self._cond:
            return self._stopping or not self._taking

    @property
    def waiting(self) -> int:
        """Leases waiting for a handler. Read without the lock (a deque's
        length is one atomic read): a settle batch asks it while holding
        its own lock, and the feeder calls into the batch holding this one."""
        return len(self._buf)

    def take(self, timeout: float) -> tuple[Job, float] | None:
        """The next fresh lease and when it arrived (``time.time()``),
        waiting up to ``timeout`` seconds; None when none came or the
        worker is stopping. Stale leases met on the way are released."""
        got = self.take_many(1, timeout)
        return got[0] if got else None

    def take_many(self, most: int, timeout: float) -> list[tuple[Job, float]]:
        """Up to ``most`` fresh leases and when each arrived, waiting up to
        ``timeout`` seconds for the first; [] when none came or the worker
        is stopping. Stale leases met on the way are released."""
        end = time.monotonic() + timeout
        stale: list[Job] = []
        got: list[tuple[Job, float]] = []
        with self._cond:
            while self._taking and not self._stopping:
                now = time.time()
                while self._buf and len(got) < most:
                    job, arrived = self._buf.popleft()
                    if fresh(job, arrived, now):
                        got.append((job, arrived))
                    else:
                        stale.append(job)
                if got:
                    break
                left = end - time.monotonic()
                if left <= 0:
                    break
                # Every taker idle: the leases held in a settle batch may be
                # what keeps the server from sending more; let it go now.
                self._idle += 1
                if self._idle >= self._takers:
                    self._on_idle()
                self._cond.wait(left)
                self._idle -= 1
        self._give_back(stale, "prefetch_released")
        return got

    def take_ready(self, most: int) -> tuple[list[tuple[Job, float]], list[Job]]:
        """Up to ``most`` fresh leases already here and when each arrived,
        never waiting, and the stale ones met on the way, for the caller to
        give back (no store call in here: an event loop may call it)."""
        got: list[tuple[Job, float]] = []
        stale: list[Job] = []
        if not self._buf:
            return got, stale
        now = time.time()
        with self._cond:
            if not self._taking or self._stopping:
                return got, stale
            while self._buf and len(got) < most:
                job, arrived = self._buf.popleft()
                if fresh(job, arrived, now):
                    got.append((job, arrived))
                else:
                    stale.append(job)
        return got, stale

    def stop(self) -> None:
        """Stop handing out leases (waiting takers return None); the stream
        is still read until :meth:`close`."""
        with self._cond:
            self._taking = False
            self._cond.notify_all()

    def close(self) -> None:
        """:meth:`stop`; end the stream gracefully (the server stops leasing
        for it and ends it after what it already sent, which is read to the
        end); release every lease still waiting here or that arrived
        meanwhile (no attempt spent)."""
        self.stop()
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._feeder is not threading.current_thread():
            self._feeder.join(FEED_SLICE * 10)
        came: list[Job] = []
        try:
            came = self._stream.close()
        except TelhaError:
            pass
        with self._cond:
            left = [job for job, _ in self._buf] + came
            self._buf.clear()
        self._give_back(left, "released")

    def _give_back(self, jobs: Sequence[Job], what: str) -> None:
        """Release ``jobs`` in one ``release_many`` (one round trip)."""
        if not jobs:
            return
        try:
            answers = self._queue.release_many(list(jobs))
        except QueueClosedError:
            return
        except Exception as e:  # noqa: BLE001 - they expire and are leased again
            log.warning("worker %s: release of %d leases failed: %s", self._worker_id, len(jobs), e)
            return
        for job, a in zip(jobs, answers):
            if a is None:
                self._count(what)
            elif isinstance(a, CancelledError):  # the release recorded it cancelled
                self._count("cancelled")
            elif isinstance(a, LeaseLostError):
                self._count("lost")
            else:  # it expires and is leased again
                log.warning("worker %s: release of %s failed: %s", self._worker_id, job.id, a)

    def _sweep(self) -> None:
        """Release the leases that waited here too long, handler or not."""
        now = time.time()
        with self._cond:
            if not self._taking:  # stopping: released at close
                return
            if not any(not fresh(j, a, now) for j, a in self._buf):
                return
            keep = [(j, a) for j, a in self._buf if fresh(j, a, now)]
            stale = [j for j, a in self._buf if not fresh(j, a, now)]
            self._buf = collections.deque(keep)
        self._give_back(stale, "prefetch_released")

    def _feed(self) -> None:
        while True:
            try:
                if not self._feed_once():
                    return
            except Exception:  # noqa: BLE001 - never lose the feed thread
                log.exception("worker %s: lease stream", self._worker_id)
                try:
                    self._count("errors")
                except Exception:  # noqa: BLE001 - the Worker's loop is gone
                    pass
                with self._cond:
                    if self._stopping:
                        return
                    self._cond.wait(0.1)

    def _feed_once(self) -> bool:
        """One read of the stream; False when the feed ends."""
        with self._cond:
            if self._stopping:
                return False
        try:
            # Woken often enough to sweep well inside the shortest TTL.
            jobs = self._stream.next_batch(self._slice)
        except QueueClosedError:
            with self._cond:
                self._stopping = True
                self._cond.notify_all()
            return False
        except TelhaError as e:
            jobs = None
            log.error("worker %s: lease stream failed: %s", self._worker_id, e)
            self._count("errors")
        if jobs is None:  # the stream ended or failed: open another
            return self._reopen()
        if jobs:
            arrived = time.time()
            with self._cond:
                self._buf.extend((j, arrived) for j in jobs)
                ttl = min(j.lease_ttl for j in jobs)
                self._slice = max(0.005, min(self._slice, ttl * PREFETCH_FRACTION / 4))
                self._cond.notify_all()
        self._sweep()
        return True

    def _reopen(self) -> bool:
        while True:
            with self._cond:
                if self._stopping:
                    return False
                self._cond.wait(1.0)
                if self._stopping:
                    return False
            try:
                self._stream = self._open()
                return True
            except QueueClosedError:
                with self._cond:
                    self._stopping = True
                    self._cond.notify_all()
                return False
            except Exception as e:  # noqa: BLE001 - tried again in a second
                log.error("worker %s: lease stream: %s", self._worker_id, e)
                self._count("errors")


def _job_id(item: tuple[Any, Job, Any]) -> str:
    return item[1].id


def lease_job_id(item: tuple[Lease, Job, Any]) -> str:
    """A Worker's pending completion's job id, as its lease (the item's
    first part) keeps it: ``Job.id`` formats the UUID on every call."""
    return item[0].key[0]


def one_per_job(
    items: list[tuple[Any, Job, Any]], most: int,
    job_id: Callable[[tuple[Any, Job, Any]], str] = _job_id,
) -> tuple[list[Any], list[Any]]:
    """Up to ``most`` items for the next call, one delivery per job id, and
    the rest. Two deliveries of one job settling together (an expired lease
    and its successor, both run here) go in separate calls, so neither
    answer depends on how a server orders the items of one job; a later
    delivery of a job waits for the next call. Walks only as far as the
    batch needs (the rest can be long: a loop tick of thousands of
    completions). ``job_id`` reads an item's job id (a Worker's lease
    keeps it: ``Job.id`` formats the UUID on every call)."""
    batch: list[Any] = []
    later: list[Any] = []
    seen: set[str] = set()
    i = 0
    while i < len(items) and len(batch) < most:
        item = items[i]
        key = job_id(item)
        if key in seen:
            later.append(item)
        else:
            seen.add(key)
            batch.append(item)
        i += 1
    return batch, later + items[i:] if later else items[i:]


class SettleBatch:
    """Completions gathered into ``complete_many`` calls: a batch goes when
    it holds ``max_batch`` completions, ``linger`` seconds after its first,
    or at once when :meth:`nudge` says every handler ran out of work (the
    leases it holds count against the stream's capacity); while one call is
    in flight the next batch fills. ``calls`` / ``sent`` count the
    ``complete_many`` calls made and the completions they carried. ``done(item,
    result, error)`` is told of each (``error``: None when completed, the job's own
    exception, or :data:`UNSENT` when the call failed as a whole and the job
    must be settled on its own; ``result``: the one given to :meth:`add`);
    with ``all_done(n)`` given, a call that completed every one of its
    ``n`` jobs is told that once instead. ``job_id(item)`` reads an item's
    job id (see :func:`one_per_job`)."""

    UNSENT = object()

    def __init__(
        self,
        queue: Queue,
        worker_id: str,
        done: Callable[[Any, Any, object], object],
        *,
        max_batch: int = 64,
        linger: float = 0.002,
        busy: Callable[[], bool] | None = None,
        all_done: Callable[[int], object] | None = None,
        job_id: Callable[[tuple[Any, Job, Any]], str] = _job_id,
    ) -> None:
        self._queue = queue
        self._done = done
        self._all_done = all_done
        self._job_id = job_id
        self._max = max_batch
        self._linger = linger
        self._busy = busy
        self._items: list[tuple[Any, Job, Any]] = []
        self._cond = threading.Condition()
        self._closing = False
        self._hurry = False
        self.calls = 0
        self.sent = 0
        self._thread = threading.Thread(target=self._run, name=f"{worker_id}-settle", daemon=True)
        self._thread.start()

    def add(self, item: Any, job: Job, result: Any) -> bool:
        """Queue ``job``'s completion; False once closed (settle it yourself)."""
        with self._cond:
            if self._closing:
                return False
            self._items.append((item, job, result))
            if len(self._items) == 1 or len(self._items) >= self._max:
                self._cond.notify()
            return True

    def nudge(self) -> None:
        """Send the batch being gathered now (handlers are waiting)."""
        with self._cond:
            if self._items:
                self._hurry = True
                self._cond.notify()

    def close(self, timeout: float = 30.0) -> None:
        """Send what is queued, then end the thread."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            try:
                if not self._run_once():
                    return
            except Exception:  # noqa: BLE001 - never lose the settle thread
                log.exception("settling a batch of completions failed")

    def _run_once(self) -> bool:
        """Gather and send one batch; False once closed with nothing left."""
        with self._cond:
            while not self._items and not self._closing:
                self._cond.wait()
            if not self._items:
                return False
            end = time.monotonic() + self._linger
            # Lingering pays only while the handlers have other leases to
            # go on with; with none, the leases this batch holds may be
            # what keeps the server from sending more.
            lingering = self._linger > 0 and (self._busy is None or self._busy())
            while lingering and len(self._items) < self._max and not (self._closing or self._hurry):
                left = end - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            self._hurry = False
            batch, self._items = one_per_job(self._items, self._max, self._job_id)
        self._send(batch)
        return True

    def _send(self, batch: list[tuple[Any, Job, Any]]) -> None:
        self.calls += 1
        self.sent += len(batch)
        try:
            # A Worker's items are its leases: their follow-up jobs ride along.
            then = [getattr(item, "_then", None) for item, _, _ in batch]
            errors: Sequence[object] = self._queue.complete_many(
                [job for _, job, _ in batch],
                [r for _, _, r in batch],
                then=then if any(t is not None for t in then) else None,
            )
        except QueueClosedError as e:
            errors = [e] * len(batch)
        except Exception:  # noqa: BLE001 - a result that does not encode, the server unreachable
            errors = [self.UNSENT] * len(batch)
        if self._all_done is not None and not any(errors):
            # Every job completed (the common case): booked at once.
            try:
                self._all_done(len(batch))
            except Exception:  # noqa: BLE001 - never lose the thread
                log.exception("settling a batch of completions failed")
            return
        for (item, _, result), err in zip(batch, errors):
            try:
                self._done(item, result, err)
            except Exception:  # noqa: BLE001 - never lose the thread
                log.exception("settling a completion failed")

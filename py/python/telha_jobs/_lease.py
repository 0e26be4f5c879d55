"""What a handler can ask about the lease it runs under (threads and asyncio)."""

from __future__ import annotations

import contextvars
import threading
import time
from typing import TYPE_CHECKING

from ._errors import LeaseLostError

if TYPE_CHECKING:
    from ._native import Job

__all__ = ["Lease", "Permanent", "PermanentError", "current_lease"]


class PermanentError(Exception):
    """Raise from a handler to fail the job for good: dead now, no retry.

    ``Permanent`` is a deprecated alias of this class (removed in the next
    release)."""


# Deprecated alias, kept for one release: the same class object.
Permanent = PermanentError


class Lease:
    """A job a worker holds, as its handler sees it through
    :func:`current_lease`. The worker heartbeats it; when a heartbeat finds
    the lease lost (the job was reaped and may run elsewhere) or the worker
    released it while stopping, :attr:`lost` turns True: the handler should
    stop, since its result would be refused (``LeaseLostError``)."""

    __slots__ = ("job", "ttl", "next_beat", "expires", "_lost", "_event")

    _events_lock = threading.Lock()

    def __init__(self, job: Job) -> None:
        self.job = job
        now = time.time()
        # The TTL the lease was granted with. Never `deadline - now`: over
        # `connect()` the deadline is on the server's clock, and a server
        # clock ahead of ours would space heartbeats past the real expiry
        # (one behind would send them in a tight loop).
        self.ttl = max(job.lease_ttl, 0.001)
        self.next_beat = now + self.ttl / 3
        # When the lease runs out, by this process's clock, unless a
        # heartbeat renews it: if no heartbeat gets through by then (a remote
        # queue's network is down), the lease is lost as surely as if the
        # queue had said so. (Counted from when the lease reached us: a
        # little after the grant, by the call's latency.)
        self.expires = now + self.ttl
        self._lost = False
        # Created only when someone waits: most handlers never do, and an
        # Event per job is a measurable cost at thousands of jobs a second.
        self._event: threading.Event | None = None

    @property
    def lost(self) -> bool:
        """True once the lease is known lost (or released by a stopping worker)."""
        return self._lost

    def check(self) -> None:
        """Raise :class:`LeaseLostError` if the lease is lost; a long handler
        calls this between steps."""
        if self._lost:
            raise LeaseLostError(f"lease lost: job {self.job.id} is no longer held by this worker")

    def wait_lost(self, timeout: float | None = None) -> bool:
        """Block up to ``timeout`` seconds until the lease is lost; returns :attr:`lost`."""
        with Lease._events_lock:
            if self._event is None:
                self._event = threading.Event()
                if self._lost:
                    self._event.set()
            ev = self._event
        return ev.wait(timeout)

    def _mark_lost(self) -> None:
        with Lease._events_lock:
            self._lost = True
            if self._event is not None:
                self._event.set()

    def __repr__(self) -> str:
        return f"Lease(job={self.job!r}, lost={self.lost})"


_current: contextvars.ContextVar[Lease | None] = contextvars.ContextVar(
    "telha_jobs_current_lease", default=None
)


def current_lease() -> Lease | None:
    """The lease of the job the calling handler is running (None outside a
    Worker or AsyncWorker handler)."""
    return _current.get()

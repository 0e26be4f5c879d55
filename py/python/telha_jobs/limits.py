"""The limits the core enforces, from the core itself (never restated here).

Times are given in seconds, like every time in this package, and also in
the core's milliseconds where the core states them so.

- ``MAX_KIND_LEN``: the longest kind, in bytes (64).
- ``MAX_IDEMPOTENCY_KEY_LEN``: the longest idempotency key, in bytes (512).
- ``MAX_WORKER_ID_LEN``: the longest worker id, in bytes (256).
- ``MAX_BATCH``: the most jobs one ``lease_many`` takes (10,000).
- ``MAX_LIST_LIMIT``: the largest ``list`` page (10,000).
- ``LIST_SCAN_BUDGET``: the most rows one core list call reads before it
  answers a possibly short page with a cursor (``list`` reads at most ten
  such calls' worth for one page).
- ``MAX_PAYLOAD_BYTES_LIMIT``: the highest ``max_payload_bytes`` setting.
- ``MAX_INSTANT`` (seconds since the epoch) / ``MAX_INSTANT_MS``: the latest
  time a job may be scheduled for, 9999-12-31T23:59:59.999Z; ``run_at`` and
  ``purge(before=...)`` past it are ``InvalidArgumentError``, and so is a
  ``delay`` that reaches past it.
- ``MAX_DURATION``: the longest duration a setting (or a ``connect``
  timeout, a ``Server.stop`` grace) may hold, 100 years in seconds; a lease
  ``wait`` over it waits until a job comes.
- ``PRIORITY_DEFAULT``: the priority of a job enqueued without one (128).
- ``MAX_PROGRESS_BYTES``: the largest progress report, encoded (4096
  bytes): ``extend(progress=...)`` and ``current_lease().progress(...)``
  refuse a larger one with ``InvalidArgumentError``.
- ``DEFAULT_EVENT_BUFFER`` / ``MAX_EVENT_BUFFER``: a subscription's
  ``buffer`` by default (10,000 events) and at most (1,000,000).
- ``MAX_SCHEDULE_NAME_LEN``: the longest schedule name, in bytes (200).
- ``MAX_NEXT_TIMES``: the most fire times one ``schedule_next_times`` call
  answers (1,000).
- ``DEFAULT_MAX_CATCH_UP`` / ``MAX_CATCH_UP_LIMIT``: the jobs the ``"all"``
  catch-up policy enqueues for missed slots at once, by default (100) and
  at most (``max_catch_up``, 10,000).
"""

from __future__ import annotations

from ._native import (
    DEFAULT_EVENT_BUFFER,
    DEFAULT_MAX_CATCH_UP,
    LIST_SCAN_BUDGET,
    MAX_BATCH,
    MAX_CATCH_UP_LIMIT,
    MAX_DURATION,
    MAX_EVENT_BUFFER,
    MAX_IDEMPOTENCY_KEY_LEN,
    MAX_INSTANT,
    MAX_INSTANT_MS,
    MAX_KIND_LEN,
    MAX_LIST_LIMIT,
    MAX_NEXT_TIMES,
    MAX_PAYLOAD_BYTES_LIMIT,
    MAX_PROGRESS_BYTES,
    MAX_SCHEDULE_NAME_LEN,
    MAX_WORKER_ID_LEN,
    PRIORITY_DEFAULT,
)

__all__ = [
    "DEFAULT_EVENT_BUFFER",
    "DEFAULT_MAX_CATCH_UP",
    "LIST_SCAN_BUDGET",
    "MAX_BATCH",
    "MAX_CATCH_UP_LIMIT",
    "MAX_DURATION",
    "MAX_EVENT_BUFFER",
    "MAX_IDEMPOTENCY_KEY_LEN",
    "MAX_INSTANT",
    "MAX_INSTANT_MS",
    "MAX_KIND_LEN",
    "MAX_LIST_LIMIT",
    "MAX_NEXT_TIMES",
    "MAX_PAYLOAD_BYTES_LIMIT",
    "MAX_PROGRESS_BYTES",
    "MAX_SCHEDULE_NAME_LEN",
    "MAX_WORKER_ID_LEN",
    "PRIORITY_DEFAULT",
]

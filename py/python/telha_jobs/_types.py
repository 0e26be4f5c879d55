"""Answer types built by the native module: :class:`Enqueued` (what
``enqueue`` returns), :class:`JobList` (what ``list`` returns),
:class:`CorruptRecord`, :class:`LimitInfo` (what ``limits`` returns) and
:class:`FindResult` (what ``find`` returns)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ._native import JobInfo

__all__ = [
    "ChildPage", "ChildResult", "CorruptRecord", "Enqueued", "FanIn", "FindResult", "JobList", "LimitInfo",
]


class Enqueued(str):
    """The id of an enqueued job: a ``str`` (so code that keeps the id as a
    string works unchanged) with :attr:`created`, False when the enqueue's
    ``idempotency_key`` matched a job already in the same scope (this is
    that job's id, and nothing new was enqueued), and :attr:`debounced`,
    True when a ``debounce`` enqueue updated that pending job."""

    # A class default: the native side builds the common answer (created)
    # with `_created` (no Python frame, no attribute written: 1.0 us against
    # 2.4 us through `__new__`, timeit on a loaded 2-core machine; see
    # docs/python.md) and sets the attribute only when it is False.
    created: bool = True
    # True when the enqueue's ``debounce`` updated the key's pending job
    # (its payload and run time; ``created`` is then False).
    debounced: bool = False

    def __new__(cls, job_id: str, created: bool, debounced: bool = False) -> Enqueued:
        self = super().__new__(cls, job_id)
        self.created = created
        if debounced:
            self.debounced = True
        return self

    def __getnewargs__(self) -> tuple[str, bool, bool]:  # type: ignore[override]
        return (str(self), self.created, self.debounced)


# What the native `enqueue` calls for a created job: str.__new__ on Enqueued.
_created = functools.partial(str.__new__, Enqueued)


@dataclass(frozen=True)
class CorruptRecord:
    """A row ``list`` skipped because it does not decode: its store ``key``
    (hex), the job ``id`` when the key names one, and the decode ``error``."""

    key: str
    id: str | None
    error: str


@dataclass(frozen=True)
class LimitInfo:
    """One flow-control limit (``Queue.limits``) and its use now.

    ``target`` is its label (``"kind:embed"``, ``"scope:*"``, ...);
    ``concurrency``, ``rate``, ``burst`` and ``weight`` are the settings as
    given (None when not set; a rate without a burst uses the rate rounded
    up). ``leased``: jobs leased now that it counts (summed over the scopes
    for ``scope:*`` targets); ``held``: its instances at their cap or out
    of tokens now (0 or 1, or the scopes held back for ``scope:*``);
    ``throttled_concurrency`` / ``throttled_rate``: how often since the
    store opened a lease took the last slot / token or was refused one;
    ``ordered``: a key target's jobs lease one at a time in enqueue order."""

    target: str
    concurrency: int | None
    rate: float | None
    burst: int | None
    weight: int | None
    leased: int
    held: int
    throttled_concurrency: int
    throttled_rate: int
    ordered: bool = False


class JobList(list["JobInfo"]):
    """A page of ``Queue.list``: a ``list`` of :class:`JobInfo`, with
    :attr:`next`, the cursor to pass as ``list(after=...)`` for the next page
    (None when this page reached the end), and :attr:`corrupt`, the rows
    skipped because they do not decode."""

    next: str | None
    corrupt: list[CorruptRecord]

    def __init__(
        self, jobs: list[JobInfo] = [], next: str | None = None, corrupt: list[CorruptRecord] = []
    ) -> None:
        super().__init__(jobs)
        self.next = next
        self.corrupt = list(corrupt)

    def __repr__(self) -> str:
        return f"JobList({list.__repr__(self)}, next={self.next!r}, corrupt={self.corrupt!r})"


@dataclass(frozen=True)
class FanIn:
    """A fan-in parent's children (``JobInfo.fan_in``): ``unfinished``
    (children not finished yet; 0 once the parent was released), ``total``
    (every child it waits on) and ``policy``, what a child that did not
    complete does to it (``"fail"``, ``"cancel_rest"`` or ``"ignore"``)."""

    unfinished: int
    total: int
    policy: Literal["fail", "cancel_rest", "ignore"]


@dataclass(frozen=True)
class ChildResult:
    """One child of a fan-in parent (``results_of_children``): its ``id``,
    its ``state`` now (None when it was pruned, purged or deleted), its
    ``result`` decoded as ``JobInfo.result`` is (``raw_result``: the bytes
    as stored), ``result_encoding`` and ``last_error`` (a dead child's
    error)."""

    id: str
    state: (
        Literal["pending", "leased", "completed", "failed", "dead", "cancelled", "waiting"] | None
    )
    result: Any
    raw_result: bytes | None
    result_encoding: Literal["unknown", "bytes", "value"]
    last_error: str | None


class ChildPage(list[ChildResult]):
    """A page of ``Queue.results_of_children``: a ``list`` of
    :class:`ChildResult` in enqueue order, with :attr:`next`, the cursor to
    pass as ``cursor=`` for the next page (None after the last one)."""

    next: str | None

    def __init__(self, children: list[ChildResult] = [], next: str | None = None) -> None:
        super().__init__(children)
        self.next = next

    def __repr__(self) -> str:
        return f"ChildPage({list.__repr__(self)}, next={self.next!r})"


@dataclass(frozen=True)
class FindResult:
    """What ``Queue.find(text)`` found, every kind side by side (a text can
    be a tag and an idempotency key at once): :attr:`by_id`, the job whose
    id the text is; :attr:`by_key`, the job holding it as its idempotency
    key in the scope asked (the system scope when none was); :attr:`by_tag`,
    the first page of the jobs carrying it as a tag (a :class:`JobList`:
    pass ``by_tag.next`` as ``list(tag=text, after=...)`` for the rest);
    :attr:`matched`, the kinds that matched, in the order ``"id"``,
    ``"key"``, ``"tag"``. Falsy when nothing matched."""

    by_id: JobInfo | None
    by_key: JobInfo | None
    by_tag: JobList
    matched: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.matched)


for _cls in (Enqueued, CorruptRecord, JobList, LimitInfo, FanIn, ChildResult, ChildPage, FindResult):
    _cls.__module__ = "telha_jobs"
del _cls

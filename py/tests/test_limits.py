"""The limits come from the core (``telha_jobs.limits``), are the ones the
calls enforce, and are documented where a caller reads them."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

import telha_jobs
from telha_jobs import _native, limits

from .conftest import Target

PACKAGE = Path(telha_jobs.__file__).parent
SOURCES = Path(__file__).resolve().parents[1]


def test_the_limits_module_re_exports_the_cores() -> None:
    for name in limits.__all__:
        assert getattr(limits, name) == getattr(_native, name), name
    assert limits.MAX_INSTANT_MS == 253402300799999 and limits.MAX_INSTANT == 253402300799.999
    assert limits.MAX_DURATION == 100 * 365 * 24 * 3600
    assert limits.MAX_INSTANT_MS < 2**53


def test_lease_many_takes_up_to_the_batch_limit(queue: telha_jobs.Queue) -> None:
    assert queue.lease_many("w", limits.MAX_BATCH) == []
    with pytest.raises(telha_jobs.InvalidArgumentError, match=f"max must be 1 to {limits.MAX_BATCH}"):
        queue.lease_many("w", limits.MAX_BATCH + 1)


def test_list_takes_up_to_the_list_limit(queue: telha_jobs.Queue) -> None:
    assert queue.list(limit=limits.MAX_LIST_LIMIT) == []
    with pytest.raises(telha_jobs.InvalidArgumentError, match=f"limit must be 1 to {limits.MAX_LIST_LIMIT}"):
        queue.list(limit=limits.MAX_LIST_LIMIT + 1)


def test_kind_worker_id_and_idempotency_key_lengths(queue: telha_jobs.Queue) -> None:
    assert queue.enqueue("a" * limits.MAX_KIND_LEN)
    with pytest.raises(telha_jobs.InvalidArgumentError):
        queue.enqueue("a" * (limits.MAX_KIND_LEN + 1))
    assert queue.enqueue("embed", idempotency_key="k" * limits.MAX_IDEMPOTENCY_KEY_LEN)
    with pytest.raises(telha_jobs.InvalidArgumentError):
        queue.enqueue("embed", idempotency_key="k" * (limits.MAX_IDEMPOTENCY_KEY_LEN + 1))
    assert queue.lease_next("w" * limits.MAX_WORKER_ID_LEN) is not None
    with pytest.raises(telha_jobs.InvalidArgumentError, match="worker id"):
        queue.lease_next("w" * (limits.MAX_WORKER_ID_LEN + 1))


def test_run_at_reaches_exactly_the_latest_instant(queue: telha_jobs.Queue) -> None:
    job_id = queue.enqueue("embed", run_at=limits.MAX_INSTANT)
    assert queue.get(job_id).state_at == limits.MAX_INSTANT  # type: ignore[union-attr]
    with pytest.raises(telha_jobs.InvalidArgumentError, match="run_at"):
        queue.enqueue("embed", run_at=limits.MAX_INSTANT + 0.001)
    assert queue.get(queue.enqueue("embed")).priority == limits.PRIORITY_DEFAULT  # type: ignore[union-attr]


def test_max_payload_bytes_goes_up_to_its_ceiling(tmp_path: Path) -> None:
    with telha_jobs.Queue(tmp_path / "a", max_payload_bytes=limits.MAX_PAYLOAD_BYTES_LIMIT) as q:
        assert q.settings()["max_payload_bytes"] == limits.MAX_PAYLOAD_BYTES_LIMIT
    with pytest.raises(telha_jobs.InvalidArgumentError, match="max_payload_bytes"):
        telha_jobs.Queue(tmp_path / "b", max_payload_bytes=limits.MAX_PAYLOAD_BYTES_LIMIT + 1)


def test_the_list_and_batch_limits_are_documented_in_docstring_and_stub() -> None:
    stub = ast.parse((PACKAGE / "_native.pyi").read_text())
    queue = next(n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == "Queue")
    docs = {n.name: ast.get_docstring(n) or "" for n in queue.body if isinstance(n, ast.FunctionDef)}
    for method, name in (("list", "MAX_LIST_LIMIT"), ("lease_many", "MAX_BATCH")):
        n = f"{getattr(limits, name):,}"
        runtime = inspect.getdoc(getattr(telha_jobs.Queue, method)) or ""
        assert f"limits.{name}" in runtime and n in runtime, (method, runtime)
        assert f"limits.{name}" in docs[method] and n in docs[method], (method, docs[method])


def test_no_limit_is_restated_in_the_bindings_code() -> None:
    # The numbers live in the core; the binding names them (docstrings may
    # quote them, checked against the core above).
    for path in [*(SOURCES / "src").glob("*.rs"), *PACKAGE.glob("*.py")]:
        code = [line for line in path.read_text().splitlines() if not line.lstrip().startswith(("//", "#"))]
        for line in code:
            assert not re.search(r"\b10_?000\b|\b253_?402_?300", line), f"{path.name}: {line.strip()}"


def test_list_limit_default_and_target_agree(target: Target) -> None:
    q = target.open(reaper_interval=0)
    q.enqueue_many([("embed", i) for i in range(101)])
    assert len(q.list()) == 100

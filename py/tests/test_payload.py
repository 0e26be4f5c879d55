"""The cross-language payload convention: a version byte 0x01, then msgpack."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import telha_jobs


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        -1,
        2**63 - 1,
        2**64 - 1,
        -(2**63),
        1.5,
        "",
        "héllo",
        b"\x00\xff",
        [],
        [1, "two", None, [3.0]],
        {},
        {"doc": "s3://b/k.pdf", "pages": 12, "tags": ["a"], "meta": {"ok": False}},
    ],
)
def test_values_round_trip_through_a_job(queue: telha_jobs.Queue, value: Any) -> None:
    job_id = queue.enqueue("embed", value) if not isinstance(value, bytes) else queue.enqueue(
        "embed", {"b": value}
    )
    job = queue.lease_next("w")
    assert job is not None and job.id == job_id
    want = value if not isinstance(value, bytes) else {"b": value}
    assert job.payload == want
    assert job.raw_payload[0] == 0x01
    queue.complete(job, want)
    assert queue.get(job_id).result == want  # type: ignore[union-attr]


def test_tuples_encode_as_lists(queue: telha_jobs.Queue) -> None:
    queue.enqueue("embed", (1, (2, 3)))
    assert queue.lease_next("w").payload == [1, [2, 3]]  # type: ignore[union-attr]


def test_bytes_pass_through_untouched(queue: telha_jobs.Queue) -> None:
    for raw in (b"", b"plain text", bytes(range(256)), bytearray(b"abc"), memoryview(b"mv")):
        job_id = queue.enqueue("embed", raw)
        job = queue.lease_next("w")
        assert job is not None and job.id == job_id
        assert job.raw_payload == bytes(raw) and job.payload == bytes(raw)
        queue.complete(job, raw)
        info = queue.get(job_id)
        assert info is not None and info.raw_result == bytes(raw)


def test_the_encoding_is_the_documented_bytes() -> None:
    # {"doc": 1} as msgpack is 0x81 0xa3 'doc' 0x01, after the version byte.
    assert telha_jobs.encode_payload({"doc": 1}) == b"\x01\x81\xa3doc\x01"
    assert telha_jobs.encode_payload(None) == b"\x01\xc0"
    assert telha_jobs.decode_payload(b"\x01\x92\x01\xa1x") == [1, "x"]


def test_a_value_is_stored_in_the_bytes_every_language_reads(queue: telha_jobs.Queue) -> None:
    # What Node's binding (or a C host following the convention) stores for
    # { tenant: 42, doc: "a.pdf" }: a fixmap of two string keys, recorded as
    # a value, so every front end reads it back as a dict / an object.
    node_bytes = b"\x01\x82\xa6tenant\x2a\xa3doc\xa5a.pdf"
    job_id = queue.enqueue("embed", {"tenant": 42, "doc": "a.pdf"})
    job = queue.lease_next("w")
    assert job is not None
    assert job.payload == {"tenant": 42, "doc": "a.pdf"} and job.payload_encoding == "value"
    assert job.raw_payload == node_bytes
    info = queue.get(job_id)
    assert info is not None and info.payload_encoding == "value" and info.result_encoding == "unknown"


# Bytes that happen to follow the convention: before encodings were recorded
# they read back as values (2, None, [1], {}), against what the caller gave.
LOOKALIKES = [b"\x01\x02", b"\x01\xc0", b"\x01\x91\x01", b"\x01\x80", b"\x01\xa2ok"]


@pytest.mark.parametrize("raw", LOOKALIKES, ids=[r.hex() for r in LOOKALIKES])
def test_bytes_come_back_as_bytes_even_when_they_look_like_a_value(
    queue: telha_jobs.Queue, raw: bytes
) -> None:
    job_id = queue.enqueue("embed", raw)
    job = queue.lease_next("w")
    assert job is not None and job.id == job_id
    assert job.payload == raw and type(job.payload) is bytes and job.payload_encoding == "bytes"
    queue.complete(job, raw)
    info = queue.get(job_id)
    assert info is not None
    assert info.payload == raw and info.payload_encoding == "bytes"
    assert info.result == raw and type(info.result) is bytes and info.result_encoding == "bytes"
    [listed] = queue.list()
    assert listed.payload == raw and listed.result == raw


def test_values_come_back_as_values_and_results_record_their_encoding(queue: telha_jobs.Queue) -> None:
    ids = queue.enqueue_many([("embed", [1]), {"kind": "embed", "payload": b"\x01\x91\x01"}])
    jobs = queue.lease_many("w", 2)
    assert [j.payload for j in jobs] == [[1], b"\x01\x91\x01"]
    # The same bytes on disk, told apart by their recorded encoding.
    assert jobs[0].raw_payload == jobs[1].raw_payload == b"\x01\x91\x01"
    assert queue.complete_many(jobs, [[1], b"\x01\x91\x01"]) == [None, None]
    a, b = (queue.get(i) for i in ids)
    assert a is not None and a.result == [1] and a.result_encoding == "value"
    assert b is not None and b.result == b"\x01\x91\x01" and b.result_encoding == "bytes"


FIXTURE = Path(__file__).resolve().parents[2] / "core" / "tests" / "fixtures" / "store-format-1"


def test_rows_written_before_encodings_keep_todays_reading(tmp_path: Path) -> None:
    # The committed store made by the code before encodings were recorded:
    # its rows say nothing, so bytes that follow the convention read as the
    # value, other bytes as bytes, as they always did.
    store = tmp_path / "old"
    shutil.copytree(FIXTURE, store)
    with telha_jobs.Queue(store, reaper_interval=0) as q:
        by_key = {i.idempotency_key: i for i in q.list(limit=100)}
        done = by_key["fixture-done"]
        assert done.payload_encoding == "unknown" and done.result_encoding == "unknown"
        assert done.payload == "done" and done.result == "ok"
        dead = [i for i in q.list(state="dead", limit=100)]
        assert [i.payload for i in dead] == [b"raw bytes"]


def test_bytes_that_only_look_like_the_convention_stay_bytes() -> None:
    assert telha_jobs.decode_payload(b"\x01\xc0\x00") == b"\x01\xc0\x00"  # trailing byte
    assert telha_jobs.decode_payload(b"\x02\xc0") == b"\x02\xc0"  # another version
    assert telha_jobs.decode_payload(b"") == b""

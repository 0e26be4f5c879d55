"""The cross-language payload convention: a version byte 0x01, then msgpack."""

from __future__ import annotations

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


def test_a_payload_written_by_another_language_reads_as_a_dict(queue: telha_jobs.Queue) -> None:
    # What Node's binding (or a C host following the convention) stores for
    # { tenant: 42, doc: "a.pdf" }: a fixmap of two string keys.
    node_bytes = b"\x01\x82\xa6tenant\x2a\xa3doc\xa5a.pdf"
    queue.enqueue("embed", node_bytes)
    job = queue.lease_next("w")
    assert job is not None
    assert job.payload == {"tenant": 42, "doc": "a.pdf"}
    assert job.raw_payload == node_bytes


def test_bytes_that_only_look_like_the_convention_stay_bytes() -> None:
    assert telha_jobs.decode_payload(b"\x01\xc0\x00") == b"\x01\xc0\x00"  # trailing byte
    assert telha_jobs.decode_payload(b"\x02\xc0") == b"\x02\xc0"  # another version
    assert telha_jobs.decode_payload(b"") == b""

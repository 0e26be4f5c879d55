"""find(text) (issue 42), embedded and through a server, sync and asyncio:
a text answered as a job id, an idempotency key and a tag; the behaviour
in depth is the core's (core/tests/behaviour/find.rs) and conformance
case 100."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import telha_jobs
from telha_jobs.aio import AsyncQueue

from .conftest import Target

OTHER = "0190c0de-0000-7000-8000-0000000000a1"


def test_find_answers_an_id_a_key_and_a_tag(target: Target) -> None:
    q = target.open(reaper_interval=0)
    keyed = q.enqueue("mail", 1, idempotency_key="order-4711")
    tagged = [q.enqueue("ship", n, tags=["order-4711"]) for n in range(3)]
    q.enqueue("ship", 9, tags=["order-4711"], scope=OTHER)

    r = q.find("order-4711")
    assert isinstance(r, telha_jobs.FindResult)
    assert r.matched == ("key", "tag") and r
    assert r.by_id is None
    assert r.by_key is not None and r.by_key.id == keyed
    assert [j.id for j in r.by_tag][:3] == tagged and len(r.by_tag) == 4
    assert r.by_tag.next is None

    page = q.find("order-4711", limit=2)
    assert [j.id for j in page.by_tag] == tagged[:2]
    assert page.by_tag.next is not None
    rest = q.list(tag="order-4711", after=page.by_tag.next)
    assert [j.id for j in rest][0] == tagged[2]

    by_id = q.find(str(tagged[1]))
    assert by_id.matched == ("id",)
    assert by_id.by_id is not None and by_id.by_id.tags == ["order-4711"]
    scoped = q.find("order-4711", scope=OTHER)
    assert scoped.matched == ("tag",) and scoped.by_key is None
    nothing = q.find("order-47")
    assert not nothing and nothing.matched == () and len(nothing.by_tag) == 0


@pytest.mark.parametrize(
    ("text", "kw", "message"),
    [
        ("", {}, "1 to 512 bytes"),
        ("x" * 513, {}, "got 513 bytes"),
        ("a\nb", {}, "control character U\\+000A"),
        ("a", {"limit": 0}, "find limit"),
        ("a", {"limit": 10_001}, "find limit"),
    ],
)
def test_bad_input_is_invalid_argument_naming_the_limit(
    target: Target, text: str, kw: dict[str, Any], message: str
) -> None:
    q = target.open(reaper_interval=0)
    with pytest.raises(telha_jobs.InvalidArgumentError, match=message):
        q.find(text, **kw)


def test_wrong_types_are_type_errors(queue: telha_jobs.Queue) -> None:
    with pytest.raises(TypeError, match="text must be a str"):
        queue.find(b"order")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="limit must be an int"):
        queue.find("a", limit="5")  # type: ignore[arg-type]
    with pytest.raises(telha_jobs.InvalidArgumentError):
        queue.find("a", scope="nope")


def test_asyncio_finds(store: Any) -> None:
    async def main() -> None:
        async with await AsyncQueue.open(store, reaper_interval=0) as aq:
            e = await aq.enqueue("mail", 1, tags=["upload-7"], idempotency_key="upload-7")
            r = await aq.find("upload-7")
            assert r.matched == ("key", "tag")
            assert r.by_key is not None and r.by_key.id == e
            assert [j.id for j in r.by_tag] == [e]
            with pytest.raises(telha_jobs.InvalidArgumentError):
                await aq.find("")

    asyncio.run(main())

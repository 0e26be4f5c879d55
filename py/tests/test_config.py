"""Settings go through the core's table of keys: every key of
``config_keys()`` is a ``Queue(...)`` keyword of the same name (and a
``kinds={...}`` key when per-kind), reads back through ``settings()``, and
is in the typed stub. Driven from the table: a key added to the core
without working through Python fails here."""

from __future__ import annotations

import ast
import datetime
import math
from pathlib import Path
from typing import Any

import pytest

import telha_jobs

from .conftest import Target

KEYS = telha_jobs.config_keys()
PER_KIND = [k for k in KEYS if k.per_kind]
STUB = Path(telha_jobs.__file__).with_name("_native.pyi")


def sample(k: telha_jobs.ConfigKey) -> Any:
    """A value of the key's type that is not its default and keeps the
    rules across keys (a backoff cap at least its base: 1800.5 s is above
    the default base and below the default cap)."""
    if k.type in ("duration", "retention"):
        return 1800.5
    if k.type == "count":
        assert isinstance(k.min, int)
        return k.min + 6
    if k.type == "factor":
        return 1.75
    if k.type == "fraction":
        assert k.min == 0.0 and k.max == 1.0
        return 0.35
    if k.type == "flag":
        return k.default != "true"
    raise AssertionError(f"{k.name}: a key type this test does not know: {k.type}")


def test_the_table_is_the_cores_and_describes_each_key() -> None:
    names = [k.name for k in KEYS]
    assert len(names) == len(set(names)) >= 10
    assert {"lease_ttl", "completed_retention", "max_payload_bytes", "prune_batch"} <= set(names)
    for k in KEYS:
        assert k.type in ("duration", "retention", "count", "factor", "fraction", "flag"), k
        assert k.doc and k.unit and k.default and k.toml, k
        assert k.env is not None and k.env.startswith("TELHA_JOBS_"), k
        assert repr(k).startswith(f"ConfigKey(name={k.name!r}")
    lease_ttl = next(k for k in KEYS if k.name == "lease_ttl")
    assert lease_ttl.default == "300s" and lease_ttl.per_kind and lease_ttl.max == telha_jobs.limits.MAX_DURATION


@pytest.mark.parametrize("key", KEYS, ids=[k.name for k in KEYS])
def test_every_key_is_a_keyword_that_reads_back(tmp_path: Path, key: telha_jobs.ConfigKey) -> None:
    want = sample(key)
    with telha_jobs.Queue(tmp_path / "default") as q:
        assert q.settings()[key.name] != want, "the sample must differ from the default"
    with telha_jobs.Queue(tmp_path / "set", **{key.name: want}) as q:
        assert q.settings()[key.name] == want
    if key.type in ("duration", "retention"):
        with telha_jobs.Queue(tmp_path / "td", **{key.name: datetime.timedelta(seconds=want)}) as q:
            assert q.settings()[key.name] == want


@pytest.mark.parametrize("key", KEYS, ids=[k.name for k in KEYS])
def test_every_per_kind_key_is_a_kinds_key_and_no_other_is(tmp_path: Path, key: telha_jobs.ConfigKey) -> None:
    kinds = {"ingest:pdf": {key.name: sample(key)}}
    if not key.per_kind:
        with pytest.raises(telha_jobs.InvalidArgumentError, match="unknown per-kind setting") as exc:
            telha_jobs.Queue(tmp_path / "s", kinds=kinds)  # type: ignore[arg-type]
        for k in PER_KIND:
            assert k.name in str(exc.value)
        return
    with telha_jobs.Queue(tmp_path / "s", kinds=kinds) as q:  # type: ignore[arg-type]
        s = q.settings()
        assert s["kinds"] == {"ingest:pdf": {key.name: sample(key)}}
        assert s[key.name] != sample(key), "the per-kind value stays per kind"


def test_settings_name_every_key_and_are_valid_input(tmp_path: Path) -> None:
    with telha_jobs.Queue(tmp_path / "a", max_attempts=3, kinds={"embed": {"lease_ttl": 9.0}}) as q:
        s = q.settings()
        assert set(s) == {k.name for k in KEYS} | {"kinds"}
        assert s["kinds"] == {"embed": {"lease_ttl": 9.0}} and s["max_attempts"] == 3
    with telha_jobs.Queue(tmp_path / "b", **s) as q:
        assert q.settings() == s


def test_a_retention_kept_forever_reads_back_as_infinity(tmp_path: Path) -> None:
    for forever in (False, math.inf):
        with telha_jobs.Queue(tmp_path / str(forever), completed_retention=forever) as q:
            assert q.settings()["completed_retention"] == math.inf
    with pytest.raises(TypeError, match="completed_retention"):
        telha_jobs.Queue(tmp_path / "t", completed_retention=True)


def test_none_means_not_given(tmp_path: Path) -> None:
    with telha_jobs.Queue(tmp_path / "s", lease_ttl=None, kinds={"embed": {"max_attempts": None}}) as q:
        assert q.settings()["lease_ttl"] == 300.0 and q.settings()["kinds"] == {}


def test_an_unknown_setting_is_invalid_argument_listing_every_key(tmp_path: Path) -> None:
    with pytest.raises(telha_jobs.InvalidArgumentError, match='unknown setting "lease_tll"') as exc:
        telha_jobs.Queue(tmp_path / "s", lease_tll=5)  # type: ignore[call-arg]
    for k in KEYS:
        assert k.name in str(exc.value)
    assert not (tmp_path / "s").exists(), "nothing was created"


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"lease_ttl": "5s"}, "lease_ttl must be a number of seconds, got str"),
        ({"max_attempts": 1.5}, "max_attempts must be an int, got float"),
        ({"max_attempts": True}, "max_attempts must be an int, got bool"),
        ({"backoff_factor": "x"}, "backoff_factor must be a number, got str"),
        ({"sync_writes": 1}, "sync_writes must be True or False, got int"),
        ({"kinds": {"embed": {"lease_ttl": "5s"}}}, "kinds[\"embed\"][\"lease_ttl\"] must be a number"),
        ({"kinds": {"embed": 5}}, "kinds[\"embed\"] must be a dict"),
        ({"kinds": ["embed"]}, "kinds must be a dict"),
    ],
)
def test_a_wrong_type_is_type_error(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(TypeError) as exc:
        telha_jobs.Queue(tmp_path / "s", **kwargs)
    assert message in str(exc.value)
    assert not isinstance(exc.value, telha_jobs.TelhaError)


@pytest.mark.parametrize("bad", [-0.1, 1.5, math.nan, math.inf])
def test_a_jitter_outside_0_to_1_is_refused_and_creates_nothing(tmp_path: Path, bad: float) -> None:
    with pytest.raises(telha_jobs.InvalidArgumentError, match="backoff_jitter must be a number from 0 to 1"):
        telha_jobs.Queue(tmp_path / "s", backoff_jitter=bad)
    with pytest.raises(telha_jobs.InvalidArgumentError, match="backoff_jitter"):
        telha_jobs.Queue(tmp_path / "s", kinds={"embed": {"backoff_jitter": bad}})
    assert not (tmp_path / "s").exists(), "nothing was created"


def test_a_per_job_backoff_base_is_checked_at_enqueue(target: Target) -> None:
    q = target.open(reaper_interval=0)
    for bad in (0, 0.0004, -1, math.nan):
        with pytest.raises(telha_jobs.InvalidArgumentError, match="backoff_base"):
            q.enqueue("embed", b"x", backoff_base=bad)
    assert q.stats()["total"]["pending"] == 0
    q.enqueue("embed", b"x", backoff_base=datetime.timedelta(seconds=2))
    assert q.stats()["total"]["pending"] == 1


def test_settings_need_an_embedded_queue(target: Target) -> None:
    q = target.open(reaper_interval=0, max_attempts=4)
    if target.remote:
        with pytest.raises(telha_jobs.InvalidArgumentError, match="embedded"):
            q.settings()
    else:
        assert q.settings()["max_attempts"] == 4


# -- the typed stub keeps up with the table ---------------------------------


def stub_class(name: str) -> ast.ClassDef:
    tree = ast.parse(STUB.read_text())
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)


STUB_TYPES = {
    "duration": "_Seconds | None",
    "retention": "_Retention | None",
    "count": "int | None",
    "factor": "float | None",
    "fraction": "float | None",
    "flag": "bool | None",
}


def test_the_stub_has_one_typed_keyword_per_key() -> None:
    new = next(
        n for n in stub_class("Queue").body if isinstance(n, ast.FunctionDef) and n.name == "__new__"
    )
    stub = {a.arg: ast.unparse(a.annotation) for a in new.args.kwonlyargs if a.annotation is not None}
    assert stub.pop("config_file") and stub.pop("kinds") == "Mapping[str, _KindSettings] | None"
    assert stub == {k.name: STUB_TYPES[k.type] for k in KEYS}
    assert new.args.kwarg is None, "the stub lists every key instead of **settings"


def test_the_stubs_per_kind_settings_are_the_tables() -> None:
    body = stub_class("_KindSettings").body
    fields = {n.target.id: ast.unparse(n.annotation) for n in body if isinstance(n, ast.AnnAssign)
              and isinstance(n.target, ast.Name)}
    assert fields == {k.name: STUB_TYPES[k.type].removesuffix(" | None") for k in PER_KIND}


@pytest.mark.parametrize("key", [k for k in KEYS if k.type == "retention"], ids=lambda k: k.name)
def test_every_retention_key_turns_off_with_false_globally_and_per_kind(
    tmp_path: Path, key: telha_jobs.ConfigKey
) -> None:
    with telha_jobs.Queue(tmp_path / "g", **{key.name: False}) as q:
        assert q.settings()[key.name] == math.inf
    if key.per_kind:
        with telha_jobs.Queue(tmp_path / "k", **{key.name: 60.0}, kinds={"embed": {key.name: False}}) as q:
            s = q.settings()
            assert s[key.name] == 60.0 and s["kinds"]["embed"][key.name] == math.inf


def test_a_kinds_timeout_off_wins_over_the_global_one(tmp_path: Path) -> None:
    with telha_jobs.Queue(tmp_path / "s", reaper_interval=0, timeout=90.0,
                          kinds={"free": {"timeout": False}, "tight": {"timeout": 1.5}}) as q:
        for kind in ("embed", "free", "tight"):
            q.enqueue(kind)
        got = {j.kind: j.timeout for j in q.lease_many("w", 3)}
        assert got == {"embed": 90.0, "free": None, "tight": 1.5}

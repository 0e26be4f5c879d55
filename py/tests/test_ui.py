"""The operator web page served from a Python host: ``q.serve(ui=True)``."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import telha_jobs


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def _post(url: str, body: dict, csrf: str | None) -> tuple[int, dict]:
    headers = {"content-type": "application/json"}
    if csrf:
        headers["x-csrf-token"] = csrf
    req = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def test_serve_with_ui_shows_the_counts_and_retries(tmp_path: Path) -> None:
    with telha_jobs.Queue(tmp_path / "db") as q:
        q.enqueue("embed", {"doc": 1})
        q.enqueue("ingest", b"x", max_attempts=1)
        job = q.lease_next("w1", kinds=["ingest"])
        assert job is not None
        q.fail(job, "boom", retryable=False)
        with q.serve("127.0.0.1:0", metrics_listen="127.0.0.1:0", ui=True) as server:
            base = server.ui_url
            assert base is not None and base.startswith("http://127.0.0.1:")
            with urllib.request.urlopen(base, timeout=10) as r:
                assert "text/html" in r.headers["content-type"]
                assert "script-src 'self'" in r.headers["content-security-policy"]
            status, ov = _get(base + "api/v1/overview")
            assert status == 200
            assert ov["stats"]["by_kind"] == {
                k: {**v, "total": sum(v.values())} for k, v in q.stats()["by_kind"].items()
            }
            status, page = _get(base + "api/v1/jobs?state=dead")
            assert [j["id"] for j in page["jobs"]] == [str(job.id)]
            url = base + f"api/v1/jobs/{job.id}/retry"
            assert _post(url, {}, None)[0] == 403  # no CSRF token
            csrf = _get(base + "api/v1/info")[1]["csrf"]
            status, r = _post(url, {}, csrf)
            assert status == 200 and r["job"]["state"] == "pending"
            assert q.stats()["total"]["dead"] == 0


def test_ui_read_only_refuses_actions(tmp_path: Path) -> None:
    with telha_jobs.Queue(tmp_path / "db") as q:
        with q.serve(
            "127.0.0.1:0", metrics_listen="127.0.0.1:0", ui=True, ui_read_only=True
        ) as server:
            base = server.ui_url
            assert base is not None
            info = _get(base + "api/v1/info")[1]
            assert info["read_only"] is True
            status, err = _post(base + "api/v1/pause", {"target": "kind:x"}, info["csrf"])
            assert (status, err["error"]["code"]) == (403, "READ_ONLY")
            assert q.stats()["paused"]["kinds"] == []


def test_without_ui_there_is_no_page(tmp_path: Path) -> None:
    with telha_jobs.Queue(tmp_path / "db") as q:
        with q.serve("127.0.0.1:0") as server:
            assert server.ui_url is None
        with pytest.raises(TypeError):
            q.serve("127.0.0.1:0", ui="yes")  # type: ignore[arg-type]

"""Fixtures: a store directory per test (a temp-dir guard), and the queues
the suites run against.

``target`` is parametrised over ``local`` (an embedded store) and
``remote`` (a store served from this process with ``Queue.serve`` and
reached through ``telha_jobs.connect``): every test that takes ``queue``
or ``target`` runs against both, so the remote queue is held to the same
suites as the embedded one instead of to copies of them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import telha_jobs


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


class Target:
    """Opens a test's queues where the parameter says: ``open(**settings)``
    gives an embedded queue on a fresh store, or a client of a server
    (in this process) on a fresh store with those settings. ``host`` is the
    embedded queue behind the latest one (the queue itself when local)."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind = kind
        self.remote = kind == "remote"
        self._dir = tmp_path
        self._opened: list[Any] = []
        self.host: telha_jobs.Queue | None = None

    def open(self, **settings: Any) -> telha_jobs.Queue:
        path = self._dir / f"store{len(self._opened)}"
        host = telha_jobs.Queue(path, **settings)
        self.host = host
        if not self.remote:
            self._opened.append(host)
            return host
        server = host.serve("127.0.0.1:0")
        client = telha_jobs.connect(server.url, timeout=10.0)
        self._opened += [client, server, host]
        return client

    def local(self) -> telha_jobs.Queue:
        assert self.host is not None, "open() a queue first"
        return self.host

    def close(self) -> None:
        for o in self._opened:
            if isinstance(o, telha_jobs.Server):
                o.stop(grace=1.0)
            else:
                o.close()


@pytest.fixture(params=["local", "remote"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    t = Target(request.param, tmp_path / "target")
    yield t
    t.close()


@pytest.fixture
def queue(target: Target) -> telha_jobs.Queue:
    # No background reaper: tests call reap() when they mean it.
    return target.open(reaper_interval=0)


@pytest.fixture
def local_queue(store: Path) -> Iterator[telha_jobs.Queue]:
    """An embedded queue, for what only an embedded one has (settings, path)."""
    q = telha_jobs.Queue(store, reaper_interval=0)
    yield q
    q.close()


def spawn(code: str, *args: str) -> subprocess.Popen[str]:
    """A child Python running `code` (with sys.argv[1:] = args); stdout piped."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )

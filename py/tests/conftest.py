"""Fixtures: a store directory per test (a temp-dir guard) and an open queue."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import telha_jobs


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def queue(store: Path) -> Iterator[telha_jobs.Queue]:
    # No background reaper: tests call reap() when they mean it.
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

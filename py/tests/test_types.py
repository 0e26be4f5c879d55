"""The .pyi stubs describe the compiled module (mypy.stubtest), and the
public API type-checks under mypy --strict as documented (typing_check.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy", reason="make test installs mypy into its virtualenv")

PY = Path(__file__).resolve().parent.parent


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=PY, capture_output=True, text=True, timeout=600)


def test_stubs_match_the_compiled_module() -> None:
    r = run("mypy.stubtest", "telha_jobs", "--allowlist", "stubtest-allowlist.txt")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Success" in r.stdout


def test_the_package_and_a_typed_client_pass_mypy_strict() -> None:
    r = run("mypy", "--strict", "python/telha_jobs", "tests/typing_check.py", "bench/bench.py", "examples/ingest.py")
    assert r.returncode == 0, r.stdout + r.stderr

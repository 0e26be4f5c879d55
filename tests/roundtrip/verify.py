"""Round trip, step 4 (Python and the CLI): every job read back in Python
(the decoded dict and the raw bytes) and through `telha jobs ls / show
--json`; each payload and result must equal values.json, and the bytes the
manifest recorded (Node's payloads, Python's results).

    python verify.py STORE MANIFEST TELHA_BIN
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import telha_jobs

REASON = "rejected by the C worker"


def cli(telha: str, store: str, *args: str) -> Any:
    out = subprocess.run([telha, "--db", store, "--json", "jobs", *args],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main() -> int:
    store, manifest_path, telha = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    values = json.loads((Path(__file__).parent / "values.json").read_text())
    manifest = json.loads(manifest_path.read_text())
    jobs = manifest["jobs"]
    half = len(jobs) // 2
    checks = 0

    def check(cond: bool, what: str) -> None:
        nonlocal checks
        assert cond, what
        checks += 1

    with telha_jobs.Queue(store, reaper_interval=0) as q:
        for i, want in enumerate(jobs):
            info = q.get(want["id"])
            assert info is not None, f"job {i} is missing"
            check(info.payload == values["jobs"][i]["payload"], f"python: job {i} payload {info.payload!r}")
            check(info.raw_payload.hex() == want["payload_hex"], f"python: job {i} payload bytes")
            if i < half:
                check(info.state == "completed", f"python: job {i} is {info.state}")
                check(info.result == values["jobs"][i]["result"], f"python: job {i} result {info.result!r}")
                check(info.raw_result is not None and info.raw_result.hex() == want["result_hex"],
                      f"python: job {i} result bytes")
            else:
                check(info.state == "dead", f"python: job {i} is {info.state}")
                check(info.result is None and info.last_error == REASON, f"python: job {i} result/error")

    listed = {j["id"]: j for j in cli(telha, store, "ls", "--limit", "1000")["jobs"]}
    for i, want in enumerate(jobs):
        check(want["id"] in listed, f"cli ls: job {i} is not listed")
        state = "completed" if i < half else "dead"
        check(listed[want["id"]]["state"] == state, f"cli ls: job {i} is {listed[want['id']]['state']}")
        shown = cli(telha, store, "show", want["id"])
        check(shown["payload"] == {"encoding": "msgpack", "value": values["jobs"][i]["payload"]},
              f"cli show: job {i} payload {shown['payload']!r}")
        result = values["jobs"][i]["result"] if i < half else None
        check(shown["result"] == (None if result is None else {"encoding": "msgpack", "value": result}),
              f"cli show: job {i} result {shown['result']!r}")
        check(shown["last_error"] == (None if i < half else REASON), f"cli show: job {i} last_error")
    print(f"roundtrip python+cli: {len(jobs)} jobs read back identically "
          f"({checks} checks: Python dicts and bytes, telha jobs ls/show --json)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

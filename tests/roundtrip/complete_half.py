"""Round trip, step 2 (Python): lease the first half of the jobs Node
enqueued, check each payload (the decoded dict and the raw bytes), complete
each with its dict result, and add the stored result bytes to the manifest.

    python complete_half.py STORE MANIFEST
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import telha_jobs


def main() -> int:
    store, manifest_path = sys.argv[1], Path(sys.argv[2])
    values = json.loads((Path(__file__).parent / "values.json").read_text())
    manifest = json.loads(manifest_path.read_text())
    half = len(manifest["jobs"]) // 2
    with telha_jobs.Queue(store, reaper_interval=0) as q:
        for i in range(half):
            want = manifest["jobs"][i]
            job = q.lease_next("python-worker", kinds=manifest["kind"])
            assert job is not None, f"job {i} is not leasable"
            assert job.id == want["id"], f"FIFO: wanted {want['id']}, leased {job.id}"
            assert isinstance(job.payload, dict), f"{job.id}: payload is {type(job.payload)}"
            assert job.payload == values["jobs"][i]["payload"], f"{job.id}: {job.payload!r}"
            assert job.raw_payload.hex() == want["payload_hex"], f"{job.id}: raw payload bytes differ"
            result = values["jobs"][i]["result"]
            assert isinstance(result, dict)
            q.complete(job, result)
            info = q.get(job.id)
            assert info is not None and info.state == "completed"
            assert info.result == result, f"{job.id}: result reads back as {info.result!r}"
            assert info.raw_result == telha_jobs.encode_payload(result)
            want["result_hex"] = info.raw_result.hex()
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"roundtrip python: leased {half} jobs, payloads identical as dicts and bytes, "
          f"completed each with a dict result")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Python ingestion demo (`make demo`): a producer, a Worker pool processing
10,000 documents on the embedded default store ($TELHA_DB, else
./telha-data), one poison document dead-lettered, then the stats and the
Prometheus text a host would serve."""

from __future__ import annotations

import hashlib
import threading
import time
import uuid

import telha_jobs

DOCS = 10_000
BATCH = 500


def produce(q: telha_jobs.Queue, tenant: str) -> str:
    """Enqueue the documents in atomic batches; returns the poison job's id."""
    for start in range(0, DOCS, BATCH):
        q.enqueue_many(
            {
                "kind": "ingest:pdf" if i % 3 else "ingest:html",
                "payload": {"doc": f"s3://corpus/{tenant[:8]}/doc-{i:05}", "tenant": tenant},
                "scope": tenant,
                "idempotency_key": f"doc-{i:05}",
            }
            for i in range(start, start + BATCH)
        )
    return q.enqueue(
        "ingest:pdf", {"doc": f"s3://corpus/{tenant[:8]}/corrupt.pdf", "tenant": tenant}, scope=tenant
    )


def parse(job: telha_jobs.Job) -> dict[str, object]:
    """The handler: "parse" a document (a hash stands in for the real work)."""
    doc = job.payload["doc"]
    if doc.endswith("corrupt.pdf"):
        raise ValueError("cannot parse PDF header")
    digest = hashlib.sha256(doc.encode()).digest()
    return {"pages": 1 + digest[0] % 40, "sha": digest[:8].hex()}


def main() -> None:
    path = telha_jobs.default_store_path()
    q = telha_jobs.Queue(path, lease_ttl=30.0, reaper_interval=1.0, max_attempts=3, backoff_base=0.05)
    tenant = str(uuid.uuid4())
    before = q.stats()["total"]
    print(f"store {q.path}; tenant {tenant}")

    t0 = time.time()
    poison: list[str] = []
    producer = threading.Thread(target=lambda: poison.append(produce(q, tenant)))
    producer.start()
    worker = telha_jobs.Worker(q, parse, worker_id="ingest-pool", kinds="ingest:*", scope=tenant, concurrency=4)
    worker.start()
    producer.join()
    print(f"producer: enqueued {DOCS} documents + 1 poison in {time.time() - t0:.2f} s")

    def done() -> bool:
        total = q.stats()["total"]
        dead = q.get(poison[0])
        return total["completed"] - before["completed"] >= DOCS and dead is not None and dead.state == "dead"

    while not done():
        time.sleep(0.05)
    elapsed = time.time() - t0
    worker.stop(10.0)
    c = worker.counts
    print(
        f"worker pool (4 threads): {c['completed']} completed, {c['failed']} failed attempts "
        f"in {elapsed:.2f} s ({c['completed'] / elapsed:,.0f} jobs/s end to end)"
    )

    info = q.get(poison[0])
    assert info is not None
    print(f"\nthe poison job {info.id}: {info.state} after {info.attempts} attempts")
    for ts, transition, detail in info.events:
        print(f"  + {ts - info.created_at:6.3f}s  {transition:<10} {detail}")

    sample = q.list(scope=tenant, state="completed", limit=1)[0]
    print(f"\na completed job {sample.id}: {sample.payload['doc']} -> {sample.result}")

    stats = q.stats()
    print("\nstats (whole store):")
    print(f"  {'kind':<14}" + "".join(f"{s:>11}" for s in stats["total"]))
    for kind, counts in stats["by_kind"].items():
        print(f"  {kind:<14}" + "".join(f"{n:>11}" for n in counts.values()))
    print(f"  {'total':<14}" + "".join(f"{n:>11}" for n in stats["total"].values()))

    print("\nPrometheus text (q.metrics()):")
    print(q.metrics().rstrip())
    q.close()


if __name__ == "__main__":
    main()

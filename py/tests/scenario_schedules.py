"""Schedule steps of the conformance runner, as
core/tests/scenario_runner/schedules.rs: ``schedule_put`` (its keywords
and answer), ``schedule_get`` / ``_pause`` / ``_resume`` / ``_delete`` /
``_list``, ``run_schedules`` and ``schedule_next``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import telha_jobs

if TYPE_CHECKING:
    from .test_scenarios import Run


# schedule_put's keywords a case gives as they are (the rest are converted).
SCHEDULE_KEYS = ("timezone", "scope", "priority", "max_attempts", "catch_up", "max_catch_up",
                 "paused", "tags", "metadata")


def schedule_json(i: telha_jobs.ScheduleInfo) -> dict[str, Any]:
    """A schedule's answer, as the reference runner's ``info_json``."""
    return {
        "name": i.name, "spec": i.spec, "timezone": i.timezone, "kind": i.kind,
        "priority": i.priority, "max_attempts": i.max_attempts, "catch_up": i.catch_up,
        "max_catch_up": i.max_catch_up, "paused": i.paused, "enqueued": i.enqueued,
        "skipped": i.skipped, "has_next": i.next_slot is not None,
        "has_last": i.last_slot is not None, "last_error": i.last_error,
        "tags": i.tags, "metadata": i.metadata,
    }


def schedule_step(run: Run, op: str, s: dict[str, Any]) -> Any:
    """The schedule ops, as core/tests/scenario_runner/schedules.rs."""
    q = run.queue()
    name = "n" * int(s["name_size"]) if "name_size" in s else str(s.get("name", ""))
    if op == "schedule_put":
        kw: dict[str, Any] = {k: s[k] for k in SCHEDULE_KEYS if k in s}
        if "anchor_ms" in s:
            kw["anchor"] = s["anchor_ms"] / 1000
        if "expires_in_ms" in s:
            kw["expires_in"] = s["expires_in_ms"] / 1000
        if "metadata_size" in s:
            kw["metadata"] = {"big": "x" * s["metadata_size"]}
        payload = str(s.get("payload", "")).encode()
        return schedule_json(q.schedule_put(name, str(s.get("spec", "")),
                                            kind=str(s.get("kind", "")), payload=payload, **kw))
    if op == "schedule_get":
        return schedule_json(q.schedule_get(name))
    if op == "schedule_pause":
        return schedule_json(q.schedule_pause(name))
    if op == "schedule_resume":
        return schedule_json(q.schedule_resume(name))
    if op == "schedule_delete":
        q.schedule_delete(name)
        return None
    if op == "schedule_list":
        return {"names": [i.name for i in q.schedule_list()]}
    if op == "run_schedules":
        r = q.run_schedules()
        return {"schedules": r.schedules, "enqueued": r.enqueued, "skipped": r.skipped,
                "failed": r.failed}
    if op == "schedule_next":
        anchor = s["anchor_ms"] / 1000 if "anchor_ms" in s else None
        times = telha_jobs.schedule_next_times(
            str(s.get("spec", "")), timezone=s.get("timezone"), anchor=anchor,
            after=s.get("after_ms", 0) / 1000, n=s.get("n", 5))
        return {"times": [round(t * 1000) for t in times]}
    from .test_scenarios import StepFailed  # not at the top: that module imports this one

    raise StepFailed(f"unknown op {op!r}")

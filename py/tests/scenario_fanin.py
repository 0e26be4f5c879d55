"""Fan-in steps of the conformance runner (issue 43), as
core/tests/scenario_runner/fanin.rs: ``after`` (job names), ``after_ids``
(literal id text) and ``on_child_dead`` on an enqueue or an item,
``enqueue_group`` and ``results_of_children``, and ``get``'s ``fan_in``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import telha_jobs

if TYPE_CHECKING:
    from .test_scenarios import Run

FANIN_OPS = ("enqueue_group", "results_of_children")


def fan_kw(ids: dict[str, str], s: dict[str, Any]) -> dict[str, Any]:
    """The fan-in keywords of an enqueue step."""
    kw: dict[str, Any] = {}
    if "after" in s or "after_ids" in s:
        kw["after"] = [ids[n] for n in s.get("after", [])] + list(s.get("after_ids", []))
    if "on_child_dead" in s:
        kw["on_child_dead"] = s["on_child_dead"]
    return kw


def fan_in_json(f: telha_jobs.FanIn | None) -> dict[str, Any] | None:
    return None if f is None else {"unfinished": f.unfinished, "total": f.total, "policy": f.policy}


def fanin_step(run: Run, op: str, s: dict[str, Any]) -> Any:
    q = run.queue()
    if op == "enqueue_group":
        items = s.get("children", [])
        parent = s.get("parent", {})
        kids, p = q.enqueue_group([run.item(j) for j in items], run.item(parent))
        for j, job_id in zip(items, kids):
            if "as" in j:
                run.ids[j["as"]] = job_id
        if "as" in parent:
            run.ids[parent["as"]] = p
        return None
    cursor = run.cursors[s["cursor"]] if "cursor" in s else None
    page = q.results_of_children(run.job_id(s), cursor, s.get("limit", 100))
    if "as" in s and page.next is not None:
        run.cursors[s["as"]] = page.next
    children = []
    for c in page:
        o: dict[str, Any] = {"job": run.name_of(c.id), "state": c.state, "last_error": c.last_error}
        o["result"] = None if c.raw_result is None else c.raw_result.decode("utf-8", "replace")
        o["result_size"] = None if c.raw_result is None else len(c.raw_result)
        children.append(o)
    return {"children": children, "has_next": page.next is not None}

'use strict'
// Fan-in steps of the conformance runner (issue 43), as
// core/tests/scenario_runner/fanin.rs: `after` (job names), `after_ids`
// (literal id text) and `on_child_dead` on an enqueue or an item,
// `enqueue_group` and `results_of_children`, and `get`'s `fan_in`.

/** The fan-in options of an enqueue step (`run.jobId` resolves the names). */
function fanOptions (run, s) {
  const o = {}
  if ('after' in s || 'after_ids' in s) o.after = [...(s.after ?? []).map((n) => run.jobId({ job: n })), ...(s.after_ids ?? [])]
  if ('on_child_dead' in s) o.onChildDead = s.on_child_dead
  return o
}

function fanInJson (f) {
  return f === null || f === undefined ? null : { unfinished: f.unfinished, total: f.total, policy: f.policy }
}

async function fanInStep (run, s) {
  const q = run.queue()
  if (s.op === 'enqueue_group') {
    const kids = s.children ?? []
    const parent = s.parent ?? {}
    const [p] = run.items([parent])
    const g = await q.enqueueGroup(run.items(kids), p)
    kids.forEach((j, i) => { if ('as' in j) run.ids.set(j.as, g.children[i]) })
    if ('as' in parent) run.ids.set(parent.as, g.parent)
    return null
  }
  const o = {}
  if ('cursor' in s) o.cursor = run.cursors.get(s.cursor)
  if ('limit' in s) o.limit = s.limit
  const page = await q.resultsOfChildren(run.jobId(s), o)
  if (s.as && page.next !== null) run.cursors.set(s.as, page.next)
  const children = page.children.map((c) => {
    const b = c.resultBytes
    return {
      job: run.nameOf(c.id),
      state: c.state,
      last_error: c.lastError,
      result: b === null ? null : Buffer.from(b).toString('utf8'),
      result_size: b === null ? null : b.length
    }
  })
  return { children, has_next: page.next !== null }
}

module.exports = { fanOptions, fanInJson, fanInStep }

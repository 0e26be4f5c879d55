'use strict'
// Schedule steps of the conformance runner, as
// core/tests/scenario_runner/schedules.rs: `schedule_put` (its options and
// answer), `schedule_get` / `_pause` / `_resume` / `_delete` / `_list`,
// `run_schedules` and `schedule_next`.

const { scheduleNextTimes } = require('..')

/** `name`, or `name_size` that many `n`s. */
function scheduleName (s) {
  return 'name_size' in s ? 'n'.repeat(s.name_size) : String(s.name ?? '')
}

/** A `schedule_put` step's schedule, as `schedulePut` takes it. */
function scheduleOptions (s) {
  const o = { name: scheduleName(s), spec: s.spec ?? '', kind: s.kind ?? '', payload: Buffer.from(String(s.payload ?? ''), 'utf8') }
  const names = {
    timezone: 'timezone', anchor_ms: 'anchor', scope: 'scope', priority: 'priority', max_attempts: 'maxAttempts',
    expires_in_ms: 'expiresInMs', catch_up: 'catchUp', max_catch_up: 'maxCatchUp', paused: 'paused',
    tags: 'tags', metadata: 'metadata'
  }
  for (const [k, v] of Object.entries(names)) if (k in s) o[v] = s[k]
  if ('metadata_size' in s) o.metadata = { big: 'x'.repeat(s.metadata_size) }
  return o
}

function scheduleInfoJson (i) {
  return {
    name: i.name, spec: i.spec, timezone: i.timezone, kind: i.kind, priority: i.priority,
    max_attempts: i.maxAttempts, catch_up: i.catchUp, max_catch_up: i.maxCatchUp, paused: i.paused,
    enqueued: i.enqueued, skipped: i.skipped, has_next: i.nextSlot !== null, has_last: i.lastSlot !== null,
    last_error: i.lastError, tags: i.tags, metadata: i.metadata
  }
}

/** One schedule step on `run`'s queue. */
async function scheduleStep (run, s) {
  const q = run.queue()
  switch (s.op) {
    case 'schedule_put':
      return scheduleInfoJson(await q.schedulePut(scheduleOptions(s)))
    case 'schedule_get':
      return scheduleInfoJson(await q.scheduleGet(scheduleName(s)))
    case 'schedule_pause':
      return scheduleInfoJson(await q.schedulePause(scheduleName(s)))
    case 'schedule_resume':
      return scheduleInfoJson(await q.scheduleResume(scheduleName(s)))
    case 'schedule_delete':
      await q.scheduleDelete(scheduleName(s))
      return null
    case 'schedule_list':
      return { names: (await q.scheduleList()).map((i) => i.name) }
    case 'run_schedules': {
      const r = await q.runSchedules()
      return { schedules: r.schedules, enqueued: r.enqueued, skipped: r.skipped, failed: r.failed }
    }
    case 'schedule_next': {
      const o = { after: s.after_ms ?? 0, n: s.n ?? 5 }
      if ('timezone' in s) o.timezone = s.timezone
      if ('anchor_ms' in s) o.anchor = s.anchor_ms
      return { times: scheduleNextTimes(s.spec ?? '', o) }
    }
  }
  throw new Error(`unknown schedule op ${s.op}`)
}

module.exports = { scheduleStep }

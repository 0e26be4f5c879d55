'use strict'
// Job control (issue 16): cancel, cancelMany, delete, snooze, fail with a
// retry delay, expiry before start, pause / resume / paused, and the new
// fields they show. Run locally here and over Queue.connect by
// remote.test.js (helpers.openTemp hands it a client).
const test = require('node:test')
const assert = require('node:assert/strict')
const { openTemp, sleep } = require('./helpers.js')

const SCOPE_A = '0190c0de-0000-7000-8000-0000000000a1'
const coded = (code, pattern) => (e) => {
  assert.equal(e.code, code, `${e.name}: ${e.message}`)
  if (pattern) assert.match(e.message, pattern)
  return true
}

test('cancel: pending at once, leased by a request that extend answers and the settle records', async (t) => {
  const q = await openTemp(t)
  const a = await q.enqueue('embed', { n: 1 })
  const b = await q.enqueue('embed', { n: 2 })
  const job = await q.leaseNext('w1')
  assert.equal(job.id, a)
  assert.equal(await q.cancel(b, { reason: 'wrong batch' }), 'cancelled')
  assert.equal((await q.get(b)).state, 'cancelled')
  assert.equal(await q.cancel(a, { reason: 'stop it' }), 'requested')
  const info = await q.get(a)
  assert.equal(info.state, 'leased')
  assert.equal(info.cancelRequested, 'stop it')
  assert.deepEqual(await q.extendAnswers([job], 'w1'), ['cancelled'])
  assert.deepEqual(await q.extend([job], 'w1'), [false])
  await assert.rejects(q.complete(job, { partial: true }), coded('CANCELLED'))
  const done = await q.get(a)
  assert.equal(done.state, 'cancelled')
  assert.deepEqual(done.result, { partial: true })
  assert.deepEqual(done.events.map((e) => e.transition), ['enqueued', 'leased', 'cancel_requested', 'cancelled'])
  await assert.rejects(q.cancel(a), coded('WRONG_STATE'))
  await assert.rejects(q.cancel('0190c0de-0000-7000-8000-000000000000'), coded('NOT_FOUND'))
  const st = await q.stats()
  assert.equal(st.total.cancelled, 2)
  assert.equal(st.byKind.embed.cancelled, 2)
  assert.deepEqual((await q.list({ state: 'cancelled' })).jobs.map((j) => j.id).sort(), [a, b].sort())
})

test('cancelMany by kind, scope and state; a finished state is refused', async (t) => {
  const q = await openTemp(t)
  await q.enqueueMany([['embed', 1], ['embed', 2], ['ocr', 3], { kind: 'embed', payload: 4, scope: SCOPE_A }])
  await q.leaseNext('w1', { kinds: 'ocr' })
  assert.deepEqual(await q.cancelMany({ kind: 'embed', scope: SCOPE_A, reason: 'tenant gone' }), { cancelled: 1, requested: 0, corrupt: 0 })
  assert.deepEqual(await q.cancelMany({ state: 'leased' }), { cancelled: 0, requested: 1, corrupt: 0 })
  assert.deepEqual(await q.cancelMany(), { cancelled: 2, requested: 1, corrupt: 0 })
  await assert.rejects(q.cancelMany({ state: 'completed' }), coded('INVALID_ARGUMENT'))
  const st = (await q.stats()).total
  assert.equal(st.pending, 0)
  assert.equal(st.cancelled, 3)
  assert.equal(st.leased, 1)
})

test('delete removes a job that is not leased; a leased one is WRONG_STATE', async (t) => {
  const q = await openTemp(t)
  const a = await q.enqueue('embed', 'a', { idempotencyKey: 'k1' })
  const b = await q.enqueue('embed', 'b')
  const job = await q.leaseNext('w1')
  assert.equal(job.id, a)
  await q.release(job)
  await q.delete(a)
  assert.equal(await q.get(a), null)
  await assert.rejects(q.delete(a), coded('NOT_FOUND'))
  // Its idempotency key went with it.
  assert.notEqual(await q.enqueue('embed', 'a2', { idempotencyKey: 'k1' }), a)
  const held = await q.leaseNext('w1', { kinds: 'embed' })
  await assert.rejects(q.delete(held.id), coded('WRONG_STATE', /cancel/))
  assert.equal((await q.get(held.id)).state, 'leased')
  assert.ok(b)
})

test('snooze keeps the attempt and returns the job after the delay', async (t) => {
  const q = await openTemp(t)
  const id = await q.enqueue('embed', 'x')
  const job = await q.leaseNext('w1')
  await q.snooze(job, 300)
  const info = await q.get(id)
  assert.equal(info.state, 'pending')
  assert.equal(info.attempts, 0)
  assert.equal(info.snoozes, 1)
  assert.equal(await q.leaseNext('w1'), null)
  await sleep(400)
  const again = await q.leaseNext('w1')
  assert.equal(again.id, id)
  assert.equal(again.attempts, 0)
  await assert.rejects(q.snooze(job, 10), coded('ABORTED'))
})

test('fail with retryInMs overrides the backoff schedule', async (t) => {
  const q = await openTemp(t, { backoffBaseMs: 600000, backoffCapMs: 600000 })
  const id = await q.enqueue('embed', 'x')
  const job = await q.leaseNext('w1')
  await q.fail(job, new Error('rate limited'), { retryInMs: 200 })
  const info = await q.get(id)
  assert.equal(info.state, 'failed')
  assert.equal(info.attempts, 1)
  assert.ok(info.stateTs - Date.now() < 1000, 'retry-at is the handler delay, not 10 minutes')
  await sleep(300)
  assert.equal((await q.leaseNext('w1')).id, id)
})

test('expiry before start: expiresInMs / expiresAt, and the past refused', async (t) => {
  const q = await openTemp(t)
  const soon = await q.enqueue('embed', 'x', { expiresInMs: 100 })
  const later = await q.enqueue('embed', 'y', { expiresAt: new Date(Date.now() + 600000) })
  assert.ok((await q.get(soon)).expiresAt > Date.now())
  assert.equal((await q.get(later)).expiresAt > Date.now() + 500000, true)
  await sleep(200)
  assert.equal((await q.leaseNext('w1')).id, later)
  const dead = await q.get(soon)
  assert.equal(dead.state, 'dead')
  assert.equal(dead.lastError, 'expired before start')
  await assert.rejects(q.enqueue('embed', 'z', { expiresAt: 1 }), coded('INVALID_ARGUMENT'))
  await assert.rejects(q.enqueue('embed', 'z', { expiresInMs: 0 }), coded('INVALID_ARGUMENT'))
  await assert.rejects(q.enqueue('embed', 'z', { delayMs: 60000, expiresInMs: 1000 }), coded('INVALID_ARGUMENT'))
  const c = await q.enqueue('ocr', 'c', { expiresInMs: 50 })
  await sleep(100)
  assert.equal((await q.reap()).expiredUnstarted, 1)
  assert.equal((await q.get(c)).state, 'dead')
})

test('pause and resume kinds, families and scopes; paused, stats and get show it', async (t) => {
  const q = await openTemp(t)
  const a = await q.enqueue('embed', 'a')
  const b = await q.enqueue('ingest:pdf', 'b')
  const c = await q.enqueue('ocr', 'c', { scope: SCOPE_A })
  assert.equal(await q.pause({ kind: 'embed' }), true)
  assert.equal(await q.pause({ kind: 'embed' }), false)
  assert.equal(await q.pause({ kind: 'ingest:*' }), true)
  assert.equal(await q.pause({ scope: SCOPE_A }), true)
  assert.deepEqual(await q.paused(), { kinds: ['embed', 'ingest:*'], scopes: [SCOPE_A] })
  assert.deepEqual((await q.stats()).paused, { kinds: ['embed', 'ingest:*'], scopes: [SCOPE_A] })
  assert.equal((await q.get(a)).paused, true)
  assert.equal((await q.get(c)).paused, true)
  const metrics = await q.metrics()
  for (const line of ['telha_jobs_paused{kind="embed"} 1', 'telha_jobs_paused{kind="ingest:*"} 1', `telha_jobs_paused{scope="${SCOPE_A}"} 1`]) {
    assert.ok(metrics.includes(line), `metrics lack ${line}`)
  }
  assert.equal(await q.leaseNext('w1'), null)
  assert.equal(await q.resume({ kind: 'ingest:pdf' }), false)
  assert.equal(await q.resume({ kind: 'ingest:*' }), true)
  assert.equal((await q.leaseNext('w1')).id, b)
  assert.equal(await q.resume({ scope: SCOPE_A }), true)
  assert.equal((await q.leaseNext('w1')).id, c)
  assert.equal(await q.resume({ kind: 'embed' }), true)
  assert.equal((await q.leaseNext('w1')).id, a)
  assert.deepEqual(await q.paused(), { kinds: [], scopes: [] })
})

test('a lease carries its kind timeout; the new settings read back', async (t) => {
  const q = await openTemp(t, { kinds: { slow: { timeoutMs: 5000, maxSnoozes: 3 } }, deadRetentionMs: false })
  await q.enqueue('slow', 1)
  await q.enqueue('quick', 2)
  assert.equal((await q.leaseNext('w1', { kinds: 'slow' })).timeoutMs, 5000)
  assert.equal((await q.leaseNext('w1', { kinds: 'quick' })).timeoutMs, null)
  const s = q.settings()
  if (s !== null) { // null over Queue.connect
    assert.equal(s.deadRetentionMs, false)
    assert.equal(s.kinds.slow.timeoutMs, 5000)
    assert.equal(s.kinds.slow.maxSnoozes, 3)
  }
})

test('hostile job-control input: typed errors, and the store stays usable', async (t) => {
  const q = await openTemp(t)
  const id = await q.enqueue('embed', 'a')
  const invalid = coded('INVALID_ARGUMENT')
  for (const bad of ['', 'not-a-uuid', '0190c0de-0000-7000-8000-00000000000g', '../../etc/passwd', 'x'.repeat(100000), '\u0000']) {
    await assert.rejects(q.cancel(bad), invalid)
    await assert.rejects(q.delete(bad), invalid)
  }
  for (const bad of [42, null, undefined, {}, ['a']]) {
    await assert.rejects(q.cancel(bad), (e) => e instanceof TypeError && invalid(e))
    await assert.rejects(q.delete(bad), (e) => e instanceof TypeError && invalid(e))
  }
  for (const kind of ['', 'Bad Kind', 'a:b:*', '*', 'x'.repeat(1000)]) {
    await assert.rejects(q.pause({ kind }), invalid)
    await assert.rejects(q.cancelMany({ kind }), invalid)
  }
  for (const scope of ['x', '', 'not-a-scope']) {
    await assert.rejects(q.resume({ scope }), invalid)
    await assert.rejects(q.cancelMany({ scope }), invalid)
  }
  await assert.rejects(q.pause({}), invalid)
  await assert.rejects(q.pause({ kind: 'embed', scope: SCOPE_A }), invalid)
  await assert.rejects(q.pause(), (e) => e instanceof TypeError && invalid(e))
  await assert.rejects(q.pause({ queue: 'embed' }), invalid)
  await assert.rejects(q.cancelMany({ state: 'nonsense' }), invalid)
  await assert.rejects(q.cancel(id, { why: 'x' }), invalid)
  const job = await q.leaseNext('w1')
  const range = (e) => e instanceof RangeError && invalid(e)
  // Delays: at most the longest duration (100 years, about 3.15e12 ms).
  for (const d of [NaN, -1, -Infinity, Infinity, 4e12, 2 ** 64, 1e300]) {
    await assert.rejects(q.snooze(job, d), range, `snooze ${d}`)
    await assert.rejects(q.fail(job, 'x', { retryInMs: d }), range, `retryInMs ${d}`)
  }
  // Expiries: an instant at most 9999-12-31.
  for (const d of [NaN, -1, -Infinity, Infinity, 3e14, 2 ** 64, 1e300]) {
    await assert.rejects(q.enqueue('embed', 'b', { expiresInMs: d }), range, `expiresInMs ${d}`)
    await assert.rejects(q.enqueue('embed', 'b', { expiresAt: d }), range, `expiresAt ${d}`)
  }
  await assert.rejects(q.snooze(job, '10'), (e) => e instanceof TypeError && invalid(e))
  await assert.rejects(q.snooze({ id: job.id, generation: 9 }, 10), coded('ABORTED'))
  await assert.rejects(q.snooze({ id: '0190c0de-0000-7000-8000-000000000000', generation: 1 }, 10), coded('NOT_FOUND'))
  const info = await q.get(id)
  assert.equal(info.state, 'leased')
  assert.equal(info.attempts, 0)
  assert.equal(info.snoozes, 0)
  await q.complete(job)
  assert.equal((await q.stats()).total.completed, 1)
  assert.deepEqual(await q.paused(), { kinds: [], scopes: [] })
})

test('purge deletes finished jobs older than its cutoff; a live state or a bad cutoff is refused', async (t) => {
  const q = await openTemp(t)
  const id = await q.enqueue('embed', 'x', { idempotencyKey: 'purge-me' })
  await q.complete(await q.leaseNext('w1'))
  const kept = await q.enqueue('embed', 'kept')
  assert.equal(await q.purge('completed', Date.now() - 60000), 0)
  assert.equal(await q.purge('completed', new Date(Date.now() + 60000)), 1)
  assert.equal(await q.get(id), null)
  assert.equal((await q.stats()).total.completed, 0)
  assert.notEqual(await q.enqueue('embed', 'again', { idempotencyKey: 'purge-me' }), id, 'the key is free again')
  assert.equal((await q.get(kept)).state, 'pending')
  await assert.rejects(q.purge('pending', Date.now()), coded('INVALID_ARGUMENT'))
  await assert.rejects(q.purge('finished', Date.now()), coded('INVALID_ARGUMENT'))
  await assert.rejects(q.purge('dead', -1), { name: 'RangeError' })
  await assert.rejects(q.purge('dead'), { name: 'TypeError' })
})

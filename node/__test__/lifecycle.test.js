'use strict'
// Poison jobs, fencing of stale leases, operator retry, and the rest of the surface.
const test = require('node:test')
const assert = require('node:assert/strict')
const { openTemp, sleep } = require('./helpers.js')

const fast = { backoffBaseMs: 1, backoffCapMs: 1 }

test('a poison job is leased exactly maxAttempts times, then dead with its whole event log', async (t) => {
  const q = await openTemp(t, { maxAttempts: 3, ...fast })
  const id = await q.enqueue('ingest:pdf', { doc: 'poison.pdf' })
  let leases = 0
  for (;;) {
    const job = await q.leaseNext('w', { waitMs: 500 })
    if (!job) break
    leases++
    assert.equal(job.attempts, leases - 1)
    assert.equal(job.maxAttempts, 3)
    await q.fail(job, new Error(`cannot parse (try ${leases})`))
  }
  assert.equal(leases, 3)
  const info = await q.get(id)
  assert.equal(info.state, 'dead')
  assert.equal(info.attempts, 3)
  assert.equal(info.lastError, 'cannot parse (try 3)')
  const transitions = info.events.map((e) => e.transition)
  assert.deepEqual(transitions, ['enqueued', 'leased', 'failed', 'leased', 'failed', 'leased', 'failed', 'dead'])
  assert.equal(info.droppedEvents, 0)
})

test('a per-job maxAttempts and a non-retryable failure go dead at once', async (t) => {
  const q = await openTemp(t, fast)
  const id = await q.enqueue('embed', null, { maxAttempts: 1 })
  await q.fail(await q.leaseNext('w'), 'boom')
  assert.equal((await q.get(id)).state, 'dead')
  const id2 = await q.enqueue('embed', null)
  await q.fail(await q.leaseNext('w'), 'fatal', { retryable: false })
  const info = await q.get(id2)
  assert.equal(info.state, 'dead')
  assert.equal(info.attempts, 1)
})

test('a stale complete (the lease was reaped) is ABORTED and changes nothing', async (t) => {
  const q = await openTemp(t, { leaseTtlMs: 50, ...fast })
  const id = await q.enqueue('embed', { n: 1 })
  const stale = await q.leaseNext('slow-worker')
  await sleep(120)
  const reaped = await q.reap()
  assert.equal(reaped.expired, 1)
  const untouched = await q.get(id)
  await assert.rejects(q.complete(stale, 'late'), (e) => e.code === 'ABORTED' && /lease lost/.test(e.message) && e instanceof Error)
  await assert.rejects(q.fail(stale, 'late'), { code: 'ABORTED' })
  await assert.rejects(q.release(stale), { code: 'ABORTED' })
  assert.deepEqual(await q.extend([stale], 'slow-worker'), [false])
  assert.deepEqual(await q.get(id), untouched, 'the late calls changed the job')
  assert.equal(untouched.state, 'pending')
  assert.equal(untouched.attempts, 1)

  // The next holder's lease fences out the first one too.
  const fresh = await q.leaseNext('fast-worker', { waitMs: 1000 })
  assert.equal(fresh.id, id)
  assert.equal(fresh.generation, stale.generation + 1)
  await assert.rejects(q.complete(stale, 'late'), { code: 'ABORTED' })
  assert.deepEqual(await q.extend([fresh], 'fast-worker'), [true])
  await q.complete(fresh, { ok: true })
  const done = await q.get(id)
  assert.equal(done.state, 'completed')
  assert.deepEqual(done.result, { ok: true })
})

test('retry brings a dead job back to pending with attempts reset', async (t) => {
  const q = await openTemp(t, fast)
  const id = await q.enqueue('embed', 'x')
  await q.fail(await q.leaseNext('w'), 'broken', { retryable: false })
  assert.equal((await q.get(id)).state, 'dead')
  await q.retry(id)
  const info = await q.get(id)
  assert.equal(info.state, 'pending')
  assert.equal(info.attempts, 0)
  assert.equal(info.events.at(-1).transition, 'retried')
  const again = await q.leaseNext('w')
  assert.equal(again.id, id)
  await q.complete(again)
  assert.equal((await q.get(id)).state, 'completed')
  // Only dead or failed jobs can be retried; unknown ids are NOT_FOUND.
  await assert.rejects(q.retry(id), { code: 'INVALID_ARGUMENT' })
  await assert.rejects(q.retry('01a2299c-e422-77dd-bb54-61ab0316bf4b'), { code: 'NOT_FOUND' })
  assert.equal(await q.get('01a2299c-e422-77dd-bb54-61ab0316bf4b'), null)
})

test('completeMany completes a batch, answers a repeat as its completion did, and refuses a bad result', async (t) => {
  const q = await openTemp(t, { leaseTtlMs: 50, maxPayloadBytes: 64, ...fast })
  await q.enqueueMany([['embed', 1], ['embed', 2], ['embed', 3]])
  const [a, b, c] = await q.leaseMany('w', 3)
  await q.complete(b, 'early')
  const codes = await q.completeMany([a, b, c], [{ n: 1 }, 'again', Buffer.alloc(100)])
  // b was completed before: a retry, answered as that completion (its
  // result stands).
  assert.deepEqual(codes, [null, null, 'INVALID_ARGUMENT'])
  assert.deepEqual((await q.get(a.id)).result, { n: 1 })
  assert.equal((await q.get(b.id)).result, 'early')
  assert.equal((await q.get(c.id)).state, 'leased')
  assert.deepEqual(await q.completeMany([c]), [null])
  assert.deepEqual(await q.completeMany([]), [])
  await assert.rejects(q.completeMany([c], [1, 2]), { code: 'INVALID_ARGUMENT' })
})

test('failMany and releaseMany settle a batch in one write and answer per job', async (t) => {
  const q = await openTemp(t)
  const ids = await q.enqueueMany([['embed', 1], ['embed', 2], ['embed', 3], ['embed', 4]])
  const [a, b, c, d] = await q.leaseMany('w', 4)
  await q.release(b) // its lease is gone before the batch settles
  const codes = await q.failMany([a, b, c, d], ['boom', 'late', new Error('bad input'), 'far'],
    { retryable: [true, true, false, true], retryInMs: [60000, null, null, 4e12] })
  assert.deepEqual(codes, [null, 'ABORTED', null, 'INVALID_ARGUMENT'])
  const infoA = await q.get(ids[0])
  assert.equal(infoA.state, 'failed')
  assert.equal(infoA.lastError, 'boom')
  assert.equal((await q.get(ids[2])).state, 'dead')
  assert.equal((await q.get(ids[2])).lastError, 'bad input')
  assert.equal((await q.get(ids[3])).state, 'leased')
  // One reason for every job; a repeat answers as the first fail did.
  assert.deepEqual(await q.failMany([a], 'boom'), [null])
  assert.deepEqual(await q.releaseMany([d, a, d]), [null, 'ABORTED', null])
  assert.equal((await q.get(ids[3])).state, 'pending')
  assert.equal((await q.get(ids[3])).attempts, 0)
  assert.deepEqual(await q.failMany([], []), [])
  assert.deepEqual(await q.releaseMany([]), [])
  await assert.rejects(q.failMany([a, c], ['x']), { code: 'INVALID_ARGUMENT' })
  await assert.rejects(q.failMany([a], [3]), TypeError)
  await assert.rejects(q.failMany([a], 'x', { retryInMs: -1 }), RangeError)
  await assert.rejects(q.failMany([a], 'x', { nope: 1 }), { code: 'INVALID_ARGUMENT' })
})

test('a leased job carries its fields exactly, whatever the worker id holds', async (t) => {
  const q = await openTemp(t)
  const workerId = 'w "quoted" \\ back\nline\ttab \u0001 ✓ 𝄞'
  const ids = await q.enqueueMany([['embed', Buffer.from('raw')], ['ingest:pdf', { n: 1 }], ['embed', Buffer.alloc(0)]])
  const jobs = await q.leaseMany(workerId, 3)
  assert.deepEqual(jobs.map((j) => j.id), ids)
  assert.deepEqual(jobs.map((j) => j.workerId), [workerId, workerId, workerId])
  assert.deepEqual(jobs[0].payload, Buffer.from('raw'))
  assert.deepEqual(jobs[1].payload, { n: 1 })
  assert.equal(jobs[1].kind, 'ingest:pdf')
  assert.deepEqual(jobs[2].payloadBytes, Buffer.alloc(0))
  for (const j of jobs) {
    assert.equal(j.generation, 1)
    assert.equal(j.attempts, 0)
    assert.equal(j.priority, 128)
    assert.ok(j.deadline > Date.now())
    assert.equal(j.scope, '00000000-0000-0000-0000-000000000000')
  }
  assert.deepEqual(await q.extend(jobs, workerId), [true, true, true])
})

test('release hands a job back without spending an attempt', async (t) => {
  const q = await openTemp(t)
  const id = await q.enqueue('embed', 'x')
  const job = await q.leaseNext('w')
  await q.release(job)
  const info = await q.get(id)
  assert.equal(info.state, 'pending')
  assert.equal(info.attempts, 0)
  assert.equal((await q.leaseNext('w')).id, id)
})

test('options: priority, delay, scope and kind filters, idempotency keys', async (t) => {
  const q = await openTemp(t)
  const scope = '7c1e4a52-3f00-4c6e-9a51-0d8f4f3a9b10'
  const low = await q.enqueue('embed', 'low', { priority: 200 })
  const high = await q.enqueue('embed', 'high', { priority: 0 })
  const later = await q.enqueue('embed', 'later', { delayMs: 60000 })
  const tenant = await q.enqueue('ingest:pdf', 'tenant', { scope })
  const k1 = await q.enqueue('embed', 'once', { idempotencyKey: 'doc-1' })
  const k2 = await q.enqueue('embed', 'twice', { idempotencyKey: 'doc-1' })
  assert.equal(k1, k2, 'a repeated idempotency key returns the existing job')

  assert.equal((await q.leaseNext('w', { kinds: 'ingest:*' })).id, tenant)
  assert.equal((await q.leaseNext('w', { scope: '00000000-0000-0000-0000-000000000000' })).id, high)
  const rest = await q.leaseMany('w', 10)
  assert.deepEqual(rest.map((j) => j.payload).sort(), ['low', 'once'])
  assert.ok(rest.some((j) => j.id === low))
  assert.equal((await q.get(later)).state, 'pending', 'the delayed job is not leasable yet')
  assert.equal(await q.leaseNext('w'), null)
})

test('list pages through jobs; stats, reap and metrics answer', async (t) => {
  const q = await openTemp(t)
  const ids = await q.enqueueMany(Array.from({ length: 5 }, (_, i) => ({ kind: 'embed', payload: { i } })))
  const first = await q.list({ state: 'pending', limit: 3 })
  assert.equal(first.jobs.length, 3)
  assert.ok(first.next)
  const second = await q.list({ state: 'pending', limit: 3, after: first.next })
  assert.deepEqual([...first.jobs, ...second.jobs].map((j) => j.id), ids)
  assert.deepEqual((await q.list({ kind: 'ingest:*' })).jobs, [])
  const stats = await q.stats()
  assert.equal(stats.total.pending, 5)
  assert.equal(stats.byKind.embed.pending, 5)
  assert.deepEqual(await q.reap(), { expired: 0, dead: 0, pruned: 0, expiredUnstarted: 0, corrupt: [] })
  assert.match(await q.metrics(), /telha_jobs_/)
})

test('a closed queue answers CLOSED', async (t) => {
  const q = await openTemp(t)
  await q.close()
  assert.equal(q.closed, true)
  await assert.rejects(q.enqueue('embed', 1), { code: 'CLOSED' })
  await assert.rejects(q.stats(), { code: 'CLOSED' })
})

test('enqueueResult and enqueueManyResults tell a new job from an idempotency hit; enqueue still resolves with the id', async (t) => {
  const q = await openTemp(t)
  const first = await q.enqueueResult('embed', 'a', { idempotencyKey: 'doc-1' })
  assert.equal(typeof first.id, 'string')
  assert.equal(first.created, true)
  assert.deepEqual(await q.enqueueResult('embed', 'b', { idempotencyKey: 'doc-1' }), { id: first.id, created: false, debounced: false })
  assert.equal(await q.enqueue('embed', 'c', { idempotencyKey: 'doc-1' }), first.id)
  const many = await q.enqueueManyResults([
    { kind: 'embed', payload: 1, idempotencyKey: 'doc-1' },
    ['embed', 2],
    { kind: 'embed', payload: 3, idempotencyKey: 'doc-2' }
  ])
  assert.equal(many.length, 3)
  assert.deepEqual(many.map((r) => r.created), [false, true, true])
  assert.equal(many[0].id, first.id)
  const ids = await q.enqueueMany([{ kind: 'embed', idempotencyKey: 'doc-2' }, ['embed', 4]])
  assert.equal(ids[0], many[2].id)
  assert.deepEqual(await q.enqueueManyResults([]), [])
  assert.equal((await q.stats()).total.pending, 4)
})

test('a lease carries the TTL it was granted with (global and per kind)', async (t) => {
  const q = await openTemp(t, { leaseTtlMs: 4321, kinds: { 'ingest:pdf': { leaseTtlMs: 98765 } } })
  await q.enqueueMany([['embed', 1], ['ingest:pdf', 2]])
  const jobs = await q.leaseMany('w', 2)
  const ttl = Object.fromEntries(jobs.map((j) => [j.kind, j.leaseTtlMs]))
  assert.deepEqual(ttl, { embed: 4321, 'ingest:pdf': 98765 })
  for (const j of jobs) assert.equal(j.payloadEncoding, 'value')
})

test('list fills its page past rows that do not match (the core list_full), and a cursor lists after its job', async (t) => {
  // One core list call reads at most 100,000 rows: a rare kind behind more
  // non-matching rows than that gave an empty first page with a `next`.
  const q = await openTemp(t)
  const filler = Array.from({ length: 10000 }, () => ['embed', null])
  for (let i = 0; i < 11; i++) await q.enqueueMany(filler)
  const rare = await q.enqueue('ingest:pdf', null, { priority: 255 })
  const page = await q.list({ state: 'pending', kind: 'ingest:*' })
  assert.deepEqual(page.jobs.map((j) => j.id), [rare])
  assert.equal(page.next, null)
  assert.deepEqual(page.corrupt, [])
  const first = await q.list({ state: 'pending', limit: 2 })
  const after = await q.list({ state: 'pending', limit: 1, after: first.jobs[0].cursor })
  assert.equal(after.jobs[0].id, first.jobs[1].id)
})

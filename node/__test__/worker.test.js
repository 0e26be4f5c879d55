'use strict'
// The Worker: heartbeats, completion, failure, lease loss, graceful stop.
const test = require('node:test')
const assert = require('node:assert/strict')
const { Worker, Permanent } = require('..')
const { openTemp, sleep } = require('./helpers.js')

test("the Worker's heartbeats keep a long job leased past its TTL", async (t) => {
  // TTL 1 s, a background reaper every 50 ms, a 3 s job: without
  // heartbeats the lease would be reaped 3 times over. (A 300 ms TTL made
  // this flaky on a loaded 2-core machine: one heartbeat late by a TTL.)
  const q = await openTemp(t, { leaseTtlMs: 1000, reaperIntervalMs: 50 })
  const id = await q.enqueue('embed', { doc: 'long' })
  let aborted = false
  const w = new Worker(q, async (job, { signal }) => {
    signal.addEventListener('abort', () => { aborted = true })
    await sleep(3000)
    return { pages: 3 }
  }, { workerId: 'steady' })
  const done = new Promise((resolve) => w.once('completed', (job, result) => resolve({ job, result })))
  const run = w.run()
  const { job, result } = await done
  await w.stop()
  await run
  assert.equal(job.id, id)
  assert.deepEqual(result, { pages: 3 })
  assert.equal(aborted, false, 'the handler was told its lease was lost')
  const info = await q.get(id)
  assert.equal(info.state, 'completed')
  assert.equal(info.attempts, 0, 'the lease never expired')
  assert.equal(info.generation, 1, 'the job was leased once')
  assert.ok(!info.events.some((e) => e.transition === 'lease_expired'))
  assert.deepEqual(info.result, { pages: 3 })
})

test('a throw fails the job for a retry; a Permanent error fails it for good', async (t) => {
  const q = await openTemp(t, { backoffBaseMs: 1, backoffCapMs: 1 })
  const flaky = await q.enqueue('embed', { flaky: true })
  const poison = await q.enqueue('embed', { flaky: false })
  let flakyCalls = 0
  const w = new Worker(q, async (job) => {
    if (!job.payload.flaky) throw new Permanent('unsupported document')
    flakyCalls++
    if (flakyCalls === 1) throw new Error('temporary outage')
    return 'ok'
  }, { concurrency: 2, pollMs: 50 })
  const failures = []
  w.on('failed', (job, err) => failures.push([job.id, err.message]))
  const completed = new Promise((resolve) => w.on('completed', resolve))
  const run = w.run()
  await completed
  await w.stop()
  await run
  assert.equal((await q.get(flaky)).state, 'completed')
  assert.equal((await q.get(flaky)).attempts, 1)
  const dead = await q.get(poison)
  assert.equal(dead.state, 'dead')
  assert.equal(dead.attempts, 1, 'a Permanent error is not retried')
  assert.match(dead.lastError, /Permanent: unsupported document/)
  assert.deepEqual(failures.map((f) => f[1]).sort(), ['temporary outage', 'unsupported document'])
})

test("the handler's signal fires when its lease is lost", async (t) => {
  const q = await openTemp(t, { leaseTtlMs: 200, backoffBaseMs: 60000 })
  const id = await q.enqueue('embed', 'x')
  let reason = null
  const w = new Worker(q, async (job, { signal }) => {
    // Heartbeats come too late for this TTL (400 ms > 200 ms), so the lease
    // expires: reap it from under the worker, as the background reaper would.
    await sleep(250)
    await q.reap()
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
    reason = signal.reason
    return 'too late'
  }, { heartbeatMs: 400 })
  const lost = new Promise((resolve) => w.once('lost', resolve))
  const run = w.run()
  const job = await lost
  await w.stop()
  await run
  assert.equal(job.id, id)
  assert.equal(reason.code, 'ABORTED')
  const info = await q.get(id)
  assert.equal(info.state, 'pending', 'the late result was not recorded')
  assert.equal(info.result, undefined)
})

test('graceful stop releases running jobs without spending attempts', async (t) => {
  const q = await openTemp(t)
  const ids = await q.enqueueMany([['embed', 1], ['embed', 2], ['embed', 3]])
  let started = 0
  const signals = []
  const allStarted = new Promise((resolve) => {
    const w = new Worker(q, (job, { signal }) => {
      signals.push(signal)
      if (++started === 3) resolve(w)
      return new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
    }, { concurrency: 3 })
    t.after(() => w.stop({ graceMs: 0 }))
    w.run()
  })
  const w = await allStarted
  assert.equal(w.activeJobs, 3)
  await w.stop({ graceMs: 100 })
  assert.equal(w.running, false)
  assert.ok(signals.every((s) => s.aborted), 'every handler was told to stop')
  for (const id of ids) {
    const info = await q.get(id)
    assert.equal(info.state, 'pending', `job ${id} was not released`)
    assert.equal(info.attempts, 0, 'a release spent an attempt')
    assert.equal(info.events.at(-1).transition, 'released')
  }
})

test('stop waits for running handlers inside the grace period', async (t) => {
  const q = await openTemp(t)
  const id = await q.enqueue('embed', 'x')
  let begun
  const started = new Promise((resolve) => { begun = resolve })
  const w = new Worker(q, async () => { begun(); await sleep(200); return 'finished' })
  const run = w.run()
  await started
  await w.stop({ graceMs: 10000 })
  await run
  const info = await q.get(id)
  assert.equal(info.state, 'completed')
  assert.equal(info.result, 'finished')
})

test('a Worker at concurrency 8 drains 500 jobs, each completed once', async (t) => {
  const q = await openTemp(t)
  await q.enqueueMany(Array.from({ length: 500 }, (_, i) => ['embed', { i }]))
  const seen = new Map()
  let inFlight = 0
  let maxInFlight = 0
  const w = new Worker(q, async (job) => {
    inFlight++
    maxInFlight = Math.max(maxInFlight, inFlight)
    seen.set(job.payload.i, (seen.get(job.payload.i) ?? 0) + 1)
    await sleep(1)
    inFlight--
    return job.payload.i
  }, { concurrency: 8, pollMs: 50 })
  let done = 0
  const all = new Promise((resolve) => w.on('completed', () => { if (++done === 500) resolve() }))
  const run = w.run()
  await all
  await w.stop()
  await run
  assert.equal(seen.size, 500)
  assert.ok([...seen.values()].every((n) => n === 1))
  assert.ok(maxInFlight <= 8)
  assert.ok(maxInFlight > 1, 'jobs ran concurrently')
  assert.equal((await q.stats()).total.completed, 500)
})

test('run() rejects with CLOSED when the queue is closed under it', async (t) => {
  const q = await openTemp(t)
  const w = new Worker(q, async () => {}, { pollMs: 5000 })
  const run = w.run()
  await sleep(50)
  // Watch `run` before closing: it may reject before close() resolves
  // (the waiting lease ends first), and an unwatched rejection fails the test.
  const closed = assert.rejects(run, { code: 'CLOSED' })
  await q.close()
  await closed
})

test('a lease lost under a blocked event loop and leased again by the same Worker completes with the new delivery', async (t) => {
  // Issue 14 item 1. The first call blocks the event loop past the TTL: no
  // heartbeat runs, the reaper expires the lease, and this Worker (with a
  // free slot) leases the job again as generation 2 while delivery 1 is
  // still settling. Delivery 1's refused completion must not take delivery
  // 2's place: delivery 2 is heartbeated through its 1 s and its result is
  // stored. (Tracked by job id alone, the job expired attempt after
  // attempt and ended dead with attempts 5.)
  const q = await openTemp(t, { leaseTtlMs: 300, reaperIntervalMs: 50, backoffBaseMs: 10, backoffFactor: 1, backoffCapMs: 10 })
  const id = await q.enqueue('embed', 'x')
  const calls = []
  const w = new Worker(q, async (job, { signal }) => {
    const call = calls.push({ generation: job.generation, abortedAtReturn: null })
    if (call === 1) {
      // 600 ms, and at least 300 ms past the deadline (the reaper runs
      // every 50 ms), however late this handler started.
      const end = Math.max(Date.now() + 600, job.deadline + 300)
      while (Date.now() < end) { /* the event loop is blocked */ }
    } else {
      await sleep(1000)
    }
    calls[call - 1].abortedAtReturn = signal.aborted
    return { call, generation: job.generation }
  }, { concurrency: 2, pollMs: 50 })
  const lost = []
  w.on('lost', (job) => lost.push(job.generation))
  const errors = []
  w.on('error', (e) => errors.push(e))
  const run = w.run()
  t.after(() => w.stop({ graceMs: 0 }))
  let info
  const end = Date.now() + 30000
  for (;;) {
    info = await q.get(id)
    if (info.state === 'completed' || info.state === 'dead' || Date.now() > end) break
    await sleep(50)
  }
  await w.stop()
  await run
  assert.equal(info.state, 'completed', `the job ended ${info.state} after ${info.attempts} attempts (last error: ${info.lastError})`)
  assert.equal(calls[0].generation, 1)
  assert.ok(info.events.some((e) => e.transition === 'lease_expired'), 'the first lease did not expire under its handler')
  assert.ok(info.generation >= 2 && calls.length >= 2)
  // The stored result is the one of the delivery that held the lease last
  // (normally the second; a loaded machine may expire a later one too).
  assert.deepEqual(info.result, { call: info.generation, generation: info.generation })
  assert.equal(info.attempts, info.generation - 1, 'every earlier lease expired once')
  // Delivery 1's late completion was refused as lost, and did not touch the
  // delivery that completed: its signal had not aborted when it returned.
  // (A heartbeat in flight as it completes may abort it after that.)
  assert.deepEqual(lost.sort((a, b) => a - b), Array.from({ length: info.generation - 1 }, (_, i) => i + 1))
  assert.equal(calls.at(-1).abortedAtReturn, false)
  assert.equal(w.activeJobs, 0)
  assert.deepEqual(errors, [])
})

test('two deliveries of one job finishing in the same turn: the one holding the lease completes', async (t) => {
  // Issue 14 item 1, the batched completion: no heartbeat within the test
  // (heartbeatMs 60 s), so delivery 1's lease expires and this Worker leases
  // the job again; both handlers then return in the same turn, and their
  // completions go out together. The job is named twice in one batch: the
  // live delivery 2 must not be refused with the stale delivery 1.
  const q = await openTemp(t, { leaseTtlMs: 300, reaperIntervalMs: 50, backoffBaseMs: 10, backoffFactor: 1, backoffCapMs: 10 })
  const id = await q.enqueue('embed', 'x')
  let open
  const gate = new Promise((resolve) => { open = resolve })
  const calls = []
  const w = new Worker(q, async (job) => {
    const call = calls.push(job.generation)
    if (call === 2) setImmediate(open)
    if (call <= 2) await gate
    return { call, generation: job.generation }
  }, { concurrency: 2, pollMs: 50, heartbeatMs: 60000 })
  const lost = []
  w.on('lost', (job) => lost.push(job.generation))
  const run = w.run()
  t.after(() => w.stop({ graceMs: 0 }))
  let info
  const end = Date.now() + 30000
  for (;;) {
    info = await q.get(id)
    if (info.state === 'completed' || info.state === 'dead' || Date.now() > end) break
    await sleep(50)
  }
  await w.stop()
  await run
  assert.equal(info.state, 'completed', `the job ended ${info.state} after ${info.attempts} attempts`)
  assert.deepEqual(info.result, { call: 2, generation: 2 }, 'delivery 2 was refused with delivery 1')
  assert.deepEqual(calls, [1, 2])
  assert.equal(info.attempts, 1)
  assert.deepEqual(lost, [1])
  assert.equal(w.activeJobs, 0)
})

/**
 * A stand-in for a Queue whose store owner's clock is `skewMs` off this
 * process's (a remote queue's server): it hands out one job leased for
 * `ttlMs`, with the deadline on that clock, and records every heartbeat.
 */
function skewedQueue (skewMs, ttlMs) {
  const extends_ = []
  let given = false
  const job = {
    id: '01a2299c-e422-77dd-bb54-61ab0316bf4b',
    kind: 'embed',
    scope: '00000000-0000-0000-0000-000000000000',
    payload: null,
    payloadBytes: Buffer.from([1, 0xc0]),
    payloadEncoding: 'value',
    attempts: 0,
    maxAttempts: 5,
    generation: 1,
    deadline: Date.now() + skewMs + ttlMs,
    leaseTtlMs: ttlMs,
    priority: 128,
    workerId: 'w'
  }
  return {
    extends: extends_,
    async leaseMany (workerId, max, opts) {
      if (!given) {
        given = true
        return [job]
      }
      if (!opts || !opts.waitMs) return []
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, opts.waitMs)
        opts.signal?.addEventListener('abort', () => { clearTimeout(timer); resolve() }, { once: true })
      })
      return []
    },
    async extend (jobs) {
      extends_.push(Date.now())
      return jobs.map(() => true)
    },
    async completeMany (jobs) { return jobs.map(() => null) },
    async complete () {},
    async fail () {},
    async release () {}
  }
}

async function runOneJob (q, ms) {
  let aborted = null
  const w = new Worker(q, async (job, { signal }) => {
    await sleep(ms)
    aborted = signal.aborted
  }, { pollMs: 50, workerId: 'w' })
  const done = new Promise((resolve) => w.once('completed', resolve))
  const run = w.run()
  await done
  await w.stop()
  await run
  return aborted
}

test("heartbeats follow the lease's TTL, not deadline - now: a server clock an hour ahead", async () => {
  // TTL 300 ms: a beat every 100 ms. From `deadline - now` (an hour) the
  // first beat would come after 20 minutes, and the lease would be lost.
  const q = skewedQueue(3600_000, 300)
  const aborted = await runOneJob(q, 900)
  assert.ok(q.extends.length >= 3, `${q.extends.length} heartbeats in 900 ms for a 300 ms lease`)
  assert.equal(aborted, false)
})

test("heartbeats follow the lease's TTL, not deadline - now: a server clock an hour behind", async () => {
  // TTL 3 s: the first beat after 1 s. From `deadline - now` (negative)
  // the Worker beat every 10 ms, and thought the lease long expired.
  const q = skewedQueue(-3600_000, 3000)
  const aborted = await runOneJob(q, 900)
  assert.ok(q.extends.length <= 1, `${q.extends.length} heartbeats in 900 ms for a 3 s lease`)
  assert.equal(aborted, false)
})

test('a lease whose heartbeat period passes what one timer keeps (~24.8 days) is heartbeated without a storm', async () => {
  // A third of 100 days is past 2^31 - 1 ms, where setTimeout fires at
  // once: the Worker must not beat in a loop.
  const q = skewedQueue(0, 100 * 24 * 3600 * 1000)
  await runOneJob(q, 300)
  assert.ok(q.extends.length <= 1, `${q.extends.length} heartbeats in 300 ms for a 100-day lease`)
})

'use strict'
// A Worker on a remote queue leases ahead (lib/prefetch.js: the server's
// PollJobs stream, issues 37 and 46; worker_stream.test.js has the cases
// through a telha serve process):
// jobs wait leased for a free handler, every job still completes once,
// `stop()` hands the waiting leases back without spending attempts, and
// `maxPrefetch: 0` leases only for a free handler.
const test = require('node:test')
const assert = require('node:assert/strict')
const { Queue, Worker } = require('..')
const { serveTemp, sleep } = require('./helpers.js')

/** Resolves with the first of `tries` reads of `read()` that `ok` accepts; rejects after. */
async function eventually (read, ok, tries = 500) {
  let v
  for (let i = 0; i < tries; i++) {
    v = await read()
    if (ok(v)) return v
    await sleep(10)
  }
  throw new Error(`never reached: last ${JSON.stringify(v)}`)
}

test('a remote Worker at concurrency 1 holds leases ahead and completes each job once', async (t) => {
  const { local, server } = await serveTemp(t)
  const q = await Queue.connect(server.url)
  t.after(() => q.close())
  const ids = await q.enqueueMany(Array.from({ length: 40 }, (_, i) => ['pre', i]))
  let release
  const gate = new Promise((resolve) => { release = resolve })
  const seen = new Map()
  const w = new Worker(q, async (job) => {
    seen.set(job.id, (seen.get(job.id) || 0) + 1)
    await gate
    return job.payload
  }, { concurrency: 1, pollMs: 100, minPrefetch: 8 }) // kept ahead even behind a held handler
  let done = 0
  w.on('completed', () => { done++ })
  const run = w.run()
  // The first handler is held: the jobs leased beyond it wait in the prefetch.
  const held = await eventually(() => local.stats(), (s) => s.total.leased >= 2 && seen.size === 1)
  assert.ok(held.total.leased <= 1 + 256, `held ${held.total.leased}: over maxPrefetch`)
  release()
  await eventually(async () => done, (n) => n === ids.length)
  await w.stop()
  await run
  const s = await local.stats()
  assert.equal(s.total.completed, ids.length)
  assert.equal(s.total.leased, 0)
  for (const id of ids) assert.equal(seen.get(id), 1)
})

test('stop() releases the prefetched leases without spending attempts', async (t) => {
  const { local, server } = await serveTemp(t)
  const q = await Queue.connect(server.url)
  t.after(() => q.close())
  const ids = await q.enqueueMany(Array.from({ length: 10 }, (_, i) => ['pre', i]))
  let started = null
  const w = new Worker(q, async (job, { signal }) => {
    started = job.id
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
  }, { concurrency: 1, pollMs: 100, minPrefetch: 4 })
  const run = w.run()
  await eventually(() => local.stats(), (s) => s.total.leased >= 2 && started !== null)
  await w.stop({ graceMs: 50 })
  await run
  const s = await local.stats()
  assert.equal(s.total.leased, 0)
  assert.equal(s.total.pending, ids.length)
  for (const id of ids) assert.equal((await local.get(id)).attempts, 0)
})

test('maxPrefetch 0 leases only for a free handler; a bad maxPrefetch is refused', async (t) => {
  const { local, server } = await serveTemp(t)
  const q = await Queue.connect(server.url)
  t.after(() => q.close())
  await q.enqueueMany(Array.from({ length: 6 }, (_, i) => ['pre', i]))
  let release
  const gate = new Promise((resolve) => { release = resolve })
  let running = 0
  const w = new Worker(q, async () => { running++; await gate }, { concurrency: 2, pollMs: 100, maxPrefetch: 0 })
  let done = 0
  w.on('completed', () => { done++ })
  const run = w.run()
  await eventually(async () => running, (n) => n === 2)
  // Both handlers held: whatever the Worker holds is what runs.
  for (let i = 0; i < 5; i++) {
    assert.equal((await local.stats()).total.leased, 2)
    await sleep(10)
  }
  release()
  await eventually(async () => done, (n) => n === 6)
  await w.stop()
  await run
  assert.throws(() => new Worker(q, async () => {}, { maxPrefetch: -1 }), RangeError)
  assert.throws(() => new Worker(q, async () => {}, { maxPrefetch: 1.5 }), RangeError)
  assert.throws(() => new Worker(q, async () => {}, { concurrency: 10, maxPrefetch: 1e9 }), RangeError)
  assert.throws(() => new Worker(q, async () => {}, { maxPrefetch: 4, minPrefetch: 5 }), RangeError)
  assert.throws(() => new Worker(q, async () => {}, { minPrefetch: -1 }), RangeError)
})

test('a remote Worker stopped while jobs keep coming leaves no lease with nobody', async (t) => {
  // Its stop ends the PollJobs stream with the StopPoll handshake: what the
  // server had already sent is read and released, so another handle leases
  // every waiting job at once (none held until its TTL).
  const { local, server } = await serveTemp(t, { leaseTtlMs: 60000 })
  const q = await Queue.connect(server.url)
  t.after(() => q.close())
  for (let round = 0; round < 5; round++) {
    let feeding = true
    const feeder = (async () => { while (feeding) { await local.enqueue('pre', round); await sleep(1) } })()
    let ran = 0
    const w = new Worker(q, async () => { ran++ }, { concurrency: 2, pollMs: 50 })
    const run = w.run()
    await eventually(async () => ran, (n) => n >= 10)
    await w.stop()
    await run
    feeding = false
    await feeder
    const before = await local.stats()
    const got = await local.leaseMany('w2', 10000)
    assert.equal(got.length, before.total.pending, `round ${round}: ${JSON.stringify(before.total)}`)
    const after = await local.stats()
    assert.equal(after.total.leased, got.length, `round ${round}: leased by nobody: ${JSON.stringify(after.total)}`)
    for (const j of got) {
      assert.equal(j.attempts, 0)
      await local.complete(j)
    }
  }
})

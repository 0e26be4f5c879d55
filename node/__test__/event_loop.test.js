'use strict'
// Waiting leases never block the event loop, and an AbortSignal ends a wait at once.
const test = require('node:test')
const assert = require('node:assert/strict')
const { openTemp } = require('./helpers.js')

test('the event loop keeps ticking while 4 leaseNext({ waitMs: 2000 }) calls wait', async (t) => {
  const q = await openTemp(t)
  const started = Date.now()
  let settled = 0
  const waits = [0, 1, 2, 3].map((i) => q.leaseNext(`w${i}`, { waitMs: 2000 }).finally(() => { settled++ }))
  // A 50 ms timer, re-armed, counting its ticks while no wait has ended yet.
  let ticksWhileWaiting = 0
  let maxGap = 0
  let last = Date.now()
  const timer = setInterval(() => {
    const now = Date.now()
    maxGap = Math.max(maxGap, now - last)
    last = now
    if (settled === 0) ticksWhileWaiting++
  }, 50)
  const results = await Promise.all(waits)
  clearInterval(timer)
  // Nothing was enqueued: every wait ran out its 2 s and ended empty.
  assert.deepEqual(results, [null, null, null, null])
  assert.ok(Date.now() - started >= 1900, 'the waits ended before their 2 s')
  // About 39 ticks fit in 2 s; a blocked loop would give 0. Generous bounds.
  assert.ok(ticksWhileWaiting >= 15, `only ${ticksWhileWaiting} timer ticks while 4 leases waited`)
  assert.ok(maxGap < 1000, `a 50 ms timer tick came ${maxGap} ms after the previous one`)
})

test('a waiting leaseNext is woken by an enqueue from the same event loop', async (t) => {
  const q = await openTemp(t)
  const waiting = q.leaseNext('w', { waitMs: 10000 })
  setTimeout(() => { q.enqueue('embed', { doc: 1 }) }, 50)
  const started = Date.now()
  const job = await waiting
  assert.ok(job, 'the wait returned a job')
  assert.deepEqual(job.payload, { doc: 1 })
  assert.ok(Date.now() - started < 5000)
})

test('an AbortSignal ends a wait at once, resolving null', async (t) => {
  const q = await openTemp(t)
  const ac = new AbortController()
  const started = Date.now()
  const waiting = q.leaseNext('w', { waitMs: 10000, signal: ac.signal })
  setTimeout(() => ac.abort(), 100)
  assert.equal(await waiting, null)
  const took = Date.now() - started
  assert.ok(took < 2000, `the aborted wait took ${took} ms of its 10 s`)
  // The store is still usable, and a later lease takes work as usual.
  const id = await q.enqueue('embed', null)
  const job = await q.leaseNext('w')
  assert.equal(job.id, id)
})

test('an already-aborted signal does not wait, but still takes a ready job', async (t) => {
  const q = await openTemp(t)
  const signal = AbortSignal.abort()
  const started = Date.now()
  assert.equal(await q.leaseNext('w', { waitMs: 10000, signal }), null)
  assert.ok(Date.now() - started < 2000)
  const id = await q.enqueue('embed', 'x')
  const job = await q.leaseNext('w', { waitMs: 10000, signal })
  assert.equal(job.id, id)
})

test('AbortSignal.timeout bounds leaseMany the same way', async (t) => {
  const q = await openTemp(t)
  const started = Date.now()
  const jobs = await q.leaseMany('w', 10, { waitMs: 10000, signal: AbortSignal.timeout(100) })
  assert.deepEqual(jobs, [])
  assert.ok(Date.now() - started < 2000)
})

'use strict'
// Waiting leases never block the event loop, and an AbortSignal ends a wait at once.
const test = require('node:test')
const assert = require('node:assert/strict')
const { openTemp } = require('./helpers.js')

test('the event loop keeps ticking while 4 leaseNext({ waitMs: 2000 }) calls wait', async (t) => {
  const q = await openTemp(t)
  const started = Date.now()
  const waits = [0, 1, 2, 3].map((i) => q.leaseNext(`w${i}`, { waitMs: 2000 }))
  // A 50 ms timer, re-armed 20 times: it must keep its schedule during the waits.
  const ticks = []
  await new Promise((resolve) => {
    const tick = () => {
      ticks.push(Date.now() - started)
      if (ticks.length === 20) resolve()
      else setTimeout(tick, 50)
    }
    setTimeout(tick, 50)
  })
  const tickedIn = Date.now() - started
  // 20 ticks of 50 ms is 1 s; generous bound, still well short of the 2 s waits.
  assert.ok(tickedIn < 1800, `20 × 50 ms timer ticks took ${tickedIn} ms while 4 leases waited`)
  const gaps = ticks.slice(1).map((v, i) => v - ticks[i])
  assert.ok(Math.max(...gaps) < 500, `a timer tick was late by ${Math.max(...gaps)} ms`)
  // The waits are still waiting (nothing was enqueued), and end empty.
  const results = await Promise.all(waits)
  assert.deepEqual(results, [null, null, null, null])
  assert.ok(Date.now() - started >= 1900, 'the waits ended before their 2 s')
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

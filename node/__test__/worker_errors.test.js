'use strict'
// Issue 51: nothing the Worker's own settle and heartbeat code meets ends it
// or escapes as an unhandled rejection: listeners that throw (its 'error'
// listener too) and a heartbeat call that fails are reported, and the
// Worker goes on (heartbeats included).
const test = require('node:test')
const assert = require('node:assert/strict')
const { Worker, Permanent } = require('..')
const { openTemp, sleep } = require('./helpers.js')

test('throwing listeners and a failed heartbeat never stop the Worker or go unhandled', async (t) => {
  // TTL 1 s, a reaper every 50 ms, a 1.6 s job: it completes with no
  // attempt spent only if the heartbeats went on after the first one failed.
  const q = await openTemp(t, { leaseTtlMs: 1000, reaperIntervalMs: 50 })
  const escaped = []
  const onEscape = (e) => escaped.push(e)
  process.on('unhandledRejection', onEscape)
  process.on('uncaughtException', onEscape)
  t.after(() => {
    process.off('unhandledRejection', onEscape)
    process.off('uncaughtException', onEscape)
  })
  const warned = []
  const onWarning = (w) => warned.push(w)
  process.on('warning', onWarning)
  t.after(() => process.off('warning', onWarning))
  let refuse = 1
  // The queue, with its first heartbeat call refused.
  const flaky = new Proxy(q, {
    get (target, prop) {
      if (prop === 'extendAnswers') {
        return async (...args) => {
          if (refuse-- > 0) throw new Error('heartbeat refused (test)')
          return target.extendAnswers(...args)
        }
      }
      const v = Reflect.get(target, prop)
      return typeof v === 'function' ? v.bind(target) : v
    }
  })
  const slow = await q.enqueue('embed', { slow: true })
  const quick = await q.enqueueMany(Array.from({ length: 30 }, (_, i) => ['embed', { i }]))
  const w = new Worker(flaky, async (job) => {
    if (job.payload.slow) {
      await sleep(1600)
      return 'slow'
    }
    if (job.payload.i % 3 === 0) throw new Permanent('bad input')
    return job.payload.i
  }, { concurrency: 4, pollMs: 50 })
  const reported = []
  let settled = 0
  let allSettled
  const all = new Promise((resolve) => { allSettled = resolve })
  const count = () => { if (++settled === 31) allSettled() }
  w.on('completed', () => { count(); throw new Error('completed listener (test)') })
  w.on('failed', () => { count(); throw new Error('failed listener (test)') })
  w.on('error', (e) => { reported.push(e); throw new Error('error listener (test)') })
  const run = w.run()
  await all
  await w.stop()
  await run
  await sleep(10) // a rejection left unhandled is reported on a later turn
  assert.deepEqual(escaped, [])
  const info = await q.get(slow)
  assert.equal(info.state, 'completed')
  assert.equal(info.attempts, 0, 'the lease expired: heartbeats stopped after the failed one')
  assert.equal(info.generation, 1)
  for (const [i, id] of quick.entries()) {
    const j = await q.get(id)
    assert.equal(j.state, i % 3 === 0 ? 'dead' : 'completed', `job ${i}`)
  }
  assert.ok(reported.some((e) => e.message === 'heartbeat refused (test)'), 'the failed heartbeat was reported')
  assert.ok(reported.some((e) => e.message === 'completed listener (test)'))
  assert.ok(reported.some((e) => e.message === 'failed listener (test)'))
  // The 'error' listener threw every time: each became a process warning.
  assert.equal(warned.filter((x) => x.message.includes('error listener (test)')).length, reported.length)
})

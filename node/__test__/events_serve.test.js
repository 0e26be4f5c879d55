'use strict'
// wait, subscribe and progress through `Queue.connect` to a real `telha
// serve` process (issue 18): the server is started here and stopped by its
// pid (SIGTERM, then SIGKILL). The binary: $TELHA_BIN, else
// $CARGO_TARGET_DIR/release/telha (`make build` or `make build-cli`).
const test = require('node:test')
const assert = require('node:assert/strict')
const { Queue, Worker } = require('..')
const { sleep, telhaServe } = require('./helpers.js')

/** A `telha serve` on a fresh store: its URL; stopped by pid after the test. */
async function served (t) {
  return (await telhaServe(t)).url
}

test('through a telha serve process: wait, enqueueAndWait, subscribe, QueueEvents and progress', async (t) => {
  const url = await served(t)
  const producer = await Queue.connect(url, { timeoutMs: 10000 })
  const workerQ = await Queue.connect(url, { timeoutMs: 10000 })

  const sub = await producer.subscribe({ kinds: 'calc' })
  const emitter = await producer.events({ kinds: 'calc', transitions: ['completed', 'dead'] })
  const ends = []
  emitter.on('event', (ev) => ends.push(ev.transition))

  // A wait with a timeout on a job nobody works yet: the state at the timeout.
  const idle = await producer.enqueue('calc', { n: 3 })
  const t0 = Date.now()
  const pending = await producer.wait(idle, { timeoutMs: 300 })
  assert.equal(pending.state, 'pending')
  assert.ok(Date.now() - t0 >= 290)
  // An aborted wait rejects; an unknown id is NOT_FOUND over the network too.
  const ac = new AbortController()
  setTimeout(() => ac.abort(), 100)
  await assert.rejects(producer.wait(idle, { signal: ac.signal }), { name: 'AbortError' })
  await assert.rejects(producer.wait('01890000-0000-7000-8000-000000000000', { timeoutMs: 50 }), { code: 'NOT_FOUND' })

  const waiting = producer.wait(idle, { timeoutMs: 60000 })
  const w = new Worker(workerQ, async (job, ctx) => {
    if (job.payload.fail) throw new Error(`bad ${job.payload.n}`)
    for (let i = 1; i <= 20; i++) {
      ctx.progress({ i })
      await sleep(5)
    }
    await sleep(100)
    return { sq: job.payload.n * job.payload.n }
  }, { concurrency: 4, pollMs: 100, heartbeatMs: 20, workerId: 'served-w' })
  const run = w.run()
  try {
    await check(producer, sub, idle, ends, waiting)
  } finally {
    await w.stop()
    await run
    await emitter.close()
    sub.close()
    await producer.close()
    await workerQ.close()
  }
})

async function check (producer, sub, idle, ends, waiting) {

  const first = await waiting
  assert.equal(first.state, 'completed')
  assert.deepEqual(first.result, { sq: 9 })
  assert.deepEqual(first.progress, { i: 20 })
  const many = await Promise.all([1, 2, 4].map((n) => producer.enqueueAndWait('calc', { n }, { timeoutMs: 60000 })))
  assert.deepEqual(many.map((i) => i.result), [{ sq: 1 }, { sq: 4 }, { sq: 16 }])
  const bad = await producer.enqueueAndWait('calc', { n: 5, fail: true }, { timeoutMs: 60000, maxAttempts: 1 })
  assert.equal(bad.state, 'dead')
  assert.equal(bad.lastError, 'Error: bad 5')

  // The subscription saw each job's transitions in order, progress included.
  const evs = []
  for (;;) {
    const ev = await sub.next({ timeoutMs: 5000 })
    assert.notEqual(ev, null, `the stream stopped after ${evs.length} events`)
    evs.push(ev)
    if (ev.transition === 'dead') break
  }
  for (let i = 1; i < evs.length; i++) assert.equal(evs[i].seq, evs[i - 1].seq + 1 + evs[i].missed)
  const of = (id) => evs.filter((e) => e.jobId === id && e.transition !== 'extended').map((e) => e.transition)
  const firstT = of(idle)
  assert.equal(firstT[0], 'enqueued')
  assert.equal(firstT[1], 'leased')
  assert.equal(firstT[firstT.length - 1], 'completed')
  assert.ok(firstT.slice(2, -1).every((x) => x === 'progress') && firstT.length > 3, firstT.join(' '))
  const progress = evs.filter((e) => e.jobId === idle && e.transition === 'progress')
  assert.deepEqual(progress[progress.length - 1].progress, { i: 20 })
  assert.equal(progress[0].workerId, 'served-w')
  assert.deepEqual(of(bad.id), ['enqueued', 'leased', 'failed', 'dead'])
  while (ends.length < 5) await sleep(10)
  assert.deepEqual([...ends].sort(), ['completed', 'completed', 'completed', 'completed', 'dead'])
}

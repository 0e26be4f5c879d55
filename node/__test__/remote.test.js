'use strict'
// A remote queue (`Queue.connect` to a `queue.serve()` in this process)
// behaves like a local one: the lifecycle, payload and Worker suites run
// again here over the network (helpers.openTemp hands them a client), and
// the remote-only cases follow: tokens, unreachable servers, serve itself.
const test = require('node:test')
const { describe } = require('node:test')
const assert = require('node:assert/strict')
const { Queue, Server, Worker } = require('..')
const { serveTemp, sleep } = require('./helpers.js')

process.env.TELHA_TEST_REMOTE = '1'

describe('over a remote queue: the lifecycle suite', () => { require('./lifecycle.test.js') })
describe('over a remote queue: the payload suite', () => { require('./payload.test.js') })
describe('over a remote queue: the Worker suite', () => { require('./worker.test.js') })
describe('over a remote queue: the job-control suite', () => { require('./control.test.js') })
describe('over a remote queue: the scope pages suite', () => { require('./scope_pages.test.js') })
describe('over a remote queue: the Worker job-control suite', () => { require('./worker_control.test.js') })
describe('over a remote queue: the wait, events and progress suite', () => { require('./events.test.js') })
describe('over a remote queue: the schedules suite', () => { require('./schedules.test.js') })
describe('over a remote queue: the flow-control and follow-up suite', () => { require('./flow.test.js') })
describe('over a remote queue: the steering suite', () => { require('./steer.test.js') })
describe('over a remote queue: the tags suite', () => { require('./tags.test.js') })
describe('over a remote queue: the find suite', () => { require('./find.test.js') })
describe('over a remote queue: the debounce suite', () => { require('./debounce.test.js') })
describe('over a remote queue: the backup suite', () => { require('./backup.test.js') })
describe('over a remote queue: the fan-in suite', () => { require('./fanin.test.js') })
describe('over a remote queue: the job keys suite', () => { require('./keys.test.js') })

test('serve and connect in one process share the queue', async (t) => {
  const { local, server } = await serveTemp(t)
  assert.ok(server instanceof Server && server.running)
  assert.match(server.address, /^127\.0\.0\.1:\d+$/)
  assert.equal(server.url, `http://${server.address}`)
  const remote = await Queue.connect(server.url)
  assert.ok(remote instanceof Queue)
  assert.equal(remote.remote, true)
  assert.equal(local.remote, false)
  assert.equal(remote.path, null)
  assert.equal(remote.location, server.url)
  const id = await local.enqueue('embed', { doc: 1 })
  const job = await remote.leaseNext('remote-1', { waitMs: 5000 })
  assert.equal(job.id, id)
  assert.deepEqual(job.payload, { doc: 1 })
  assert.equal(job.workerId, 'remote-1')
  assert.deepEqual(await remote.extend([job], 'remote-1'), [true])
  await remote.complete(job, { ok: true })
  assert.deepEqual((await local.get(id)).result, { ok: true })
  assert.equal((await remote.stats()).total.completed, 1)
  await assert.rejects(remote.serve({ listen: '127.0.0.1:0' }), (e) => e.code === 'INVALID_ARGUMENT' && /embedded/.test(e.message))
  await server.close({ graceMs: 500 })
  assert.equal(server.running, false)
  assert.equal(local.closed, false)
  assert.equal((await local.stats()).total.completed, 1)
  await remote.close()
  assert.equal(remote.closed, true)
  await assert.rejects(remote.stats(), { code: 'CLOSED' })
})

test('a wrong or missing token is refused with a clear error', async (t) => {
  const { server } = await serveTemp(t, {}, { token: 's3cret-token' })
  for (const opts of [{ token: 'wrong' }, {}]) {
    await assert.rejects(
      (async () => (await Queue.connect(server.url, { ...opts, timeoutMs: 5000 })).stats())(),
      (e) => e.code === 'INVALID_ARGUMENT' && /unauthenticated|token/i.test(e.message)
    )
  }
  const ok = await Queue.connect(server.url, { token: 's3cret-token' })
  t.after(() => ok.close())
  assert.ok(await ok.enqueue('embed'))
  assert.equal((await ok.stats()).total.pending, 1)
})

test('an unreachable server is a clear error, not a hang', async () => {
  const t0 = Date.now()
  await assert.rejects(
    (async () => (await Queue.connect('http://127.0.0.1:9', { timeoutMs: 1000 })).stats())(),
    (e) => e.code === 'UNAVAILABLE' && /127\.0\.0\.1:9/.test(e.message)
  )
  assert.ok(Date.now() - t0 < 30000)
  await assert.rejects(Queue.connect(42), TypeError)
  await assert.rejects(Queue.connect('http://127.0.0.1:9', { nope: 1 }), { code: 'INVALID_ARGUMENT' })
})

test('serve refuses bad options', async (t) => {
  const { local } = await serveTemp(t)
  await assert.rejects(local.serve({ listen: 'nowhere' }), (e) => e.code === 'INVALID_ARGUMENT' && /"nowhere"/.test(e.message))
  await assert.rejects(local.serve({ listen: '127.0.0.1:0', tlsCert: '/nonexistent.pem' }), (e) => e.code === 'INVALID_ARGUMENT' && /tls/i.test(e.message))
  await assert.rejects(local.serve({ listen: 7450 }), TypeError)
})

test('a stale remote complete is ABORTED and the job stays with its new holder', async (t) => {
  const { local, server } = await serveTemp(t, { leaseTtlMs: 50, backoffBaseMs: 1, backoffCapMs: 1 })
  const slow = await Queue.connect(server.url)
  const fast = await Queue.connect(server.url)
  t.after(async () => { await slow.close(); await fast.close() })
  const id = await slow.enqueue('embed', 'x')
  const stale = await slow.leaseNext('slow')
  await sleep(120)
  assert.equal((await local.reap()).expired, 1)
  const fresh = await fast.leaseNext('fast', { waitMs: 5000 })
  assert.equal(fresh.id, id)
  assert.equal(fresh.generation, stale.generation + 1)
  await assert.rejects(slow.complete(stale, 'late'), (e) => e.code === 'ABORTED' && e instanceof Error)
  await assert.rejects(slow.fail(stale, 'late'), { code: 'ABORTED' })
  assert.deepEqual(await slow.extend([stale], 'slow'), [false])
  assert.deepEqual(await slow.completeMany([stale]), ['ABORTED'])
  await fast.complete(fresh, 'ok')
  assert.equal((await local.get(id)).result, 'ok')
})

test('a Worker over a remote queue stops promptly and hands its jobs back', async (t) => {
  const { local, server } = await serveTemp(t)
  const q = await Queue.connect(server.url)
  t.after(() => q.close())
  const ids = await q.enqueueMany([['embed', 1], ['embed', 2]])
  let started = 0
  const w = new Worker(q, async (job, { signal }) => {
    started++
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
  }, { concurrency: 2, pollMs: 5000 })
  const run = w.run()
  while (started < 2) await sleep(10)
  const t0 = Date.now()
  await w.stop({ graceMs: 100 })
  await run
  assert.ok(Date.now() - t0 < 10000, 'stop waited out the long poll')
  for (const id of ids) {
    const info = await local.get(id)
    assert.equal(info.state, 'pending')
    assert.equal(info.attempts, 0)
  }
  // An idle Worker stops at once: its long poll, waiting on the server, is cancelled.
  const idle = new Worker(q, async () => {}, { pollMs: 60000, kinds: 'never' })
  const idleRun = idle.run()
  await sleep(100)
  const t1 = Date.now()
  await idle.stop()
  await idleRun
  assert.ok(Date.now() - t1 < 10000, 'an idle stop waited out the long poll')
})

test("a Worker cut off from its server aborts the handler's signal once the lease runs out", async (t) => {
  // The network dies instead of the worker: no heartbeat gets through, so
  // the lease expires on the server, and the handler is told when it does.
  const { local, server } = await serveTemp(t, { leaseTtlMs: 1000 })
  const q = await Queue.connect(server.url, { timeoutMs: 1000 })
  t.after(() => q.close())
  const id = await q.enqueue('embed', 'x')
  let deadline = null
  let abortedAt = null
  const started = new Promise((resolve) => {
    const w = new Worker(q, async (job, { signal }) => {
      deadline = job.deadline
      resolve(w)
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
      abortedAt = Date.now()
    }, { pollMs: 50 })
    w.on('error', () => {}) // the failed heartbeats and polls, expected here
    t.after(() => w.stop({ graceMs: 100 }))
    // The hook closing `q` (registered first) may run before the one
    // stopping the Worker: run() then answers CLOSED, as it should.
    w.run().catch((e) => { if (e.code !== 'CLOSED') throw e })
  })
  await started
  await server.close({ graceMs: 0 })
  const t0 = Date.now()
  while (abortedAt === null) {
    assert.ok(Date.now() - t0 < 20000, 'the handler was never told its lease was lost')
    await sleep(20)
  }
  assert.ok(abortedAt >= deadline - 50, 'told too early: the lease was still good')
  assert.equal((await local.reap()).expired, 1, 'the server agrees: nobody renewed the lease')
  assert.equal((await local.get(id)).state, 'pending')
})

test('serve with metricsListen answers Prometheus text over HTTP', async (t) => {
  const { local } = await serveTemp(t)
  await local.enqueue('embed', null)
  const server = await local.serve({ listen: '127.0.0.1:0', metricsListen: '127.0.0.1:0' })
  t.after(() => server.close({ graceMs: 500 }))
  assert.match(server.metricsAddress, /^127\.0\.0\.1:\d+$/)
  const res = await fetch(`http://${server.metricsAddress}/metrics`)
  assert.equal(res.status, 200)
  const text = await res.text()
  assert.ok(text.includes('telha_jobs') && text.includes('state="pending"'), text.slice(0, 200))
})

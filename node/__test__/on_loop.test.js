'use strict'
// Calls on the event loop (docs/node.md, "Calls on the event loop"): on an
// embedded store without syncWrites, enqueue, leaseNext / leaseMany without
// a wait, complete and completeMany run on the JS thread and settle their
// Promise at once; remote queues, syncWrites and large batches take the
// pool. Either way the answers and errors are the same.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { Queue } = require('..')
const { tempStore, serveTemp } = require('./helpers.js')

async function open (t, options = {}) {
  const q = await Queue.open(tempStore(t), { reaperIntervalMs: 0, ...options })
  t.after(() => q.close())
  return q
}

/** What a job says, without what differs between two stores (ids, times). */
function shape (job) {
  const { id, deadline, payloadBytes, ...rest } = job
  return { ...rest, payloadBytes: Buffer.from(payloadBytes).toString('hex') }
}

function infoShape (info) {
  const { id, cursor, createdAt, updatedAt, runAt, completedAt, leaseDeadline, stateTs, events, ...rest } = info
  assert.equal(typeof stateTs, 'number')
  return rest
}

/** Run the same calls on `q`: the answers, with what differs between stores left out. */
async function script (q) {
  const out = {}
  const a = await q.enqueueResult('embed', { doc: 'a', n: [1, 2.5, -3], ok: true }, { priority: 3 })
  const b = await q.enqueue('embed', Buffer.from([1, 2, 3]))
  const c = await q.enqueueResult('embed', 'c', { idempotencyKey: 'k1' })
  const c2 = await q.enqueueResult('embed', 'c again', { idempotencyKey: 'k1' })
  out.created = [a.created, c.created, c2.created, c2.id === c.id, typeof b]
  const first = await q.leaseNext('w')
  out.first = shape(first)
  const two = await q.leaseMany('w', 2)
  out.two = two.map(shape)
  out.none = await q.leaseNext('w')
  await q.complete(first, { result: [1, 'x'] })
  out.many = await q.completeMany(two, [null, Buffer.from('r')])
  out.again = await q.completeMany(two)
  out.infos = [infoShape(await q.get(a.id)), infoShape(await q.get(b)), infoShape(await q.get(c.id))]
  return out
}

test('answers on the event loop are the same as from the pool (syncWrites takes the pool)', async (t) => {
  const fast = await open(t)
  const pool = await open(t, { syncWrites: true })
  assert.equal(fast.runsOnLoop, true)
  assert.equal(pool.runsOnLoop, false)
  assert.deepEqual(await script(fast), await script(pool))
})

test('a remote queue never runs calls on the event loop', async (t) => {
  const { local, server } = await serveTemp(t)
  const remote = await Queue.connect(server.url)
  t.after(() => remote.close())
  assert.equal(local.runsOnLoop, true)
  assert.equal(remote.runsOnLoop, false)
  const id = await remote.enqueue('embed', { doc: 1 })
  const job = await remote.leaseNext('w')
  assert.equal(job.id, id)
  await remote.complete(job)
  assert.equal((await local.get(id)).state, 'completed')
})

test('errors reject, never throw: bad payloads, unknown and lost leases', async (t) => {
  const q = await open(t)
  let p
  assert.doesNotThrow(() => { p = q.enqueue('embed', new Date()) })
  await assert.rejects(p, (e) => e instanceof TypeError && e.code === 'INVALID_ARGUMENT')
  assert.doesNotThrow(() => { p = q.enqueue('no such kind!', null) })
  await assert.rejects(p, (e) => e.code === 'INVALID_ARGUMENT')
  const ghost = { id: '00000000-0000-4000-8000-000000000000', generation: 1 }
  assert.doesNotThrow(() => { p = q.complete(ghost) })
  await assert.rejects(p, (e) => e.code === 'NOT_FOUND' || e.code === 'ABORTED')
  const id = await q.enqueue('embed', 1)
  const job = await q.leaseNext('w')
  await q.complete(job)
  await assert.rejects(q.complete(job), (e) => e.code === 'ABORTED')
  assert.deepEqual(await q.completeMany([job]), ['ABORTED'])
  await assert.rejects(q.complete(job, new Map()), (e) => e instanceof TypeError && e.code === 'INVALID_ARGUMENT')
  await assert.rejects(q.completeMany([job], [new Map()]), (e) => e instanceof TypeError)
  assert.equal((await q.get(id)).state, 'completed')
})

test('a closed queue rejects every call with CLOSED', async (t) => {
  const q = await Queue.open(tempStore(t), { reaperIntervalMs: 0 })
  const id = await q.enqueue('embed', 1)
  const job = await q.leaseNext('w')
  assert.equal(job.id, id)
  await q.close()
  for (const p of [q.enqueue('embed', 2), q.leaseNext('w'), q.leaseMany('w', 2), q.complete(job), q.completeMany([job])]) {
    await assert.rejects(p, (e) => e.code === 'CLOSED')
  }
})

test('calls issued in one turn take effect in the order issued', async (t) => {
  const q = await open(t)
  // No await in between: on the pool, the lease could run before the
  // enqueues (or between them); on the loop each is done when it returns.
  const ids = [q.enqueue('embed', 0), q.enqueue('embed', 1), q.enqueue('embed', 2)]
  const leased = q.leaseMany('w', 10)
  const none = q.leaseNext('w')
  const jobs = await leased
  assert.deepEqual(jobs.map((j) => j.id), await Promise.all(ids))
  assert.deepEqual(jobs.map((j) => j.payload), [0, 1, 2])
  assert.equal(await none, null)
  const done = [q.complete(jobs[1]), q.completeMany([jobs[0], jobs[2]])]
  const stats = q.stats()
  await Promise.all(done)
  assert.equal((await stats).total.completed, 3)
})

test('batches over 64 jobs go to the pool and answer the same', async (t) => {
  const q = await open(t)
  const ids = await q.enqueueMany(Array.from({ length: 150 }, (_, i) => ['embed', i]))
  const jobs = await q.leaseMany('w', 100)
  assert.equal(jobs.length, 100)
  assert.deepEqual(jobs.map((j) => j.id), ids.slice(0, 100))
  assert.deepEqual(await q.completeMany(jobs), new Array(100).fill(null))
  const rest = await q.leaseMany('w', 64)
  assert.equal(rest.length, 50)
  assert.deepEqual(await q.completeMany(rest, rest.map((j) => j.payload)), new Array(50).fill(null))
  assert.equal((await q.stats()).total.completed, 150)
})

test('a loop of awaited calls lets timers run (the per-turn budget)', async (t) => {
  const q = await open(t)
  let fired = false
  setTimeout(() => { fired = true }, 0)
  // Each await settles at once; without the budget no timer could run
  // until all 100,000 were done.
  let n = 0
  while (!fired && n < 100000) {
    await q.enqueue('embed', n)
    n++
  }
  assert.ok(fired, 'a 0 ms timer never ran during 100,000 enqueues')
  assert.ok(n < 100000)
  let leased = 0
  fired = false
  setTimeout(() => { fired = true }, 0)
  while (!fired) {
    const job = await q.leaseNext('w')
    assert.ok(job, `the backlog of ${n} ran dry before a timer ran`)
    await q.complete(job)
    leased++
  }
  assert.ok(leased < n)
})

test('TELHA_JOBS_LOOP_BUDGET_MS=0 sends every call to the pool', (t) => {
  const store = tempStore(t)
  const code = `
    const { Queue } = require(${JSON.stringify(path.join(__dirname, '..'))})
    ;(async () => {
      const q = await Queue.open(${JSON.stringify(store)}, { reaperIntervalMs: 0 })
      const id = await q.enqueue('embed', 1)
      const job = await q.leaseNext('w')
      await q.complete(job)
      console.log(JSON.stringify({ runsOnLoop: q.runsOnLoop, same: job.id === id, state: (await q.get(id)).state }))
      await q.close()
    })()`
  const run = (budget) => JSON.parse(execFileSync(process.execPath, ['-e', code], {
    encoding: 'utf8', env: { ...process.env, TELHA_JOBS_LOOP_BUDGET_MS: budget }
  }))
  assert.deepEqual(run('0'), { runsOnLoop: false, same: true, state: 'completed' })
  assert.throws(() => execFileSync(process.execPath, ['-e', code], {
    stdio: 'pipe', env: { ...process.env, TELHA_JOBS_LOOP_BUDGET_MS: '-1' }
  }), /TELHA_JOBS_LOOP_BUDGET_MS/)
})

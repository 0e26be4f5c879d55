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
const { Queue, __loopStats } = require('..')
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

test('a remote queue, and a queue serving one, never run calls on the event loop', async (t) => {
  const { local, server } = await serveTemp(t)
  const remote = await Queue.connect(server.url)
  t.after(() => remote.close())
  // The server's threads write to the store: the serving handle's calls
  // would wait behind their writes.
  assert.equal(local.runsOnLoop, false)
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
  // A repeat is a retry, answered as the first; another settle is lost.
  await q.complete(job)
  assert.deepEqual(await q.completeMany([job]), [null])
  await assert.rejects(q.release(job), (e) => e.code === 'ABORTED')
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
  // A second settle in the same turn already sees the first one done: a
  // repeat is answered as it was, another kind of settle is lost.
  const done = [q.complete(jobs[1]), q.completeMany([jobs[0], jobs[1], jobs[2]]), q.release(jobs[0])]
  const [, codes, ] = await Promise.allSettled(done)
  assert.deepEqual(codes.value, [null, null, null])
  await assert.rejects(done[2], (e) => e.code === 'ABORTED')
  assert.equal((await q.stats()).total.completed, 3)
})

test('while a pool write of this handle is in flight, calls go to the pool too', async (t) => {
  const q = await open(t)
  assert.equal(q.runsOnLoop, true)
  // 10,000 jobs: a write the pool runs for milliseconds.
  const big = q.enqueueMany(Array.from({ length: 10000 }, (_, i) => ['bulk', i]))
  assert.equal(q.runsOnLoop, false)
  // Issued now, it is not run on the loop (it would wait behind the batch).
  const one = q.enqueue('embed', 'one')
  const ids = await big
  assert.equal(ids.length, 10000)
  await one
  assert.equal(q.runsOnLoop, true)
  // A lease wait holds no write: it leaves the loop calls alone.
  const waiting = q.leaseNext('w', { kinds: ['none'], waitMs: 60000, signal: AbortSignal.timeout(200) })
  assert.equal(q.runsOnLoop, true)
  assert.equal(await waiting, null)
  assert.equal((await q.stats()).total.pending, 10001)
})

test("while another handle's heavy write runs, calls go to the pool (Queue::write_busy)", async (t) => {
  const dir = tempStore(t)
  const q = await Queue.open(dir, { reaperIntervalMs: 0 })
  t.after(() => q.close())
  const other = await Queue.open(dir, { reaperIntervalMs: 0 })
  t.after(() => other.close())
  assert.equal(q.runsOnLoop, true)
  const before = __loopStats().native.busy
  // 10,000 jobs through the other handle: one write the pool runs for
  // milliseconds, which this handle's in-flight count does not see.
  let settled = false
  const big = other.enqueueMany(Array.from({ length: 10000 }, (_, i) => ['bulk', i])).finally(() => { settled = true })
  let seenBusy = false
  let issued = 0
  while (!settled) {
    if (!q.runsOnLoop) {
      seenBusy = true
      // Declined on the loop (counted as busy), then run on the pool.
      await q.enqueue('embed', `during ${issued++}`)
    }
    await new Promise((resolve) => setImmediate(resolve))
  }
  assert.equal((await big).length, 10000)
  assert.ok(seenBusy, 'runsOnLoop never went false during the other handle\'s heavy write')
  assert.ok(__loopStats().native.busy > before, 'no call was counted as declined behind a heavy write')
  assert.equal(q.runsOnLoop, true)
  assert.equal((await q.stats()).total.pending, 10000 + issued)
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

test('many calls issued in one turn are spread over turns, in order', async (t) => {
  const q = await open(t)
  const n = 5000
  let done = 0
  let doneAtTimer = -1
  setTimeout(() => { doneAtTimer = done }, 0)
  const calls = []
  for (let i = 0; i < n; i++) calls.push(q.enqueue('embed', i).then((id) => { done++; return id }))
  const ids = await Promise.all(calls)
  assert.ok(doneAtTimer >= 0 && doneAtTimer < n, `a 0 ms timer ran after ${doneAtTimer} of ${n} enqueues`)
  const jobs = []
  while (jobs.length < n) jobs.push(...await q.leaseMany('w', 1000))
  assert.deepEqual(jobs.map((j) => j.id), ids)
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

test('a Worker on the loop sends completions in batches of at most 64, each job once', async (t) => {
  const { Worker } = require('..')
  const q = await open(t)
  const n = 3000
  await q.enqueueMany(Array.from({ length: n }, (_, i) => ['embed', i]))
  const sizes = []
  const completeMany = q.completeMany.bind(q)
  q.completeMany = (jobs, results) => { sizes.push(jobs.length); return completeMany(jobs, results) }
  const seen = new Set()
  let finished
  const all = new Promise((resolve) => { finished = resolve })
  const w = new Worker(q, (job) => job.payload, { workerId: 'w', concurrency: 4, pollMs: 50 })
  w.on('completed', (job, result) => {
    assert.equal(result, job.payload)
    assert.ok(!seen.has(job.id), `job ${job.id} completed twice`)
    seen.add(job.id)
    if (seen.size === n) finished()
  })
  const run = w.run()
  await all
  await w.stop()
  await run
  assert.ok(Math.max(...sizes) <= 64, `a completeMany of ${Math.max(...sizes)} jobs`)
  assert.equal(sizes.reduce((a, b) => a + b, 0), n)
  const stats = await q.stats()
  assert.equal(stats.total.completed, n)
})

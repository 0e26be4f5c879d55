'use strict'
// A remote Worker leases ahead through the server's PollJobs stream
// (lib/prefetch.js, src/stream.rs; issue 46), against a real `telha serve`
// process started here and stopped by its pid: it holds leases ahead up to
// `concurrency + maxPrefetch`, never runs one that waited past a quarter of
// its TTL, gives back what it holds at `stop()` without spending attempts,
// the jobs of a worker process killed outright come back after their
// TTL, and (issue 37) the window follows the handlers: a slow Worker
// leaves a small backlog to a fast one. The tests of the prefetch's own
// bounds keep a fixed window (`minPrefetch` = `maxPrefetch`).
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { Queue, Worker } = require('..')
const { sleep, telhaServe } = require('./helpers.js')

const TTL_MS = 4000
const CONFIG = `[jobs]\nlease_ttl = "${TTL_MS}ms"\nreaper_interval = "100ms"\n`

/** Resolves with the first of `tries` reads of `read()` that `ok` accepts; rejects after. */
async function eventually (read, ok, tries = 1500) {
  let v
  for (let i = 0; i < tries; i++) {
    v = await read()
    if (ok(v)) return v
    await sleep(10)
  }
  throw new Error(`never reached: last ${JSON.stringify(v)}`)
}

async function connect (t, url) {
  const q = await Queue.connect(url, { timeoutMs: 10000 })
  t.after(() => q.close())
  return q
}

test('through telha serve: a Worker at concurrency 1 holds leases ahead, at most maxPrefetch, and completes each job once', async (t) => {
  const { url } = await telhaServe(t, CONFIG)
  const admin = await connect(t, url)
  const q = await connect(t, url)
  const ids = await admin.enqueueMany(Array.from({ length: 40 }, (_, i) => ['ahead', i]))
  let open
  const gate = new Promise((resolve) => { open = resolve })
  const seen = new Map()
  const w = new Worker(q, async (job) => {
    seen.set(job.id, (seen.get(job.id) || 0) + 1)
    await gate
    return job.payload
  }, { concurrency: 1, maxPrefetch: 5, minPrefetch: 5 }) // a fixed window
  let done = 0
  w.on('completed', () => { done++ })
  const run = w.run()
  // The first handler is held: the stream fills up to its capacity (1 + 5)
  // and the server sends no more while nothing settles.
  const held = await eventually(() => admin.stats(), (s) => s.total.leased === 6 && seen.size === 1)
  for (let i = 0; i < 10; i++) {
    await sleep(30)
    assert.ok((await admin.stats()).total.leased <= 6, 'over concurrency + maxPrefetch')
  }
  assert.equal(held.total.pending, 34)
  open()
  await eventually(async () => done, (n) => n === ids.length)
  await w.stop()
  await run
  const s = await admin.stats()
  assert.equal(s.total.completed, ids.length)
  assert.equal(s.total.leased, 0)
  for (const id of ids) {
    assert.equal(seen.get(id), 1)
    assert.equal((await admin.get(id)).attempts, 0)
  }
})

test('through telha serve: no prefetched lease reaches a handler after waiting past a quarter of its TTL', async (t) => {
  const { url } = await telhaServe(t, CONFIG)
  const admin = await connect(t, url)
  const q = await connect(t, url)
  const ids = await admin.enqueueMany(Array.from({ length: 6 }, (_, i) => ['stale', i]))
  const left = [] // per started job: what was left of its lease (server clock = this clock: one machine)
  let first = true
  const w = new Worker(q, async (job) => {
    left.push(job.deadline - Date.now())
    // The first job holds the only handler for 3/4 of a TTL: the leases
    // that arrived meanwhile waited 3× past their quarter.
    if (first) {
      first = false
      await sleep(TTL_MS * 0.75)
    }
    return null
  }, { concurrency: 1, maxPrefetch: 3, minPrefetch: 3 })
  let done = 0
  w.on('completed', () => { done++ })
  const run = w.run()
  await eventually(async () => done, (n) => n === ids.length)
  await w.stop()
  await run
  assert.ok(w.prefetchReleased >= 1, `the stale leases were given back: ${w.prefetchReleased}`)
  // A lease that had waited out the first handler would start with a
  // quarter of its TTL left or less; each started with over half of it
  // (a quarter allowed in the prefetch, a quarter for the wire).
  for (const ms of left) assert.ok(ms > TTL_MS / 2, `a handler got a lease with ${ms} ms left of ${TTL_MS}`)
  const s = await admin.stats()
  assert.equal(s.total.completed, ids.length)
  // Given back, never expired: no attempt failed.
  for (const id of ids) assert.equal((await admin.get(id)).attempts, 0)
})

test('through telha serve: stop() gives back what the Worker holds, no attempt spent', async (t) => {
  const { url } = await telhaServe(t, CONFIG)
  const admin = await connect(t, url)
  const q = await connect(t, url)
  const ids = await admin.enqueueMany(Array.from({ length: 10 }, (_, i) => ['back', i]))
  let started = 0
  const w = new Worker(q, async (job, { signal }) => {
    started++
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
  }, { concurrency: 2, maxPrefetch: 4, minPrefetch: 4 })
  const run = w.run()
  await eventually(() => admin.stats(), (s) => s.total.leased === 6 && started === 2)
  await w.stop({ graceMs: 50 })
  await run
  // A lease the server had sent and the client not yet read goes back
  // when the server sees the stream end: wait for it, never for a TTL.
  const s = await eventually(() => admin.stats(), (x) => x.total.leased === 0, 200)
  assert.equal(s.total.pending, ids.length)
  for (const id of ids) assert.equal((await admin.get(id)).attempts, 0)
})

test('through telha serve: the leases of a Worker process killed outright come back after their TTL', async (t) => {
  const { url } = await telhaServe(t, CONFIG)
  const admin = await connect(t, url)
  const ids = await admin.enqueueMany(Array.from({ length: 8 }, (_, i) => ['killed', i]))
  const script = `
    const { Queue, Worker } = require(${JSON.stringify(path.join(__dirname, '..'))})
    Queue.connect(${JSON.stringify(url)}).then((q) => {
      new Worker(q, () => new Promise(() => {}), { concurrency: 1, maxPrefetch: 4, minPrefetch: 4 }).run()
    })`
  const child = spawn(process.execPath, ['-e', script], { stdio: 'inherit' })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  t.after(() => { if (child.exitCode === null && child.signalCode === null) process.kill(child.pid, 'SIGKILL') })
  await eventually(() => admin.stats(), (s) => s.total.leased === 5)
  process.kill(child.pid, 'SIGKILL')
  await exited
  // Running or waiting in its prefetch, each lease expires on the server
  // and its job is leased again: here, by a Worker that completes it.
  await eventually(() => admin.stats(), (x) => x.total.leased === 0, 1500)
  const q = await connect(t, url)
  const w = new Worker(q, async () => 'ok', { concurrency: 1 })
  let done = 0
  w.on('completed', () => { done++ })
  const run = w.run()
  await eventually(async () => done, (n) => n === ids.length)
  await w.stop()
  await run
  let spent = 0
  for (const id of ids) {
    const job = await admin.get(id)
    assert.equal(job.state, 'completed')
    spent += job.attempts
  }
  // The 5 the killed worker held spent an attempt each (expired), no other.
  assert.equal(spent, 5)
})

test('through telha serve: a slow Worker leaves a small backlog to a fast one (the window follows the handlers)', async (t) => {
  // A 60 s TTL: no prefetched lease goes stale and comes back, so without
  // the floor the slow Worker kept all 20 and the fast one got none.
  const { url } = await telhaServe(t, '[jobs]\nlease_ttl = "60s"\nreaper_interval = "100ms"\n')
  const admin = await connect(t, url)
  const ids = await admin.enqueueMany(Array.from({ length: 20 }, (_, i) => ['share', i]))
  const ran = { slow: 0, fast: 0 }
  // Concurrency 1 and the default maxPrefetch (256): the stream's floor is
  // 1, and handlers of 200 ms keep the window there.
  const slow = new Worker(await connect(t, url), async () => { ran.slow++; await sleep(200) },
    { workerId: 'slow', concurrency: 1 })
  const fast = new Worker(await connect(t, url), async () => { ran.fast++ }, { workerId: 'fast', concurrency: 1 })
  const runs = [slow.run()]
  // Its first job running: what it leased by now it leased with nobody else asking.
  await eventually(() => ran.slow, (n) => n >= 1)
  const held = (await admin.stats()).total.leased
  runs.push(fast.run())
  await eventually(() => admin.stats(), (s) => s.total.completed === ids.length)
  for (const w of [fast, slow]) await w.stop()
  await Promise.all(runs)
  assert.ok(held <= 3, `the slow Worker held ${held} of 20`)
  assert.ok(ran.fast >= 15 && ran.fast + ran.slow === 20, JSON.stringify(ran))
  assert.equal(slow.prefetchReleased, 0)
  for (const id of ids) assert.equal((await admin.get(id)).attempts, 0)
})

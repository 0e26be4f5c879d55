'use strict'
// The Worker and job control (issue 16): a cancel from another handle or
// another process stops a running handler within one heartbeat (signal
// reason code CANCELLED) and the job ends cancelled; a handler past its
// kind's timeout is aborted (code TIMEOUT) and its job failed retryably,
// even one that never returns; Snooze and Retry from a handler.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { Queue, Worker, Snooze, Retry } = require('..')
const { openTemp, serveTemp, sleep } = require('./helpers.js')

const HEARTBEAT_MS = 200
// What a loaded 2-core machine may add to one heartbeat interval.
const SLACK_MS = 400

/**
 * Run a Worker on `q` over one job whose handler waits on its signal,
 * cancel the job with `cancel(id)` (another handle or process) once it
 * runs, and measure how long the abort took from the moment the cancel was
 * done: `cancel` answers the outcome, or `{ outcome, at }` when another
 * process did it at `at` (its Date.now(), the same machine's clock).
 */
async function cancelRunning (q, cancel) {
  const id = await q.enqueue('long', { n: 1 })
  let started
  const running = new Promise((resolve) => { started = resolve })
  let abortedAt = null
  let reason = null
  const w = new Worker(q, async (job, { signal }) => {
    started()
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
    abortedAt = Date.now()
    reason = signal.reason
    throw signal.reason
  }, { heartbeatMs: HEARTBEAT_MS, pollMs: 50 })
  const cancelled = new Promise((resolve) => w.once('cancelled', resolve))
  const run = w.run()
  await running
  let answer = await cancel(id)
  if (typeof answer === 'string') answer = { outcome: answer, at: Date.now() }
  assert.equal(answer.outcome, 'requested')
  const t0 = answer.at
  const job = await cancelled
  await w.stop()
  await run
  return { id, job, elapsed: abortedAt - t0, reason }
}

function checkCancelled (r, info) {
  assert.equal(r.job.id, r.id)
  assert.equal(r.reason.code, 'CANCELLED')
  assert.ok(r.elapsed <= HEARTBEAT_MS + SLACK_MS, `the handler stopped ${r.elapsed} ms after the cancel (heartbeat ${HEARTBEAT_MS} ms)`)
  assert.equal(info.state, 'cancelled')
  assert.equal(info.attempts, 0)
  assert.deepEqual(info.events.map((e) => e.transition), ['enqueued', 'leased', 'cancel_requested', 'cancelled'])
}

test('a cancel from a second handle stops a long handler within a heartbeat; the job ends cancelled', async (t) => {
  // The Worker on a client of the server, the cancel on the embedded queue (and the reverse).
  const { local, server } = await serveTemp(t, { leaseTtlMs: 60000 })
  const remote = await Queue.connect(server.url, { timeoutMs: 10000 })
  t.after(() => remote.close())
  // The remote Worker first: its stop ends its PollJobs stream with the
  // StopPoll handshake, so no lease is left held by nobody for the
  // embedded Worker after it.
  const r1 = await cancelRunning(remote, (id) => local.cancel(id, { reason: 'operator' }))
  checkCancelled(r1, await local.get(r1.id))
  const r2 = await cancelRunning(local, (id) => remote.cancel(id, { reason: 'operator' }))
  checkCancelled(r2, await remote.get(r2.id))
  assert.equal((await local.stats()).total.cancelled, 2)
})

test('a cancel from another process stops a long handler within a heartbeat', async (t) => {
  const { local, server } = await serveTemp(t, { leaseTtlMs: 60000 })
  const pkg = path.resolve(__dirname, '..')
  const r = await cancelRunning(local, (id) => new Promise((resolve, reject) => {
    const code = `require(${JSON.stringify(pkg)}).Queue.connect(process.argv[1])
      .then((q) => q.cancel(process.argv[2], { reason: 'from elsewhere' }).then((o) => { console.log(JSON.stringify({ outcome: o, at: Date.now() })); return q.close() }))
      .catch((e) => { console.error(e.code, e.message); process.exit(1) })`
    const child = spawn(process.execPath, ['-e', code, server.url, id], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    child.on('exit', (c) => c === 0 ? resolve(JSON.parse(out)) : reject(new Error(`the cancelling process exited ${c}`)))
  }))
  const info = await local.get(r.id)
  checkCancelled(r, info)
})

test('a handler that returns anyway after a cancel: the job is cancelled, its result kept', async (t) => {
  const q = await openTemp(t, { leaseTtlMs: 60000 })
  const id = await q.enqueue('long', 1)
  let started
  const running = new Promise((resolve) => { started = resolve })
  const w = new Worker(q, async (job, { signal }) => {
    started()
    while (!signal.aborted) await sleep(20)
    return { partial: true }
  }, { heartbeatMs: HEARTBEAT_MS, pollMs: 50 })
  const cancelled = new Promise((resolve) => w.once('cancelled', resolve))
  let completed = false
  w.on('completed', () => { completed = true })
  const run = w.run()
  await running
  await q.cancel(id)
  await cancelled
  await w.stop()
  await run
  const info = await q.get(id)
  assert.equal(info.state, 'cancelled')
  assert.deepEqual(info.result, { partial: true })
  assert.equal(completed, false, "a cancelled job is not reported 'completed'")
})

test('a handler that never returns is bounded by its kind timeout: aborted with TIMEOUT, failed retryably', async (t) => {
  const q = await openTemp(t, { leaseTtlMs: 60000, backoffBaseMs: 60000, backoffCapMs: 60000, kinds: { hang: { timeoutMs: 300 } } })
  const hung = await q.enqueue('hang', 'forever')
  const quick = await q.enqueue('quick', 'after')
  let reason = null
  const w = new Worker(q, async (job, { signal }) => {
    if (job.kind === 'quick') return 'done'
    signal.addEventListener('abort', () => { reason = signal.reason })
    return new Promise(() => {}) // never settles
  }, { concurrency: 1, pollMs: 50 })
  const failed = new Promise((resolve) => w.once('failed', (job, err) => resolve({ job, err, at: Date.now() })))
  const completed = new Promise((resolve) => w.once('completed', resolve))
  const t0 = Date.now()
  const run = w.run()
  const f = await failed
  // The slot of the hung handler is free again: the other job runs on a concurrency-1 worker.
  await completed
  await w.stop({ graceMs: 1000 })
  await run
  assert.equal(f.job.id, hung)
  assert.equal(f.err.code, 'TIMEOUT')
  assert.equal(reason.code, 'TIMEOUT')
  assert.ok(f.at - t0 >= 300 && f.at - t0 < 300 + 1500, `failed ${f.at - t0} ms after start`)
  const info = await q.get(hung)
  assert.equal(info.state, 'failed')
  assert.equal(info.attempts, 1)
  assert.match(info.lastError, /^timed out after 300 ms/)
  assert.equal((await q.get(quick)).state, 'completed')
})

test('throw new Snooze(ms) hands the job back without an attempt; new Retry(err, { afterMs }) retries after that delay', async (t) => {
  const q = await openTemp(t, { backoffBaseMs: 600000, backoffCapMs: 600000 })
  const id = await q.enqueue('embed', 'x')
  const seen = []
  const w = new Worker(q, async (job) => {
    seen.push(job.attempts)
    if (seen.length === 1) throw new Snooze(100)
    if (seen.length === 2) throw new Retry(new Error('rate limited'), { afterMs: 100 })
    return 'ok'
  }, { pollMs: 50 })
  const snoozed = new Promise((resolve) => w.once('snoozed', (job, ms) => resolve(ms)))
  const completed = new Promise((resolve) => w.once('completed', resolve))
  const run = w.run()
  assert.equal(await snoozed, 100)
  await completed
  await w.stop()
  await run
  assert.deepEqual(seen, [0, 0, 1], 'the snooze spent no attempt, the retry one')
  const info = await q.get(id)
  assert.equal(info.state, 'completed')
  assert.equal(info.snoozes, 1)
  assert.equal(info.attempts, 1)
  assert.deepEqual(info.events.map((e) => e.transition).filter((e) => e !== 'leased'), ['enqueued', 'snoozed', 'failed', 'completed'])
  assert.match(info.events.find((e) => e.transition === 'failed').detail, /rate limited/)
  assert.throws(() => new Snooze(-1), (e) => e instanceof RangeError && e.code === 'INVALID_ARGUMENT')
  assert.throws(() => new Snooze(NaN), RangeError)
  assert.throws(() => new Retry(new Error('x'), { afterMs: Infinity }), RangeError)
  assert.throws(() => new Retry(new Error('x')), RangeError)
})

test('a hung handler whose Worker keeps heartbeating loses the job after maxLeaseTotalMs; another Worker completes it', async (t) => {
  const q = await openTemp(t, {
    reaperIntervalMs: 50, backoffBaseMs: 1, backoffCapMs: 1,
    kinds: { hang: { leaseTtlMs: 300, maxLeaseTotalMs: 500 } }
  })
  const id = await q.enqueue('hang', 'x')
  let unhang
  const hung = new Promise((resolve) => { unhang = resolve })
  let aborted
  const abort = new Promise((resolve) => { aborted = resolve })
  const w1 = new Worker(q, async (job, { signal }) => {
    signal.addEventListener('abort', () => aborted(signal.reason))
    await hung // ignores its signal until the test lets go
  }, { workerId: 'hung', pollMs: 50 })
  const lost = new Promise((resolve) => w1.once('lost', resolve))
  const run1 = w1.run()
  const t0 = Date.now()
  const reason = await abort
  assert.equal(reason.code, 'ABORTED')
  assert.ok(Date.now() - t0 >= 450, `lost after ${Date.now() - t0} ms, before maxLeaseTotalMs`)
  const w2 = new Worker(q, async () => 'rescued', { workerId: 'rescuer', pollMs: 50 })
  const completed = new Promise((resolve) => w2.once('completed', resolve))
  const run2 = w2.run()
  await completed
  await w2.stop()
  await run2
  unhang()
  await lost // once the handler returns: nothing recorded
  await w1.stop({ graceMs: 1000 })
  await run1
  const info = await q.get(id)
  assert.equal(info.state, 'completed')
  assert.equal(info.workerId, 'rescuer')
  assert.equal(info.attempts, 1, 'the lost lease spent an attempt')
  assert.ok(info.events.some((e) => e.transition === 'lease_expired'))
})

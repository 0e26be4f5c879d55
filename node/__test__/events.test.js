'use strict'
// Waiting for jobs, subscriptions to committed transitions, and progress
// (issue 18). remote.test.js runs this suite again over `Queue.connect`.
const test = require('node:test')
const assert = require('node:assert/strict')
const { Queue, Worker, Subscription, QueueEvents, Permanent, limits } = require('..')
const { openTemp, sleep } = require('./helpers.js')

/** Read events until `n` arrived (or `ms` passed). */
async function take (sub, n, ms = 5000) {
  const out = []
  const end = Date.now() + ms
  while (out.length < n) {
    const ev = await sub.next({ timeoutMs: Math.max(end - Date.now(), 0) })
    if (ev === null) break
    out.push(ev)
  }
  return out
}

test('wait answers a terminal job: completed with its result, dead with its error, cancelled', async (t) => {
  const q = await openTemp(t)
  const a = await q.enqueue('embed', { doc: 1 })
  const la = await q.leaseNext('w1')
  await q.complete(la, { pages: 3 })
  const done = await q.wait(a, { timeoutMs: 5000 })
  assert.equal(done.state, 'completed')
  assert.deepEqual(done.result, { pages: 3 })
  assert.equal(done.id, a)
  assert.equal((await q.wait(a, { timeoutMs: 0 })).state, 'completed')
  assert.equal((await q.wait(a)).state, 'completed', 'no timeout: at once when terminal')

  const b = await q.enqueue('embed', null)
  const lb = await q.leaseNext('w1')
  await q.fail(lb, 'bad input', { retryable: false })
  const dead = await q.wait(b, { timeoutMs: 5000 })
  assert.equal(dead.state, 'dead')
  assert.equal(dead.lastError, 'bad input')

  const c = await q.enqueue('embed', null)
  await q.cancel(c, { reason: 'not needed' })
  assert.equal((await q.wait(c, { timeoutMs: 5000 })).state, 'cancelled')
})

test('wait is woken by the commit, several waiters at once, and the dead job answers its error', async (t) => {
  const q = await openTemp(t)
  const id = await q.enqueue('embed', { n: 7 })
  const t0 = Date.now()
  const waits = Array.from({ length: 5 }, () => q.wait(id, { timeoutMs: 30000 }))
  await sleep(100)
  const job = await q.leaseNext('w1')
  await q.complete(job, { sq: 49 })
  const infos = await Promise.all(waits)
  const took = Date.now() - t0
  for (const info of infos) {
    assert.equal(info.state, 'completed')
    assert.deepEqual(info.result, { sq: 49 })
  }
  assert.ok(took < 10000, `the waits took ${took} ms: not woken by the commit`)

  const bad = await q.enqueue('embed', null, { maxAttempts: 1 })
  const waiting = q.wait(bad, { timeoutMs: 30000 })
  const lb = await q.leaseNext('w1')
  await q.fail(lb, 'boom')
  const dead = await waiting
  assert.equal(dead.state, 'dead')
  assert.equal(dead.lastError, 'boom')
})

test('wait with a timeout answers the current state at about the timeout', async (t) => {
  const q = await openTemp(t)
  const id = await q.enqueue('embed', null)
  const t0 = Date.now()
  const info = await q.wait(id, { timeoutMs: 200 })
  const took = Date.now() - t0
  assert.equal(info.state, 'pending')
  assert.ok(took >= 190 && took < 5000, `answered after ${took} ms`)
  await q.leaseNext('w7')
  const leased = await q.wait(id, { timeoutMs: 20 })
  assert.equal(leased.state, 'leased')
  assert.equal(leased.workerId, 'w7')
})

test('wait refuses an unknown or malformed id and bad options', async (t) => {
  const q = await openTemp(t)
  await assert.rejects(q.wait('01890000-0000-7000-8000-000000000000', { timeoutMs: 50 }), { code: 'NOT_FOUND' })
  await assert.rejects(q.wait('not-a-uuid'), { code: 'INVALID_ARGUMENT' })
  await assert.rejects(q.wait(42), TypeError)
  const id = await q.enqueue('embed', null)
  await assert.rejects(q.wait(id, { timeoutMs: -1 }), (e) => e instanceof RangeError && e.code === 'INVALID_ARGUMENT')
  await assert.rejects(q.wait(id, { timeoutMs: NaN }), RangeError)
  await assert.rejects(q.wait(id, { timeoutMs: '5' }), TypeError)
  await assert.rejects(q.wait(id, { signal: {} }), TypeError)
  await assert.rejects(q.wait(id, { timeout: 5 }), (e) => e.code === 'INVALID_ARGUMENT' && /timeoutMs/.test(e.message))
  // Infinity or anything past the longest duration: no limit (here: answered at the cancel).
  const forever = q.wait(id, { timeoutMs: Infinity })
  const longer = q.wait(id, { timeoutMs: limits.maxDurationMs * 2 })
  await q.cancel(id)
  assert.equal((await forever).state, 'cancelled')
  assert.equal((await longer).state, 'cancelled')
})

test('an AbortSignal rejects the wait with an AbortError; other waits carry on', async (t) => {
  const q = await openTemp(t)
  const id = await q.enqueue('embed', null)
  const ac = new AbortController()
  const other = q.wait(id, { timeoutMs: 30000 })
  const t0 = Date.now()
  setTimeout(() => ac.abort(new Error('client went away')), 100)
  await assert.rejects(q.wait(id, { signal: ac.signal }), (e) => e.name === 'AbortError' && e.cause.message === 'client went away')
  assert.ok(Date.now() - t0 < 5000)
  await assert.rejects(q.wait(id, { signal: ac.signal, timeoutMs: 1000 }), { name: 'AbortError' })
  await assert.rejects(q.enqueueAndWait('embed', null, { signal: ac.signal }), { name: 'AbortError' })
  assert.equal((await q.stats()).total.pending, 1, 'an aborted enqueueAndWait enqueued nothing')
  const job = await q.leaseNext('w1')
  await q.complete(job, 'ok')
  assert.equal((await other).result, 'ok')
})

test('closing the queue ends a wait in progress with CLOSED', async (t) => {
  const q = await openTemp(t)
  const id = await q.enqueue('embed', null)
  const waiting = assert.rejects(q.wait(id), { code: 'CLOSED' }) // watched before the close
  await sleep(50)
  await q.close()
  await waiting
  await assert.rejects(q.wait(id), { code: 'CLOSED' })
})

test('enqueueAndWait answers the result a Worker returns', async (t) => {
  const q = await openTemp(t)
  const w = new Worker(q, async (job) => {
    if (job.payload.fail) throw new Permanent(`bad ${job.payload.n}`)
    return { sq: job.payload.n * job.payload.n }
  }, { concurrency: 4, pollMs: 50 })
  const run = w.run()
  const infos = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => q.enqueueAndWait('calc', { n, fail: n === 4 }, { timeoutMs: 20000, priority: 5 })))
  infos.forEach((info, i) => {
    const n = i + 1
    if (n === 4) {
      assert.equal(info.state, 'dead')
      assert.equal(info.lastError, 'Permanent: bad 4')
    } else {
      assert.equal(info.state, 'completed')
      assert.deepEqual(info.result, { sq: n * n })
    }
    assert.equal(info.priority, 5)
  })
  await w.stop()
  await run
  await assert.rejects(q.enqueueAndWait('calc', null, { timeoutMs: 1, nope: true }), { code: 'INVALID_ARGUMENT' })
})

test('a subscription sees every transition in commit order, with attempts, workers and progress', async (t) => {
  const q = await openTemp(t)
  const sub = await q.subscribe()
  assert.ok(sub instanceof Subscription)
  const id = await q.enqueue('mail', { to: 'a' })
  const job = await q.leaseNext('w2')
  await q.extend([job], 'w2', { progress: [{ pct: 40 }] })
  await q.fail(job, 'smtp down')
  await q.retry(id)
  const again = await q.leaseNext('w3')
  await q.complete(again, 'sent')
  const evs = await take(sub, 7)
  assert.deepEqual(evs.map((e) => e.transition), ['enqueued', 'leased', 'progress', 'failed', 'retried', 'leased', 'completed'])
  assert.deepEqual(evs.map((e) => e.seq), [1, 2, 3, 4, 5, 6, 7])
  assert.ok(evs.every((e) => e.jobId === id && e.kind === 'mail' && e.missed === 0))
  assert.deepEqual(evs.map((e) => e.workerId), [null, 'w2', 'w2', 'w2', null, 'w3', 'w3'])
  assert.deepEqual(evs.map((e) => e.attempt), [0, 1, 1, 1, 0, 1, 1])
  assert.deepEqual(evs[2].progress, { pct: 40 })
  assert.ok(Buffer.isBuffer(evs[2].progressBytes))
  assert.equal(evs[0].progress, null)
  assert.ok(evs.every((e, i) => i === 0 || e.ts >= evs[i - 1].ts))
  assert.equal(await sub.next({ timeoutMs: 50 }), null, 'nothing more')
  sub.close()
  assert.equal(sub.closed, true)
  assert.equal(await sub.next(), null)
})

test('for await … of a subscription, with filters; it ends at close() and when the queue closes', async (t) => {
  const q = await openTemp(t)
  const sub = await q.subscribe({ kinds: 'ingest:*', transitions: ['enqueued', 'completed'] })
  const seen = []
  const loop = (async () => {
    for await (const ev of sub) {
      seen.push(`${ev.kind} ${ev.transition}`)
      if (seen.length === 3) break // return(): closes it
    }
  })()
  await q.enqueue('embed', null)
  await q.enqueue('ingest:pdf', null)
  const job = await q.leaseNext('w1', { kinds: 'ingest:*' })
  await q.complete(job)
  await q.enqueue('ingest:csv', null)
  await loop
  assert.deepEqual(seen, ['ingest:pdf enqueued', 'ingest:pdf completed', 'ingest:csv enqueued'])
  assert.equal(sub.closed, true)

  const sub2 = await q.subscribe({ transitions: 'enqueued' })
  const got = []
  const loop2 = (async () => { for await (const ev of sub2) got.push(ev.transition) })()
  await q.enqueue('embed', null)
  while (got.length < 1) await sleep(10)
  await q.close()
  await loop2 // ended by the close
  assert.deepEqual(got, ['enqueued'])
  await assert.rejects(q.subscribe(), { code: 'CLOSED' })
})

test('subscribe refuses bad filters', async (t) => {
  const q = await openTemp(t)
  await assert.rejects(q.subscribe({ transitions: ['no_such_transition'] }), (e) => e.code === 'INVALID_ARGUMENT' && /completed/.test(e.message))
  await assert.rejects(q.subscribe({ kinds: ['Bad Kind!'] }), { code: 'INVALID_ARGUMENT' })
  await assert.rejects(q.subscribe({ scopes: 'nope' }), { code: 'INVALID_ARGUMENT' })
  await assert.rejects(q.subscribe({ buffer: 0 }), (e) => e instanceof RangeError && e.code === 'INVALID_ARGUMENT')
  await assert.rejects(q.subscribe({ buffer: 1e7 }), RangeError)
  await assert.rejects(q.subscribe({ kinds: 5 }), TypeError)
  await assert.rejects(q.subscribe({ kind: 'embed' }), (e) => e.code === 'INVALID_ARGUMENT' && /kinds/.test(e.message))
  const sub = await q.subscribe({ buffer: 1 })
  await assert.rejects(sub.next({ timeoutMs: -5 }), RangeError)
  assert.throws(() => new Subscription(), TypeError)
  sub.close()
})

test('a slow subscriber with a small buffer is told exactly how many events it missed', async (t) => {
  const q = await openTemp(t)
  const slow = await q.subscribe({ buffer: 10, kinds: ['embed', 'marker'] })
  const all = await q.subscribe({ kinds: ['embed', 'marker'] })
  const ids = await q.enqueueMany(Array.from({ length: 200 }, (_, n) => ['embed', n]))
  for (let i = 0; i < 50; i++) await q.enqueue('embed', i) // one commit each
  await sleep(200) // the slow reader reads nothing meanwhile
  // It reads what its buffer kept, until the stream is quiet; the next
  // event delivered (the marker) says how many were dropped before it.
  const got = []
  for (;;) {
    const ev = await slow.next({ timeoutMs: 300 })
    if (ev === null) break
    got.push(ev)
  }
  assert.ok(got.length >= 10 && got.length < 250, `${got.length} events kept`)
  await q.enqueue('marker', null)
  const marker = await slow.next({ timeoutMs: 5000 })
  assert.equal(marker && marker.kind, 'marker')
  got.push(marker)
  const full = await take(all, 251)
  assert.equal(full.length, 251)
  assert.deepEqual(full.map((e) => e.seq), Array.from({ length: 251 }, (_, i) => i + 1))
  assert.ok(full.every((e) => e.missed === 0))
  const missed = got.reduce((n, e) => n + e.missed, 0)
  assert.ok(marker.missed > 0, 'a buffer of 10 held 250 events')
  assert.equal(got.length + missed, 251, 'delivered + missed is every event')
  for (let i = 1; i < got.length; i++) assert.equal(got[i].seq, got[i - 1].seq + 1 + got[i].missed)
  assert.equal(got[got.length - 1].seq, 251)
  // What was delivered is what happened, in order.
  const bySeq = new Map(full.map((e) => [e.seq, e]))
  for (const e of got) assert.equal(e.jobId, bySeq.get(e.seq).jobId)
  assert.equal(got[0].jobId, ids[0])
  slow.close()
  all.close()
})

test('QueueEvents emits every event and each under its transition name', async (t) => {
  const q = await openTemp(t)
  const events = await q.events({ kinds: 'embed' })
  assert.ok(events instanceof QueueEvents)
  const all = []
  const completed = []
  const dead = []
  events.on('event', (ev) => all.push(ev.transition))
  events.on('completed', (ev) => completed.push(ev.jobId))
  events.on('dead', (ev) => dead.push(ev.jobId))
  const a = await q.enqueue('embed', null)
  const b = await q.enqueue('embed', null, { maxAttempts: 1 })
  await q.enqueue('other', null)
  const ja = await q.leaseNext('w1')
  await q.complete(ja)
  const jb = await q.leaseNext('w1', { kinds: 'embed' })
  await q.fail(jb, 'no')
  const t0 = Date.now()
  while (dead.length < 1 && Date.now() - t0 < 5000) await sleep(10)
  assert.deepEqual(all, ['enqueued', 'enqueued', 'leased', 'completed', 'leased', 'failed', 'dead'])
  assert.deepEqual(completed, [a])
  assert.deepEqual(dead, [b])
  let closed = false
  events.on('close', () => { closed = true })
  await events.close()
  assert.equal(closed, true)
  assert.equal(events.closed, true)
  await q.enqueue('embed', null)
  await sleep(50)
  assert.equal(all.length, 7, 'nothing emitted after close()')

  // A listener that throws is reported on 'error', and the stream goes on.
  const ev2 = new QueueEvents(q, { transitions: 'enqueued' })
  await ev2.ready
  const errors = []
  const seen = []
  ev2.on('error', (e) => errors.push(e.message))
  ev2.on('enqueued', (ev) => { seen.push(ev.jobId); if (seen.length === 1) throw new Error('listener bug') })
  await q.enqueue('embed', null)
  await q.enqueue('embed', null)
  while (seen.length < 2) await sleep(10)
  assert.deepEqual(errors, ['listener bug'])
  await ev2.close()
  // A bad filter: `ready` rejects and 'error' is emitted.
  const bad = new QueueEvents(q, { transitions: 'nope' })
  const err = new Promise((resolve) => bad.once('error', resolve))
  await assert.rejects(bad.ready, { code: 'INVALID_ARGUMENT' })
  assert.equal((await err).code, 'INVALID_ARGUMENT')
  assert.throws(() => new QueueEvents({}), TypeError)
})

test('progress on extend: on the record, in the events, refused over the limit', async (t) => {
  const q = await openTemp(t)
  // (Not 'extended': a renewal within the same millisecond as the lease writes nothing.)
  const sub = await q.subscribe({ transitions: ['progress'] })
  const a = await q.enqueue('embed', null)
  const b = await q.enqueue('embed', null)
  const [ja, jb] = await q.leaseMany('w1', 2)
  assert.equal((await q.get(a)).progress, null)
  assert.equal((await q.get(a)).progressBytes, null)
  assert.deepEqual(await q.extendAnswers([ja, jb], 'w1', { progress: [{ step: 'parse', pct: 10 }, undefined] }), ['renewed', 'renewed'])
  assert.deepEqual((await q.get(a)).progress, { step: 'parse', pct: 10 })
  assert.equal((await q.get(b)).progress, null)
  assert.deepEqual(await q.extend([ja], 'w1', { progress: ['half'] }), [true])
  assert.equal((await q.get(a)).progress, 'half')
  assert.deepEqual(await q.extend([ja], 'w1', { progress: [Buffer.from('raw')] }), [true])
  const raw = (await q.get(a)).progress
  assert.ok(Buffer.isBuffer(raw) && raw.toString() === 'raw')
  // Over the limit, more reports than jobs, not an array: refused, nothing written.
  await assert.rejects(q.extend([ja], 'w1', { progress: ['x'.repeat(limits.maxProgressBytes)] }), { code: 'INVALID_ARGUMENT' })
  await assert.rejects(q.extend([ja], 'w1', { progress: [1, 2] }), { code: 'INVALID_ARGUMENT' })
  await assert.rejects(q.extend([ja], 'w1', { progress: 'half' }), TypeError)
  await assert.rejects(q.extend([ja], 'w1', { progress: [new Date()] }), TypeError)
  await assert.rejects(q.extend([ja], 'w1', { pct: 1 }), { code: 'INVALID_ARGUMENT' })
  assert.ok(Buffer.isBuffer((await q.get(a)).progress))
  const evs = await take(sub, 3)
  assert.deepEqual(evs.map((e) => [e.jobId, e.transition, e.workerId]), [[a, 'progress', 'w1'], [a, 'progress', 'w1'], [a, 'progress', 'w1']])
  assert.deepEqual(evs.map((e) => Buffer.isBuffer(e.progress) ? e.progress.toString() : e.progress), [{ step: 'parse', pct: 10 }, 'half', 'raw'])
  assert.equal(await sub.next({ timeoutMs: 50 }), null, 'the refused calls published nothing')
  // The job's own event log does not keep progress.
  assert.ok(!(await q.get(a)).events.some((e) => e.transition === 'progress'))
  sub.close()
})

/** The Queue methods a Worker calls, counting its heartbeats. */
function countingHeartbeats (q) {
  const counted = { heartbeats: 0, withProgress: 0 }
  const wrapper = {
    remote: q.remote,
    leaseMany: (...a) => q.leaseMany(...a),
    _pollJobs: (...a) => q._pollJobs(...a),
    complete: (...a) => q.complete(...a),
    completeMany: (...a) => q.completeMany(...a),
    fail: (...a) => q.fail(...a),
    release: (...a) => q.release(...a),
    snooze: (...a) => q.snooze(...a),
    extendAnswers: (jobs, workerId, opts) => {
      counted.heartbeats++
      if (opts && opts.progress) counted.withProgress++
      return q.extendAnswers(jobs, workerId, opts)
    }
  }
  return { wrapper, counted }
}

test('a handler reports progress 100 times: it rides on the heartbeats, shown by get and the events', async (t) => {
  const q = await openTemp(t)
  const sub = await q.subscribe({ kinds: 'long' })
  const id = await q.enqueue('long', null)
  const { wrapper, counted } = countingHeartbeats(q)
  let tooBig = null
  const w = new Worker(wrapper, async (job, ctx) => {
    try {
      ctx.progress('x'.repeat(limits.maxProgressBytes))
    } catch (e) {
      tooBig = e
    }
    for (let i = 1; i <= 100; i++) {
      ctx.progress({ done: i, of: 100 })
      await sleep(2)
    }
    await sleep(150) // a few heartbeats after the last report
    return 'finished'
  }, { heartbeatMs: 25, pollMs: 50 })
  const run = w.run()
  const info = await q.wait(id, { timeoutMs: 30000 })
  await w.stop()
  await run
  assert.equal(tooBig && tooBig.code, 'INVALID_ARGUMENT', 'a too-big report throws at once')
  assert.equal(info.state, 'completed')
  assert.deepEqual(info.progress, { done: 100, of: 100 }, 'get shows the latest report')
  const evs = await take(sub, 1000, 1000)
  const progress = evs.filter((e) => e.transition === 'progress')
  const extended = evs.filter((e) => e.transition === 'extended')
  assert.ok(progress.length >= 1)
  assert.deepEqual(progress[progress.length - 1].progress, { done: 100, of: 100 })
  const values = progress.map((e) => e.progress.done)
  assert.deepEqual(values, [...values].sort((x, y) => x - y), 'reports in order')
  // No write beyond the heartbeats: each progress event is one heartbeat.
  assert.ok(progress.length <= counted.withProgress, `${progress.length} progress events for ${counted.withProgress} heartbeats with progress`)
  assert.ok(progress.length + extended.length <= counted.heartbeats)
  assert.ok(progress.length < 100, 'reports were batched into heartbeats')
  assert.deepEqual(evs.filter((e) => !['progress', 'extended'].includes(e.transition)).map((e) => e.transition), ['enqueued', 'leased', 'completed'])
  sub.close()
})

test('Queue exposes the new API', () => {
  for (const m of ['wait', 'enqueueAndWait', 'subscribe', 'events']) assert.equal(typeof Queue.prototype[m], 'function')
  assert.equal(typeof limits.maxProgressBytes, 'number')
})

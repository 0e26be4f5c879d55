'use strict'
// Every number the API takes (durations, instants, priorities, counts,
// limits, generations) is range-checked at the boundary: for NaN,
// ±Infinity, negatives, 2^53, 2^63, 2^64, 1e300 and random doubles, each
// call either takes the value exactly (it reads back as given: nothing
// wrapped or truncated), saturates where the docs say so (a lease wait),
// or rejects with a RangeError (code INVALID_ARGUMENT) naming the argument.
// Never a crash.
const test = require('node:test')
const assert = require('node:assert/strict')
const { Queue, Worker, limits, configKeys } = require('..')
const { openTemp, tempStore, serveTemp } = require('./helpers.js')

const SPECIAL = [NaN, Infinity, -Infinity, -1, -0.5, 0, 0.5, 1, 255, 256, 2 ** 31, 2 ** 32 + 5,
  2 ** 53, 2 ** 53 - 1, 2 ** 63, 2 ** 64, 1e300, -1e300, limits.maxInstantMs, limits.maxInstantMs + 1,
  limits.maxDurationMs, limits.maxDurationMs + 1]

/** Deterministic doubles of every magnitude: integers near 2^k, fractions, negatives. */
function randoms (seed, n) {
  let s = seed >>> 0
  const next = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return s / 2 ** 32
  }
  const out = []
  for (let i = 0; i < n; i++) {
    const k = Math.floor(next() * 70)
    let v = 2 ** k + Math.floor(next() * 7) - 3
    if (next() < 0.3) v += next()
    if (next() < 0.15) v = -v
    out.push(v === 0 ? 0 : v) // no -0: it reads back as 0
  }
  return out
}

const values = (seed, n) => [...SPECIAL, ...randoms(seed, n)]

/** The call's outcome: { ok, value } or { ok: false, error }. */
async function outcome (fn) {
  try {
    return { ok: true, value: await fn() }
  } catch (error) {
    return { ok: false, error }
  }
}

function assertRange (r, v, name) {
  assert.ok(!r.ok, `${name} = ${v} was taken`)
  const e = r.error
  assert.ok(e instanceof RangeError, `${name} = ${v}: expected a RangeError, got ${e && e.name}: ${e && e.message}`)
  assert.equal(e.code, 'INVALID_ARGUMENT')
  assert.ok(e.message.includes(name), `${name} = ${v}: the message does not name it: ${e.message}`)
}

const isInt = (v, min, max) => Number.isInteger(v) && v >= min && v <= max

test('enqueue: priority, runAt, delayMs and maxAttempts are taken exactly or refused with a RangeError', async (t) => {
  const q = await openTemp(t)
  for (const v of values(1, 60)) {
    const r = await outcome(() => q.enqueue('embed', null, { priority: v }))
    if (isInt(v, 0, 255)) assert.equal((await q.get(r.value)).priority, v)
    else assertRange(r, v, 'priority')
  }
  for (const v of values(2, 60)) {
    const r = await outcome(() => q.enqueue('embed', null, { runAt: v }))
    if (v >= 0 && v <= limits.maxInstantMs) assert.equal((await q.get(r.value)).stateTs, Math.floor(v), `runAt ${v}`)
    else assertRange(r, v, 'runAt')
  }
  for (const v of values(3, 60)) {
    const before = Date.now()
    const r = await outcome(() => q.enqueue('embed', null, { delayMs: v }))
    if (r.ok) {
      assert.ok(v >= 0 && before + v <= limits.maxInstantMs + 10000, `delayMs ${v} was taken`)
      const ts = (await q.get(r.value)).stateTs
      assert.ok(Number.isSafeInteger(ts) && ts >= before + Math.floor(v) - 1 && ts <= Date.now() + v + 1, `delayMs ${v}: ready at ${ts}`)
    } else {
      assertRange(r, v, 'delayMs')
      assert.ok(!(v >= 0 && Date.now() + v < limits.maxInstantMs - 10000), `delayMs ${v} was refused`)
    }
  }
  for (const v of values(4, 60)) {
    const r = await outcome(() => q.enqueue('embed', null, { maxAttempts: v }))
    if (isInt(v, 1, 2 ** 32 - 1)) assert.equal((await q.get(r.value)).maxAttempts, v)
    else assertRange(r, v, 'maxAttempts')
  }
  // The same checks in a batch, naming the item.
  const r = await outcome(() => q.enqueueMany([['embed', 1], { kind: 'embed', runAt: 2 ** 63 }]))
  assertRange(r, 2 ** 63, 'items[1].runAt')
})

test('leaseMany max, list limit and lease generations are taken exactly or refused with a RangeError', async (t) => {
  const q = await openTemp(t)
  await q.enqueueMany(Array.from({ length: 3 }, () => ['embed', null]))
  for (const v of values(5, 60)) {
    const r = await outcome(() => q.list({ limit: v }))
    if (isInt(v, 1, limits.maxListLimit)) assert.equal(r.value.jobs.length, Math.min(v, 3))
    else assertRange(r, v, 'limit')
  }
  for (const v of values(6, 60)) {
    const r = await outcome(() => q.leaseMany('w', v))
    if (isInt(v, 1, limits.maxBatch)) {
      assert.ok(r.value.length <= v)
      for (const job of r.value) await q.release(job)
    } else {
      assertRange(r, v, 'max')
    }
  }
  const id = await q.enqueue('embed', null)
  for (const v of values(7, 40)) {
    const job = { id, generation: v }
    for (const call of [() => q.complete(job), () => q.extend([job], 'w'), () => q.completeMany([job])]) {
      const r = await outcome(call)
      if (Number.isSafeInteger(v) && v >= 0) {
        // A well-formed token of no live lease: lost, never a store error.
        assert.ok(r.ok || r.error.code === 'ABORTED' || r.error.code === 'NOT_FOUND', `generation ${v}: ${r.error}`)
      } else {
        assertRange(r, v, 'generation')
      }
    }
  }
})

test('a lease wait takes any length: Infinity and anything past 100 years wait for good (saturated); NaN and negatives are refused', async (t) => {
  const q = await openTemp(t)
  for (const v of values(8, 40)) {
    // An aborted signal ends the wait at once, whatever its length.
    const r = await outcome(() => q.leaseNext('w', { waitMs: v, signal: AbortSignal.abort() }))
    if (v >= 0) assert.equal(r.value, null, `waitMs ${v}: ${r.error}`)
    else assertRange(r, v, 'waitMs')
  }
  // Saturated, not wrapped: a huge wait still waits, and an enqueue wakes it.
  const waiting = q.leaseNext('w', { waitMs: 2 ** 64 })
  const id = await q.enqueue('embed', 'wake')
  assert.equal((await waiting).id, id)
})

test('every duration, count and factor of Queue.open (from the key table) reads back exactly or is a RangeError naming it', async (t) => {
  for (const k of configKeys()) {
    for (const v of values(k.name.length, 6)) {
      const r = await outcome(() => Queue.open(tempStore(t), { reaperIntervalMs: 0, [k.name]: v }))
      if (r.ok) {
        const got = r.value.settings()[k.name]
        await r.value.close()
        if (k.type === 'duration' || k.type === 'retention') {
          assert.ok(v >= 0 && v <= limits.maxDurationMs, `${k.name} = ${v} was taken`)
          assert.ok(Math.abs(got - v) <= 0.0005, `${k.name} = ${v} read back as ${got}`)
        } else {
          assert.equal(got, v, `${k.name} = ${v} read back as ${got}`)
        }
      } else if (k.type === 'flag') {
        assert.ok(r.error instanceof TypeError, `${k.name}: ${r.error}`)
      } else if (r.error.code === 'INVALID_ARGUMENT' && !(r.error instanceof RangeError)) {
        // A check across keys (a cap below its base) names both.
        assert.match(r.error.message, /cap|base/, `${k.name} = ${v}: ${r.error.message}`)
      } else {
        assertRange(r, v, k.name)
      }
    }
  }
})

test('leaseTtlMs above the maximum says the maximum (globally and per kind), not "must be finite"', async (t) => {
  for (const options of [{ leaseTtlMs: 1e300 }, { leaseTtlMs: limits.maxDurationMs + 1 }, { kinds: { embed: { leaseTtlMs: 2 ** 64 } } }]) {
    await assert.rejects(Queue.open(tempStore(t), options), (e) => {
      assert.ok(e instanceof RangeError, e.message)
      assert.ok(e.message.includes(String(limits.maxDurationMs)), e.message)
      assert.match(e.message, /leaseTtlMs must be a number of milliseconds from 0 to 3153600000000 \(100 years\)/)
      return true
    })
  }
})

test('runAt past the latest time (1e300, 2**63) is a RangeError naming it; the latest time itself is kept; every time field is a safe integer', async (t) => {
  const q = await openTemp(t, { leaseTtlMs: 60000 })
  for (const v of [1e300, 2 ** 63, 2 ** 64, limits.maxInstantMs + 1, new Date(8.64e15)]) {
    await assert.rejects(q.enqueue('embed', null, { runAt: v }), (e) => {
      assert.ok(e instanceof RangeError, `${v}: ${e.name}: ${e.message}`)
      assert.equal(e.code, 'INVALID_ARGUMENT')
      assert.match(e.message, /runAt must be a time from 0 to 253402300799999 ms since the epoch \(9999-12-31T23:59:59\.999Z\)/)
      return true
    })
  }
  const last = await q.enqueue('embed', null, { runAt: limits.maxInstantMs })
  assert.equal((await q.get(last)).stateTs, limits.maxInstantMs)
  assert.equal(new Date(limits.maxInstantMs).toISOString(), '9999-12-31T23:59:59.999Z')
  const id = await q.enqueue('embed', null)
  const job = await q.leaseNext('w')
  for (const f of ['deadline', 'leaseTtlMs', 'generation']) assert.ok(Number.isSafeInteger(job[f]), f)
  await q.complete(job, 1)
  const info = await q.get(id)
  const times = [info.stateTs, info.createdAt, ...info.events.map((e) => e.ts)]
  for (const ts of times) assert.ok(Number.isSafeInteger(ts) && ts > 0 && ts <= limits.maxInstantMs, String(ts))
  for (const j of (await q.list()).jobs) assert.ok(Number.isSafeInteger(j.stateTs) && j.stateTs >= 0, String(j.stateTs))
})

test('connect timeoutMs and server close graceMs: taken, or a RangeError naming them', async (t) => {
  const { server } = await serveTemp(t)
  for (const v of SPECIAL) {
    const r = await outcome(() => Queue.connect(server.url, { timeoutMs: v }))
    if (v >= 0 && v <= limits.maxDurationMs) {
      // Taken: connected, or timed out (a timeout under a millisecond can).
      if (r.ok) await r.value.close()
      else assert.equal(r.error.code, 'UNAVAILABLE', `timeoutMs ${v}: ${r.error}`)
    } else {
      assertRange(r, v, 'timeoutMs')
    }
  }
  const { local } = await serveTemp(t)
  for (const v of SPECIAL) {
    const s = await local.serve({ listen: '127.0.0.1:0' })
    const r = await outcome(() => s.close({ graceMs: v }))
    if (v >= 0 && v <= limits.maxDurationMs) assert.ok(r.ok, `graceMs ${v}: ${r.error}`)
    else {
      assertRange(r, v, 'graceMs')
      await s.close({ graceMs: 0 })
    }
  }
})

test('Worker concurrency, pollMs, heartbeatMs and stop graceMs: taken, or a RangeError naming them', async (t) => {
  const q = await openTemp(t)
  for (const v of values(9, 30)) {
    for (const [name, ok] of [
      ['concurrency', isInt(v, 1, limits.maxBatch)],
      ['pollMs', v >= 0 && v <= limits.maxDurationMs],
      ['heartbeatMs', v > 0 && v <= limits.maxDurationMs]
    ]) {
      let error = null
      try {
        void new Worker(q, async () => {}, { [name]: v })
      } catch (e) {
        error = e
      }
      if (ok) assert.equal(error, null, `${name} ${v}: ${error}`)
      else assertRange({ ok: false, error }, v, name)
    }
  }
  for (const v of SPECIAL) {
    const w = new Worker(q, async () => {}, { pollMs: 10 })
    const run = w.run()
    const r = await outcome(() => w.stop({ graceMs: v }))
    if (v === Infinity || (v >= 0 && v <= limits.maxDurationMs)) assert.ok(r.ok, `graceMs ${v}: ${r.error}`)
    else {
      assertRange(r, v, 'graceMs')
      await w.stop()
    }
    await run
  }
})

test('job control: snooze delayMs, fail retryInMs, expiresInMs and expiresAt are taken exactly or refused with a RangeError', async (t) => {
  const q = await openTemp(t)
  const near = (ts, want) => Number.isSafeInteger(ts) && Math.abs(ts - want) <= 5000
  for (const [seed, name] of [[11, 'delayMs'], [12, 'retryInMs']]) {
    for (const v of values(seed, 40)) {
      const id = await q.enqueue('ctl', null)
      const job = await q.leaseNext('w', { kinds: 'ctl' })
      assert.equal(job.id, id)
      const before = Date.now()
      const r = await outcome(() => name === 'delayMs' ? q.snooze(job, v) : q.fail(job, 'x', { retryInMs: v }))
      if (v >= 0 && v <= limits.maxDurationMs) {
        assert.ok(r.ok, `${name} ${v} was refused: ${r.error && r.error.message}`)
        const info = await q.get(id)
        assert.equal(info.state, name === 'delayMs' ? 'pending' : 'failed')
        assert.ok(near(info.stateTs, before + v), `${name} ${v}: ready at ${info.stateTs}`)
        await q.delete(id) // a short delay would bring it back to the next lease
      } else {
        assertRange(r, v, name)
        assert.equal((await q.get(id)).state, 'leased', `${name} ${v}: the refused call changed the job`)
        await q.complete(job)
      }
    }
  }
  for (const v of values(13, 60)) {
    const before = Date.now()
    const r = await outcome(() => q.enqueue('exp', null, { expiresInMs: v }))
    if (r.ok) {
      assert.ok(v > 0 && before + v <= limits.maxInstantMs + 10000, `expiresInMs ${v} was taken`)
      assert.ok(near((await q.get(r.value)).expiresAt, before + v), `expiresInMs ${v}`)
    } else if (v >= 0 && before + v < limits.maxInstantMs - 10000) {
      // In range but not after now (0, a fraction of a ms): the core's refusal.
      assert.equal(r.error.code, 'INVALID_ARGUMENT', `expiresInMs ${v}: ${r.error.message}`)
      assert.ok(v < 1, `expiresInMs ${v} was refused: ${r.error.message}`)
    } else {
      assertRange(r, v, 'expiresInMs')
    }
  }
  for (const v of values(14, 60)) {
    const r = await outcome(() => q.enqueue('exp', null, { expiresAt: v }))
    if (!(v >= 0 && v <= limits.maxInstantMs)) assertRange(r, v, 'expiresAt')
    else if (Math.floor(v) <= Date.now()) assert.equal(r.ok ? 'taken' : r.error.code, 'INVALID_ARGUMENT', `expiresAt ${v} in the past`)
    else assert.equal((await q.get(r.value)).expiresAt, Math.floor(v), `expiresAt ${v}`)
  }
})

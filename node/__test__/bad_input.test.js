'use strict'
// Wrong argument types get a TypeError, numbers out of range a RangeError,
// unknown option names and other bad values an Error, all with code
// INVALID_ARGUMENT and a clear message; the process and the store carry on.
const test = require('node:test')
const assert = require('node:assert/strict')
const { Queue, Worker } = require('..')
const { openTemp, tempStore } = require('./helpers.js')

const isTypeError = (pattern) => (e) => {
  assert.ok(e instanceof TypeError, `expected a TypeError, got ${e && e.name}: ${e && e.message}`)
  assert.equal(e.code, 'INVALID_ARGUMENT')
  assert.match(e.message, pattern)
  return true
}
const isInvalid = (pattern) => (e) => {
  assert.ok(e instanceof Error)
  assert.equal(e.code, 'INVALID_ARGUMENT', `${e.name}: ${e.message}`)
  assert.match(e.message, pattern)
  return true
}
/** The unknown-option rule: an Error (not a TypeError, not a RangeError) with code INVALID_ARGUMENT. */
const isUnknownOption = (name) => (e) => {
  assert.ok(!(e instanceof TypeError) && !(e instanceof RangeError), `expected a plain Error, got ${e && e.name}: ${e && e.message}`)
  return isInvalid(new RegExp(`unknown option "${name}"; the options are `))(e)
}
const isRange = (pattern) => (e) => {
  assert.ok(e instanceof RangeError, `expected a RangeError, got ${e && e.name}: ${e && e.message}`)
  return isInvalid(pattern)(e)
}

test('wrong argument types are TypeErrors, as rejected Promises', async (t) => {
  const q = await openTemp(t)
  await assert.rejects(q.enqueue(42, {}), isTypeError(/kind must be a string, got number/))
  await assert.rejects(q.enqueue('embed', {}, 'soon'), isTypeError(/enqueue options must be an object/))
  await assert.rejects(q.enqueue('embed', {}, { priority: 'high' }), isTypeError(/priority must be a number/))
  await assert.rejects(q.enqueue('embed', () => 1), isTypeError(/a function cannot be encoded/))
  await assert.rejects(q.enqueue('embed', { when: new Date() }), isTypeError(/payload\.when: only plain objects/))
  await assert.rejects(q.enqueue('embed', new Map()), isTypeError(/only plain objects/))
  await assert.rejects(q.enqueue('embed', [Symbol('s')]), isTypeError(/payload\[0\]: a symbol/))
  await assert.rejects(q.enqueueMany('embed'), isTypeError(/enqueueMany takes an array/))
  await assert.rejects(q.enqueueMany([['embed', 1], 7]), isTypeError(/items\[1\]/))
  await assert.rejects(q.leaseNext(), isTypeError(/workerId must be a string, got undefined/))
  await assert.rejects(q.leaseNext('w', { kinds: 7 }), isTypeError(/kinds must be a string or an array/))
  await assert.rejects(q.leaseNext('w', { signal: {} }), isTypeError(/signal must be an AbortSignal/))
  await assert.rejects(q.leaseNext('w', { waitMs: '1s' }), isTypeError(/waitMs must be a number/))
  await assert.rejects(q.complete({ id: 'x' }), isTypeError(/leased job/))
  await assert.rejects(q.complete(null), isTypeError(/leased job/))
  await assert.rejects(q.extend('job', 'w'), isTypeError(/array of leased jobs/))
  await assert.rejects(q.fail({ id: 'x', generation: 1 }, 5), isTypeError(/reason must be a string/))
  await assert.rejects(q.get(123), isTypeError(/id must be a string/))
  await assert.rejects(q.list({ limit: '10' }), isTypeError(/limit must be a number/))
  await assert.rejects(Queue.open(null), isTypeError(/path must be a string/))
  assert.throws(() => new Worker(q, 'not a function'), isTypeError(/handler function/))
  assert.throws(() => new Worker({}, async () => {}), isTypeError(/Queue/))
  assert.throws(() => new Worker(q, async () => {}, { concurrency: 'many' }), isTypeError(/concurrency must be a number/))
})

test('bad values are INVALID_ARGUMENT with a message naming the rule', async (t) => {
  const q = await openTemp(t, { maxPayloadBytes: 1024 })
  await assert.rejects(q.enqueue('Embed', 1), isInvalid(/kind "Embed" has 'E'/))
  await assert.rejects(q.enqueue('', 1), isInvalid(/kind must be 1 to 64 bytes/))
  await assert.rejects(q.enqueue('system:gc', 1, { scope: '7c1e4a52-3f00-4c6e-9a51-0d8f4f3a9b10' }), isInvalid(/system/))
  await assert.rejects(q.enqueue('embed', Buffer.alloc(2048)), isInvalid(/payload/))
  await assert.rejects(q.enqueue('embed', 1, { scope: 'tenant-7' }), isInvalid(/malformed scope "tenant-7"/))
  await assert.rejects(q.enqueue('embed', 1, { priority: 256 }), isRange(/priority must be an integer from 0 to 255/))
  await assert.rejects(q.enqueue('embed', 1, { delayMs: -5 }), isRange(/delayMs/))
  await assert.rejects(q.enqueue('embed', 1, { maxAttempts: 0 }), isRange(/maxAttempts must be an integer from 1 to 4294967295/))
  await assert.rejects(q.enqueue('embed', 2n ** 70n), isInvalid(/BigInt outside the 64-bit range/))
  const cyclic = {}
  cyclic.self = cyclic
  await assert.rejects(q.enqueue('embed', cyclic), isInvalid(/deeper than 256 levels/))
  await assert.rejects(q.leaseNext('w', { kinds: 'ingest:pdf:*' }), isInvalid(/family/))
  await assert.rejects(q.leaseMany('w', 0), isRange(/max must be an integer from 1 to 10000/))
  await assert.rejects(q.leaseNext(''), isInvalid(/worker id/))
  await assert.rejects(q.get('not-a-uuid'), isInvalid(/malformed job id "not-a-uuid"/))
  await assert.rejects(q.complete({ id: 'nope', generation: 1 }), isInvalid(/malformed job id/))
  await assert.rejects(q.complete({ id: '01a2299c-e422-77dd-bb54-61ab0316bf4b', generation: -1 }), isInvalid(/generation/))
  await assert.rejects(q.extend([{ id: 'a,b', generation: 1 }], 'w'), isInvalid(/malformed lease tokens/))
  await assert.rejects(q.completeMany([{ id: 'x', generation: 1.5 }]), isInvalid(/generation must be an integer/))
  await assert.rejects(q.list({ state: 'done' }), isInvalid(/unknown state "done"/))
  await assert.rejects(q.list({ after: 'zz' }), isInvalid(/./))
  await assert.rejects(Queue.open(tempStore(t), { leaseTtlMs: -1 }), isRange(/leaseTtlMs/))
  await assert.rejects(Queue.open(tempStore(t), { backoffFactor: 0.5 }), isRange(/backoffFactor must be a finite number >= 1/))
  for (const j of [-0.1, 1.5, NaN]) {
    await assert.rejects(Queue.open(tempStore(t), { backoffJitter: j }), isRange(/backoffJitter must be a number from 0 to 1/))
  }
  await assert.rejects(q.enqueue('embed', 1, { backoffBaseMs: 0 }), isInvalid(/backoff_base must be at least 1ms/))
  await assert.rejects(q.enqueue('embed', 1, { backoffBaseMs: -5 }), isRange(/backoffBaseMs/))
  // A check across keys is the core's: an Error naming both.
  await assert.rejects(Queue.open(tempStore(t), { backoffBaseMs: 5000, backoffCapMs: 1000 }), isInvalid(/cap/))
  await assert.rejects(Queue.open(tempStore(t), { configFile: '/nonexistent/telha.toml' }), isInvalid(/cannot read config file/))
  // One bad item rejects the whole batch: nothing was enqueued.
  await assert.rejects(q.enqueueMany([['embed', 1], ['BAD', 2]]), isInvalid(/kind "BAD"/))
  // After all of that the store still works.
  const stats = await q.stats()
  assert.equal(stats.total.pending, 0)
  const id = await q.enqueue('embed', { fine: true })
  const job = await q.leaseNext('w')
  assert.equal(job.id, id)
  await q.complete(job)
})

test('the same store opened twice in one process shares the engine; a different config is INVALID_ARGUMENT', async (t) => {
  const path = tempStore(t)
  const a = await Queue.open(path, { reaperIntervalMs: 0 })
  t.after(() => a.close())
  const b = await Queue.open(path, { reaperIntervalMs: 0 })
  t.after(() => b.close())
  const id = await a.enqueue('embed', 1)
  assert.equal((await b.get(id)).id, id)
  await assert.rejects(Queue.open(path, { reaperIntervalMs: 0, maxAttempts: 9 }), { code: 'INVALID_ARGUMENT' })
})

test('an unknown option name is INVALID_ARGUMENT (an Error, not a TypeError) in every call, naming the known ones', async (t) => {
  const q = await openTemp(t)
  const store = tempStore(t)
  const job = { id: '01a2299c-e422-77dd-bb54-61ab0316bf4b', generation: 1 }
  await assert.rejects(Queue.open(store, { leaseTtl: 5 }), isUnknownOption('leaseTtl'))
  await assert.rejects(Queue.open(store, { kinds: { embed: { leaseTtl: 5 } } }), isUnknownOption('leaseTtl'))
  await assert.rejects(Queue.open(store, { backoff: { base: 5 } }), isUnknownOption('base'))
  await assert.rejects(Queue.connect('http://127.0.0.1:9', { nope: 1 }), isUnknownOption('nope'))
  await assert.rejects(q.enqueue('embed', {}, { delay: 5 }), isUnknownOption('delay'))
  await assert.rejects(q.enqueueResult('embed', {}, { delay: 5 }), isUnknownOption('delay'))
  await assert.rejects(q.enqueueMany([{ kind: 'embed', delay: 5 }]), isUnknownOption('delay'))
  await assert.rejects(q.enqueueManyResults([{ kind: 'embed', delay: 5 }]), isUnknownOption('delay'))
  await assert.rejects(q.leaseNext('w', { wait: 5 }), isUnknownOption('wait'))
  await assert.rejects(q.leaseMany('w', 1, { wait: 5 }), isUnknownOption('wait'))
  await assert.rejects(q.list({ states: 'dead' }), isUnknownOption('states'))
  await assert.rejects(q.fail(job, 'x', { retry: false }), isUnknownOption('retry'))
  if (!q.remote) await assert.rejects(q.serve({ port: 1 }), isUnknownOption('port'))
  assert.throws(() => new Worker(q, async () => {}, { concurency: 2 }), isUnknownOption('concurency'))
  await assert.rejects(new Worker(q, async () => {}).stop({ grace: 1 }), isUnknownOption('grace'))
  const e = await Queue.open(store, { leaseTtl: 5 }).catch((err) => err)
  for (const k of require('..').configKeys()) assert.match(e.message, new RegExp(`\\b${k.name}\\b`), 'the message lists every option')
  // The store was never opened by the refused calls.
  assert.equal(require('node:fs').existsSync(store), false)
})

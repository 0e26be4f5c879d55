'use strict'
// Debounce (issue 44): debounceMs / debounceMaxMs on a keyed enqueue. A
// repeat while the key's job is pending replaces its payload and moves its
// run time ({ debounced: true }); bad input is refused with nothing
// written. Run locally here and over Queue.connect by remote.test.js.
const test = require('node:test')
const assert = require('node:assert/strict')
const { openTemp } = require('./helpers.js')

test('a repeat replaces the pending job\'s payload; once leased, a new job', async (t) => {
  const q = await openTemp(t)
  const first = await q.enqueueResult('digest', { n: 1 }, { idempotencyKey: 'doc-1', debounceMs: 3600000 })
  assert.deepEqual([first.created, first.debounced], [true, false])
  assert.equal(await q.leaseNext('w'), null)
  const again = await q.enqueueResult('digest', { n: 2 }, { idempotencyKey: 'doc-1', debounceMs: 3600000, debounceMaxMs: 7200000 })
  assert.deepEqual(again, { id: first.id, created: false, debounced: true })
  const info = await q.get(first.id)
  assert.deepEqual(info.payload, { n: 2 })
  assert.deepEqual(info.events.map((e) => e.transition), ['enqueued', 'debounced'])
  const [plain, other] = await q.enqueueManyResults([
    { kind: 'digest', payload: 3, idempotencyKey: 'doc-1' },
    { kind: 'digest', payload: 4, idempotencyKey: 'doc-2', debounceMs: 5, debounceMaxMs: 5 }
  ])
  assert.deepEqual(plain, { id: first.id, created: false, debounced: false })
  assert.equal(other.created, true)
  await new Promise((resolve) => setTimeout(resolve, 20))
  const [moved] = await q.enqueueManyResults([{ kind: 'digest', payload: 5, idempotencyKey: 'doc-2', debounceMs: 3600000 }])
  assert.deepEqual(moved, { id: other.id, created: false, debounced: true })
  const job = await q.leaseNext('w')
  assert.deepEqual([job.id, job.payload], [other.id, 5])
  const next = await q.enqueueResult('digest', 6, { idempotencyKey: 'doc-2', debounceMs: 3600000 })
  assert.equal(next.created, true)
  assert.notEqual(next.id, other.id)
})

test('bad debounces are refused and write nothing', async (t) => {
  const q = await openTemp(t)
  const cases = [
    [{ debounceMs: 1000 }, /debounce needs an idempotency_key/],
    [{ idempotencyKey: 'k', debounceMs: 0 }, /debounce must be at least 1ms/],
    [{ idempotencyKey: 'k', debounceMs: 1000, debounceMaxMs: 999 }, /debounce_max .* must be at least debounce/],
    [{ idempotencyKey: 'k', debounceMaxMs: 1000 }, /debounce_max needs debounce/],
    [{ idempotencyKey: 'k', debounceMs: 1000, uniqueForMs: 1000 }, /combined with unique_for/],
    [{ idempotencyKey: 'k', debounceMs: 1000, delayMs: 1000 }, /combined with delay/]
  ]
  for (const [options, pattern] of cases) {
    await assert.rejects(q.enqueue('digest', 1, options), (e) => {
      assert.equal(e.code, 'INVALID_ARGUMENT', `${e.name}: ${e.message}`)
      assert.match(e.message, pattern)
      return true
    })
  }
  await assert.rejects(q.enqueue('digest', 1, { idempotencyKey: 'k', debounceMs: -1 }), RangeError)
  assert.equal((await q.stats()).total.pending, 0)
})

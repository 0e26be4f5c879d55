'use strict'
// Steering waiting jobs (issue 44): promote, reschedule and setPriority
// move a pending or failed job within its state; a leased job is
// WRONG_STATE; bad input is refused with nothing written. Run locally here
// and over Queue.connect by remote.test.js (helpers.openTemp hands it a
// client).
const test = require('node:test')
const assert = require('node:assert/strict')
const { openTemp } = require('./helpers.js')

const coded = (code, pattern) => (e) => {
  assert.equal(e.code, code, `${e.name}: ${e.message}`)
  if (pattern) assert.match(e.message, pattern)
  return true
}

test('promote, reschedule and setPriority steer a delayed job', async (t) => {
  const q = await openTemp(t)
  const a = await q.enqueue('embed', { n: 1 }, { delayMs: 3600000 })
  const b = await q.enqueue('embed', { n: 2 }, { delayMs: 3600000 })
  assert.equal(await q.leaseNext('w'), null)
  await q.setPriority(b, 0)
  await q.promote(b)
  await q.promote(b) // already due: nothing written
  const info = await q.get(b)
  assert.equal(info.priority, 0)
  assert.deepEqual(info.events.map((e) => e.transition), ['enqueued', 'reprioritized', 'promoted'])
  await q.reschedule(a, new Date(Date.now() - 1000))
  assert.equal((await q.leaseNext('w')).id, b)
  const second = await q.leaseNext('w')
  assert.equal(second.id, a)
  await assert.rejects(q.promote(a), coded('WRONG_STATE'))
  await assert.rejects(q.setPriority(a, 3), coded('WRONG_STATE'))
  await assert.rejects(q.reschedule('0190c0de-0000-7000-8000-000000000000', Date.now()), coded('NOT_FOUND'))
  const c = await q.enqueue('embed', null)
  await q.reschedule(c, Date.UTC(2100, 0, 1))
  assert.equal((await q.get(c)).stateTs, Date.UTC(2100, 0, 1))
  assert.equal(await q.leaseNext('w'), null, 'delayed now')
})

test('bad steering input is refused with nothing written', async (t) => {
  const q = await openTemp(t)
  const a = await q.enqueue('embed', null, { delayMs: 3600000 })
  const before = await q.get(a)
  await assert.rejects(q.setPriority(a, 256), (e) => e instanceof RangeError && coded('INVALID_ARGUMENT')(e))
  await assert.rejects(q.setPriority(a, 1.5), coded('INVALID_ARGUMENT'))
  await assert.rejects(q.setPriority(a, '1'), (e) => e instanceof TypeError)
  await assert.rejects(q.reschedule(a, -1), coded('INVALID_ARGUMENT'))
  await assert.rejects(q.reschedule(a, 1e20), coded('INVALID_ARGUMENT'))
  await assert.rejects(q.reschedule(a), (e) => e instanceof TypeError)
  await assert.rejects(q.promote('nope'), coded('INVALID_ARGUMENT'))
  assert.deepEqual(await q.get(a), before)
})

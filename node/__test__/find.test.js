'use strict'
// find(text) (issue 42): a text answered exactly as a job id, an
// idempotency key and a tag, side by side; bad input is INVALID_ARGUMENT
// (a TypeError for the wrong types). Run locally here and over
// Queue.connect by remote.test.js; in depth: core/tests/behaviour/find.rs
// and conformance case 100.
const test = require('node:test')
const assert = require('node:assert/strict')
const { openTemp } = require('./helpers.js')

const OTHER = '0190c0de-0000-7000-8000-0000000000a1'
const coded = (code, pattern) => (e) => {
  assert.equal(e.code, code, `${e.name}: ${e.message}`)
  if (pattern) assert.match(e.message, pattern)
  return true
}

test('find answers an id, a key and a tag side by side', async (t) => {
  const q = await openTemp(t)
  const keyed = await q.enqueue('mail', 1, { idempotencyKey: 'order-4711' })
  const tagged = []
  for (let n = 0; n < 3; n++) tagged.push(await q.enqueue('ship', n, { tags: ['order-4711'] }))
  await q.enqueue('ship', 9, { tags: ['order-4711'], scope: OTHER })

  const r = await q.find('order-4711')
  assert.deepEqual(r.matched, ['key', 'tag'])
  assert.equal(r.byId, null)
  assert.equal(r.byKey.id, keyed)
  assert.deepEqual(r.byTag.jobs.map((j) => j.id).slice(0, 3), tagged)
  assert.equal(r.byTag.jobs.length, 4)
  assert.equal(r.byTag.next, null)

  const page = await q.find('order-4711', { limit: 2 })
  assert.deepEqual(page.byTag.jobs.map((j) => j.id), tagged.slice(0, 2))
  assert.equal(typeof page.byTag.next, 'string')
  const rest = await q.list({ tag: 'order-4711', after: page.byTag.next })
  assert.equal(rest.jobs[0].id, tagged[2])

  const byId = await q.find(tagged[1])
  assert.deepEqual(byId.matched, ['id'])
  assert.deepEqual(byId.byId.tags, ['order-4711'])
  assert.equal(byId.byKey, null)
  const scoped = await q.find('order-4711', { scope: OTHER })
  assert.deepEqual(scoped.matched, ['tag'])
  assert.equal(scoped.byKey, null)
  const none = await q.find('order-47')
  assert.deepEqual([none.matched, none.byTag.jobs], [[], []])
})

test('bad input is INVALID_ARGUMENT naming the limit, wrong types TypeErrors', async (t) => {
  const q = await openTemp(t)
  await assert.rejects(q.find(''), coded('INVALID_ARGUMENT', /1 to 512 bytes/))
  await assert.rejects(q.find('x'.repeat(513)), coded('INVALID_ARGUMENT', /got 513 bytes/))
  await assert.rejects(q.find('a\nb'), coded('INVALID_ARGUMENT', /control character U\+000A/))
  await assert.rejects(q.find('a', { limit: 0 }), coded('INVALID_ARGUMENT', /find limit/))
  await assert.rejects(q.find('a', { limit: 10001 }), coded('INVALID_ARGUMENT', /find limit/))
  await assert.rejects(q.find('a', { scope: 'nope' }), coded('INVALID_ARGUMENT'))
  await assert.rejects(q.find(7), TypeError)
  await assert.rejects(q.find('a', { limit: '5' }), TypeError)
  await assert.rejects(q.find('a', { tag: 'x' }), coded('INVALID_ARGUMENT', /tag/))
})

'use strict'
// Tags and metadata (issue 42): set at enqueue, returned by get, list and
// leases, found by list({ tag }) and countTag; bad input is
// INVALID_ARGUMENT (or a TypeError for the wrong types) with nothing
// written. Run locally here and over Queue.connect by remote.test.js.
const test = require('node:test')
const assert = require('node:assert/strict')
const { openTemp } = require('./helpers.js')

const coded = (code, pattern) => (e) => {
  assert.equal(e.code, code, `${e.name}: ${e.message}`)
  if (pattern) assert.match(e.message, pattern)
  return true
}

test('tags and metadata come back and find the job', async (t) => {
  const q = await openTemp(t)
  const a = await q.enqueue('mail', { n: 1 }, { tags: ['order-4711', 'eu', 'order-4711'], metadata: { trace: '00-abc-01' } })
  const [b] = await q.enqueueMany([{ kind: 'mail', payload: 2, tags: ['order-4711'] }])
  await q.enqueue('mail', 3, { tags: ['order-9'] })
  const info = await q.get(a)
  assert.deepEqual(info.tags, ['order-4711', 'eu'])
  assert.deepEqual(info.metadata, { trace: '00-abc-01' })
  const job = await q.leaseNext('w', { kinds: 'mail' })
  assert.equal(job.id, a)
  assert.deepEqual([job.tags, job.metadata], [['order-4711', 'eu'], { trace: '00-abc-01' }])
  const found = await q.list({ tag: 'order-4711' })
  assert.deepEqual(found.jobs.map((j) => j.id).sort(), [a, b].sort())
  assert.deepEqual((await q.list({ tag: 'order-4711', state: 'leased' })).jobs.map((j) => j.id), [a])
  const page = await q.list({ tag: 'order-4711', limit: 1 })
  assert.equal(page.jobs.length, 1)
  assert.notEqual(page.next, null)
  const rest = await q.list({ tag: 'order-4711', after: page.next })
  assert.deepEqual([...page.jobs, ...rest.jobs].map((j) => j.id), found.jobs.map((j) => j.id))
  const c = await q.countTag('order-4711')
  assert.deepEqual([c.pending, c.leased], [1, 1])
  assert.equal((await q.countTag('order-9', { scope: '00000000-0000-0000-0000-000000000000' })).pending, 1)
  await q.complete(job, null, { then: [{ kind: 'mail', payload: 4, tags: ['order-4711'] }] })
  const after = await q.countTag('order-4711')
  assert.deepEqual([after.completed, after.pending], [1, 2])
  const plain = await q.enqueue('mail', 5)
  const j2 = await q.get(plain)
  assert.deepEqual([j2.tags, j2.metadata], [[], {}])
})

test('bad tags and metadata are refused and nothing is written', async (t) => {
  const q = await openTemp(t)
  const seventeen = Array.from({ length: 17 }, (_, i) => `t${i}`)
  for (const [opts, check] of [
    [{ tags: seventeen }, coded('INVALID_ARGUMENT', /at most 16 tags/)],
    [{ tags: ['x'.repeat(65)] }, coded('INVALID_ARGUMENT', /1 to 64 bytes/)],
    [{ tags: ['a\nb'] }, coded('INVALID_ARGUMENT', /control character/)],
    [{ metadata: { k: 'v'.repeat(5 * 1024) } }, coded('INVALID_ARGUMENT', /4096 bytes/)],
    [{ tags: 'order-4711' }, TypeError],
    [{ tags: [1] }, TypeError],
    [{ metadata: { k: 1 } }, TypeError]
  ]) {
    await assert.rejects(q.enqueue('mail', 1, opts), check)
    await assert.rejects(q.enqueueMany([{ kind: 'mail', tags: ['ok'] }, { kind: 'mail', ...opts }]), check)
  }
  assert.equal((await q.stats()).total.pending, 0)
  assert.equal((await q.countTag('ok')).pending, 0)
  await assert.rejects(q.countTag(''), coded('INVALID_ARGUMENT'))
})

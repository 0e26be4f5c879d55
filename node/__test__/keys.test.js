'use strict'
// Job keys and ordered limits (issue 43: flow control by key): a key set
// at enqueue comes back on leases, get and follow-ups; `key:*` caps hold a
// key's second job while another key runs; `ordered` leases a key's jobs
// in enqueue order; bad input is INVALID_ARGUMENT (a TypeError for the
// wrong type) with nothing written. Run locally here and over
// Queue.connect by remote.test.js.
const test = require('node:test')
const assert = require('node:assert/strict')
const { openTemp } = require('./helpers.js')

const coded = (code, pattern) => (e) => {
  assert.equal(e.code, code, `${e.name}: ${e.message}`)
  if (pattern) assert.match(e.message, pattern)
  return true
}

test('a job key comes back on the job, its info and its follow-ups', async (t) => {
  const q = await openTemp(t)
  const a = await q.enqueue('mail', 1, { key: 'customer-7' })
  const [b, c] = await q.enqueueMany([{ kind: 'mail', payload: 2, key: 'customer-8' }, ['mail', 3]])
  assert.equal((await q.get(a)).key, 'customer-7')
  assert.equal((await q.get(b)).key, 'customer-8')
  assert.equal((await q.get(c)).key, null)
  const job = await q.leaseNext('w', { kinds: 'mail' })
  assert.deepEqual([job.id, job.key], [a, 'customer-7'])
  await q.complete(job, null, { then: [{ kind: 'mail', payload: 4, key: 'customer-7' }] })
  const keys = (await q.list({ state: 'pending' })).jobs.map((j) => j.key ?? '').sort()
  assert.deepEqual(keys, ['', 'customer-7', 'customer-8'])
  const leased = await q.leaseMany('w', 3, { kinds: 'mail' })
  assert.deepEqual(leased.map((j) => j.key ?? '').sort(), ['', 'customer-7', 'customer-8'])
})

test('a bad key is refused and nothing is written', async (t) => {
  const q = await openTemp(t)
  for (const [key, check] of [
    ['', coded('INVALID_ARGUMENT', /1 to 128 bytes/)],
    ['k'.repeat(129), coded('INVALID_ARGUMENT', /1 to 128 bytes/)],
    ['a\nb', coded('INVALID_ARGUMENT', /control character/)],
    [7, TypeError]
  ]) {
    await assert.rejects(q.enqueue('mail', 1, { key }), check)
    await assert.rejects(q.enqueueMany([{ kind: 'mail', key: 'ok' }, { kind: 'mail', key }]), check)
  }
  assert.equal((await q.stats()).total.pending, 0)
  await assert.rejects(q.setLimit('kind:mail', { concurrency: 1, ordered: true }), coded('INVALID_ARGUMENT', /ordered/))
  await assert.rejects(q.setLimit('key:*', { concurrency: 2, ordered: true }), coded('INVALID_ARGUMENT', /ordered/))
  await assert.rejects(q.setLimit('key:*', { concurrency: 1, ordered: 'yes' }), TypeError)
  assert.deepEqual(await q.limits(), [])
})

test('a key:* cap holds a key\'s second job while another key runs', async (t) => {
  const q = await openTemp(t)
  await q.setLimit('key:*', { concurrency: 1 })
  const a1 = await q.enqueue('mail', 1, { key: 'a' })
  const a2 = await q.enqueue('mail', 2, { key: 'a' })
  const b1 = await q.enqueue('mail', 3, { key: 'b' })
  const got = await q.leaseMany('w', 3)
  assert.deepEqual(got.map((j) => j.id), [a1, b1])
  assert.equal(await q.leaseNext('w'), null)
  const [l] = await q.limits()
  assert.deepEqual([l.target, l.concurrency, l.ordered, l.leased], ['key:*', 1, false, 2])
  await q.complete(got[0])
  const next = await q.leaseNext('w')
  assert.deepEqual([next.id, next.key], [a2, 'a'])
})

test('an ordered key leases in enqueue order, one at a time', async (t) => {
  const q = await openTemp(t)
  await q.setLimit('key:doc-1', { concurrency: 1, ordered: true })
  const [l] = await q.limits()
  assert.deepEqual([l.target, l.ordered], ['key:doc-1', true])
  const ids = []
  for (let i = 0; i < 4; i++) ids.push(await q.enqueue('edit', i, { key: 'doc-1', priority: 10 * i }))
  const other = await q.enqueue('edit', 9, { key: 'doc-2', priority: 255 })
  const first = await q.leaseMany('w', 10)
  assert.deepEqual(first.map((j) => j.id).sort(), [ids[0], other].sort())
  for (const j of first) await q.complete(j)
  const done = [ids[0]]
  for (let i = 0; i < 3; i++) {
    const got = await q.leaseMany('w', 10)
    assert.equal(got.length, 1)
    done.push(got[0].id)
    await q.complete(got[0])
  }
  assert.deepEqual(done, ids)
})

'use strict'
// Zero double leases: 16 concurrent async pollers over 20,000 jobs, checked
// against a ledger kept outside the queue.
const test = require('node:test')
const assert = require('node:assert/strict')
const { openTemp } = require('./helpers.js')

const JOBS = 20000
const POLLERS = 16

test('16 concurrent async pollers over 20,000 jobs: no double lease, each completed exactly once', async (t) => {
  const q = await openTemp(t)
  const ids = []
  for (let start = 0; start < JOBS; start += 1000) {
    const items = []
    for (let i = start; i < start + 1000; i++) items.push(['bench', { n: i }])
    ids.push(...(await q.enqueueMany(items)))
  }
  assert.equal(new Set(ids).size, JOBS, 'enqueueMany returned distinct ids')

  const leasedBy = new Map() // id -> [worker, ...]
  const completed = new Map() // id -> count
  const seenPayload = new Set()
  const poller = async (w) => {
    const worker = `poller-${w}`
    for (;;) {
      const job = await q.leaseNext(worker)
      if (job === null) return
      const holders = leasedBy.get(job.id) ?? []
      holders.push(worker)
      leasedBy.set(job.id, holders)
      seenPayload.add(job.payload.n)
      await q.complete(job, { by: worker })
      completed.set(job.id, (completed.get(job.id) ?? 0) + 1)
    }
  }
  await Promise.all(Array.from({ length: POLLERS }, (_, w) => poller(w)))

  const doubles = [...leasedBy].filter(([, holders]) => holders.length !== 1)
  assert.deepEqual(doubles, [], 'a job was leased more than once')
  assert.equal(leasedBy.size, JOBS, 'every job was leased')
  assert.ok(ids.every((id) => completed.get(id) === 1), 'every job completed exactly once')
  assert.equal(seenPayload.size, JOBS, 'every payload was seen once')
  const byWorker = new Set([...leasedBy.values()].map((h) => h[0]))
  assert.ok(byWorker.size > 1, 'the work was shared by several pollers')
  const stats = await q.stats()
  assert.deepEqual(stats.total, { pending: 0, leased: 0, failed: 0, completed: JOBS, dead: 0, cancelled: 0, waiting: 0 })
})

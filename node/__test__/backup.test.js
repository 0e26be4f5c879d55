'use strict'
// Queue.backup (issue 39): a consistent copy of the live store that opens
// as a store with the jobs in it (a leased one leased); a taken directory
// is INVALID_ARGUMENT naming it. Run locally here and over Queue.connect
// by remote.test.js (the server writes on its own filesystem: this one).
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { Queue } = require('..')
const { openTemp, tempStore } = require('./helpers.js')

test('a backup opens as a store with the jobs, a taken dir is refused', async (t) => {
  const q = await openTemp(t)
  const a = await q.enqueue('mail', { n: 1 })
  const b = await q.enqueue('mail', { n: 2 })
  const job = await q.leaseNext('w', { kinds: 'mail' })
  assert.equal(job.id, a)
  const to = path.join(path.dirname(tempStore(t)), 'b1')
  const info = await q.backup(to)
  assert.equal(info.path, fs.realpathSync(to))
  assert.ok(info.files >= 4 && info.bytes > 0 && info.sequence > 0, JSON.stringify(info))
  assert.equal(typeof info.tookMs, 'number')
  await assert.rejects(q.backup(to), (e) => e.code === 'INVALID_ARGUMENT' && /b1/.test(e.message) && /not empty/.test(e.message))
  await assert.rejects(q.backup(42), TypeError)
  await q.complete(job)
  const c = await Queue.open(to, { reaperIntervalMs: 0 })
  try {
    assert.equal((await c.get(a)).state, 'leased')
    assert.equal((await c.get(b)).state, 'pending')
  } finally {
    await c.close()
  }
})

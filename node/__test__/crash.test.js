'use strict'
// Recovery after SIGKILL, and one store, one process.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { once } = require('node:events')
const { Queue } = require('..')
const { tempStore } = require('./helpers.js')

function startHolder (t, store, count) {
  const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'hold_lease.js'), store, String(count)], {
    stdio: ['ignore', 'pipe', 'inherit']
  })
  t.after(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  return child
}

async function firstLine (stream) {
  let buf = ''
  for await (const chunk of stream) {
    buf += chunk
    const nl = buf.indexOf('\n')
    if (nl >= 0) return buf.slice(0, nl)
  }
  throw new Error('the child exited before reporting')
}

test('a child killed with SIGKILL while holding a lease: the job is re-leased after the TTL and completes; a second process gets STORE_LOCKED', async (t) => {
  const store = tempStore(t)
  const child = startHolder(t, store, 50)
  const report = JSON.parse(await firstLine(child.stdout))
  assert.equal(report.pid, child.pid)

  // While the child owns the store, this (second) process cannot open it.
  await assert.rejects(Queue.open(store), (e) => {
    assert.equal(e.code, 'STORE_LOCKED')
    assert.match(e.message, /locked/)
    assert.ok(e.message.includes(path.basename(store)), `the error names the store: ${e.message}`)
    return true
  })

  const exited = once(child, 'exit')
  assert.ok(child.kill('SIGKILL'))
  const [code, signal] = await exited
  assert.equal(code, null)
  assert.equal(signal, 'SIGKILL')

  // Reopen: a short TTL is already past; the reaper returns the lease to pending.
  const q = await Queue.open(store, { leaseTtlMs: 1000, reaperIntervalMs: 100, backoffBaseMs: 50 })
  t.after(() => q.close())
  const before = await q.get(report.leased)
  assert.equal(before.state, 'leased')
  assert.equal(before.workerId, 'doomed-worker')
  // Every acknowledged enqueue survived the kill.
  for (const id of report.ids) assert.ok(await q.get(id), `job ${id} was lost`)

  const seen = new Set()
  let rescued = null
  const deadline = Date.now() + 15000
  while (Date.now() < deadline && seen.size < report.ids.length) {
    const job = await q.leaseNext('rescuer', { waitMs: 1000 })
    if (!job) continue
    seen.add(job.id)
    if (job.id === report.leased) rescued = job
    await q.complete(job, 'done')
  }
  assert.ok(rescued, 'the killed worker\'s job was re-leased')
  assert.equal(rescued.attempts, 1, 'the lost lease counted as one failed attempt')
  assert.equal(seen.size, report.ids.length, 'every job was leased and completed')
  const after = await q.get(report.leased)
  assert.equal(after.state, 'completed')
  assert.ok(after.events.some((e) => e.transition === 'lease_expired'), 'the log records the expiry')
  const stats = await q.stats()
  assert.equal(stats.total.completed, report.ids.length)
})

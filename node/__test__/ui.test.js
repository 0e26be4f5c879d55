'use strict'
// The operator web page served from a Node host: `queue.serve({ ui: true })`.
const test = require('node:test')
const assert = require('node:assert/strict')
const { Queue } = require('..')
const { tempStore } = require('./helpers.js')

async function api (base, path, { method = 'GET', body, csrf } = {}) {
  const headers = { 'content-type': 'application/json' }
  if (csrf) headers['x-csrf-token'] = csrf
  const r = await fetch(base + 'api/v1/' + path, {
    method, headers, body: method === 'POST' ? JSON.stringify(body ?? {}) : undefined
  })
  return { status: r.status, body: await r.json() }
}

test('serve({ ui: true }) shows the counts and retries a dead job', async (t) => {
  const q = await Queue.open(tempStore(t))
  t.after(() => q.close())
  await q.enqueue('embed', { doc: 1 })
  const id = await q.enqueue('ingest', 'x', { maxAttempts: 1 })
  const job = await q.leaseNext('w1', { kinds: 'ingest' })
  await q.fail(job, 'boom', { retryable: false })
  const server = await q.serve({ listen: '127.0.0.1:0', metricsListen: '127.0.0.1:0', ui: true })
  t.after(() => server.close())
  const base = server.uiUrl
  assert.match(base, /^http:\/\/127\.0\.0\.1:\d+\/$/)
  const page = await fetch(base)
  assert.match(page.headers.get('content-type'), /text\/html/)
  assert.match(page.headers.get('content-security-policy'), /script-src 'self'/)
  const ov = await api(base, 'overview')
  assert.equal(ov.status, 200)
  const stats = await q.stats()
  assert.equal(ov.body.stats.by_kind.ingest.dead, stats.byKind.ingest.dead)
  assert.equal(ov.body.stats.total.pending, stats.total.pending)
  const dead = await api(base, 'jobs?state=dead')
  assert.deepEqual(dead.body.jobs.map(j => j.id), [id])
  assert.equal((await api(base, `jobs/${id}/retry`, { method: 'POST' })).status, 403)
  const { csrf } = (await api(base, 'info')).body
  const r = await api(base, `jobs/${id}/retry`, { method: 'POST', csrf })
  assert.equal(r.status, 200)
  assert.equal(r.body.job.state, 'pending')
  assert.equal((await q.stats()).total.dead, 0)
})

test('uiReadOnly refuses actions; no ui, no page; bad options are typed errors', async (t) => {
  const q = await Queue.open(tempStore(t))
  t.after(() => q.close())
  const ro = await q.serve({ listen: '127.0.0.1:0', metricsListen: '127.0.0.1:0', ui: true, uiReadOnly: true })
  t.after(() => ro.close())
  const info = (await api(ro.uiUrl, 'info')).body
  assert.equal(info.read_only, true)
  const r = await api(ro.uiUrl, 'pause', { method: 'POST', body: { target: 'kind:x' }, csrf: info.csrf })
  assert.deepEqual([r.status, r.body.error.code], [403, 'READ_ONLY'])
  const plain = await q.serve({ listen: '127.0.0.1:0' })
  t.after(() => plain.close())
  assert.equal(plain.uiUrl, null)
  await assert.rejects(q.serve({ listen: '127.0.0.1:0', ui: 'yes' }), TypeError)
})

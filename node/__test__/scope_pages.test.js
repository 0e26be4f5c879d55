'use strict'
// stats() pages its per-scope counts (issue 49): the totals and per-kind
// counts stay whole, a walk of the pages visits every scope once, the
// default is the top 100 by pending with `scopesNext` saying more exist.
// Run locally here and over Queue.connect by remote.test.js.
const test = require('node:test')
const assert = require('node:assert/strict')
const { openTemp } = require('./helpers.js')

const SCOPES = 2500
const nth = (i) => `0c000000-0000-0000-0000-${i.toString(16).padStart(12, '0')}`

test('stats pages through every scope once, the most pending first by default', async (t) => {
  const q = await openTemp(t)
  // Scope i < 10 holds 12 - i jobs (the known top), every other one 1.
  const items = []
  for (let i = 0; i < SCOPES; i++) {
    for (let n = 0; n < (i < 10 ? 12 - i : 1); n++) items.push({ kind: 'embed', scope: nth(i) })
  }
  for (let at = 0; at < items.length; at += 1000) await q.enqueueMany(items.slice(at, at + 1000))
  const st = await q.stats()
  assert.equal(st.total.pending, items.length)
  assert.equal(st.byKind.embed.pending, items.length)
  assert.equal(st.scopeOrder, 'pending')
  assert.equal(Object.keys(st.byScope).length, 100)
  assert.equal(typeof st.scopesNext, 'string')
  const top = Object.entries(st.byScope).slice(0, 10)
  assert.deepEqual(top.map(([s]) => s), [...Array(10).keys()].map(nth))
  assert.deepEqual(top.map(([, c]) => c.pending), [...Array(10).keys()].map((i) => 12 - i))
  assert.deepEqual(st.scopes.map((x) => x.scope), Object.keys(st.byScope))

  const seen = []
  let scopesAfter
  for (;;) {
    const page = await q.stats({ scopeOrder: 'name', scopeLimit: 700, scopesAfter })
    assert.ok(page.scopes.length <= 700)
    seen.push(...Object.keys(page.byScope))
    if (page.scopesNext === null) break
    scopesAfter = page.scopesNext
  }
  assert.deepEqual(seen, [...Array(SCOPES).keys()].map(nth))

  const found = await q.stats({ scopeOrder: 'name', scopePrefix: nth(0).slice(0, 35) })
  assert.deepEqual(Object.keys(found.byScope), [...Array(16).keys()].map(nth))
  assert.deepEqual((await q.stats({ scopeLimit: 0 })).byScope, {})
  await assert.rejects(q.stats({ scopeOrder: 'oldest' }), (e) => e.code === 'INVALID_ARGUMENT')
  await assert.rejects(q.stats({ scopeLimit: 10001 }), (e) => e instanceof RangeError || e.code === 'INVALID_ARGUMENT')
  await assert.rejects(q.stats({ scopeLimit: '10' }), TypeError)
  await assert.rejects(q.stats({ scopes: 10 }), (e) => e.code === 'INVALID_ARGUMENT')
})

test('stats fills oldestReadyMs only when asked, per kind with a due job', async (t) => {
  const q = await openTemp(t)
  // Ages against run-at times hours in the past: lower bounds and which
  // kinds appear are checked (no clock is injectable from Node).
  const now = Date.now()
  await q.enqueue('ocr', null, { runAt: now - 7_200_000 })
  await q.enqueue('ocr', null, { runAt: now - 3_600_000 })
  await q.enqueue('embed', null, { runAt: now - 600_000 })
  await q.enqueue('later', null, { runAt: now + 3_600_000 })
  assert.deepEqual((await q.stats()).oldestReadyMs, {})
  const st = await q.stats({ oldestReady: true })
  assert.deepEqual(Object.keys(st.oldestReadyMs).sort(), ['embed', 'ocr'])
  assert.ok(st.oldestReadyMs.ocr >= 7_200_000, 'the older of the two')
  assert.ok(st.oldestReadyMs.embed >= 600_000 && st.oldestReadyMs.embed < st.oldestReadyMs.ocr)
  assert.equal(st.byKind.later.pending, 1)
  const job = await q.leaseNext('w', { kinds: ['ocr'] })
  await q.complete(job)
  const age = (await q.stats({ oldestReady: true })).oldestReadyMs.ocr
  assert.ok(age >= 3_600_000 && age < 7_200_000, `${age}`)
  await assert.rejects(q.stats({ oldestReady: 1 }), TypeError)
})

'use strict'
// Fan-in (issue 43): `after` / `onChildDead`, enqueueGroup,
// resultsOfChildren, JobInfo.fanIn, the waiting state in stats and list,
// and a Worker whose handler reads its children's results. remote.test.js
// runs this suite again over a served queue. The behaviour in depth is the
// core's (core/tests/behaviour/fanin.rs).
const test = require('node:test')
const assert = require('node:assert/strict')
const { randomUUID } = require('node:crypto')
const { Worker, encodePayload } = require('..')
const { openTemp, sleep } = require('./helpers.js')

const invalid = (re, cls = Error) => (e) => e instanceof cls && e.code === 'INVALID_ARGUMENT' && (re === undefined || re.test(e.message))

const pages = (q, n) => q.enqueueMany(Array.from({ length: n }, (_, i) => ['page', { n: i }]))

/** Lease the page `id` (releasing the other pages leased with it). */
async function lease (q, id) {
  let found = null
  for (const j of await q.leaseMany('w', 1000, { kinds: 'page' })) {
    if (j.id === id) found = j
    else await q.release(j)
  }
  assert.ok(found, `${id} not leasable`)
  return found
}

const complete = async (q, id) => q.complete(await lease(q, id), { page: id })
const state = async (q, id) => (await q.get(id)).state

test('a parent waits until its last child completes, then reads their results', async (t) => {
  const q = await openTemp(t)
  const kids = await pages(q, 3)
  const p = await q.enqueue('index', 'doc-1', { after: kids })
  let info = await q.get(p)
  assert.equal(info.state, 'waiting')
  assert.deepEqual(info.fanIn, { unfinished: 3, total: 3, policy: 'fail' })
  assert.equal((await q.get(kids[0])).fanIn, null)
  assert.equal((await q.stats()).total.waiting, 1)
  assert.deepEqual((await q.list({ state: 'waiting' })).jobs.map((j) => j.id), [p])
  assert.equal(await q.leaseNext('w', { kinds: 'index' }), null)
  await complete(q, kids[1])
  await complete(q, kids[0])
  info = await q.get(p)
  assert.equal(info.state, 'waiting')
  assert.equal(info.fanIn.unfinished, 1)
  await complete(q, kids[2])
  info = await q.get(p)
  assert.equal(info.state, 'pending')
  assert.equal(info.fanIn.unfinished, 0)
  assert.equal(info.events.filter((e) => e.transition === 'children_done').length, 1)
  assert.equal((await q.stats()).total.waiting, 0)
  const job = await q.leaseNext('w', { kinds: 'index' })
  assert.equal(job.id, p)
  const page = await q.resultsOfChildren(job)
  assert.equal(page.next, null)
  assert.deepEqual(page.children.map((c) => [c.id, c.state, c.result]), kids.map((k) => [k, 'completed', { page: k }]))
  assert.equal(page.children[0].resultEncoding, 'value')
  assert.equal(page.children[0].lastError, null)
  assert.deepEqual(page.children[0].resultBytes, encodePayload({ page: kids[0] }))
})

test("onChildDead 'fail' kills the parent with the child's id and error", async (t) => {
  const q = await openTemp(t)
  const kids = await pages(q, 3)
  const p = await q.enqueue('index', null, { after: kids, onChildDead: 'fail' })
  await complete(q, kids[0])
  await q.fail(await lease(q, kids[1]), 'page 1 unreadable', { retryable: false })
  const info = await q.get(p)
  assert.equal(info.state, 'dead')
  assert.ok(info.lastError.includes(kids[1]) && info.lastError.includes('page 1 unreadable'), info.lastError)
  await complete(q, kids[2])
  assert.equal(await state(q, p), 'dead')
  const page = await q.resultsOfChildren(p)
  assert.deepEqual(page.children.map((c) => c.state), ['completed', 'dead', 'completed'])
  assert.equal(page.children[1].lastError, 'page 1 unreadable')
  assert.equal(page.children[1].result, null)
  assert.equal(page.children[1].resultBytes, null)
})

test("onChildDead 'cancel_rest' cancels the parent, then its unfinished children", async (t) => {
  const q = await openTemp(t)
  const kids = await pages(q, 4)
  const p = await q.enqueue('index', null, { after: kids, onChildDead: 'cancel_rest' })
  assert.equal((await q.get(p)).fanIn.policy, 'cancel_rest')
  await complete(q, kids[0])
  await q.fail(await lease(q, kids[1]), 'boom', { retryable: false })
  assert.equal(await state(q, p), 'cancelled')
  await q.reap()
  const states = []
  for (const k of kids) states.push(await state(q, k))
  assert.deepEqual(states, ['completed', 'dead', 'cancelled', 'cancelled'])
})

test("onChildDead 'ignore' runs the parent after every child, whatever the outcome", async (t) => {
  const q = await openTemp(t)
  const kids = await pages(q, 3)
  const p = await q.enqueue('index', null, { after: kids, onChildDead: 'ignore' })
  await q.fail(await lease(q, kids[0]), 'boom', { retryable: false })
  await q.cancel(kids[1], { reason: 'not needed' })
  assert.equal(await state(q, p), 'waiting')
  await complete(q, kids[2])
  assert.equal(await state(q, p), 'pending')
  assert.deepEqual((await q.resultsOfChildren(p)).children.map((c) => c.state), ['dead', 'cancelled', 'completed'])
})

test('a parent cancelled while waiting leaves its children be', async (t) => {
  const q = await openTemp(t)
  const kids = await pages(q, 2)
  const p = await q.enqueue('index', null, { after: kids })
  assert.equal(await q.cancel(p), 'cancelled')
  assert.equal(await state(q, p), 'cancelled')
  assert.equal(await state(q, kids[0]), 'pending')
  await complete(q, kids[0])
  await complete(q, kids[1])
  assert.equal(await state(q, p), 'cancelled')
})

test('enqueueGroup enqueues the children and their parent in one batch', async (t) => {
  const q = await openTemp(t)
  const { children, parent } = await q.enqueueGroup(
    [['page', 1], { kind: 'page', payload: 2, priority: 3 }],
    { kind: 'index', payload: 'doc', onChildDead: 'ignore' })
  assert.equal(children.length, 2)
  const info = await q.get(parent)
  assert.equal(info.state, 'waiting')
  assert.deepEqual(info.fanIn, { unfinished: 2, total: 2, policy: 'ignore' })
  assert.equal((await q.get(children[1])).priority, 3)
  assert.deepEqual((await q.resultsOfChildren(parent)).children.map((c) => c.id), children)
  await complete(q, children[0])
  await complete(q, children[1])
  assert.equal(await state(q, parent), 'pending')
  // A parent may also wait on jobs enqueued before its group.
  const older = await pages(q, 1)
  const g = await q.enqueueGroup([['page', 4]], { kind: 'index', after: older })
  assert.deepEqual((await q.resultsOfChildren(g.parent)).children.map((c) => c.id), [...older, ...g.children])
  const g2 = await q.enqueueGroup([['page', 5]], ['index'])
  assert.equal((await q.get(g2.parent)).fanIn.total, 1)
})

test('resultsOfChildren pages in enqueue order', async (t) => {
  const q = await openTemp(t)
  const kids = await pages(q, 25)
  const p = await q.enqueue('index', null, { after: kids })
  const got = []
  let cursor = null
  let n = 0
  do {
    const page = await q.resultsOfChildren(p, { cursor, limit: 10 })
    assert.ok(page.children.length <= 10)
    got.push(...page.children.map((c) => c.id))
    cursor = page.next
    n++
  } while (cursor !== null)
  assert.deepEqual(got, kids)
  assert.equal(n, 3)
  const all = await q.resultsOfChildren({ id: p }, { limit: 1000 })
  assert.ok(all.children.every((c) => c.state === 'pending'))
})

test('bad fan-in input is a typed error and writes nothing', async (t) => {
  const q = await openTemp(t)
  const kids = await pages(q, 2)
  const cases = [
    [() => q.enqueue('index', null, { after: [randomUUID()] }), (e) => e.code === 'NOT_FOUND'],
    [() => q.enqueueMany([['page', 1], { kind: 'index', after: [...kids, randomUUID()] }]), (e) => e.code === 'NOT_FOUND'],
    [() => q.enqueueGroup([['page', 1]], { kind: 'index', after: [randomUUID()] }), (e) => e.code === 'NOT_FOUND'],
    [() => q.enqueue('index', null, { after: kids, onChildDead: 'retry' }), invalid(/cancel_rest/)],
    [() => q.enqueueGroup([['page', 1]], { kind: 'index', onChildDead: 'x' }), invalid(/on_child_dead/)],
    [() => q.enqueueGroup([], ['index', null]), invalid()],
    [() => q.enqueue('index', null, { after: kids[0] }), invalid(/after must be an array/, TypeError)],
    [() => q.enqueue('index', null, { after: ['nope'] }), invalid()],
    [() => q.enqueue('index', null, { after: kids, onChildDead: 1 }), invalid(/onChildDead/, TypeError)],
    [() => q.enqueueGroup('page', ['index', null]), invalid(/enqueueGroup takes an array/, TypeError)],
    [() => q.enqueueGroup([['page', 1]], 'index'), invalid(/parent must be/, TypeError)],
    [() => q.enqueueGroup([['page', 1]], { kind: 'index', colour: 1 }), invalid(/unknown option "colour"/)],
    [() => q.enqueueGroup([['page', 1]], { kind: 'index', idempotencyKey: 'k' }), invalid()]
  ]
  for (const [call, check] of cases) {
    await assert.rejects(call(), check, String(call))
  }
  const total = (await q.stats()).total
  assert.equal(total.pending, 2)
  assert.equal(total.waiting, 0)
})

test('resultsOfChildren of bad parents, cursors and limits', async (t) => {
  const q = await openTemp(t)
  const kids = await pages(q, 1)
  const p = await q.enqueue('index', null, { after: kids })
  await assert.rejects(q.resultsOfChildren(randomUUID()), { code: 'NOT_FOUND' })
  await assert.rejects(q.resultsOfChildren(p, { limit: 0 }), invalid(/limit/, RangeError))
  await assert.rejects(q.resultsOfChildren(p, { limit: 1001 }), invalid(/limit/, RangeError))
  await assert.rejects(q.resultsOfChildren(p, { cursor: 'not a cursor' }), invalid())
  await assert.rejects(q.resultsOfChildren(p, { page: 2 }), invalid(/unknown option "page"/))
  await assert.rejects(q.resultsOfChildren(42), invalid(/parent/, TypeError))
  await assert.rejects(q.resultsOfChildren('nope'), invalid())
  // A job that waits on nothing has no children.
  assert.deepEqual(await q.resultsOfChildren(kids[0]), { children: [], next: null })
})

test("a Worker's handler reads its children's results through ctx.queue", async (t) => {
  const q = await openTemp(t)
  const { children, parent } = await q.enqueueGroup([0, 1, 2].map((i) => ['page', i]), ['index', 'doc'])
  let seen = null
  const w = new Worker(q, async (job, ctx) => {
    if (job.kind === 'page') return job.payload * 10
    seen = (await ctx.queue.resultsOfChildren(job)).children.map((c) => c.result)
    return 'indexed'
  }, { concurrency: 1, pollMs: 20 })
  const run = w.run()
  try {
    const deadline = Date.now() + 30000
    while (await state(q, parent) !== 'completed') {
      assert.ok(Date.now() < deadline, 'the parent never ran')
      await sleep(10)
    }
  } finally {
    await w.stop()
    await run
  }
  assert.deepEqual(seen, [0, 10, 20])
  for (const k of children) assert.equal(await state(q, k), 'completed')
})

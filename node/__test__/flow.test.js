'use strict'
// Flow control (setLimit, removeLimit, limits) and follow-up jobs
// (complete / completeMany with `then`, job.parent, list({ parent })).
// remote.test.js runs this suite again over a served queue.
const test = require('node:test')
const assert = require('node:assert/strict')
const { openTemp, sleep } = require('./helpers.js')

const S1 = '0190c0de-0000-7000-8000-0000000000a1'
const S2 = '0190c0de-0000-7000-8000-0000000000a2'

const invalid = (re, cls = Error) => (e) => e instanceof cls && e.code === 'INVALID_ARGUMENT' && (re === undefined || re.test(e.message))

test('a concurrency cap holds leases back exactly and frees a slot when one settles', async (t) => {
  const q = await openTemp(t)
  await q.enqueueMany([['embed', 1], ['embed', 2], ['embed', 3], ['other', 4]])
  await q.setLimit('kind:embed', { concurrency: 2 })
  const got = await q.leaseMany('w', 10, { kinds: 'embed' })
  assert.equal(got.length, 2)
  assert.equal(await q.leaseNext('w', { kinds: 'embed' }), null)
  assert.equal((await q.leaseNext('w')).kind, 'other', 'other kinds are not held back')
  const [status] = await q.limits()
  assert.deepEqual(status, {
    target: 'kind:embed',
    concurrency: 2,
    rate: null,
    burst: null,
    weight: null,
    leased: 2,
    held: 1,
    throttledConcurrency: status.throttledConcurrency,
    throttledRate: 0,
    ordered: false
  })
  assert.ok(status.throttledConcurrency >= 1)
  await q.complete(got[0])
  assert.equal((await q.leaseNext('w', { kinds: 'embed' })).payload, 3)
  // Replacing a limit keeps one entry; removing it answers whether there was one.
  await q.setLimit('kind:embed', { concurrency: 5 })
  assert.equal((await q.limits()).length, 1)
  assert.equal((await q.limits())[0].concurrency, 5)
  assert.equal(await q.removeLimit('kind:embed'), true)
  assert.equal(await q.removeLimit('kind:embed'), false)
  assert.deepEqual(await q.limits(), [])
})

test('a per-scope cap (scope:*) applies to each scope on its own', async (t) => {
  const q = await openTemp(t)
  for (const scope of [S1, S1, S2, S2]) await q.enqueue('embed', null, { scope })
  await q.setLimit('scope:*', { concurrency: 1 })
  const got = await q.leaseMany('w', 10)
  assert.deepEqual(got.map((j) => j.scope).sort(), [S1, S2])
  assert.equal(await q.leaseNext('w'), null)
  const [l] = await q.limits()
  assert.equal(l.target, 'scope:*')
  assert.equal(l.leased, 2)
  assert.equal(l.held, 2)
})

test('a rate limit lets its burst go, then one lease per token as time passes', async (t) => {
  const q = await openTemp(t)
  await q.enqueueMany([['embed', 1], ['embed', 2], ['embed', 3]])
  await q.setLimit('kind:embed', { rate: 10, burst: 2 })
  assert.equal((await q.leaseMany('w', 10)).length, 2)
  assert.equal(await q.leaseNext('w'), null)
  const [l] = await q.limits()
  assert.equal(l.rate, 10)
  assert.equal(l.burst, 2)
  assert.equal(l.concurrency, null)
  assert.ok(l.throttledRate >= 1)
  await sleep(250) // 10 a second: a token every 100 ms
  assert.equal((await q.leaseNext('w')).payload, 3)
})

test('a scope of weight 2 gets two leases for each one of a weight-1 scope', async (t) => {
  const q = await openTemp(t)
  const items = []
  for (let i = 0; i < 5; i++) items.push({ kind: 'embed', scope: S1 }, { kind: 'embed', scope: S2 })
  await q.enqueueMany(items)
  await q.setLimit(`scope:${S2}`, { weight: 2 })
  const got = []
  for (let i = 0; i < 6; i++) got.push(await q.leaseNext('w'))
  assert.equal(got.filter((j) => j.scope === S2).length, 4)
  assert.equal(got.filter((j) => j.scope === S1).length, 2)
  assert.deepEqual((await q.limits()).map((l) => [l.target, l.weight]), [[`scope:${S2}`, 2]])
})

test('complete with then enqueues follow-ups atomically, with their parent', async (t) => {
  const q = await openTemp(t)
  const id = await q.enqueue('ingest', { doc: 1 })
  const job = await q.leaseNext('w')
  assert.equal(job.parent, null)
  assert.equal((await q.get(id)).parent, null)
  await q.complete(job, { pages: 2 }, {
    then: [
      { kind: 'embed', payload: { page: 1 }, priority: 1 },
      ['embed', { page: 2 }],
      { kind: 'index', payload: Buffer.from('raw'), scope: S1, idempotencyKey: 'idx-1' }
    ]
  })
  const page = await q.list({ parent: id })
  assert.equal(page.jobs.length, 3)
  assert.ok(page.jobs.every((i) => i.parent === id))
  const first = await q.leaseNext('w', { kinds: 'embed' })
  assert.deepEqual(first.payload, { page: 1 })
  assert.equal(first.priority, 1)
  assert.equal(first.parent, id)
  const idx = await q.leaseNext('w', { kinds: 'index' })
  assert.equal(idx.scope, S1)
  assert.deepEqual(idx.payloadBytes, Buffer.from('raw'))
  assert.equal(idx.parent, id)
  assert.equal((await q.get(idx.id)).idempotencyKey, 'idx-1')
  // A follow-up's own follow-ups name it, not the first parent.
  await q.complete(first, undefined, { then: [['embed', { page: 3 }]] })
  const [grand] = (await q.list({ parent: first.id })).jobs
  assert.equal(grand.parent, first.id)
  assert.equal((await q.list({ parent: id })).jobs.length, 3)
  // An empty then is a plain completion.
  const other = await q.leaseNext('w', { kinds: 'embed' })
  await q.complete(other, null, { then: [] })
  assert.equal((await q.get(other.id)).state, 'completed')
})

test('a refused completion creates no follow-up: bad item, stale lease, cancel request', async (t) => {
  const q = await openTemp(t)
  const id = await q.enqueue('ingest', null)
  const job = await q.leaseNext('w')
  await assert.rejects(q.complete(job, null, { then: [['embed', 1], ['BAD KIND', 2]] }), invalid())
  assert.equal((await q.get(id)).state, 'leased')
  assert.equal((await q.list({ parent: id })).jobs.length, 0)
  await q.complete(job, null, { then: [['embed', 1]] })
  // A repeat (a retry) answers as the first and stages no follow-ups; a
  // stale lease is refused and stages none either.
  await q.complete(job, null, { then: [['embed', 2]] })
  assert.equal((await q.list({ parent: id })).jobs.length, 1)
  await assert.rejects(q.complete({ id, generation: job.generation + 1 }, null, { then: [['embed', 2]] }), { code: 'ABORTED' })
  assert.equal((await q.list({ parent: id })).jobs.length, 1)
  // A cancel request turns the completion into a cancel, with no follow-ups.
  const id2 = await q.enqueue('ingest', null)
  const job2 = await q.leaseNext('w', { kinds: 'ingest' })
  assert.equal(job2.id, id2)
  assert.equal(await q.cancel(id2), 'requested')
  await assert.rejects(q.complete(job2, null, { then: [['embed', 3]] }), { code: 'CANCELLED' })
  assert.equal((await q.get(id2)).state, 'cancelled')
  assert.equal((await q.list({ parent: id2 })).jobs.length, 0)
})

test('completeMany takes follow-ups per job; a bad one refuses only its job', async (t) => {
  const q = await openTemp(t)
  await q.enqueueMany([['ingest', 1], ['ingest', 2], ['ingest', 3]])
  const jobs = await q.leaseMany('w', 3)
  const codes = await q.completeMany(jobs, [10, 20, 30], {
    then: [[['embed', 'a'], ['embed', 'b']], null, [{ kind: 'BAD KIND' }]]
  })
  assert.deepEqual(codes, [null, null, 'INVALID_ARGUMENT'])
  assert.equal((await q.list({ parent: jobs[0].id })).jobs.length, 2)
  assert.equal((await q.list({ parent: jobs[1].id })).jobs.length, 0)
  assert.equal((await q.list({ parent: jobs[2].id })).jobs.length, 0)
  assert.equal((await q.get(jobs[2].id)).state, 'leased')
  assert.deepEqual(await q.completeMany([jobs[2]], undefined, { then: [[['embed', 'c']]] }), [null])
  const follow = await q.leaseMany('w', 10, { kinds: 'embed' })
  assert.deepEqual(follow.map((j) => [j.payload, j.parent]).sort(), [
    ['a', jobs[0].id], ['b', jobs[0].id], ['c', jobs[2].id]
  ])
})

test('bad limits and follow-ups are typed INVALID_ARGUMENT errors and change nothing', async (t) => {
  const q = await openTemp(t)
  for (const target of ['tenant:x', 'kind:', 'scope:not-a-uuid', 'scope:*/embed', '']) {
    await assert.rejects(q.setLimit(target, { concurrency: 1 }), invalid(), target)
  }
  await assert.rejects(q.setLimit(1, { concurrency: 1 }), invalid(/target/, TypeError))
  await assert.rejects(q.setLimit('kind:embed'), invalid(/setLimit takes/, TypeError))
  await assert.rejects(q.setLimit('kind:embed', {}), invalid(/sets nothing/))
  await assert.rejects(q.setLimit('kind:embed', { concurrency: '2' }), invalid(/concurrency/, TypeError))
  await assert.rejects(q.setLimit('kind:embed', { concurrency: 1.5 }), invalid(/concurrency/, RangeError))
  await assert.rejects(q.setLimit('kind:embed', { concurrency: 0 }), invalid(/concurrency/, RangeError))
  await assert.rejects(q.setLimit('kind:embed', { concurrency: 1000001 }), invalid(/concurrency/, RangeError))
  await assert.rejects(q.setLimit('kind:embed', { rate: 0 }), invalid(/rate/, RangeError))
  await assert.rejects(q.setLimit('kind:embed', { rate: NaN }), invalid(/rate/, RangeError))
  await assert.rejects(q.setLimit('kind:embed', { concurrency: 2, burst: 3 }), invalid(/burst/))
  await assert.rejects(q.setLimit('kind:embed', { weight: 2 }), invalid(/weight/))
  await assert.rejects(q.setLimit('scope:*', { weight: 1001 }), invalid(/weight/, RangeError))
  await assert.rejects(q.setLimit('kind:embed', { cap: 1 }), invalid(/unknown option "cap"/))
  await assert.rejects(q.removeLimit('bogus'), invalid())
  await assert.rejects(q.removeLimit(null), invalid(/target/, TypeError))
  assert.deepEqual(await q.limits(), [])

  const id = await q.enqueue('ingest', null)
  const job = await q.leaseNext('w')
  await assert.rejects(q.complete(job, null, { then: 'embed' }), invalid(/then must be an array/, TypeError))
  await assert.rejects(q.complete(job, null, { then: [42] }), invalid(/then\[0\]/, TypeError))
  await assert.rejects(q.complete(job, null, { then: [{ kind: 'embed', color: 'red' }] }), invalid(/unknown option "color"/))
  await assert.rejects(q.complete(job, null, { then: [{ kind: 'embed', priority: 256 }] }), invalid(/then\[0\]\.priority/, RangeError))
  await assert.rejects(q.complete(job, null, { then: [{ kind: 'embed', scope: 'nope' }] }), invalid())
  await assert.rejects(q.complete(job, null, { next: [] }), invalid(/unknown option "next"/))
  await assert.rejects(q.completeMany([job], null, { then: [] }), invalid(/1 jobs/))
  await assert.rejects(q.completeMany([job], null, { then: ['x'] }), invalid(/then\[0\]/, TypeError))
  await assert.rejects(q.list({ parent: 'not-an-id' }), invalid())
  assert.equal((await q.get(id)).state, 'leased')
  assert.equal((await q.stats()).total.pending, 0)
})

test('limits and follow-ups are durable across a reopen', { skip: process.env.TELHA_TEST_REMOTE === '1' }, async (t) => {
  const { Queue } = require('..')
  const { tempStore } = require('./helpers.js')
  const dir = tempStore(t)
  let q = await Queue.open(dir, { reaperIntervalMs: 0 })
  await q.setLimit('scope:*/kind:img:*', { concurrency: 3, rate: 0.5 })
  const id = await q.enqueue('ingest', null)
  await q.complete(await q.leaseNext('w'), null, { then: [['embed', 1]] })
  await q.close()
  q = await Queue.open(dir, { reaperIntervalMs: 0 })
  t.after(() => q.close())
  const [l] = await q.limits()
  assert.deepEqual([l.target, l.concurrency, l.rate, l.burst], ['scope:*/kind:img:*', 3, 0.5, null])
  assert.equal((await q.leaseNext('w')).parent, id)
})

test('a Worker handler adds follow-up jobs with ctx.followUp; a refused one fails its job', async (t) => {
  const { Worker } = require('..')
  const q = await openTemp(t)
  const ok = await q.enqueue('ingest', { n: 1 })
  const bad = await q.enqueue('ingest', { n: 2 })
  const thrower = await q.enqueue('ingest', { n: 3 })
  const w = new Worker(q, async (job, ctx) => {
    assert.throws(() => ctx.followUp('embed'), invalid(/followUp takes/, TypeError))
    if (job.payload.n === 1) {
      ctx.followUp([['embed', 'a']])
      ctx.followUp([{ kind: 'embed', payload: 'b', priority: 3 }])
    } else if (job.payload.n === 2) {
      ctx.followUp([{ kind: 'BAD KIND' }])
    } else {
      ctx.followUp([['embed', 'never']])
      throw new Error('no')
    }
    return 'done'
  }, { kinds: 'ingest', concurrency: 3, pollMs: 10 })
  let settled = 0
  const all = new Promise((resolve) => {
    const one = () => { if (++settled === 3) resolve() }
    w.on('completed', one)
    w.on('failed', one)
  })
  const run = w.run()
  await all
  await w.stop()
  await run
  assert.equal((await q.get(ok)).state, 'completed')
  const kids = (await q.list({ parent: ok })).jobs
  assert.deepEqual(kids.map((i) => i.payload).sort(), ['a', 'b'])
  assert.equal((await q.get(bad)).state, 'dead')
  assert.match((await q.get(bad)).lastError, /follow-up/)
  assert.equal((await q.list({ parent: bad })).jobs.length, 0)
  assert.notEqual((await q.get(thrower)).state, 'completed')
  assert.equal((await q.list({ parent: thrower })).jobs.length, 0)
})

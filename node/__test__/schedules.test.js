'use strict'
// Schedules (issue 17): put / get / list / update / pause / resume / delete,
// every bad input a typed INVALID_ARGUMENT, NOT_FOUND for unknown names, the
// store-free next fire times, a slot fired by runSchedules and leased with
// its schedule, list's schedule filter, and the background scheduler firing
// by itself. remote.test.js runs this suite again over Queue.connect.
const test = require('node:test')
const assert = require('node:assert/strict')
const { scheduleNextTimes } = require('..')
const { openTemp, sleep } = require('./helpers.js')

const SCOPE = '0190c0de-0000-7000-8000-0000000000a1'

/** An `INVALID_ARGUMENT` rejection of class `cls` (Error, TypeError, RangeError). */
function invalid (cls = Error) {
  return (e) => e instanceof cls && e.code === 'INVALID_ARGUMENT'
}

test('a schedule round-trips: put, get, list, update, pause, resume, delete', async (t) => {
  const q = await openTemp(t)
  assert.deepEqual(await q.scheduleList(), [])
  const before = Date.now()
  const s = await q.schedulePut({
    name: 'nightly',
    spec: '30 2 * * *',
    timezone: 'Europe/Lisbon',
    kind: 'compact',
    payload: { all: true, n: [1, 2] },
    scope: SCOPE,
    priority: 3,
    maxAttempts: 2,
    expiresInMs: 3_600_000,
    catchUp: 'all',
    maxCatchUp: 10
  })
  assert.equal(s.name, 'nightly')
  assert.equal(s.spec, '30 2 * * *')
  assert.equal(s.timezone, 'Europe/Lisbon')
  assert.equal(s.anchor, null)
  assert.equal(s.kind, 'compact')
  assert.deepEqual(s.payload, { all: true, n: [1, 2] })
  assert.equal(s.payloadEncoding, 'value')
  assert.equal(s.scope, SCOPE)
  assert.equal(s.priority, 3)
  assert.equal(s.maxAttempts, 2)
  assert.equal(s.expiresInMs, 3_600_000)
  assert.equal(s.catchUp, 'all')
  assert.equal(s.maxCatchUp, 10)
  assert.equal(s.paused, false)
  assert.ok(s.createdAt >= before - 1000 && s.createdAt <= Date.now() + 1000, `createdAt ${s.createdAt}`)
  assert.equal(s.updatedAt, s.createdAt)
  assert.equal(typeof s.cursor, 'number')
  assert.ok(s.nextSlot > s.createdAt && Number.isSafeInteger(s.nextSlot))
  assert.equal(s.nextSlot, scheduleNextTimes('30 2 * * *', { timezone: 'Europe/Lisbon', after: s.cursor, n: 1 })[0])
  for (const k of ['lastSlot', 'lastJob', 'lastFiredAt', 'lastError']) assert.equal(s[k], null, k)
  assert.equal(s.enqueued, 0)
  assert.equal(s.skipped, 0)

  // Defaults: unset fields read null, catch-up 'one'; a Buffer payload stays bytes.
  const anchor = new Date(Date.UTC(2026, 0, 1, 0, 15))
  const e = await q.schedulePut({ name: 'every-5m', spec: 'every 5m', kind: 'sync', anchor, payload: Buffer.from([1, 2]) })
  assert.equal(e.anchor, anchor.getTime())
  assert.equal(e.timezone, null)
  assert.equal(e.scope, null)
  assert.equal(e.priority, null)
  assert.equal(e.maxAttempts, null)
  assert.equal(e.expiresInMs, null)
  assert.equal(e.maxCatchUp, null)
  assert.equal(e.catchUp, 'one')
  assert.ok(Buffer.isBuffer(e.payload))
  assert.deepEqual([...e.payload], [1, 2])
  assert.equal(e.payloadEncoding, 'bytes')
  assert.equal((e.nextSlot - anchor.getTime()) % 300_000, 0)
  const p = await q.schedulePut({ name: 'a-first', spec: '@hourly', kind: 'sync', catchUp: 'skip', paused: true })
  assert.equal(p.paused, true)
  assert.equal(p.catchUp, 'skip')

  assert.deepEqual((await q.scheduleList()).map((i) => i.name), ['a-first', 'every-5m', 'nightly'])
  assert.deepEqual(await q.scheduleGet('nightly'), s)

  // Put again: replaced in place (created stays, the rest is the new schedule's).
  await sleep(5)
  const u = await q.schedulePut({ name: 'nightly', spec: '30 2 * * *', timezone: 'Europe/Lisbon', kind: 'compact-v2' })
  assert.equal(u.kind, 'compact-v2')
  assert.equal(u.priority, null)
  assert.equal(u.payload, null)
  assert.equal(u.createdAt, s.createdAt)
  assert.ok(u.updatedAt >= s.updatedAt)
  assert.equal((await q.scheduleList()).length, 3)

  const paused = await q.schedulePause('nightly')
  assert.equal(paused.paused, true)
  assert.equal((await q.schedulePause('nightly')).paused, true) // idempotent
  const resumed = await q.scheduleResume('nightly')
  assert.equal(resumed.paused, false)
  assert.ok(resumed.nextSlot > 0)

  assert.equal(await q.scheduleDelete('every-5m'), undefined)
  assert.deepEqual((await q.scheduleList()).map((i) => i.name), ['a-first', 'nightly'])
  await assert.rejects(q.scheduleGet('every-5m'), { code: 'NOT_FOUND' })
})

test('unknown schedule names are NOT_FOUND; a malformed one INVALID_ARGUMENT', async (t) => {
  const q = await openTemp(t)
  for (const call of ['scheduleGet', 'scheduleDelete', 'schedulePause', 'scheduleResume']) {
    await assert.rejects(q[call]('nope'), (e) => e.code === 'NOT_FOUND' && /nope/.test(e.message), call)
    await assert.rejects(q[call](''), invalid(), `${call} of an empty name`)
    await assert.rejects(q[call](7), invalid(TypeError), `${call} of a number`)
  }
})

test('every bad schedule is INVALID_ARGUMENT at put, and nothing is stored', async (t) => {
  const q = await openTemp(t)
  const ok = { name: 'n', spec: 'every 5m', kind: 'k' }
  const bad = [
    // The core's refusals: an Error.
    [{ ...ok, spec: '0 25 * * *' }, Error, /spec/],
    [{ ...ok, spec: '' }, Error],
    [{ ...ok, spec: 'every 0s' }, Error, /interval/],
    [{ ...ok, spec: 'every 500ms' }, Error, /1s/],
    [{ ...ok, spec: '0 3 * * *', timezone: 'Nowhere/Land' }, Error, /Nowhere/],
    [{ ...ok, timezone: 'UTC' }, Error],
    [{ ...ok, spec: '0 0 30 2 *' }, Error],
    [{ ...ok, name: '' }, Error],
    [{ ...ok, name: 'n'.repeat(201) }, Error, /200/],
    [{ ...ok, name: 'a\nb' }, Error],
    [{ ...ok, kind: 'Not A Kind!' }, Error],
    [{ ...ok, catchUp: 'some' }, Error, /catch_up/],
    [{ ...ok, scope: 'not-a-uuid' }, Error],
    [{ ...ok, expiresInMs: 0 }, Error],
    // Numbers outside their range: a RangeError naming the option.
    [{ ...ok, maxCatchUp: 0 }, RangeError, /maxCatchUp/],
    [{ ...ok, maxCatchUp: 10001 }, RangeError, /maxCatchUp/],
    [{ ...ok, maxCatchUp: 2.5 }, RangeError],
    [{ ...ok, maxAttempts: 0 }, RangeError, /maxAttempts/],
    [{ ...ok, maxAttempts: 2 ** 32 }, RangeError],
    [{ ...ok, priority: 1.5 }, RangeError, /priority/],
    [{ ...ok, priority: -1 }, RangeError],
    [{ ...ok, priority: 256 }, RangeError],
    [{ ...ok, priority: NaN }, RangeError],
    [{ ...ok, anchor: -1 }, RangeError, /anchor/],
    [{ ...ok, anchor: 1e300 }, RangeError],
    [{ ...ok, anchor: new Date(NaN) }, RangeError],
    [{ ...ok, expiresInMs: -5 }, RangeError, /expiresInMs/],
    [{ ...ok, expiresInMs: Infinity }, RangeError],
    [{ ...ok, expiresInMs: 2 ** 64 }, RangeError],
    // Wrong types: a TypeError.
    [{ ...ok, name: 5 }, TypeError, /name/],
    [{ ...ok, spec: undefined }, TypeError, /spec/],
    [{ name: 'n', spec: 'every 5m' }, TypeError, /kind/],
    [{ ...ok, priority: '3' }, TypeError],
    [{ ...ok, anchor: '2026-01-01' }, TypeError],
    [{ ...ok, paused: 1 }, TypeError],
    [{ ...ok, catchUp: 1 }, TypeError],
    // An unknown option: an Error naming it.
    [{ ...ok, every: '5m' }, Error, /"every"/],
    [{ ...ok, payload: new Map() }, TypeError]
  ]
  for (const [o, cls, msg] of bad) {
    await assert.rejects(q.schedulePut(o), (e) => invalid(cls)(e) && (!msg || msg.test(e.message)),
      `${JSON.stringify(o, (k, v) => typeof v === 'number' && !Number.isFinite(v) ? String(v) : v)}`)
  }
  await assert.rejects(q.schedulePut(), invalid(TypeError))
  await assert.rejects(q.schedulePut('nightly'), invalid(TypeError))
  assert.deepEqual(await q.scheduleList(), [])
  // The largest name is fine, and the store stays usable.
  assert.equal((await q.schedulePut({ ...ok, name: 'n'.repeat(200) })).name.length, 200)
  assert.deepEqual(await q.runSchedules(), { schedules: 0, enqueued: 0, skipped: 0, failed: 0 })
})

test('scheduleNextTimes answers the next fire times without a store', () => {
  assert.deepEqual(scheduleNextTimes('0 9 * * 1', { after: Date.UTC(2026, 0, 1), n: 1 }), [Date.UTC(2026, 0, 5, 9)])
  assert.deepEqual(scheduleNextTimes('0 9 * * 1', { after: new Date(Date.UTC(2026, 0, 1)), n: 2 }),
    [Date.UTC(2026, 0, 5, 9), Date.UTC(2026, 0, 12, 9)])
  assert.deepEqual(scheduleNextTimes('@daily', { after: 0, n: 2 }), [86_400_000, 172_800_000])
  assert.deepEqual(scheduleNextTimes('every 1h', { anchor: 900_000, after: 0, n: 2 }), [900_000, 4_500_000])
  assert.deepEqual(scheduleNextTimes('every 1h', { anchor: new Date(900_000), after: 0, n: 1 }), [900_000])
  // 02:30 in Lisbon in January is 02:30 UTC; in July (summer time) 01:30 UTC.
  assert.deepEqual(scheduleNextTimes('30 2 * * *', { timezone: 'Europe/Lisbon', after: Date.UTC(2026, 6, 1), n: 1 }), [Date.UTC(2026, 6, 1, 1, 30)])
  assert.deepEqual(scheduleNextTimes('*/10 * * * * *', { after: Date.UTC(2026, 2, 1, 0, 0, 0, 500), n: 2 }),
    [Date.UTC(2026, 2, 1, 0, 0, 10), Date.UTC(2026, 2, 1, 0, 0, 20)])
  // Defaults: five times after now.
  const now = Date.now()
  const five = scheduleNextTimes('* * * * * *')
  assert.equal(five.length, 5)
  assert.ok(five[0] > now - 1000 && five[0] <= now + 2000, `${five[0]} after ${now}`)
  five.slice(1).forEach((x, i) => assert.equal(x - five[i], 1000))
  assert.deepEqual(scheduleNextTimes('@daily', { n: 0 }), [])
  assert.equal(scheduleNextTimes('* * * * *', { after: 0, n: 1000 }).length, 1000)

  const bad = [
    [['0 25 * * *'], Error],
    [['0 3 * * *', { timezone: 'Nowhere/Land' }], Error],
    [['every 0s'], Error],
    [['every 5m', { timezone: 'UTC' }], Error],
    [['* * * * *', { n: 1001 }], RangeError],
    [['* * * * *', { n: -1 }], RangeError],
    [['* * * * *', { n: 1.5 }], RangeError],
    [['* * * * *', { after: -1 }], RangeError],
    [['* * * * *', { after: 1e300 }], RangeError],
    [['every 5m', { anchor: NaN }], RangeError],
    [[5], TypeError],
    [['* * * * *', { n: '5' }], TypeError],
    [['* * * * *', { count: 5 }], Error],
    [['* * * * *', 5], TypeError]
  ]
  for (const [args, cls] of bad) assert.throws(() => scheduleNextTimes(...args), invalid(cls), JSON.stringify(args))
})

test('a due slot is enqueued once by runSchedules, and the job carries its schedule', async (t) => {
  const q = await openTemp(t) // reaperIntervalMs: 0: no background scheduler
  const plain = await q.enqueue('tick', null)
  const put = await q.schedulePut({ name: 'tick', spec: '* * * * * *', kind: 'tick', payload: { n: 1 }, priority: 200 })
  await q.schedulePut({ name: 'other', spec: '@yearly', kind: 'tick' })
  await sleep(1100)
  const r = await q.runSchedules()
  assert.equal(r.schedules, 1)
  assert.equal(r.enqueued, 1) // catch-up 'one': one job however many slots passed
  assert.equal(r.failed, 0)
  const info = await q.scheduleGet('tick')
  assert.equal(info.enqueued, 1)
  assert.ok(info.lastSlot >= put.nextSlot && info.lastSlot % 1000 === 0)
  assert.ok(info.lastFiredAt >= info.lastSlot)
  assert.ok(info.nextSlot > info.lastSlot)
  assert.ok(info.cursor >= info.lastSlot)
  assert.equal(info.lastError, null)
  assert.equal(typeof info.lastJob, 'string')

  const first = await q.leaseNext('w1')
  assert.equal(first.id, plain)
  assert.equal(first.schedule, null)
  const job = await q.leaseNext('w1')
  assert.equal(job.id, info.lastJob)
  assert.equal(job.kind, 'tick')
  assert.deepEqual(job.payload, { n: 1 })
  assert.equal(job.priority, 200)
  assert.deepEqual(job.schedule, { name: 'tick', slot: info.lastSlot, missed: job.schedule.missed })
  assert.ok(Number.isSafeInteger(job.schedule.missed) && job.schedule.missed >= 0)
  assert.equal(await q.leaseNext('w1'), null)
  await q.complete(job, null)
  await q.complete(first, null)

  const got = await q.get(job.id)
  assert.deepEqual(got.schedule, job.schedule)
  assert.equal(got.idempotencyKey, `schedule:tick:${info.lastSlot}`)
  assert.equal((await q.get(plain)).schedule, null)

  assert.deepEqual((await q.list({ schedule: 'tick' })).jobs.map((j) => j.id), [job.id])
  assert.deepEqual((await q.list({ schedule: 'tick', state: 'completed' })).jobs.map((j) => j.id), [job.id])
  assert.deepEqual((await q.list({ schedule: 'other' })).jobs, [])
  assert.equal((await q.list({ state: 'completed' })).jobs.length, 2)
  await assert.rejects(q.list({ schedule: '' }), invalid())
  await assert.rejects(q.list({ schedule: 5 }), invalid(TypeError))

  // A paused schedule enqueues nothing; resumed, it does not catch up.
  await q.schedulePause('tick')
  await sleep(1100)
  assert.equal((await q.runSchedules()).enqueued, 0)
  await q.scheduleResume('tick')
  assert.equal((await q.runSchedules()).enqueued, 0)
  // Deleting the schedule keeps its jobs (and the filter still finds them).
  await q.scheduleDelete('tick')
  assert.equal((await q.list({ schedule: 'tick' })).jobs.length, 1)
})

test('tags and metadata of a schedule go on every slot\'s job; bad ones are refused at put', async (t) => {
  const q = await openTemp(t)
  const put = await q.schedulePut({ name: 'tagged', spec: '* * * * * *', kind: 'tick', tags: ['nightly', 'team-a', 'nightly'], metadata: { owner: 'ops' } })
  assert.deepEqual([put.tags, put.metadata], [['nightly', 'team-a'], { owner: 'ops' }])
  assert.deepEqual((await q.scheduleGet('tagged')).tags, ['nightly', 'team-a'])
  await sleep(1100)
  assert.equal((await q.runSchedules()).enqueued, 1)
  const job = await q.leaseNext('w1')
  assert.equal(job.schedule.name, 'tagged')
  assert.deepEqual([job.tags, job.metadata], [['nightly', 'team-a'], { owner: 'ops' }])
  assert.deepEqual((await q.list({ tag: 'team-a' })).jobs.map((j) => j.id), [job.id])
  assert.equal((await q.countTag('nightly')).leased, 1)
  const base = { name: 'bad', spec: '@daily', kind: 'k' }
  for (const [o, msg] of [
    [{ tags: Array.from({ length: 17 }, (_, i) => `t${i}`) }, /at most 16 tags/],
    [{ tags: ['x'.repeat(65)] }, /1 to 64 bytes/],
    [{ tags: ['a\nb'] }, /control character/],
    [{ metadata: { k: 'v'.repeat(5120) } }, /limit of 4096 bytes/]
  ]) {
    await assert.rejects(q.schedulePut({ ...base, ...o }), (e) => invalid()(e) && msg.test(e.message), msg.source)
  }
  await assert.rejects(q.schedulePut({ ...base, tags: 'nightly' }), invalid(TypeError))
  await assert.rejects(q.schedulePut({ ...base, metadata: { k: 1 } }), invalid(TypeError))
  assert.deepEqual((await q.scheduleList()).map((i) => i.name), ['tagged'])
})

test('with a reaper, the background scheduler fires schedules by itself', async (t) => {
  const q = await openTemp(t, { reaperIntervalMs: 30_000 })
  await q.schedulePut({ name: 'bg', spec: '* * * * * *', kind: 'tick', payload: 'hi' })
  const deadline = Date.now() + 10_000
  let jobs = []
  while (jobs.length === 0 && Date.now() < deadline) {
    await sleep(100)
    jobs = (await q.list({ schedule: 'bg' })).jobs
  }
  assert.ok(jobs.length >= 1, 'no job within 10 s')
  assert.equal(jobs[0].schedule.name, 'bg')
  assert.equal(jobs[0].payload, 'hi')
  const job = await q.leaseNext('w', { kinds: 'tick', waitMs: 5000 })
  assert.equal(job.schedule.name, 'bg')
  assert.ok((await q.scheduleGet('bg')).enqueued >= 1)
  await q.scheduleDelete('bg')
})

// Compiled by types.test.js with `tsc --noEmit --strict`: the package's types
// must describe this program, and reject the misuses marked @ts-expect-error.
import {
  Queue, Server, Worker, Permanent, Snooze, Retry, ErrorCode, encodePayload, configKeys, limits,
  type Job, type JobInfo, type TelhaError, type ErrorCodeName, type Settings, type ConfigKey, type Enqueued,
  type CancelReport, type Paused, type FindResult,
  Subscription, QueueEvents, type SubscriptionEvent, type QueueEvent, type Transition,
  scheduleNextTimes, type ScheduleInfo, type ScheduleRef, type RunReport, type ScheduleOptions, type CatchUp,
  type LimitStatus, type LimitSettings, type CompleteOptions,
  type FanIn, type ChildPage, type ChildResult, type EnqueuedGroup, type ChildDeadPolicy, type StateCounts
} from 'telha-jobs'

async function main (): Promise<void> {
  const q: Queue = await Queue.open('./telha-data', {
    leaseTtlMs: 60_000,
    backoffBaseMs: 1000,
    backoffFactor: 2,
    backoffCapMs: 60_000,
    maxPayloadBytes: 1 << 20,
    pruneBatch: 500,
    syncWrites: true,
    kinds: { 'ingest:pdf': { leaseTtlMs: 600_000, backoffBaseMs: 7_200_000, maxAttempts: 3 } },
    completedRetentionMs: false
  })
  // The deprecated nested form still type-checks.
  await Queue.open('./telha-data', { backoff: { baseMs: 1000 }, kinds: { embed: { backoff: { capMs: 5 } } } })
  const settings: Settings | null = q.settings()
  const ttl: number | undefined = settings?.leaseTtlMs
  const retention: number | false | undefined = settings?.completedRetentionMs
  const keys: ConfigKey[] = configKeys()
  const perKind: string[] = keys.filter((k) => k.perKind).map((k) => k.name)
  const latest: number = limits.maxInstantMs + limits.maxBatch
  const unsupported: ErrorCodeName = 'UNSUPPORTED_FORMAT'
  const made: Enqueued = await q.enqueueResult('embed', Buffer.from([1, 2]), { idempotencyKey: 'k' })
  const mades: Enqueued[] = await q.enqueueManyResults([['embed', 1]])
  console.log(ttl, retention, perKind, latest, unsupported, made.created, mades.length)
  const id: string = await q.enqueue('ingest:pdf', { doc: 's3://b/a.pdf', pages: [1, 2] }, { priority: 10, runAt: new Date() })
  const ids: string[] = await q.enqueueMany([['embed', Buffer.from('x')], { kind: 'embed', payload: null, delayMs: 5 }])
  const ac = new AbortController()
  const job: Job | null = await q.leaseNext('w', { kinds: 'ingest:*', waitMs: 5000, signal: ac.signal })
  if (job) {
    const leaseTtl: number = job.leaseTtlMs
    const encoding: 'unknown' | 'bytes' | 'value' = job.payloadEncoding
    console.log(leaseTtl, encoding)
    const timeout: number | null = job.timeoutMs
    const answers: Array<'renewed' | 'lost' | 'cancelled'> = await q.extendAnswers([job], 'w')
    await q.snooze(job, 1000)
    await q.fail(job, 'rate limited', { retryInMs: 5000 })
    console.log(timeout, answers)
    const renewed: boolean[] = await q.extend([job], 'w')
    if (renewed[0]) await q.complete(job, { ok: true })
    else await q.fail(job, new Error('lost'), { retryable: false })
  }
  const jobs: Job[] = await q.leaseMany('w', 10)
  const info: JobInfo | null = await q.get(id)
  const cursor: string | undefined = info?.cursor
  const resultEncoding: 'unknown' | 'bytes' | 'value' | undefined = info?.resultEncoding
  console.log(cursor, resultEncoding)
  const state: 'pending' | 'leased' | 'failed' | 'completed' | 'dead' | 'cancelled' | 'waiting' | undefined = info?.state
  const control: [string | undefined, number | undefined, boolean | undefined, number | undefined] =
    [info?.cancelRequested, info?.snoozes, info?.paused, info?.expiresAt]
  const outcome: 'cancelled' | 'requested' = await q.cancel(id, { reason: 'operator' })
  const report: CancelReport = await q.cancelMany({ kind: 'ingest:*', state: 'pending', reason: 'bad batch' })
  await q.delete(id)
  const changed: boolean = await q.pause({ kind: 'embed' }) || await q.resume({ scope: '0190c0de-0000-7000-8000-0000000000a1' })
  const paused: Paused = await q.paused()
  const pausedToo: Paused = (await q.stats()).paused
  const cancelled: number = (await q.stats()).total.cancelled + (await q.reap()).expiredUnstarted
  await q.enqueue('embed', {}, { expiresInMs: 60_000, expiresAt: new Date(Date.now() + 60_000) })
  await Queue.open('./telha-data', { deadRetentionMs: false, cancelledRetentionMs: 1000, kinds: { slow: { timeoutMs: 5000, maxLeaseTotalMs: false, maxSnoozes: 3 } } })
  console.log(control, outcome, report.cancelled + report.requested, changed, paused.kinds, pausedToo.scopes, cancelled)
  const page = await q.list({ state: 'dead', limit: 10 })
  const found: FindResult = await q.find('order-4711', { scope: '0190c0de-0000-7000-8000-0000000000a1', limit: 20 })
  const foundKinds: string[] = found.matched
  console.log(found.byId?.id, found.byKey?.state, found.byTag.next, foundKinds)
  const n: number = page.jobs.length + (await q.stats()).total.pending + jobs.length + ids.length
  const text: string = await q.metrics()
  const w = new Worker(q, async (j, { signal }) => {
    if (signal.aborted) throw new Permanent('stopped')
    if (j.attempts > 2) throw new Snooze(60_000)
    if (j.attempts > 1) throw new Retry(new Error('rate limited'), { afterMs: 5000 })
    return { kind: j.kind }
  }, { concurrency: 4, kinds: ['embed'] })
  w.on('failed', (_j: Job, e: unknown) => console.log(e))
  const running: Promise<void> = w.run()
  await w.stop({ graceMs: 1000 })
  await running
  try {
    await q.retry(id)
  } catch (e) {
    const code = (e as TelhaError).code
    if (code === ErrorCode.NOT_FOUND) console.log('gone')
  }
  console.log(state, n, text, encodePayload({ a: 1 }).length)
  await q.close()

  // @ts-expect-error kind must be a string
  await q.enqueue(5, {})
  // @ts-expect-error unknown option
  await q.enqueue('embed', {}, { delay: 5 })
  // @ts-expect-error unknown open option
  await Queue.open('./telha-data', { leaseTtl: 5 })
  // @ts-expect-error a per-kind option that is not per kind
  await Queue.open('./telha-data', { kinds: { embed: { syncWrites: true } } })
  // @ts-expect-error a duration is a number of milliseconds
  await Queue.open('./telha-data', { leaseTtlMs: '5m' })
  // @ts-expect-error extend takes leased jobs
  await q.extend(['id'], 'w')
  // @ts-expect-error no public constructor
  void new Queue()
  // @ts-expect-error pause names a kind or a scope, not both
  await q.pause({ kind: 'embed', scope: 's' })
  // @ts-expect-error cancelMany takes only unfinished states
  await q.cancelMany({ state: 'completed' })
  // @ts-expect-error Retry needs its delay
  void new Retry(new Error('x'))

  const host = await Queue.open('./telha-data')
  const server: Server = await host.serve({ listen: '127.0.0.1:0', token: 't', metricsListen: '127.0.0.1:0' })
  const remote: Queue = await Queue.connect(server.url, { token: 't', timeoutMs: 5000 })
  const where: string = remote.location + server.address
  const local: string | null = remote.path
  const isRemote: boolean = remote.remote && server.running
  console.log(where, local, isRemote)
  await remote.close()
  await server.close({ graceMs: 1000 })
  // @ts-expect-error unknown connect option
  await Queue.connect(server.url, { tokn: 't' })
  // @ts-expect-error listen is host:port text
  await host.serve({ listen: 7450 })
  // @ts-expect-error no public constructor
  void new Server()

  await waitAndWatch(host)
  await schedules(host)
}

/** Schedules (issue 17). */
async function schedules (q: Queue): Promise<void> {
  const o: ScheduleOptions = { name: 'nightly', spec: '30 2 * * *', timezone: 'Europe/Lisbon', kind: 'compact', payload: { all: true }, priority: 3 }
  const info: ScheduleInfo = await q.schedulePut(o)
  await q.schedulePut({ name: 'tick', spec: 'every 5m', kind: 'sync', anchor: new Date(), catchUp: 'all', maxCatchUp: 10, paused: true, expiresInMs: 60_000, maxAttempts: 2, scope: '0190c0de-0000-7000-8000-0000000000a1' })
  const zone: string | null = info.timezone
  const next: number | null = info.nextSlot
  const last: [number | null, string | null, number | null, string | null] = [info.lastSlot, info.lastJob, info.lastFiredAt, info.lastError]
  const policy: CatchUp = info.catchUp
  const counts: number = info.enqueued + info.skipped + info.createdAt + info.updatedAt + info.cursor
  const all: ScheduleInfo[] = await q.scheduleList()
  const paused: boolean = (await q.schedulePause('nightly')).paused || (await q.scheduleResume('nightly')).paused
  const got: ScheduleInfo = await q.scheduleGet('nightly')
  await q.scheduleDelete('tick')
  const report: RunReport = await q.runSchedules()
  const ran: number = report.schedules + report.enqueued + report.skipped + report.failed
  const times: number[] = scheduleNextTimes('0 9 * * 1', { after: Date.UTC(2026, 0, 1), n: 1, timezone: 'UTC' })
  const job = await q.leaseNext('w')
  const ref: ScheduleRef | null | undefined = job?.schedule
  const fromInfo: ScheduleRef | null | undefined = (await q.get('id'))?.schedule
  const page = await q.list({ schedule: 'nightly', state: 'completed' })
  console.log(zone, next, last, policy, counts, all.length, paused, got.payload, ran, times, ref?.slot, fromInfo?.missed, page.jobs.length)
  // @ts-expect-error an unknown catch-up policy
  await q.schedulePut({ name: 'n', spec: 'every 5m', kind: 'k', catchUp: 'some' })
  // @ts-expect-error the kind is required
  await q.schedulePut({ name: 'n', spec: 'every 5m' })
  // @ts-expect-error unknown option
  scheduleNextTimes('@daily', { count: 3 })
}

/** Waiting for jobs, events and progress (issue 18). */
async function waitAndWatch (q: Queue): Promise<void> {
  const id = await q.enqueue('embed', { doc: 1 })
  const ac = new AbortController()
  const info: JobInfo = await q.wait(id, { timeoutMs: 5000, signal: ac.signal })
  const progress: unknown = info.progress
  const raw: Buffer | null = info.progressBytes
  const done: JobInfo = await q.enqueueAndWait('embed', { doc: 2 }, { timeoutMs: 1000, priority: 3 })
  const sub: Subscription = await q.subscribe({ kinds: 'ingest:*', transitions: ['completed', 'dead'], buffer: 100 })
  for await (const ev of sub) {
    const e: SubscriptionEvent = ev
    const seq: number = e.seq + e.missed + e.attempt + e.ts
    const who: string | null = e.workerId
    const t: Transition = ev.transition
    console.log(seq, who, t, e.jobId, e.kind, e.scope, e.progress, e.progressBytes)
    break
  }
  const next: QueueEvent | null = await sub.next({ timeoutMs: 100 })
  sub.close()
  const events: QueueEvents = await q.events({ scopes: ['0190c0de-0000-7000-8000-0000000000a1'] })
  events.on('dead', (ev) => console.log(ev.jobId, ev.attempt))
  events.on('event', (ev: QueueEvent) => console.log(ev.transition))
  events.on('error', (e) => console.log(e))
  const also = new QueueEvents(q, { transitions: 'completed' })
  await also.ready
  await also.close()
  await events.close()
  const job = await q.leaseNext('w')
  if (job) await q.extend([job], 'w', { progress: [{ pct: 50 }] })
  if (job) await q.extendAnswers([job], 'w', { progress: [null] })
  const w = new Worker(q, async (_j, ctx) => {
    ctx.progress({ pct: 10 })
    ctx.progress('half')
    return null
  })
  const maxProgress: number = limits.maxProgressBytes
  console.log(progress, raw, done.state, next, w.workerId, maxProgress)
  // @ts-expect-error timeoutMs is a number of milliseconds
  await q.wait(id, { timeoutMs: '5s' })
  // @ts-expect-error unknown transition
  await q.subscribe({ transitions: ['finished'] })
  // @ts-expect-error unknown filter option
  await q.subscribe({ kind: 'embed' })
  // @ts-expect-error no public constructor
  void new Subscription()
}

// Flow control and follow-up jobs.
async function flow (q: Queue): Promise<void> {
  const settings: LimitSettings = { concurrency: 4, rate: 0.5, burst: 2 }
  await q.setLimit('scope:*/kind:img:*', settings)
  const removed: boolean = await q.removeLimit('kind:embed')
  const ls: LimitStatus[] = await q.limits()
  const cap: number | null = ls[0].concurrency
  const job = await q.leaseNext('w')
  const opts: CompleteOptions = { then: [['embed', { page: 1 }], { kind: 'embed', priority: 1 }] }
  if (job) {
    const parent: string | null = job.parent
    await q.complete(job, null, opts)
    await q.completeMany([job], [null], { then: [null] })
    const failed: Array<ErrorCodeName | null> = await q.failMany([job], ['boom'], { retryable: [false], retryInMs: [null] })
    await q.failMany([job], new Error('x'), { retryable: true, retryInMs: 500 })
    const released: Array<ErrorCodeName | null> = await q.releaseMany([job])
    void failed; void released
    const kids = await q.list({ parent: job.id })
    console.log(parent, kids.jobs[0].parent)
  }
  const w = new Worker(q, async (_j, ctx) => { ctx.followUp([['embed', 1]]) })
  console.log(removed, cap, ls[0].throttledRate, w.workerId)
  // @ts-expect-error concurrency is a number
  await q.setLimit('kind:embed', { concurrency: '2' })
  // @ts-expect-error unknown complete option
  if (job) await q.complete(job, null, { next: [] })
}

// Fan-in (issue 43).
async function fanIn (q: Queue): Promise<void> {
  const g: EnqueuedGroup = await q.enqueueGroup([['page', 1], { kind: 'page', payload: 2 }], { kind: 'index', onChildDead: 'ignore' })
  const kids: string[] = g.children
  const policy: ChildDeadPolicy = 'cancel_rest'
  const later: string = await q.enqueue('report', null, { after: [g.parent, ...kids], onChildDead: policy })
  const info = await q.get(later)
  const f: FanIn | null = info ? info.fanIn : null
  const waiting: 'waiting' | undefined = info?.state === 'waiting' ? info.state : undefined
  const counts: StateCounts = (await q.stats()).total
  const page: ChildPage = await q.resultsOfChildren(g.parent, { limit: 10 })
  const first: ChildResult | undefined = page.children[0]
  const next: string | null = page.next
  const more = await q.resultsOfChildren(info ?? later, { cursor: next })
  new Worker(q, async (job, ctx) => (await ctx.queue.resultsOfChildren(job)).children.map((c) => c.result))
  console.log(f?.unfinished, waiting, counts.waiting, first?.state, first?.lastError, more.children.length)
  // @ts-expect-error not a policy
  await q.enqueue('x', null, { after: kids, onChildDead: 'retry' })
  // @ts-expect-error after is an array of ids
  await q.enqueue('x', null, { after: g.parent })
  // @ts-expect-error unknown option
  await q.resultsOfChildren(g.parent, { page: 2 })
  await q.list({ state: 'waiting' })
}

void main
void flow
void fanIn

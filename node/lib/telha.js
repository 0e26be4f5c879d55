'use strict'
// telha-jobs for Node: the public API. The native layer (index.js, generated
// by napi-rs) does the work off the event loop (short calls on an embedded
// store on it, within a budget: LOOP_BUDGET_MS) and checks every number's
// range against the core's limits; this file checks option names and
// argument types (check.js has the rule), turns an AbortSignal into a
// native CancelToken, and shapes options. Types and docs: telha.d.ts.

const native = require('../index.js')
const { Worker, Permanent, Snooze, Retry } = require('./worker.js')
const { WAIT_KEYS, abortError, waitOptions, waitFor, Subscription, QueueEvents, openSubscription } = require('./events.js')
const {
  LIMITS, typeError, invalidArgument, options, str, optStr, optNum, optBool, strList, token
} = require('./check.js')
const { tokens, jobsFrom } = require('./batch.js')
const { putArgs, scheduleNextTimes, scheduleName } = require('./schedules.js')
const { ENQUEUE_KEYS, enqueueOptions, enqueueItems, completeArgs, completeManyArgs, limitSettings } = require('./flow.js')
const { injectOptions, injectItems } = require('./otel.js')
const { groupArgs, childrenArgs } = require('./fanin.js')
const { find } = require('./find.js')

/** The stable error codes, in the core's order. */
const ErrorCode = Object.freeze(Object.fromEntries(native.errorCodes().map((c) => [c, c])))

const LEASE_KEYS = new Set(['kinds', 'scope', 'waitMs', 'signal'])
const LIST_KEYS = new Set(['state', 'scope', 'kind', 'limit', 'after', 'schedule', 'parent', 'tag'])
const STATS_KEYS = new Set(['scopeOrder', 'scopeLimit', 'scopesAfter', 'scopePrefix', 'oldestReady'])
const FAIL_KEYS = new Set(['retryable', 'retryInMs'])
const CANCEL_KEYS = new Set(['reason'])
const CANCEL_MANY_KEYS = new Set(['kind', 'scope', 'state', 'reason', 'tag'])
const PAUSE_KEYS = new Set(['kind', 'scope'])
const EXTEND_KEYS = new Set(['progress'])
const ENQUEUE_WAIT_KEYS = new Set([...ENQUEUE_KEYS, ...WAIT_KEYS])
/** `extend`'s answers, by the native byte (queue.rs: EXTEND_RENEWED, EXTEND_LOST, EXTEND_CANCELLED). */
const EXTEND_ANSWERS = ['renewed', 'lost', 'cancelled']

let warnedBackoff = false

/**
 * Calls on the event loop (docs/node.md, "Calls on the event loop"). On an
 * embedded store without `syncWrites`, `enqueue`, `leaseNext` / `leaseMany`
 * without a wait, `complete` and `completeMany` (up to 64 jobs) run on the
 * JS thread through the native `*Now` calls and settle their Promise at
 * once: a trip to libuv's pool costs more than their work. The native side
 * answers `false` (nothing done) when a call must go to the pool: a remote
 * queue, `syncWrites`, RocksDB stopping or slowing writes, a larger batch.
 *
 * The JS thread spends at most LOOP_BUDGET_MS in them per turn of the
 * event loop, plus the one call that crosses it: past the budget the next
 * call first waits for the loop to turn (`setImmediate`), so timers and
 * I/O run between. `TELHA_JOBS_LOOP_BUDGET_MS=0` sends every call to the
 * pool, as before.
 */
const LOOP_BUDGET_MS = (() => {
  const v = process.env.TELHA_JOBS_LOOP_BUDGET_MS
  if (v === undefined || v === '') return 1
  const n = Number(v)
  if (!Number.isFinite(n) || n < 0) throw new RangeError(`TELHA_JOBS_LOOP_BUDGET_MS must be a number of milliseconds >= 0, got ${v}`)
  return n
})()
const loop = { spent: 0, armed: false, turn: null }
/**
 * What bench/lag.js reports: calls run on the loop, the longest, and those
 * over 1 ms; the calls the native side declined (sent to the pool).
 */
const loopStats = { calls: 0, maxMs: 0, over1ms: 0, yields: 0, declined: 0 }

function newTurn () {
  loop.armed = false
  loop.spent = 0
  const t = loop.turn
  loop.turn = null
  if (t) t.resolve()
}

/** Whether a call may run on the JS thread now (false: wait for `nextTurn()` first). */
function inBudget () {
  return loop.spent < LOOP_BUDGET_MS
}

/** Resolves once the event loop has turned and the budget is renewed. */
function nextTurn () {
  if (!loop.turn) {
    let resolve
    const promise = new Promise((r) => { resolve = r })
    loop.turn = { promise, resolve }
    loopStats.yields++
    if (!loop.armed) {
      loop.armed = true
      setImmediate(newTurn)
    }
  }
  return loop.turn.promise
}

/**
 * Count a JS-thread call that started at `t0` against this turn's budget
 * (`declined`: it did nothing and the pool call follows).
 */
function charge (t0, declined) {
  const took = performance.now() - t0
  loop.spent += took
  if (declined) {
    loopStats.declined++
  } else {
    loopStats.calls++
    if (took > loopStats.maxMs) loopStats.maxMs = took
    if (took > 1) loopStats.over1ms++
  }
  if (!loop.armed) {
    loop.armed = true
    setImmediate(newTurn)
  }
}

/**
 * Run `now` (a native `*Now` call) on the JS thread within the budget;
 * `false` when it declined, or when the budget is off.
 */
async function onLoop (now) {
  if (LOOP_BUDGET_MS === 0) return false
  while (!inBudget()) await nextTurn()
  const t0 = performance.now()
  let r = false
  try {
    r = now()
    return r
  } finally {
    charge(t0, r === false)
  }
}

/**
 * `Queue.open` options cross as they are: the native layer reads them
 * through the core's key table (names, types, ranges), so a key added to
 * the table needs nothing here. Only the deprecated nested `backoff` is
 * noticed, to say so once.
 */
function openOptions (o) {
  if (o === undefined || o === null) return undefined
  if (typeof o !== 'object' || Array.isArray(o)) throw typeError('Queue.open options must be an object')
  const nested = o.backoff != null ||
    (o.kinds !== null && typeof o.kinds === 'object' && Object.values(o.kinds).some((k) => k !== null && typeof k === 'object' && k.backoff != null))
  if (nested && !warnedBackoff) {
    warnedBackoff = true
    process.emitWarning('Queue.open: the nested `backoff: { baseMs, factor, capMs }` is deprecated; use backoffBaseMs, backoffFactor and backoffCapMs (also per kind)',
      { type: 'DeprecationWarning', code: 'TELHA_NESTED_BACKOFF' })
  }
  return o
}

function leaseFilters (o) {
  return {
    kinds: o.kinds === undefined || o.kinds === null ? undefined : strList(o.kinds, 'kinds'),
    scopes: o.scope === undefined || o.scope === null ? undefined : strList(o.scope, 'scope')
  }
}

/** `{ kind }` or `{ scope }`: what pause and resume name (the native side checks exactly one). */
function pauseTarget (target, name) {
  if (target === undefined || target === null) throw typeError(`${name} takes { kind } (an exact kind or family:*) or { scope }`)
  const o = options(target, `${name} target`, PAUSE_KEYS)
  return { kind: optStr(o.kind, 'kind'), scope: optStr(o.scope, 'scope') }
}

const CONNECT_KEYS = new Set(['token', 'timeoutMs', 'caCert', 'autoIdempotencyKey'])
const SERVE_KEYS = new Set(['listen', 'token', 'tlsCert', 'tlsKey', 'metricsListen', 'ui', 'uiReadOnly'])

/** How long `Server.close()` lets calls in flight finish by default. */
const CLOSE_GRACE_MS = 5000

/**
 * A server started by `queue.serve()`: other processes reach the queue at
 * `url` with `Queue.connect(url)`. See telha.d.ts.
 */
class Server {
  #native

  /** @private Use `queue.serve()`. */
  constructor (nativeServer) {
    if (!(nativeServer instanceof native.NativeServer)) throw typeError('use queue.serve(options) to start a server')
    this.#native = nativeServer
  }

  get address () { return this.#native.address }
  get url () {
    const a = this.#native.address
    return a.startsWith('unix:') ? a : `${this.#native.tls ? 'https' : 'http'}://${a}`
  }
  get metricsAddress () { return this.#native.metricsAddress }
  get uiUrl () { return this.#native.uiUrl }
  get running () { return this.#native.running }

  async close (opts) {
    const o = options(opts, 'close options', new Set(['graceMs']))
    await this.#native.close(optNum(o.graceMs, 'graceMs') ?? CLOSE_GRACE_MS)
  }
}

/**
 * An open store. Every method that touches the store returns a Promise;
 * short calls on an embedded store run on the loop (LOOP_BUDGET_MS), the
 * rest off it. See telha.d.ts for the documentation.
 */
class Queue {
  #native

  /** @private Use `Queue.open`. */
  constructor (nativeQueue) {
    if (!(nativeQueue instanceof native.NativeQueue)) throw typeError('use Queue.open(path, options) to open a queue')
    this.#native = nativeQueue
  }

  static async open (path, opts) {
    str(path, 'path')
    return new Queue(await native.NativeQueue.open(path, openOptions(opts)))
  }

  static async connect (url, opts) {
    // Several servers: an array of URLs or one comma-separated string (the
    // client checks each item and names a bad one).
    if (Array.isArray(url)) {
      url.forEach((u, i) => {
        str(u, `url[${i}]`)
        if (u.includes(',')) throw typeError(`url[${i}]: an item of a list of URLs contains a comma`)
      })
      url = url.join(',')
    }
    str(url, 'url')
    const o = options(opts, 'Queue.connect options', CONNECT_KEYS)
    return new Queue(await native.NativeQueue.connect(url, {
      token: optStr(o.token, 'token'),
      timeoutMs: optNum(o.timeoutMs, 'timeoutMs'),
      caCert: optStr(o.caCert, 'caCert'),
      autoIdempotencyKey: optBool(o.autoIdempotencyKey, 'autoIdempotencyKey')
    }))
  }

  async serve (opts) {
    const o = options(opts, 'serve options', SERVE_KEYS)
    const s = await this.#native.serve({
      listen: optStr(o.listen, 'listen'),
      token: optStr(o.token, 'token'),
      tlsCert: optStr(o.tlsCert, 'tlsCert'),
      tlsKey: optStr(o.tlsKey, 'tlsKey'),
      metricsListen: optStr(o.metricsListen, 'metricsListen'),
      ui: optBool(o.ui, 'ui'),
      uiReadOnly: optBool(o.uiReadOnly, 'uiReadOnly')
    })
    return new Server(s)
  }

  get path () { return this.#native.path }
  get location () { return this.#native.location }
  get remote () { return this.#native.remote }
  get closed () { return this.#native.closed }
  /** Whether short calls would run on the event loop now (see LOOP_BUDGET_MS). */
  get runsOnLoop () { return LOOP_BUDGET_MS > 0 && this.#native.runsNow }

  async close () { await this.#native.close() }

  /** The settings in force (see telha.d.ts); null for a remote queue. */
  settings () { return this.#native.settings() }

  async enqueue (kind, payload, opts) {
    str(kind, 'kind')
    // No options cross as undefined: an object of 8 undefined fields costs
    // a napi read each.
    const eo = injectOptions(opts === undefined || opts === null ? undefined : enqueueOptions(options(opts, 'enqueue options', ENQUEUE_KEYS), 'options'))
    if (LOOP_BUDGET_MS > 0) {
      // A loop, not an if: every waiter resumes in the same turn, and
      // those past the budget again wait for the next one (in order).
      while (loop.spent >= LOOP_BUDGET_MS) await nextTurn()
      const t0 = performance.now()
      let id = false
      try {
        id = this.#native.enqueueIdNow(kind, payload, eo)
      } finally {
        charge(t0, id === false)
      }
      if (id !== false) return id
    }
    return (await this.#native.enqueue(kind, payload, eo)).id
  }

  async enqueueResult (kind, payload, opts) {
    str(kind, 'kind') // options as in enqueue
    const eo = injectOptions(opts === undefined || opts === null ? undefined : enqueueOptions(options(opts, 'enqueue options', ENQUEUE_KEYS), 'options'))
    const r = await onLoop(() => this.#native.enqueueNow(kind, payload, eo))
    return r !== false ? r : this.#native.enqueue(kind, payload, eo)
  }

  async enqueueMany (items) {
    const { ids } = await this.#enqueueMany(items)
    return ids.length ? ids.split(',') : []
  }

  async enqueueManyResults (items) {
    const { ids, created } = await this.#enqueueMany(items)
    if (!ids.length) return []
    return ids.split(',').map((id, i) => ({ id, created: created[i] === 1, debounced: created[i] === 2 }))
  }

  async #enqueueMany (items) {
    const { kinds, payloads, opts } = injectItems(enqueueItems(items))
    // One kind for the whole batch (the common case) crosses as one string.
    const one = kinds.length > 0 && kinds.every((k) => k === kinds[0])
    return this.#native.enqueueMany(one ? kinds[0] : kinds, payloads, opts)
  }

  async leaseNext (workerId, opts) {
    const jobs = await this.#lease(workerId, 1, opts)
    return jobs.length ? jobs[0] : null
  }

  /**
   * A `PollJobs` stream (a remote queue only): what a Worker leases ahead
   * through (lib/prefetch.js). `onLeases` is called on the loop when
   * leases arrived (`take()` them), the stream failed or it ended. With
   * `floor` (the Worker's concurrency) the server keeps about 100 ms of
   * the handlers' work unsettled, between `floor` and `capacity`.
   * @internal
   */
  _pollJobs (workerId, capacity, filters, onLeases, floor) {
    const { kinds, scopes } = leaseFilters(options(filters, 'lease options', LEASE_KEYS))
    return this.#native.pollJobs(str(workerId, 'workerId'), capacity, kinds, scopes, onLeases, floor)
  }

  async leaseMany (workerId, max, opts) {
    if (typeof max !== 'number') throw typeError(`max must be a number of jobs from 1 to ${LIMITS.maxBatch}`)
    return this.#lease(workerId, max, opts)
  }

  async #lease (workerId, max, opts) {
    str(workerId, 'workerId')
    const o = options(opts, 'lease options', LEASE_KEYS)
    const { kinds, scopes } = leaseFilters(o)
    // Infinity (or more than the core's longest duration) waits for good.
    const waitMs = optNum(o.waitMs, 'waitMs') ?? 0
    const signal = o.signal
    if (signal !== undefined && signal !== null && !(signal instanceof AbortSignal)) throw typeError('signal must be an AbortSignal')
    if (!signal) {
      if (waitMs !== 0) return jobsFrom(await this.#native.leaseWait(workerId, max, kinds, scopes, waitMs, null))
      const r = await onLoop(() => this.#native.leaseNow(workerId, max, kinds, scopes))
      return jobsFrom(r !== false ? r : await this.#native.leaseMany(workerId, max, kinds, scopes))
    }
    // The signal cancels the native wait; a job already taken is still
    // returned (never dropped while leased).
    const cancel = new native.CancelToken()
    if (signal.aborted) cancel.cancel()
    const onAbort = () => cancel.cancel()
    signal.addEventListener('abort', onAbort, { once: true })
    try {
      return jobsFrom(await this.#native.leaseWait(workerId, max, kinds, scopes, waitMs, cancel))
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
  }

  async extend (jobs, workerId, opts) {
    const answers = await this.#extend(jobs, workerId, opts)
    return Array.from(answers, (a) => a === 0)
  }

  async extendAnswers (jobs, workerId, opts) {
    const answers = await this.#extend(jobs, workerId, opts)
    return Array.from(answers, (a) => EXTEND_ANSWERS[a])
  }

  async #extend (jobs, workerId, opts) {
    const { ids, gens } = tokens(jobs, 'jobs')
    str(workerId, 'workerId')
    if (opts === undefined || opts === null) return this.#native.extend(ids, gens, workerId)
    // Progress reports, one per job (null / undefined: none): a Buffer is
    // stored untouched, a value with the payload convention (native side).
    const { progress } = options(opts, 'extend options', EXTEND_KEYS)
    if (progress !== undefined && progress !== null && !Array.isArray(progress)) {
      throw typeError('progress must be an array: one report (or null) per job')
    }
    return this.#native.extend(ids, gens, workerId, progress ?? null)
  }

  async complete (job, result, opts) {
    const t = token(job, 'job')
    // Follow-up jobs (`then`) cross as enqueueMany's parallel arrays.
    const then = opts === undefined || opts === null ? [] : completeArgs(opts)
    const r = await onLoop(() => this.#native.completeNow(t.id, t.generation, result, ...then))
    if (r === false) await this.#native.complete(t.id, t.generation, result, ...then)
  }

  async completeMany (jobs, results, opts) {
    const { ids, gens, count } = tokens(jobs, 'jobs')
    const then = opts === undefined || opts === null ? [] : completeManyArgs(opts, count)
    if (results !== undefined && results !== null) {
      if (!Array.isArray(results)) throw typeError('results must be an array (one result per job) or undefined')
      if (results.length !== count) throw invalidArgument(`results has ${results.length} entries for ${count} jobs`)
    }
    if (count === 0) return []
    // Results that are all null / undefined (the Worker's handlers often
    // return nothing) cross as one byte per job instead of a value each.
    let nulls = null
    if (results !== undefined && results !== null) {
      nulls = new Uint8Array(count)
      for (let i = 0; i < count; i++) {
        const r = results[i]
        if (r === null) nulls[i] = 1
        else if (r !== undefined) { nulls = null; break }
      }
    }
    const rs = nulls ? null : (results ?? undefined)
    let codes = await onLoop(() => this.#native.completeManyNow(ids, gens, rs, nulls, ...then))
    if (codes === false) codes = await this.#native.completeMany(ids, gens, rs, nulls, ...then)
    return codes ?? new Array(count).fill(null)
  }

  async fail (job, reason, opts) {
    const t = token(job, 'job')
    if (reason instanceof Error) reason = reason.message
    str(reason, 'reason')
    const o = options(opts, 'fail options', FAIL_KEYS)
    const retryable = optBool(o.retryable, 'retryable') ?? true
    await this.#native.fail(t.id, t.generation, reason, retryable, optNum(o.retryInMs, 'retryInMs'))
  }

  async release (job) {
    const t = token(job, 'job')
    await this.#native.release(t.id, t.generation)
  }

  async failMany (jobs, reasons, opts) {
    const { ids, gens, count } = tokens(jobs, 'jobs')
    const o = options(opts, 'failMany options', FAIL_KEYS)
    const each = (v, what, one) => {
      if (!Array.isArray(v)) return new Array(count).fill(one(v, what))
      if (v.length !== count) throw invalidArgument(`${what} has ${v.length} entries for ${count} jobs`)
      return v.map((x, i) => one(x, `${what}[${i}]`))
    }
    const reason = (r, what) => str(r instanceof Error ? r.message : r, what)
    const rs = each(reasons, 'reasons', reason)
    const retryable = each(o.retryable ?? true, 'retryable', (b, what) => optBool(b, what) ?? true)
    const retryIn = each(o.retryInMs ?? null, 'retryInMs', (n, what) => optNum(n, what) ?? null)
    if (count === 0) return []
    const codes = await this.#native.failMany(ids, gens, rs, retryable, retryIn)
    return codes ?? new Array(count).fill(null)
  }

  async releaseMany (jobs) {
    const { ids, gens, count } = tokens(jobs, 'jobs')
    if (count === 0) return []
    const codes = await this.#native.releaseMany(ids, gens)
    return codes ?? new Array(count).fill(null)
  }

  async snooze (job, delayMs) {
    const t = token(job, 'job')
    if (typeof delayMs !== 'number') throw typeError(`delayMs must be a number of milliseconds, got ${typeof delayMs}`)
    await this.#native.snooze(t.id, t.generation, delayMs)
  }

  async cancel (id, opts) {
    str(id, 'id')
    const o = options(opts, 'cancel options', CANCEL_KEYS)
    return this.#native.cancel(id, optStr(o.reason, 'reason') ?? '')
  }

  async cancelMany (filter) {
    const o = options(filter, 'cancelMany filter', CANCEL_MANY_KEYS)
    return this.#native.cancelMany({
      kind: optStr(o.kind, 'kind'),
      scope: optStr(o.scope, 'scope'),
      state: optStr(o.state, 'state'),
      reason: optStr(o.reason, 'reason'),
      tag: optStr(o.tag, 'tag')
    })
  }

  async delete (id) {
    await this.#native.delete(str(id, 'id'))
  }

  async promote (id) {
    await this.#native.promote(str(id, 'id'))
  }

  async reschedule (id, runAt) {
    const at = runAt instanceof Date ? runAt.getTime() : runAt
    if (typeof at !== 'number') throw typeError(`runAt must be ms since the epoch or a Date, got ${typeof runAt}`)
    await this.#native.reschedule(str(id, 'id'), at)
  }

  async setPriority (id, priority) {
    if (typeof priority !== 'number') throw typeError(`priority must be a number, got ${typeof priority}`)
    await this.#native.setPriority(str(id, 'id'), priority)
  }

  async pause (target) {
    const t = pauseTarget(target, 'pause')
    return this.#native.pause(t.kind, t.scope)
  }

  async resume (target) {
    const t = pauseTarget(target, 'resume')
    return this.#native.resume(t.kind, t.scope)
  }

  async paused () { return this.#native.paused() }

  async retry (id) {
    await this.#native.retry(str(id, 'id'))
  }

  async get (id) {
    return this.#native.get(str(id, 'id'))
  }

  async wait (id, opts) {
    str(id, 'id')
    return waitFor(this.#native, id, waitOptions(options(opts, 'wait options', WAIT_KEYS)))
  }

  async enqueueAndWait (kind, payload, opts) {
    const o = options(opts, 'enqueueAndWait options', ENQUEUE_WAIT_KEYS)
    const { timeoutMs, signal, ...eo } = o
    const w = waitOptions({ timeoutMs, signal })
    if (w.signal && w.signal.aborted) throw abortError(w.signal) // nothing enqueued
    const id = await this.enqueue(kind, payload, eo)
    return waitFor(this.#native, id, w)
  }

  async subscribe (filter) { return openSubscription(this.#native, filter) }

  async events (filter) {
    const ev = new QueueEvents(this, filter)
    await ev.ready
    return ev
  }

  async list (opts) {
    const o = options(opts, 'list options', LIST_KEYS)
    const page = await this.#native.list({
      state: optStr(o.state, 'state'),
      scope: optStr(o.scope, 'scope'),
      kind: optStr(o.kind, 'kind'),
      limit: optNum(o.limit, 'limit'),
      after: optStr(o.after, 'after'),
      schedule: optStr(o.schedule, 'schedule'),
      parent: optStr(o.parent, 'parent'),
      tag: optStr(o.tag, 'tag')
    })
    // `next` is null at the end, as documented (napi leaves a None out).
    page.next ??= null
    return page
  }

  // Schedules (schedules.js checks the options; the core the rest).
  async schedulePut (opts) { return this.#native.schedulePut(...putArgs(opts)) }
  async scheduleGet (name) { return this.#native.scheduleGet(scheduleName(name)) }
  async scheduleList () { return this.#native.scheduleList() }
  async scheduleDelete (name) { await this.#native.scheduleDelete(scheduleName(name)) }
  async schedulePause (name) { return this.#native.schedulePause(scheduleName(name)) }
  async scheduleResume (name) { return this.#native.scheduleResume(scheduleName(name)) }
  async runSchedules () { return this.#native.runSchedules() }

  // Flow control and fan-in (flow.js and fanin.js check the arguments; the core the rest).
  async setLimit (target, settings) { await this.#native.setLimit(str(target, 'target'), limitSettings(settings)) }
  async removeLimit (target) { return this.#native.removeLimit(str(target, 'target')) }
  async limits () { return this.#native.limits() }
  async enqueueGroup (children, parent) { return this.#native.enqueueGroup(...groupArgs(children, parent)) }
  async resultsOfChildren (parent, opts) { return this.#native.resultsOfChildren(...childrenArgs(parent, opts)) }

  async find (text, opts) { return find(this.#native, text, opts) }
  async countTag (tag, opts) { return this.#native.countTag(str(tag, 'tag'), optStr(options(opts, 'countTag options', new Set(['scope'])).scope, 'scope')) }
  async backup (dir) { return this.#native.backup(str(dir, 'dir')) }
  async reap () { return this.#native.reap() }
  async purge (state, before) {
    const ms = optNum(before instanceof Date ? before.getTime() : before, 'before')
    if (ms === undefined) throw typeError('purge needs before: a Date or a number of ms since the epoch')
    return this.#native.purge(str(state, 'state'), ms)
  }
  async stats (opts) {
    const o = options(opts, 'stats options', STATS_KEYS)
    const s = await this.#native.stats({
      scopeOrder: optStr(o.scopeOrder, 'scopeOrder'),
      scopeLimit: optNum(o.scopeLimit, 'scopeLimit'),
      scopesAfter: optStr(o.scopesAfter, 'scopesAfter'),
      scopePrefix: optStr(o.scopePrefix, 'scopePrefix'),
      oldestReady: optBool(o.oldestReady, 'oldestReady')
    })
    // byScope in the page's order (the native map has none); `scopesNext`
    // is null on the last page, as documented (napi leaves a None out).
    s.byScope = Object.fromEntries(s.scopes.map((x) => [x.scope, x.counts]))
    s.scopesNext ??= null
    return s
  }
  async metrics () { return this.#native.metrics() }
}

module.exports = {
  Queue,
  Server,
  Worker,
  Subscription,
  QueueEvents,
  Permanent,
  Snooze,
  Retry,
  ErrorCode,
  limits: LIMITS,
  configKeys: () => native.configKeys(),
  scheduleNextTimes,
  encodePayload: (value) => native.encodePayload(value),
  /**
   * Not API (bench/lag.js): counters of the calls run on the event loop
   * since `require`, and the native side's reasons for the declined ones
   * with what its stall watchers read (`native`).
   */
  __loopStats: () => ({ ...loopStats, native: native.loopDeclines() }),
  decodePayload: (bytes) => {
    if (!(bytes instanceof Uint8Array)) throw typeError('decodePayload takes a Buffer or Uint8Array')
    return native.decodePayload(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
  }
}

'use strict'
// The Worker: leases jobs, runs an async handler per job (up to
// `concurrency` at once), heartbeats every lease well inside its TTL with one
// batched `extend`, completes with the handler's return value, fails on a
// throw (a `Permanent` error fails for good; `Snooze` and `Retry` from
// outcomes.js say when to run it again), aborts the handler's signal when
// its lease is lost (code ABORTED), its job is cancelled (CANCELLED, seen at
// a heartbeat) or it runs past its kind's timeout (TIMEOUT: the job is then
// failed retryably at once), and on `stop()` releases what is left without
// spending attempts. Types and docs: telha.d.ts.

const { EventEmitter } = require('node:events')
const os = require('node:os')
const crypto = require('node:crypto')
const native = require('../index.js')
const { LIMITS, TIMER_MAX_MS, typeError, rangeError, invalidArgument, options, str, optInt, optMs, strList, longTimeout } = require('./check.js')
const { Permanent, Snooze, Retry, reasonOf } = require('./outcomes.js')

/** The largest completion batch that runs on the event loop (node/src/now.rs: NOW_MAX_BATCH). */
const FLUSH_AT = 64
const WORKER_KEYS = new Set(['workerId', 'kinds', 'scope', 'concurrency', 'pollMs', 'heartbeatMs'])
const STOP_KEYS = new Set(['graceMs'])

function abortError (message, code, name = 'AbortError') {
  const e = new Error(message)
  e.name = name
  e.code = code
  return e
}

/**
 * What the Worker keys a running job by: its lease generation and id. A lease
 * that expired under its handler can come back to this Worker as the next
 * generation while the old handler still runs or settles; keyed by id alone,
 * the old delivery's settle removed the new one (never heartbeated again,
 * its signal never aborted, the job expired until it was dead).
 */
function deliveryKey (job) {
  return `${job.generation}:${job.id}`
}

function deferred () {
  let resolve
  const promise = new Promise((r) => { resolve = r })
  return { promise, resolve }
}

/** The handler's signal, made on first use (most handlers never look). */
function signalOf (entry) {
  if (!entry.ctl) {
    entry.ctl = new AbortController()
    if (entry.abortReason) entry.ctl.abort(entry.abortReason)
  }
  return entry.ctl.signal
}

function abortEntry (entry, reason) {
  entry.abortReason = reason
  if (entry.ctl) entry.ctl.abort(reason)
}

/** A running job's entry: its lease, its signal, whether it settled. */
class Entry {
  constructor (job) {
    this.job = job
    this.key = deliveryKey(job)
    this.ctl = null // created when the handler reads its signal
    this.abortReason = null
    // The TTL the lease was granted with. Never `deadline - now`: the
    // deadline is on the store owner's clock (a remote queue's server),
    // which this process's clock need not agree with.
    this.ttl = job.leaseTtlMs
    // When the lease runs out, on this process's clock, unless a heartbeat
    // renews it: when none gets through by then (a remote queue's server
    // unreachable), it is lost.
    this.expires = Date.now() + this.ttl
    this.lost = false
    this.cancelled = false // a cancel request came back from a heartbeat
    this.timedOut = false // ran past job.timeoutMs: failed, its slot freed
    this.timer = null // cancels the timeout
    this.released = false
    this.releasing = null
    this.finished = false
    this.settled = null // a deferred, made when stop() waits for it
    this.done = false
    this.progress = null // the latest report not yet sent (its bytes), for the next heartbeat
    this.then = null // follow-up jobs for the completion (ctx.followUp)
  }

  /** Resolves once the job is settled (completed, failed, released or lost). */
  whenSettled () {
    if (!this.settled) {
      this.settled = deferred()
      if (this.done) this.settled.resolve()
    }
    return this.settled.promise
  }

  markSettled () {
    this.done = true
    if (this.settled) this.settled.resolve()
  }
}

/** The handler's second argument (a class: no closure per job for the getter). */
class Context {
  #entry
  constructor (entry, workerId, queue) {
    this.#entry = entry
    this.workerId = workerId
    this.queue = queue
  }

  get signal () { return signalOf(this.#entry) }

  /**
   * Report progress: encoded now (a Buffer as it is, a value with the
   * payload convention; over `limits.maxProgressBytes` is INVALID_ARGUMENT,
   * thrown here), kept as this delivery's latest, and sent with the
   * Worker's next batched heartbeat (no write of its own).
   */
  progress (value) {
    this.#entry.progress = progressBytes(value)
  }

  /**
   * Follow-up jobs (items as `enqueueMany` takes them) for the completion
   * of this job: enqueued in its atomic write if the handler returns (see
   * `complete`'s `then`); dropped if it throws. Calls add up.
   */
  followUp (items) {
    if (!Array.isArray(items)) throw typeError('followUp takes an array of [kind, payload] pairs or { kind, payload, ...options } objects')
    const e = this.#entry
    e.then = e.then ? e.then.concat(items) : items.slice()
  }
}

/** A progress report's bytes, checked against the core's limit. */
function progressBytes (value) {
  const bytes = value instanceof Uint8Array ? Buffer.from(value) : native.encodePayload(value)
  if (bytes.length > LIMITS.maxProgressBytes) {
    throw invalidArgument(`progress is ${bytes.length} bytes as stored, over the limit of ${LIMITS.maxProgressBytes} (limits.maxProgressBytes)`)
  }
  return bytes
}

class Worker extends EventEmitter {
  #queue
  #handler
  #workerId
  #kinds
  #scope
  #concurrency
  #refillAt
  #pollMs
  #heartbeatMs
  #active = new Map() // deliveryKey(job) -> entry, while its lease is held
  #busy = 0 // handlers running (what `concurrency` bounds)
  #stopping = false
  #poll = null
  #running = null
  #slot = null
  #beatTimer = null
  #fatal = null
  #completions = []
  #flushScheduled = false
  #local = false // an embedded queue (its short calls run on the event loop)

  constructor (queue, handler, opts) {
    super()
    if (queue === null || typeof queue !== 'object' || typeof queue.leaseMany !== 'function') {
      throw typeError('Worker needs a Queue (from Queue.open) as its first argument')
    }
    if (typeof handler !== 'function') throw typeError('Worker needs a handler function: async (job, { signal }) => result')
    const o = options(opts, 'Worker options', WORKER_KEYS)
    this.#queue = queue
    this.#local = queue.remote === false
    this.#handler = handler
    this.#workerId = o.workerId === undefined
      ? `${os.hostname()}-${process.pid}-${crypto.randomBytes(3).toString('hex')}`
      : str(o.workerId, 'workerId')
    this.#kinds = o.kinds === undefined || o.kinds === null ? undefined : strList(o.kinds, 'kinds')
    this.#scope = o.scope === undefined || o.scope === null ? undefined : strList(o.scope, 'scope')
    // Each lease call takes at most the free slots: at most a batch.
    this.#concurrency = optInt(o.concurrency, 'concurrency', 1, LIMITS.maxBatch) ?? 1
    this.#refillAt = Math.ceil(this.#concurrency / 4)
    this.#pollMs = optMs(o.pollMs, 'pollMs') ?? 1000
    this.#heartbeatMs = optMs(o.heartbeatMs, 'heartbeatMs')
    if (this.#heartbeatMs === 0) throw rangeError('heartbeatMs must be > 0')
  }

  get workerId () { return this.#workerId }
  get running () { return this.#running !== null }
  get activeJobs () { return this.#active.size }

  run () {
    if (this.#running) return this.#running
    this.#stopping = false
    this.#fatal = null
    this.#running = this.#loop().finally(() => { this.#running = null })
    return this.#running
  }

  async stop (opts) {
    const o = options(opts, 'stop options', STOP_KEYS)
    const graceMs = o.graceMs === Infinity ? Infinity : (optMs(o.graceMs, 'graceMs') ?? 30000)
    this.#stopping = true
    if (this.#poll) this.#poll.abort()
    this.#wakeSlot()
    // A grace longer than one timer keeps (~24.8 days) is still waited out.
    const cancel = graceMs === Infinity ? null : longTimeout(() => this.#releaseAll(), graceMs)
    try {
      if (this.#running) await this.#running.catch(() => {})
    } finally {
      if (cancel) cancel()
    }
  }

  async #loop () {
    try {
      while (!this.#stopping) {
        // A slot frees when its handler returns: the next lease overlaps
        // the previous jobs' completion round trip.
        const free = this.#concurrency - this.#busy
        // Refill in batches: with jobs still running, wait until a quarter
        // of the slots are free rather than leasing one job per completion.
        if (free <= 0 || (this.#busy > 0 && free < this.#refillAt)) {
          await this.#slotFree()
          continue
        }
        let jobs
        try {
          jobs = await this.#lease(free)
        } catch (e) {
          if (e && e.code === 'CLOSED') {
            this.#fatal = e
            break
          }
          this.#report(e)
          await new Promise((resolve) => setTimeout(resolve, Math.min(this.#pollMs, 1000)))
          continue
        }
        for (const job of jobs) {
          if (this.#stopping) this.#releaseOne(job)
          else this.#start(job)
        }
      }
    } finally {
      await this.#drain()
    }
    if (this.#fatal) throw this.#fatal
  }

  /** Take what is ready at once (no thread per call); wait only when idle. */
  async #lease (max) {
    const filters = { kinds: this.#kinds, scope: this.#scope }
    const ready = await this.#queue.leaseMany(this.#workerId, max, filters)
    if (ready.length || this.#stopping || this.#pollMs === 0) return ready
    this.#poll = new AbortController()
    try {
      return await this.#queue.leaseMany(this.#workerId, max, { ...filters, waitMs: this.#pollMs, signal: this.#poll.signal })
    } finally {
      this.#poll = null
    }
  }

  #start (job) {
    const entry = new Entry(job)
    this.#active.set(entry.key, entry)
    this.#busy++
    this.#scheduleBeat()
    if (job.timeoutMs !== null && job.timeoutMs !== undefined) {
      entry.timer = longTimeout(() => this.#timeout(entry), job.timeoutMs)
    }
    // Fire and forget: whatever its settle code meets is reported, never unhandled.
    this.#runJob(entry).catch((e) => this.#report(e))
  }

  /**
   * The handler ran past its kind's timeout: abort its signal (code
   * TIMEOUT), fail the job retryably now without waiting for the handler
   * (one that never returns is bounded too), and free its slot.
   */
  #timeout (entry) {
    entry.timer = null
    if (entry.finished || entry.lost || entry.released || entry.cancelled) return
    const { job } = entry
    const ms = job.timeoutMs
    entry.timedOut = true
    entry.finished = true
    this.#busy--
    this.#wakeSlot()
    const err = abortError(`timed out after ${ms} ms: job ${job.id} ran past its kind's timeout`, 'TIMEOUT', 'TimeoutError')
    abortEntry(entry, err)
    this.#queue.fail(job, `timed out after ${ms} ms`, { retryable: true })
      .then(() => this.#emitSafe('failed', job, err), (e) => this.#settleError(job, e))
      .finally(() => this.#settled(entry))
      .catch((e) => this.#report(e))
  }

  async #runJob (entry) {
    const { job } = entry
    let ok = false
    let result
    let error
    try {
      result = await this.#handler(job, new Context(entry, this.#workerId, this.#queue))
      ok = true
    } catch (e) {
      error = e
    }
    if (entry.timer) entry.timer()
    entry.timer = null
    // Timed out: failed and its slot freed already; what it did is dropped.
    if (entry.timedOut) return
    entry.finished = true
    this.#busy--
    this.#wakeSlot()
    if (ok && !entry.released && !entry.lost) {
      // The common path: the batched completion settles it (#completed).
      this.#completeBatched(entry, result)
      return
    }
    try {
      if (entry.released) {
        await entry.releasing // the result is dropped: the job went back to pending
      } else if (entry.lost) {
        this.#emitSafe('lost', job)
      } else {
        await this.#settle(job, null, error)
      }
    } finally {
      this.#settled(entry)
    }
  }

  /** The job is done with: off the active set, its waiters woken. */
  #settled (entry) {
    if (this.#active.get(entry.key) === entry) this.#active.delete(entry.key)
    entry.markSettled()
    this.#wakeSlot()
  }

  /** A batched completion came back for `entry` with `code` (null: completed). */
  #completed (entry, result, code, error) {
    const { job } = entry
    if (code === null) {
      this.#emitSafe('completed', job, result)
      this.#settled(entry)
      return
    }
    this.#settle(job, code, error).finally(() => this.#settled(entry)).catch((e) => this.#report(e))
  }

  /**
   * Record a handler's outcome when the completion did not go through:
   * `code` is the completion's error code (null when the handler threw
   * `error`).
   */
  async #settle (job, code, error) {
    try {
      if (code !== null) {
        if (code === 'ABORTED' || code === 'NOT_FOUND') {
          this.#emitSafe('lost', job)
          return
        }
        if (code === 'CANCELLED') {
          this.#emitSafe('cancelled', job)
          return
        }
        if (code !== 'INVALID_ARGUMENT') throw error
        // The result cannot be stored (not encodable, or too large), or a follow-up job is refused.
        error = new Permanent(`the handler's result or follow-up jobs cannot be stored: ${error ? error.message : 'over the size limit'}`, { cause: error })
      }
      if (error instanceof Snooze) {
        await this.#queue.snooze(job, error.delayMs)
        this.#emitSafe('snoozed', job, error.delayMs)
        return
      }
      const permanent = error instanceof Permanent || (error !== null && typeof error === 'object' && error.permanent === true)
      const retryInMs = error instanceof Retry ? error.afterMs : undefined
      await this.#queue.fail(job, reasonOf(error), { retryable: !permanent, retryInMs })
      this.#emitSafe('failed', job, error)
    } catch (e) {
      this.#settleError(job, e)
    }
  }

  /** A settle the store refused: the lease was lost, the job cancelled, or a real error. */
  #settleError (job, e) {
    if (e && e.code === 'ABORTED') this.#emitSafe('lost', job)
    else if (e && e.code === 'CANCELLED') this.#emitSafe('cancelled', job)
    else this.#report(e)
  }

  /**
   * Completions finished in the same turn of the event loop go to the store
   * in one `completeMany` (one trip off the loop instead of one per job);
   * `#completed` then settles each entry.
   */
  #completeBatched (entry, result) {
    this.#completions.push(entry, result)
    // On an embedded queue the loop can lease again before the turn ends
    // (calls on the event loop settle at once): send a batch once it is as
    // large as one that still runs on the loop (FLUSH_AT jobs), not later.
    if (this.#local && this.#completions.length >= 2 * FLUSH_AT) {
      this.#flushSafe()
      return
    }
    if (!this.#flushScheduled) {
      this.#flushScheduled = true
      setImmediate(() => { this.#flushSafe() })
    }
  }

  /** A flush nobody awaits: what it meets is reported, and no completion is left unsettled. */
  #flushSafe () {
    this.#flush().catch((e) => this.#report(e))
  }

  async #flush () {
    this.#flushScheduled = false
    let pairs = this.#completions
    this.#completions = []
    // One delivery per job in a batch: two deliveries of one job finishing
    // in the same turn (an expired lease and its successor) go in separate
    // calls, so neither answer depends on how a server orders the items of
    // one job. Later ones go next batch.
    if (pairs.length > 2) {
      const seen = new Set()
      for (let i = 0; i < pairs.length; i += 2) {
        if (!seen.has(pairs[i].job.id)) {
          seen.add(pairs[i].job.id)
          continue
        }
        const now = pairs.slice(0, i)
        for (let k = i; k < pairs.length; k += 2) {
          const id = pairs[k].job.id
          if (seen.has(id)) {
            this.#completeBatched(pairs[k], pairs[k + 1])
          } else {
            seen.add(id)
            now.push(pairs[k], pairs[k + 1])
          }
        }
        pairs = now
        break
      }
    }
    const n = pairs.length / 2
    if (!n) return
    const jobs = new Array(n)
    const results = new Array(n)
    let then = null
    for (let i = 0; i < n; i++) {
      jobs[i] = pairs[2 * i].job
      results[i] = pairs[2 * i + 1]
      if (pairs[2 * i].then) (then ??= new Array(n).fill(null))[i] = pairs[2 * i].then
    }
    let codes
    try {
      codes = await this.#queue.completeMany(jobs, results, then ? { then } : undefined)
    } catch (e) {
      if (!e || e.code !== 'INVALID_ARGUMENT') {
        for (let i = 0; i < n; i++) this.#completed(pairs[2 * i], results[i], (e && e.code) || 'STORAGE', e)
        return
      }
      // Some result (or follow-up) cannot be encoded: settle one by one to find it.
      await Promise.all(jobs.map((job, i) => this.#queue.complete(job, results[i], then && then[i] ? { then: then[i] } : undefined).then(
        () => this.#completed(pairs[2 * i], results[i], null, null),
        (err) => this.#completed(pairs[2 * i], results[i], (err && err.code) || 'STORAGE', err)
      )))
      return
    }
    for (let i = 0; i < n; i++) this.#completed(pairs[2 * i], results[i], codes[i], null)
  }

  #scheduleBeat (retryMs) {
    if (this.#beatTimer || this.#active.size === 0) return
    let interval = this.#heartbeatMs
    if (interval === undefined) {
      // A third of the shortest TTL the running leases were granted with.
      let ttl = Infinity
      for (const e of this.#active.values()) ttl = Math.min(ttl, e.ttl)
      interval = Math.max(10, ttl / 3)
    }
    if (retryMs !== undefined) interval = Math.min(interval, retryMs)
    // Past what one timer keeps, setTimeout fires at once: beat then instead
    // (early is safe; a lease that long needs no exact period).
    this.#beatTimer = setTimeout(() => { this.#beatSafe() }, Math.min(interval, TIMER_MAX_MS))
  }

  /** A heartbeat from its timer: what it meets is reported, and the next one is scheduled all the same. */
  async #beatSafe () {
    let retryMs
    try {
      retryMs = await this.#beat()
    } catch (e) {
      this.#report(e)
      retryMs = 100
    }
    this.#beatTimer = null
    this.#scheduleBeat(retryMs)
  }

  /** One batched heartbeat; returns how soon to retry (undefined: the usual period). */
  async #beat () {
    const entries = [...this.#active.values()].filter((e) => !e.lost && !e.released && !e.cancelled && !e.timedOut)
    let retryMs
    if (entries.length) {
      const sent = Date.now()
      // The latest progress of each delivery rides on this heartbeat.
      const reports = entries.map((e) => e.progress)
      const opts = reports.some((r) => r !== null) ? { progress: reports } : undefined
      try {
        const jobs = entries.map((e) => e.job)
        // A stand-in queue with only `extend` (booleans) has no cancel answer.
        const answers = typeof this.#queue.extendAnswers === 'function'
          ? await this.#queue.extendAnswers(jobs, this.#workerId, opts)
          : (await this.#queue.extend(jobs, this.#workerId, opts)).map((ok) => ok ? 'renewed' : 'lost')
        // Sent: a report made since waits for the next heartbeat.
        entries.forEach((e, i) => { if (e.progress === reports[i]) e.progress = null })
        answers.forEach((a, i) => {
          if (a === 'renewed') entries[i].expires = sent + entries[i].ttl
          else if (a === 'cancelled') this.#cancel(entries[i])
          else this.#lose(entries[i])
        })
      } catch (e) {
        this.#report(e)
        // Unrenewed past its deadline, a lease is lost, as if extend said so.
        const now = Date.now()
        for (const entry of entries) if (now >= entry.expires && !entry.lost) this.#lose(entry)
        retryMs = 100
      }
    }
    return retryMs
  }

  #lose (entry) {
    entry.lost = true
    abortEntry(entry, abortError(`lease lost: job ${entry.job.id} was reaped or leased by another worker; stop working on it`, 'ABORTED'))
  }

  /**
   * A heartbeat answered cancelled: abort the handler (code CANCELLED). It
   * still settles (whatever it returns or throws), which records the job
   * cancelled; the store answers that settle CANCELLED ('cancelled' event).
   */
  #cancel (entry) {
    entry.cancelled = true
    if (entry.timer) entry.timer()
    entry.timer = null
    abortEntry(entry, abortError(`cancelled: job ${entry.job.id} was cancelled; stop working on it`, 'CANCELLED'))
  }

  #releaseOne (job) {
    this.#queue.release(job).catch((e) => {
      if (!e || e.code !== 'ABORTED') this.#report(e)
    })
  }

  /** Graceful stop, after the grace period: hand back every job still running. */
  #releaseAll () {
    for (const entry of this.#active.values()) {
      if (entry.released || entry.lost || entry.finished) continue
      entry.released = true
      abortEntry(entry, abortError(`worker ${this.#workerId} is stopping; job ${entry.job.id} was released`, 'RELEASED'))
      entry.releasing = this.#queue.release(entry.job)
        .catch((e) => { if (!e || (e.code !== 'ABORTED' && e.code !== 'CANCELLED')) this.#report(e) })
        .finally(() => entry.markSettled())
    }
  }

  #slotFree () {
    if (!this.#slot) this.#slot = deferred()
    return this.#slot.promise
  }

  #wakeSlot () {
    const s = this.#slot
    this.#slot = null
    if (s) s.resolve()
  }

  async #drain () {
    while (this.#active.size > 0) {
      const pending = [...this.#active.values()].map((e) => e.whenSettled())
      await Promise.race(pending)
      if ([...this.#active.values()].every((e) => e.released)) break
    }
    if (this.#beatTimer) {
      clearTimeout(this.#beatTimer)
      this.#beatTimer = null
    }
  }

  /** An event for the caller's listeners: a listener that throws is reported, and the Worker goes on. */
  #emitSafe (name, ...args) {
    try {
      this.emit(name, ...args)
    } catch (e) {
      this.#report(e)
    }
  }

  /** An error for the 'error' listeners, else (or when one throws) a process warning; never throws. */
  #report (e) {
    if (this.listenerCount('error') > 0) {
      try {
        this.emit('error', e)
        return
      } catch (thrown) {
        e = thrown
      }
    }
    process.emitWarning(`telha-jobs Worker ${this.#workerId}: ${e && e.stack ? e.stack : e}`)
  }
}

module.exports = { Worker, Permanent, Snooze, Retry }

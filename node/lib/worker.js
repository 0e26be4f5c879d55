'use strict'
// The Worker: leases jobs, runs an async handler per job (up to
// `concurrency` at once), heartbeats every lease well inside its TTL with one
// batched `extend`, completes with the handler's return value, fails on a
// throw (a `Permanent` error fails for good; `Snooze` and `Retry` from
// outcomes.js say when to run it again), aborts the handler's signal when
// its lease is lost (code ABORTED), its job is cancelled (CANCELLED, seen at
// a heartbeat) or it runs past its kind's timeout (TIMEOUT: the job is then
// failed retryably at once), and on `stop()` releases what is left without
// spending attempts. On a remote queue it leases ahead through the server's
// PollJobs stream (prefetch.js) and sends one completeMany at a time. Its
// running jobs' entries are entry.js, its heartbeat heartbeat.js. Types and
// docs: telha.d.ts.

const { EventEmitter } = require('node:events')
const os = require('node:os')
const crypto = require('node:crypto')
const { LIMITS, typeError, rangeError, options, str, optInt, optMs, strList, longTimeout } = require('./check.js')
const { Permanent, Snooze, Retry, reasonOf } = require('./outcomes.js')
const { Entry, Context, abortError, abortEntry, deferred } = require('./entry.js')
const { Heartbeat } = require('./heartbeat.js')
const { Prefetch } = require('./prefetch.js')
const { processSpan, traced } = require('./otel.js')

/** The largest completion batch that runs on the event loop (node/src/now.rs: NOW_MAX_BATCH). */
const FLUSH_AT = 64
/**
 * A remote Worker's default `maxPrefetch`: large enough that a PollJobs
 * message (a stream carries about one per completeMany, each about half
 * its capacity) and a completeMany cost little beside the jobs they carry
 * (issue 37: 64 → 256 cut the CPU per job of 4 such processes and their
 * server, `make bench-fleet`'s CPU columns).
 */
const MAX_PREFETCH = 256
const WORKER_KEYS = new Set(['workerId', 'kinds', 'scope', 'concurrency', 'pollMs', 'heartbeatMs', 'maxPrefetch', 'minPrefetch'])
const STOP_KEYS = new Set(['graceMs'])

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
  #maxPrefetch
  #minPrefetch
  #beat
  #prefetch = null // a remote queue's lease-ahead, while running
  #prefetchReleased = 0 // by the lease-aheads of earlier runs
  #active = new Map() // deliveryKey(job) -> entry, while its lease is held
  #busy = 0 // handlers running (what `concurrency` bounds)
  #stopping = false
  #poll = null
  #running = null
  #slot = null
  #fatal = null
  #completions = []
  #flushScheduled = false
  #flushing = false // a remote Worker's completeMany in flight (one at a time)
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
    // Leases held ahead beyond the running ones (remote queues only: an
    // embedded lease costs what a prefetch would).
    this.#maxPrefetch = optInt(o.maxPrefetch, 'maxPrefetch', 0, LIMITS.maxBatch - this.#concurrency) ??
      Math.max(0, Math.min(MAX_PREFETCH, LIMITS.maxBatch - this.#concurrency))
    // Kept ahead even while the handlers are slow (the stream's floor is
    // concurrency + minPrefetch; the server sizes the rest by their rate).
    this.#minPrefetch = optInt(o.minPrefetch, 'minPrefetch', 0, this.#maxPrefetch) ?? 0
    this.#beat = new Heartbeat(queue, this.#workerId, this.#heartbeatMs, this.#active, (e) => this.#report(e))
  }

  get workerId () { return this.#workerId }
  get running () { return this.#running !== null }
  get activeJobs () { return this.#active.size }
  /** Prefetched leases given back unrun because they waited past a quarter of their TTL. */
  get prefetchReleased () { return this.#prefetchReleased + (this.#prefetch ? this.#prefetch.released : 0) }

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
    if (this.#prefetch) this.#prefetch.close().catch((e) => this.#report(e))
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
    // (A stand-in for a Queue without PollJobs leases one call per free slot.)
    const prefetch = this.#queue.remote === true && this.#maxPrefetch > 0 && typeof this.#queue._pollJobs === 'function'
      ? new Prefetch(this.#queue, this.#workerId, { kinds: this.#kinds, scope: this.#scope }, {
        takers: this.#concurrency,
        maxPrefetch: this.#maxPrefetch,
        minPrefetch: this.#minPrefetch,
        onError: (e) => this.#report(e)
      })
      : null
    this.#prefetch = prefetch
    try {
      while (!this.#stopping) {
        // A slot frees when its handler returns: the next lease overlaps
        // the previous jobs' completion round trip.
        const free = this.#concurrency - this.#busy
        // Refill in batches: with jobs still running, wait until a quarter
        // of the slots are free rather than leasing one job per completion
        // (a prefetched lease is taken at once: it costs no round trip).
        if (free <= 0 || (!prefetch && this.#busy > 0 && free < this.#refillAt)) {
          await this.#slotFree()
          continue
        }
        let jobs
        try {
          if (prefetch) {
            // Leases waiting here are taken without a Promise (one a job at
            // concurrency 1); an empty buffer is waited on.
            const ready = prefetch.ready(free)
            for (const { job, at } of (ready.length ? ready : await prefetch.take(free))) {
              if (this.#stopping) this.#releaseOne(job)
              else this.#start(job, at)
            }
            continue
          }
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
      if (prefetch) {
        await prefetch.close().catch((e) => this.#report(e))
        this.#prefetchReleased += prefetch.released
      }
      this.#prefetch = null
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

  #start (job, leasedAt) {
    const entry = new Entry(job, leasedAt)
    this.#active.set(entry.key, entry)
    this.#busy++
    this.#beat.schedule()
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
      const ctx = new Context(entry, this.#workerId, this.#queue)
      // In a CONSUMER span when @opentelemetry/api is installed and a
      // tracer provider or context manager registered (otel.js).
      result = await (traced() ? processSpan(job, () => this.#handler(job, ctx)) : this.#handler(job, ctx))
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
    // Remote: one completeMany in flight at a time, the next batch filling
    // meanwhile (sent as soon as the call returns: never held back when
    // nothing else comes).
    if (!this.#local) {
      if (this.#flushing) return
      this.#flushing = true
      try {
        await this.#flushNow()
      } finally {
        this.#flushing = false
        if (this.#completions.length && !this.#flushScheduled) {
          this.#flushScheduled = true
          setImmediate(() => { this.#flushSafe() })
        }
      }
      return
    }
    await this.#flushNow()
  }

  async #flushNow () {
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

  #releaseOne (job) {
    this.#queue.release(job).catch((e) => {
      if (!e || e.code !== 'ABORTED') this.#report(e)
    })
  }

  /** Graceful stop, after the grace period: hand back every job still running. */
  #releaseAll () {
    const entries = []
    for (const entry of this.#active.values()) {
      if (entry.released || entry.lost || entry.finished) continue
      entry.released = true
      abortEntry(entry, abortError(`worker ${this.#workerId} is stopping; job ${entry.job.id} was released`, 'RELEASED'))
      entries.push(entry)
    }
    if (entries.length === 0) return
    // One releaseMany for all of them (one write; one round trip when remote).
    const gone = (c) => c === 'ABORTED' || c === 'CANCELLED'
    const all = this.#queue.releaseMany(entries.map((e) => e.job)).then(
      (codes) => codes.forEach((c, i) => {
        if (c === null || gone(c)) return
        const e = new Error(`release of job ${entries[i].job.id} failed: ${c}`)
        e.code = c
        this.#report(e)
      }),
      (e) => { if (!e || !gone(e.code)) this.#report(e) }
    )
    for (const entry of entries) entry.releasing = all.finally(() => entry.markSettled())
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
    this.#beat.stop()
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

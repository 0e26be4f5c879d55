'use strict'
// What a Worker on a remote queue (Queue.connect) adds (issue 37): it
// leases ahead, so a handler that finishes finds its next job here instead
// of waiting a round trip to the server. One `leaseMany` is in flight at a
// time, asking for what tops the buffer up to the window; the window is
// sized by time:
//
// - enough to cover the round trip at the rate the handlers take jobs
//   (twice the measured lease round trip × the measured take rate, plus
//   one job per handler);
// - grown (doubled) when a handler waited on an empty buffer while leases
//   were on the way (the measured rate lags a rising one), shrunk (halved)
//   when a lease waited here past its freshness (leases queue);
// - never more than a lease can wait here: at the measured rate, no lease
//   sits past PREFETCH_FRACTION of its TTL; and never over `maxPrefetch`
//   beyond the handlers' own.
//
// A lease that waited here past PREFETCH_FRACTION of its TTL is released
// (no attempt spent) rather than run: another worker may be idle, and the
// Worker's first heartbeat (a third of the TTL after the handler starts)
// stays inside the lease. `close()` releases what is left.

const { LIMITS } = require('./check.js')

/** The share of its TTL a lease may wait here before it goes back. */
const PREFETCH_FRACTION = 0.25
/** How the rate and round-trip estimates move toward each new sample. */
const SMOOTH = 0.3
/** The shortest interval a take-rate sample spans (ms). */
const RATE_SPAN_MS = 5

const now = () => performance.now()

class Prefetch {
  #queue
  #workerId
  #filters
  #takers
  #max // the most leases held here and in flight beyond the takers' own
  #pollMs
  #onError
  #buf = [] // { job, arrived } in lease order
  #head = 0
  #filling = null
  #poll = null // the long poll's AbortController, while one waits
  #closed = false
  #fatal = null // the queue was closed under it (CLOSED): every take rejects
  #waiter = null // { resolve } of a take waiting on an empty buffer
  #sweep = null // the timer that releases leases gone stale here
  #rtt = 1 // ms, a leaseMany round trip
  #rate = 0 // jobs taken per ms
  #spanStart = now()
  #spanTaken = 0
  #grown = 0 // the window the grow/shrink rule asks for
  #ttl = null // the last TTL a lease came with (ms)
  #released = 0

  constructor (queue, workerId, filters, { takers, maxPrefetch, pollMs, onError }) {
    this.#queue = queue
    this.#workerId = workerId
    this.#filters = filters
    this.#takers = takers
    this.#max = Math.min(maxPrefetch, LIMITS.maxBatch - takers)
    this.#pollMs = pollMs
    this.#onError = onError
    this.#grown = takers
  }

  /** Leases waiting here for a handler. */
  get waiting () { return this.#buf.length - this.#head }
  /** Stale leases given back so far. */
  get released () { return this.#released }

  /** The leases to hold here and in flight (the window; see the top). */
  window () {
    const cover = Math.ceil(this.#rate * this.#rtt * 2)
    const want = Math.max(cover, this.#grown)
    // No lease waits past its share of the TTL at the measured rate.
    const ttl = this.#ttl
    const bound = ttl === null || this.#rate === 0 ? this.#max : Math.floor(this.#rate * ttl * PREFETCH_FRACTION)
    return Math.max(1, Math.min(want, bound, this.#max)) + this.#takers
  }

  /**
   * Up to `max` fresh leases, each `{ job, at }` (`at`: when it arrived,
   * Date.now(): its lease runs from then): at once when some wait here, else after the
   * next fill brings some; [] once closed. Stale ones met are released.
   */
  take (max) {
    const got = this.#takeNow(max)
    if (!got.length && this.#fatal) return Promise.reject(this.#fatal)
    if (got.length || this.#closed) {
      this.#fill()
      return Promise.resolve(got)
    }
    // Starved while leases were on the way: the window was too small.
    if (this.#filling) this.#grown = Math.min(this.#max, Math.max(1, this.#grown) * 2)
    this.#fill()
    return new Promise((resolve) => { this.#waiter = { resolve, max } })
  }

  #takeNow (max) {
    const got = []
    const t = now()
    while (this.#head < this.#buf.length && got.length < max) {
      const { job, arrived } = this.#buf[this.#head]
      const at = this.#buf[this.#head].at
      this.#buf[this.#head++] = undefined
      if (t - arrived <= job.leaseTtlMs * PREFETCH_FRACTION) {
        got.push({ job, at })
      } else {
        // Leases queued here: shrink toward what the handlers take.
        this.#grown = Math.max(this.#takers, Math.floor(this.#grown / 2))
        this.#giveBack(job)
      }
    }
    if (this.#head === this.#buf.length) {
      this.#buf = []
      this.#head = 0
    }
    this.#spanTaken += got.length
    const span = t - this.#spanStart
    if (span >= RATE_SPAN_MS) {
      const r = this.#spanTaken / span
      this.#rate = this.#rate === 0 ? r : this.#rate + SMOOTH * (r - this.#rate)
      this.#spanStart = t
      this.#spanTaken = 0
    }
    return got
  }

  /** One leaseMany in flight at a time, topping the buffer up to the window. */
  #fill () {
    if (this.#filling || this.#closed) return
    const want = this.window() - this.waiting
    // Top up in batches: wait until half the window is free.
    if (want <= 0 || (this.waiting > 0 && want < this.window() / 2)) return
    this.#filling = this.#lease(want).then(
      (jobs) => this.#arrived(jobs),
      (e) => this.#failed(e)
    )
  }

  /**
   * What is ready at once; only when none is and a handler waits for work,
   * a long poll (as the Worker did before). Nobody waiting, an empty
   * answer ends the filling until the next take: busy handlers keep no
   * poll going (it would lease what they cannot run).
   */
  async #lease (max) {
    const sent = now()
    const ready = await this.#queue.leaseMany(this.#workerId, max, this.#filters)
    this.#rtt += SMOOTH * (now() - sent - this.#rtt)
    if (ready.length || this.#closed || this.#pollMs === 0 || this.waiting > 0 || !this.#waiter) return ready
    this.#poll = new AbortController()
    try {
      return await this.#queue.leaseMany(this.#workerId, max, { ...this.#filters, waitMs: this.#pollMs, signal: this.#poll.signal })
    } finally {
      this.#poll = null
    }
  }

  #arrived (jobs) {
    this.#filling = null
    if (this.#closed) {
      for (const job of jobs) this.#giveBack(job)
      return
    }
    const t = now()
    const at = Date.now()
    for (const job of jobs) {
      this.#ttl = job.leaseTtlMs
      this.#buf.push({ job, arrived: t, at })
    }
    this.#wake()
    if (jobs.length || this.#waiter) this.#fill()
    this.#armSweep()
  }

  /**
   * Release what went stale here even when no handler comes to take it
   * (all of them busy): a lease left waiting would expire, and its
   * expiry would spend an attempt.
   */
  #armSweep () {
    if (this.#sweep || this.#closed || this.waiting === 0) return
    const { job, arrived } = this.#buf[this.#head]
    const due = Math.max(0, arrived + job.leaseTtlMs * PREFETCH_FRACTION - now()) + 1
    this.#sweep = setTimeout(() => {
      this.#sweep = null
      const t = now()
      while (this.#head < this.#buf.length) {
        const first = this.#buf[this.#head]
        if (t - first.arrived <= first.job.leaseTtlMs * PREFETCH_FRACTION) break
        this.#buf[this.#head++] = undefined
        this.#grown = Math.max(this.#takers, Math.floor(this.#grown / 2))
        this.#giveBack(first.job)
      }
      if (this.#head === this.#buf.length) {
        this.#buf = []
        this.#head = 0
      }
      this.#armSweep()
    }, due)
    // The sweep alone keeps no process alive.
    this.#sweep.unref()
  }

  #failed (e) {
    this.#filling = null
    if (this.#closed || (e && e.name === 'AbortError')) {
      this.#wake()
      return
    }
    // This handle closed under it. A server that shuts down answers the
    // call it has in flight CLOSED too: that one is retried, like a server
    // that cannot be reached.
    if (e && e.code === 'CLOSED' && this.#queue.closed === true) {
      this.#closed = true
      this.#fatal = e
      this.#wake(e)
      return
    }
    this.#onError(e)
    // Try again after a pause (a server away): the waiter keeps waiting.
    const pause = Math.min(this.#pollMs || 100, 1000)
    setTimeout(() => { this.#fill() }, pause)
  }

  #wake (error) {
    const w = this.#waiter
    if (!w) return
    const got = this.#takeNow(w.max)
    if (!got.length && !this.#closed && !error) return
    this.#waiter = null
    w.resolve(error ? Promise.reject(error) : got)
  }

  /** Stop: a waiting take answers [], the long poll ends, what waits here goes back. */
  async close () {
    this.#closed = true
    if (this.#sweep) clearTimeout(this.#sweep)
    this.#sweep = null
    if (this.#poll) this.#poll.abort()
    this.#wake()
    if (this.#filling) await this.#filling
    const left = this.#buf.slice(this.#head)
    this.#buf = []
    this.#head = 0
    await Promise.all(left.map(({ job }) => this.#release(job)))
  }

  #giveBack (job) {
    this.#released++
    this.#release(job)
  }

  #release (job) {
    return this.#queue.release(job).catch((e) => {
      // Lost or cancelled meanwhile: nothing to hand back.
      if (!e || (e.code !== 'ABORTED' && e.code !== 'CANCELLED' && e.code !== 'CLOSED')) this.#onError(e)
    })
  }
}

module.exports = { Prefetch, PREFETCH_FRACTION }

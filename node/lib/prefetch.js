'use strict'
// What a Worker on a remote queue (Queue.connect) adds (issues 37 and 46):
// it leases ahead through the server's PollJobs stream, so a handler that
// finishes finds its next job here instead of waiting a round trip. The
// stream is the Rust client's (src/stream.rs: the same feed the Rust
// Worker reads), read on a thread of its own; the server pushes leases as
// they become ready and as settles free room, never more than the stream's
// capacity unsettled at once: the handlers' own plus `maxPrefetch`. The
// window follows the handlers (issue 37): the stream asks for floor = the
// Worker's concurrency (plus `minPrefetch`), and the server keeps about 100 ms of the handlers'
// work unsettled (its settle rate times 100 ms), between that floor and the
// capacity, so slow handlers leave a backlog to other workers.
//
// The bound is the Python Worker's: a lease that waited here past
// PREFETCH_FRACTION of its TTL is released (no attempt spent) rather than
// run, whether a handler comes to take it or not (a sweep timer): another
// worker may be idle, and the Worker's first heartbeat (a third of the TTL
// after the handler starts) stays inside the lease. `close()` stops the
// stream with the StopPoll handshake (the server stops leasing for it and
// ends it; leases already on the wire are read to the end instead of
// staying held until their TTL) and releases what is left.

const { LIMITS } = require('./check.js')
const { jobsFrom } = require('./batch.js')

/** The share of its TTL a lease may wait here before it goes back. */
const PREFETCH_FRACTION = 0.25
/** Before opening the stream again (it ended while the Worker runs: a server restarting). */
const REOPEN_MS = 1000

const now = () => performance.now()

class Prefetch {
  #queue
  #workerId
  #filters
  #capacity
  #floor
  #onError
  #stream = null
  #opening = null
  #buf = [] // { job, arrived, at } in lease order
  #head = 0
  #closed = false
  #closing = null
  #fatal = null // the queue was closed under it (CLOSED): every take rejects
  #waiter = null // { resolve, max } of a take waiting on an empty buffer
  #sweep = null // the timer that releases leases gone stale here
  #reopen = null
  #released = 0

  constructor (queue, workerId, filters, { takers, maxPrefetch, minPrefetch = 0, onError }) {
    this.#queue = queue
    this.#workerId = workerId
    this.#filters = filters
    this.#capacity = Math.max(1, Math.min(takers + maxPrefetch, LIMITS.maxBatch))
    this.#floor = Math.max(1, Math.min(takers + minPrefetch, this.#capacity))
    this.#onError = onError
  }

  /** Leases waiting here for a handler. */
  get waiting () { return this.#buf.length - this.#head }
  /** Stale leases given back so far. */
  get released () { return this.#released }
  /** The stream's capacity: the most leases unsettled at once. */
  get capacity () { return this.#capacity }

  /**
   * Up to `max` fresh leases, each `{ job, at }` (`at`: when it arrived,
   * Date.now(): its lease runs from then): at once when some wait here,
   * else once the stream brings some; [] once closed. Stale ones met are
   * released.
   */
  take (max) {
    this.#open()
    const got = this.#takeNow(max)
    if (!got.length && this.#fatal) return Promise.reject(this.#fatal)
    if (got.length || this.#closed) return Promise.resolve(got)
    return new Promise((resolve) => { this.#waiter = { resolve, max } })
  }

  /**
   * What `take(max)` answers at once, without a Promise: the fresh leases
   * waiting here ([] when none does; the stream is opened by `take`).
   */
  ready (max) {
    return this.#takeNow(max)
  }

  #takeNow (max) {
    const got = []
    const t = now()
    while (this.#head < this.#buf.length && got.length < max) {
      const { job, arrived, at } = this.#buf[this.#head]
      this.#buf[this.#head++] = undefined
      if (t - arrived <= job.leaseTtlMs * PREFETCH_FRACTION) got.push({ job, at })
      else this.#giveBack(job)
    }
    if (this.#head === this.#buf.length) {
      this.#buf = []
      this.#head = 0
    }
    return got
  }

  /** Open the stream once (again after it ended while running). */
  #open () {
    if (this.#stream || this.#opening || this.#closed || this.#fatal || this.#reopen) return
    this.#opening = this.#queue._pollJobs(this.#workerId, this.#capacity, this.#filters, () => this.#arrived(), this.#floor)
      .then((s) => {
        this.#opening = null
        this.#stream = s
        if (this.#closed) return
        this.#arrived()
      }, (e) => {
        this.#opening = null
        if (this.#closedUnder(e)) return
        this.#onError(e)
        this.#later()
      })
  }

  /** The queue handle closed under it: every take rejects from now on. */
  #closedUnder (e) {
    if (!e || e.code !== 'CLOSED' || this.#queue.closed !== true) return false
    this.#closed = true
    this.#fatal = e
    this.#wake(e)
    return true
  }

  /** Open the stream again after a pause. */
  #later () {
    if (this.#closed || this.#reopen) return
    this.#reopen = setTimeout(() => {
      this.#reopen = null
      this.#open()
    }, REOPEN_MS)
  }

  /** The stream called: take what it read. */
  #arrived () {
    const s = this.#stream
    if (!s || this.#closed) return
    const t = now()
    const at = Date.now()
    for (;;) {
      let batch
      try {
        batch = s.take()
      } catch (e) {
        if (this.#closedUnder(e)) return
        this.#onError(e)
        continue
      }
      if (!batch) break
      for (const job of jobsFrom(batch)) this.#buf.push({ job, arrived: t, at })
    }
    this.#wake()
    this.#armSweep()
    if (s.ended && !this.#closed) {
      // The server shut down (or this handle's stream failed for good): a
      // server back up is reached by a new stream.
      this.#stream = null
      s.close().catch((e) => this.#onError(e))
      this.#later()
    }
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

  #wake (error) {
    const w = this.#waiter
    if (!w) return
    const got = this.#takeNow(w.max)
    if (!got.length && !this.#closed && !error) return
    this.#waiter = null
    w.resolve(error ? Promise.reject(error) : got)
  }

  /**
   * Stop: a waiting take answers [], the stream is drained and ended (the
   * leases it read and nobody took released on the native side), then
   * what waits here goes back. Idempotent.
   */
  close () {
    if (!this.#closing) this.#closing = this.#close()
    return this.#closing
  }

  async #close () {
    this.#closed = true
    if (this.#sweep) clearTimeout(this.#sweep)
    if (this.#reopen) clearTimeout(this.#reopen)
    this.#sweep = null
    this.#reopen = null
    this.#wake()
    if (this.#opening) await this.#opening
    // The leases waiting here still count against the stream's capacity
    // while it drains: the server cannot push more in their place.
    if (this.#stream) await this.#stream.close()
    this.#stream = null
    const left = this.#buf.slice(this.#head)
    this.#buf = []
    this.#head = 0
    await this.#releaseMany(left.map(({ job }) => job))
  }

  /** What waited here at close, in one `releaseMany` (one round trip). */
  async #releaseMany (jobs) {
    if (jobs.length === 0) return
    let codes
    try {
      codes = await this.#queue.releaseMany(jobs)
    } catch (e) {
      if (!e || e.code !== 'CLOSED') this.#onError(e)
      return
    }
    codes.forEach((c, i) => {
      // Lost or cancelled meanwhile: nothing to hand back.
      if (c === null || c === 'ABORTED' || c === 'CANCELLED') return
      const e = new Error(`release of job ${jobs[i].id} failed: ${c}`)
      e.code = c
      this.#onError(e)
    })
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

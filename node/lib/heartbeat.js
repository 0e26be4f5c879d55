'use strict'
// A Worker's heartbeat (split out of worker.js, issue 37): every running
// lease renewed well inside its TTL with one batched `extend`, the latest
// progress riding along; a lease the store no longer knows is lost (its
// handler's signal aborted, code ABORTED), one cancelled aborts with code
// CANCELLED; a lease unrenewed past its deadline (the server unreachable)
// is lost as if extend said so.

const { TIMER_MAX_MS } = require('./check.js')
const { abortError, abortEntry } = require('./entry.js')

class Heartbeat {
  #queue
  #workerId
  #heartbeatMs
  #active
  #report
  #timer = null

  /** `active`: the Worker's map of running entries; `report(e)`: its error sink. */
  constructor (queue, workerId, heartbeatMs, active, report) {
    this.#queue = queue
    this.#workerId = workerId
    this.#heartbeatMs = heartbeatMs
    this.#active = active
    this.#report = report
  }

  /** Arm the next heartbeat unless one is armed or nothing runs. */
  schedule (retryMs) {
    if (this.#timer || this.#active.size === 0) return
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
    this.#timer = setTimeout(() => { this.#beatSafe() }, Math.min(interval, TIMER_MAX_MS))
  }

  stop () {
    if (this.#timer) {
      clearTimeout(this.#timer)
      this.#timer = null
    }
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
    this.#timer = null
    this.schedule(retryMs)
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
          else if (a === 'cancelled') cancel(entries[i])
          else lose(entries[i])
        })
      } catch (e) {
        this.#report(e)
        // Unrenewed past its deadline, a lease is lost, as if extend said so.
        const now = Date.now()
        for (const entry of entries) if (now >= entry.expires && !entry.lost) lose(entry)
        retryMs = 100
      }
    }
    return retryMs
  }
}

function lose (entry) {
  entry.lost = true
  abortEntry(entry, abortError(`lease lost: job ${entry.job.id} was reaped or leased by another worker; stop working on it`, 'ABORTED'))
}

/**
 * A heartbeat answered cancelled: abort the handler (code CANCELLED). It
 * still settles (whatever it returns or throws), which records the job
 * cancelled; the store answers that settle CANCELLED ('cancelled' event).
 */
function cancel (entry) {
  entry.cancelled = true
  if (entry.timer) entry.timer()
  entry.timer = null
  abortEntry(entry, abortError(`cancelled: job ${entry.job.id} was cancelled; stop working on it`, 'CANCELLED'))
}

module.exports = { Heartbeat }

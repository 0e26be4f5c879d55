'use strict'
// A Worker's running job (issue 37 split it out of worker.js): its entry
// (lease, signal, settle state), the handler's context, and the abort
// helpers the Worker and its heartbeat share.

const native = require('../index.js')
const { LIMITS, invalidArgument, typeError } = require('./check.js')

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
  /** `leasedAt`: when the lease came (Date.now()); a prefetched one waited. */
  constructor (job, leasedAt = Date.now()) {
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
    this.expires = leasedAt + this.ttl
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

module.exports = { Entry, Context, abortError, abortEntry, deferred }

'use strict'
// What a Worker's handler can throw to say how its job ends, besides an
// ordinary error (a retryable failure on the backoff schedule): Permanent
// (dead at once), Snooze (back to pending later, no attempt spent) and
// Retry (an attempt spent, retried after the handler's delay). Types and
// docs: telha.d.ts.

const { optMs, rangeError } = require('./check.js')

/** Throw it from a handler to fail the job for good (dead, no retry). */
class Permanent extends Error {
  constructor (message, options) {
    super(message, options)
    this.name = 'Permanent'
  }
}

/** A required delay in ms, 0 to the core's longest duration (a RangeError otherwise). */
function delayArg (v, name) {
  const ms = optMs(v, name)
  if (ms === undefined) throw rangeError(`${name} must be a number of milliseconds`)
  return ms
}

/**
 * Throw `new Snooze(ms)` from a handler to hand the job back until now +
 * `ms` without spending an attempt (past the kind's `maxSnoozes` it counts
 * as one).
 */
class Snooze extends Error {
  constructor (delayMs) {
    const ms = delayArg(delayMs, 'Snooze delayMs')
    super(`snoozed for ${ms} ms`)
    this.name = 'Snooze'
    this.delayMs = ms
  }
}

/**
 * Throw `new Retry(err, { afterMs })` from a handler to fail the job
 * retryably (an attempt spent) and retry it after `afterMs` instead of the
 * backoff schedule's delay. The job's last error is `err`'s.
 */
class Retry extends Error {
  constructor (error, options) {
    const o = options ?? {}
    if (typeof o !== 'object') throw new TypeError('Retry options must be an object: { afterMs }')
    const ms = delayArg(o.afterMs, 'Retry afterMs')
    super(error instanceof Error ? error.message : String(error), { cause: error })
    this.name = 'Retry'
    this.afterMs = ms
  }
}

/** The reason a failure records for `error` (what a handler threw). */
function reasonOf (error) {
  if (error instanceof Retry) error = error.cause
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
}

module.exports = { Permanent, Snooze, Retry, reasonOf }

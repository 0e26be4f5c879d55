'use strict'
// Argument checks shared by Queue and Worker. The rule (docs/node.md,
// "Errors"), the same in the native layer: a value of the wrong type is a
// TypeError; a number outside its range a RangeError; an unknown option
// name, like every other refused value, an Error. All three carry the
// stable code INVALID_ARGUMENT, like the core's own refusals. Ranges come
// from the core (`native.limits()`), never restated here.

const native = require('../index.js')

const CODE = 'INVALID_ARGUMENT'

/** The core's limits (telha_jobs::limits), frozen. */
const LIMITS = Object.freeze(native.limits())

/** The longest duration, in years, for messages. */
const YEARS = Math.round(LIMITS.maxDurationMs / (365 * 24 * 3600 * 1000))

/** The longest delay `setTimeout` keeps (2^31 - 1 ms, about 24.8 days); longer ones fire at once. */
const TIMER_MAX_MS = 2 ** 31 - 1

function typeError (message) {
  const e = new TypeError(message)
  e.code = CODE
  return e
}

function rangeError (message) {
  const e = new RangeError(message)
  e.code = CODE
  return e
}

function invalidArgument (message) {
  const e = new Error(message)
  e.code = CODE
  return e
}

function describe (v) {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'an array'
  return typeof v === 'object' ? `an object (${v.constructor?.name ?? 'null prototype'})` : `${typeof v} ${String(v).slice(0, 40)}`
}

/**
 * An options object (undefined / null: none) whose names are all in `keys`.
 * Not an object: a TypeError; an unknown name: INVALID_ARGUMENT naming it
 * and listing the known ones, in every call (the same rule as Python's).
 */
function options (o, name, keys) {
  if (o === undefined || o === null) return {}
  if (typeof o !== 'object' || Array.isArray(o)) throw typeError(`${name} must be an object, got ${describe(o)}`)
  for (const k of Object.keys(o)) {
    if (!keys.has(k)) throw invalidArgument(`${name}: unknown option ${JSON.stringify(k)}; the options are ${[...keys].join(', ')}`)
  }
  return o
}

function str (v, name) {
  if (typeof v !== 'string') throw typeError(`${name} must be a string, got ${describe(v)}`)
  return v
}

function optStr (v, name) {
  return v === undefined || v === null ? undefined : str(v, name)
}

function optBool (v, name) {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'boolean') throw typeError(`${name} must be a boolean, got ${describe(v)}`)
  return v
}

/** A number of any value (the native layer checks its range); undefined when unset. */
function optNum (v, name) {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'number') throw typeError(`${name} must be a number, got ${describe(v)}`)
  return v
}

function optInt (v, name, min, max) {
  if (optNum(v, name) === undefined) return undefined
  if (!Number.isInteger(v) || v < min || v > max) throw rangeError(`${name} must be an integer from ${min} to ${max}, got ${v}`)
  return v
}

/** A duration in milliseconds: 0 to the core's longest duration (100 years). */
function optMs (v, name) {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'number') throw typeError(`${name} must be a number of milliseconds, got ${describe(v)}`)
  if (!(v >= 0 && v <= LIMITS.maxDurationMs)) {
    throw rangeError(`${name} must be a number of milliseconds from 0 to ${LIMITS.maxDurationMs} (${YEARS} years), got ${v}`)
  }
  return v
}

/** A string or an array of strings, as an array. */
function strList (v, name) {
  if (typeof v === 'string') return [v]
  if (!Array.isArray(v)) throw typeError(`${name} must be a string or an array of strings, got ${describe(v)}`)
  v.forEach((s, i) => str(s, `${name}[${i}]`))
  return v
}

/** The lease token of a leased job: its `id` and `generation`. */
function token (job, name) {
  if (job === null || typeof job !== 'object') throw typeError(`${name} must be a leased job (from leaseNext / leaseMany), got ${describe(job)}`)
  const { id, generation } = job
  if (typeof id !== 'string' || typeof generation !== 'number') {
    throw typeError(`${name} must be a leased job with a string id and a number generation`)
  }
  if (!Number.isSafeInteger(generation) || generation < 0) throw rangeError(`${name}.generation must be an integer ≥ 0, got ${generation}`)
  return { id, generation }
}

/**
 * setTimeout for any delay up to the core's longest duration: a delay past
 * what one timer keeps is waited out in steps. Returns a cancel function.
 */
function longTimeout (fn, ms) {
  let timer = null
  const end = Date.now() + ms
  const arm = (left) => {
    timer = setTimeout(() => {
      const rest = end - Date.now()
      if (rest > 0) arm(rest)
      else fn()
    }, Math.min(left, TIMER_MAX_MS))
  }
  arm(ms)
  return () => clearTimeout(timer)
}

module.exports = {
  LIMITS,
  TIMER_MAX_MS,
  typeError,
  rangeError,
  invalidArgument,
  options,
  str,
  optStr,
  optBool,
  optNum,
  optInt,
  optMs,
  strList,
  token,
  longTimeout
}

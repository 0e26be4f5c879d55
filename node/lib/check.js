'use strict'
// Argument checks shared by Queue and Worker. A value of the wrong type is a
// TypeError, a number out of range a RangeError; both carry the stable code
// INVALID_ARGUMENT, like the core's own refusals.

const CODE = 'INVALID_ARGUMENT'

function typeError (message) {
  const e = new TypeError(message)
  e.code = CODE
  return e
}

function invalid (message) {
  const e = new RangeError(message)
  e.code = CODE
  return e
}

function describe (v) {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'an array'
  return typeof v === 'object' ? `an object (${v.constructor?.name ?? 'null prototype'})` : `${typeof v} ${String(v).slice(0, 40)}`
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

function optInt (v, name, min, max) {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'number') throw typeError(`${name} must be a number, got ${describe(v)}`)
  if (!Number.isInteger(v) || v < min || v > max) throw invalid(`${name} must be an integer from ${min} to ${max}, got ${v}`)
  return v
}

/** A duration or time in milliseconds: a finite number ≥ 0. */
function optMs (v, name) {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'number') throw typeError(`${name} must be a number of milliseconds, got ${describe(v)}`)
  if (!Number.isFinite(v) || v < 0) throw invalid(`${name} must be a finite number of milliseconds ≥ 0, got ${v}`)
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
  if (!Number.isSafeInteger(generation) || generation < 0) throw invalid(`${name}.generation must be an integer ≥ 0, got ${generation}`)
  return { id, generation }
}

module.exports = { typeError, invalid, str, optStr, optBool, optInt, optMs, strList, token }

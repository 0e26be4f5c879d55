'use strict'
// Schedules (issue 17): the argument checks of Queue.schedulePut and of the
// store-free scheduleNextTimes, in check.js's rule (a wrong type is a
// TypeError, an unknown option an Error, both INVALID_ARGUMENT). Every
// number's range, the spec, the zone, the name, the kind and the catch-up
// policy are checked by the native layer and the core. Types and docs:
// telha.d.ts and schedules.d.ts.

const native = require('../index.js')
const { typeError, options, str, optStr, optNum, optBool } = require('./check.js')
const { optStrings, optTextMap } = require('./flow.js')

const PUT_KEYS = new Set(['name', 'spec', 'kind', 'payload', 'timezone', 'anchor', 'scope', 'priority',
  'maxAttempts', 'expiresInMs', 'catchUp', 'maxCatchUp', 'paused', 'tags', 'metadata'])
const NEXT_KEYS = new Set(['timezone', 'anchor', 'after', 'n'])

/** An instant given as ms since the epoch or a Date; undefined when unset. */
function optInstant (v, name) {
  return optNum(v instanceof Date ? v.getTime() : v, name)
}

/** `schedulePut`'s options as the native call takes them: `[options, payload]`. */
function putArgs (o) {
  if (o === undefined || o === null) throw typeError('schedulePut takes { name, spec, kind, ...options }')
  options(o, 'schedulePut options', PUT_KEYS)
  return [{
    name: str(o.name, 'name'),
    spec: str(o.spec, 'spec'),
    kind: str(o.kind, 'kind'),
    timezone: optStr(o.timezone, 'timezone'),
    anchor: optInstant(o.anchor, 'anchor'),
    scope: optStr(o.scope, 'scope'),
    priority: optNum(o.priority, 'priority'),
    maxAttempts: optNum(o.maxAttempts, 'maxAttempts'),
    expiresInMs: optNum(o.expiresInMs, 'expiresInMs'),
    catchUp: optStr(o.catchUp, 'catchUp'),
    maxCatchUp: optNum(o.maxCatchUp, 'maxCatchUp'),
    paused: optBool(o.paused, 'paused'),
    tags: optStrings(o.tags, 'tags'),
    metadata: optTextMap(o.metadata, 'metadata')
  }, o.payload]
}

/** The next `n` (default 5) fire times of `spec` after `after` (default now), in ms; no store needed. */
function scheduleNextTimes (spec, opts) {
  str(spec, 'spec')
  const o = options(opts, 'scheduleNextTimes options', NEXT_KEYS)
  return native.scheduleNextTimes(spec, optStr(o.timezone, 'timezone'), optInstant(o.anchor, 'anchor'),
    optInstant(o.after, 'after'), optNum(o.n, 'n'))
}

/** A schedule name, for the calls that take one. */
function scheduleName (name) {
  return str(name, 'name')
}

module.exports = { putArgs, scheduleNextTimes, scheduleName }

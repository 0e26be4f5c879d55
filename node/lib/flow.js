'use strict'
// Enqueue items and flow control (issue 20): the argument checks of
// enqueue / enqueueMany's items, the follow-up jobs of complete and
// completeMany (`then`: items of the same shape, read by the same code),
// and setLimit's settings, in check.js's rule (a wrong type is a
// TypeError, an unknown option an Error, both INVALID_ARGUMENT). Every
// range, the kinds, scopes and limit targets are checked by the native
// layer and the core. Types and docs: telha.d.ts and flow.d.ts.

const { typeError, invalidArgument, options, str, optStr, optNum, optBool } = require('./check.js')

const ENQUEUE_KEYS = new Set(['scope', 'priority', 'delayMs', 'runAt', 'idempotencyKey', 'maxAttempts', 'expiresInMs', 'expiresAt', 'backoffBaseMs', 'uniqueForMs', 'uniqueStates', 'tags', 'metadata', 'debounceMs', 'debounceMaxMs', 'after', 'onChildDead', 'key'])
const ITEM_KEYS = new Set(['kind', 'payload', ...ENQUEUE_KEYS])
const COMPLETE_KEYS = new Set(['then'])
const LIMIT_KEYS = new Set(['concurrency', 'rate', 'burst', 'weight', 'ordered'])

/** One job's enqueue options as the native side takes them; `name` names them in messages. */
function enqueueOptions (o, name) {
  if (o === undefined || o === null) return undefined
  let runAt = o.runAt
  if (runAt instanceof Date) runAt = runAt.getTime()
  let expiresAt = o.expiresAt
  if (expiresAt instanceof Date) expiresAt = expiresAt.getTime()
  return {
    scope: optStr(o.scope, `${name}.scope`),
    priority: optNum(o.priority, `${name}.priority`),
    delayMs: optNum(o.delayMs, `${name}.delayMs`),
    runAt: optNum(runAt, `${name}.runAt`),
    idempotencyKey: optStr(o.idempotencyKey, `${name}.idempotencyKey`),
    maxAttempts: optNum(o.maxAttempts, `${name}.maxAttempts`),
    expiresInMs: optNum(o.expiresInMs, `${name}.expiresInMs`),
    expiresAt: optNum(expiresAt, `${name}.expiresAt`),
    backoffBaseMs: optNum(o.backoffBaseMs, `${name}.backoffBaseMs`),
    uniqueForMs: optNum(o.uniqueForMs, `${name}.uniqueForMs`),
    uniqueStates: optStr(o.uniqueStates, `${name}.uniqueStates`),
    tags: optStrings(o.tags, `${name}.tags`),
    metadata: optTextMap(o.metadata, `${name}.metadata`),
    debounceMs: optNum(o.debounceMs, `${name}.debounceMs`),
    debounceMaxMs: optNum(o.debounceMaxMs, `${name}.debounceMaxMs`),
    after: optStrings(o.after, `${name}.after`),
    onChildDead: optStr(o.onChildDead, `${name}.onChildDead`),
    key: optStr(o.key, `${name}.key`)
  }
}

/** An array of strings, or undefined. */
function optStrings (v, name) {
  if (v === undefined || v === null) return undefined
  if (!Array.isArray(v)) throw typeError(`${name} must be an array of strings, got ${typeof v}`)
  return v.map((t, i) => str(t, `${name}[${i}]`))
}

/** A plain object of string values, or undefined. */
function optTextMap (v, name) {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'object' || Array.isArray(v)) throw typeError(`${name} must be an object of strings, got ${Array.isArray(v) ? 'an array' : typeof v}`)
  const out = {}
  for (const [k, x] of Object.entries(v)) out[k] = str(x, `${name}.${k}`)
  return out
}

/**
 * Items of `[kind, payload]` pairs or `{ kind, payload, ...options }`
 * objects (`name[i]` in messages) appended to `out`'s parallel arrays:
 * `kinds`, `payloads`, and `opts` (made only once an item has options;
 * `out.at` is where the next item goes).
 */
function addItems (items, name, out) {
  if (!Array.isArray(items)) throw typeError(`${name} must be an array of [kind, payload] pairs or { kind, payload, ...options } objects`)
  for (let i = 0; i < items.length; i++) {
    const it = items[i]
    const at = out.kinds.length
    if (Array.isArray(it)) {
      if (it.length < 1 || it.length > 2) throw typeError(`${name}[${i}] must be a [kind, payload] pair`)
      out.kinds.push(str(it[0], `${name}[${i}][0] (kind)`))
      out.payloads.push(it[1])
    } else if (it !== null && typeof it === 'object') {
      options(it, `${name}[${i}]`, ITEM_KEYS)
      out.kinds.push(str(it.kind, `${name}[${i}].kind`))
      out.payloads.push(it.payload)
      const eo = enqueueOptions(it, `${name}[${i}]`)
      if (Object.values(eo).some((v) => v !== undefined)) {
        out.opts = out.opts || []
        while (out.opts.length < at) out.opts.push(undefined)
        out.opts[at] = eo
      }
    } else {
      throw typeError(`${name}[${i}] must be a [kind, payload] pair or a { kind, payload } object`)
    }
  }
  if (out.opts) while (out.opts.length < out.kinds.length) out.opts.push(undefined)
  return out
}

/** `enqueueMany`'s items as parallel arrays: `{ kinds, payloads, opts }` (`opts` undefined when no item has options). */
function enqueueItems (items) {
  if (!Array.isArray(items)) throw typeError('enqueueMany takes an array of [kind, payload] pairs or { kind, payload, ...options } objects')
  return addItems(items, 'items', { kinds: [], payloads: [], opts: undefined })
}

/** `complete`'s options: the native `then*` arguments, `[]` when there are no follow-ups. */
function completeArgs (opts) {
  const o = options(opts, 'complete options', COMPLETE_KEYS)
  if (o.then === undefined || o.then === null) return []
  const t = addItems(o.then, 'then', { kinds: [], payloads: [], opts: undefined })
  return [t.kinds, t.payloads, t.opts ?? null]
}

/**
 * `completeMany`'s options: `then` has one entry per job (an array of
 * items, or null / undefined for none), flattened for the native side
 * with a count per job; `[]` when no job has follow-ups.
 */
function completeManyArgs (opts, count) {
  const o = options(opts, 'completeMany options', COMPLETE_KEYS)
  if (o.then === undefined || o.then === null) return []
  if (!Array.isArray(o.then)) throw typeError('then must be an array: one array of follow-up jobs (or null) per job')
  if (o.then.length !== count) throw invalidArgument(`then has ${o.then.length} entries for ${count} jobs`)
  const t = { kinds: [], payloads: [], opts: undefined }
  const counts = new Uint32Array(count)
  for (let i = 0; i < count; i++) {
    const items = o.then[i]
    if (items === undefined || items === null) continue
    const before = t.kinds.length
    addItems(items, `then[${i}]`, t)
    counts[i] = t.kinds.length - before
  }
  if (t.kinds.length === 0) return []
  return [t.kinds, t.payloads, t.opts ?? null, counts]
}

/** `setLimit`'s settings as the native side takes them. */
function limitSettings (settings) {
  if (settings === undefined || settings === null) throw typeError('setLimit takes a target and { concurrency, rate, burst, weight, ordered } (at least one of concurrency, rate and weight)')
  const o = options(settings, 'limit settings', LIMIT_KEYS)
  return {
    concurrency: optNum(o.concurrency, 'concurrency'),
    rate: optNum(o.rate, 'rate'),
    burst: optNum(o.burst, 'burst'),
    weight: optNum(o.weight, 'weight'),
    ordered: optBool(o.ordered, 'ordered')
  }
}

module.exports = { ENQUEUE_KEYS, ITEM_KEYS, enqueueOptions, addItems, enqueueItems, completeArgs, completeManyArgs, limitSettings, optStrings, optTextMap }

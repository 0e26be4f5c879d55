'use strict'
// telha-jobs for Node: the public API. The native layer (index.js, generated
// by napi-rs) does the work off the event loop; this file checks argument
// types (a TypeError with code INVALID_ARGUMENT, as a rejected Promise),
// turns an AbortSignal into a native CancelToken, and shapes options.
// Types and docs: telha.d.ts.

const native = require('../index.js')
const { Worker, Permanent } = require('./worker.js')
const { typeError, invalid, str, optStr, optInt, optMs, optBool, strList, token } = require('./check.js')

/** The stable error codes, in the core's order. */
const ErrorCode = Object.freeze(Object.fromEntries(native.errorCodes().map((c) => [c, c])))

const OPEN_KEYS = new Set([
  'leaseTtlMs', 'reaperIntervalMs', 'maxAttempts', 'backoff', 'completedRetentionMs',
  'syncWrites', 'maxPayloadBytes', 'kinds', 'configFile'
])
const ENQUEUE_KEYS = new Set(['scope', 'priority', 'delayMs', 'runAt', 'idempotencyKey', 'maxAttempts'])
const ITEM_KEYS = new Set(['kind', 'payload', ...ENQUEUE_KEYS])
const LEASE_KEYS = new Set(['kinds', 'scope', 'waitMs', 'signal'])
const LIST_KEYS = new Set(['state', 'scope', 'kind', 'limit', 'after'])

/** Longest wait passed to the core (`Infinity` means this: about 31 years). */
const WAIT_FOREVER_MS = 1e12

function options (o, name, keys) {
  if (o === undefined || o === null) return {}
  if (typeof o !== 'object' || Array.isArray(o)) throw typeError(`${name} must be an object`)
  for (const k of Object.keys(o)) {
    if (!keys.has(k)) throw typeError(`${name}: unknown option ${JSON.stringify(k)} (known: ${[...keys].join(', ')})`)
  }
  return o
}

function backoffOptions (b, name) {
  if (b === undefined || b === null) return undefined
  options(b, name, new Set(['baseMs', 'factor', 'capMs']))
  return {
    baseMs: optMs(b.baseMs, `${name}.baseMs`),
    factor: optNum(b.factor, `${name}.factor`),
    capMs: optMs(b.capMs, `${name}.capMs`)
  }
}

function optNum (v, name) {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'number' || Number.isNaN(v)) throw typeError(`${name} must be a number`)
  return v
}

function openOptions (o) {
  o = options(o, 'Queue.open options', OPEN_KEYS)
  let kinds
  if (o.kinds !== undefined && o.kinds !== null) {
    if (typeof o.kinds !== 'object' || Array.isArray(o.kinds)) throw typeError('kinds must map a kind to its overrides')
    kinds = {}
    for (const [kind, k] of Object.entries(o.kinds)) {
      const at = `kinds[${JSON.stringify(kind)}]`
      options(k, at, new Set(['leaseTtlMs', 'maxAttempts', 'backoff']))
      kinds[kind] = {
        leaseTtlMs: optMs(k.leaseTtlMs, `${at}.leaseTtlMs`),
        maxAttempts: optInt(k.maxAttempts, `${at}.maxAttempts`, 0, 2 ** 32 - 1),
        backoff: backoffOptions(k.backoff, `${at}.backoff`)
      }
    }
  }
  let retention = o.completedRetentionMs
  if (retention === null || retention === false) retention = false
  else if (retention !== undefined) retention = optMs(retention, 'completedRetentionMs')
  return {
    leaseTtlMs: optMs(o.leaseTtlMs, 'leaseTtlMs'),
    reaperIntervalMs: optMs(o.reaperIntervalMs, 'reaperIntervalMs'),
    maxAttempts: optInt(o.maxAttempts, 'maxAttempts', 0, 2 ** 32 - 1),
    backoff: backoffOptions(o.backoff, 'backoff'),
    completedRetentionMs: retention,
    syncWrites: optBool(o.syncWrites, 'syncWrites'),
    maxPayloadBytes: optInt(o.maxPayloadBytes, 'maxPayloadBytes', 0, Number.MAX_SAFE_INTEGER),
    kinds,
    configFile: optStr(o.configFile, 'configFile')
  }
}

function enqueueOptions (o, name) {
  if (o === undefined || o === null) return undefined
  let runAt = o.runAt
  if (runAt instanceof Date) runAt = runAt.getTime()
  return {
    scope: optStr(o.scope, `${name}.scope`),
    priority: optInt(o.priority, `${name}.priority`, 0, 255),
    delayMs: optMs(o.delayMs, `${name}.delayMs`),
    runAt: optMs(runAt, `${name}.runAt`),
    idempotencyKey: optStr(o.idempotencyKey, `${name}.idempotencyKey`),
    maxAttempts: optInt(o.maxAttempts, `${name}.maxAttempts`, 0, 2 ** 32 - 1)
  }
}

function leaseFilters (o) {
  return {
    kinds: o.kinds === undefined || o.kinds === null ? undefined : strList(o.kinds, 'kinds'),
    scopes: o.scope === undefined || o.scope === null ? undefined : strList(o.scope, 'scope')
  }
}

/** Lease tokens as the native side takes them: ids joined with ',', generations in a Float64Array. */
function tokens (jobs, name) {
  if (!Array.isArray(jobs)) throw typeError(`${name} must be an array of leased jobs`)
  const ids = new Array(jobs.length)
  const gens = new Float64Array(jobs.length)
  for (let i = 0; i < jobs.length; i++) {
    const t = token(jobs[i], `${name}[${i}]`)
    ids[i] = t.id
    gens[i] = t.generation
  }
  return { ids: ids.join(','), gens, count: jobs.length }
}

/** Numbers per job in a native `LeasedBatch`'s `nums` (job.rs: `LeasedBatch::FIELDS`). */
const FIELDS = 6

/**
 * The `Job` objects of a native `LeasedBatch`: ids joined with ',', the
 * numbers in one Float64Array, kind / scope / workerId as indices into a
 * table of the batch's distinct strings, one payload Buffer, decoded values.
 */
function jobsFrom (batch) {
  const { ids: joined, nums, refs, strings, payloads, decoded } = batch
  if (joined.length === 0) return []
  const ids = joined.split(',')
  const jobs = new Array(ids.length)
  let off = 0
  for (let i = 0; i < ids.length; i++) {
    const k = i * FIELDS
    const r = i * 3
    const end = off + nums[k + 5]
    const bytes = payloads.subarray(off, end)
    off = end
    const value = decoded[i]
    jobs[i] = {
      id: ids[i],
      kind: strings[refs[r]],
      scope: strings[refs[r + 1]],
      payload: value === undefined ? bytes : value,
      payloadBytes: bytes,
      attempts: nums[k],
      maxAttempts: nums[k + 1],
      generation: nums[k + 2],
      deadline: nums[k + 3],
      priority: nums[k + 4],
      workerId: strings[refs[r + 2]]
    }
  }
  return jobs
}

const CONNECT_KEYS = new Set(['token', 'timeoutMs', 'caCert'])
const SERVE_KEYS = new Set(['listen', 'token', 'tlsCert', 'tlsKey', 'metricsListen'])

/** How long `Server.close()` lets calls in flight finish by default. */
const CLOSE_GRACE_MS = 5000

/**
 * A server started by `queue.serve()`: other processes reach the queue at
 * `url` with `Queue.connect(url)`. See telha.d.ts.
 */
class Server {
  #native

  /** @private Use `queue.serve()`. */
  constructor (nativeServer) {
    if (!(nativeServer instanceof native.NativeServer)) throw typeError('use queue.serve(options) to start a server')
    this.#native = nativeServer
  }

  get address () { return this.#native.address }
  get url () { return `${this.#native.tls ? 'https' : 'http'}://${this.#native.address}` }
  get metricsAddress () { return this.#native.metricsAddress }
  get running () { return this.#native.running }

  async close (opts) {
    const o = options(opts, 'close options', new Set(['graceMs']))
    await this.#native.close(optMs(o.graceMs, 'graceMs') ?? CLOSE_GRACE_MS)
  }
}

/**
 * An open store. Every method that touches the store returns a Promise and
 * runs off the event loop. See telha.d.ts for the documentation.
 */
class Queue {
  #native

  /** @private Use `Queue.open`. */
  constructor (nativeQueue) {
    if (!(nativeQueue instanceof native.NativeQueue)) throw typeError('use Queue.open(path, options) to open a queue')
    this.#native = nativeQueue
  }

  static async open (path, opts) {
    str(path, 'path')
    return new Queue(await native.NativeQueue.open(path, openOptions(opts)))
  }

  static async connect (url, opts) {
    str(url, 'url')
    const o = options(opts, 'Queue.connect options', CONNECT_KEYS)
    return new Queue(await native.NativeQueue.connect(url, {
      token: optStr(o.token, 'token'),
      timeoutMs: optMs(o.timeoutMs, 'timeoutMs'),
      caCert: optStr(o.caCert, 'caCert')
    }))
  }

  async serve (opts) {
    const o = options(opts, 'serve options', SERVE_KEYS)
    const s = await this.#native.serve({
      listen: optStr(o.listen, 'listen'),
      token: optStr(o.token, 'token'),
      tlsCert: optStr(o.tlsCert, 'tlsCert'),
      tlsKey: optStr(o.tlsKey, 'tlsKey'),
      metricsListen: optStr(o.metricsListen, 'metricsListen')
    })
    return new Server(s)
  }

  get path () { return this.#native.path }
  get location () { return this.#native.location }
  get remote () { return this.#native.remote }
  get closed () { return this.#native.closed }

  async close () { await this.#native.close() }

  async enqueue (kind, payload, opts) {
    str(kind, 'kind')
    const o = options(opts, 'enqueue options', ENQUEUE_KEYS)
    const e = await this.#native.enqueue(kind, payload, enqueueOptions(o, 'options'))
    return e.id
  }

  async enqueueMany (items) {
    if (!Array.isArray(items)) throw typeError('enqueueMany takes an array of [kind, payload] pairs or { kind, payload, ...options } objects')
    const kinds = new Array(items.length)
    const payloads = new Array(items.length)
    let opts
    for (let i = 0; i < items.length; i++) {
      const it = items[i]
      if (Array.isArray(it)) {
        if (it.length < 1 || it.length > 2) throw typeError(`items[${i}] must be a [kind, payload] pair`)
        kinds[i] = str(it[0], `items[${i}][0] (kind)`)
        payloads[i] = it[1]
      } else if (it !== null && typeof it === 'object') {
        options(it, `items[${i}]`, ITEM_KEYS)
        kinds[i] = str(it.kind, `items[${i}].kind`)
        payloads[i] = it.payload
        const eo = enqueueOptions(it, `items[${i}]`)
        if (Object.values(eo).some((v) => v !== undefined)) {
          opts = opts || new Array(items.length).fill(undefined)
          opts[i] = eo
        }
      } else {
        throw typeError(`items[${i}] must be a [kind, payload] pair or a { kind, payload } object`)
      }
    }
    // One kind for the whole batch (the common case) crosses as one string.
    const one = kinds.length > 0 && kinds.every((k) => k === kinds[0])
    const ids = await this.#native.enqueueMany(one ? kinds[0] : kinds, payloads, opts)
    return ids.length ? ids.split(',') : []
  }

  async leaseNext (workerId, opts) {
    const jobs = await this.#lease(workerId, 1, opts)
    return jobs.length ? jobs[0] : null
  }

  async leaseMany (workerId, max, opts) {
    optInt(max, 'max', 1, 10000)
    if (max === undefined || max === null) throw typeError('max must be an integer from 1 to 10000')
    return this.#lease(workerId, max, opts)
  }

  async #lease (workerId, max, opts) {
    str(workerId, 'workerId')
    const o = options(opts, 'lease options', LEASE_KEYS)
    const { kinds, scopes } = leaseFilters(o)
    let waitMs = o.waitMs === Infinity ? WAIT_FOREVER_MS : optMs(o.waitMs, 'waitMs') ?? 0
    if (waitMs > WAIT_FOREVER_MS) waitMs = WAIT_FOREVER_MS
    const signal = o.signal
    if (signal !== undefined && signal !== null && !(signal instanceof AbortSignal)) throw typeError('signal must be an AbortSignal')
    if (!signal) {
      return jobsFrom(await (waitMs > 0
        ? this.#native.leaseWait(workerId, max, kinds, scopes, waitMs, null)
        : this.#native.leaseMany(workerId, max, kinds, scopes)))
    }
    // The signal cancels the native wait; a job already taken is still
    // returned (never dropped while leased).
    const cancel = new native.CancelToken()
    if (signal.aborted) cancel.cancel()
    const onAbort = () => cancel.cancel()
    signal.addEventListener('abort', onAbort, { once: true })
    try {
      return jobsFrom(await this.#native.leaseWait(workerId, max, kinds, scopes, waitMs, cancel))
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
  }

  async extend (jobs, workerId) {
    const { ids, gens } = tokens(jobs, 'jobs')
    str(workerId, 'workerId')
    return this.#native.extend(ids, gens, workerId)
  }

  async complete (job, result) {
    const t = token(job, 'job')
    await this.#native.complete(t.id, t.generation, result)
  }

  async completeMany (jobs, results) {
    const { ids, gens, count } = tokens(jobs, 'jobs')
    if (results !== undefined && results !== null) {
      if (!Array.isArray(results)) throw typeError('results must be an array (one result per job) or undefined')
      if (results.length !== count) throw invalid(`results has ${results.length} entries for ${count} jobs`)
    }
    if (count === 0) return []
    // Results that are all null / undefined (the Worker's handlers often
    // return nothing) cross as one byte per job instead of a value each.
    let nulls = null
    if (results !== undefined && results !== null) {
      nulls = new Uint8Array(count)
      for (let i = 0; i < count; i++) {
        const r = results[i]
        if (r === null) nulls[i] = 1
        else if (r !== undefined) { nulls = null; break }
      }
    }
    const codes = await (nulls
      ? this.#native.completeMany(ids, gens, null, nulls)
      : this.#native.completeMany(ids, gens, results ?? undefined, null))
    return codes ?? new Array(count).fill(null)
  }

  async fail (job, reason, opts) {
    const t = token(job, 'job')
    if (reason instanceof Error) reason = reason.message
    str(reason, 'reason')
    const o = options(opts, 'fail options', new Set(['retryable']))
    const retryable = optBool(o.retryable, 'retryable') ?? true
    await this.#native.fail(t.id, t.generation, reason, retryable)
  }

  async release (job) {
    const t = token(job, 'job')
    await this.#native.release(t.id, t.generation)
  }

  async retry (id) {
    await this.#native.retry(str(id, 'id'))
  }

  async get (id) {
    return this.#native.get(str(id, 'id'))
  }

  async list (opts) {
    const o = options(opts, 'list options', LIST_KEYS)
    return this.#native.list({
      state: optStr(o.state, 'state'),
      scope: optStr(o.scope, 'scope'),
      kind: optStr(o.kind, 'kind'),
      limit: optInt(o.limit, 'limit', 1, 10000),
      after: optStr(o.after, 'after')
    })
  }

  async reap () { return this.#native.reap() }
  async stats () { return this.#native.stats() }
  async metrics () { return this.#native.metrics() }
}

module.exports = {
  Queue,
  Server,
  Worker,
  Permanent,
  ErrorCode,
  encodePayload: (value) => native.encodePayload(value),
  decodePayload: (bytes) => {
    if (!(bytes instanceof Uint8Array)) throw typeError('decodePayload takes a Buffer or Uint8Array')
    return native.decodePayload(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
  }
}

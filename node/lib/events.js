'use strict'
// Waiting for jobs and watching the queue (docs/node.md, "Waiting, events
// and progress"): `queue.wait` / `enqueueAndWait`, `queue.subscribe` -> a
// Subscription (an async iterator of committed transitions) and
// QueueEvents (an EventEmitter over one). Both sit on the core's JobStore
// (node/src/watch.rs, node/src/events.rs), so they work the same on an
// embedded queue and over `Queue.connect`.
//
// Nothing here polls or blocks the event loop: a wait is woken by the
// commit of its job's terminal transition (a threadsafe function called
// from the committing thread), its timeout is a JS timer; a subscription's
// events wait in the core's bounded buffer (a slow reader misses events
// and is told how many, it never slows the engine) and are taken in
// batches on the JS thread, letting the loop turn every TURN_EVENTS.
// Types and docs: telha.d.ts / events.d.ts.

const { EventEmitter } = require('node:events')
const { LIMITS, typeError, rangeError, options, optNum, strList, longTimeout } = require('./check.js')

const WAIT_KEYS = new Set(['timeoutMs', 'signal'])
const SUBSCRIBE_KEYS = new Set(['kinds', 'scopes', 'transitions', 'buffer'])
const NEXT_KEYS = new Set(['timeoutMs'])
/** Events taken from the native buffer at once (the rest stays bounded there). */
const BATCH = 256
/** Events handed out before the event loop is let turn (a `setImmediate`). */
const TURN_EVENTS = 1024
/** Only this module makes Subscriptions. */
const OPEN = Symbol('open')

/** What an aborted wait rejects with: `name` 'AbortError' (code `ABORT_ERR`), the signal's reason as its `cause`. */
function abortError (signal) {
  const e = new Error('the wait was aborted', signal.reason === undefined ? undefined : { cause: signal.reason })
  e.name = 'AbortError'
  e.code = 'ABORT_ERR'
  return e
}

/**
 * A timeout in ms: `null` (no limit) for undefined, null, `Infinity` or
 * anything past the core's longest duration (it saturates, like `waitMs`);
 * a RangeError for NaN and negatives.
 */
function timeoutArg (v, name) {
  if (v === undefined || v === null) return null
  if (typeof v !== 'number') throw typeError(`${name} must be a number of milliseconds, got ${typeof v}`)
  if (!(v >= 0)) throw rangeError(`${name} must be a number of milliseconds ≥ 0 (Infinity: no limit), got ${v}`)
  return v > LIMITS.maxDurationMs ? null : v
}

function signalArg (s) {
  if (s === undefined || s === null) return null
  if (!(s instanceof AbortSignal)) throw typeError('signal must be an AbortSignal')
  return s
}

/** `wait`'s options: `{ timeoutMs, signal }` (timeoutMs null: no limit). */
function waitOptions (o) {
  return { timeoutMs: timeoutArg(o.timeoutMs, 'timeoutMs'), signal: signalArg(o.signal) }
}

/**
 * Wait for job `id` on the native queue `nq`: its JobInfo once terminal,
 * or as it is when `timeoutMs` runs out; an AbortError when `signal`
 * aborts (the core's watch is cancelled and unregistered).
 */
async function waitFor (nq, id, { timeoutMs, signal }) {
  if (signal && signal.aborted) throw abortError(signal)
  // The watch may fire before `watch` resolves (a job already terminal).
  let woke = false
  let wake = null
  const w = await nq.watch(id, () => {
    woke = true
    if (wake) wake()
  })
  try {
    if (signal && signal.aborted) throw abortError(signal)
    if (!woke && timeoutMs !== 0) {
      await new Promise((resolve, reject) => {
        let cancel = null
        const onAbort = () => {
          if (cancel) cancel()
          reject(abortError(signal))
        }
        wake = () => {
          if (cancel) cancel()
          if (signal) signal.removeEventListener('abort', onAbort)
          resolve()
        }
        if (timeoutMs !== null) cancel = longTimeout(wake, timeoutMs)
        if (signal) signal.addEventListener('abort', onAbort, { once: true })
      })
    }
    return await w.job()
  } finally {
    w.close()
  }
}

/** `subscribe`'s filter as the native side takes it (it checks names, patterns and the buffer's range). */
function subscribeOptions (filter) {
  const o = options(filter, 'subscribe filter', SUBSCRIBE_KEYS)
  const list = (v, name) => v === undefined || v === null ? undefined : strList(v, name)
  return {
    kinds: list(o.kinds, 'kinds'),
    scopes: list(o.scopes, 'scopes'),
    transitions: list(o.transitions, 'transitions'),
    buffer: optNum(o.buffer, 'buffer')
  }
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

/**
 * A live stream of the transitions the queue commits (`queue.subscribe`).
 * See telha.d.ts.
 */
class Subscription {
  #native = null
  #batch = [] // taken from the native buffer, not handed out yet
  #at = 0
  #ended = false // nothing comes after #batch
  #closed = false // close() was called
  #waiters = [] // pending next() calls: { resolve, reject, cancel }
  #served = 0 // handed out since the loop last turned

  /** @private Use `queue.subscribe(filter)`. */
  constructor (key) {
    if (key !== OPEN) throw typeError('use queue.subscribe(filter) to subscribe')
  }

  /** @private */
  static async [OPEN] (nq, filter) {
    const o = subscribeOptions(filter)
    const sub = new Subscription(OPEN)
    sub.#native = await nq.subscribe(o, () => sub.#wake())
    return sub
  }

  /** Whether it has ended: closed, or the queue closed (events taken before may still be handed out). */
  get closed () { return this.#ended }

  /**
   * The next event, waiting up to `timeoutMs` (default: until one comes);
   * `null` at the timeout, and once the subscription has ended.
   */
  async next (opts) {
    const o = options(opts, 'next options', NEXT_KEYS)
    const timeoutMs = timeoutArg(o.timeoutMs, 'timeoutMs')
    if (this.#served >= TURN_EVENTS) {
      this.#served = 0
      await nextTurn()
    }
    if (this.#waiters.length === 0) {
      const ev = this.#take()
      if (ev !== undefined) return ev
    }
    if (timeoutMs === 0) return null
    return new Promise((resolve, reject) => {
      const w = { resolve, reject, cancel: null }
      if (timeoutMs !== null) {
        w.cancel = longTimeout(() => {
          const i = this.#waiters.indexOf(w)
          if (i >= 0) this.#waiters.splice(i, 1)
          this.#holdIfWaiting()
          resolve(null)
        }, timeoutMs)
      }
      this.#waiters.push(w)
      this.#holdIfWaiting()
    })
  }

  /** End it (idempotent): pending and later `next()` calls answer `null`, iteration stops. */
  close () {
    if (this.#closed) return
    this.#closed = true
    this.#batch = []
    this.#at = 0
    this.#end()
    this.#settleWaiters()
  }

  [Symbol.asyncIterator] () {
    return {
      next: async () => {
        const ev = await this.next()
        return ev === null ? { done: true, value: undefined } : { done: false, value: ev }
      },
      return: async () => {
        this.close()
        return { done: true, value: undefined }
      },
      [Symbol.asyncIterator] () { return this }
    }
  }

  /**
   * The next event now: an event; `null` once ended; `undefined` when none
   * is buffered. A lost remote feed's error is thrown (once; then it has ended).
   */
  #take () {
    if (this.#at < this.#batch.length) {
      const ev = this.#batch[this.#at]
      this.#batch[this.#at++] = undefined
      this.#served++
      return ev
    }
    if (this.#ended) return null
    let got
    try {
      got = this.#native.drain(BATCH)
    } catch (e) {
      this.#end()
      throw e
    }
    if (got === null) {
      this.#end()
      return null
    }
    if (got.length === 0) return undefined
    this.#batch = got
    this.#at = 0
    return this.#take()
  }

  /** Events arrived, or the subscription ended: hand them to the waiting `next()` calls. */
  #wake () {
    try {
      this.#deliver()
    } catch (e) {
      // Called from native code: a throw here would be fatal to the process.
      process.emitWarning(`telha-jobs Subscription: ${e && e.stack ? e.stack : e}`)
    }
  }

  #deliver () {
    try {
      while (this.#waiters.length > 0) {
        let ev
        try {
          ev = this.#take()
        } catch (e) {
          const w = this.#waiters.shift()
          if (w.cancel) w.cancel()
          w.reject(e)
          continue
        }
        if (ev === undefined) break
        if (ev === null) {
          this.#settleWaiters()
          break
        }
        const w = this.#waiters.shift()
        if (w.cancel) w.cancel()
        w.resolve(ev)
      }
    } finally {
      this.#holdIfWaiting()
    }
  }

  /** No more events: let go of the native side (the wake callback, the core's subscription). */
  #end () {
    this.#ended = true
    if (this.#native) this.#native.close()
  }

  #settleWaiters () {
    const ws = this.#waiters
    this.#waiters = []
    for (const w of ws) {
      if (w.cancel) w.cancel()
      w.resolve(null)
    }
    this.#holdIfWaiting()
  }

  /** Keep the process alive exactly while a `next()` waits. */
  #holdIfWaiting () {
    if (this.#native && !this.#ended) this.#native.hold(this.#waiters.length > 0)
  }
}

/**
 * An EventEmitter over a subscription: 'event' (every event), then the
 * event under its transition's name ('completed', 'dead', …), 'error',
 * 'close'. See telha.d.ts.
 */
class QueueEvents extends EventEmitter {
  #sub = null
  #closing = false
  #done

  constructor (queue, filter) {
    super()
    if (queue === null || typeof queue !== 'object' || typeof queue.subscribe !== 'function') {
      throw typeError('QueueEvents needs a Queue (from Queue.open or Queue.connect) as its first argument')
    }
    this.ready = queue.subscribe(filter).then((sub) => {
      this.#sub = sub
      if (this.#closing) sub.close()
    })
    this.#done = this.ready.then(() => this.#run(), (e) => {
      this.#report(e)
      this.emit('close')
    })
    // `ready` rejects too (for `await events.ready`); unawaited, it is not an unhandled rejection.
    this.ready.catch(() => {})
  }

  /** Whether `close()` was called or the subscription ended. */
  get closed () { return this.#closing || (this.#sub !== null && this.#sub.closed) }

  /** Stop: no event is emitted after it; resolves once 'close' was emitted. */
  async close () {
    this.#closing = true
    if (this.#sub) this.#sub.close()
    await this.#done
  }

  async #run () {
    const sub = this.#sub
    try {
      for (;;) {
        const ev = await sub.next()
        if (ev === null || this.#closing) break
        try {
          this.emit('event', ev)
          this.emit(ev.transition, ev)
        } catch (e) {
          this.#report(e) // a throwing listener
        }
      }
    } catch (e) {
      this.#report(e) // the subscription failed (a lost remote feed)
    } finally {
      sub.close()
    }
    this.emit('close')
  }

  #report (e) {
    if (this.listenerCount('error') > 0) this.emit('error', e)
    else process.emitWarning(`telha-jobs QueueEvents: ${e && e.stack ? e.stack : e}`)
  }
}

module.exports = { WAIT_KEYS, abortError, waitOptions, waitFor, Subscription, QueueEvents, openSubscription: (nq, filter) => Subscription[OPEN](nq, filter) }

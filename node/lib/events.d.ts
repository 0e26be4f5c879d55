// Types of waiting for jobs and watching the queue (lib/events.js),
// re-exported by telha.d.ts.

import { EventEmitter } from 'node:events'
import type { SubscriptionEvent } from '../index'
import type { Queue, EnqueueOptions } from './telha'

/** Options of {@link Queue.wait}. */
export interface WaitOptions {
  /**
   * How long to wait, ms: then the job is answered as it is (pending,
   * leased, …). 0 answers at once. Default, `Infinity` or anything over
   * `limits.maxDurationMs`: no limit. NaN and negatives are a `RangeError`.
   */
  timeoutMs?: number
  /**
   * Ends the wait: the Promise rejects with an `Error` whose `name` is
   * `'AbortError'` (code `ABORT_ERR`, the signal's reason as its `cause`),
   * and the wait is unregistered.
   */
  signal?: AbortSignal
}

/** Options of {@link Queue.enqueueAndWait}: the enqueue's and the wait's. */
export type EnqueueAndWaitOptions = EnqueueOptions & WaitOptions

/** A transition's name, as events and job logs spell it. */
export type Transition =
  | 'enqueued' | 'leased' | 'extended' | 'progress' | 'completed' | 'failed' | 'dead'
  | 'lease_expired' | 'released' | 'retried' | 'cancelled' | 'cancel_requested'
  | 'snoozed' | 'expired' | 'pruned' | 'purged' | 'deleted'
  | 'promoted' | 'rescheduled' | 'reprioritized' | 'debounced'
  | 'child_settled' | 'children_done'

/** One committed transition ({@link SubscriptionEvent}, its `transition` typed). */
export interface QueueEvent extends SubscriptionEvent {
  transition: Transition
}

/** Which events a subscription receives: each list given must match; none given: every event. */
export interface SubscribeFilter {
  /** Kinds: exact (`embed`) or a family (`ingest:*`). */
  kinds?: string | string[]
  /** Scope UUIDs. */
  scopes?: string | string[]
  /** Transition names (an unknown one is `INVALID_ARGUMENT`). */
  transitions?: Transition | Transition[]
  /**
   * How many events the subscription holds for a slow reader before it
   * drops (and counts) them: 1 to 1,000,000 (default 10,000).
   */
  buffer?: number
}

/** Options of {@link Subscription.next}. */
export interface NextOptions {
  /** How long to wait for an event, ms (default: until one comes; 0: only what is buffered). */
  timeoutMs?: number
}

/**
 * A live stream of the transitions the queue commits
 * ({@link Queue.subscribe}), in commit order. Read it with `for await …
 * of` or {@link Subscription.next}; the iteration ends when it is closed or
 * the queue closes (events buffered by then first). A reader that falls
 * behind its `buffer` misses events: the next event's `missed` says how
 * many, and `seq` skips exactly that many. Events are a live view:
 * nothing is replayed after a restart of the store's owner (a new
 * subscription starts at `seq` 1).
 *
 * A pending `next()` keeps the process alive; an idle subscription does not.
 */
export declare class Subscription implements AsyncIterable<QueueEvent> {
  private constructor()
  /** Whether it has ended (closed, or the queue closed). */
  readonly closed: boolean
  /**
   * The next event, waiting up to `timeoutMs` (default: until one comes);
   * `null` at the timeout and once it has ended. Rejects with `STORAGE`
   * once when a remote queue's event stream broke (then it has ended).
   */
  next(options?: NextOptions): Promise<QueueEvent | null>
  /** End it (idempotent): pending and later `next()` calls answer `null`. */
  close(): void
  [Symbol.asyncIterator](): AsyncIterator<QueueEvent>
}

/** The events of a {@link QueueEvents}: 'event' for each, then the same under its transition's name. */
export type QueueEventMap = {
  event: [QueueEvent]
  error: [unknown]
  close: []
} & { [T in Transition]: [QueueEvent] }

/**
 * An `EventEmitter` over a subscription ({@link Queue.events}, or `new
 * QueueEvents(queue, filter)` and `await events.ready`): emits `'event'`
 * for every event, then the event under its transition's name
 * (`'completed'`, `'dead'`, `'progress'`, …); `'error'` for a subscription
 * that failed or a listener that threw (without an `'error'` listener, a
 * process warning); `'close'` once it ended (closed, or the queue closed).
 * It keeps the process alive until closed.
 *
 * ```js
 * const events = await q.events({ transitions: ['dead'] })
 * events.on('dead', (ev) => alert(`job ${ev.jobId} (${ev.kind}) is dead`))
 * ```
 */
export declare class QueueEvents extends EventEmitter<QueueEventMap> {
  constructor(queue: Queue, filter?: SubscribeFilter)
  /** Resolves once the subscription is registered (events from then on are seen); rejects like {@link Queue.subscribe}. */
  readonly ready: Promise<void>
  /** Whether `close()` was called or the subscription ended. */
  readonly closed: boolean
  /** Stop: nothing is emitted after it; resolves once `'close'` was emitted. */
  close(): Promise<void>
}

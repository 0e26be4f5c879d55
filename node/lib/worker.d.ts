// Types of the Worker (lib/worker.js, lib/outcomes.js), re-exported by
// telha.d.ts.

import { EventEmitter } from 'node:events'
import type { Job } from '../index'
import type { Queue, PayloadValue, EnqueueItem } from './telha'

/** What a handler gets beside its job. */
export interface HandlerContext {
  /**
   * Aborted when the job's lease is lost (reason: an `AbortError` with code
   * `ABORTED`), the job was cancelled (seen at a heartbeat; code
   * `CANCELLED`: return or throw, the job ends `cancelled`), it ran past
   * its kind's `timeoutMs` (a `TimeoutError` with code `TIMEOUT`: the job
   * was already failed retryably, "timed out after … ms") or the worker
   * stops past its grace period (code `RELEASED`): stop working; the
   * result will not be recorded (a cancelled job keeps it).
   */
  signal: AbortSignal
  /** The worker's id. */
  workerId: string
  /** The queue the worker leases from. */
  queue: Queue
  /**
   * Report how far along the job is: a small value (number, string, plain
   * object; a `Buffer` is sent as its bytes), encoded at once with the
   * payload convention — over `limits.maxProgressBytes` (4096 bytes as
   * stored) it throws `INVALID_ARGUMENT` right here. The latest report of
   * this delivery rides on the Worker's next batched heartbeat (no write
   * of its own): then `get(id).progress` shows it and subscribers see a
   * `progress` event. A report made after the last heartbeat before the
   * job settles is not sent.
   */
  progress(value: PayloadValue): void
  /**
   * Follow-up jobs for this job's completion (items as
   * {@link Queue.enqueueMany} takes them): enqueued in the completion's
   * atomic write when the handler returns, each with `parent` set to this
   * job's id; dropped when it throws. Calls add up. A refused follow-up
   * fails the job permanently, like a result that cannot be stored.
   */
  followUp(items: EnqueueItem[]): void
}

/** A job handler: its return value is the job's result; a throw fails the job. */
export type Handler = (job: Job, context: HandlerContext) => unknown | Promise<unknown>

/** Options of a {@link Worker}. */
export interface WorkerOptions {
  /** Default `<hostname>-<pid>-<random>`. */
  workerId?: string
  /** Kinds to take (exact or `family:*`). */
  kinds?: string | string[]
  /** Scopes to take from. */
  scope?: string | string[]
  /** Handlers run at once (default 1; at most `limits.maxBatch`). */
  concurrency?: number
  /** How long one idle lease call waits for work (default 1,000 ms). */
  pollMs?: number
  /**
   * Heartbeat period (default: a third of the shortest `leaseTtlMs` among
   * running jobs, the TTL their leases were granted with, so it is right
   * over `Queue.connect` whatever the server's clock says).
   */
  heartbeatMs?: number
  /**
   * On a remote queue (`Queue.connect`), the most leases held ahead beyond
   * the running ones (default 256, at most `limits.maxBatch - concurrency`;
   * 0: lease only when a handler is free). They come through the server's
   * PollJobs stream, whose capacity is `concurrency + maxPrefetch`
   * unsettled leases; one that waited here past a quarter of its TTL is
   * released (no attempt spent) rather than run. Ignored on an embedded
   * queue. That capacity is the upper bound: the window follows the
   * handlers (the server keeps about 100 ms of their work unsettled, its
   * settle rate × 100 ms, at least `concurrency + minPrefetch`).
   */
  maxPrefetch?: number
  /**
   * Of the `maxPrefetch` leases, how many the server keeps ahead even
   * while the handlers are slow (default 0, at most `maxPrefetch`; equal
   * to it: a fixed window).
   */
  minPrefetch?: number
}

/**
 * Runs a handler over leased jobs, `concurrency` at a time: heartbeats
 * every lease well inside its TTL (one batched `extend`), completes with the
 * handler's return value, fails on a throw (retried with backoff; a
 * {@link Permanent} error fails for good, {@link Retry} retries after its
 * delay, {@link Snooze} hands the job back without spending an attempt),
 * aborts the handler's signal when its lease is lost, its job is cancelled
 * or it runs past the kind's timeout, and on `stop()` releases what is left
 * without spending attempts.
 *
 * Events: `completed` (job, result), `failed` (job, error; a timeout's
 * error has code `TIMEOUT`), `snoozed` (job, delayMs), `cancelled` (job:
 * cancelled while it ran, recorded so), `lost` (job: its lease was lost,
 * nothing recorded), `error` (an unexpected error while settling or
 * polling; without a listener it becomes a process warning).
 */
export declare class Worker extends EventEmitter {
  constructor(queue: Queue, handler: Handler, options?: WorkerOptions)
  readonly workerId: string
  /** Whether `run()` is in progress. */
  readonly running: boolean
  /** Jobs this worker holds a lease on: handlers running, or results being recorded. */
  readonly activeJobs: number
  /**
   * On a remote queue: the leases it leased ahead and gave back unrun
   * (no attempt spent) because they waited past a quarter of their TTL.
   */
  readonly prefetchReleased: number
  /**
   * Lease and run jobs until `stop()`. Resolves once stopped and every job
   * is settled or released; rejects with `CLOSED` if the queue is closed under it.
   */
  run(): Promise<void>
  /**
   * Stop leasing; running handlers get `graceMs` (default 30,000; `Infinity`
   * waits for them) to finish, heartbeats continuing; the jobs still running
   * then are released (no attempt spent) and their signals aborted.
   * Resolves when `run()` has.
   */
  stop(options?: { graceMs?: number }): Promise<void>
}

/** Throw it from a handler to fail the job for good: dead, no retry. */
export declare class Permanent extends Error {
  constructor(message?: string, options?: { cause?: unknown })
}

/**
 * Throw `new Snooze(ms)` from a handler: the job goes back to pending until
 * now + `ms` without spending an attempt (past the kind's `maxSnoozes` it
 * counts as one). `ms` outside 0 to `limits.maxDurationMs` is a `RangeError`.
 */
export declare class Snooze extends Error {
  constructor(delayMs: number)
  readonly delayMs: number
}

/**
 * Throw `new Retry(err, { afterMs })` from a handler: the job fails
 * retryably (an attempt spent; its last error is `err`'s) and is retried
 * after `afterMs` instead of the backoff schedule's delay.
 */
export declare class Retry extends Error {
  constructor(error: unknown, options: { afterMs: number })
  readonly afterMs: number
}

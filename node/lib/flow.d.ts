// Types of flow control and follow-up jobs (lib/flow.js and the limit and
// complete methods of Queue), re-exported by telha.d.ts.

import type { LimitStatus } from '../index'
import type { EnqueueItem } from './telha'

export type { LimitStatus }

/**
 * What a limit applies to: `kind:<kind>` or `kind:<family>:*` (across
 * scopes), `scope:<uuid>` (one scope), `scope:*` (each scope on its own),
 * `scope:<uuid>/kind:<pattern>` or `scope:*\/kind:<pattern>` (a kind within
 * one scope, or within each), `key:<key>` (the jobs enqueued with that
 * `key`) or `key:*` (each job key on its own). Anything else is
 * `INVALID_ARGUMENT`.
 */
export type LimitTarget = string

/**
 * The settings of {@link Queue.setLimit}: at least one of `concurrency`,
 * `rate` and `weight`. Out of range, or a setting that does not fit the
 * target, is `INVALID_ARGUMENT` and changes nothing.
 */
export interface LimitSettings {
  /** At most this many leased at once, 1 to 1,000,000 (pause a target to stop it). */
  concurrency?: number
  /** At most this many leases a second on average (over 0, at most 1,000,000; 0.5 is one every 2 s). */
  rate?: number
  /** How many leases may go at once after a quiet spell, 1 to 1,000,000; only with `rate` (default the rate rounded up). */
  burst?: number
  /** A scope's share of leases while others have work (1 to 1000, default 1); only on `scope:<uuid>` and `scope:*`. */
  weight?: number
  /**
   * FIFO per key: a key's jobs lease one at a time, strictly in enqueue
   * order (a job waiting for a retry holds its key until it ends). Only on
   * `key:<key>` and `key:*` with `concurrency: 1`.
   */
  ordered?: boolean
}

/** Options of {@link Queue.complete}. */
export interface CompleteOptions {
  /**
   * Follow-up jobs, items as {@link Queue.enqueueMany} takes them, enqueued
   * in the completion's atomic write: they exist if and only if the job
   * completed (none when the completion is refused, or when a cancel
   * request turns it into a cancel). Each has `parent` set to this job's
   * id; `list({ parent })` finds them. A bad item is `INVALID_ARGUMENT`
   * and nothing changes (the job stays leased).
   */
  then?: EnqueueItem[]
}

/** Options of {@link Queue.completeMany}. */
export interface CompleteManyOptions {
  /** Per job, aligned with `jobs`: its follow-up jobs (as {@link CompleteOptions.then}), or null / undefined for none. */
  then?: Array<EnqueueItem[] | null | undefined>
}

// Types of fan-in (issue 43): the `after` and `onChildDead` enqueue
// options, and Queue's enqueueGroup and resultsOfChildren (lib/fanin.js),
// re-exported by telha.d.ts.

import type { FanIn, ChildResult, ChildPage, EnqueuedGroup, Job, JobInfo } from '../index'
import type { EnqueueItem } from './telha'

export type { FanIn, ChildResult, ChildPage, EnqueuedGroup }

/**
 * What a child that did not complete (dead, cancelled, deleted) does to
 * its parent: `'fail'` (the default: the parent goes dead, its `lastError`
 * naming the child and its error), `'cancel_rest'` (the parent is
 * cancelled, then its unfinished children) or `'ignore'` (it counts as
 * finished).
 */
export type ChildDeadPolicy = 'fail' | 'cancel_rest' | 'ignore'

/** The fan-in options of one enqueue (part of {@link EnqueueOptions}). */
export interface FanInOptions {
  /**
   * The ids of jobs this one waits on: it is `waiting` (counted, listed,
   * cancellable, never leased) until every one has finished, then pending,
   * in the same atomic write as the last one's settle. Ids that already
   * finished count as done; an unknown id is `NOT_FOUND` and nothing is
   * written. At most 100,000; not with `debounceMs`, nor in a follow-up.
   */
  after?: string[]
  /** With `after` (or as a group's parent): see {@link ChildDeadPolicy}. A bad policy is `INVALID_ARGUMENT`. */
  onChildDead?: ChildDeadPolicy
}

/** Options of {@link Queue.resultsOfChildren}. */
export interface ResultsOfChildrenOptions {
  /** The previous page's `next`; a malformed cursor is `INVALID_ARGUMENT`. */
  cursor?: string | null
  /** At most this many children, 1 to 1,000 (default 100). */
  limit?: number
}

/** Queue's fan-in calls (merged into {@link Queue}). */
export interface FanInCalls {
  /**
   * Enqueue `children` (items as {@link Queue.enqueueMany} takes them) and
   * their `parent` (one item; an object may carry `after` for older jobs
   * and `onChildDead`) in one atomic batch, all or none: the parent waits
   * until every child finished. Resolves with the ids. No child, or a
   * parent with `idempotencyKey`, `uniqueForMs` or `debounceMs`, is
   * `INVALID_ARGUMENT`.
   *
   * ```js
   * const { children, parent } = await q.enqueueGroup(
   *   pages.map((p) => ['page', p]), { kind: 'index', payload: { doc: 42 }, onChildDead: 'ignore' })
   * ```
   */
  enqueueGroup(children: EnqueueItem[], parent: EnqueueItem): Promise<EnqueuedGroup>
  /**
   * A page of `parent`'s children (a job id, or a {@link Job} / {@link
   * JobInfo}) in enqueue order, each with its state (null once pruned,
   * purged or deleted), result and last error: what a parent's handler
   * reads (`ctx.queue.resultsOfChildren(job)`). `next` is the next page's
   * cursor, null after the last. `NOT_FOUND` when the parent does not exist.
   */
  resultsOfChildren(parent: string | Job | JobInfo, options?: ResultsOfChildrenOptions): Promise<ChildPage>
}

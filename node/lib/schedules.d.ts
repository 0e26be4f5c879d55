// Types of schedules (lib/schedules.js and the schedule methods of Queue),
// re-exported by telha.d.ts.

import type { ScheduleInfo, ScheduleRef, RunReport } from '../index'
import type { PayloadValue } from './telha'

export type { ScheduleInfo, ScheduleRef, RunReport }

/** What a schedule does with slots that passed while nothing ran it (downtime, a clock stepped forward). */
export type CatchUp = 'skip' | 'one' | 'all'

/**
 * A schedule, as {@link Queue.schedulePut} takes it: its name, when it
 * fires, and the job it enqueues for each slot. Each slot gets exactly one
 * job (idempotency key `schedule:<name>:<slot ms>`), whoever runs the
 * scheduler and however often.
 */
export interface ScheduleOptions {
  /** Unique within the store: 1 to 200 bytes, no control characters. Putting an existing name replaces it. */
  name: string
  /**
   * When it fires: a 5-field cron spec (`'0 3 * * *'`, Monday is 1), a
   * 6-field one with seconds first (`'*\/10 * * * * *'`), a nickname
   * (`'@hourly'`, `'@daily'`, `'@weekly'`, `'@monthly'`, `'@yearly'`), or
   * an interval of at least 1 s (`'every 5m'`, `'every 1h30m'`).
   */
  spec: string
  /** The kind of each job. */
  kind: string
  /** The payload of each job, as `enqueue` takes it (a value, or bytes). */
  payload?: PayloadValue
  /** The IANA zone a cron spec is read in (default UTC); an interval with a zone is `INVALID_ARGUMENT`. */
  timezone?: string
  /** An interval's grid: slots at `anchor + k × interval` (ms since the epoch or a Date; default the epoch). */
  anchor?: number | Date
  /** The scope of each job (a UUID; default the system scope). */
  scope?: string
  /** The priority of each job, 0 to 255 (default the enqueue default). */
  priority?: number
  /** Each job's attempt ceiling (1 to 2^32 - 1; default its kind's or the store's). */
  maxAttempts?: number
  /** Each job expires this long after its slot if no worker started it (ms, > 0). */
  expiresInMs?: number
  /**
   * Missed slots: `'skip'` runs none of them, `'one'` (the default) one job
   * for them all (the latest slot's; `job.schedule.missed` says how many
   * it stands for), `'all'` a job for each, the latest `maxCatchUp`. The
   * latest due slot that is at most a minute late always runs.
   */
  catchUp?: CatchUp
  /** For `'all'`: the most missed slots enqueued at once, 1 to 10,000 (default 100). */
  maxCatchUp?: number
  /** Put it paused: it enqueues nothing until {@link Queue.scheduleResume}. */
  paused?: boolean
  /**
   * Each job's tags, as `enqueue`'s: at most 16, each 1 to 64 bytes
   * without control characters (a repeated one is kept once); its jobs
   * are then in `list({ tag })`, `countTag` and `find`.
   */
  tags?: string[]
  /** Each job's metadata, as `enqueue`'s (at most 4 KiB). */
  metadata?: Record<string, string>
}

/** Options of {@link scheduleNextTimes}. */
export interface NextTimesOptions {
  /** As {@link ScheduleOptions.timezone}. */
  timezone?: string
  /** As {@link ScheduleOptions.anchor}. */
  anchor?: number | Date
  /** The times after this instant (ms since the epoch or a Date; default now). */
  after?: number | Date
  /** How many, 0 to 1000 (default 5). */
  n?: number
}

/**
 * The next `n` times `spec` fires after `after`, in ms since the epoch,
 * without a store (the same rules as {@link Queue.schedulePut}, checked
 * the same way): fewer when the spec stops firing. `INVALID_ARGUMENT` for
 * a bad spec, an unknown zone, a zone on an interval, `n` over 1000.
 *
 * ```js
 * scheduleNextTimes('0 9 * * 1', { after: Date.UTC(2026, 0, 1), n: 1 }) // [Date.UTC(2026, 0, 5, 9)]
 * ```
 */
export declare function scheduleNextTimes(spec: string, options?: NextTimesOptions): number[]

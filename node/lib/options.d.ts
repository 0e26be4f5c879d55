// Types of opening a queue: the store and per-kind settings (Queue.open,
// queue.settings()), re-exported by telha.d.ts.

/**
 * The deprecated nested spelling of `backoffBaseMs`, `backoffFactor` and
 * `backoffCapMs` (kept for one release). Attempt `k` waits
 * `min(capMs, baseMs * factor^(k-1))`.
 * @deprecated Use `backoffBaseMs`, `backoffFactor`, `backoffCapMs`.
 */
export interface BackoffOptions {
  baseMs?: number
  factor?: number
  capMs?: number
  /** As `backoffJitter` (the table's `backoff.jitter`). */
  jitter?: number
}

/**
 * Per-kind overrides of the open options: exactly the per-kind keys of
 * the core's table (`configKeys().filter((k) => k.perKind)`), under the
 * same names as {@link OpenOptions}; unset ones inherit the global value.
 */
export interface KindOptions {
  /** This kind's lease TTL, ms (its handlers run longer or shorter than most). */
  leaseTtlMs?: number
  /** This kind's attempt ceiling (1 to 2^32 - 1). */
  maxAttempts?: number
  /**
   * This kind's first retry delay, ms (> 0). It also raises the kind's cap
   * to at least itself (`cap' = max(cap, base)`).
   */
  backoffBaseMs?: number
  /** This kind's growth of the delay per further attempt (≥ 1). */
  backoffFactor?: number
  /** This kind's longest retry delay, ms. */
  backoffCapMs?: number
  /** This kind's jitter share of every retry delay (0 to 1). */
  backoffJitter?: number
  /**
   * This kind's run-time limit, ms: a {@link Worker} aborts a handler that
   * runs longer (signal reason code `TIMEOUT`) and fails the job retryably;
   * `false` / `null`: no limit (the default).
   */
  timeoutMs?: number | false | null
  /**
   * The longest one lease of this kind may be renewed for, ms: past it
   * `extend` answers lost, so a hung worker that keeps heartbeating still
   * loses the job; `false` / `null`: no limit (the default).
   */
  maxLeaseTotalMs?: number | false | null
  /** Snoozes before a snooze counts as a failed attempt (default 4294967295: unlimited). */
  maxSnoozes?: number
  /** @deprecated Use `backoffBaseMs`, `backoffFactor`, `backoffCapMs`. */
  backoff?: BackoffOptions
}

/**
 * Options of {@link Queue.open}: one per key of the core's table
 * (`configKeys()`), named in camelCase with `Ms` after a duration;
 * durations are milliseconds, from 0 to `limits.maxDurationMs` (100
 * years). A number outside a key's range is a `RangeError`, a value of
 * the wrong type a `TypeError`, an unknown name an `Error`, all with code
 * `INVALID_ARGUMENT`. Unset options come from `configFile` (else
 * `$TELHA_JOBS_CONFIG`), then `TELHA_JOBS_*` environment variables, then
 * the defaults; options given here win.
 */
export interface OpenOptions {
  /** How long a silent worker keeps a job before it is handed to another (default 300,000; at least 1). */
  leaseTtlMs?: number
  /** How often the background reaper expires leases and prunes; 0 runs none (default 30,000). */
  reaperIntervalMs?: number
  /** Failed attempts before a job is dead (default 5; 1 to 2^32 - 1). */
  maxAttempts?: number
  /** The delay after the first failed attempt (default 10,000; > 0). */
  backoffBaseMs?: number
  /** Growth of the delay per further attempt (default 4; ≥ 1). */
  backoffFactor?: number
  /** The longest retry delay, at least the base (default 3,600,000). */
  backoffCapMs?: number
  /**
   * Each retry delay is drawn at random from `delay × (1 ± backoffJitter)`,
   * so jobs that failed together do not retry at the same instant
   * (default 0.2; 0 to 1; 0 keeps exact delays). Not applied to a delay a
   * handler chose (`retryInMs`, snooze).
   */
  backoffJitter?: number
  /** How long completed jobs are kept (> 0); `false` or `null` keeps them forever (default 86,400,000). */
  completedRetentionMs?: number | false | null
  /** fsync every commit, so an acknowledged call survives power loss (default false). */
  syncWrites?: boolean
  /** The largest payload or result, in bytes (default 16 MiB; at most `limits.maxPayloadBytesLimit`). */
  maxPayloadBytes?: number
  /** How many completed jobs one reaper pass prunes at most (default 10,000). */
  pruneBatch?: number
  /** How long dead jobs are kept (default 604,800,000: 7 days); `false` or `null` keeps them forever. */
  deadRetentionMs?: number | false | null
  /** How long cancelled jobs are kept (default 86,400,000); `false` or `null` keeps them forever. */
  cancelledRetentionMs?: number | false | null
  /** The global default of {@link KindOptions.timeoutMs} (default none). */
  timeoutMs?: number | false | null
  /** The global default of {@link KindOptions.maxLeaseTotalMs} (default none). */
  maxLeaseTotalMs?: number | false | null
  /** The global default of {@link KindOptions.maxSnoozes}. */
  maxSnoozes?: number
  /** Per-kind overrides, keyed by exact kind. */
  kinds?: Record<string, KindOptions>
  /** A TOML config file, as read by the Rust core and the `telha` CLI. */
  configFile?: string
  /** @deprecated Use `backoffBaseMs`, `backoffFactor`, `backoffCapMs`. */
  backoff?: BackoffOptions
}

/**
 * The settings in force ({@link Queue.settings}): every key of the table,
 * named as {@link OpenOptions} names them (a retention kept forever reads
 * `false`), and per kind what that kind sets.
 */
export type Settings = Required<Omit<OpenOptions, 'kinds' | 'configFile' | 'backoff' | 'completedRetentionMs' | 'deadRetentionMs' | 'cancelledRetentionMs' | 'timeoutMs' | 'maxLeaseTotalMs'>> & {
  completedRetentionMs: number | false
  deadRetentionMs: number | false
  cancelledRetentionMs: number | false
  timeoutMs: number | false
  maxLeaseTotalMs: number | false
  kinds: Record<string, Omit<KindOptions, 'backoff'>>
}

// Types of reaching a queue from another process: Queue.connect's options,
// Queue.serve's options and the running Server; re-exported by telha.d.ts.

/** Options of {@link Queue.connect}. */
export interface ConnectOptions {
  /** The server's bearer token (default: `$TELHA_TOKEN`). A wrong one: every call rejects. */
  token?: string
  /**
   * The deadline of connecting and of each call, in ms (up to `limits.maxDurationMs`): past it the
   * call rejects with `STORAGE` ("timed out after …"); a waiting call (`leaseNext` with `waitMs`,
   * `wait`) gets its wait on top, and a silent connection is dropped within twice this (each half
   * held between 1 s and 10 s). Default: 10 s to connect, 60 s per call.
   */
  timeoutMs?: number
  /** For `https://`: a PEM file of the CA to trust instead of the public web roots (a self-signed server). */
  caCert?: string
  /**
   * With two or more servers, give every enqueue without an idempotency key a UUIDv7 one, so that an
   * enqueue whose reply was lost is repeated without a duplicate (default `true`; `false` opts out:
   * unkeyed enqueues are then repeated only when they certainly never reached a server).
   */
  autoIdempotencyKey?: boolean
}

/** Options of {@link Queue.serve}. */
export interface ServeOptions {
  /** `host:port` to listen on (default `127.0.0.1:7450`; port 0 picks a free one). A non-loopback address needs a `token`. */
  listen?: string
  /** Bearer token every call must carry. */
  token?: string
  /** PEM certificate chain file: serve TLS (with `tlsKey`). */
  tlsCert?: string
  /** PEM private key file (with `tlsCert`). */
  tlsKey?: string
  /** Also serve Prometheus text at `http://<metricsListen>/metrics`. */
  metricsListen?: string
  /** Also serve the operator web page and its JSON API there (default address `127.0.0.1:7451`; see {@link Server.uiUrl}). */
  ui?: boolean
  /** The page shows everything but refuses every action. */
  uiReadOnly?: boolean
}

/**
 * A running server started by {@link Queue.serve}. Other processes use the
 * queue with `Queue.connect(server.url)`. Closing it leaves the queue open.
 */
export declare class Server {
  private constructor()
  /** `host:port` it listens on (the real port when `listen` asked for 0). */
  readonly address: string
  /** The URL for `Queue.connect` (`http://…`, or `https://…` with TLS). */
  readonly url: string
  /** `host:port` of the `/metrics` endpoint, when `metricsListen` was given; else `null`. */
  readonly metricsAddress: string | null
  /** The operator web page's URL (`http://host:port/`) when served with `ui: true`; else `null`. */
  readonly uiUrl: string | null
  /** Whether `close()` has not been called. */
  readonly running: boolean
  /** Stop serving: new calls are refused, calls in flight get `graceMs` (default 5000) to finish. */
  close(options?: { graceMs?: number }): Promise<void>
}

'use strict'
// Trace context across the queue (issue 45), with `@opentelemetry/api` as
// an optional peer dependency: required once, lazily, in a try; when it is
// not installed every call here is one variable check and nothing else.
//
// - At enqueue (enqueue, enqueueResult, enqueueMany, enqueueManyResults,
//   enqueueAndWait), the active span context's W3C `traceparent` /
//   `tracestate` go into the job's metadata, unless the caller set either
//   key (an explicit context is kept whole).
// - The Worker runs each handler in a CONSUMER span `process <kind>` whose
//   parent and link are the producer's context from the metadata: one trace
//   from request to handler, and each attempt a span of its own linked to
//   the producer's (a retry is never a child of the attempt before it),
//   with OpenTelemetry's messaging attributes.
//
// The API's context follows async calls only with a context manager
// registered (an SDK's, or @opentelemetry/context-async-hooks): without
// one, no span is active at enqueue and handlers' spans are roots or the
// producer's children, but not active inside the handler. With neither a
// tracer provider nor a context manager registered (the API installed as
// another package's dependency), a handler's span could be seen by nobody:
// the Worker then runs the handler without one (`traced`: two calls, no
// allocation; issue 37 measured the span's bookkeeping, its garbage and its
// optimizing compiles at a few µs of a remote Worker's CPU per job).

const { version } = require('../package.json')

let api // undefined: not looked for yet; null: not installed
let tracer = null

/** `@opentelemetry/api`, or null when it cannot be required. */
function otelApi () {
  if (api === undefined) {
    try {
      api = require('@opentelemetry/api')
    } catch {
      api = null
    }
  }
  return api
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/

/** The active span's context as `{ traceparent, tracestate? }`, or null. */
function carrier () {
  const a = otelApi()
  if (a === null) return null
  const sc = a.trace.getSpanContext(a.context.active())
  if (!sc || !a.isSpanContextValid(sc)) return null
  const flags = (sc.traceFlags & 0xff).toString(16).padStart(2, '0')
  const out = { traceparent: `00-${sc.traceId}-${sc.spanId}-${flags}` }
  const state = sc.traceState ? sc.traceState.serialize() : ''
  if (state) out.tracestate = state
  return out
}

/** `metadata` with the carrier's keys added, unless it sets either. */
function withContext (metadata, c) {
  if (metadata && (metadata.traceparent !== undefined || metadata.tracestate !== undefined)) return metadata
  return metadata ? { ...metadata, ...c } : c
}

/** One job's native enqueue options (or undefined) with the active context. */
function injectOptions (eo) {
  if (api === null) return eo
  const c = carrier()
  if (c === null) return eo
  if (eo === undefined) return { metadata: c }
  eo.metadata = withContext(eo.metadata, c)
  return eo
}

/** enqueueItems' parallel arrays with the active context in every item's options. */
function injectItems (batch) {
  if (api === null || batch.kinds.length === 0) return batch
  const c = carrier()
  if (c === null) return batch
  const opts = batch.opts || new Array(batch.kinds.length).fill(undefined)
  for (let i = 0; i < opts.length; i++) {
    const eo = opts[i] || {}
    eo.metadata = withContext(eo.metadata, c)
    opts[i] = eo
  }
  batch.opts = opts
  return batch
}

/** The producer's span context in a job's metadata, or null. */
function producerContext (a, meta) {
  const m = meta && typeof meta.traceparent === 'string' ? TRACEPARENT.exec(meta.traceparent) : null
  if (!m || m[1] === 'ff' || (m[1] === '00' && m[5] !== undefined)) return null
  const sc = { traceId: m[2], spanId: m[3], traceFlags: parseInt(m[4], 16) & 0xff, isRemote: true }
  if (typeof meta.tracestate === 'string' && typeof a.createTraceState === 'function') {
    sc.traceState = a.createTraceState(meta.tracestate)
  }
  return a.isSpanContextValid(sc) ? sc : null
}

/**
 * `fn()` (the handler's promise) inside job's CONSUMER span, or `fn()`
 * itself when the API is not installed. The span records what the handler
 * threw (status ERROR) and ends when it settles.
 */
function processSpan (job, fn) {
  const a = otelApi()
  if (a === null) return fn()
  if (tracer === null) tracer = a.trace.getTracer('telha-jobs', version)
  const producer = producerContext(a, job.metadata)
  const parent = producer ? a.trace.setSpanContext(a.ROOT_CONTEXT, producer) : a.context.active()
  const opts = {
    kind: a.SpanKind.CONSUMER,
    links: producer ? [{ context: producer }] : [],
    attributes: {
      'messaging.system': 'telha',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.destination.name': job.kind,
      'messaging.message.id': job.id,
      'telha.job.kind': job.kind,
      'telha.job.attempt': job.attempts + 1
    }
  }
  return tracer.startActiveSpan(`process ${job.kind}`, opts, parent, async (span) => {
    try {
      return await fn()
    } catch (e) {
      span.recordException(e)
      span.setStatus({ code: a.SpanStatusCode.ERROR, message: e && e.message ? String(e.message) : String(e) })
      throw e
    } finally {
      span.end()
    }
  })
}

/** Whether the API is installed (looked for once). */
function enabled () {
  return otelApi() !== null
}

let noopProvider = null // the API's no-op tracer provider (a proxy's delegate while none is registered)
let probe = null // a context only a registered context manager makes active

/**
 * Whether a handler's span could be seen: the API is installed and a
 * tracer provider or a context manager is registered (either may be
 * registered at any time: asked per job).
 */
function traced () {
  const a = otelApi()
  if (a === null) return false
  if (noopProvider === null) {
    noopProvider = new a.ProxyTracerProvider().getDelegate()
    probe = a.ROOT_CONTEXT.setValue(a.createContextKey('telha-jobs probe'), true)
  }
  const p = a.trace.getTracerProvider()
  if ((typeof p.getDelegate === 'function' ? p.getDelegate() : p) !== noopProvider) return true
  return a.context.with(probe, probeActive) === true
}

function probeActive () {
  return api.context.active() === probe
}

module.exports = { carrier, injectOptions, injectItems, processSpan, enabled, traced }

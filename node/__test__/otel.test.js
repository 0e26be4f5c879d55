'use strict'
// Trace context across the queue (issue 45): an enqueue inside an active
// span puts its W3C traceparent / tracestate into the job's metadata, and
// the Worker runs each attempt in a CONSUMER span whose parent and link
// are that context. Spans go to the SDK's in-memory exporter; without
// @opentelemetry/api installed nothing of it is required (a child process
// where it cannot be resolved).
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const api = require('@opentelemetry/api')
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks')
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base')
const { Worker } = require('..')
const { openTemp, sleep } = require('./helpers.js')

const exporter = new InMemorySpanExporter()
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
api.trace.setGlobalTracerProvider(provider)

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c'
const SPAN_ID = 'b7ad6b7169203331'
const TRACEPARENT = `00-${TRACE_ID}-${SPAN_ID}-01`

/** `fn()` with a known remote producer's span active. */
function inProducer (fn, state = 'vendor=abc') {
  const sc = { traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 1, isRemote: true }
  if (state) sc.traceState = api.createTraceState(state)
  return api.context.with(api.trace.setSpanContext(api.ROOT_CONTEXT, sc), fn)
}

async function processSpans (n) {
  for (let i = 0; i < 2000 && exporter.getFinishedSpans().length < n; i++) await sleep(10)
  return exporter.getFinishedSpans().filter((s) => s.name.startsWith('process '))
}

test('an enqueue inside a span carries its traceparent and tracestate', async (t) => {
  const q = await openTemp(t)
  const one = await inProducer(() => q.enqueue('mail', 1))
  const many = await inProducer(() => q.enqueueMany([['mail', 2], { kind: 'mail', payload: 3, metadata: { a: 'b' } }]))
  const result = await inProducer(() => q.enqueueResult('mail', 4, { priority: 3 }))
  for (const id of [one, ...many, result.id]) {
    const { metadata } = await q.get(id)
    assert.equal(metadata.traceparent, TRACEPARENT)
    assert.equal(metadata.tracestate, 'vendor=abc')
  }
  assert.equal((await q.get(many[1])).metadata.a, 'b')
  assert.deepEqual((await q.get(await q.enqueue('mail', 5))).metadata, {}, 'no span, no keys')
  const bare = await inProducer(() => q.enqueue('mail', 6), null)
  assert.deepEqual((await q.get(bare)).metadata, { traceparent: TRACEPARENT })
})

test("a caller's own trace keys are kept whole", async (t) => {
  const q = await openTemp(t)
  const mine = `00-${'1'.padStart(32, '0')}-${'2'.padStart(16, '0')}-00`
  const a = await inProducer(() => q.enqueue('mail', 1, { metadata: { traceparent: mine } }))
  const b = await inProducer(() => q.enqueueMany([{ kind: 'mail', metadata: { tracestate: 'only=me' } }]))
  assert.deepEqual((await q.get(a)).metadata, { traceparent: mine })
  assert.deepEqual((await q.get(b[0])).metadata, { tracestate: 'only=me' })
})

test('the Worker runs each attempt in a consumer span linked to the producer', async (t) => {
  exporter.reset()
  const q = await openTemp(t, { backoffBaseMs: 1, backoffCapMs: 1 })
  const id = await inProducer(() => q.enqueue('mail', { n: 1 }))
  const seen = []
  const w = new Worker(q, async (job) => {
    seen.push(api.trace.getActiveSpan().spanContext().spanId) // the handler runs inside its span
    if (job.attempts === 0) throw new Error('transient')
    return 'ok'
  }, { concurrency: 1, pollMs: 50 })
  const run = w.run()
  const [first, second] = await processSpans(2)
  await w.stop()
  await run
  for (const [s, attempt] of [[first, 1], [second, 2]]) {
    assert.equal(s.name, 'process mail')
    assert.equal(s.kind, api.SpanKind.CONSUMER)
    assert.equal(s.attributes['messaging.system'], 'telha')
    assert.equal(s.attributes['messaging.operation.type'], 'process')
    assert.equal(s.attributes['messaging.message.id'], id)
    assert.equal(s.attributes['messaging.destination.name'], 'mail')
    assert.equal(s.attributes['telha.job.attempt'], attempt)
    assert.equal(s.spanContext().traceId, TRACE_ID, 'one trace')
    assert.equal(s.parentSpanContext.spanId, SPAN_ID)
    assert.deepEqual(s.links.map((l) => [l.context.traceId, l.context.spanId]), [[TRACE_ID, SPAN_ID]])
  }
  assert.notEqual(first.spanContext().spanId, second.spanContext().spanId, 'a retry is a span of its own')
  assert.equal(first.status.code, api.SpanStatusCode.ERROR)
  assert.deepEqual(first.events.map((e) => e.name), ['exception'])
  assert.deepEqual(seen, [first.spanContext().spanId, second.spanContext().spanId])
})

test('without @opentelemetry/api installed nothing of it is required', () => {
  // A child where the package cannot be resolved (as when it is not
  // installed): enqueues and a Worker's job, then what was loaded and how
  // often the package was looked for.
  const code = `
    const Module = require('node:module')
    const resolve = Module._resolveFilename
    let tries = 0
    Module._resolveFilename = function (req, ...rest) {
      if (req.startsWith('@opentelemetry/')) tries++
      if (req.startsWith('@opentelemetry/')) throw Object.assign(new Error('not installed: ' + req), { code: 'MODULE_NOT_FOUND' })
      return resolve.call(this, req, ...rest)
    }
    const fs = require('node:fs'), os = require('node:os'), path = require('node:path')
    const { Queue, Worker } = require(${JSON.stringify(path.join(__dirname, '..'))})
    ;(async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'telha-node-otel-'))
      const q = await Queue.open(path.join(dir, 'store'), { reaperIntervalMs: 0 })
      const id = await q.enqueue('mail', 1)
      await q.enqueueMany([['mail', 2]])
      let done
      const ran = new Promise((resolve) => { done = resolve })
      const w = new Worker(q, async () => { done() }, { pollMs: 50 })
      const run = w.run()
      await ran
      await w.stop()
      await run
      await q.enqueue('mail', 3)
      const meta = (await q.get(id)).metadata
      await q.close()
      fs.rmSync(dir, { recursive: true, force: true })
      const loaded = Object.keys(require.cache).filter((k) => k.includes('@opentelemetry'))
      console.log(JSON.stringify({ meta, loaded, tries }))
    })()
  `
  const out = JSON.parse(execFileSync(process.execPath, ['-e', code], { encoding: 'utf8', timeout: 60000 }))
  // Looked for once (the first enqueue), never again: no other path taken.
  assert.deepEqual(out, { meta: {}, loaded: [], tries: 1 })
})

test('with the API installed and nothing registered, handlers run without a span until a provider or a context manager is', () => {
  // A child process: this file registers both globally.
  const code = `
    const api = require('@opentelemetry/api')
    const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks')
    const { BasicTracerProvider } = require('@opentelemetry/sdk-trace-base')
    const { traced } = require(${JSON.stringify(path.join(__dirname, '..', 'lib', 'otel.js'))})
    const seen = [traced()]
    const cm = new AsyncLocalStorageContextManager().enable()
    api.context.setGlobalContextManager(cm)
    seen.push(traced())
    api.context.disable()
    seen.push(traced())
    api.trace.setGlobalTracerProvider(new BasicTracerProvider())
    seen.push(traced())
    api.trace.disable()
    seen.push(traced())
    console.log(JSON.stringify(seen))
  `
  const out = JSON.parse(execFileSync(process.execPath, ['-e', code], { encoding: 'utf8', timeout: 60000, cwd: path.join(__dirname, '..') }))
  assert.deepEqual(out, [false, true, false, true, false])
})

'use strict'
// The Node producer of test_otel.py (issue 45).
//
//   node node_trace_producer.js URL
//
// Registers an OpenTelemetry tracer provider (the SDK's in-memory
// exporter) and context manager, connects to a `telha serve`, and inside
// one span `request` enqueues two jobs of kind `traced`: {"n": 1} and
// {"n": 2, "flaky": true}. Prints one JSON line: the two job ids and the
// request span's trace and span ids as the exporter recorded them.
const path = require('node:path')
const { createRequire } = require('node:module')

const pkg = process.env.TELHA_NODE_PKG || path.join(__dirname, '..', '..', 'node')
// The package's own dev dependencies (one @opentelemetry/api instance with it).
const req = createRequire(path.join(pkg, 'package.json'))
const api = req('@opentelemetry/api')
const { AsyncLocalStorageContextManager } = req('@opentelemetry/context-async-hooks')
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = req('@opentelemetry/sdk-trace-base')
const { Queue } = require(pkg)

async function main () {
  const exporter = new InMemorySpanExporter()
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  api.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }))
  const q = await Queue.connect(process.argv[2], { timeoutMs: 10000 })
  const tracer = api.trace.getTracer('producer')
  const ids = await tracer.startActiveSpan('request', { kind: api.SpanKind.SERVER }, async (span) => {
    try {
      const one = await q.enqueue('traced', { n: 1 })
      const [two] = await q.enqueueMany([{ kind: 'traced', payload: { n: 2, flaky: true } }])
      return [one, two]
    } finally {
      span.end()
    }
  })
  await q.close()
  const [request] = exporter.getFinishedSpans()
  const { traceId, spanId } = request.spanContext()
  console.log(JSON.stringify({ ids, name: request.name, traceId, spanId }))
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})

'use strict'
// A Node worker process for the fleet bench (bench_fleet.py).
//
//   node node_bench_worker.js remote URL WORKER_ID [CONCURRENCY]
//   node node_bench_worker.js local STORE_DIR JOBS
//
// "remote": a Worker (concurrency CONCURRENCY, default 4; no-op handler,
// one job at a time, default lease-ahead) on Queue.connect(URL); prints
// "ready", works until SIGTERM, then stops. TELHA_BENCH_HANDLER_MS: each
// handler sleeps that long; TELHA_BENCH_FIXED_WINDOW=1: minPrefetch =
// maxPrefetch (the fixed window of before issue 37's adaptive one).
// "local": the in-process reference: enqueues JOBS into an embedded store,
// runs the same Worker until all are completed, prints {"rate": jobs/s}.
const path = require('node:path')
const { Queue, Worker } = require(process.env.TELHA_NODE_PKG || path.join(__dirname, '..', '..', 'node'))

const PAYLOAD = { doc: 's3://bucket/key/0001.pdf', tenant: 42, pages: 12 }

async function remote (url, workerId, concurrency) {
  const q = await Queue.connect(url, { timeoutMs: 10000 })
  const ms = Number(process.env.TELHA_BENCH_HANDLER_MS || 0)
  const handler = ms > 0 ? () => new Promise((resolve) => setTimeout(() => resolve(null), ms)) : async () => null
  const fixed = process.env.TELHA_BENCH_FIXED_WINDOW === '1' ? { minPrefetch: 256 } : {}
  const w = new Worker(q, handler, { workerId, concurrency, pollMs: 200, ...fixed })
  const stopped = new Promise((resolve) => process.once('SIGTERM', resolve))
  const running = w.run()
  process.stdout.write('ready\n')
  await stopped
  await w.stop()
  await running
  await q.close()
}

async function local (dir, jobs) {
  const q = await Queue.open(dir, { reaperIntervalMs: 0 })
  for (let i = 0; i < jobs; i += 1000) {
    await q.enqueueMany(Array.from({ length: Math.min(1000, jobs - i) }, () => ['bench', PAYLOAD]))
  }
  let done = 0
  let finish
  const all = new Promise((resolve) => { finish = resolve })
  const w = new Worker(q, async () => null, { concurrency: 4, pollMs: 50 })
  w.on('completed', () => { if (++done === jobs) finish() })
  const t = process.hrtime.bigint()
  const running = w.run()
  await all
  const s = Number(process.hrtime.bigint() - t) / 1e9
  await w.stop()
  await running
  await q.close()
  process.stdout.write(JSON.stringify({ rate: jobs / s }) + '\n')
}

const [mode, a, b, c] = process.argv.slice(2)
const main = mode === 'local' ? local(a, Number(b)) : remote(a, b, Number(c || 4))
main.catch((e) => {
  process.stderr.write(`${e && e.stack ? e.stack : e}\n`)
  process.exit(1)
})

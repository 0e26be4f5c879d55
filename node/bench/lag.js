'use strict'
// Event-loop lag while calls run on the event loop (docs/node.md, "Calls on
// the event loop"): one process enqueues N jobs one `await q.enqueue` at a
// time while a Worker (concurrency 4, no-op handler) drains them, on one
// store with the default settings (reaper on), so RocksDB flushes and
// compacts under the churn. `perf_hooks.monitorEventLoopDelay` samples the
// loop every millisecond; its p50 / p99 / max are printed beside the same
// figures of an idle loop (the timer's own floor), and the number of flushes
// and compactions RocksDB reported (its LOG).
//
//   node bench/lag.js [--n 1000000]
//
// `make bench-node` runs it after bench.js. TELHA_JOBS_LOOP_BUDGET_MS=0
// measures the same with every call on libuv's pool.

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { monitorEventLoopDelay } = require('node:perf_hooks')
const { Queue, Worker, __loopStats } = require('..')

const PAYLOAD = Buffer.from('{"doc":"s3://bucket/key/0001.pdf","tenant":42,"pages":12}')

function arg (name, def) {
  const i = process.argv.indexOf(name)
  return i >= 0 ? Number(process.argv[i + 1]) : def
}
const N = arg('--n', 1000000)

const ms = (ns) => (ns / 1e6).toFixed(2)

async function idle (forMs) {
  const h = monitorEventLoopDelay({ resolution: 1 })
  h.enable()
  await new Promise((resolve) => setTimeout(resolve, forMs))
  h.disable()
  return h
}

/** Flushes and compactions RocksDB logged (its LOG file in the store directory). */
function rocksdbEvents (dir) {
  let log = ''
  for (const f of fs.readdirSync(dir)) if (f === 'LOG' || f.startsWith('LOG.old')) log += fs.readFileSync(path.join(dir, f), 'utf8')
  const count = (re) => (log.match(re) || []).length
  return {
    flushes: count(/"event": "flush_finished"/g),
    compactions: count(/"event": "compaction_finished"/g),
    stalls: count(/(Stalling|Stopping) writes/g)
  }
}

async function main () {
  const base = await idle(1000)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'telha-node-lag-'))
  const store = path.join(dir, 'churn')
  try {
    const q = await Queue.open(store)
    let done = 0
    let finished
    const all = new Promise((resolve) => { finished = resolve })
    const w = new Worker(q, () => null, { workerId: 'lag', concurrency: 4, pollMs: 100 })
    w.on('completed', () => { if (++done === N) finished() })
    const h = monitorEventLoopDelay({ resolution: 1 })
    h.enable()
    const t0 = process.hrtime.bigint()
    const run = w.run()
    for (let i = 0; i < N; i++) await q.enqueue('churn', PAYLOAD)
    const enqueued = Number(process.hrtime.bigint() - t0) / 1e9
    await all
    const secs = Number(process.hrtime.bigint() - t0) / 1e9
    h.disable()
    await w.stop()
    await run
    const onLoop = q.runsOnLoop
    await q.close()
    const ev = rocksdbEvents(store)
    const budget = process.env.TELHA_JOBS_LOOP_BUDGET_MS ?? '1 (default)'
    console.log(`telha-jobs Node event-loop lag: ${N} jobs enqueued one await at a time (${Math.round(N / enqueued)}/s) while a Worker at concurrency 4 completed them (${Math.round(N / secs)} jobs/s overall), TELHA_JOBS_LOOP_BUDGET_MS=${budget}, calls on the loop: ${onLoop}`)
    const ls = __loopStats()
    console.log(`RocksDB during the churn: ${ev.flushes} flushes, ${ev.compactions} compactions, ${ev.stalls} write stalls logged`)
    console.log(`calls run on the loop: ${ls.calls}, the longest ${ls.maxMs.toFixed(2)} ms, ${ls.over1ms} over 1 ms; ${ls.yields} waits for the next turn (budget spent)`)
    console.log(`${'loop delay (monitorEventLoopDelay, 1 ms resolution)'.padEnd(56)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'max ms'.padStart(9)}`)
    for (const [label, x] of [['idle loop (the timer floor)', base], ['during the churn', h]]) {
      console.log(`${label.padEnd(56)}${ms(x.percentile(50)).padStart(9)}${ms(x.percentile(99)).padStart(9)}${ms(x.max).padStart(9)}`)
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})

'use strict'
// Node binding benchmark: jobs/s next to the Rust core's figures measured
// in the same run (core/examples/bench_ref.rs, same 60-byte payload, same
// reaper_interval = 0), as ratios. Targets (issue 15): single enqueue and
// leaseNext + complete ≥ 0.5× Rust, a Worker at concurrency 4 ≥ 0.8× the
// core's 4 pollers; batch forms ≥ 0.8× Rust.
//
//   TELHA_BENCH_REF="cargo run --release -q -p telha-jobs --example bench_ref --" node bench/bench.js [--n N] [--batch B]
//
// `make bench` (bench-node) sets TELHA_BENCH_REF. Without it, only the Node
// figures are printed.
//
//   node bench/bench.js --json [--n N] [--batch B]
//
// measures one round of the two figures of `make bench`'s table
// (scripts/bench_table.py) and prints them as one JSON object: "lifecycle"
// (enqueue + leaseNext + complete, one job at a time, each awaited) and
// "batch_lifecycle" (enqueueMany, leaseMany, completeMany, B at a time).

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execSync } = require('node:child_process')
const { Queue, Worker } = require('..')

// The payload every binding benchmark uses (bench_ref.rs: PAYLOAD, 60 bytes).
const PAYLOAD = Buffer.from('{"doc":"s3://bucket/key/0001.pdf","tenant":42,"pages":12}')
// The same as users write it: a plain object (stored with the payload
// convention, 0x01 + msgpack, 50 bytes).
const OBJECT = { doc: 's3://bucket/key/0001.pdf', tenant: 42, pages: 12 }

function arg (name, def) {
  const i = process.argv.indexOf(name)
  return i >= 0 ? Number(process.argv[i + 1]) : def
}
const N = arg('--n', 20000)
const BATCH = arg('--batch', 100)
// These machines are shared and noisy: each side runs ROUNDS times,
// alternating, and each figure is its best round.
const ROUNDS = arg('--rounds', 3)

const perSec = (n, t0) => n / (Number(process.hrtime.bigint() - t0) / 1e9)
const now = () => process.hrtime.bigint()

async function withStore (dir, name, fn) {
  const q = await Queue.open(path.join(dir, name), { reaperIntervalMs: 0 })
  try {
    return await fn(q)
  } finally {
    await q.close()
  }
}

async function fill (q, n) {
  for (let i = 0; i < n; i += 1000) {
    await q.enqueueMany(Array.from({ length: Math.min(1000, n - i) }, () => ['bench', PAYLOAD]))
  }
}

async function workerRate (q, n, concurrency) {
  await fill(q, n)
  let done = 0
  let finished
  const all = new Promise((resolve) => { finished = resolve })
  const w = new Worker(q, () => null, { workerId: `bench-c${concurrency}`, concurrency, pollMs: 100 })
  w.on('completed', () => { if (++done === n) finished() })
  const t0 = now()
  const run = w.run()
  await all
  const rate = perSec(n, t0)
  await w.stop()
  await run
  return rate
}

function reference () {
  if (!process.env.TELHA_BENCH_REF) return null
  const out = execSync(`${process.env.TELHA_BENCH_REF} --n ${N} --batch ${BATCH}`, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
  return JSON.parse(out.trim().split('\n').pop())
}

async function nodeRound (dir) {
  const node = {}
  await withStore(dir, 'single', async (q) => {
    let t0 = now()
    for (let i = 0; i < N; i++) await q.enqueue('bench', PAYLOAD)
    node.enqueue = perSec(N, t0)
    t0 = now()
    for (let i = 0; i < N; i++) {
      const job = await q.leaseNext('w')
      await q.complete(job)
    }
    node.lease_complete = perSec(N, t0)
  })
  await withStore(dir, 'object', async (q) => {
    let t0 = now()
    for (let i = 0; i < N; i++) await q.enqueue('bench', OBJECT)
    node.enqueue_object = perSec(N, t0)
    t0 = now()
    for (let i = 0; i < N; i++) {
      const job = await q.leaseNext('w')
      await q.complete(job)
    }
    node.lease_complete_object = perSec(N, t0)
  })
  await withStore(dir, 'batch', async (q) => {
    const items = Array.from({ length: BATCH }, () => ['bench', PAYLOAD])
    let t0 = now()
    for (let i = 0; i < N; i += BATCH) await q.enqueueMany(items)
    node.enqueue_batch = perSec(N, t0)
    t0 = now()
    let done = 0
    while (done < N) {
      const jobs = await q.leaseMany('w', BATCH)
      if (!jobs.length) throw new Error(`backlog ran dry at ${done}`)
      await Promise.all(jobs.map((j) => q.complete(j)))
      done += jobs.length
    }
    node.lease_batch_complete = perSec(N, t0)
    await fill(q, N)
    t0 = now()
    done = 0
    while (done < N) {
      const jobs = await q.leaseMany('w', BATCH)
      if (!jobs.length) throw new Error(`backlog ran dry at ${done}`)
      await q.completeMany(jobs)
      done += jobs.length
    }
    node.lease_batch_complete_many = perSec(N, t0)
  })
  node.worker1 = await withStore(dir, 'worker1', (q) => workerRate(q, N, 1))
  node.worker4 = await withStore(dir, 'worker4', (q) => workerRate(q, N, 4))
  node.worker100 = await withStore(dir, 'worker100', (q) => workerRate(q, N, 100))
  return node
}

const best = (a, b) => {
  if (!a) return b
  const out = { ...a }
  for (const [k, v] of Object.entries(b)) if (typeof v === 'number') out[k] = Math.max(out[k] ?? 0, v)
  return out
}

async function main () {
  let ref = null
  let node = null
  for (let round = 1; round <= ROUNDS; round++) {
    console.error(`round ${round} of ${ROUNDS}: Rust reference, then Node ...`)
    const r = reference()
    if (r) ref = best(ref, r)
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'telha-node-bench-'))
    try {
      node = best(node, await nodeRound(dir))
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }

  const rows = [
    ['enqueue (one await per job)', node.enqueue, 'enqueue'],
    ['enqueue, plain-object payload', node.enqueue_object, 'enqueue'],
    [`enqueueMany (${BATCH} per batch)`, node.enqueue_batch, 'enqueue_batch'],
    ['leaseNext + complete (one at a time)', node.lease_complete, 'lease_complete'],
    ['leaseNext + complete, plain-object payload', node.lease_complete_object, 'lease_complete'],
    [`leaseMany(${BATCH}) + complete each (concurrently)`, node.lease_batch_complete, 'lease_batch_complete'],
    [`leaseMany(${BATCH}) + completeMany (batch form)`, node.lease_batch_complete_many, 'lease_batch_complete_many'],
    ['Worker, concurrency 1 (vs Rust lease_next + complete)', node.worker1, 'lease_complete'],
    ['Worker, concurrency 4 (vs Rust 4 pollers)', node.worker4, 'pollers4'],
    ['Worker, concurrency 100 (vs Rust lease_many + complete)', node.worker100, 'lease_batch_complete']
  ]
  console.log(`telha-jobs Node benchmark, n = ${N}, 60-byte payload, best of ${ROUNDS} rounds; Rust = core/examples/bench_ref in the same run`)
  console.log(`${'figure'.padEnd(58)}${'Node jobs/s'.padStart(13)}${'Rust jobs/s'.padStart(13)}${'Node/Rust'.padStart(11)}`)
  for (const [label, v, key] of rows) {
    const r = ref ? ref[key] : null
    console.log(`${label.padEnd(58)}${Math.round(v).toString().padStart(13)}${(r ? Math.round(r).toString() : '-').padStart(13)}${(r ? (v / r).toFixed(2) + '×' : '-').padStart(11)}`)
  }
  if (ref) console.log(`raw RocksDB single-put batch in the same run: ${Math.round(ref.raw_put)}/s; Rust 4 pollers: ${Math.round(ref.pollers4)}/s`)
}

async function tableJson () {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'telha-node-bench-'))
  const out = { n: N, batch: BATCH }
  try {
    await withStore(dir, 'lifecycle', async (q) => {
      const t0 = now()
      for (let i = 0; i < N; i++) {
        await q.enqueue('bench', PAYLOAD)
        const job = await q.leaseNext('w')
        await q.complete(job)
      }
      out.lifecycle = Math.round(perSec(N, t0))
    })
    await withStore(dir, 'batch_lifecycle', async (q) => {
      const items = Array.from({ length: BATCH }, () => ['bench', PAYLOAD])
      const rounds = Math.floor(N / BATCH)
      const t0 = now()
      for (let r = 0; r < rounds; r++) {
        await q.enqueueMany(items)
        const jobs = await q.leaseMany('w', BATCH)
        if (jobs.length !== BATCH) throw new Error(`leaseMany took ${jobs.length} of ${BATCH}`)
        const failed = await q.completeMany(jobs)
        if (failed && failed.some((code) => code !== null)) throw new Error(`completeMany: ${failed}`)
      }
      out.batch_lifecycle = Math.round(perSec(rounds * BATCH, t0))
    })
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
  console.log(JSON.stringify(out))
}

const entry = process.argv.includes('--json') ? tableJson : main
entry().catch((e) => {
  console.error(e)
  process.exit(1)
})

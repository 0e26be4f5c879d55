'use strict'
// One Node worker process of the fleet test (test_fleet.py).
//
//   node node_worker.js URL WORKER_ID MODE RECORDS_FILE
//
// MODE "loop": leaseMany + completeMany by hand; "worker": the Worker class.
// Prints "ready" once connected, then works until SIGTERM, recording every
// lease as a JSON line (job id, generation, worker, lease and settle times
// in epoch seconds, whether the completion was accepted).
const fs = require('node:fs')
const path = require('node:path')
const { Queue, Worker } = require(process.env.TELHA_NODE_PKG || path.join(__dirname, '..', '..', 'node'))

async function main () {
  const [url, worker, mode, file] = process.argv.slice(2)
  const q = await Queue.connect(url, { timeoutMs: 10000 })
  const fd = fs.openSync(file, 'a')
  const record = (job, leasedAt, settledAt, ok) => {
    fs.writeSync(fd, JSON.stringify({ id: job.id, gen: job.generation, worker, leased_at: leasedAt / 1000, settled_at: settledAt / 1000, ok }) + '\n')
  }
  let stopping = false
  const stopped = new Promise((resolve) => process.once('SIGTERM', () => { stopping = true; resolve() }))

  if (mode === 'loop') {
    process.stdout.write('ready\n')
    while (!stopping) {
      const jobs = await q.leaseMany(worker, 20, { waitMs: 200 })
      const leasedAt = Date.now()
      if (jobs.length === 0) continue
      const codes = await q.completeMany(jobs, jobs.map(() => ({ by: worker })))
      const settledAt = Date.now()
      jobs.forEach((job, i) => record(job, leasedAt, settledAt, codes[i] === null))
    }
  } else {
    const w = new Worker(q, async (job) => {
      const t = Date.now()
      record(job, t, Date.now(), null)
      return { by: worker }
    }, { workerId: worker, concurrency: 16, pollMs: 200 })
    process.stdout.write('ready\n')
    const running = w.run()
    await stopped
    await w.stop()
    await running
  }
  fs.closeSync(fd)
  await q.close()
}

main().catch((e) => {
  process.stderr.write(`${e && e.stack ? e.stack : e}\n`)
  process.exit(1)
})

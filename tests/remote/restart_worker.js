'use strict'
// One Node worker process of test_restart.py (issue 36).
//
//   node restart_worker.js URL_LIST WORKER_ID LEDGER
//
// Connects to an array of servers, prints "ready", then runs a Worker (one
// job at a time) on kind "restart" until SIGTERM. The handler appends one
// JSON line per run to LEDGER (job id, generation, worker). On stop it
// prints {"counts": {...}}: the 'error' and 'lost' events the Worker emitted.
const fs = require('node:fs')
const path = require('node:path')
const { Queue, Worker } = require(process.env.TELHA_NODE_PKG || path.join(__dirname, '..', '..', 'node'))

async function main () {
  const [urls, worker, ledger] = process.argv.slice(2)
  const q = await Queue.connect(urls.split(','), { timeoutMs: 20000 })
  const fd = fs.openSync(ledger, 'a')
  const counts = { completed: 0, lost: 0, errors: 0 }
  const stopped = new Promise((resolve) => process.once('SIGTERM', resolve))
  const w = new Worker(q, async (job) => {
    fs.writeSync(fd, JSON.stringify({ id: job.id, gen: job.generation, worker }) + '\n')
    await new Promise((resolve) => setTimeout(resolve, 10))
    return { by: worker }
  }, { workerId: worker, kinds: 'restart', concurrency: 1, pollMs: 500 })
  w.on('completed', () => { counts.completed++ })
  w.on('lost', () => { counts.lost++ })
  w.on('error', (e) => { counts.errors++; process.stderr.write(`worker error: ${e && e.stack}\n`) })
  process.stdout.write('ready\n')
  const running = w.run()
  await stopped
  await w.stop()
  await running
  fs.closeSync(fd)
  process.stdout.write(JSON.stringify({ counts }) + '\n')
  await q.close()
}

main().catch((e) => {
  process.stderr.write(`${e && e.stack}\n`)
  process.exit(1)
})

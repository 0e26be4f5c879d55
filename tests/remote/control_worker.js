// A Node Worker process for test_control.py.
//
//     node control_worker.js URL WORKER_ID KIND
//
// The handler waits (up to a minute) for its signal to abort. Prints
// "ready", then one JSON line per event: {"started": id} when a handler
// begins, {"stopped": id, "error": the abort reason's code or null} when it
// ends. Runs until SIGTERM.
'use strict'

const path = require('path')
const { Queue, Worker } = require(process.env.TELHA_NODE_PKG || path.join(__dirname, '..', '..', 'node'))

const say = (o) => process.stdout.write(JSON.stringify(o) + '\n')

async function main () {
  const [url, worker, kind] = process.argv.slice(2)
  const q = await Queue.connect(url, { timeoutMs: 10000 })
  const w = new Worker(q, async (job, ctx) => {
    say({ started: job.id })
    try {
      await new Promise((resolve, reject) => {
        const t = setTimeout(resolve, 60000)
        ctx.signal.addEventListener('abort', () => {
          clearTimeout(t)
          reject(ctx.signal.reason)
        })
      })
    } catch (e) {
      say({ stopped: job.id, error: (e && e.code) || String(e) })
      throw e
    }
    say({ stopped: job.id, error: null })
    return { by: worker }
  }, { workerId: worker, kinds: [kind], concurrency: 1, pollMs: 200 })
  const stopped = new Promise((resolve) => process.once('SIGTERM', resolve))
  const running = w.run()
  say({ ready: true })
  await stopped
  await w.stop()
  await running
  await q.close()
}

main().catch((e) => {
  process.stderr.write(`${e && e.stack ? e.stack : e}\n`)
  process.exit(1)
})

'use strict'
// The Node producer of test_wait.py (issue 18).
//
//   node node_producer.js URL JOBS
//
// Connects to a `telha serve`, enqueues JOBS jobs of kind `calc` (every
// 97th one marked to fail for good), and waits for each with
// `q.wait(id, { timeoutMs })` (at most 200 waits in flight; it prints
// {"waiting": 200} once they are issued), checking each
// answer: completed with {n, sq: n * n}, or dead with "bad <n>" as its
// last error. Then a wait with a 300 ms timeout on a job nobody works
// (kind `idle`) must come back at about the timeout with state pending,
// and a wait aborted by an AbortSignal must reject. Prints one JSON line:
// the counts, the mismatches (at most 10) and the timings.
const path = require('node:path')
const { Queue } = require(process.env.TELHA_NODE_PKG || path.join(__dirname, '..', '..', 'node'))

const WAIT_MS = 120000
const IN_FLIGHT = 200

async function main () {
  const [url, jobsArg] = process.argv.slice(2)
  const jobs = Number(jobsArg)
  const q = await Queue.connect(url, { timeoutMs: 10000 })
  if (typeof q.wait !== 'function') throw new Error('this Node package has no Queue.wait')
  const items = []
  for (let n = 0; n < jobs; n++) items.push({ kind: 'calc', payload: { n, fail: n % 97 === 7 } })
  const ids = []
  for (let i = 0; i < items.length; i += 250) ids.push(...(await q.enqueueMany(items.slice(i, i + 250))))

  const bad = []
  const latencies = []
  let completed = 0
  let dead = 0
  let next = 0
  const t0 = Date.now()
  const one = async () => {
    while (next < ids.length) {
      const n = next++
      const started = Date.now()
      const info = await q.wait(ids[n], { timeoutMs: WAIT_MS })
      latencies.push(Date.now() - started)
      const fail = n % 97 === 7
      if (fail && info.state === 'dead' && info.lastError === `PermanentError: bad ${n}`) {
        dead++
      } else if (!fail && info.state === 'completed' && info.result && info.result.n === n &&
                 info.result.sq === n * n && info.id === ids[n]) {
        completed++
      } else if (bad.length < 10) {
        bad.push({ n, id: ids[n], state: info.state, result: info.result, lastError: info.lastError })
      } else {
        bad.push(null)
      }
    }
  }
  const all = Promise.all(Array.from({ length: IN_FLIGHT }, one))
  // The test holds kind `calc` paused until it reads this: the first waits
  // are then really waiting, woken by their jobs' completions.
  setTimeout(() => process.stdout.write(JSON.stringify({ waiting: IN_FLIGHT }) + '\n'), 300)
  await all
  const allMs = Date.now() - t0

  // A wait with a short timeout on a job nobody works.
  const idle = await q.enqueue('idle', { nobody: true })
  const t1 = Date.now()
  const idleInfo = await q.wait(idle, { timeoutMs: 300 })
  const idleMs = Date.now() - t1

  // A wait aborted by its signal.
  const ac = new AbortController()
  setTimeout(() => ac.abort(), 200)
  const t2 = Date.now()
  let aborted = null
  try {
    await q.wait(idle, { timeoutMs: WAIT_MS, signal: ac.signal })
  } catch (e) {
    aborted = (e && (e.name || e.code)) || String(e)
  }
  const abortMs = Date.now() - t2

  latencies.sort((a, b) => a - b)
  const out = {
    jobs,
    completed,
    dead,
    bad: bad.length,
    badSample: bad.filter(Boolean),
    allMs,
    waitP50Ms: latencies[Math.floor(latencies.length / 2)],
    idleState: idleInfo.state,
    idleMs,
    aborted,
    abortMs
  }
  process.stdout.write(JSON.stringify(out) + '\n')
  await q.close()
}

main().catch((e) => {
  process.stderr.write(`${e && e.stack ? e.stack : e}\n`)
  process.exit(1)
})

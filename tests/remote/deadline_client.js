'use strict'
// The Node side of test_deadlines.py (issue 48).
//
//   node deadline_client.js SERVER_URL SILENT_URL SERVER_PID TIMEOUT_MS
//
// Against SILENT_URL (accepts TCP, never answers): `Queue.connect` with
// `timeoutMs` rejects. Against the `telha serve` at SERVER_URL: a first call
// works, then the server is paused (SIGSTOP to SERVER_PID, continued with
// SIGCONT in `finally` whatever happens) and each call rejects: `stats`,
// `enqueue`, `leaseNext` / `leaseMany` with a 1 s wait (a Worker's poll),
// `subscribe`, a new `connect`; after SIGCONT the same client works again.
// Prints one JSON line: each check's error code, time taken and deadline,
// and "after_resume": "ok" or the error.
const path = require('node:path')
const { Queue } = require(process.env.TELHA_NODE_PKG || path.join(__dirname, '..', '..', 'node'))

async function timed (name, deadlineMs, fn) {
  const start = performance.now()
  try {
    await fn()
  } catch (e) {
    return { name, code: e.code, message: String(e.message), took_ms: performance.now() - start, deadline_ms: deadlineMs }
  }
  return { name, code: 'RESOLVED', took_ms: performance.now() - start, deadline_ms: deadlineMs }
}

async function main () {
  const [url, silent, pidArg, timeoutArg] = process.argv.slice(2)
  const pid = Number(pidArg)
  const timeoutMs = Number(timeoutArg)
  const checks = []
  checks.push(await timed('connect to a silent listener', timeoutMs, () => Queue.connect(silent, { timeoutMs })))

  const q = await Queue.connect(url, { timeoutMs })
  await q.stats()
  process.kill(pid, 'SIGSTOP')
  try {
    checks.push(await timed('stats', timeoutMs, () => q.stats()))
    checks.push(await timed('enqueue', timeoutMs, () => q.enqueue('idle', Buffer.from('x'))))
    checks.push(await timed('leaseNext waitMs 1000', 1000 + timeoutMs, () => q.leaseNext('w', { kinds: 'busy', waitMs: 1000 })))
    checks.push(await timed('leaseMany waitMs 1000 (a Worker poll)', 1000 + timeoutMs, () => q.leaseMany('w', 4, { kinds: 'busy', waitMs: 1000 })))
    checks.push(await timed('subscribe', timeoutMs, () => q.subscribe()))
    checks.push(await timed('a new connect', timeoutMs, () => Queue.connect(url, { timeoutMs })))
  } finally {
    process.kill(pid, 'SIGCONT')
  }
  let afterResume = 'ok'
  try {
    await q.stats()
    await q.enqueue('busy', Buffer.from('y'))
    const job = await q.leaseNext('w', { kinds: 'busy', waitMs: 1000 })
    if (job === null) throw new Error('no job leased after SIGCONT')
    await q.complete(job)
  } catch (e) {
    afterResume = `${e.code}: ${e.message}`
  }
  await q.close()
  console.log(JSON.stringify({ checks, after_resume: afterResume }))
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})

// A Node worker process for test_schedules.py.
//
//     node schedule_worker.js URL WORKER_ID KIND
//
// Leases KIND one job at a time through `telha serve`, completes it, and
// prints one JSON line per job: {"job": id, "schedule": name, "slot": slot}.
// Prints "ready" first; runs until SIGTERM.
'use strict'

const path = require('path')
const { Queue } = require(process.env.TELHA_NODE_PKG || path.join(__dirname, '..', '..', 'node'))

const say = (o) => process.stdout.write(JSON.stringify(o) + '\n')

async function main () {
  const [url, worker, kind] = process.argv.slice(2)
  const q = await Queue.connect(url, { timeoutMs: 10000 })
  let stop = false
  process.on('SIGTERM', () => { stop = true })
  say({ ready: worker })
  while (!stop) {
    const job = await q.leaseNext(worker, { kinds: kind, waitMs: 500 })
    if (job === null) continue
    const ref = job.schedule
    await q.complete(job)
    const slot = ref ? (ref.slot instanceof Date ? ref.slot.getTime() / 1000 : ref.slot / 1000) : null
    say({ job: job.id, schedule: ref ? ref.name : null, slot })
  }
  await q.close()
}

main().catch((e) => { console.error(e); process.exit(1) })

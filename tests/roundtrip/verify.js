'use strict'
// Round trip, step 5 (Node): every job read back in Node after Python and C
// settled them: the decoded payloads and results equal values.json, and the
// bytes equal what the manifest recorded (Node's payloads, Python's results).
//
//   node verify.js STORE MANIFEST
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { Queue } = require(path.resolve(__dirname, '../../node'))

const REASON = 'rejected by the C worker'

async function main () {
  const [store, manifestPath] = process.argv.slice(2)
  const values = JSON.parse(fs.readFileSync(path.join(__dirname, 'values.json'), 'utf8'))
  const { jobs } = JSON.parse(fs.readFileSync(manifestPath, 'utf8'))
  const half = Math.floor(jobs.length / 2)
  const q = await Queue.open(store, { reaperIntervalMs: 0 })
  try {
    for (const [i, want] of jobs.entries()) {
      const info = await q.get(want.id)
      assert.ok(info, `job ${i} is missing`)
      assert.deepStrictEqual(info.payload, values.jobs[i].payload, `job ${i}: payload`)
      assert.equal(info.payloadBytes.toString('hex'), want.payload_hex, `job ${i}: payload bytes`)
      if (i < half) {
        assert.equal(info.state, 'completed')
        assert.deepStrictEqual(info.result, values.jobs[i].result, `job ${i}: Python's dict result`)
        assert.equal(info.resultBytes.toString('hex'), want.result_hex, `job ${i}: result bytes`)
      } else {
        assert.equal(info.state, 'dead')
        assert.equal(info.result ?? null, null, `job ${i}: no result`)
        assert.equal(info.lastError, REASON)
      }
    }
  } finally {
    await q.close()
  }
  console.log(`roundtrip node: ${jobs.length} jobs read back identically (payloads, Python's results, C's failures)`)
}

main().catch((e) => { console.error(e); process.exit(1) })

'use strict'
// Round trip, step 1 (Node): enqueue every payload of values.json as a
// plain object, read each back, and write the manifest the next steps check
// against: the job ids in enqueue order and the exact stored payload bytes.
//
//   node enqueue.js STORE MANIFEST
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { Queue, encodePayload } = require(path.resolve(__dirname, '../../node'))

async function main () {
  const [store, manifest] = process.argv.slice(2)
  const values = JSON.parse(fs.readFileSync(path.join(__dirname, 'values.json'), 'utf8'))
  const q = await Queue.open(store, { reaperIntervalMs: 0 })
  const jobs = []
  let checked = 0
  try {
    for (const v of values.jobs) {
      const id = await q.enqueue(values.kind, v.payload)
      const info = await q.get(id)
      assert.equal(info.state, 'pending')
      assert.deepStrictEqual(info.payload, v.payload, `job ${id}: the payload reads back as enqueued`)
      assert.deepStrictEqual(info.payloadBytes, encodePayload(v.payload), `job ${id}: the stored bytes are the convention's`)
      jobs.push({ id, payload_hex: info.payloadBytes.toString('hex') })
      checked++
    }
  } finally {
    await q.close()
  }
  fs.writeFileSync(manifest, JSON.stringify({ kind: values.kind, jobs }, null, 1) + '\n')
  console.log(`roundtrip node: enqueued ${jobs.length} plain-object payloads, ${checked} read back identically`)
}

main().catch((e) => { console.error(e); process.exit(1) })

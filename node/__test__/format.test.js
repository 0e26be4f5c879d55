'use strict'
// A store written by a newer, incompatible format is refused with
// UNSUPPORTED_FORMAT and left byte for byte as it was.
const test = require('node:test')
const assert = require('node:assert/strict')
const crypto = require('node:crypto')
const fs = require('node:fs')
const path = require('node:path')
const { Queue, ErrorCode } = require('..')
const { tempStore } = require('./helpers.js')

/** Every file under `dir` with the hash of its bytes. */
function snapshot (dir) {
  const out = {}
  for (const name of fs.readdirSync(dir, { recursive: true }).sort()) {
    const p = path.join(dir, name)
    if (fs.statSync(p).isFile()) out[name] = crypto.createHash('sha256').update(fs.readFileSync(p)).digest('hex')
  }
  return out
}

test('a store whose telha.format names a newer format is refused with UNSUPPORTED_FORMAT, its files unchanged', async (t) => {
  assert.equal(ErrorCode.UNSUPPORTED_FORMAT, 'UNSUPPORTED_FORMAT')
  const dir = tempStore(t)
  const q = await Queue.open(dir, { reaperIntervalMs: 0 })
  await q.enqueue('embed', { n: 1 })
  await q.close()
  fs.writeFileSync(path.join(dir, 'telha.format'), 'format = 9\ncompatible_from = 9\n')
  const before = snapshot(dir)
  await assert.rejects(Queue.open(dir, { reaperIntervalMs: 0 }), (e) => {
    assert.equal(e.code, 'UNSUPPORTED_FORMAT', `${e.code}: ${e.message}`)
    assert.match(e.message, /format/)
    return true
  })
  assert.deepEqual(snapshot(dir), before, 'the refused open changed the store')
})

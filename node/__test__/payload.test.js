'use strict'
// The cross-language payload convention: a version byte, then msgpack.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { encodePayload, decodePayload } = require('..')
const { openTemp, openCopyOf } = require('./helpers.js')

test('plain values are stored as the convention: 0x01 then msgpack, the bytes Python writes', () => {
  // msgpack of {"doc": "a.pdf", "pages": 12, "ok": true, "tags": ["x", null]}
  const expected = Buffer.from([
    0x01, 0x84,
    0xa3, 0x64, 0x6f, 0x63, 0xa5, 0x61, 0x2e, 0x70, 0x64, 0x66,
    0xa5, 0x70, 0x61, 0x67, 0x65, 0x73, 0x0c,
    0xa2, 0x6f, 0x6b, 0xc3,
    0xa4, 0x74, 0x61, 0x67, 0x73, 0x92, 0xa1, 0x78, 0xc0
  ])
  const bytes = encodePayload({ doc: 'a.pdf', pages: 12, ok: true, tags: ['x', null] })
  assert.deepEqual(bytes, expected)
  assert.deepEqual(decodePayload(expected), { doc: 'a.pdf', pages: 12, ok: true, tags: ['x', null] })
  // Whole numbers are msgpack integers; others float64.
  assert.deepEqual(encodePayload(1.5), Buffer.from([0x01, 0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0]))
  assert.deepEqual(encodePayload(-1), Buffer.from([0x01, 0xff]))
})

test('values round-trip through a job: objects, arrays, numbers, bigints, buffers, unicode', async (t) => {
  const q = await openTemp(t)
  const value = {
    text: 'héllo ✓ 𝄞',
    int: 42,
    neg: -7,
    float: 0.25,
    big: 2n ** 60n,
    huge: 2n ** 64n - 1n,
    safe: Number.MAX_SAFE_INTEGER,
    flag: false,
    none: null,
    list: [1, 'two', [3]],
    blob: Buffer.from([0, 1, 2, 255]),
    bytes: new Uint8Array([9, 8]),
    nested: { deeper: { deepest: true } },
    '': 'empty key'
  }
  await q.enqueue('embed', value)
  const job = await q.leaseNext('w')
  assert.deepEqual(job.payload, { ...value, bytes: Buffer.from([9, 8]) })
  assert.equal(job.payloadBytes[0], 0x01)
  for (const scalar of ['just a string', 3, null, true, [1, 2]]) {
    await q.enqueue('embed', scalar)
    assert.deepEqual((await q.leaseNext('w')).payload, scalar)
  }
  // undefined is nil, like a missing payload.
  await q.enqueue('embed')
  assert.equal((await q.leaseNext('w')).payload, null)
})

test('Buffer and Uint8Array payloads pass through untouched and read back as a Buffer', async (t) => {
  const q = await openTemp(t)
  const raw = Buffer.from('{"doc":"s3://bucket/key/0001.pdf"}')
  const id = await q.enqueue('embed', raw)
  const job = await q.leaseNext('w')
  assert.ok(Buffer.isBuffer(job.payload))
  assert.deepEqual(job.payload, raw)
  assert.deepEqual(job.payloadBytes, raw)
  // Bytes that happen to follow the convention stay bytes.
  await q.enqueue('embed', new Uint8Array([0x01, 0xa1, 0x61]))
  assert.deepEqual((await q.leaseNext('w')).payload, Buffer.from([0x01, 0xa1, 0x61]))
  // Results too.
  await q.complete(job, Buffer.from([0xde, 0xad]))
  const info = await q.get(id)
  assert.deepEqual(info.result, Buffer.from([0xde, 0xad]))
  assert.deepEqual(info.resultBytes, Buffer.from([0xde, 0xad]))
})

/** Bytes that look like the convention: 0x01 then one msgpack value. */
const LOOKALIKES = [Buffer.from([1, 2]), Buffer.from([0x01, 0xc0]), Buffer.from([0x01, 0x91, 0x01])]

test('a Buffer always comes back as a Buffer, even when it looks like the convention (enqueue, enqueueMany, get)', async (t) => {
  const q = await openTemp(t)
  for (const b of LOOKALIKES) {
    const id = await q.enqueue('embed', b)
    const job = await q.leaseNext('w')
    assert.ok(Buffer.isBuffer(job.payload), `${b.toString('hex')} read back as ${JSON.stringify(job.payload)}`)
    assert.deepEqual(job.payload, b)
    assert.equal(job.payloadEncoding, 'bytes')
    const info = await q.get(id)
    assert.deepEqual(info.payload, b)
    assert.equal(info.payloadEncoding, 'bytes')
    await q.complete(job)
  }
  const ids = await q.enqueueMany(LOOKALIKES.map((b) => ['embed', new Uint8Array(b)]))
  const jobs = await q.leaseMany('w', 10)
  assert.deepEqual(jobs.map((j) => j.id), ids)
  assert.deepEqual(jobs.map((j) => j.payload), LOOKALIKES)
  // Plain values, including the ones those bytes would decode to, stay values.
  for (const v of [2, null, [1]]) {
    const id = await q.enqueue('embed', v)
    assert.deepEqual((await q.leaseNext('w')).payload, v)
    const info = await q.get(id)
    assert.deepEqual(info.payload, v)
    assert.equal(info.payloadEncoding, 'value')
  }
})

test('a Buffer result always comes back as a Buffer (complete and completeMany); values as values', async (t) => {
  const q = await openTemp(t)
  const ids = await q.enqueueMany(Array.from({ length: 9 }, (_, i) => ['embed', i]))
  const jobs = await q.leaseMany('w', 9)
  for (let i = 0; i < 3; i++) await q.complete(jobs[i], LOOKALIKES[i])
  assert.deepEqual(await q.completeMany(jobs.slice(3, 6), LOOKALIKES), [null, null, null])
  assert.deepEqual(await q.completeMany(jobs.slice(6, 9), [2, null, [1]]), [null, null, null])
  for (let i = 0; i < 6; i++) {
    const info = await q.get(ids[i])
    assert.ok(Buffer.isBuffer(info.result), `${ids[i]}: ${JSON.stringify(info.result)}`)
    assert.deepEqual(info.result, LOOKALIKES[i % 3])
    assert.deepEqual(info.resultBytes, LOOKALIKES[i % 3])
    assert.equal(info.resultEncoding, 'bytes')
  }
  const values = await Promise.all(ids.slice(6).map((id) => q.get(id)))
  assert.deepEqual(values.map((v) => v.result), [2, null, [1]])
  assert.deepEqual(values.map((v) => v.resultEncoding), ['value', 'value', 'value'])
  // No result at all: nothing recorded.
  const id = await q.enqueue('embed', 1)
  await q.complete(await q.leaseNext('w'))
  const none = await q.get(id)
  assert.equal(none.result, undefined)
  assert.equal(none.resultEncoding, 'unknown')
  // A null result of the batch form's fast path (one byte per job) is a value.
  const id2 = await q.enqueue('embed', 1)
  await q.completeMany([await q.leaseNext('w')], [null])
  assert.equal((await q.get(id2)).result, null)
  assert.equal((await q.get(id2)).resultEncoding, 'value')
})

test('rows written before encodings were recorded keep their reading (the committed format-1 fixture store)', async (t) => {
  const fixture = path.resolve(__dirname, '../../core/tests/fixtures/store-format-1')
  assert.ok(fs.existsSync(fixture), fixture)
  const q = await openCopyOf(t, fixture)
  const { jobs, next } = await q.list()
  assert.equal(jobs.length, 7)
  assert.equal(next, null)
  for (const j of jobs) assert.equal(j.payloadEncoding, 'unknown')
  const by = (key) => jobs.find((j) => j.idempotencyKey === key)
  // Convention bytes read as values, as they always did...
  const done = by('fixture-done')
  assert.equal(done.payload, 'done')
  assert.equal(done.result, 'ok')
  assert.equal(done.resultEncoding, 'unknown')
  assert.deepEqual(by('fixture-ready').payload, { k: 'v' })
  // ...and anything else as bytes.
  const dead = jobs.find((j) => j.state === 'dead')
  assert.deepEqual(dead.payload, Buffer.from('raw bytes'))
  assert.equal(dead.lastError, 'poison document')
})

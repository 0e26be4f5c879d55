'use strict'
// The cross-language payload convention: a version byte, then msgpack.
const test = require('node:test')
const assert = require('node:assert/strict')
const { encodePayload, decodePayload } = require('..')
const { openTemp } = require('./helpers.js')

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

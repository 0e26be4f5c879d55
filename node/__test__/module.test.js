'use strict'
// CommonJS `require` and ESM `import` both load the package, and agree.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

test('CommonJS require exposes the API', () => {
  const telha = require('telha-jobs')
  assert.equal(typeof telha.Queue.open, 'function')
  assert.equal(typeof telha.Worker, 'function')
  assert.ok(new telha.Permanent('x') instanceof Error)
  assert.deepEqual(Object.keys(telha.ErrorCode), [
    'INVALID_ARGUMENT', 'NOT_FOUND', 'ABORTED', 'STORE_LOCKED', 'STORAGE', 'CORRUPTION', 'CLOSED', 'UNSUPPORTED_FORMAT',
    'CANCELLED', 'WRONG_STATE', 'UNAVAILABLE'
  ])
  assert.equal(telha, require('..'))
})

test('ESM import exposes the same objects, named and default', async () => {
  const esm = await import('telha-jobs')
  const cjs = require('telha-jobs')
  assert.equal(esm.Queue, cjs.Queue)
  assert.equal(esm.Worker, cjs.Worker)
  assert.equal(esm.default, cjs)
})

test('an .mjs program can open a queue and run a job', () => {
  const out = execFileSync(process.execPath, [path.join(__dirname, 'fixtures', 'esm_roundtrip.mjs')], { encoding: 'utf8' })
  assert.equal(out.trim(), 'completed {"hello":"esm"}')
})

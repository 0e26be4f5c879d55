'use strict'
// TypeScript types cover the API: a strict compile of types/usage.ts passes,
// including its @ts-expect-error lines (each must be an error).
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

test('the TypeScript types describe the API (tsc --strict over a usage program)', () => {
  const tsc = require.resolve('typescript/bin/tsc')
  const r = spawnSync(process.execPath, [
    tsc, '--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext',
    '--types', 'node', path.join(__dirname, 'types', 'usage.ts')
  ], { encoding: 'utf8', cwd: path.join(__dirname, '..') })
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`)
})

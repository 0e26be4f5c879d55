'use strict'
// No panic escapes a native call: one in any of its parts (reading its
// arguments, the core's work, turning the answer into JS values, a
// lease-wait thread) becomes the typed STORAGE error, and the process
// carries on. Each case runs in a child process, so a panic that did
// escape (napi's callbacks are `extern "C"`: the process aborts) fails it
// instead of the runner.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const PKG = path.resolve(__dirname, '..')

function child (code) {
  return spawnSync(process.execPath, ['-e', `
    const native = require(${JSON.stringify(path.join(PKG, 'index.js'))})
    const { Queue } = require(${JSON.stringify(PKG)})
    ;(async () => { ${code} })().then(() => console.log('alive'), (e) => { console.log('failed: ' + e.stack); process.exit(3) })
  `], { encoding: 'utf8', timeout: 60000 })
}

const typedStorage = `(e) => {
  if (!(e instanceof Error) || e.code !== 'STORAGE' || !/panicked \\(a bug; please report it\\)/.test(e.message)) throw new Error('not the typed error: ' + (e && e.code) + ' ' + (e && e.message))
  console.log(e.message)
}`

for (const at of ['call', 'task', 'convert', 'thread']) {
  test(`a panic ${at === 'call' ? 'while reading arguments' : at === 'task' ? "in the core's work" : at === 'convert' ? 'while converting the answer' : 'on a lease-wait thread'} is a STORAGE error, and the process lives on`, () => {
    const call = at === 'thread' ? 'native.__panicOnThreadForTest()' : `native.__panicForTest(${JSON.stringify(at)})`
    const r = child(`
      let p
      try { p = ${call} } catch (e) { (${typedStorage})(e); return }
      await p.then(() => { throw new Error('resolved') }, ${typedStorage})
      await native.__panicForTest('none')
    `)
    assert.equal(r.status, 0, `exit ${r.status} ${r.signal || ''}\n${r.stdout}\n${r.stderr}`)
    assert.match(r.stdout, /panicked.*\nalive\n$/s)
  })
}

test('a payload holding the most negative 64-bit integer reads back as that BigInt (it used to panic and abort)', () => {
  const r = child(`
    const fs = require('node:fs'), os = require('node:os'), path = require('node:path')
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'telha-node-'))
    try {
      const q = await Queue.open(path.join(dir, 'store'), { reaperIntervalMs: 0 })
      const v = { min: -(2n ** 63n), max: 2n ** 64n - 1n, safe: -(2 ** 53 - 1) }
      const id = await q.enqueue('embed', v)
      const job = await q.leaseNext('w')
      if (job.payload.min !== v.min || job.payload.max !== v.max || job.payload.safe !== v.safe) throw new Error(String(job.payload.min))
      await q.complete(job, v)
      if ((await q.get(id)).result.min !== v.min) throw new Error('result')
      await q.close()
    } finally { fs.rmSync(dir, { recursive: true, force: true }) }
  `)
  assert.equal(r.status, 0, `exit ${r.status} ${r.signal || ''}\n${r.stdout}\n${r.stderr}`)
  assert.match(r.stdout, /alive/)
})

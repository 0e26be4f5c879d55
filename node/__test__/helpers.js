'use strict'
// A temp-dir guard per test store, and small waiting helpers.
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { Queue } = require('..')

/** A fresh directory for one test's store, removed after the test. */
function tempStore (t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'telha-node-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  return path.join(dir, 'store')
}

/**
 * Open a queue on a fresh store (no background reaper unless asked); closed
 * after the test. With `TELHA_TEST_REMOTE=1` (remote.test.js sets it), the
 * store is served in this process and the test gets a client of it
 * (`Queue.connect`) instead: the same cases, over the network.
 */
async function openTemp (t, options = {}) {
  const local = await Queue.open(tempStore(t), { reaperIntervalMs: 0, ...options })
  if (process.env.TELHA_TEST_REMOTE !== '1') {
    t.after(() => local.close())
    return local
  }
  const server = await local.serve({ listen: '127.0.0.1:0' })
  const q = await Queue.connect(server.url, { timeoutMs: 10000 })
  t.after(async () => {
    await q.close()
    await server.close({ graceMs: 1000 })
    await local.close()
  })
  return q
}

/**
 * Open a copy of the store directory `src` (a committed fixture), as
 * `openTemp` does: served and reached with `Queue.connect` under
 * `TELHA_TEST_REMOTE=1`.
 */
async function openCopyOf (t, src, options = {}) {
  const dir = tempStore(t)
  fs.cpSync(src, dir, { recursive: true })
  const local = await Queue.open(dir, { reaperIntervalMs: 0, ...options })
  if (process.env.TELHA_TEST_REMOTE !== '1') {
    t.after(() => local.close())
    return local
  }
  const server = await local.serve({ listen: '127.0.0.1:0' })
  const q = await Queue.connect(server.url, { timeoutMs: 10000 })
  t.after(async () => {
    await q.close()
    await server.close({ graceMs: 1000 })
    await local.close()
  })
  return q
}

/** An embedded queue served on a free loopback port: `{ local, server }`, stopped after the test. */
async function serveTemp (t, options = {}, serveOptions = {}) {
  const local = await Queue.open(tempStore(t), { reaperIntervalMs: 0, ...options })
  const server = await local.serve({ listen: '127.0.0.1:0', ...serveOptions })
  t.after(async () => {
    await server.close({ graceMs: 1000 })
    await local.close()
  })
  return { local, server }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

module.exports = { tempStore, openTemp, openCopyOf, serveTemp, sleep }

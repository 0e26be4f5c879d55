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

/** Open a queue on a fresh store (no background reaper unless asked); closed after the test. */
async function openTemp (t, options = {}) {
  const q = await Queue.open(tempStore(t), { reaperIntervalMs: 0, ...options })
  t.after(() => q.close())
  return q
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

module.exports = { tempStore, openTemp, sleep }

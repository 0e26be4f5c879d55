'use strict'
// A temp-dir guard per test store, and small waiting helpers.
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const { Queue } = require('..')

/** The `telha` binary: $TELHA_BIN, else $CARGO_TARGET_DIR/release/telha (`make build-cli`). */
const TELHA = process.env.TELHA_BIN ||
  path.join(process.env.CARGO_TARGET_DIR || path.join(os.homedir(), '.cache/telha-jobs/target'), 'release', 'telha')

/**
 * A real `telha serve` process on a fresh store, configured by `toml` (the
 * `[jobs]` table): `{ url, child }`; stopped by its pid after the test
 * (SIGTERM, then SIGKILL).
 */
async function telhaServe (t, toml = '[jobs]\nlease_ttl = "3s"\nreaper_interval = "200ms"\n') {
  assert.ok(fs.existsSync(TELHA), `the telha binary is not built at ${TELHA} (make build-cli, or set TELHA_BIN)`)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'telha-node-serve-'))
  const cfg = path.join(dir, 'telha.toml')
  fs.writeFileSync(cfg, toml)
  const child = spawn(TELHA, ['--db', path.join(dir, 'store'), 'serve', '--listen', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TELHA_JOBS_CONFIG: cfg }
  })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      process.kill(child.pid, 'SIGTERM')
      const timer = setTimeout(() => process.kill(child.pid, 'SIGKILL'), 15000)
      await exited
      clearTimeout(timer)
    }
    fs.rmSync(dir, { recursive: true, force: true })
  })
  const url = await new Promise((resolve, reject) => {
    let out = ''
    const onData = (d) => {
      out += d
      const m = /listening on (\S+)/.exec(out)
      if (m) {
        child.stdout.off('data', onData)
        resolve(m[1])
      }
    }
    child.stdout.on('data', onData)
    child.once('exit', (code) => reject(new Error(`telha serve exited (${code}): ${out}${stderr}`)))
  })
  return { url, child }
}

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

module.exports = { tempStore, openTemp, openCopyOf, serveTemp, sleep, telhaServe, TELHA }

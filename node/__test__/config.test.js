'use strict'
// Queue.open options go through the core's key table: driven from the
// table itself (configKeys()), every key is settable globally and per kind
// and reads back through settings(); telha.d.ts types exactly the table's
// keys. A key added to the core's table without working here fails.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const ts = require('typescript')
const { Queue, configKeys } = require('..')
const { tempStore, serveTemp } = require('./helpers.js')

const KEYS = configKeys()
const PER_KIND = KEYS.filter((k) => k.perKind)
const KIND = 'ingest:pdf'

/** A value of the key's type other than its default (durations doubled, so a cap stays above its base). */
function sample (k) {
  switch (k.type) {
    case 'duration':
    case 'retention':
      // An off default (false: no limit) gets a duration.
      return k.defaultValue === 0 || k.defaultValue === false ? 4321 : k.defaultValue * 2
    // A default at the top of its range (max_snoozes: u32::MAX, unlimited) goes down.
    case 'count': return k.defaultValue >= 2 ** 32 - 1 ? k.defaultValue - 7 : k.defaultValue + 7
    case 'factor': return k.defaultValue + 0.75
    case 'fraction': return 0.35
    case 'flag': return !k.defaultValue
    default: throw new Error(`${k.name}: the test knows no type ${k.type}`)
  }
}

/** A value of a type the key does not take. */
function wrongType (k) {
  return k.type === 'flag' ? 1 : 'soon'
}

async function openWith (t, options) {
  const q = await Queue.open(tempStore(t), { reaperIntervalMs: 0, ...options })
  t.after(() => q.close())
  return q
}

test('the table lists every key once, with its option name (camelCase, Ms after durations) and its default', () => {
  assert.ok(KEYS.length >= 10)
  assert.equal(new Set(KEYS.map((k) => k.name)).size, KEYS.length)
  for (const k of KEYS) {
    const camel = k.key.replace(/_([a-z])/g, (_, c) => c.toUpperCase())
    const ms = k.type === 'duration' || k.type === 'retention' ? 'Ms' : ''
    assert.equal(k.name, camel + ms, k.key)
    assert.ok(k.doc.length > 0 && k.default.length > 0, k.key)
    assert.ok(k.env === undefined || k.env.startsWith('TELHA_JOBS_'), k.key)
  }
})

test('every key set through Queue.open reads back through settings(); unset ones read their default', async (t) => {
  const defaults = (await openWith(t, {})).settings()
  for (const k of KEYS) {
    const want = k.name === 'reaperIntervalMs' ? 0 : k.defaultValue
    assert.deepEqual(defaults[k.name], want, `${k.name}: default`)
  }
  assert.deepEqual(defaults.kinds, {})
  for (const k of KEYS) {
    const q = await openWith(t, { [k.name]: sample(k) })
    const s = q.settings()
    assert.deepEqual(s[k.name], sample(k), `${k.name} did not read back`)
    assert.deepEqual(Object.keys(s).sort(), [...KEYS.map((x) => x.name), 'kinds'].sort())
    await q.close()
  }
})

test('every per-kind key set through kinds reads back for that kind; the others are refused there', async (t) => {
  for (const k of KEYS) {
    const options = { kinds: { [KIND]: { [k.name]: sample(k) } } }
    if (!k.perKind) {
      await assert.rejects(Queue.open(tempStore(t), options), (e) => e.code === 'INVALID_ARGUMENT' && e.message.includes(`${k.name} is not a per-kind option`))
      continue
    }
    const q = await openWith(t, options)
    assert.deepEqual(q.settings().kinds, { [KIND]: { [k.name]: sample(k) } }, k.name)
    await q.close()
  }
  // All of them at once, for two kinds.
  const all = Object.fromEntries(PER_KIND.map((k) => [k.name, sample(k)]))
  const q = await openWith(t, { kinds: { [KIND]: all, embed: { [PER_KIND[0].name]: sample(PER_KIND[0]) } } })
  assert.deepEqual(q.settings().kinds[KIND], all)
})

test('every key refuses a value of the wrong type with a TypeError naming it', async (t) => {
  for (const k of KEYS) {
    await assert.rejects(Queue.open(tempStore(t), { [k.name]: wrongType(k) }),
      (e) => e instanceof TypeError && e.code === 'INVALID_ARGUMENT' && e.message.startsWith(k.name), k.name)
  }
  await assert.rejects(Queue.open(tempStore(t), { completedRetentionMs: true }), TypeError)
  await assert.rejects(Queue.open(tempStore(t), { kinds: 'embed' }), TypeError)
  await assert.rejects(Queue.open(tempStore(t), { kinds: { embed: 5 } }), TypeError)
})

test('a retention of false or null keeps completed jobs forever', async (t) => {
  for (const v of [false, null]) assert.equal((await openWith(t, { completedRetentionMs: v })).settings().completedRetentionMs, false)
})

test('the nested backoff form (deprecated) still sets the backoff keys, globally and per kind; not both spellings at once', async (t) => {
  const q = await openWith(t, {
    backoff: { baseMs: 1500, factor: 2, capMs: 90000 },
    kinds: { [KIND]: { backoff: { baseMs: 7000 } } }
  })
  const s = q.settings()
  assert.deepEqual([s.backoffBaseMs, s.backoffFactor, s.backoffCapMs], [1500, 2, 90000])
  assert.deepEqual(s.kinds[KIND], { backoffBaseMs: 7000 })
  await assert.rejects(Queue.open(tempStore(t), { backoffBaseMs: 1, backoff: { baseMs: 2 } }),
    (e) => e.code === 'INVALID_ARGUMENT' && /given twice/.test(e.message))
})

test('a config file comes first; options given in code win', async (t) => {
  const file = path.join(path.dirname(tempStore(t)), 'telha.toml')
  fs.writeFileSync(file, '[jobs]\nlease_ttl = "45s"\nmax_attempts = 8\n\n[jobs.kinds."ingest:pdf"]\nmax_attempts = 2\n')
  const q = await openWith(t, { configFile: file, maxAttempts: 3 })
  const s = q.settings()
  assert.equal(s.leaseTtlMs, 45000)
  assert.equal(s.maxAttempts, 3)
  assert.deepEqual(s.kinds[KIND], { maxAttempts: 2 })
})

test('a remote queue has no settings to show (the server holds them)', async (t) => {
  const { local, server } = await serveTemp(t, { leaseTtlMs: 12345 })
  const remote = await Queue.connect(server.url)
  t.after(() => remote.close())
  assert.equal(remote.settings(), null)
  assert.equal(local.settings().leaseTtlMs, 12345)
})

/**
 * The property names of an interface declared in lib/telha.d.ts or the
 * open options it re-exports (lib/options.d.ts), read with the TypeScript
 * compiler.
 */
function members (name) {
  for (const f of ['telha.d.ts', 'options.d.ts']) {
    const file = path.join(__dirname, '..', 'lib', f)
    const src = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
    const decl = src.statements.find((s) => ts.isInterfaceDeclaration(s) && s.name.text === name)
    if (decl) return decl.members.filter(ts.isPropertySignature).map((m) => m.name.getText(src))
  }
  assert.fail(`telha.d.ts and options.d.ts declare no interface ${name}`)
}

test('telha.d.ts types exactly the table: OpenOptions has every key (and configFile, kinds), KindOptions every per-kind key', () => {
  const deprecated = ['backoff']
  assert.deepEqual(members('OpenOptions').filter((n) => !deprecated.includes(n)).sort(),
    [...KEYS.map((k) => k.name), 'configFile', 'kinds'].sort())
  assert.deepEqual(members('KindOptions').filter((n) => !deprecated.includes(n)).sort(),
    PER_KIND.map((k) => k.name).sort())
  // The deprecated nested form names the keys whose TOML path is backoff.*.
  const nested = KEYS.filter((k) => k.toml.startsWith('backoff.'))
    .map((k) => k.toml.slice('backoff.'.length) + (k.type === 'duration' ? 'Ms' : ''))
  assert.deepEqual(members('BackoffOptions').sort(), nested.sort())
})

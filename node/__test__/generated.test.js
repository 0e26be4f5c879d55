'use strict'
// The committed index.js / index.d.ts must be what `napi build` generates
// (make test-node builds into $TELHA_NODE_GENERATED and runs this).
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const generated = process.env.TELHA_NODE_GENERATED ||
  path.join(process.env.CARGO_TARGET_DIR || path.join(os.homedir(), '.cache/telha-jobs/target-node'), 'node-gen')

for (const file of ['index.js', 'index.d.ts']) {
  test(`the committed ${file} matches what napi build generates`, () => {
    const fresh = path.join(generated, file)
    assert.ok(fs.existsSync(fresh), `${fresh} is missing: run \`make test-node\` (it builds with napi into ${generated})`)
    const committed = fs.readFileSync(path.join(__dirname, '..', file), 'utf8')
    assert.equal(committed, fs.readFileSync(fresh, 'utf8'),
      `node/${file} drifted from the generated ${fresh}: run \`make generated\` (or \`make node-generated\`) and commit it`)
  })
}

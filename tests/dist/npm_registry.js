'use strict'
// A read-only npm registry on 127.0.0.1 that serves the package tarballs of
// one directory (dist/), so `npm install telha-jobs --registry <it>` in an
// empty directory resolves the package, and its platform package through
// `optionalDependencies`, exactly as it would from the public registry: by
// name and version, with the integrity npm checks.
//
//   node npm_registry.js DIR PORT_FILE LOG_FILE
//
// Listens on an ephemeral port, writes the port to PORT_FILE once it
// listens, appends one line per request ("GET /name 200") to LOG_FILE.
// Anything it does not hold answers 404. Stopped by its pid.

const http = require('node:http')
const fs = require('node:fs')
const path = require('node:path')
const crypto = require('node:crypto')
const { execFileSync } = require('node:child_process')

const [dir, portFile, logFile] = process.argv.slice(2)
if (!dir || !portFile || !logFile) {
  console.error('usage: node npm_registry.js DIR PORT_FILE LOG_FILE')
  process.exit(2)
}

// name -> { manifests: Map(version -> package.json), files: Map(basename -> path) }
const packages = new Map()
for (const f of fs.readdirSync(dir).filter((f) => f.endsWith('.tgz'))) {
  const file = path.join(dir, f)
  const manifest = JSON.parse(execFileSync('tar', ['-xOzf', file, 'package/package.json'], { encoding: 'utf8' }))
  const bytes = fs.readFileSync(file)
  manifest.dist = {
    file: f,
    integrity: 'sha512-' + crypto.createHash('sha512').update(bytes).digest('base64'),
    shasum: crypto.createHash('sha1').update(bytes).digest('hex')
  }
  const entry = packages.get(manifest.name) || { manifests: new Map(), files: new Map() }
  entry.manifests.set(manifest.version, manifest)
  entry.files.set(f, file)
  packages.set(manifest.name, entry)
}

function packument (name, entry, base) {
  const versions = {}
  let latest = null
  for (const [v, m] of entry.manifests) {
    const { file, ...dist } = m.dist
    versions[v] = { ...m, _id: `${name}@${v}`, dist: { ...dist, tarball: `${base}/${name}/-/${file}` } }
    latest = v
  }
  return { _id: name, name, 'dist-tags': { latest }, versions }
}

const server = http.createServer((req, res) => {
  const url = decodeURIComponent(req.url.split('?')[0])
  let status = 404
  let body = JSON.stringify({ error: 'not found' })
  let type = 'application/json'
  const m = /^\/((?:@[^/]+\/)?[^/@]+)(?:\/-\/([^/]+))?$/.exec(url)
  const entry = m && packages.get(m[1])
  if (entry && req.method === 'GET') {
    if (m[2] === undefined) {
      status = 200
      body = JSON.stringify(packument(m[1], entry, `http://${req.headers.host}`))
    } else if (entry.files.has(m[2])) {
      status = 200
      body = fs.readFileSync(entry.files.get(m[2]))
      type = 'application/octet-stream'
    }
  }
  fs.appendFileSync(logFile, `${req.method} ${url} ${status}\n`)
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) })
  res.end(body)
})

server.listen(0, '127.0.0.1', () => {
  fs.writeFileSync(portFile, String(server.address().port))
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))

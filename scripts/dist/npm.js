'use strict'
// The npm packages as napi-rs publishes them: the main package `telha-jobs`
// (JS, types, the generated loader; no binary) and one platform package per
// target, `telha-jobs-<platform>` (the prebuilt .node), wired by the main
// package's `optionalDependencies`, so npm installs only the platform
// package that matches the machine (its `os` / `cpu` / `libc` fields).
//
//   node scripts/dist/npm.js --node-dir node --addon-dir DIR[:DIR...] --out dist \
//        --version V --needs NEEDS.json[:NEEDS.json...]
//
// The platform directories are made by napi-rs's own `napi create-npm-dirs`
// and filled by `napi artifacts`; `napi pre-publish` would write the
// `optionalDependencies` too, but it also creates a GitHub release (it needs
// a git remote and a token), so that one step is done here, the same way
// (`<name>-<platformArchABI>: <version>` for each target). NEEDS.json is
// scripts/dist/elf_needs.py's report on an addon (its `file` names it): its
// glibc and Node-API needs go into that platform package's README.
//
// The addons are the `telha-jobs.<platform>.node` files in the addon
// directories (`make dist`: the host's; `make dist-all`: every target it
// built). Each must be one of node/package.json's `napi.targets`; the main
// package lists every platform package packed beside it as optional, and
// only those (npm fetches each one it lists).

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

function args () {
  const a = {}
  const argv = process.argv.slice(2)
  for (let i = 0; i < argv.length; i += 2) a[argv[i].replace(/^--/, '')] = argv[i + 1]
  for (const k of ['node-dir', 'addon-dir', 'out', 'version', 'needs']) {
    if (!a[k]) throw new Error(`npm.js: --${k} is required`)
  }
  return a
}

// napi-rs's platformArchABI of a Rust target triple, as its file names use it.
function platformOf (triple) {
  const [arch, , os, abi] = triple.split('-')
  const cpu = { x86_64: 'x64', aarch64: 'arm64', i686: 'ia32', armv7: 'arm' }[arch] || arch
  return [os === 'darwin' ? 'darwin' : os, cpu, abi].filter(Boolean).join('-')
}

function run (cmd, argv, cwd) {
  execFileSync(cmd, argv, { cwd, stdio: ['ignore', 'pipe', 'inherit'] })
}

function main () {
  const a = args()
  const nodeDir = path.resolve(a['node-dir'])
  const out = path.resolve(a.out)
  const reports = a.needs.split(':').map((f) => JSON.parse(fs.readFileSync(f, 'utf8')))
  // The report on an addon, by its file name (a lone report is every addon's).
  const needsOf = (binary) => {
    const r = reports.length === 1 ? reports[0] : reports.find((n) => n.file === binary)
    if (!r) throw new Error(`npm.js: no --needs report for ${binary}`)
    return r
  }
  const pkg = JSON.parse(fs.readFileSync(path.join(nodeDir, 'package.json'), 'utf8'))
  if (pkg.version !== a.version) {
    throw new Error(`node/package.json has version ${pkg.version}, the workspace (Cargo.toml) ${a.version}: make them equal`)
  }
  const napi = path.join(nodeDir, 'node_modules', '.bin', 'napi')
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'telha-npm-'))
  try {
    // Every addon given, gathered in one directory for `napi artifacts`.
    const addons = path.join(stage, 'addons')
    fs.mkdirSync(addons)
    const prefix = pkg.napi.binaryName + '.'
    for (const dir of a['addon-dir'].split(':')) {
      for (const f of fs.readdirSync(dir)) {
        if (f.startsWith(prefix) && f.endsWith('.node')) fs.copyFileSync(path.join(dir, f), path.join(addons, f))
      }
    }
    const built = new Set(fs.readdirSync(addons).map((f) => f.slice(prefix.length, -'.node'.length)))
    const targets = pkg.napi.targets.filter((t) => built.has(platformOf(t)))
    const unknown = [...built].filter((p) => !pkg.napi.targets.some((t) => platformOf(t) === p))
    if (unknown.length > 0 || targets.length === 0) {
      throw new Error(`npm.js: addons for ${[...built].join(', ') || 'nothing'}; node/package.json napi.targets: ${pkg.napi.targets.join(', ')}`)
    }
    const main = path.join(stage, 'telha-jobs')
    fs.mkdirSync(main)
    for (const f of ['index.js', 'index.d.ts', 'lib']) {
      fs.cpSync(path.join(nodeDir, f), path.join(main, f), { recursive: true })
    }
    // napi reads the targets from the package.json beside it: the built ones.
    const staged = { ...pkg, napi: { ...pkg.napi, targets } }
    fs.writeFileSync(path.join(main, 'package.json'), JSON.stringify(staged, null, 2) + '\n')

    run(napi, ['create-npm-dirs', '--npm-dir', 'npm'], main)
    run(napi, ['artifacts', '--output-dir', addons, '--npm-dir', 'npm'], main)
    // `napi artifacts` also leaves a copy beside package.json: the main
    // package carries no binary.
    for (const f of fs.readdirSync(main)) if (f.endsWith('.node')) fs.rmSync(path.join(main, f))

    const platforms = fs.readdirSync(path.join(main, 'npm'))
    const optional = {}
    for (const p of platforms) {
      const dir = path.join(main, 'npm', p)
      const sub = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))
      const binary = sub.main
      if (!fs.existsSync(path.join(dir, binary))) throw new Error(`npm.js: ${p}: ${binary} is missing`)
      optional[sub.name] = sub.version
      const needs = needsOf(binary)
      fs.appendFileSync(path.join(dir, 'README.md'), [
        '',
        `The prebuilt Node-API addon \`${binary}\` of \`${pkg.name}\` ${sub.version}.`,
        'Install `' + pkg.name + '`, not this package: npm picks this one through',
        'its `optionalDependencies` when the machine matches.',
        '',
        `Needs: Node-API ${needs.node_api} (Node.js ${pkg.engines.node}), ` +
          `glibc ${needs.glibc} or newer` +
          (needs.glibcxx ? `, libstdc++ with GLIBCXX_${needs.glibcxx}.` : ' (its C++ runtime linked in).'),
        ''
      ].join('\n'))
    }
    pkg.files = pkg.files.filter((f) => !f.endsWith('.node'))
    pkg.optionalDependencies = optional
    fs.writeFileSync(path.join(main, 'package.json'), JSON.stringify(pkg, null, 2) + '\n')
    fs.writeFileSync(path.join(main, 'README.md'), [
      `# ${pkg.name}`,
      '',
      pkg.description,
      '',
      '```sh',
      `npm install ${pkg.name}`,
      '```',
      '',
      'The prebuilt addon comes in a platform package that npm installs by itself,',
      `one per platform. Needs Node.js ${pkg.engines.node} (Node-API ${Math.max(...reports.map((r) => r.node_api))}) and:`,
      '',
      ...platforms.map((p) => {
        const sub = JSON.parse(fs.readFileSync(path.join(main, 'npm', p, 'package.json'), 'utf8'))
        return `- \`${sub.name}\`: ${sub.os.join('/')} ${sub.cpu.join('/')}, glibc ${needsOf(sub.main).glibc} or newer`
      }),
      '',
      `Both \`require('${pkg.name}')\` and \`import { Queue } from '${pkg.name}'\``,
      'work; the types ship with the package.',
      '',
      `The guide: ${pkg.repository.url}#node`,
      ''
    ].join('\n'))

    fs.mkdirSync(out, { recursive: true })
    for (const p of platforms) run('npm', ['pack', '--silent', '--pack-destination', out], path.join(main, 'npm', p))
    run('npm', ['pack', '--silent', '--pack-destination', out], main)
  } finally {
    fs.rmSync(stage, { recursive: true, force: true })
  }
}

main()

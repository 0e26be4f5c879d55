'use strict'
// The npm packages as napi-rs publishes them: the main package `telha-jobs`
// (JS, types, the generated loader; no binary) and one platform package per
// target, `telha-jobs-<platform>` (the prebuilt .node), wired by the main
// package's `optionalDependencies`, so npm installs only the platform
// package that matches the machine (its `os` / `cpu` / `libc` fields).
//
//   node scripts/dist/npm.js --node-dir node --addon-dir DIR --out dist \
//        --version V --needs NEEDS.json
//
// The platform directories are made by napi-rs's own `napi create-npm-dirs`
// and filled by `napi artifacts`; `napi pre-publish` would write the
// `optionalDependencies` too, but it also creates a GitHub release (it needs
// a git remote and a token), so that one step is done here, the same way
// (`<name>-<platformArchABI>: <version>` for each target). NEEDS.json is
// scripts/dist/elf_needs.py's report on the addon: its glibc and Node-API
// needs go into the platform package's README.

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

function run (cmd, argv, cwd) {
  execFileSync(cmd, argv, { cwd, stdio: ['ignore', 'pipe', 'inherit'] })
}

function main () {
  const a = args()
  const nodeDir = path.resolve(a['node-dir'])
  const out = path.resolve(a.out)
  const needs = JSON.parse(fs.readFileSync(a.needs, 'utf8'))
  const pkg = JSON.parse(fs.readFileSync(path.join(nodeDir, 'package.json'), 'utf8'))
  if (pkg.version !== a.version) {
    throw new Error(`node/package.json has version ${pkg.version}, the workspace (Cargo.toml) ${a.version}: make them equal`)
  }
  const napi = path.join(nodeDir, 'node_modules', '.bin', 'napi')
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'telha-npm-'))
  try {
    const main = path.join(stage, 'telha-jobs')
    fs.mkdirSync(main)
    for (const f of ['index.js', 'index.d.ts', 'lib']) {
      fs.cpSync(path.join(nodeDir, f), path.join(main, f), { recursive: true })
    }
    fs.writeFileSync(path.join(main, 'package.json'), JSON.stringify(pkg, null, 2) + '\n')

    run(napi, ['create-npm-dirs', '--npm-dir', 'npm'], main)
    run(napi, ['artifacts', '--output-dir', path.resolve(a['addon-dir']), '--npm-dir', 'npm'], main)
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
      fs.appendFileSync(path.join(dir, 'README.md'), [
        '',
        `The prebuilt Node-API addon \`${binary}\` of \`${pkg.name}\` ${sub.version}.`,
        'Install `' + pkg.name + '`, not this package: npm picks this one through',
        'its `optionalDependencies` when the machine matches.',
        '',
        `Needs: Node-API ${needs.node_api} (Node.js ${pkg.engines.node}), ` +
          `glibc ${needs.glibc} or newer, libstdc++ with GLIBCXX_${needs.glibcxx}.`,
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
      'The prebuilt addon comes in a platform package (' +
        Object.keys(optional).map((n) => '`' + n + '`').join(', ') + ') that npm installs',
      `by itself. Needs Node.js ${pkg.engines.node} (Node-API ${needs.node_api}) and, on Linux,`,
      `glibc ${needs.glibc} or newer. Both \`require('${pkg.name}')\` and \`import { Queue } from '${pkg.name}'\``,
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

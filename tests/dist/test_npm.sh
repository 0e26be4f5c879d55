#!/usr/bin/env bash
# The npm packages in dist/ as a user gets them: an empty directory,
# `npm install telha-jobs@VERSION` from a registry that holds only the packed
# tarballs (tests/dist/npm_registry.js on 127.0.0.1, so the platform package
# must come through the main package's optionalDependencies, by name and
# version, as from the public registry), a fresh npm cache and no user
# config. Then `require` and `import` the package, run the README's Node
# example against a store in that directory, compile the README's TypeScript
# usage with `tsc --strict` against the installed types (typescript and
# @types/node from npm, node/'s devDependencies) and run it, and check the
# addon's Node-API needs against what its package states.
#
#   test_npm.sh DIST VERSION README NODE_DIR NODE_API_HEADERS
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
dist=$(cd "$1" && pwd) version=$2 readme=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
node_dir=$(cd "$4" && pwd) headers=$5

tmp=$(mktemp -d)
reg_pid=
trap '[ -n "$reg_pid" ] && kill "$reg_pid" 2>/dev/null; rm -rf "$tmp"' EXIT

node "$here/npm_registry.js" "$dist" "$tmp/port" "$tmp/requests.log" &
reg_pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
port=$(cat "$tmp/port")
echo "== npm registry with the tarballs of $dist on 127.0.0.1:$port (pid $reg_pid)"

: > "$tmp/npmrc"
export npm_config_userconfig="$tmp/npmrc" npm_config_cache="$tmp/npm-cache" \
  npm_config_registry="http://127.0.0.1:$port/" npm_config_audit=false npm_config_fund=false \
  npm_config_update_notifier=false
app="$tmp/app"
mkdir "$app"
cd "$app"

platform=$(node -e '
  const p = require(process.argv[1]); const t = p.napi.targets
  if (t.length !== 1 || t[0] !== "x86_64-unknown-linux-gnu") throw new Error("targets: " + t)
  console.log(p.name + "-linux-x64-gnu")' "$node_dir/package.json")
addon="node_modules/$platform/telha-jobs.linux-x64-gnu.node"

check "npm install telha-jobs@$version into an empty directory" npm install --no-progress "telha-jobs@$version"
check "the platform package came by name through optionalDependencies" node - "$platform" "$version" "$tmp/requests.log" <<'EOF'
const fs = require('node:fs')
const assert = require('node:assert/strict')
const [platform, version, log] = process.argv.slice(2)
const app = JSON.parse(fs.readFileSync('package.json', 'utf8'))
assert.deepEqual(Object.keys(app.dependencies), ['telha-jobs'])
const main = JSON.parse(fs.readFileSync('node_modules/telha-jobs/package.json', 'utf8'))
assert.deepEqual(main.optionalDependencies, { [platform]: version })
const lock = JSON.parse(fs.readFileSync('package-lock.json', 'utf8'))
const entry = lock.packages['node_modules/' + platform]
assert.ok(entry && entry.optional === true && entry.version === version, JSON.stringify(entry))
const got = fs.readFileSync(log, 'utf8')
for (const want of ['GET /telha-jobs 200', `GET /${platform} 200`, `GET /${platform}/-/${platform}-${version}.tgz 200`]) {
  assert.ok(got.includes(want + '\n'), `the registry saw no "${want}":\n${got}`)
}
const binaries = fs.readdirSync('node_modules/telha-jobs', { recursive: true }).filter((f) => String(f).endsWith('.node'))
assert.deepEqual(binaries, [], 'the main package carries no binary')
EOF
check "require('telha-jobs') loads the platform package's addon" node -e '
  const assert = require("node:assert/strict")
  const t = require("telha-jobs")
  for (const k of ["Queue", "Worker", "Permanent", "ErrorCode"]) assert.ok(t[k], k)
  assert.equal(require("telha-jobs/package.json").version, process.argv[1])
  const loaded = Object.keys(require.cache).filter((f) => f.endsWith(".node"))
  assert.deepEqual(loaded, [require("node:path").resolve(process.argv[2])])' "$version" "$addon"
check "import { Queue } from 'telha-jobs' (ESM)" node --input-type=module -e '
  import assert from "node:assert/strict"
  import telha, { Queue, Worker, Permanent, ErrorCode } from "telha-jobs"
  assert.equal(typeof Queue.open, "function")
  assert.equal(telha.Queue, Queue)
  assert.equal(ErrorCode.ABORTED, "ABORTED")
  assert.ok(Worker && Permanent)'

# The README's Node example, completed: `handle` is "your code", the
# snippet's top-level awaits run in an async function (CommonJS), and
# afterwards the job must be completed in the store.
{
  echo "async function handle (payload) { if (payload.doc !== 's3://bucket/a.pdf') throw new Error('payload ' + JSON.stringify(payload)); return { pages: 12 } }"
  echo "(async () => {"
  readme_block "$readme" '## Node' js
  cat <<'EOF'
  const info = await q.get(job.id)
  if (info.state !== 'completed') throw new Error('job is ' + info.state)
  await q.close()
  console.log('README example: 1 job completed')
})().catch((e) => { console.error(e); process.exit(1) })
EOF
} > "$app/readme_example.js"
check "the README's Node example against a store in the directory" \
  bash -c 'node readme_example.js | grep -x "README example: 1 job completed"'

readme_block "$readme" '## Install' ts > "$app/usage.mts"
tsc="$node_dir/node_modules/typescript/bin/tsc"
check "tsc --strict: the README's TypeScript usage against the installed types" \
  node "$tsc" --strict --target es2022 --module nodenext --moduleResolution nodenext \
    --typeRoots "$node_dir/node_modules/@types" --types node --outDir "$app/out" "$app/usage.mts"
check "the compiled TypeScript usage runs" bash -c 'rm -rf telha-data && node out/usage.mjs'

# The README's other way: both tarballs named on the command line, with no
# registry at all (--offline: npm may not fetch anything).
check "npm install --offline of the two tarballs (the README's checkout way)" bash -c '
  mkdir "$1/files" && cd "$1/files" &&
  npm install --offline --no-progress "$2/$3-$4.tgz" "$2/telha-jobs-$4.tgz" &&
  node -e "const t = require(\"telha-jobs\"); if (typeof t.Queue.open !== \"function\") process.exit(1)"' \
  _ "$tmp" "$dist" "$platform" "$version"

check "Node-API: what the addon uses is what its packages state (and node/Cargo.toml's napiN); this Node has it" bash -c '
  needs=$(python3 "$1/scripts/dist/elf_needs.py" "$2" --node-api-headers "$3") || exit 1
  napi=$(printf "%s" "$needs" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"node_api\"])")
  glibc=$(printf "%s" "$needs" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"glibc\"])")
  echo "addon: Node-API $napi, glibc $glibc; this node: Node-API $(node -p process.versions.napi)"
  grep -q "Needs: Node-API $napi (Node.js .*), glibc $glibc or newer" "node_modules/$4/README.md" &&
  grep -q "(Node-API $napi)" node_modules/telha-jobs/README.md &&
  [ "$(node -p process.versions.napi)" -ge "$napi" ] &&
  grep -Eq "features = \[\"napi$napi\"\]" "$1/node/Cargo.toml"' _ "$root" "$addon" "$headers" "$platform"

finish "dist npm"

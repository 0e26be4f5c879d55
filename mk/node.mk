# The Node package (node/, issue #5): napi-rs v3 addon + lib/ (Queue, Worker).
#
# `napi build` runs cargo through node/scripts/cargo-host.sh, which drops the
# `--target <host>` that @napi-rs/cli 3 always adds: the addon is then built
# like every other crate (release, no --target, $(CARGO_TARGET_DIR)), so
# RocksDB's C++ is not compiled a second time. napi writes the addon and the
# generated index.js / index.d.ts into $(NODE_GEN); the addon is copied into
# node/, and a test compares the generated files with the committed ones.

NODE_GEN := $(CARGO_TARGET_DIR)/node-gen
NODE_STAMP := node/node_modules/.package-lock.json

.PHONY: node-build node-generated test-node bench-node install-node

$(NODE_STAMP): node/package.json node/package-lock.json
	@command -v npm >/dev/null || { echo "npm is missing: installing Debian's npm"; \
		apt-get update -qq && apt-get install -y -qq npm; }
	cd node && npm ci --no-audit --no-fund

node-build: $(NODE_STAMP)
	cd node && CARGO="$(CURDIR)/node/scripts/cargo-host.sh" TELHA_REAL_CARGO="$(CARGO)" \
		npx napi build --platform $(PROFILE) --output-dir "$(NODE_GEN)"
	cp "$(NODE_GEN)"/*.node node/

## Regenerate the committed node/index.js and node/index.d.ts from the Rust
## sources (what __test__/generated.test.js compares them with).
node-generated: node-build
	cp "$(NODE_GEN)/index.js" "$(NODE_GEN)/index.d.ts" node/

## node --test over node/__test__ (ends with its pass/fail summary).
test-node: node-build build-cli
	cd node && TELHA_NODE_GENERATED="$(NODE_GEN)" node --test --test-reporter=spec __test__/

## Single and batch enqueue, lease+complete, Worker at concurrency 1, 4 and
## 100, beside the Rust core's figures measured in the same run; then the
## event-loop lag during a 1,000,000-job churn, with calls on the loop and
## (TELHA_JOBS_LOOP_BUDGET_MS=0) all on the pool (LAG_N jobs).
LAG_N ?= 1000000
bench-node: node-build
	cd node && TELHA_BENCH_REF="$(BENCH_REF)" node bench/bench.js
	cd node && node bench/lag.js --n $(LAG_N)
	cd node && TELHA_JOBS_LOOP_BUDGET_MS=0 node bench/lag.js --n $(LAG_N)

## An npm tarball of the package (with the addon) under $(PREFIX)/share/telha-jobs/node.
install-node: node-build
	mkdir -p "$(DESTDIR)$(PREFIX)/share/telha-jobs/node"
	cd node && npm pack --pack-destination "$(DESTDIR)$(PREFIX)/share/telha-jobs/node"

TEST_TARGETS += test-node
BENCH_TARGETS += bench-node
INSTALL_TARGETS += install-node

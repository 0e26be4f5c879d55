# Release artifacts (issue #22): `make dist` writes into dist/ what a user
# installs, from the outputs the other fragments already build (no second
# cargo build of anything):
#
#   telha_jobs-V-cp39-abi3-manylinux_2_N_x86_64.whl  the py-wheel build (maturin, --release),
#                                           one wheel for every CPython >= 3.9 (pyo3 abi3-py39);
#                                           maturin picks the manylinux tag, auditwheel checks it
#   telha_jobs-V.tar.gz                     maturin sdist: the py crate and the workspace crates
#                                           it needs, buildable by pip on a machine with Rust
#   npm/telha-jobs-V.tgz, npm/telha-jobs-linux-x64-gnu-V.tgz
#                                           npm packages as napi-rs publishes them (the main
#                                           package + the platform package with the node-build
#                                           addon, wired by optionalDependencies)
#   c/telha-jobs-V-x86_64-linux-gnu.tar.gz  the C library as install-c lays it out, relocatable
#   cli/telha-V-x86_64-linux-gnu.tar.gz     the `telha` binary (build-cli's), telha.txt (every
#                                           command's --help), LICENSE, README (scripts/dist/cli-tarball.sh)
#   SHA256SUMS
#
# dist/ itself is the Python index directory (`pip install --no-index
# --find-links dist telha-jobs`): pip reads every `telha-jobs-*` archive there
# as a candidate, so the npm and C archives, whose names would match, live
# in subdirectories.
#
# Other targets (older glibc, aarch64) are built by `make dist-all`
# (mk/release.mk), never by `make test`: each compiles RocksDB again.
#
# V is the workspace version in Cargo.toml; node/package.json must equal it
# (dist-npm fails otherwise) and the tests check every artifact against it.
# `make test` runs test-dist: each artifact installed in a fresh place
# (tests/dist/). `make test-long` builds the wheel from the sdist with pip,
# RocksDB included (~40 min), in its own target dir.

DIST_DIR := dist
DIST_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
DIST_WORK := $(CARGO_TARGET_DIR)/dist-work
DIST_ADDON = $(NODE_GEN)/telha-jobs.linux-x64-gnu.node
# Node's own headers say which Node-API version declares each function.
NODE_API_HEADERS ?= $(abspath $(dir $(shell command -v node))../include/node)
# The sdist build of test-long: its own target dir, so the 40-minute RocksDB
# build it starts cannot touch the shared one.
DIST_SDIST_TARGET ?= $(CARGO_TARGET_DIR)-sdist

TEST_TARGETS += test-dist

.PHONY: dist dist-clean dist-wheel dist-sdist dist-npm dist-c dist-cli dist-sums \
	test-dist test-dist-artifacts test-dist-wheel test-dist-npm test-dist-c test-dist-cli test-long test-dist-sdist

## Every release artifact into dist/ (then a list with sizes and needs).
dist: dist-clean dist-wheel dist-sdist dist-npm dist-c dist-cli dist-sums

dist-clean:
	rm -rf $(DIST_DIR) $(DIST_WORK)
	mkdir -p $(DIST_DIR) $(DIST_WORK)

## The abi3 wheel py-wheel built; auditwheel (PyPI, in the build virtualenv)
## must find it consistent with its tag.
dist-wheel: py-wheel
	@mkdir -p $(DIST_DIR) $(DIST_WORK)
	@$(PY_VENV)/bin/auditwheel --version >/dev/null 2>&1 || \
		$(PY) -m pip install -q --disable-pip-version-check "auditwheel>=6"
	cp $(PY_WHEELS)/telha_jobs-$(DIST_VERSION)-cp39-abi3-manylinux_*.whl $(DIST_DIR)/
	@set -e; w=$$(ls $(DIST_DIR)/telha_jobs-*.whl); \
	$(PY_VENV)/bin/auditwheel show "$$w" | tee $(DIST_WORK)/auditwheel.txt; \
	tag=$$(tr -s ' \n' ' ' < $(DIST_WORK)/auditwheel.txt | sed -n 's/.*following platform tag: *"\([^"]*\)".*/\1/p'); \
	case "$$w" in *-"$$tag".whl) echo "dist-wheel: auditwheel: $$tag, as the file name says";; \
	  *) echo "dist-wheel: auditwheel says $$tag, the wheel is named $$w"; exit 1;; esac

## The source distribution: maturin sdist of py/ (the workspace crates it
## needs), completed with the [patch] crates it leaves out (scripts/dist/sdist_complete.py).
dist-sdist: py-venv
	@mkdir -p $(DIST_DIR)
	rm -f $(DIST_DIR)/telha_jobs-*.tar.gz
	$(PY_VENV)/bin/maturin sdist -m py/Cargo.toml -o $(DIST_DIR)
	python3 scripts/dist/sdist_complete.py $(DIST_DIR)/telha_jobs-$(DIST_VERSION).tar.gz .

## The npm main package and platform package (scripts/dist/npm.js).
dist-npm: node-build
	@mkdir -p $(DIST_DIR) $(DIST_WORK)
	@test -f $(NODE_API_HEADERS)/node_api.h || { echo "dist-npm: no Node headers in $(NODE_API_HEADERS) (set NODE_API_HEADERS)"; exit 1; }
	python3 scripts/dist/elf_needs.py $(DIST_ADDON) --node-api-headers $(NODE_API_HEADERS) > $(DIST_WORK)/node-needs.json
	node scripts/dist/npm.js --node-dir node --addon-dir $(NODE_GEN) --out $(DIST_DIR)/npm \
		--version $(DIST_VERSION) --needs $(DIST_WORK)/node-needs.json

## The C tarball (scripts/dist/c-tarball.sh, from install-c).
dist-c: c-lib
	@mkdir -p $(DIST_DIR) $(DIST_WORK)
	python3 scripts/dist/elf_needs.py $(C_LIB_DIR)/libtelha_jobs.so > $(DIST_WORK)/c-needs.json
	MAKE="$(MAKE)" scripts/dist/c-tarball.sh $(DIST_DIR)/c $(DIST_VERSION) $(C_ABI) $(DIST_WORK)/c-needs.json

## The `telha` tarball (scripts/dist/cli-tarball.sh, from build-cli's binary).
dist-cli: build-cli
	@mkdir -p $(DIST_DIR) $(DIST_WORK)
	python3 scripts/dist/elf_needs.py $(CLI_BIN) > $(DIST_WORK)/cli-needs.json
	scripts/dist/cli-tarball.sh $(DIST_DIR)/cli $(DIST_VERSION) $(CLI_BIN) $$(uname -m) gnu $(DIST_WORK)/cli-needs.json

dist-sums:
	cd $(DIST_DIR) && rm -f SHA256SUMS && sha256sum *.whl *.tar.gz npm/* c/* cli/* > SHA256SUMS
	@python3 scripts/dist/summary.py $(DIST_DIR) $(DIST_WORK)

## Each artifact installed as a user would, in a fresh place (tests/dist/).
test-dist: test-dist-artifacts test-dist-wheel test-dist-npm test-dist-c test-dist-cli

test-dist-artifacts: dist
	tests/dist/test_artifacts.sh $(DIST_DIR) $(DIST_VERSION) README.md $(DIST_WORK)

test-dist-wheel: dist
	tests/dist/test_wheel.sh $(DIST_DIR) $(DIST_VERSION) README.md $(PY) $(DIST_PYTHONS)

test-dist-npm: dist
	tests/dist/test_npm.sh $(DIST_DIR)/npm $(DIST_VERSION) README.md node $(NODE_API_HEADERS)

test-dist-c: dist c-deps
	tests/dist/test_c.sh $(DIST_DIR)/c $(DIST_VERSION) $(C_ABI) README.md

## The telha tarball unpacked in a temporary directory: --version, telha.txt,
## `telha jobs ls` on a store the README's Python example wrote.
test-dist-cli: dist
	tests/dist/test_cli.sh $(DIST_DIR) $(DIST_VERSION) README.md $(PY)

## Tests too slow for `make test`.
test-long: test-dist-sdist

## pip builds the sdist in a clean virtualenv (RocksDB's C++ included: ~40 min).
test-dist-sdist: dist-sdist
	CARGO_TARGET_DIR=$(DIST_SDIST_TARGET) tests/dist/test_sdist.sh $(DIST_DIR) $(DIST_VERSION) README.md $(PYTHON3)
